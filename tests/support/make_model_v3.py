"""Writes tests/fixtures/model-v3/: a model folder as priorkit wrote it before issue 31 (priorkit.json
format 3 beside priorkit-run.json, priorkit-pipeline.yaml and config.json["priorkit"]), with both
channels (gate attention prior in layer 0, token features with hashed concept ids), and the logits
that code predicted for a few sentences (expected.npz).  Run once, with that code, from the repo root:

    python tests/support/make_model_v3.py

(it was run at commit eda5ec4).  tests/test_model_folder.py loads the folder with today's code and
checks the logits bit for bit.  The ontology path is relative to the repo root (the test runs there).
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "model-v3"
OBO = "tests/fixtures/model-v3/trees.obo"
SENTENCES = [["Cocaine", "and", "heparin", "toxicity", "caused", "a", "seizure", "."],
             ["lithium", "carbonate", "was", "given"], ["no", "match", "here"]]


def main() -> None:
    import os

    os.chdir(ROOT)
    from transformers import AutoTokenizer, BertConfig, BertModel

    import priorkit
    from priorkit.config import config_from_dict
    from priorkit.training.steps import run_pipeline
    from priorkit.resources import minilm_path

    work = Path(tempfile.mkdtemp())
    base = work / "tiny"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=16, max_position_embeddings=64)).save_pretrained(base)
    AutoTokenizer.from_pretrained(str(minilm_path())).save_pretrained(base)
    raw = {
        "name": "model-v3",
        "output_dir": str(work / "runs"),
        "model": {"name_or_path": str(base), "max_length": 32},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 24},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        "prior": {"name": "both", "provider": "ontology", "cache": None, "layout": "full", "keys": "strip",
                  "neutral": 0.5, "params": {"path": OBO, "cache": False, "measure": "concept"},
                  "attention": {"layers": [0], "mode": "gate", "options": {"init": 0.5}, "learning_rate": 0.05},
                  "features": {"concept_buckets": 8, "learning_rate": 1e-2}},
        "train": {"epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no"},
    }
    result = run_pipeline(config_from_dict(raw), steps=("precompute", "train", "evaluate"), log=lambda s: None)
    folder = result.plan.run_dir / "model"
    shutil.rmtree(OUT / "model", ignore_errors=True)
    shutil.copytree(folder, OUT / "model")
    model = priorkit.load_model(OUT / "model")
    logits = model.logits(SENTENCES)
    tags = [r["tags"] for r in model.predict(SENTENCES)]
    np.savez(OUT / "expected.npz", **{f"logits{i}": x for i, x in enumerate(logits)})
    (OUT / "expected-tags.txt").write_text("\n".join(" ".join(t) for t in tags) + "\n")
    shutil.rmtree(work)
    print("wrote", OUT, file=sys.stderr)


if __name__ == "__main__":
    main()

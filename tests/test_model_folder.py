"""A model folder written before issue 31 (tests/fixtures/model-v3, made by
tests/support/make_model_v3.py with that code: priorkit.json format 3, priorkit-run.json,
priorkit-pipeline.yaml and config.json["priorkit"]; a gate attention prior and token
features) loads with today's code and predicts what it predicted then, bit for bit."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import priorkit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "model-v3"
SENTENCES = [["Cocaine", "and", "heparin", "toxicity", "caused", "a", "seizure", "."],
             ["lithium", "carbonate", "was", "given"], ["no", "match", "here"]]


@pytest.fixture
def v3_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the folder's ontology path is relative to the repo root
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE / "model", folder)  # a copy: loading must not need to write
    return folder


def test_a_format_3_folder_predicts_what_it_predicted(v3_folder):
    model = priorkit.load_model(v3_folder)
    assert [c.name for c in model.channels] == ["attention", "features"]
    want = np.load(FIXTURE / "expected.npz")
    got = model.logits(SENTENCES)
    for i, g in enumerate(got):
        # the same weights and maths; the last bits of a float32 sum depend on the CPU's kernels
        np.testing.assert_allclose(g, want[f"logits{i}"], rtol=1e-5, atol=1e-7)
    tags = [" ".join(r["tags"]) for r in model.predict(SENTENCES)]
    assert tags == (FIXTURE / "expected-tags.txt").read_text().splitlines()
    gates = [p for n, p in model.model.named_parameters() if n.endswith("prior_gate")]
    assert len(gates) == 1 and not np.allclose(gates[0].detach().numpy(), 0.5)  # trained gates restored


def test_the_format_3_folder_is_read_as_today_s_format_with_its_run_record(v3_folder):
    from priorkit.inference.manifest import FORMAT, read_info, read_run

    info = read_info(v3_folder)
    assert info["format"] == FORMAT == 4
    assert info["channels"]["attention"] == {"layers": [0], "mode": "gate", "heads": None, "options": {"init": 0.5}}
    run = read_run(v3_folder)  # from priorkit-run.json beside it
    assert run["prior_name"] == "both" and run["labels"] == info["task"]["labels"] and run["train"]["train_key"]
    assert "format" not in run


def test_a_features_and_attention_folder_holds_one_priorkit_file(tmp_path, tiny_bert_dir, monkeypatch):
    """Today's train step: the Hugging Face files plus priorkit.json only (the run's record inside
    it), no priorkit section in config.json; the gates come back through the channel's own
    load_state, from model.safetensors."""
    import json

    import torch
    from safetensors.torch import load_file

    from priorkit.config import config_from_dict
    from priorkit.training.steps import run_pipeline

    monkeypatch.chdir(ROOT)
    raw = {
        "name": "one-file",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 32},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 16},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},
        "prior": {"name": "both", "provider": "ontology", "cache": None, "layout": "full", "neutral": 0.5,
                  "params": {"path": str(FIXTURE / "trees.obo"), "cache": False, "measure": "concept"},
                  "attention": {"layers": [0], "mode": "gate", "options": {"init": 0.5}, "learning_rate": 0.05},
                  "features": {"concept_buckets": 8, "learning_rate": 1e-2}},
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no"},
    }
    result = run_pipeline(config_from_dict(raw), steps=("train", "evaluate"), log=lambda s: None)
    folder = result.plan.run_dir / "model"
    hf = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
          "vocab.txt", "training_args.bin", "README.md"}
    names = {p.name for p in folder.iterdir()}
    assert names - hf == {"priorkit.json"}
    assert "priorkit" not in json.loads((folder / "config.json").read_text())
    info = json.loads((folder / "priorkit.json").read_text())
    assert info["format"] == 4 and list(info["channels"]) == ["attention", "features"]
    assert info["run"]["train"]["train_key"] and info["scores"]["eval"]
    saved = {k: v for k, v in load_file(str(folder / "model.safetensors")).items() if k.endswith("prior_gate")}
    model = priorkit.load_model(folder)
    live = {n: p.detach() for n, p in model.model.named_parameters() if n.endswith("prior_gate")}
    assert saved.keys() == live.keys() and all(torch.equal(saved[k], live[k]) for k in saved)
    assert not torch.allclose(next(iter(saved.values())), torch.tensor(0.5))  # trained, then restored
    assert model.model.config.priorkit["mode"] == "gate"  # switched on from priorkit.json

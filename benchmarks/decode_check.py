"""Argmax against Viterbi decoding on the same trained models: each kept model's entity
scores on the pipeline's splits, both ways (no training; docs/inference.md#decoding).

    python benchmarks/decode_check.py PIPELINE RUN [RUN ...] [--splits eval test] [--out docs/results/NAME.csv]

RUN: a run folder with its model kept (train.keep_model: true), a model folder, or a
self-training run's ``teacher`` / ``round1`` folder.  One row per (model, split, decoding).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from priorkit.decoding import DECODINGS, decode_tags
from priorkit.inference import load_model
from priorkit.metrics import ner_metrics
from priorkit.pipeline.config import load_config
from priorkit.pipeline.data import load_data
from priorkit.pipeline.sweep import write_csv


def score_model(folder: Path, splits: dict, names: list[str]) -> list[dict]:
    predictor = load_model(folder)
    rows = []
    for split in names:
        examples = splits[split].examples
        blocks = predictor.word_logits([e["words"] for e in examples], batch_size=64)
        gold = [list(e["tags"]) for e in examples]
        for how in DECODINGS:
            tags = [decode_tags(b, predictor.labels, how) + ["O"] * (len(g) - len(b)) for b, g in zip(blocks, gold)]
            m = ner_metrics(gold, tags)
            rows.append({"model": str(folder), "split": split, "decode": how,
                         **{k: round(100 * m[k], 2) for k in ("precision", "recall", "f1")}})
            print(f"{folder} {split} {how}: F1 {rows[-1]['f1']} (P {rows[-1]['precision']}, R {rows[-1]['recall']})",
                  flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--splits", nargs="+", default=["eval", "test"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    splits = load_data(load_config(args.pipeline))
    rows = [r for run in args.runs for r in score_model(run, splits, args.splits)]
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Issue 30's tables: a sweep's runs (every arm, every seed) with recall inside and outside the
dictionary, read from the runs' saved predictions (priorkit.evaluation.dictionary_report).

    python benchmarks/knowledge_report.py PIPELINE OUT_DIR [--set KEY=VALUE ...] [--prefix docs/results/NAME]

Writes PREFIX-dictionary.csv (one row per run and the dictionary alone) and prints its
Markdown section.  The pipeline and --set values must be those the sweep ran with.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from priorkit.config import load_config
from priorkit.evaluation.dictionary_report import dictionary_rows, markdown, write_csv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pipeline")
    ap.add_argument("out_dir")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--prefix", default=None)
    args = ap.parse_args()
    cfg = load_config(args.pipeline, args.set)
    out = Path(args.out_dir)
    rows = []
    for metrics in sorted(out.glob("*/frac*/seed*/metrics.json")):
        m = json.loads(metrics.read_text())
        rows.append({"prior": m["prior"], "fraction": m["fraction"], "seed": m["seed"], "run_dir": str(metrics.parent)})
    table = dictionary_rows(cfg, rows)
    print(markdown(table, cfg.sweep.split))
    if args.prefix:
        print(f"wrote {write_csv(table, Path(args.prefix + '-dictionary.csv'))}")


if __name__ == "__main__":
    main()

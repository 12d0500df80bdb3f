"""The learning curve's docs tables, from a sweep's finished runs.

Reads the sweep's scored runs (``priorkit.evaluation.sweep.collect_rows``, the rows its own
report uses) and prints two Markdown tables: the absolute score of every arm at every
fraction (mean, sd over seeds, seeds) with the mean training seconds, and the paired
differences named by ``--pairs`` (``priorkit.evaluation.curve.compare``: mean, 95% CI over the
seeds both arms share, seeds ahead). ``--runs-csv`` also writes one row per run.

    python benchmarks/curve_tables.py pipelines/bc5cdr-curve.yaml --runs-csv docs/results/bc5cdr-curve-runs.csv
    python benchmarks/curve_tables.py pipelines/bc5cdr-curve.yaml --set name=bc5cdr-curve-mpnet-lr1e-4 ...  # another sweep of it

The sweep's own report (``priorkit sweep PIPELINE --report-only``: curve.md, results.md,
controls.md) has the same differences with the sentence bootstrap beside them; this script
is the compact view docs/benchmarks.md shows, with arms side by side (the tables are
``lab.claims``'s, which ``benchmarks/claims.py`` renders into the docs from the
sweep's results.csv under docs/results).
"""
from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from priorkit.config import load_config  # noqa: E402
from lab.claims import CURVE_ARMS, CURVE_PAIRS, deltas_markdown, scores_markdown  # noqa: E402
from priorkit.evaluation.curve import score_table  # noqa: E402
from priorkit.evaluation.sweep import collect_rows, grid  # noqa: E402

ARMS = CURVE_ARMS
PAIRS = [f"{a}-{b}" for a, b in CURVE_PAIRS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pipeline", help="the sweep's pipeline file")
    ap.add_argument("--split", default="test")
    ap.add_argument("--arms", nargs="+", default=ARMS, help="columns of the absolute table (absent arms are left out)")
    ap.add_argument("--pairs", nargs="+", default=PAIRS, metavar="A-B",
                    help="differences to tabulate, each 'arm-baseline' (arm names may hold '-'; a pair "
                         "whose arms have no runs is left out)")
    ap.add_argument("--runs-csv", type=Path, help="also write one row per run here")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a field of the pipeline file, as `priorkit sweep --set` (repeatable)")
    args = ap.parse_args()
    cfg = load_config(args.pipeline, args.overrides)
    metric = cfg.task.metric
    column = f"{args.split}_{metric}"
    rows = [r for r in collect_rows(cfg, grid(cfg)) if r.get(column) is not None]
    if not rows:
        raise SystemExit(f"no scored runs with {column} for {args.pipeline}")
    scores = score_table(rows, column, scale=100.0)
    present = {a for a, _ in scores}

    def split_pair(text: str) -> tuple[str, str] | None:
        """'features-random-spans' -> ('features', 'random-spans'); None when an arm has no runs."""
        for i, ch in enumerate(text):
            if ch == "-" and text[:i] in present and text[i + 1:] in present:
                return text[:i], text[i + 1:]
        return None

    print(scores_markdown(rows, scores, args.arms))
    print(deltas_markdown(scores, [pair for pair in map(split_pair, args.pairs) if pair is not None]), end="")
    if args.runs_csv:
        args.runs_csv.parent.mkdir(parents=True, exist_ok=True)
        extra = sorted({k for r in rows for k in r if k.startswith(column + "_")})
        with args.runs_csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["arm", "fraction", "seed", column, *extra, "train_seconds", "prior_shift"])
            for r in sorted(rows, key=lambda r: (r["prior"], r["fraction"], r["seed"])):
                w.writerow([r["prior"], f"{r['fraction']:g}", r["seed"], round(r[column], 4),
                            *(round(r.get(k, float("nan")), 4) for k in extra),
                            "" if r.get("train_seconds") is None else r["train_seconds"],
                            "" if r.get("prior_shift") is None else r["prior_shift"]])
        print(f"\nruns: {args.runs_csv} ({len(rows)} rows)")


if __name__ == "__main__":
    main()

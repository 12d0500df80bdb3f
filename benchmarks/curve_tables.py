"""The learning curve's docs tables, from a sweep's finished runs.

Reads the sweep's scored runs (``priorkit.pipeline.sweep.collect_rows``, the rows its own
report uses) and prints two Markdown tables: the absolute score of every arm at every
fraction (mean, sd over seeds, seeds) with the mean training seconds, and the paired
differences named by ``--pairs`` (``priorkit.pipeline.curve.compare``: mean, 95% CI over the
seeds both arms share, seeds ahead). ``--runs-csv`` also writes one row per run.

    python benchmarks/curve_tables.py pipelines/bc5cdr-curve.yaml --runs-csv docs/results/bc5cdr-curve-runs.csv
    python benchmarks/curve_tables.py pipelines/bc5cdr-curve.yaml --set name=bc5cdr-curve-mpnet-lr1e-4 ...  # another sweep of it

The sweep's own report (``priorkit sweep PIPELINE --report-only``: curve.md, results.md,
controls.md) has the same differences with the sentence bootstrap beside them; this script
is the compact view docs/benchmarks.md shows, with arms side by side.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics as st
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from priorkit.pipeline.config import load_config  # noqa: E402
from priorkit.pipeline.curve import compare, score_table  # noqa: E402
from priorkit.pipeline.sweep import collect_rows, grid  # noqa: E402

ARMS = ["none", "features", "attention", "both", "random-spans", "shuffled", "dict-union", "dict-override"]
PAIRS = ["features-none", "attention-none", "both-none", "both-features", "features-random-spans",
         "attention-shuffled", "features-dict-override", "dict-override-none"]


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
    arms = [a for a in args.arms if a in present]
    fractions = sorted({f for _, f in scores})

    def split_pair(text: str) -> tuple[str, str] | None:
        """'features-random-spans' -> ('features', 'random-spans'); None when an arm has no runs."""
        for i, ch in enumerate(text):
            if ch == "-" and text[:i] in present and text[i + 1:] in present:
                return text[:i], text[i + 1:]
        return None

    print(f"| fraction | {' | '.join(arms)} | train s/run |")
    print("|" + "---|" * (len(arms) + 2))
    for f in fractions:
        row = [f"{f * 100:g}%"]
        for a in arms:
            v = list(scores.get((a, f), {}).values())
            row.append(f"{st.mean(v):.2f} ({st.stdev(v):.2f}, {len(v)})" if len(v) > 1
                       else (f"{v[0]:.2f} (1)" if v else "-"))
        secs = [r["train_seconds"] for r in rows if r["fraction"] == f and r.get("train_seconds")]
        row.append(f"{st.mean(secs):.0f}" if secs else "-")
        print("| " + " | ".join(row) + " |")
    print()
    pairs = [pair for pair in map(split_pair, args.pairs) if pair is not None]
    print(f"| fraction | {' | '.join(f'{a} − {b}' for a, b in pairs)} |")
    print("|" + "---|" * (len(pairs) + 1))
    for f in fractions:
        row = [f"{f * 100:g}%"]
        for a, b in pairs:
            c = compare(scores, a, b, f)
            if c is None or c.stats.n < 2:
                row.append("-")
                continue
            p = c.stats
            row.append(f"{p.mean:+.2f} [{p.ci_low:+.2f}, {p.ci_high:+.2f}] {sum(d > 0 for d in c.deltas)}/{p.n}")
        print("| " + " | ".join(row) + " |")
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

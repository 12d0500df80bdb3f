"""The learning curve's docs tables, from a sweep's finished runs.

Reads every ``runs/NAME/ARM/fracF/seedS/metrics.json`` of a sweep and prints two Markdown
tables: the absolute score of every arm at every fraction (mean, sd over seeds, seeds) with
the mean training seconds, and the paired differences named by ``--pairs`` (mean, 95% CI
over the seeds both arms share, seeds ahead). ``--runs-csv`` also writes one row per run.

    python benchmarks/curve_tables.py runs/bc5cdr-curve --runs-csv docs/results/bc5cdr-curve-runs.csv

The sweep's own report (``priorkit sweep PIPELINE --report-only``: curve.md, results.md,
controls.md) has the same differences with the sentence bootstrap beside them; this script
is the compact view docs/benchmarks.md shows, with arms side by side.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics as st
from pathlib import Path

from priorkit.stats import paired

ARMS = ["none", "features", "attention", "both", "random-spans", "shuffled", "dict-union", "dict-override"]
PAIRS = ["features-none", "attention-none", "both-none", "both-features", "features-random-spans",
         "attention-shuffled", "features-dict-override", "dict-override-none"]


def load(folder: Path, split: str, metric: str) -> dict[tuple[str, float, int], dict]:
    runs = {}
    for path in sorted(folder.glob("*/frac*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        scores = m.get("metrics", {}).get(split, {})
        if metric not in scores:
            continue
        arm, frac, seed = path.parts[-4], float(path.parts[-3][4:]), int(path.parts[-2][4:])
        runs[(arm, frac, seed)] = {"score": 100 * scores[metric], "scores": scores,
                                   "seconds": (m.get("train") or {}).get("seconds"),
                                   "shift": (m.get("prior_usage") or {}).get("shift")}
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, help="the sweep's run folder, runs/NAME")
    ap.add_argument("--split", default="test")
    ap.add_argument("--metric", default="f1")
    ap.add_argument("--arms", nargs="+", default=ARMS, help="columns of the absolute table (absent arms are left out)")
    ap.add_argument("--pairs", nargs="+", default=PAIRS, metavar="A-B",
                    help="differences to tabulate, each 'arm-baseline' (arm names may hold '-'; a pair "
                         "whose arms have no runs is left out)")
    ap.add_argument("--runs-csv", type=Path, help="also write one row per run here")
    args = ap.parse_args()
    runs = load(args.folder, args.split, args.metric)
    if not runs:
        raise SystemExit(f"no scored runs with {args.split} {args.metric} under {args.folder}")
    present = {a for a, _, _ in runs}
    arms = [a for a in args.arms if a in present]
    fractions = sorted({f for _, f, _ in runs})

    def values(arm: str, f: float) -> dict[int, float]:
        return {s: r["score"] for (a, ff, s), r in runs.items() if a == arm and ff == f}

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
            v = list(values(a, f).values())
            row.append(f"{st.mean(v):.2f} ({st.stdev(v):.2f}, {len(v)})" if len(v) > 1
                       else (f"{v[0]:.2f} (1)" if v else "-"))
        secs = [r["seconds"] for (_, ff, _), r in runs.items() if ff == f and r["seconds"]]
        row.append(f"{st.mean(secs):.0f}" if secs else "-")
        print("| " + " | ".join(row) + " |")
    print()
    pairs = [pair for pair in map(split_pair, args.pairs) if pair is not None]
    print(f"| fraction | {' | '.join(f'{a} − {b}' for a, b in pairs)} |")
    print("|" + "---|" * (len(pairs) + 1))
    for f in fractions:
        row = [f"{f * 100:g}%"]
        for a, b in pairs:
            va, vb = values(a, f), values(b, f)
            seeds = sorted(set(va) & set(vb))
            if len(seeds) < 2:
                row.append("-")
                continue
            p = paired([va[s] - vb[s] for s in seeds])
            row.append(f"{p.mean:+.2f} [{p.ci_low:+.2f}, {p.ci_high:+.2f}] {sum(va[s] > vb[s] for s in seeds)}/{len(seeds)}")
        print("| " + " | ".join(row) + " |")
    if args.runs_csv:
        args.runs_csv.parent.mkdir(parents=True, exist_ok=True)
        extra = sorted({k for r in runs.values() for k in r["scores"] if k.startswith(args.metric + "_")})
        with args.runs_csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["arm", "fraction", "seed", f"{args.split}_{args.metric}",
                        *(f"{args.split}_{k}" for k in extra), "train_seconds", "prior_shift"])
            for (a, f, s), r in sorted(runs.items()):
                w.writerow([a, f"{f:g}", s, round(r["score"] / 100, 4),
                            *(round(r["scores"].get(k, float("nan")), 4) for k in extra),
                            r["seconds"] if r["seconds"] is not None else "",
                            r["shift"] if r["shift"] is not None else ""])
        print(f"\nruns: {args.runs_csv} ({len(runs)} rows)")


if __name__ == "__main__":
    main()

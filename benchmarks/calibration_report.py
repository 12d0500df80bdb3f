"""Issue 30's calibration tables: the dictionary's quality on each run's gold subset, as it is and
calibrated, as CSV files that ``benchmarks/claims.py`` renders into the docs.

    python benchmarks/calibration_report.py runs OUT_DIR [OUT_DIR ...] --out docs/results/NAME-calibration.csv
    python benchmarks/calibration_report.py thresholds PIPELINE [PIPELINE ...] --seeds 0 1 2 3 4 \
        --thresholds 0.5 0.6 0.7 --out docs/results/NAME-calibration-thresholds.csv

``runs``: OUT_DIR is a sweep's folder (``runs/<pipeline>``); its runs'
``<prior>/frac<f>/seed<s>/calibration.json`` are read (a self-training run's ``teacher/`` copy
is the same counts, and left out): the forms dropped, the quality before and after, the silver
weights ``auto`` gave and whether the run warned.

``thresholds``: the pipeline's gold subset of each seed (``train.fraction``, ``train.subset``)
is counted again, as a run does before it trains (no training), and the calibrated quality
given at each threshold: what the default threshold was chosen on.

Precision, recall and F1 are x100 with 4 decimals.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

COLUMNS = ["pipeline", "prior", "fraction", "seed", "sentences", "threshold", "prior_strength", "dropped",
           "precision", "recall", "f1", "calibrated_precision", "calibrated_recall", "calibrated_f1",
           "silver_weight", "silver_unmatched_weight", "warning"]


def rows_of(out_dir: Path) -> list[dict]:
    rows = []
    for path in sorted(Path(out_dir).glob("*/frac*/seed*/calibration.json")):
        d = json.loads(path.read_text())
        seed_dir, frac_dir, prior_dir = path.parent, path.parent.parent, path.parent.parent.parent
        row = {"pipeline": Path(out_dir).name, "prior": prior_dir.name, "fraction": frac_dir.name[len("frac"):],
               "seed": seed_dir.name[len("seed"):], "sentences": d["sentences"],
               "threshold": "" if d.get("threshold") is None else d["threshold"],
               "prior_strength": d["prior_strength"], "dropped": d["dropped"]}
        for prefix, q in (("", d["before"]), ("calibrated_", d["after"])):
            for k in ("precision", "recall", "f1"):
                row[prefix + k] = f"{100 * q[k]:.4f}"
        for k in ("silver_weight", "silver_unmatched_weight"):
            row[k] = d.get(k, "")
        row["warning"] = "yes" if d.get("warning") else ""
        rows.append(row)
    return rows


THRESHOLD_COLUMNS = ["pipeline", "fraction", "seed", "sentences", "threshold", "prior_strength", "dropped",
                     "precision", "recall", "f1"]


def threshold_rows(pipeline: str, seeds: list[int], thresholds: list[float]) -> list[dict]:
    """The calibrated quality of ``pipeline``'s dictionary on each seed's gold subset at each
    threshold (threshold 0: as it is), counted as :func:`calibrate_run` counts it."""
    import priorkit
    from priorkit.supervision.calibration import calibrate
    from priorkit.training.calibrate_stage import _types
    from priorkit.config import load_config
    from priorkit.training.data import load_data
    from priorkit.evaluation.sweep import grid

    cfg = load_config(pipeline, [f"sweep.seeds={seeds}", f"sweep.fractions=[{load_config(pipeline).train.fraction}]"])
    train = load_data(cfg)["train"]
    labels = sorted({t for e in train.examples for t in e["tags"]})
    rows, done = [], set()
    for plan in grid(cfg):
        prior = plan.prior
        if prior is None or prior.calibrate is None or plan.seed in done:
            continue  # one count per seed: the settings share the dictionary and the gold subset
        done.add(plan.seed)
        gold = [train.examples[i] for i in plan.train_indices(len(train))]
        provider = priorkit.get_provider(prior.provider, **(prior.params or {}))
        cal = calibrate(provider, gold, _types(plan, labels), prior.calibrate.prior_strength,
                        branches=prior.calibrate.branches)
        for th in thresholds:
            q = cal.quality(th or None)
            rows.append({"pipeline": cfg.name, "fraction": plan.fraction, "seed": plan.seed, "sentences": len(gold),
                         "threshold": th, "prior_strength": prior.calibrate.prior_strength,
                         "dropped": len(cal.dropped(th)) if th else 0,
                         **{k: f"{100 * getattr(q, k):.4f}" for k in ("precision", "recall", "f1")}})
    return rows


def _write(rows: list[dict], columns: list[str], out: Path) -> None:
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out} ({len(rows)} rows)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("runs", help="every run's calibration.json under the sweep folders")
    r.add_argument("out_dirs", nargs="+", type=Path)
    r.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("thresholds", help="the calibrated quality at each threshold, counted again")
    t.add_argument("pipelines", nargs="+")
    t.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    t.add_argument("--thresholds", nargs="+", type=float, default=[0.0, 0.5, 0.6, 0.7])
    t.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.mode == "runs":
        rows = [r for d in args.out_dirs for r in rows_of(d)]
        if not rows:
            raise SystemExit(f"no calibration.json under {', '.join(map(str, args.out_dirs))}")
        _write(rows, COLUMNS, args.out)
    else:
        _write([r for p in args.pipelines for r in threshold_rows(p, args.seeds, args.thresholds)],
               THRESHOLD_COLUMNS, args.out)


if __name__ == "__main__":
    main()

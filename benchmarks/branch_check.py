"""Calibration by form against calibration by branch, per seed, on each run's own gold subset
(no training): the held-out quality of the calibrated dictionary, what each drops, and whether
the two drop lists are the same (then the runs' matches, features and silver labels are too).

    python benchmarks/branch_check.py PIPELINE [--seeds 0 1 2 3 4] [--thresholds 0.5 0.6]
        [--out docs/results/NAME.csv]

``--thresholds``: the calibration thresholds to compare (default: the pipeline's).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import priorkit
from priorkit.supervision.calibration import calibrate
from priorkit.training.calibrate_stage import _types
from priorkit.config import load_config
from priorkit.training.data import load_data
from priorkit.training.plan import RunPlan
from priorkit.evaluation.sweep import write_csv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pipeline")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--thresholds", type=float, nargs="+", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfg = load_config(args.pipeline)
    prior = cfg.prior
    thresholds = args.thresholds or [prior.calibrate.threshold if prior.calibrate else 0.5]
    train = load_data(cfg)["train"]
    labels = sorted({t for e in train.examples for t in e["tags"]})
    provider = priorkit.get_provider(prior.provider, **(prior.params or {}))
    rows = []
    for seed in args.seeds:
        plan = RunPlan(cfg, prior.name, prior, cfg.train.fraction, seed)
        gold = [train.examples[i] for i in plan.train_indices(len(train))]
        types = _types(plan, labels)
        by = {b: calibrate(provider, gold, types, branches=b) for b in (False, True)}
        for threshold in thresholds:
            row = {"pipeline": cfg.name, "seed": seed, "sentences": len(gold), "threshold": threshold}
            for b, cal in by.items():
                q, tag = cal.quality(threshold), "branch" if b else "form"
                row.update({f"{tag}_precision": round(100 * q.precision, 2), f"{tag}_recall": round(100 * q.recall, 2),
                            f"{tag}_f1": round(100 * q.f1, 2), f"{tag}_dropped": len(cal.dropped(threshold))})
            row["branches_dropped"] = sum(len(d) == 3 for d in by[True].dropped(threshold))
            row["forms_kept_in_dropped_branches"] = len(by[True].kept(threshold))
            row["same_drop_list"] = (by[False].dropped(threshold) == by[True].dropped(threshold)
                                     and not by[True].kept(threshold))
            rows.append(row)
            print(row, flush=True)
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

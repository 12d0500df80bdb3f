"""Where each arm's entity F1 comes from: a BC5CDR sweep's saved test predictions, split by
what went wrong and by whether the dictionary knows the entity.

For every arm and seed at one fraction (the runs of a sweep such as
pipelines/bc5cdr-curve.yaml), the predicted entities are sorted into exact (type and both
boundaries right), boundary (same type, overlapping, not exact), type (same words, other
type), spurious (overlapping no gold entity); gold entities into found (exactly) or missed.
Gold entities are also split by whether the dictionary (the sweep's first post-hoc arm's
provider, HPO + MeSH concept matches, typed as BC5CDR) tags them exactly: recall on the
dictionary's entities and on the others tells whether an arm's gain is where the dictionary
already is (``priorkit.evaluation.dictionary_recall``, which the demo's summary uses too).  Prints a Markdown table of means over seeds; ``--json`` keeps the per-seed
counts.

    .venv/bin/python benchmarks/error_profile.py pipelines/bc5cdr-curve.yaml --fraction 0.1 \
        --arms none features attention both --json docs/results/bc5cdr-curve-errors-0.1.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from priorkit.config import PosthocConfig, load_config  # noqa: E402
from priorkit.training.data import load_data  # noqa: E402
from priorkit.evaluation.dictionary_recall import dictionary_recall  # noqa: E402
from priorkit.training.plan import RunPlan  # noqa: E402
from priorkit.decode.spans import overlaps, spans as entities  # noqa: E402
from priorkit.evaluation.posthoc import dictionary_tags, typed_arm  # noqa: E402
from priorkit.training.predictions import read_predictions  # noqa: E402


def profile(pred: list[list[str]], gold: list[list[str]], dictionary: list[list[str]]) -> Counter:
    c: Counter = Counter()
    for p_tags, g_tags in zip(pred, gold):
        p, g = set(entities(p_tags)), set(entities(g_tags))
        for e in p:
            if e in g:
                c["exact"] += 1
            elif any(x[0] == e[0] and overlaps(x, e) for x in g):
                c["boundary"] += 1
            elif any((x[1], x[2]) == (e[1], e[2]) for x in g):
                c["type"] += 1
            elif any(overlaps(x, e) for x in g):
                c["boundary"] += 1  # overlapping, other type and other words
            else:
                c["spurious"] += 1
        c["predicted"] += len(p)
        c["gold"] += len(g)
    split = dictionary_recall(pred, gold, dictionary)  # recall inside and outside the dictionary
    c.update({k: getattr(split, k) for k in ("gold_dict", "found_dict", "gold_other", "found_other")})
    return c


def summary(c: Counter) -> dict[str, float]:
    prec = c["exact"] / c["predicted"] if c["predicted"] else 0.0
    rec = c["exact"] / c["gold"] if c["gold"] else 0.0
    return {
        "f1": 100 * (2 * prec * rec / (prec + rec) if prec + rec else 0.0),
        "precision": 100 * prec, "recall": 100 * rec,
        "recall_dict": 100 * c["found_dict"] / max(c["gold_dict"], 1),
        "recall_other": 100 * c["found_other"] / max(c["gold_other"], 1),
        "boundary": c["boundary"], "type": c["type"], "spurious": c["spurious"], "predicted": c["predicted"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("--fraction", type=float, required=True)
    ap.add_argument("--arms", nargs="+", required=True)
    ap.add_argument("--seeds", nargs="+", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    cfg = load_config(args.pipeline)
    split = cfg.sweep.split
    examples = load_data(cfg)[split].examples
    arm = next(iter(cfg.sweep.posthoc.values()), None) or PosthocConfig(params={"source": "hpo+mesh"})
    arm = typed_arm(cfg, arm, "sweep.posthoc", (t for e in examples for t in e["tags"]))  # the pipeline's type map
    dictionary = dictionary_tags(arm, examples)
    seeds = args.seeds or cfg.sweep.seeds
    per: dict[str, dict[int, dict]] = {}
    for name in args.arms:
        for s in seeds:
            got = read_predictions(RunPlan(cfg, name, None, args.fraction, s).run_dir, split)
            if got is None:
                continue
            pred, gold = got
            per.setdefault(name, {})[s] = summary(profile(pred, gold, dictionary))
    gold_tags = [e["tags"] for e in examples]
    coverage = profile(gold_tags, gold_tags, dictionary)  # the gold entities the dictionary tags exactly
    d = {"gold": coverage["gold"], "dict": coverage["gold_dict"]}
    cols = ["f1", "precision", "recall", "recall_dict", "recall_other", "boundary", "type", "spurious", "predicted"]
    print(f"{cfg.name}, fraction {args.fraction:g}, {split} ({len(examples)} sentences; the dictionary tags "
          f"{d['dict']} of {d['gold']} gold entities exactly); means over seeds\n")
    print("| arm | seeds | F1 | P | R | R (dictionary's entities) | R (others) | boundary errors | type errors "
          "| spurious | predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, by_seed in per.items():
        m = {k: statistics.mean(v[k] for v in by_seed.values()) for k in cols}
        print(f"| {name} | {len(by_seed)} | " + " | ".join(
            f"{m[k]:.2f}" if k in cols[:5] else f"{m[k]:.0f}" for k in cols) + " |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"pipeline": cfg.name, "fraction": args.fraction, "split": split,
                       "dictionary_exact": d["dict"], "gold": d["gold"], "per_seed": per}, fh, indent=1)


if __name__ == "__main__":
    main()

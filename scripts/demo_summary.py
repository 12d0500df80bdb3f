"""The demo's closing summary (``bash scripts/demo.sh``): what knowledge did on the BC5CDR slice.

Reads the finished runs of the demo sweep (pipelines/demo-bc5cdr.yaml) and prints:

* entity F1 per arm (mean over seeds, each seed), the paired Δ against no knowledge with its
  95% CI over the seeds, and the dictionary alone (its matches as the predictions, no model);
* recall on the gold entities the dictionary tags exactly and on the others, per arm
  (:mod:`priorkit.evaluation.dictionary_recall`);
* one test sentence with its gold, dictionary and model tags (written to ``example.md``);
* where the files are: the sweep's tables and its figure of the paired Δs (``results.png``).

    .venv/bin/python scripts/demo_summary.py pipelines/demo-bc5cdr.yaml [--set FIELD=VALUE ...]

Arguments it does not know (those meant for ``priorkit sweep``) are ignored, so demo.sh can
pass its own arguments to both.
"""
from __future__ import annotations

import argparse
import os
import statistics as st
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from priorkit.metrics import ner_metrics  # noqa: E402
from priorkit.config import PosthocConfig, load_config  # noqa: E402
from priorkit.evaluation.curve import compare, score_table  # noqa: E402
from priorkit.training.data import load_data  # noqa: E402
from priorkit.evaluation.dictionary_recall import dictionary_recall, entities, recall_table  # noqa: E402
from priorkit.training.plan import RunPlan  # noqa: E402
from priorkit.evaluation.posthoc import dictionary_tags, typed_arm  # noqa: E402
from priorkit.training.predictions import read_predictions  # noqa: E402
from priorkit.evaluation.sweep import collect_rows, grid  # noqa: E402

LABELS = {"none": "no knowledge", "features": "HPO+MeSH token features", "attention": "concept attention prior",
          "dict-override": "dictionary over no knowledge's output, afterwards"}


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def f1_table(scores: dict, arms: list[str], fraction: float, baseline: str, dict_f1: float) -> str:
    """Entity F1 x100 per arm with the paired Δ against ``baseline``, and the dictionary alone."""
    lines = ["| arm | entity F1 | per seed | Δ vs no knowledge | per seed Δ | 95% CI of Δ (seeds) | seeds ahead |",
             "|---|---|---|---|---|---|---|"]
    base = st.mean(scores[(baseline, fraction)].values())
    for arm in arms:
        got = scores.get((arm, fraction))
        if not got:
            continue
        per = " ".join(f"{got[s]:.2f}" for s in sorted(got))
        row = [LABELS.get(arm, arm), f"{st.mean(got.values()):.2f}", per, "", "", "", ""]
        c = compare(scores, arm, baseline, fraction) if arm != baseline else None
        if c is not None:
            p = c.stats
            row[3:] = [_signed(p.mean), " ".join(_signed(d) for d in c.deltas),
                       f"[{_signed(p.ci_low)}, {_signed(p.ci_high)}]" if p.n > 1 else "-",
                       f"{sum(d > 0 for d in c.deltas)}/{p.n}"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append(f"| dictionary alone (HPO+MeSH matches, no model) | {dict_f1:.2f} |  | {_signed(dict_f1 - base)} "
                 "|  |  |  |")
    return "\n".join(lines) + "\n"


def pick_example(gold: list[list[str]], dictionary: list[list[str]], none: list[list[str]],
                 best: list[list[str]], words: list[list[str]]) -> int | None:
    """A short test sentence the knowledge arm gets right and no knowledge does not, where
    the dictionary alone is wrong too if there is one (the model is more than the dictionary)."""
    ranked = []
    for i, g in enumerate(gold):
        if not entities(g) or not 6 <= len(words[i]) <= 22 or best[i] != g or none[i] == g:
            continue
        ranked.append((dictionary[i] == g, len(words[i]), i))
    return min(ranked)[2] if ranked else None


def example_table(words: list[str], columns: dict[str, list[str]]) -> str:
    """One word a line, a column of tags per source: readable in a terminal and in Markdown."""
    head = ["word", *columns]
    rows = [[w, *(tags[i] for tags in columns.values())] for i, w in enumerate(words)]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                      *("| " + " | ".join(r) + " |" for r in rows)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline", nargs="?", default="pipelines/demo-bc5cdr.yaml")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE")
    args, _ = ap.parse_known_args(argv)
    cfg = load_config(args.pipeline, args.overrides)
    split, metric = cfg.sweep.split, cfg.task.metric
    fraction = cfg.sweep.fractions[0]
    rows = collect_rows(cfg, grid(cfg))
    scores = score_table(rows, f"{split}_{metric}", scale=100.0)
    arms = [a for a in [*(cfg.sweep.priors or {}), *cfg.sweep.posthoc] if (a, fraction) in scores]
    baseline = cfg.sweep.baseline
    if (baseline, fraction) not in scores:
        print(f"no scored runs of {baseline!r} in {cfg.out_dir}: run the sweep first", file=sys.stderr)
        return 1
    examples = load_data(cfg)[split].examples
    gold = [list(e["tags"]) for e in examples]
    arm = next(iter(cfg.sweep.posthoc.values()), None) or PosthocConfig(params={"source": "hpo+mesh"})
    arm = typed_arm(cfg, arm, "sweep.posthoc", (t for e in examples for t in e["tags"]))  # the pipeline's type map
    dictionary = dictionary_tags(arm, examples)
    dict_f1 = 100 * ner_metrics(gold, dictionary)["f1"]
    out = cfg.out_dir

    recalls, preds = {}, {}
    for name in arms:
        for seed in sorted(scores[(name, fraction)]):
            got = read_predictions(RunPlan(cfg, name, None, fraction, seed).run_dir, split)
            if got is not None:
                recalls.setdefault(name, []).append(dictionary_recall(got[0], gold, dictionary))
                preds.setdefault(name, {})[seed] = got[0]
    per_arm = {LABELS.get(a, a): r for a, r in recalls.items()}
    per_arm["dictionary alone"] = [dictionary_recall(dictionary, gold, dictionary)]
    cov = per_arm["dictionary alone"][0]

    n_train = next((r["train_examples"] for r in rows if r.get("train_examples")), "?")
    text = [f"# {cfg.name}: knowledge on {n_train} BC5CDR training sentences\n",
            f"Entity F1 x100 on {len(examples)} {split} sentences, MiniLM, seeds "
            f"{', '.join(map(str, sorted(scores[(baseline, fraction)])))}; Δ paired by seed against no knowledge.\n",
            f1_table(scores, arms, fraction, baseline, dict_f1),
            f"Recall x100 inside and outside the dictionary (it tags {cov.gold_dict} of the {cov.gold} gold "
            f"entities exactly, {cov.coverage:.1f}%; of the others a match overlaps {cov.gold_boundary} with other "
            f"bounds or another type, none touches {cov.gold_unseen}; means over seeds), and how often the "
            "entities an arm predicts beyond the dictionary are right (below half its F1, such finds cost F1):\n",
            recall_table(per_arm)]
    best = next((a for a in ("features", "attention") if a in preds), None)
    seed0 = min(preds[baseline]) if preds.get(baseline) else None
    if best and seed0 is not None and seed0 in preds[best]:
        words = [list(e["words"]) for e in examples]
        i = pick_example(gold, dictionary, preds[baseline][seed0], preds[best][seed0], words)
        if i is not None:
            cols = {"gold": gold[i], "dictionary": dictionary[i],
                    **{f"{a} (seed {seed0})": preds[a][seed0][i] for a in preds if a in (cfg.sweep.priors or {})
                       and seed0 in preds[a]}}
            example = example_table(words[i], cols)
            (out / "example.md").write_text(f"# {split} sentence {i} of the demo's sample\n\n{example}")
            text += [f"One {split} sentence ({out / 'example.md'}):\n", example]
    files = [out / n for n in ("results.md", "results.png", "example.md", "summary.md")]
    text.append("Files: " + ", ".join(str(f) for f in files if f.exists() or f.name == "summary.md")
                + f" (results.png: each seed's Δ against no knowledge, the mean and its 95% CI)\n")
    summary = "\n".join(text)
    (out / "summary.md").write_text(summary)
    print("\n" + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

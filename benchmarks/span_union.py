"""A recipe's entities plus a second model's confident entities where the recipe found none
(a span union; no training): does it buy recall outside the dictionary at a lower price than
mixing the models word by word?

    python benchmarks/span_union.py PIPELINE RUN [RUN ...] --with RUN [RUN ...] --weight 0.6 --o-bias 1
        --add RUN [RUN ...] [--add-name none] [--thresholds 0.5 0.7 0.9 1.01] [--splits eval test]
        [--cache DIR] [--out docs/results/NAME.csv]

The recipe: each RUN mixed word by word with its ``--with`` model (``w * log p_RUN + (1 - w) *
log p_WITH``, ``--weight``), decoded with Viterbi and ``--o-bias`` (as ``benchmarks/decode_check.py``).
The partner (``--add``, one per RUN, the same seed) is decoded with Viterbi and no bias; each of its
entities that overlaps none of the recipe's is added when its confidence, the mean over its words
of the partner's probability of the tag it decoded, is at least the threshold (above 1: nothing is
added, the recipe alone).  Filter ``any``: every such entity; ``new``: only those the dictionary
does not tag exactly.  One row per (model, split, filter, threshold): precision, recall, F1,
recall inside and outside the dictionary (docs/pipelines.md), the entities added and the share
of them (x100) that are gold entities.  ``--cache`` as decode_check.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
from decode_check import mix_log_probs, pipeline_data, scores, split_tags, word_log_probs

from priorkit.decode.decoding import decode_tags
from priorkit.evaluation.dictionary_recall import entities
from priorkit.evaluation.sweep import write_csv


def candidates(log_probs: list, tags: list[list[str]], base: list[list[str]], dictionary: list[list[str]],
               labels: list[str]) -> list[list[tuple]]:
    """Per sentence, the partner's entities that overlap none of ``base``'s: (type, first, last,
    confidence, tagged exactly by the dictionary)."""
    out = []
    for lp, pt, bt, dt in zip(log_probs, tags, base, dictionary):
        taken = np.zeros(len(bt), dtype=bool)
        for _, s, e in entities(bt):
            taken[s:e + 1] = True
        known = set(entities(dt))
        found = []
        for ent in entities(pt):
            t, s, e = ent
            if e >= len(lp) or taken[s:e + 1].any():  # words past the model's window, or overlapping
                continue
            conf = float(np.mean([np.exp(lp[k][labels.index(pt[k])]) for k in range(s, e + 1)]))
            found.append((t, s, e, conf, ent in known))
        out.append(found)
    return out


def union(base: list[list[str]], cands: list[list[tuple]], gold: list[list[str]], threshold: float,
          new_only: bool) -> tuple[list[list[str]], int, int]:
    """``base`` with the candidates at ``threshold`` added; how many were added and how many of
    those are gold entities (same type and words)."""
    out, added, right = [], 0, 0
    for bt, found, gt in zip(base, cands, gold):
        tags, truth = list(bt), set(entities(gt))
        for t, s, e, conf, known in found:
            if conf >= threshold and not (new_only and known):
                tags[s:e + 1] = [f"B-{t}"] + [f"I-{t}"] * (e - s)
                added += 1
                right += (t, s, e) in truth
        out.append(tags)
    return out, added, right


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--with", dest="others", nargs="+", type=Path, required=True)
    ap.add_argument("--weight", type=float, default=0.6)
    ap.add_argument("--o-bias", dest="bias", type=float, default=1.0)
    ap.add_argument("--add", dest="partners", nargs="+", type=Path, required=True)
    ap.add_argument("--add-name", default="")
    ap.add_argument("--thresholds", nargs="+", type=float, default=[0.5, 0.7, 0.9, 1.01])
    ap.add_argument("--filters", nargs="+", choices=("any", "new"), default=["any", "new"])
    ap.add_argument("--splits", nargs="+", default=["eval", "test"])
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not len(args.runs) == len(args.others) == len(args.partners):
        ap.error(f"{len(args.runs)} runs, {len(args.others)} --with and {len(args.partners)} --add models: "
                 "give one of each per seed")
    data, arm = pipeline_data(args.pipeline)
    rows = []
    for split in args.splits:
        examples, gold, dictionary, tagged = split_tags(data, arm, split)
        pad = [len(g) for g in gold]
        for run, other, partner in zip(args.runs, args.others, args.partners):
            a, labels = word_log_probs(run, split, examples, args.cache)
            b, labels_b = word_log_probs(other, split, examples, args.cache)
            p, labels_p = word_log_probs(partner, split, examples, args.cache)
            if not labels == labels_b == labels_p:
                raise SystemExit(f"{run}, {other} and {partner} predict different labels: not the same task")
            mixed = mix_log_probs(a, b, tagged, args.weight, args.weight)
            base = [decode_tags(m, labels, "viterbi", args.bias) + ["O"] * (n - len(m)) for m, n in zip(mixed, pad)]
            ptags = [decode_tags(m, labels, "viterbi", 0.0) + ["O"] * (n - len(m)) for m, n in zip(p, pad)]
            cands = candidates(p, ptags, base, dictionary, labels)
            seed = re.search(r"seed(\d+)", str(run))
            for how in args.filters:
                for threshold in args.thresholds:
                    tags, added, right = union(base, cands, gold, threshold, how == "new")
                    row = {"arm": f"mix+{args.add_name}", "seed": seed.group(1) if seed else "", "split": split,
                           "weight": args.weight, "o_bias": args.bias, "filter": how, "threshold": threshold,
                           **scores(tags, gold, dictionary), "added": added,
                           "added_right": round(100 * right / added, 2) if added else "",
                           "model": str(run), "with": str(other), "add": str(partner)}
                    rows.append(row)
                    print(" ".join(f"{k}={v}" for k, v in row.items() if k not in ("model", "with", "add")), flush=True)
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

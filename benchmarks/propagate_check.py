"""The model's own finds carried across a document (post-hoc ``propagate``,
:func:`priorkit.evaluation.posthoc.propagate`), measured on kept models: each model (or mix)
tags every sentence of the split in order, the sample's context included; the decoding, the
dictionary's join and its document pass follow as in a post-hoc arm; then each (window, share)
carries the tagged surfaces to their untagged repeats, and the sample is scored.

    python benchmarks/propagate_check.py PIPELINE RUN [RUN ...] [--with RUN ...] [--weights 0.6,0.4]
        [--o-bias 1] [--join] [--document 20 [--document-columns-only]] [--propagate 0 5 20 -1] [--share 0 0.5]
        [--min-prob 0 0.1] [--splits eval test] [--cache DIR] [--out docs/results/NAME.csv] [--set FIELD=VALUE ...]

``--propagate 0``: the row without propagation (the post-hoc arm as it is; a window of 0 would
carry nothing across sentences, only within one).  Rows: decode_check's columns, the columns
against the document-level dictionary when ``--document`` is given, and ``added`` /
``added_right``: the entities propagation added on the sample and how many of them are gold.
``--min-prob``: carry an occurrence only where the (mixed) model gave the carried type at least
this probability on average over its words (the softmax of the mixed word scores).
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from decode_check import document_columns, mix_weights, scores, word_log_probs
from priorkit.decode.decoding import decode_tags, log_softmax
from priorkit.config import load_config
from priorkit.training.data import document_context, load_data
from priorkit.evaluation.dictionary_report import dictionary_of, dictionary_split_tags
from priorkit.evaluation.posthoc import dictionary_steps, document_tags, entities, propagate
from priorkit.evaluation.sweep import write_csv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--with", dest="others", nargs="+", type=Path, action="append", default=None)
    ap.add_argument("--weights", default="1", help="k + 1 weights joined by commas (--with given k times)")
    ap.add_argument("--o-bias", dest="biases", nargs="+", type=float, default=[0.0])
    ap.add_argument("--decode", default="viterbi")
    ap.add_argument("--join", action="store_true", help="the dictionary joins the entities the model split")
    ap.add_argument("--document", type=int, default=None, help="the dictionary's document pass, N sentences")
    ap.add_argument("--document-columns-only", action="store_true",
                    help="with --document: only the columns against the document-level dictionary, no pass")
    ap.add_argument("--propagate", nargs="+", type=int, default=[0, 20])
    ap.add_argument("--share", nargs="+", type=float, default=[0.5])
    ap.add_argument("--min-prob", dest="min_probs", nargs="+", type=float, default=[0.0])
    ap.add_argument("--splits", nargs="+", default=["eval", "test"])
    ap.add_argument("--name", default="")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    groups = args.others or []
    if any(len(g) != len(args.runs) for g in groups):
        ap.error(f"each --with must name one model per run ({len(args.runs)})")
    w = mix_weights(args.weights, len(groups), ap.error)
    cfg = load_config(args.pipeline, args.overrides)
    data, arm = load_data(cfg), dictionary_of(cfg)
    rows = []
    for split in args.splits:
        every, positions = document_context(getattr(cfg.data, split), cfg.where(f"data.{split}"))
        examples = data[split].examples
        gold = [list(e["tags"]) for e in examples]
        assert [every[p] for p in positions] == [list(e["words"]) for e in examples], "split changed"
        dictionary = dictionary_split_tags(arm, every, gold)
        sample_dict = [dictionary[p] for p in positions]
        document = document_tags(arm, every, range(len(every)), args.document) if args.document is not None else None
        sample_doc = [document[p] for p in positions] if document is not None else None
        context = [{"words": x} for x in every]
        for i, run in enumerate(args.runs):
            a, labels = word_log_probs(run, f"{split}-context", context, args.cache)
            mixed = a
            if groups:
                others = [word_log_probs(g[i], f"{split}-context", context, args.cache)[0] for g in groups]
                mixed = [sum(x * m for x, m in zip(w, ms)) for ms in zip(a, *others)]
            probs = [np.exp(log_softmax(m)) for m in mixed] if any(args.min_probs) else None
            seed = re.search(r"seed(\d+)", str(run))
            for bias in args.biases:
                decoded = [decode_tags(m, labels, args.decode, bias) + ["O"] * (len(x) - len(m))
                           for m, x in zip(mixed, every)]
                passed = None if args.document_columns_only else document
                steps = dictionary_steps(decoded, dictionary, args.join, passed) if (args.join or passed) \
                    else decoded
                for window, share, floor in [(0, None, None)] * (0 in args.propagate) + [
                    (n, x, f) for n in args.propagate if n for x in args.share for f in args.min_probs]:
                    tags = propagate(steps, every, window, share, probs=probs if floor else None, labels=labels,
                                     min_prob=floor) if window else steps
                    sample = [tags[p] for p in positions]
                    before = [set(entities(steps[p])) for p in positions]
                    new = [set(entities(t)) - b for t, b in zip(sample, before)]
                    right = sum(len(n & set(entities(g))) for n, g in zip(new, gold))
                    row = {"arm": args.name, "seed": seed.group(1) if seed else "", "split": split,
                           "weights": "/".join(f"{x:g}" for x in w), "o_bias": bias,
                           "join": int(args.join), "document": "" if args.document is None else (
                               "columns" if args.document_columns_only else args.document),
                           "propagate": window, "share": "" if share is None else share,
                           "min_prob": "" if floor is None else floor,
                           **scores(sample, gold, sample_dict),
                           **(document_columns(sample, gold, sample_doc) if sample_doc is not None else {}),
                           "added": sum(len(n) for n in new), "added_right": right, "model": str(run)}
                    rows.append(row)
                    print(" ".join(f"{k}={v}" for k, v in row.items() if k != "model"), flush=True)
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

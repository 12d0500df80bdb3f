"""Decoding and two-model ensembles on kept models: each model's entity scores on the
pipeline's splits, argmax against Viterbi decoding, and optionally mixed with a second model
word by word (no training; docs/inference.md#decoding).

    python benchmarks/decode_check.py PIPELINE RUN [RUN ...] [--with RUN ...] [--weights 1 0.7 0.5]
        [--outside 0.4 0] [--o-bias 0 0.5] [--decodings argmax viterbi] [--splits eval test]
        [--cache DIR] [--out docs/results/NAME.csv] [--set FIELD=VALUE ...]
    python benchmarks/decode_check.py PIPELINE RUN ... --with RUN ... --with RUN ... --weights 0.2,0.2,0.6 ...
        [--join none fragments pieces fragments+type] [--document 20]

RUN: a run folder with its model kept (train.keep_model: true), a model folder, or a
self-training run's ``teacher`` / ``round1`` folder.  ``--with``: a second model per RUN, in
the same order (the same seed); each word's log-probabilities are then
``w * log p_RUN + (1 - w) * log p_WITH`` for each weight ``w`` (1: RUN alone).  ``--with``
given k times mixes k models into each RUN: each weight is then k + 1 numbers joined by commas
(RUN's first, in the order of ``--with``; they must add up to 1), the rows' ``weights`` column
holds them joined by "/" and ``weight`` RUN's own.  ``--join``: after decoding, each of these
(the rows' ``join`` column): ``fragments``, the dictionary's entity replaces two or more of the
model's entities of its type that lie inside it (``sweep.posthoc.<arm>.fragments``,
:func:`priorkit.evaluation.posthoc.join_fragments`); ``pieces``, also a single one (screened, not a
pipeline option); ``fragments+type``, then the dictionary's type for every model entity with a
dictionary entity's bounds (screened); ``none``, nothing.  ``--document N``: then the
dictionary's document-level entities (the whole split in order, abbreviations carried N sentences)
that the sentence-level ones lack, added where the model found nothing
(``sweep.posthoc.<arm>.document``, :func:`priorkit.evaluation.posthoc.add_document_matches`); the
rows get ``document`` = N, and the recall inside and outside of the document-level dictionary
(``recall_dict_doc``, ``recall_other_doc``, ``gold_other_doc``: a stricter "outside", without
the entities the document pass finds); ``--document-columns-only`` gives those columns without
adding anything (for a model without knowledge).  ``--outside``:
the weights ``w`` at the words the dictionary does not tag, crossed with ``--weights`` at the
words it tags (a mix gated by the dictionary; default: one weight everywhere).  ``--o-bias``:
each value added to the log-probability of ``O`` before decoding (``task.o_bias``: 0 as the
models say; above 0 fewer entities).  One row per (model, split, weight, bias, decoding):
precision, recall, F1, and recall on the gold entities the sweep's dictionary tags exactly and
on the others, the others split into those a match overlaps with other bounds or type and
those no match touches, with the three counts (docs/pipelines.md).  ``--cache`` keeps each
model's word logits (``.npz``) so that a second pass predicts nothing.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

import numpy as np

from priorkit.decode.decoding import DECODINGS, decode_tags, log_softmax
from priorkit.metrics import ner_metrics
from priorkit.config import load_config
from priorkit.training.data import load_data
from priorkit.evaluation.dictionary_recall import dictionary_recall
from priorkit.evaluation.dictionary_report import dictionary_of, dictionary_split_tags
from priorkit.decode.spans import render, spans as posthoc_entities
from priorkit.decode.steps import add_document_matches, join_fragments
from priorkit.evaluation.posthoc import split_document_tags
from priorkit.evaluation.sweep import write_csv


def word_log_probs(folder: Path, split: str, examples: list[dict], cache: Path | None) -> tuple[list, list[str]]:
    """Each sentence's (words, labels) log-probabilities from the model in ``folder``, and its labels."""
    from priorkit.inference import load_model
    from priorkit.inference.predictor import resolve_folder

    model_dir = resolve_folder(folder)
    key = hashlib.sha256(f"{model_dir.resolve()}|{split}|{len(examples)}".encode()).hexdigest()[:16]
    path = cache / f"{key}.npz" if cache else None
    if path is not None and path.exists():
        z = np.load(path, allow_pickle=False)
        cuts = np.cumsum(z["lengths"])[:-1]
        return [log_softmax(b) for b in np.split(z["rows"], cuts)], [str(x) for x in z["labels"]]
    predictor = load_model(model_dir)
    blocks = predictor.word_logits([e["words"] for e in examples], batch_size=64)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, rows=np.concatenate(blocks), lengths=np.array([len(b) for b in blocks]),
                            labels=np.array(predictor.labels))
    return [log_softmax(b) for b in blocks], list(predictor.labels)


def mix_log_probs(a: list, b: list, tagged: list, w: float, w_outside: float) -> list[np.ndarray]:
    """Each sentence's ``g * a + (1 - g) * b``, ``g`` = ``w`` at the words the dictionary tags
    (``tagged``) and ``w_outside`` at the others."""
    out = []
    for x, y, t in zip(a, b, tagged):
        g = np.where(t[:len(x), None], w, w_outside)
        out.append(g * x + (1 - g) * y)
    return out


def pipeline_data(path: str) -> tuple[dict, object]:
    """A pipeline file's splits and its dictionary (the sweep's, docs/pipelines.md)."""
    cfg = load_config(path)
    return load_data(cfg), dictionary_of(cfg)


def split_tags(data: dict, arm, split: str) -> tuple[list[dict], list[list[str]], list[list[str]], list[np.ndarray]]:
    """A split's examples, gold tags, the dictionary's tags and (per sentence) the words it tags."""
    examples = data[split].examples
    gold = [list(e["tags"]) for e in examples]
    dictionary = dictionary_split_tags(arm, [e["words"] for e in examples], gold)
    return examples, gold, dictionary, [np.array([t != "O" for t in d]) for d in dictionary]


def scores(tags: list[list[str]], gold: list[list[str]], dictionary: list[list[str]]) -> dict:
    m = ner_metrics(gold, tags)
    r = dictionary_recall(tags, gold, dictionary)
    return {"precision": round(100 * m["precision"], 2), "recall": round(100 * m["recall"], 2),
            "f1": round(100 * m["f1"], 2), "recall_dict": round(r.recall_dict, 2),
            "recall_other": round(r.recall_other, 2), "recall_boundary": round(r.recall_boundary, 2),
            "recall_unseen": round(r.recall_unseen, 2), "gold_dict": r.gold_dict, "gold_boundary": r.gold_boundary,
            "gold_unseen": r.gold_unseen, "precision_dict": round(r.precision_dict, 2),
            "precision_other": round(r.precision_other, 2), "pred_other": r.pred_other}


def document_columns(tags: list[list[str]], gold: list[list[str]], document: list[list[str]]) -> dict:
    """Recall inside and outside the document-level dictionary (a stricter "outside")."""
    r = dictionary_recall(tags, gold, document)
    return {"recall_dict_doc": round(r.recall_dict, 2), "recall_other_doc": round(r.recall_other, 2),
            "gold_other_doc": r.gold_other}


def join_pieces(model: list[str], dictionary: list[str]) -> list[str]:
    """:func:`join_fragments` that also takes a single piece (screened, not a pipeline option)."""
    return join_fragments(model, dictionary, min_pieces=1)


def dictionary_type(model: list[str], dictionary: list[str]) -> list[str]:
    """:func:`join_fragments`, then the dictionary's type for each model entity with a dictionary
    entity's bounds (screened)."""
    bounds = {(s, e): t for t, s, e in posthoc_entities(dictionary)}
    joined = join_fragments(model, dictionary)
    return render([(bounds.get((s, e), t), s, e) for t, s, e in posthoc_entities(joined)], len(model))


JOINS = {"none": lambda t, d: list(t), "fragments": join_fragments, "pieces": join_pieces,
         "fragments+type": dictionary_type}


def mix_weights(text: str, k: int, error) -> tuple[float, ...]:
    """The k + 1 weights of a mix of RUN and ``k`` models from ``text`` ("0.6", or "0.2,0.2,0.6");
    one number with one model is RUN's weight, the other's is the rest."""
    try:
        w = tuple(float(x) for x in text.split(","))
    except ValueError:
        error(f"--weights {text!r}: not numbers")
    if k <= 1 and len(w) == 1:
        return (w[0], 1.0 - w[0]) if k == 1 else (1.0,)
    if len(w) != k + 1 or abs(sum(w) - 1.0) > 1e-6 or min(w) < 0:
        error(f"--weights {text!r}: a mix of RUN and {k} model(s) takes {k + 1} weights >= 0 joined by commas, "
              "adding up to 1")
    return w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--with", dest="others", nargs="+", type=Path, action="append", default=None)
    ap.add_argument("--weights", nargs="+", default=["1"],
                    help="RUN's weight (one --with), or k + 1 weights joined by commas (--with given k times)")
    ap.add_argument("--outside", nargs="+", type=float, default=None,
                    help="RUN's weights at the words the dictionary does not tag (default: --weights)")
    ap.add_argument("--o-bias", dest="biases", nargs="+", type=float, default=[0.0])
    ap.add_argument("--decodings", nargs="+", choices=DECODINGS, default=list(DECODINGS))
    ap.add_argument("--splits", nargs="+", default=["eval", "test"])
    ap.add_argument("--name", default="", help="the runs' arm, for the rows (default: empty)")
    ap.add_argument("--with-name", action="append", default=None,
                    help="the --with runs' arm, for the rows (once per --with)")
    ap.add_argument("--join", nargs="+", choices=list(JOINS), default=None,
                    help="after decoding: the dictionary joins the pieces of its entities (see the module doc)")
    ap.add_argument("--document", type=int, default=None,
                    help="add the dictionary's document-level entities (abbreviations carried N sentences)")
    ap.add_argument("--document-columns-only", action="store_true",
                    help="with --document: only the columns measured against the document-level dictionary")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a field of the pipeline file, as `priorkit sweep --set` does")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    groups = args.others or []
    if any(len(g) != len(args.runs) for g in groups):
        ap.error(f"each --with must name one model per run ({len(args.runs)}); got {[len(g) for g in groups]}")
    names = args.with_name or [""] * len(groups)
    if len(names) != len(groups):
        ap.error(f"--with-name given {len(names)} times for {len(groups)} --with")
    weights = [mix_weights(w, len(groups), ap.error) for w in args.weights]
    if args.outside is not None and len(groups) != 1:
        ap.error("--outside gates a mix of two models: give --with once")
    cfg = load_config(args.pipeline, args.overrides)
    data, arm = load_data(cfg), dictionary_of(cfg)
    rows = []
    for split in args.splits:
        examples, gold, dictionary, tagged = split_tags(data, arm, split)
        document = (split_document_tags(cfg, arm, split, [e["words"] for e in examples], args.document)
                    if args.document is not None else None)
        for i, run in enumerate(args.runs):
            a, labels = word_log_probs(run, split, examples, args.cache)
            others = []
            for g in groups:
                b, labels_b = word_log_probs(g[i], split, examples, args.cache)
                if labels_b != labels:
                    raise SystemExit(f"{g[i]} predicts {labels_b}, {run} {labels}: not the same task")
                others.append(b)
            seed = re.search(r"seed(\d+)", str(run))
            fraction = re.search(r"frac([0-9.]+)/", str(run))
            pairs = [(w, w) for w in weights] if args.outside is None else \
                [(w, (wo, 1 - wo)) for w in weights for wo in args.outside]
            for w, wo in pairs if others else [((1.0,), (1.0,))]:
                mix = bool(others) and w[0] != 1.0 or (args.outside is not None and wo[0] != 1.0)
                if not mix:
                    mixed = a
                elif len(others) == 1:
                    mixed = mix_log_probs(a, others[0], tagged, w[0], wo[0])
                else:
                    mixed = [sum(x * m for x, m in zip(w, ms)) for ms in zip(a, *others)]
                for bias in args.biases:
                    for how in args.decodings:
                        decoded = [decode_tags(m, labels, how, bias) + ["O"] * (len(g) - len(m))
                                   for m, g in zip(mixed, gold)]
                        for join in args.join or [None]:
                            tags = decoded if join is None else [JOINS[join](t, d) for t, d in zip(decoded, dictionary)]
                            if document is not None and not args.document_columns_only:
                                tags = [add_document_matches(t, d, x) for t, d, x in zip(tags, dictionary, document)]
                            row = {"arm": "+".join([args.name, *names]) if mix else args.name,
                                   **({"fraction": fraction.group(1)} if fraction else {}),
                                   "seed": seed.group(1) if seed else "", "split": split, "weight": w[0],
                                   **({"weights": "/".join(f"{x:g}" for x in w)} if len(groups) > 1 else {}),
                                   **({"weight_outside": wo[0]} if args.outside is not None else {}), "o_bias": bias,
                                   **({"join": join} if join is not None else {}),
                                   **({"document": "columns" if args.document_columns_only else args.document}
                                      if document is not None else {}),
                                   "decode": how, **scores(tags, gold, dictionary),
                                   **(document_columns(tags, gold, document) if document is not None else {}),
                                   "model": str(run), "with": " ".join(str(g[i]) for g in groups) if mix else ""}
                            rows.append(row)
                            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

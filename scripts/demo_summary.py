"""The demo's closing summary (``bash scripts/demo.sh``): the recipe on the BC5CDR slice, beside no
knowledge and the dictionary alone.

Reads the finished sweep of ``pipelines/demo-bc5cdr.yaml`` (its trained runs, post-hoc arms and
baselines) and prints:

* entity F1 (precision, recall) of the recipe (``st-mix-doc``), its parts, no knowledge and the
  dictionary alone and calibrated, by sentence and as a document; the recipe's Δ against each
  row, paired on the same test sentences (and seeds), with its 95% CI: a paired bootstrap over
  the test sentences and the seeds (:func:`priorkit.stats.bootstrap_f1_delta`), and with two or
  more seeds also Student's t over the seeds;
* one line saying plainly whether the recipe beats the strongest dictionary row;
* recall inside and outside the dictionary (:mod:`priorkit.evaluation.dictionary_recall`);
* with ``--tagged``: the raw abstract as the recipe folder tagged it (``priorkit predict``'s JSON
  Lines), each entity with its character offsets, type, concept IDs and source; when the abstract
  is BC5CDR's first test abstract (``data/examples/bc5cdr-abstract.txt``), each entity is checked
  against its gold annotation.

    .venv/bin/python scripts/demo_summary.py pipelines/demo-bc5cdr.yaml [--tagged FILE] [--set FIELD=VALUE ...]
        [--timing NAME=SECONDS ...]

Arguments it does not know (those meant for ``priorkit``) are ignored, so demo.sh can pass its own
arguments to both.  Writes ``summary.md`` in the sweep's folder, and beside it ``summary.json``: the
same numbers unrounded for machines (:func:`summary_record`; docs/results/demo-bc5cdr.json is one,
read by ``lab/claims/demo.py`` for the README and docs/benchmarks.md).  ``--timing`` records a step's
seconds (demo.sh passes its steps') under ``seconds``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics as st
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from priorkit.config import load_config  # noqa: E402
from priorkit.evaluation.curve import compare, score_table  # noqa: E402
from priorkit.evaluation.dictionary_recall import dictionary_recall, recall_table  # noqa: E402
from priorkit.evaluation.sweep import all_plans, collect_rows  # noqa: E402
from priorkit.training.plan import RunPlan  # noqa: E402
from priorkit.training.predictions import read_predictions, sentence_ci  # noqa: E402

RECIPE = "st-mix-doc"
NONE = "none"
#: the rows, in the order shown: (name in the sweep, label)
ROWS = [
    (RECIPE, "**the recipe**: st-mix, then the dictionary read as a document"),
    ("st-mix", "the two students mixed 0.6 / 0.4, Viterbi, O bias 1"),
    ("st-branch", "student with token features (dictionary calibrated by branch)"),
    ("st-nofeat", "student without token features"),
    (NONE, "no knowledge (MiniLM on the gold alone)"),
    ("dictionary-alone", "the dictionary alone (HPO+MeSH matches, no model)"),
    ("dictionary-alone-doc", "the dictionary alone, read as a document"),
    ("dictionary-calibrated", "the dictionary alone, calibrated on the gold"),
    ("dictionary-calibrated-doc", "the dictionary alone, calibrated, read as a document"),
]
DICTIONARIES = [name for name, _ in ROWS if name.startswith("dictionary-")]
#: the version of summary.json's layout (:func:`summary_record`)
SCHEMA = "priorkit demo summary 1"
#: what summary.json says of the run besides its numbers (:func:`main` fills them; None where unknown)
ABOUT = ("pipeline", "split", "metric", "seeds", "train_sentences", "unlabeled_text", "unlabeled_sentences",
         "test_sentences", "epochs", "abstract", "seconds", "written")
#: the sentence bootstrap's replicates (priorkit.stats.bootstrap_f1_delta's default, as the text says)
REPLICATES = 2000
BC5CDR_TEST = Path(__file__).resolve().parent.parent / "data" / "bc5cdr" / "test.tsv"


def row_labels(cfg) -> list[tuple[str, str]]:
    """:data:`ROWS` with the mix's weights and the decoding of this pipeline."""
    arm = cfg.sweep.posthoc.get("st-mix")
    if arm is None or not arm.weights:
        return ROWS
    how = f"{arm.decode or cfg.task.decode}, O bias {cfg.task.o_bias if arm.o_bias is None else arm.o_bias:g}"
    mix = f"the two students mixed {' / '.join(f'{w:g}' for w in arm.weights)} word by word, {how}"
    return [(name, mix if name == "st-mix" else label) for name, label in ROWS]


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def _mean(values: dict) -> float:
    return st.mean(values.values())


def results_table(scores: dict, fraction: float, cis: dict, labels: list[tuple[str, str]] | None = None,
                  recipe: str = RECIPE, extra: dict | None = None) -> str:
    """Entity F1 x100 per row (mean over seeds, each seed) with precision and recall (``extra``:
    name -> (P, R)), and the recipe's paired Δ against the row with its 95% CIs (``cis``: name ->
    (low, high) x100 of the sentence bootstrap, or None)."""
    labels = ROWS if labels is None else labels
    many = len(scores.get((recipe, fraction), {})) > 1
    head = ["row", "entity F1", "P", "R", "recipe − row", "95% CI (sentences" + (" + seeds)" if many else ")")]
    if many:
        head += ["95% CI (seeds, t)", "seeds recipe ahead"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, label in labels:
        got = scores.get((name, fraction))
        if not got:
            continue
        f1 = f"{_mean(got):.2f}" + (" (" + " ".join(f"{got[s]:.2f}" for s in sorted(got)) + ")" if many else "")
        p, r = (extra or {}).get(name, (math.nan, math.nan))
        row = [label, f1, f"{p:.1f}", f"{r:.1f}", "", ""] + (["", ""] if many else [])
        c = compare(scores, recipe, name, fraction) if name != recipe else None
        if c is not None:
            row[4] = _signed(c.stats.mean)
            ci = cis.get(name)
            row[5] = f"[{_signed(ci[0])}, {_signed(ci[1])}]" if ci else "-"
            if many:
                s = c.stats
                row[6] = f"[{_signed(s.ci_low)}, {_signed(s.ci_high)}]" if s.n > 1 else "-"
                row[7] = f"{sum(d > 0 for d in c.deltas)}/{s.n}"
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def strongest(scores: dict, fraction: float, cis: dict, recipe: str = RECIPE,
              dictionaries: list[str] | None = None) -> tuple[str, float, tuple | None] | None:
    """The strongest dictionary row (the highest mean F1), the recipe's F1 minus its, and that Δ's
    95% CI (or None); None when no dictionary row or no recipe row was scored."""
    rows = [d for d in (DICTIONARIES if dictionaries is None else dictionaries) if scores.get((d, fraction))]
    if not rows or not scores.get((recipe, fraction)):
        return None
    best = max(rows, key=lambda d: _mean(scores[(d, fraction)]))
    return best, _mean(scores[(recipe, fraction)]) - _mean(scores[(best, fraction)]), cis.get(best)


def verdict(scores: dict, fraction: float, cis: dict, recipe: str = RECIPE,
            dictionaries: list[str] | None = None) -> str:
    """One plain sentence: does the recipe beat the strongest dictionary row (the highest mean F1)?"""
    found = strongest(scores, fraction, cis, recipe, dictionaries)
    if found is None:
        return "No dictionary row or no recipe row was scored: nothing to compare."
    best, delta, ci = found
    label = dict(ROWS).get(best, best)
    shown = f"{_signed(delta)} F1" + (f", 95% CI [{_signed(ci[0])}, {_signed(ci[1])}]" if ci else "")
    if ci and ci[0] > 0:
        return f"The recipe BEATS the strongest dictionary row ({label}): {shown}, the CI above 0."
    if delta > 0:
        return (f"The recipe is AHEAD of the strongest dictionary row ({label}) by {shown}, but the CI holds 0: "
                "on this slice it is not shown to beat the dictionary.")
    return (f"The recipe does NOT beat the strongest dictionary row ({label}): {shown}. On this slice the "
            "dictionary alone tags better than the recipe. The recipe of record learns from far more text (the "
            "rest of BC5CDR's train, unlabelled); its measured results, and the dictionary rows they were compared "
            "with, are in docs/benchmarks.md#the-recipe-of-record.")


def _number(x):
    """A JSON number: None for NaN or a missing value."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def recall_means(per_arm: dict) -> list[dict]:
    """Per arm, as :func:`priorkit.evaluation.dictionary_recall.recall_table` shows it: the mean over
    its runs of recall inside the dictionary, outside it (and its two parts) and overall, and the
    precision of its entities beyond the dictionary (None for an arm that predicts none)."""
    out = []
    for arm, runs in per_arm.items():
        if not runs:
            continue
        n = len(runs)
        row = {"arm": arm, "runs": n}
        for k in ("recall_dict", "recall_other", "recall_boundary", "recall_unseen", "recall"):
            row[k] = sum(getattr(r, k) for r in runs) / n
        beyond = [r.precision_other for r in runs if r.pred_other]
        row["precision_other"] = sum(beyond) / len(beyond) if beyond else None
        out.append(row)
    return out


def summary_record(scores: dict, fraction: float, cis: dict, labels: list[tuple[str, str]] | None = None,
                   recipe: str = RECIPE, extra: dict | None = None, recalls: dict | None = None,
                   **about) -> dict:
    """summary.json: what summary.md shows, as numbers (x100, unrounded).

    ``rows``: one per scored row, in the table's order: ``name``, ``label``, ``f1`` (the mean over
    seeds) and ``f1_by_seed``, ``precision``, ``recall``, and against the recipe ``delta`` (the
    recipe's F1 minus the row's, paired), ``ci`` ([low, high] of the sentence bootstrap),
    ``ci_seeds`` (Student's t over two or more seeds) and ``seeds_ahead`` of ``seeds_paired``; the
    recipe's own row has None there.  ``verdict``: the strongest dictionary row, the Δ against it and
    its CI, ``outcome`` (``beats``: the CI above 0; ``ahead``: Δ above 0, the CI holding 0;
    ``behind``) and the sentence.  ``recall``: the dictionary's coverage of the gold entities and
    :func:`recall_means`.  ``about`` (the pipeline, the slice's sizes, the abstract, ``seconds`` ...)
    is merged in as it is."""
    labels = ROWS if labels is None else labels
    rows = []
    for name, label in labels:
        got = scores.get((name, fraction))
        if not got:
            continue
        p, r = (extra or {}).get(name, (None, None))
        row = {"name": name, "label": label, "f1": _mean(got), "f1_by_seed": {str(s): got[s] for s in sorted(got)},
               "precision": _number(p), "recall": _number(r), "delta": None, "ci": None, "ci_seeds": None,
               "seeds_ahead": None, "seeds_paired": None}
        c = compare(scores, recipe, name, fraction) if name != recipe else None
        if c is not None:
            ci = cis.get(name)
            row.update(delta=c.stats.mean, ci=list(ci) if ci else None,
                       ci_seeds=[c.stats.ci_low, c.stats.ci_high] if c.stats.n > 1 else None,
                       seeds_ahead=sum(d > 0 for d in c.deltas), seeds_paired=c.stats.n)
        rows.append(row)
    found = strongest(scores, fraction, cis, recipe)
    best = None
    if found is not None:
        name, delta, ci = found
        outcome = "beats" if ci and ci[0] > 0 else "ahead" if delta > 0 else "behind"
        best = {"row": name, "delta": delta, "ci": list(ci) if ci else None, "outcome": outcome}
    record = {"schema": SCHEMA, **about, "fraction": fraction, "bootstrap_replicates": REPLICATES, "rows": rows,
              "verdict": {**(best or {}), "text": verdict(scores, fraction, cis, recipe)}}
    if recalls:
        cov = recalls["the dictionary alone"][0]
        record["recall"] = {"gold_dict": cov.gold_dict, "gold": cov.gold, "coverage": cov.coverage,
                            "arms": recall_means(recalls)}
    return record


def gold_entities(text: str, conll: Path = BC5CDR_TEST) -> set[tuple[int, int, str]] | None:
    """The gold entities (start, end, type) of ``text`` when it is BC5CDR's first test abstract as
    ``data/examples/bc5cdr-abstract.txt`` holds it (its first sentences detokenized); else None."""
    from priorkit.datasets import read_conll
    from priorkit.documents.conll import bio_spans, detokenize

    if not conll.exists():
        return None
    for n in range(1, 11):  # the abstract's sentences: the first n of test
        sentences = read_conll(conll, limit=n)
        rebuilt, offsets = detokenize([s.words for s in sentences])
        if rebuilt.strip() == text.strip():
            return {(spans[a][0], spans[b - 1][1], kind)
                    for s, spans in zip(sentences, offsets) for a, b, kind in bio_spans(s.tags)}
        if len(rebuilt) > len(text):
            return None
    return None


def entities_table(record: dict, gold: set | None = None) -> str:
    """A tagged document's entities (``priorkit predict``'s JSON Lines record) as a Markdown table,
    in text order: offsets, the text, type, concept IDs, score and the step that found it; with
    ``gold``, whether each is a gold entity (offsets and type) and the gold entities it missed."""
    head = ["start", "end", "text", "type", "concept IDs", "score", "source"] + (["gold"] if gold is not None else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    found = set()
    for e in sorted(record.get("entities", []), key=lambda e: (e["start"], e["end"])):
        assert record["text"][e["start"]:e["end"]] == e["text"], e  # offsets into the raw text
        row = [str(e["start"]), str(e["end"]), e["text"], e["type"], ", ".join(e.get("concept_ids") or []) or "-",
               f"{e['score']:.2f}" if e.get("score") is not None else "-", e.get("source", "-")]
        if gold is not None:
            key = (e["start"], e["end"], e["type"])
            found.add(key)
            row.append("yes" if key in gold else "no")
        lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n"
    if gold is not None:
        right = len(found & gold)
        missed = sorted(gold - found)
        text += (f"\n{right} of the {len(found)} entities are gold entities (same offsets and type); the abstract "
                 f"has {len(gold)}" + (": missed " + ", ".join(f"{record['text'][s:t]!r} ({kind}, {s}-{t})"
                                                                   for s, t, kind in missed) if missed else "")
                 + ".\n")
    return text


def _row_counts(rows: list[dict], split: str) -> dict:
    """name -> (precision, recall) x100, the mean over its seeds."""
    out: dict = {}
    for r in rows:
        p, rec = r.get(f"{split}_precision"), r.get(f"{split}_recall")
        if p is not None and rec is not None:
            out.setdefault(r["prior"], []).append((100 * float(p), 100 * float(rec)))
    return {k: (st.mean(a for a, _ in v), st.mean(b for _, b in v)) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline", nargs="?", default="pipelines/demo-bc5cdr.yaml")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--tagged", type=Path, help="priorkit predict's JSON Lines output for the abstract")
    ap.add_argument("--recipe", type=Path, help="the recipe folder that tagged it (named in the output)")
    ap.add_argument("--abstract", type=Path, help="the raw text it tagged (named in the output)")
    ap.add_argument("--timing", action="append", default=[], metavar="NAME=SECONDS",
                    help="a step's seconds, recorded in summary.json's seconds")
    args, _ = ap.parse_known_args(argv)
    seconds = {}
    for t in args.timing:
        name, _, value = t.partition("=")
        seconds[name] = float(value) if "." in value else int(value)
    cfg = load_config(args.pipeline, args.overrides)
    split, metric = cfg.sweep.split, cfg.task.metric
    fraction = cfg.sweep.fractions[0]
    rows = collect_rows(cfg, all_plans(cfg))
    scores = score_table(rows, f"{split}_{metric}", scale=100.0)
    if (RECIPE, fraction) not in scores or (NONE, fraction) not in scores:
        print(f"no scored runs of {RECIPE!r} and {NONE!r} in {cfg.out_dir}: run the sweep first", file=sys.stderr)
        return 1
    seeds = sorted(scores[(RECIPE, fraction)])
    out = cfg.out_dir

    def run_dir(name: str, seed: int) -> Path:
        return RunPlan(cfg, name, None, fraction, seed).run_dir

    cache: dict = {}
    cis = {}
    for name, _ in ROWS:
        if name != RECIPE and (name, fraction) in scores:
            ci = sentence_ci([(run_dir(RECIPE, s), run_dir(name, s)) for s in seeds], split, metric, cache)
            cis[name] = None if ci is None else (100 * ci[0], 100 * ci[1])

    # recall inside and outside the dictionary (its sentence-level matches)
    recalls: dict = {}
    dictionary = read_predictions(run_dir("dictionary-alone", seeds[0]), split)
    if dictionary is not None:
        dict_tags, gold = dictionary
        for name, label in [(RECIPE, "the recipe"), ("st-mix", "the mix, before the document pass"),
                            (NONE, "no knowledge"), ("dictionary-calibrated-doc", "the calibrated dictionary, as a document")]:
            for s in seeds:
                got = read_predictions(run_dir(name, s), split)
                if got is not None and len(got[0]) == len(gold):
                    recalls.setdefault(label, []).append(dictionary_recall(got[0], gold, dict_tags))
        recalls["the dictionary alone"] = [dictionary_recall(dict_tags, gold, dict_tags)]

    n_train = next((r["train_examples"] for r in rows if r.get("prior") == NONE and r.get("train_examples")), "?")
    text_of, n_unlabeled = "the rest of train", None
    if cfg.data.unlabeled is not None:
        from priorkit.training.data import load_unlabeled

        src = cfg.data.unlabeled
        n_unlabeled = len(load_unlabeled(src, cfg.where("data.unlabeled")))
        text_of = (f"{n_unlabeled} {src.split} sentences" if src.split else
                   f"{n_unlabeled} sentences of {Path(src.path or '?').name}")
    n_test = len(dictionary[1]) if dictionary is not None else "?"
    many = len(seeds) > 1
    ci_note = ("a paired bootstrap over the test sentences and the seeds" if many else
               "a paired bootstrap over the test sentences (one seed: no CI over seeds)")
    text = [f"# {cfg.name}: the BC5CDR recipe on {n_train} gold sentences and {text_of} (labels hidden)\n",
            f"Entity F1, precision and recall x100 on {n_test} {split} sentences, MiniLM, seed"
            f"{'s' if many else ''} {', '.join(map(str, seeds))}; `recipe − row`: the recipe's F1 minus the row's, "
            f"paired on the same sentences{' and seeds' if many else ''}; 95% CI: {ci_note}, 2,000 replicates "
            "(priorkit.stats.bootstrap_f1_delta).\n",
            results_table(scores, fraction, cis, row_labels(cfg), extra=_row_counts(rows, split)),
            verdict(scores, fraction, cis) + "\n"]
    if recalls:
        cov = recalls["the dictionary alone"][0]
        text += [f"Recall x100 on the gold entities the dictionary's sentence-level matches tag exactly ({cov.gold_dict}"
                 f" of {cov.gold}, {cov.coverage:.1f}%) and on the others, and how often the entities a row predicts "
                 "beyond those matches are right:\n", recall_table(recalls)]
    abstract = None
    if args.tagged is not None and args.tagged.exists():
        record = json.loads(args.tagged.read_text().splitlines()[0])
        gold = gold_entities(record["text"])
        keys = {(e["start"], e["end"], e["type"]) for e in record.get("entities", [])}
        abstract = {"source": str(args.abstract or record.get("id", "")), "characters": len(record["text"]),
                    "entities": len(keys), "gold": None if gold is None else len(gold),
                    "gold_found": None if gold is None else len(keys & gold)}
        folder = args.recipe or "the recipe folder"
        source = args.abstract or record.get("id", "")
        text += [f"A raw abstract ({source}, {len(record['text'])} characters, not CoNLL) tagged by the recipe "
                 f"folder: `priorkit predict {folder} {source}` (entities with character offsets, `end` exclusive):\n",
                 entities_table(record, gold)]
    files = [out / "results.md", out / "summary.md"] + ([args.tagged] if args.tagged else []) \
        + ([args.recipe] if args.recipe else [])
    text.append("Files: " + ", ".join(str(f) for f in files)
                + " (the recipe folder: `priorkit show FOLDER`, `priorkit.load_model(FOLDER)`; docs/tagging.md)\n")
    summary = "\n".join(text)
    (out / "summary.md").write_text(summary)
    about = {"pipeline": cfg.name, "split": split, "metric": metric, "seeds": seeds,
             "train_sentences": None if n_train == "?" else n_train, "unlabeled_text": text_of,
             "unlabeled_sentences": n_unlabeled, "test_sentences": None if n_test == "?" else n_test,
             "epochs": cfg.train.epochs, "abstract": abstract, "seconds": seconds,
             "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    assert tuple(about) == ABOUT
    data = summary_record(scores, fraction, cis, row_labels(cfg), extra=_row_counts(rows, split),
                          recalls=recalls, **about)
    (out / "summary.json").write_text(json.dumps(data, indent=2) + "\n")
    print("\n" + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

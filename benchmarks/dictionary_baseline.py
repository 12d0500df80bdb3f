"""The dictionary-only baseline of BC5CDR NER: precision, recall and F1 of the concept
matcher alone (no model), entity level with seqeval, per type and overall.

Each match of the provider becomes an entity of its group's type (mesh:C -> Disease,
mesh:D -> Chemical, hpo -> Disease; a mention in several groups takes the first of
--types); the split and the scorer are those of the trained models
(pipelines/bc5cdr-features.yaml), so the figures sit beside theirs.

    .venv/bin/python benchmarks/dictionary_baseline.py [--split test] [--sample N] [--source hpo+mesh] [--json out.json]
        [--set RULE=VALUE ...] [--old] [--document-window N] [--ablation]

``--sample N`` scores the same fixed sample of the split as a pipeline's ``data.test: {sample: N}``
(drawn with ``--sample-seed``, default 0, as ``sample_seed`` is).  ``--set`` passes a provider
parameter (a matcher rule, plugins/ontology/rules.py; VALUE is JSON or a plain string);
``--old`` starts from the matcher before the rules (issue 23).  ``--document-window N`` matches
the split's sentences in order with ``matches_document`` (abbreviations carried to the next N
sentences; BC5CDR's files keep no document boundaries, -1: to the end of the split); with
``--sample`` the whole split is read in order and the sample's sentences scored, as the post-hoc
arms' ``document`` pass does.
``--ablation`` scores the old matcher, each rule added to it alone, the defaults, each rule
flipped in the defaults, and the document-level variants, and writes
docs/results/matcher-ablation-<split>.csv and .md.  It chooses rules, so it runs on devel
(its default) or train and refuses the test split.  Without ``--ablation`` the split is test.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import priorkit  # noqa: E402
from priorkit.evaluation.dictionary_baseline import dictionary_scores  # noqa: E402

#: BC5CDR with the hpo+mesh ontology: MeSH tree D Chemical, MeSH tree C and HPO Disease (this benchmark's own)
BC5CDR_TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}
from priorkit.config import DataSource  # noqa: E402
from priorkit.training.data import read_source, sample_indices, slice_examples  # noqa: E402
from priorkit_plugins.ontology import rules as matcher_rules  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: the value each rule is tried at when it is not at its old value
CANDIDATES = {"greek": True, "spelling": True, "adjectives": True, "acronym_case": False, "hpo_modifiers": False,
              "hyphen_join": True, "split_induced": True, "split_roles": True, "abbreviations": "within",
              "abbreviation_unknown": "drop"}


_LOADED: dict = {}


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def score(source: str, params: dict, examples: list, types: dict, window: int | None = None,
          document: bool = False, context: tuple[list, list] | None = None) -> tuple[dict, float, float]:
    """(scores, load seconds, matching sentences/s) of the provider with ``params``."""
    provider = priorkit.get_provider("ontology", source=source, **params)
    t0 = time.perf_counter()
    key = (source, *(provider.rules[k] for k in matcher_rules.INDEX_RULES))
    if key in _LOADED:  # the same index (settings differ in match rules only): loaded once
        provider._index, provider._loaded = _LOADED[key], True
    else:
        provider.ensure_loaded()
        _LOADED[key] = provider.index
    loaded = time.perf_counter() - t0
    words = [list(e["words"]) for e in examples]
    t0 = time.perf_counter()
    if document and context is not None:  # the whole split read in order, the sample's sentences kept
        every, positions = context
        matched = provider.matches_document(every, window=window)
        found = [matched[p] for p in positions]
    elif document:
        found = provider.matches_document(words, window=window)
    else:
        found = [provider.matches(w) for w in words]
    speed = len(words) / (time.perf_counter() - t0)
    return dictionary_scores(None, examples, types, matches=found), loaded, speed


def make_filter(source: str, params: dict, types: dict, min_count: int = 3, max_precision: float = 0.2
                ) -> list[str]:
    """Surface forms (lower-cased) the matcher finds at least ``min_count`` times in BC5CDR
    *train* that are a gold entity of the mapped type at most ``max_precision`` of the time."""
    from collections import Counter

    from seqeval.metrics.sequence_labeling import get_entities

    from priorkit.evaluation.dictionary_baseline import group_entities

    src = DataSource(source="bc5cdr", split="train")
    train, _ = read_source(src)
    provider = priorkit.get_provider("ontology", source=source, **{**params, "term_filter": []})
    key = (source, *(provider.rules[k] for k in matcher_rules.INDEX_RULES))
    if key in _LOADED:
        provider._index, provider._loaded = _LOADED[key], True
    seen, right = Counter(), Counter()
    for e in train:
        words = list(e["words"])
        gold = set(get_entities(list(e["tags"])))
        for t, s, end in get_entities(group_entities(provider.matches(words), len(words), types)):
            form = " ".join(w.lower() for w in words[s:end + 1])
            seen[form] += 1
            right[form] += (t, s, end) in gold
    return sorted(f for f, n in seen.items() if n >= min_count and right[f] / n <= max_precision)


def _type_names(scores: dict) -> list[str]:
    return sorted({k.split("_", 1)[1] for k in scores if k.startswith("f1_")})


def print_scores(scores: dict) -> None:
    print(f"{'':10} {'precision':>9} {'recall':>9} {'f1':>9}")
    for name in ("overall", *_type_names(scores)):
        p, r, f = ((scores["precision"], scores["recall"], scores["f1"]) if name == "overall" else
                   (scores[f"precision_{name}"], scores[f"recall_{name}"], scores[f"f1_{name}"]))
        print(f"{name:10} {p:9.4f} {r:9.4f} {f:9.4f}")


def ablation(args, examples: list, types: dict) -> None:
    old, full = dict(matcher_rules.OLD), dict(matcher_rules.DEFAULTS)
    settings: list[tuple[str, dict, dict]] = [("old", old, {})]
    for rule, cand in CANDIDATES.items():
        if cand != old[rule]:
            extra = {"abbreviations": "within"} if rule == "abbreviation_unknown" else {}
            settings.append((f"old + {rule}={json.dumps(cand)}", {**old, **extra, rule: cand}, {}))
    settings.append(("old + abbreviations=\"exact\"", {**old, "abbreviations": "exact"}, {}))
    settings.append(("defaults", full, {}))
    for rule in CANDIDATES:
        flip = old[rule] if full[rule] != old[rule] else CANDIDATES[rule]
        settings.append((f"defaults, {rule}={json.dumps(flip)}", {**full, rule: flip}, {}))
    settings.append(("defaults, abbreviations=\"exact\"", {**full, "abbreviations": "exact"}, {}))
    for w in (5, 10, 20, None):
        settings.append((f"defaults, matches_document window={w if w is not None else 'all'}", full,
                         {"document": True, "window": w}))
    for mc, mp in ((3, 0.2), (3, 0.5), (5, 0.3)):
        terms = make_filter(args.source, full, types, mc, mp)
        settings.append((f"defaults + term_filter(train, n>={mc}, precision<={mp}: {len(terms)} forms)",
                         {**full, "term_filter": terms}, {}))
    rows, table = [], []
    for name, params, doc in settings:
        s, loaded, speed = score(args.source, params, examples, types, **doc)
        print(f"{name:55} P {s['precision']:.4f} R {s['recall']:.4f} F1 {s['f1']:.4f}  "
              f"({speed:.0f} sentences/s, load {loaded:.0f}s)", flush=True)
        metrics = {"precision": s["precision"], "recall": s["recall"], "f1": s["f1"],
                   **{f"{m}_{t}": s[f"{m}_{t}"] for t in _type_names(s) for m in ("precision", "recall", "f1")},
                   "sentences_per_s": speed}
        rows += [(name, args.split, 0, m, round(v, 6)) for m, v in metrics.items()]
        table.append((name, metrics))
    stem = RESULTS / f"matcher-ablation-{args.split}"
    with open(f"{stem}.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["setting", "split", "seed", "metric", "value"])
        w.writerows(rows)
    types_ = _type_names({k: 0 for m in table for k in m[1]})
    head = "| setting | P | R | F1 | " + " | ".join(f"{t} P | {t} R | {t} F1" for t in types_) + " | sentences/s |"
    lines = [f"# Matcher ablation, BC5CDR {args.split} ({len(examples)} sentences)", "",
             f"Written by `benchmarks/dictionary_baseline.py --split {args.split} --ablation`; "
             "rules in plugins/ontology/rules.py; `old` is the matcher before issue 23, `defaults` the "
             "chosen set. Scores in %.", "", head, "|" + "---|" * (head.count("|") - 1)]
    for name, m in table:
        cells = [f"{100 * m['precision']:.2f}", f"{100 * m['recall']:.2f}", f"{100 * m['f1']:.2f}"]
        cells += [f"{100 * m[f'{k}_{t}']:.2f}" for t in types_ for k in ("precision", "recall", "f1")]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {m['sentences_per_s']:.0f} |")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {stem}.csv and .md")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; ``--split`` resolved (test, or devel with ``--ablation``, which refuses test)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["train", "devel", "test"],
                    help="default: test, or devel with --ablation (which refuses test)")
    ap.add_argument("--source", default="hpo+mesh", help="ontology source(s), e.g. hpo, mesh, hpo+mesh")
    ap.add_argument("--types", default=json.dumps(BC5CDR_TYPES),
                    help="JSON group -> entity type, in priority order (default: %(default)s)")
    ap.add_argument("--sample", type=int, help="a fixed sample of N sentences, as data.<split>.sample draws it")
    ap.add_argument("--sample-seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="RULE=VALUE", help="a provider parameter")
    ap.add_argument("--old", action="store_true", help="start from the matcher before issue 23")
    ap.add_argument("--document-window", type=int, help="matches_document, definitions kept N sentences")
    ap.add_argument("--ablation", action="store_true", help="the rule ablation (writes docs/results/)")
    ap.add_argument("--make-filter", metavar="FILE", help="write a term_filter list learned from BC5CDR train "
                    "(the --set/--old rules, at least --filter-count matches, precision at most --filter-precision)")
    ap.add_argument("--filter-count", type=int, default=3)
    ap.add_argument("--filter-precision", type=float, default=0.2)
    ap.add_argument("--json", help="also write the scores here")
    args = ap.parse_args(argv)
    if args.ablation and args.split == "test":
        ap.exit(2, f"{ap.prog}: error: --ablation chooses matcher rules, so it refuses --split test; "
                   "use --split devel (its default)\n")
    if args.split is None:
        args.split = "devel" if args.ablation else "test"
    args.error = ap.error
    return args


def main() -> None:
    args = parse_args()
    types = json.loads(args.types)
    src = DataSource(source="bc5cdr", split=args.split, sample=args.sample, sample_seed=args.sample_seed)
    every, origin = read_source(src)
    examples = slice_examples(every, src)
    if args.ablation:
        return ablation(args, examples, types)
    params = dict(matcher_rules.OLD) if args.old else {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            args.error(f"--set {item!r}: write RULE=VALUE, e.g. --set abbreviations=false")
        params[key] = _value(value)
    if args.make_filter:
        terms = make_filter(args.source, params, types, args.filter_count, args.filter_precision)
        Path(args.make_filter).write_text(json.dumps(terms, indent=0) + "\n")
        print(f"wrote {len(terms)} surface forms to {args.make_filter}")
        return
    document = args.document_window is not None
    window = None if args.document_window is None or args.document_window < 0 else args.document_window
    keep = sample_indices(len(every), src) if document else None
    context = ([list(e["words"]) for e in every], [int(i) for i in keep]) if keep is not None else None
    scores, loaded, speed = score(args.source, params, examples, types, window, document, context)
    print(f"BC5CDR {args.split} ({len(examples)} sentences, {origin}); ontology source={args.source}; "
          f"params {params}{'; matches_document window ' + str(window) if document else ''}; types {types}; "
          f"load {loaded:.1f}s, matching {speed:.0f} sentences/s")
    print_scores(scores)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"split": args.split, "sample": args.sample, "sample_seed": args.sample_seed, "source": args.source,
                       "params": params, "document_window": args.document_window if document else None,
                       "types": types, "matching_sentences_per_s": speed, "scores": scores}, fh, indent=2)


if __name__ == "__main__":
    main()

"""How much of BC5CDR's gold entity mentions the ontology provider recognises.

For every gold mention (BIO spans of the embedded BC5CDR files) we ask
whether ``OntologyProvider.recognise`` found

- an *exact* mention: the same word span, and
- a *partial* one: a recognised mention overlapping the gold span,

for Disease (what a phenotype ontology should cover) and Chemical (which it
should not: a contrast).  Also reported: how many recognised mentions overlap
no gold mention of either type (a rough false-alarm share), load and
recognition times, and phrase pairs/s of ``similarity`` per measure.

    .venv/bin/python benchmarks/ontology_coverage.py                 # all splits, 4 variants
    .venv/bin/python benchmarks/ontology_coverage.py --splits test --json out.json
    .venv/bin/python benchmarks/ontology_coverage.py --variants "mesh (trees C, D)" hpo+mesh --no-speed

Memory: the process's resident size after loading the index minus before (MiB).

The output is a Markdown table (pasted into docs/providers/ontology.md).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

import priorkit
from priorkit.resources import embedded

SPLITS = ("train", "devel", "test")
VARIANTS: dict[str, dict] = {
    "hpo (default)": {},
    "hpo, phenotypic abnormality only": {"roots": ["HP:0000118"]},
    "hpo, all synonym scopes": {"synonym_scopes": ["EXACT", "RELATED", "NARROW", "BROAD"]},
    "hpo, no plural folding": {"fold_plurals": False},
    "mesh (trees C, D)": {"source": "mesh"},
    "hpo+mesh": {"source": "hpo+mesh"},
}


def read_bio(path: Path) -> list[tuple[list[str], list[tuple[int, int, str]]]]:
    """Sentences as (words, gold spans (start, end, type)) from 'token TAB tag' lines."""
    sentences = []
    words: list[str] = []
    tags: list[str] = []

    def close() -> None:
        if words:
            sentences.append((list(words), bio_spans(tags)))
            words.clear()
            tags.clear()

    with open(path, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                close()
                continue
            parts = line.split("\t")
            if len(parts) != 2:
                raise ValueError(f"{path}:{ln}: expected 'token<TAB>tag', got {line[:60]!r}")
            words.append(parts[0])
            tags.append(parts[1])
    close()
    return sentences


def bio_spans(tags: list[str]) -> list[tuple[int, int, str]]:
    spans = []
    start, kind = None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, label = tag.partition("-")
        if start is not None and (prefix != "I" or label != kind):
            spans.append((start, i, kind))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and start is None and label):
            start, kind = i, label
    return spans


def rss_mib() -> float:
    """Resident set size of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return 0.0


def coverage(provider, sentences) -> dict:
    counts: dict[str, dict[str, int]] = {}
    recognised = unmatched = 0
    t0 = time.perf_counter()
    found_all = [provider.recognise(words) for words, _ in sentences]
    seconds = time.perf_counter() - t0
    for (words, gold), found in zip(sentences, found_all):
        spans = {(m.start, m.end) for m in found}
        recognised += len(found)
        for m in found:
            if not any(m.start < e and s < m.end for s, e, _ in gold):
                unmatched += 1
        for s, e, kind in gold:
            c = counts.setdefault(kind, {"gold": 0, "exact": 0, "partial": 0})
            c["gold"] += 1
            c["exact"] += (s, e) in spans
            c["partial"] += any(m.start < e and s < m.end for m in found)
    words = sum(len(w) for w, _ in sentences)
    return {
        "types": counts,
        "recognised": recognised,
        "recognised_outside_gold": unmatched,
        "sentences": len(sentences),
        "words": words,
        "recognise_seconds": seconds,
        "words_per_second": words / seconds if seconds else float("inf"),
    }


def similarity_speed(params: dict, n: int = 300, seed: int = 0) -> dict:
    """Phrase pairs per second for an n x n block of random concept names, cold and memoised."""
    import numpy as np

    warm_up = priorkit.get_provider("ontology", **params)
    names = sorted({x for x in warm_up.ontology.names if x})
    rng = np.random.default_rng(seed)
    left = list(rng.choice(names, n, replace=False))
    right = list(rng.choice(names, n, replace=False))
    warm_up.similarity(left, right)  # first numpy calls, page faults, allocator growth
    provider = priorkit.get_provider("ontology", **params)  # fresh memo
    provider.ensure_loaded()
    gc.collect()
    out = {}
    for label in ("cold", "memoised"):
        t0 = time.perf_counter()
        provider.similarity(left, right)
        out[label] = n * n / (time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", nargs="+", default=list(SPLITS), choices=SPLITS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--path", default=None, help="ontology file (default: HPO)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--no-speed", action="store_true", help="skip the phrase-pair speed table")
    args = ap.parse_args(argv)

    sentences = []
    for split in args.splits:
        sentences += read_bio(embedded("bc5cdr", f"{split}.tsv"))
    results = {"splits": args.splits, "python": sys.version.split()[0], "machine": platform.machine(),
               "variants": {}}
    rows = []
    for name in args.variants:
        params = dict(VARIANTS[name])
        if "source" not in params:
            params["path"] = args.path
        gc.collect()
        before = rss_mib()
        cold = priorkit.get_provider("ontology", cache=False, **params)
        cold.ensure_loaded()
        memory = rss_mib() - before
        warm = priorkit.get_provider("ontology", **params)
        warm.ensure_loaded()
        if not warm.loaded_from_cache:  # first run writes the cache; measure a read
            warm = priorkit.get_provider("ontology", **params)
            warm.ensure_loaded()
        res = coverage(cold, sentences)
        res.update(load_parse_seconds=cold.load_seconds, load_cached_seconds=warm.load_seconds,
                   concepts=len(cold.ontology), params=params, memory_mib=memory)
        del cold, warm
        results["variants"][name] = res
        t = res["types"]
        d, c = t.get("Disease", {}), t.get("Chemical", {})
        pct = lambda x, n: f"{100 * x / n:.1f}%" if n else "-"  # noqa: E731
        rows.append(
            f"| {name} | {res['concepts']:,} | {d.get('gold', 0):,} | {pct(d.get('exact', 0), d.get('gold', 0))} "
            f"| {pct(d.get('partial', 0), d.get('gold', 0))} | {pct(c.get('exact', 0), c.get('gold', 0))} "
            f"| {pct(c.get('partial', 0), c.get('gold', 0))} | {res['recognised']:,} "
            f"| {pct(res['recognised_outside_gold'], res['recognised'])} "
            f"| {res['load_parse_seconds']:.2f} / {res['load_cached_seconds']:.2f} "
            f"| {memory:,.0f} | {res['words_per_second'] / 1000:.0f}k |"
        )
    print(f"BC5CDR splits: {', '.join(args.splits)}; {len(sentences):,} sentences\n")
    print("| variant | concepts | Disease gold | Disease exact | Disease partial | Chemical exact "
          "| Chemical partial | recognised | outside gold | load s (parse / cached) | memory MiB | words/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.no_speed:
        return 0
    print("\n| measure | phrase pairs/s, cold | phrase pairs/s, memoised |\n|---|---:|---:|")
    for measure in ("lin", "resnik", "path", "wup"):
        speed = similarity_speed({"path": args.path, "measure": measure})
        results.setdefault("speed", {})[measure] = speed
        print(f"| {measure} | {speed['cold']:,.0f} | {speed['memoised']:,.0f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

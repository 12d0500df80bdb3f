"""Every built-in provider and the best combination on WordSim-353 and SimLex-999.

    .venv/bin/python benchmarks/eval_priors.py [--out out/eval_priors] [--threads 1]

1. Each single provider is evaluated (Spearman / full Spearman / Pearson /
   coverage, see priorkit.providers.prior_eval) with its pairs/s measured three ways:
   *uncached* (first pass of a freshly loaded provider), *warm* (the same
   instance again: in-process caches such as the embedding provider's word
   vectors) and *DuckDB-cached* (a read-only ``priorkit.CachedProvider`` over a
   cache the first pass filled; checked to return the same values).
2. A combination search: every ``combine`` of the MiniLM embedding with
   ConceptNet and/or one WordNet measure, by max, mean and weighted mean
   (weights from {0.5, 1, 2}), scored from the single providers' values with
   the provider's own ``reduce_stack``.  Ranked by the smallest margin over
   the best single provider on each benchmark.  Weights and members were
   chosen on these same two benchmarks (there is no held-out split), so the
   margins of the tuned winner are optimistic; the untuned equal-weight mean
   is reported next to it.
3. The chosen combinations are rebuilt as real ``combine`` providers and
   evaluated end to end (values must match the search).

Writes ``results.json`` and ``table.md`` under --out and prints the tables.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import priorkit  # noqa: E402
from priorkit.providers.prior_eval import (  # noqa: E402
    correlations,
    provider_from_arg,
    read_word_pairs,
    result_from_values,
    results_markdown,
    results_table,
    timed_values,
)
from priorkit_plugins.combine import reduce_stack  # noqa: E402

SINGLES = [
    "wordnet:measure=path", "wordnet:measure=wup", "wordnet:measure=lin", "wordnet:measure=xia2021",
    "wordnet:measure=lch", "wordnet:measure=res", "wordnet:measure=jcn",
    "conceptnet", "conceptnet:hops=1",
    "embedding", "embedding:vectors=glove",
]
EMBEDDING = "embedding"
WORDNET_MEASURES = ["path", "wup", "lin", "lch", "res", "jcn"]


def single_arg_to_child(arg: str) -> str | dict:
    """'wordnet:measure=jcn' -> {'name': 'wordnet', 'measure': 'jcn'} for a combine argument."""
    from priorkit.providers.prior_eval import parse_provider_arg

    name, params = parse_provider_arg(arg)
    return {"name": name, **params} if params else name


def combine_arg(members: list[str], how: str, weights: list[float] | None) -> str:
    children = json.dumps([single_arg_to_child(m) for m in members], separators=(",", ":"))
    arg = f"combine:providers={children},how={how}"
    if weights is not None:
        arg += f",weights={json.dumps(weights, separators=(',', ':'))}"
    return arg


def throughput(arg: str, provider, sets, tmp: Path) -> dict:
    """pairs/s uncached (fresh instance), warm (same instance again), DuckDB-cached."""
    from priorkit.cache import CachedProvider, PriorCache, nan_equal

    fresh = provider_from_arg(arg)
    fresh.ensure_loaded()
    n = sum(len(p) for p in sets)
    out: dict[str, float] = {}
    values = {}
    t = 0.0
    for p in sets:
        v, s, _ = timed_values(fresh, p)
        values[p.name] = v
        t += s
    out["uncached"] = n / t
    t = sum(timed_values(fresh, p)[1] for p in sets)
    out["warm"] = n / t
    path = tmp / f"{abs(hash(arg))}.duckdb"
    cache = PriorCache(path)
    cache.register(fresh)  # creates the file (CachedProvider.load reads before the first write)
    with CachedProvider(fresh, cache) as writer:
        for p in sets:
            timed_values(writer, p)
    reader = CachedProvider(fresh, PriorCache(path, read_only=True))
    t = 0.0
    for p in sets:
        v, s, _ = timed_values(reader, p)
        t += s
        if not nan_equal(v, values[p.name]):
            raise AssertionError(f"{arg}: cached values differ from computed ones on {p.name}")
    out["duckdb_cached"] = n / t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="out/eval_priors")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for MiniLM; 1 because one-word batches gain nothing from "
                         "more and threads only contend on a shared 2-core machine")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [read_word_pairs("wordsim353"), read_word_pairs("simlex999")]
    singles = list(SINGLES)
    if "ontology" in {e.name for e in priorkit.list_providers()}:
        singles.append("ontology")

    # ---- 1. single providers -------------------------------------------------
    results, values, timing = [], {}, {}
    tmp = Path(tempfile.mkdtemp(prefix="eval-priors-"))
    for arg in singles:
        provider = provider_from_arg(arg)
        t0 = time.perf_counter()
        provider.ensure_loaded()
        load_s = time.perf_counter() - t0
        for p in sets:
            v, s, _ = timed_values(provider, p)
            values[(arg, p.name)] = v
            results.append(result_from_values(v, p, label=arg, seconds=s, load_seconds=load_s,
                                              fingerprint=provider.fingerprint))
        if not args.skip_throughput:
            timing[arg] = throughput(arg, provider, sets, tmp)
            timing[arg]["load_s"] = load_s
        print(f"done {arg} (load {load_s:.1f}s)", file=sys.stderr, flush=True)

    best_single = {p.name: max(r.spearman for r in results if r.benchmark == p.name and not np.isnan(r.spearman))
                   for p in sets}

    # ---- 2. combination search -----------------------------------------------
    def score(members, how, weights):
        rhos = {}
        for p in sets:
            stack = np.stack([values[(m, p.name)] for m in members])
            rhos[p.name] = correlations(reduce_stack(stack, how, None if weights is None else np.array(weights)),
                                        p.gold)["spearman"]
        margin = min(rhos[b] - best_single[b] for b in rhos)
        return margin, rhos

    others = ["conceptnet"] + [f"wordnet:measure={m}" for m in WORDNET_MEASURES]
    candidates = []
    for k in (1, 2):
        for extra in itertools.combinations(others, k):
            if k == 2 and extra[0] != "conceptnet":
                continue  # at most one WordNet measure
            members = [EMBEDDING, *extra]
            for how in ("max", "mean"):
                candidates.append((members, how, None))
            seen = set()
            for w in itertools.product([1.0, 2.0], *[[0.5, 1.0, 2.0]] * len(extra)):
                norm = tuple(x / max(w) for x in w)
                if len(set(w)) == 1 or norm in seen:
                    continue  # equal weights are "mean"; (2, 2, 1) is (1, 1, 0.5)
                seen.add(norm)
                candidates.append((members, "weighted", list(w)))
    scored = []
    for members, how, w in candidates:
        margin, rhos = score(members, how, w)
        scored.append((margin, members, how, w, rhos))
    scored.sort(key=lambda x: -x[0])
    best = scored[0]
    best_equal = next(x for x in scored if x[2] == "mean")
    search_lines = [f"{len(scored)} combinations scored; best single: "
                    + ", ".join(f"{b} {v:.3f}" for b, v in best_single.items())]
    for margin, members, how, w, rhos in scored[:10]:
        search_lines.append(f"margin {margin:+.3f}  {how:8s} {str(w or ''):18s} {members}  "
                            + "  ".join(f"{b} {v:.3f}" for b, v in rhos.items()))
    print("\n".join(search_lines), file=sys.stderr)

    # paired bootstrap: how often does the combination beat each benchmark's best single provider?
    rng = np.random.default_rng(0)
    for margin, members, how, w, _ in (best, best_equal):
        for p in sets:
            single = max((r for r in results if r.benchmark == p.name and not np.isnan(r.spearman)),
                         key=lambda r: r.spearman).provider
            combo = reduce_stack(np.stack([values[(m, p.name)] for m in members]), how,
                                 None if w is None else np.array(w))
            diffs = []
            for _ in range(1000):
                idx = rng.integers(0, len(p), len(p))
                a = correlations(combo[idx], p.gold[idx])["spearman"]
                b = correlations(values[(single, p.name)][idx], p.gold[idx])["spearman"]
                diffs.append(a - b)
            diffs = np.array(diffs)
            lo, hi = np.percentile(diffs, [2.5, 97.5])
            search_lines.append(
                f"bootstrap {how} {w or ''} {members} vs {single} on {p.name}: "
                f"difference {np.mean(diffs):+.3f} [95% {lo:+.3f}, {hi:+.3f}], "
                f"combination higher in {np.mean(diffs > 0):.1%} of 1000 resamples")
    print("\n".join(search_lines[-4:]), file=sys.stderr)

    # ---- 3. the chosen combinations, end to end -----------------------------
    chosen = [combine_arg(best[1], best[2], best[3])]
    if best_equal is not best:
        chosen.append(combine_arg(best_equal[1], best_equal[2], best_equal[3]))
    for arg in chosen:
        provider = provider_from_arg(arg)
        t0 = time.perf_counter()
        provider.ensure_loaded()
        load_s = time.perf_counter() - t0
        for p in sets:
            v, s, _ = timed_values(provider, p)
            results.append(result_from_values(v, p, label=arg, seconds=s, load_seconds=load_s,
                                              fingerprint=provider.fingerprint))
        if not args.skip_throughput:
            timing[arg] = throughput(arg, provider, sets, tmp)
            timing[arg]["load_s"] = load_s

    from rich.console import Console

    Console(width=200).print(results_table(results))
    table_md = results_markdown(results)
    speed_md = ["| provider | load s | uncached pairs/s | warm pairs/s | DuckDB-cached pairs/s |", "|---|---|---|---|---|"]
    for arg, t in timing.items():
        speed_md.append(f"| `{arg}` | {t['load_s']:.1f} | {t['uncached']:,.0f} | {t['warm']:,.0f} | "
                        f"{t['duckdb_cached']:,.0f} |")
    meta = {
        "command": "python benchmarks/eval_priors.py " + " ".join(sys.argv[1:]),
        "date": _dt.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "torch_threads": args.threads,
        "best_single": best_single,
        "search": search_lines,
    }
    (out / "table.md").write_text(table_md + "\n\n" + "\n".join(speed_md) + "\n\n```\n"
                                  + "\n".join(search_lines) + "\n```\n")
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": [r.as_dict() for r in results],
                                                  "throughput": timing}, indent=2))
    print(table_md)
    print()
    print("\n".join(speed_md))
    print(f"\nwrote {out / 'table.md'} and {out / 'results.json'}")


if __name__ == "__main__":
    main()

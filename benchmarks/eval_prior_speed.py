"""Pairs per second of ``eval-prior``'s pair values, before and after the batched pair path.

    .venv/bin/python benchmarks/eval_prior_speed.py [--providers embedding,wordnet,glove]
                                                    [--threads 2] [--no-before] [--json out.json]

``priorkit.providers.prior_eval.pair_values`` scores a word list (WordSim-353, SimLex-999).
*Before* (commit 88bd89f) it made one ``similarity`` call per distinct word of
one side; *after* it makes one ``pair_similarity`` call, the provider's
batched pair path (the embedding provider encodes every distinct word once,
in batches of ``batch_size``).  Each measurement uses a freshly loaded
provider instance (nothing memoised in memory; load time excluded: "after
load"), and the two paths' values are compared (max abs difference).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

PROVIDERS = {"embedding": ("embedding", {}), "wordnet": ("wordnet", {"measure": "xia2021"}),
         "glove": ("embedding", {"vectors": "glove"})}


def pair_values_before(provider, left, right) -> np.ndarray:
    """The pre-change pair_values: one similarity call per distinct word of the smaller side."""
    swap = len(set(right)) < len(set(left))
    keys, partners = (right, left) if swap else (left, right)
    groups: dict[str, list[int]] = {}
    for i, w in enumerate(keys):
        groups.setdefault(w, []).append(i)
    out = np.full(len(left), np.nan, dtype=np.float32)
    for word, idx in groups.items():
        others = [partners[i] for i in idx]
        out[idx] = provider.similarity(others, [word])[:, 0] if swap else provider.similarity([word], others)[0]
    return out


def fresh(name: str):
    import priorkit

    provider_name, params = PROVIDERS[name]
    p = priorkit.get_provider(provider_name, **params)
    t0 = time.perf_counter()
    p.ensure_loaded()
    if provider_name == "embedding" and not params:
        p.encode(["warm", "up"])  # first forward pass of the process (thread pools, kernels)
    elif provider_name == "wordnet":
        p.pair_similarity(["cat"], ["dog"])  # word look-up tables, built on first use
    return p, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--providers", default="embedding,wordnet,glove")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-before", action="store_true", help="only the new path")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from priorkit.providers.prior_eval import pair_values, read_word_pairs

    lists = [read_word_pairs("wordsim353"), read_word_pairs("simlex999")]
    rows = []
    for name in args.providers.split(","):
        for pairs in lists:
            row = {"provider": name, "benchmark": pairs.name, "pairs": len(pairs),
                   "distinct_words": len(set(pairs.left) | set(pairs.right))}
            p, load = fresh(name)
            t0 = time.perf_counter()
            after = pair_values(p, pairs.left, pairs.right)
            row["after_s"] = time.perf_counter() - t0
            row["after_pairs_per_s"] = len(pairs) / row["after_s"]
            row["load_s"] = load
            if not args.no_before:
                p, _ = fresh(name)
                t0 = time.perf_counter()
                before = pair_values_before(p, pairs.left, pairs.right)
                row["before_s"] = time.perf_counter() - t0
                row["before_pairs_per_s"] = len(pairs) / row["before_s"]
                same = np.isnan(before) == np.isnan(after)
                diff = np.abs(np.nan_to_num(before) - np.nan_to_num(after))
                row["max_abs_diff"] = float(diff.max()) if same.all() else float("inf")
            rows.append(row)
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    report = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="minutes"),
              "machine": f"{platform.machine()}, nproc {len(os.sched_getaffinity(0))}, load {os.getloadavg()}",
              "threads": args.threads, "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Token-aligned priors from an AlignedStore vs the builder, and what the prior costs a training epoch.

1. Rebuild of every STS-B train+dev prior (paper preset, MiniLM tokenizer):

   cold          fresh DuckDB file: load WordNet, precompute every word pair, then build
                 every prior through a fresh AlignedStore (which writes its shards);
   warm builder  a new builder over the read-only cache builds every prior (tokenise,
                 align, look up, scatter: what every epoch did before);
   warm store    a new builder and a new read-only AlignedStore over the shards: the
                 batches are assembled from the stored blocks (no tokenizer call).

   Every warm batch is checked equal to the cold one (max abs difference printed).
   ``--profile`` adds the top functions (cProfile, cumulative) of both warm paths.

2. One training epoch (``--train N`` STS-B train examples, MiniLM regression, batch 16,
   multiply@0, AdamW) through a DataLoader with PriorCollator: no prior, prior from the
   builder, prior from the warm store; ``--workers`` DataLoader worker counts.

    .venv/bin/python benchmarks/aligned_speed.py [--limit N] [--train N] [--workers 0,1] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

import priorkit  # noqa: E402
from priorkit.align import PriorBuilder  # noqa: E402
from priorkit.channels.attention.store import AlignedStore  # noqa: E402
from priorkit.cache import PriorCache  # noqa: E402
from priorkit.datasets import read_dataset  # noqa: E402
from priorkit.precompute import precompute  # noqa: E402
from priorkit.resources import minilm_path, stsb_path  # noqa: E402

BATCH = 256


def build_all(source, examples) -> list[dict[str, torch.Tensor]]:
    out = []
    for i in range(0, len(examples), BATCH):
        chunk = examples[i:i + BATCH]
        out.append(dict(source.build_batch([e.text_a for e in chunk], [e.text_b for e in chunk])))
    return out


def max_diff(a: list[dict], b: list[dict]) -> float:
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys(), (x.keys(), y.keys())
        for k in x:
            assert x[k].shape == y[k].shape, k
            worst = max(worst, float((x[k].double() - y[k].double()).abs().max()))
    return worst


def top(fn, n: int = 10) -> tuple[object, str]:
    prof = cProfile.Profile()
    result = prof.runcall(fn)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(n)
    return result, buf.getvalue()


def new_builder(tok: str, cache: Path) -> PriorBuilder:
    return PriorBuilder.paper(tok, provider=priorkit.get_provider("wordnet", measure="xia2021"),
                              cache=PriorCache(cache, read_only=True))


def rebuild(examples, tok: str, tmp: Path, profile: bool) -> dict:
    cache, root = tmp / "stsb.duckdb", tmp / "aligned"
    t0 = time.perf_counter()
    provider = priorkit.get_provider("wordnet", measure="xia2021")
    precompute(examples, PriorBuilder.paper(tok, provider=provider), PriorCache(cache), progress=False)
    t_pre = time.perf_counter() - t0
    store = AlignedStore(PriorBuilder.paper(tok, provider=provider, cache=PriorCache(cache, read_only=True)), root)
    cold_batches = build_all(store, examples)
    store.flush()
    cold = time.perf_counter() - t0

    t1 = time.perf_counter()
    builder_batches = build_all(new_builder(tok, cache), examples)
    warm_builder = time.perf_counter() - t1

    t2 = time.perf_counter()
    warm_store_obj = AlignedStore(new_builder(tok, cache), root, read_only=True)
    store_batches = build_all(warm_store_obj, examples)
    warm_store = time.perf_counter() - t2
    assert warm_store_obj.misses == 0, warm_store_obj.misses

    out = {"examples": len(examples), "precompute_s": t_pre, "cold_s": cold, "warm_builder_s": warm_builder,
           "warm_store_s": warm_store, "diff_builder": max_diff(cold_batches, builder_batches),
           "diff_store": max_diff(cold_batches, store_batches),
           "store_mb": sum(p.stat().st_size for p in root.rglob("*.npz")) / 1e6}
    if profile:
        _, out["profile_builder"] = top(lambda: build_all(new_builder(tok, cache), examples))
        _, out["profile_store"] = top(lambda: build_all(AlignedStore(new_builder(tok, cache), root,
                                                                     read_only=True), examples))
    return out


def epoch(examples, tok: str, cache: Path, root: Path, kind: str, workers: int) -> float:
    from torch.utils.data import DataLoader
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    from priorkit.attention import enable_prior_attention
    from priorkit.collator import PriorCollator

    logging.set_verbosity_error()
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(tok, num_labels=1)
    builder = new_builder(tok, cache)
    if kind == "none":
        collator = PriorCollator(builder.tokenizer)
    else:
        enable_prior_attention(model, layers=(0,), mode="multiply")
        store = AlignedStore(builder, root, read_only=True) if kind == "store" else None
        from priorkit.channels.attention.channel import AttentionChannel

        collator = PriorCollator(builder.tokenizer, channels=[AttentionChannel(builder, store=store)])
    rows = [{"text_a": e.text_a, "text_b": e.text_b, "label": float(e.label)} for e in examples]
    loader = DataLoader(rows, batch_size=16, shuffle=False, collate_fn=collator, num_workers=workers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()
    t0 = time.perf_counter()
    for batch in loader:
        model(**batch).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="examples to rebuild (default: all of train+dev)")
    ap.add_argument("--train", type=int, default=512, help="training examples for the epoch timing (0: skip)")
    ap.add_argument("--workers", default="0,1", help="DataLoader worker counts for the epoch timing")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    examples = read_dataset(stsb_path("train")) + read_dataset(stsb_path("dev"))
    examples = examples[: args.limit] if args.limit else examples
    tok = str(minilm_path())
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        r = rebuild(examples, tok, tmp, args.profile)
        print(f"examples                    {r['examples']}")
        print(f"cold: precompute            {r['precompute_s']:.2f} s")
        print(f"cold total (+ build, store) {r['cold_s']:.2f} s")
        print(f"warm rebuild, builder       {r['warm_builder_s']:.2f} s -> {r['cold_s'] / r['warm_builder_s']:.1f}x "
              f"faster than cold (max abs diff {r['diff_builder']:g})")
        print(f"warm rebuild, store         {r['warm_store_s']:.2f} s -> {r['cold_s'] / r['warm_store_s']:.1f}x "
              f"faster than cold (max abs diff {r['diff_store']:g})")
        print(f"store on disk               {r['store_mb']:.1f} MB")
        for key in ("profile_builder", "profile_store"):
            if key in r:
                print(f"\n{key}:\n{r[key]}")
        if args.train:
            train = read_dataset(stsb_path("train"))[: args.train]
            print(f"\none training epoch, {len(train)} examples, batch 16, MiniLM, multiply@0 (seconds)")
            print("| workers | no prior | prior from builder | prior from store |")
            print("|---|---|---|---|")
            for w in (int(x) for x in args.workers.split(",")):
                times = [epoch(train, tok, tmp / "stsb.duckdb", tmp / "aligned", k, w)
                         for k in ("none", "builder", "store")]
                print(f"| {w} | " + " | ".join(f"{t:.1f}" for t in times) + " |", flush=True)


if __name__ == "__main__":
    main()

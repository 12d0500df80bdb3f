"""Cold precompute vs warm rebuild of STS-B train+dev priors (paper preset).

cold  = fresh DuckDB file: load WordNet, compute every unique word pair, write it
        (priorkit precompute), then build every example's token-aligned prior;
warm  = a new builder over the read-only cache builds every prior again.

    python benchmarks/precompute_speed.py [--limit N] [--cache FILE]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

import priorkit  # noqa: E402
from priorkit.align import PriorBuilder  # noqa: E402
from priorkit.cache import PriorCache  # noqa: E402
from priorkit.datasets import read_dataset  # noqa: E402
from priorkit.precompute import precompute  # noqa: E402
from priorkit.resources import minilm_path, stsb_path  # noqa: E402


def build_all(builder, examples, batch=256):
    n = 0
    for i in range(0, len(examples), batch):
        chunk = examples[i:i + batch]
        out = builder.build_batch([e.text_a for e in chunk], [e.text_b for e in chunk])
        n += out["prior"].shape[0]
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="examples (default: all of train+dev)")
    ap.add_argument("--cache", default=None, help="cache file (default: a temporary one)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    examples = read_dataset(stsb_path("train")) + read_dataset(stsb_path("dev"))
    examples = examples[: args.limit] if args.limit else examples
    tmp = tempfile.TemporaryDirectory()
    path = Path(args.cache or Path(tmp.name) / "stsb.duckdb")
    if path.exists():
        path.unlink()
    tok = str(minilm_path())

    t0 = time.perf_counter()
    provider = priorkit.get_provider("wordnet", measure="xia2021")
    cache = PriorCache(path)
    builder = PriorBuilder.paper(tok, provider=provider)
    summary = precompute(examples, builder, cache, progress=False)
    t_pre = time.perf_counter() - t0
    cold_builder = PriorBuilder.paper(tok, provider=provider, cache=PriorCache(path, read_only=True))
    t1 = time.perf_counter()
    build_all(cold_builder, examples)
    t_build_cold = time.perf_counter() - t1
    cold = time.perf_counter() - t0

    t3 = time.perf_counter()
    rerun = precompute(examples, PriorBuilder.paper(tok, provider=priorkit.get_provider("wordnet", measure="xia2021")),
                       PriorCache(path), progress=False)
    t_rerun = time.perf_counter() - t3
    assert rerun.new == 0, rerun

    t2 = time.perf_counter()
    warm_builder = PriorBuilder.paper(tok, provider=priorkit.get_provider("wordnet", measure="xia2021"),
                                      cache=PriorCache(path, read_only=True))
    n = build_all(warm_builder, examples)
    warm = time.perf_counter() - t2
    print(f"examples                 {len(examples)}")
    print(f"unique word pairs        {summary.requested} requested, {summary.pairs} stored, {summary.new} new")
    print(f"cold precompute          {t_pre:.2f} s  (incl. WordNet load)")
    print(f"cold build of priors     {t_build_cold:.2f} s")
    print(f"cold total               {cold:.2f} s")
    print(f"warm precompute rerun    {t_rerun:.2f} s  -> {t_pre / t_rerun:.1f}x faster than the cold precompute")
    print(f"warm rebuild ({n} priors) {warm:.2f} s  -> {cold / warm:.1f}x faster than cold total")
    print(f"cache file               {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

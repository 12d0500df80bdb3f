"""Single-process precompute vs Dask (LocalCluster of N worker processes), same pairs.

STS-B train+dev, paper preset (wordnet xia2021, symmetric: 375,468 requested
pairs -> 307,862 keys), a cold DuckDB file for every run.  Each run is a fresh
Python process (so WordNet is loaded in every run, by the process or by each
worker), and the variants alternate: local, dask2, local, dask2, ... (one
``daskN`` variant per ``--workers`` value; 1 worker measures Dask's overhead).

    python benchmarks/distributed_precompute.py [--reps 3] [--workers 2 [1 ...]] [--shard-size 20000] [--json out.json]

Reported per run: ``seconds`` (the precompute summary's: collect pairs, cache
join, compute, write/ingest) and, for dask, the cluster start on top; pairs/s =
computed pairs / seconds.  The first run of each variant is also checked to
store identical values.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _cpu() -> float:
    """CPU seconds (user + system) of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(variant: str, cache_path: str, shard_size: int, limit: int | None) -> dict:
    """One cold precompute in this (fresh) process."""
    from priorkit.align import PriorBuilder
    from priorkit.cache import PriorCache
    from priorkit.datasets import read_dataset
    from priorkit.resources import minilm_path, stsb_path

    examples = read_dataset(stsb_path("train")) + read_dataset(stsb_path("dev"))
    examples = examples[:limit] if limit else examples
    builder = PriorBuilder.paper(str(minilm_path()))
    cache = PriorCache(cache_path)
    out: dict = {"variant": variant, "load_before": os.getloadavg()[0]}
    if variant == "local":
        from priorkit.precompute import precompute

        c0 = _cpu()
        s = precompute(examples, builder, cache, progress=False)
        out.update(startup=0.0, worker_rss_mb=[], driver_cpu=_cpu() - c0, worker_cpu=[])
    else:
        from priorkit.precompute.dask_engine import precompute_distributed, start_client

        t = time.perf_counter()
        client, cluster = start_client(workers=int(variant.removeprefix("dask")))
        out["startup"] = time.perf_counter() - t
        w0, c0 = client.run(_cpu), _cpu()
        s = precompute_distributed(examples, builder, cache, client=client, shard_size=shard_size, progress=False)
        w1, out["driver_cpu"] = client.run(_cpu), _cpu() - c0  # the driver's CPU includes the LocalCluster's scheduler
        out["worker_cpu"] = sorted(round(w1[k] - w0[k], 2) for k in w1)
        out["worker_rss_mb"] = sorted(round(v / 2**20) for v in client.run(_rss).values())
        out["builds"] = s.builds
        out["worker_seconds"] = s.worker_seconds
        client.close()
        cluster.close()
    out.update(seconds=s.seconds, computed=s.computed, pairs=s.pairs, requested=s.requested, batches=s.batches,
               pairs_per_second=s.computed / s.seconds,
               driver_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               cache_bytes=Path(cache_path).stat().st_size, load_after=os.getloadavg()[0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[2], help="worker processes (one variant each)")
    ap.add_argument("--shard-size", type=int, default=20_000)
    ap.add_argument("--limit", type=int, default=None, help="examples (default: all of train+dev)")
    ap.add_argument("--json", default=None, help="also write every run here")
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.shard_size, args.limit)))
        return

    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        first: dict[str, Path] = {}
        for rep in range(args.reps):
            for variant in ["local", *(f"dask{n}" for n in args.workers)]:
                path = Path(tmp) / f"{variant}-{rep}.duckdb"
                cmd = [sys.executable, __file__, "--child", variant, str(path), "--shard-size", str(args.shard_size)] + (["--limit", str(args.limit)] if args.limit else [])
                t = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(proc.stderr)
                run = json.loads(proc.stdout.strip().splitlines()[-1])
                run["process_wall"] = time.perf_counter() - t
                runs.append(run)
                first.setdefault(variant, path)
                print(f"rep {rep + 1} {variant:6s}: {run['seconds']:6.2f} s + start {run['startup']:4.2f} s, "
                      f"{run['pairs_per_second']:8,.0f} pairs/s, process {run['process_wall']:5.1f} s, "
                      f"load {run['load_before']:.1f}->{run['load_after']:.1f}", flush=True)
        identical = all(_identical(first["local"], first[v]) for v in first if v != "local")

    def med(variant: str, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["variant"] == variant)

    r0 = runs[0]
    local = med("local", "seconds")
    print(f"\n{r0['requested']:,} requested pairs -> {r0['pairs']:,} keys; {args.reps} runs each, medians")
    print(f"{'single process':16s} {local:6.2f} s  {r0['computed'] / local:9,.0f} pairs/s  "
          f"CPU {med('local', 'driver_cpu'):.2f} s; peak RSS {med('local', 'driver_peak_rss_mb'):.0f} MiB")
    for n in args.workers:
        v = f"dask{n}"
        total = med(v, "seconds") + med(v, "startup")
        last = [r for r in runs if r["variant"] == v][-1]
        print(f"{f'dask {n} worker(s)':16s} {total:6.2f} s  {r0['computed'] / total:9,.0f} pairs/s  "
              f"(cluster start {med(v, 'startup'):.2f} s included; {med(v, 'seconds'):.2f} s without: "
              f"{r0['computed'] / med(v, 'seconds'):,.0f} pairs/s); x{local / total:.2f} vs single process; "
              f"worker time {med(v, 'worker_seconds'):.1f} s; CPU driver {med(v, 'driver_cpu'):.2f} s + workers "
              f"{last['worker_cpu']} s; worker RSS {last['worker_rss_mb']} MiB; "
              f"driver peak RSS {med(v, 'driver_peak_rss_mb'):.0f} MiB; file {med(v, 'cache_bytes') / 1e6:.1f} MB")
    print(f"values identical    {identical}")
    print(f"cache file (local)  {r0['cache_bytes'] / 1e6:.1f} MB = {r0['cache_bytes'] / r0['pairs']:.1f} bytes/key")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "identical": identical}, indent=2))


def _identical(a: Path, b: Path) -> bool:
    import numpy as np

    from priorkit.cache import PriorCache, nan_equal

    ca, cb = PriorCache(a, read_only=True), PriorCache(b, read_only=True)
    fp = ca.providers()[0]["fingerprint"]
    da, db = ca.load(fp).to_dict(), cb.load(fp).to_dict()
    keys = sorted(da)
    return keys == sorted(db) and nan_equal(np.array([da[k] for k in keys]), np.array([db[k] for k in keys]))


if __name__ == "__main__":
    main()

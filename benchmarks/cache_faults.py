"""Faults the prior cache must survive, injected into real precompute runs on real DuckDB files.

    python benchmarks/cache_faults.py [--trials 20] [--seed 0] [--out faults.json]

Fault classes (helpers in tests/support/faults.py, shared with tests/test_cache_faults.py):

- kill -9: ``--trials`` trials; each SIGKILLs a precompute twice on one fresh
  file -- first at a uniformly random time of (90% of) the whole run, of its start-up
  before the first commit (run record, the join) or of its first 0.12 s (DuckDB
  creating the file and the schema), in turn; then the resumed run after 1-3
  batches plus up to one batch time -- and checks the file after each
  kill (it opens, holds a whole number of batches, no key twice), then reruns
  and compares every value with an uninterrupted run;
- file size limit (RLIMIT_FSIZE) at random sizes, and -- as root, where
  ``mount -t tmpfs`` works -- a real full disk (small tmpfs);
- a folder without write permission;
- two writers at once; a reader polling during a write;
- files at the cache path that are not whole caches (foreign, truncated, WAL leftovers).

Prints one table (fault class, trials, failures) and, with ``--out``, writes every
trial as JSON.  Exit status 1 if any trial failed.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support import faults as F  # noqa: E402 - the test suite's fault helpers


SECTIONS = ("kill", "disk", "read-only", "concurrency", "foreign", "creation", "training", "dask")
TRAINING_MIX = ["checkpoint", "after-checkpoint", "random", "model"]
#: (creator, watched file, max extra delay after it appears) in turn
KILL_MIX = [("priorkit", "temp", 0.0), ("priorkit", "temp", 0.3), ("priorkit", "final", 0.0),
            ("priorkit", "final", 0.3), ("in place", "final", 0.0), ("in place, slow disk", "final", 0.0),
            ("in place, slow disk", "final", 0.15), ("in place", "final", 0.02)]
PAUSE_MIX = [("priorkit", "temp", 0.0), ("priorkit", "final", 0.0), ("priorkit", "temp", 0.3),
             ("in place", "final", 0.0), ("in place, slow disk", "final", 0.0)]


def creation_window(args, work, folder: Path, rng: random.Random, record: dict) -> list[tuple]:
    """Kills and SIGSTOPs timed by the appearance of the cache file (tests/support/creation_faults.py)."""
    from support import creation_faults as C

    small = F.Workload(work.plugin_file, limit=120, batch=args.batch)
    kills = []
    for i in range(args.creation_kills):
        creator, watch, extra = KILL_MIX[i % len(KILL_MIX)]
        t = C.creation_kill_trial(small, folder, rng, creator=creator, watch=watch, max_extra=extra)
        kills.append(t)
        print(f"creation kill {i + 1:2d} ({creator}, at {t.seen} +{t.extra * 1000:.0f} ms): after the kill "
              f"{t.after}; rerun {t.rerun[:160]}; {'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}",
              flush=True)
    paused = []
    for i in range(args.paused):
        creator, watch, extra = PAUSE_MIX[i % len(PAUSE_MIX)]
        t = C.paused_creator_trial(small, folder, rng, creator=creator, watch=watch, max_extra=extra)
        paused.append(t)
        print(f"paused creator {i + 1:2d} ({creator}, at {t.seen} +{t.extra * 1000:.0f} ms, file {t.at_pause}): "
              + "; ".join(f"{k}: {v[:140]}" for k, v in t.outcomes.items())
              + f"; {'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
    cost = C.creation_cost(folder, n=10)
    print(f"creating a new cache (median of 10, ms): {cost}", flush=True)
    record["creation_ms"] = cost
    record["creation_kills"] = [dataclasses.asdict(t) for t in kills]
    record["paused_creators"] = [dataclasses.asdict(t) for t in paused]
    after: dict[str, int] = {}
    for t in kills:
        key = f"{t.creator}: {'no file' if t.after == 'absent' else t.after}"
        after[key] = after.get(key, 0) + 1
    replaced = sum("priorkit: replaced" in t.rerun for t in kills)
    busy = sum(t.busy for t in paused)
    return [
        ("kill as the cache file appears", "SIGKILL when the creating/final file appears (+0-300 ms)", len(kills),
         sum(bool(t.failures) for t in kills),
         f"left: {', '.join(f'{v} {k}' for k, v in sorted(after.items()))}; {replaced} leftovers replaced "
         "with one line; every rerun completed, exact values"),
        ("creator stopped in the window", "SIGSTOP at the appearance; a writer, a reader, `cache info` (1 s)",
         len(paused), sum(bool(t.failures) for t in paused),
         f"{busy} of {3 * len(paused)} answered busy naming the creator, the rest succeeded; "
         "creator and rerun completed"),
        ("(cost of creating a cache)", "median ms, 10 each: " + ", ".join(f"{k} {v}" for k, v in cost.items()),
         10, 0, f"difference {cost['temporary file + link'] - cost['in place']:+.1f} ms per new cache"),
    ]


def killed_runs(args, sections: set[str], folder: Path, rng: random.Random, record: dict) -> list[tuple]:
    """kill -9 of `priorkit run` training and of a Dask ingest, then a rerun (tests/support/run_faults.py)."""
    from support import run_faults as R

    rows = []
    if "training" in sections:
        model = R.tiny_model(folder)
        runs = []
        for i in range(args.training_trials):
            t = R.training_kill_trial(folder, model, folder, rng, when=TRAINING_MIX[i % len(TRAINING_MIX)])
            runs.append(t)
            print(f"training kill {i + 1} ({t.when} +{t.delay * 1000:.0f} ms): left {t.at_kill}; rerun resumed from "
                  f"{t.resumed_from}; {'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
        record["training_kills"] = [dataclasses.asdict(t) for t in runs]
        resumed = sum(t.resumed_from is not None for t in runs)
        rows.append(("kill -9 of `priorkit run` training", "SIGKILL as a checkpoint appears / was written / at "
                     "random / as the model is saved; rerun", len(runs), sum(bool(t.failures) for t in runs),
                     f"{resumed} resumed from a checkpoint, the rest had none whole; every model loads and "
                     "reproduces its evaluate scores"))
    if "dask" in sections:
        runs = []
        reference = folder / "dask-single.duckdb"
        for i in range(args.dask_trials):
            t = R.ingest_kill_trial(folder, folder, rng, reference=reference)
            runs.append(t)
            print(f"dask ingest kill {i + 1} (+{t.delay * 1000:.0f} ms after the first ingest, {t.late} late): {t.count_after} pairs, "
                  f"{t.shards_left} shards left; {'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}",
                  flush=True)
        record["dask_kills"] = [dataclasses.asdict(t) for t in runs]
        rows.append(("kill -9 during the Dask ingest", "SIGKILL of the driver (and its cluster) after 1 ingested "
                     "shard + 0-20 ms (0 ms on a retry when the run had ended first); rerun", len(runs), sum(bool(t.failures) for t in runs),
                     "rerun ingests the shards left and equals a single-process run"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20, help="kill -9 trials (2 kills each)")
    ap.add_argument("--disk-trials", type=int, default=8, help="file size limit trials (and tmpfs trials)")
    ap.add_argument("--concurrency-trials", type=int, default=3, help="two-writer and reader trials")
    ap.add_argument("--limit", type=int, default=600, help="STS-B dev examples per killed run")
    ap.add_argument("--batch", type=int, default=300, help="pairs per batch (transaction)")
    ap.add_argument("--creation-kills", type=int, default=24,
                    help="kills timed by the cache file's appearance (issue 14)")
    ap.add_argument("--paused", type=int, default=12,
                    help="creators stopped (SIGSTOP) in the creation window, with a writer, reader and cache info")
    ap.add_argument("--training-trials", type=int, default=4,
                    help="kill -9 of `priorkit run` during training (checkpoint being written, just written, "
                         "random, final model being saved, in turn)")
    ap.add_argument("--dask-trials", type=int, default=3, help="kill -9 of a Dask precompute during its ingest")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated fault classes to run, of {','.join(SECTIONS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write all trials as JSON here")
    args = ap.parse_args()
    sections = set(args.only.split(","))
    if sections - set(SECTIONS):
        ap.error(f"--only: unknown {sorted(sections - set(SECTIONS))}; choose from {','.join(SECTIONS)}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the clean-ups (tmpfs mounts, folders)
    rng = random.Random(args.seed)
    rows: list[tuple[str, str, int, int, str]] = []
    record: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "machine": platform.platform(),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="priorkit-faults-") as tmp:
        folder = Path(tmp)
        plugin = F.write_plugin(folder)
        work = F.Workload(plugin, limit=args.limit, batch=args.batch)
        print(f"workload: STS-B dev[:{args.limit}], {len(work.keys):,} keys, batches of {args.batch}", flush=True)
        run_s, first_s, batch_s = F.time_run(work, folder)
        print(f"uninterrupted run: {run_s:.2f} s from start to done, {first_s:.2f} s to the first commit, "
              f"{batch_s * 1000:.0f} ms per batch", flush=True)
        record["run_seconds"], record["first_commit_seconds"], record["batch_seconds"] = run_s, first_s, batch_s
        small = F.Workload(plugin, limit=40, batch=args.batch)

        # -- kill -9 ---------------------------------------------------------
        if "kill" in sections:
            kills = []
            for i in range(args.trials):
                window = (0.9 * run_s, first_s, 0.12)[i % 3]
                t = F.kill_trial(work, folder, rng, kills=2, run_seconds=window, batch_seconds=batch_s)
                kills.append(t)
                where = ", ".join(f"kill after {'start' if k.after_batches == 0 else f'batch {k.after_batches}'}"
                                  f"+{k.delay * 1000:.0f}ms (last line {k.last_line or '-'!r}) -> {k.count} pairs"
                                  for k in t.kills)
                print(f"kill trial {i + 1:2d}: {where or '-'}{' (a run ended first)' if t.missed else ''}; "
                      f"rerun +{t.rerun_new}; {'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}",
                      flush=True)
            landed = sum(len(t.kills) for t in kills)
            states = {}
            for t in kills:
                for k in t.kills:
                    phase = ("before the file existed" if k.state == "absent" else
                             "before the schema was committed" if k.state == "no schema yet" else
                             "before the first batch committed" if k.count == 0 else "after >= 1 batch")
                    states[phase] = states.get(phase, 0) + 1
            rows.append(("kill -9 of a precompute", "SIGKILL at a random moment, 2 per trial on one file", len(kills),
                         sum(bool(t.failures) for t in kills),
                         f"{landed} kills landed ({', '.join(f'{v} {k}' for k, v in states.items())}); "
                         f"{sum(t.missed for t in kills)} runs ended first"))
            record["kill"] = [dataclasses.asdict(t) for t in kills]

        # -- full disk -------------------------------------------------------
        if "disk" in sections:
            big = F.Workload(plugin, limit=1000, batch=args.batch)
            prefill = F.Workload(plugin, limit=200, batch=args.batch)
            disk = [F.fsize_trial(big, prefill, folder, rng.randrange(0, 1_100_000, 4096))
                    for _ in range(args.disk_trials)]
            for t in disk:
                print(f"RLIMIT_FSIZE {t.limit_bytes:,} B: {t.before} -> {t.count}; {t.outcome[:90]}; "
                      f"{'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
            mid = sum(t.count > t.before for t in disk)
            rows.append(("file size limit", "RLIMIT_FSIZE = file size + 0-1.1 MB in the child", len(disk),
                         sum(bool(t.failures) for t in disk),
                         f"{mid} hit mid-run, {len(disk) - mid} at the first write; error names the path; "
                         "whole batches; rerun exact"))
            record["fsize"] = [dataclasses.asdict(t) for t in disk]
            if F.tmpfs_available():
                tmpfs = [F.tmpfs_trial(big, folder, rng.randrange(1_700_000, 3_300_000, 4096))
                         for _ in range(args.disk_trials)]
                for t in tmpfs:
                    print(f"tmpfs {t.limit_bytes:,} B: -> {t.count}; {t.outcome[:110]}; "
                          f"{'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
                mid = sum(t.count > 0 for t in tmpfs)
                rows.append(("full disk", "fresh cache on a 1.7-3.3 MB tmpfs (ENOSPC), then remount larger", len(tmpfs),
                             sum(bool(t.failures) for t in tmpfs),
                             f"{mid} hit mid-run, {len(tmpfs) - mid} before the first batch; error names the path; "
                             "whole batches; rerun exact"))
                record["tmpfs"] = [dataclasses.asdict(t) for t in tmpfs]
            else:
                rows.append(("full disk", "tmpfs", 0, 0, "skipped: cannot mount a tmpfs here"))

        # -- permissions -----------------------------------------------------
        if "read-only" in sections:
            ro = F.read_only_trial(small)
            for name, (kind, detail) in ro.results.items():
                print(f"read-only folder, {name}: {kind} {str(detail)[:150]}", flush=True)
            rows.append(("read-only folder", "mode 0555 (as root: child drops to uid 65534)", len(ro.results),
                         len(ro.failures), "4 writes refused with what to do; read-only open works; nothing changed"))
            record["read_only"] = dataclasses.asdict(ro)

        # -- concurrency -----------------------------------------------------
        if "concurrency" in sections:
            writers = [F.writers_trial(F.Workload(plugin, limit=300), F.Workload(plugin, limit=450, start=150),
                                       F.Workload(plugin, limit=450), folder) for _ in range(args.concurrency_trials)]
            readers = [F.reader_trial(F.Workload(plugin, limit=300), folder) for _ in range(args.concurrency_trials)]
            for t in writers:
                print(f"two writers: {t.counts[0]:,} stored, {t.counts[1]:,} by one writer; "
                      f"{'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
            for t in readers:
                print(f"reader during a write: {len(t.snapshots)} snapshots, {len(set(t.snapshots))} distinct; "
                      f"{'OK' if not t.failures else 'FAIL ' + '; '.join(t.failures)}", flush=True)
            rows.append(("two writers at once", "2 precomputes, overlapping STS-B slices, one file", len(writers),
                         sum(bool(t.failures) for t in writers), "every pair once, values = one writer's"))
            rows.append(("reader during a write", "load() polled while a writer commits", len(readers),
                         sum(bool(t.failures) for t in readers),
                         f"{sum(len(t.snapshots) for t in readers)} snapshots, each whole batches, final values"))
            record["writers"] = [dataclasses.asdict(t) for t in writers]
            record["readers"] = [dataclasses.asdict(t) for t in readers]

        # -- foreign files ---------------------------------------------------
        if "foreign" in sections:
            cases = F.foreign_cases(small, folder)
            for c in cases:
                print(f"{c.name}: {c.outcome}; unchanged={c.unchanged}; {c.message[:110]}; "
                      f"{'OK' if not c.failures else 'FAIL ' + '; '.join(c.failures)}", flush=True)
            rows.append(("foreign / truncated file", "12 kinds of file at the path, read-only then writable",
                         len(cases), sum(bool(c.failures) for c in cases), "refused and unchanged (an empty file: described, then replaced); torn WAL dropped"))
            record["foreign"] = [dataclasses.asdict(c) for c in cases]

        # -- the creation window (issue 14) ------------------------------------
        if "creation" in sections:
            rows += creation_window(args, work, folder, rng, record)

        # -- kill -9 of training and of the Dask ingest ---------------------------
        if "training" in sections or "dask" in sections:
            rows += killed_runs(args, sections, folder, rng, record)

    record["seconds"] = round(time.perf_counter() - t_all, 1)
    record["table"] = [dict(zip(("fault", "how", "trials", "failed", "notes"), r)) for r in rows]
    print()
    print("| fault | how | trials | failed | notes |\n|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(f"\ntotal {record['seconds']} s")
    if args.out:
        args.out.write_text(json.dumps(record, indent=2, default=str))
    sys.exit(1 if any(r[3] for r in rows) else 0)


if __name__ == "__main__":
    main()

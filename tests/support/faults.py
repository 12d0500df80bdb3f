"""Crash faults for the prior cache, shared by ``benchmarks/cache_faults.py`` and the tests.

Everything is real: a provider plug-in file (``plugins/trigram_plugin.py``),
STS-B dev sentence pairs, DuckDB files, and child processes that run ``priorkit.precompute`` and are killed with
SIGKILL, capped with ``RLIMIT_FSIZE``, or run without write permission.

A trial never asserts: it returns what it saw and a list of ``failures``
(empty when the cache behaved), so the benchmark can count them over many
trials and a test can assert ``failures == []`` on a few.

The invariant every fault is checked against: the file opens, holds exactly a
whole number of the run's batches (a batch is one transaction), no key twice,
and a rerun completes with exactly the values of an uninterrupted run.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from priorkit.cache import PriorCache
from priorkit.errors import CacheError

from .contention import (ForeignCase, ReaderTrial, WritersTrial, foreign_cases, reader_trial,  # noqa: F401
                         writers_trial)
from .workload import (CHILD, PLUGIN_FILE, Workload, digest, duplicate_keys, file_state,  # noqa: F401
                       load_plugin, same_values, stored, whole_counts, write_plugin)

#: as a full disk fails them with ENOSPC; SIGXFSZ ignored so the write returns an error.
FSIZE_SETUP = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
"""

#: ``setup`` for CHILD: as root, become `nobody` (root ignores file permissions).
DROP_ROOT_SETUP = """
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)
"""


# ---------------------------------------------------------------------------
# kill -9
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Kill:
    """One SIGKILL: when it landed and what the file held afterwards."""

    after_batches: int  # batch lines seen before the delay started (0: from `start`)
    delay: float  # seconds slept after that, then SIGKILL
    last_line: str  # the child's last stdout line before the kill
    reported: int  # pairs the child reported committed before the kill
    finished_first: bool  # the run ended before the kill landed
    state: str = ""
    count: int | None = None


def kill_after(script: str, after_batches: int, delay: float) -> Kill:
    """Start a precompute, wait for ``after_batches`` commits (0: for `start`), sleep, SIGKILL."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    kill = Kill(after_batches, delay, "", 0, False)

    def seen(line: str) -> list[str]:
        parts = line.split()
        kill.last_line = line.strip()
        if parts[0] == "batch":
            kill.reported = int(parts[2])
        return parts

    try:
        for line in proc.stdout:
            parts = seen(line)
            if parts[0] in ("done", "error"):
                break
            if (parts[0] == "start" and after_batches == 0) or (parts[0] == "batch" and int(parts[1]) >= after_batches):
                break
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        proc.kill()
        proc.wait()
    # what it printed before the kill landed; a last line the kill cut short (no newline)
    # was never fully reported, so it does not count
    for line in proc.stdout.read().splitlines(keepends=True):
        if line.endswith("\n") and line.strip():
            seen(line)
    kill.finished_first = (proc.returncode != -signal.SIGKILL
                           or (kill.last_line.split() or [""])[0] in ("done", "error"))
    return kill


def time_run(work: Workload, folder: Path) -> tuple[float, float, float]:
    """Seconds from `start` to `done`, from `start` to the first commit, and per batch, of
    an uninterrupted child run."""
    path = Path(folder) / "timed.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", work.script(path)], stdout=subprocess.PIPE, text=True)
    t0 = None
    stamps = []
    for line in proc.stdout:
        if line.startswith("start"):
            t0 = time.perf_counter()
        elif line.startswith("batch"):
            stamps.append(time.perf_counter())
    proc.wait()
    total = time.perf_counter() - t0
    per_batch = (stamps[-1] - stamps[0]) / max(1, len(stamps) - 1) if len(stamps) > 1 else total
    for p in (path, Path(f"{path}.wal")):
        p.unlink(missing_ok=True)
    return total, (stamps[0] - t0) if stamps else total, per_batch


@dataclasses.dataclass
class KillTrial:
    kills: list[Kill]
    missed: int = 0  # runs that ended before their kill landed (not failures; nothing to check)
    rerun_new: int = 0
    seconds: float = 0.0
    failures: list[str] = dataclasses.field(default_factory=list)


def kill_trial(work: Workload, folder: Path, rng: random.Random, *, kills: int = 2,
               run_seconds: float | None = None, batch_seconds: float = 0.05) -> KillTrial:
    """Kill a precompute ``kills`` times on one fresh file, checking the file after each
    kill, then rerun to completion and compare with an uninterrupted run.

    The first kill lands at a uniformly random time in ``[0, run_seconds]`` after
    `start` (file creation, schema, run record, the join, computing, inserting,
    committing, checkpointing) -- or, without ``run_seconds``, after 1-3 batches
    plus up to one batch time, like the later kills, which hit the resumed run.
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    path = folder / f"killed-{rng.getrandbits(32):08x}.duckdb"
    reference = work.reference(folder)
    fp = work.fingerprint
    trial = KillTrial([])
    for k in range(kills):
        before, batches = work.plan(path)
        whole = whole_counts(before, batches)
        if len(batches) < 2:  # the last kill landed at the very end: nothing left to interrupt
            if k == 0:
                trial.failures.append(f"only {len(batches)} batches to compute; use more data")
            break
        if k == 0 and run_seconds:
            kill = kill_after(work.script(path), 0, rng.uniform(0, run_seconds))
        else:
            kill = kill_after(work.script(path), rng.randint(1, min(3, len(batches) - 1)),
                              rng.uniform(0, batch_seconds))
        if kill.last_line.startswith("error"):
            trial.failures.append(f"kill {k + 1}: the run failed before the kill: {kill.last_line}")
        if kill.finished_first:
            trial.missed += 1
            break
        trial.kills.append(kill)
        try:
            kill.state, kill.count = file_state(path, fp)
        except CacheError as exc:
            trial.failures.append(f"kill {k + 1} ({kill.last_line!r}): the file does not open: {exc}")
            return trial
        if kill.count not in whole:
            trial.failures.append(f"kill {k + 1} ({kill.last_line!r}): {kill.count} pairs is not a whole "
                                  f"number of batches (from {before}: {sorted(whole)[:5]}...)")
        if kill.count < before + kill.reported:
            trial.failures.append(f"kill {k + 1}: {kill.count} pairs, but {before + kill.reported} were committed")
        if kill.state == "ok" and duplicate_keys(path):
            trial.failures.append(f"kill {k + 1}: keys stored twice")
    try:
        count = file_state(path, fp)[1]
        resumed = work.precompute(path, batch=10 * work.batch)
    except CacheError as exc:
        trial.failures.append(f"rerun failed: {exc}")
        return trial
    trial.rerun_new = resumed.new
    if resumed.cached != count or resumed.new != len(work.keys) - count:
        trial.failures.append(f"rerun: cached {resumed.cached} new {resumed.new}, file held {count} "
                              f"of {len(work.keys)}")
    if not same_values(stored(path, fp), reference):
        trial.failures.append("values after the rerun differ from an uninterrupted run")
    statuses = [r["status"] for r in PriorCache(path, read_only=True).runs(limit=kills + 1)]
    finished = 1 + trial.missed
    if (any(s != "finished" for s in statuses[:finished]) or any(s != "killed" for s in statuses[finished:])
            or len(statuses) - finished > len(trial.kills)):
        trial.failures.append(f"run records {statuses} after {len(trial.kills)} kills")
    trial.seconds = time.perf_counter() - t0
    return trial


# ---------------------------------------------------------------------------
# full disk / file size limit
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class FullDiskTrial:
    how: str  # "RLIMIT_FSIZE" or "tmpfs"
    limit_bytes: int
    before: int = 0  # pairs stored before the capped run
    count: int = 0  # after it
    outcome: str = ""  # the child's last line
    failures: list[str] = dataclasses.field(default_factory=list)


def _check_after_write_error(trial, work: Workload, path: Path, proc, before: int, whole: set[int],
                             reference: dict, rerun) -> None:
    lines = proc.stdout.strip().splitlines()
    trial.outcome = lines[-1] if lines else proc.stderr.strip()[-300:]
    if proc.returncode == 0:
        trial.failures.append("the limit was never reached (use a smaller limit or more data)")
    elif proc.returncode != 3 or "disk full or file size limit" not in trial.outcome:
        trial.failures.append(f"exit {proc.returncode}, not the disk-full CacheError: {trial.outcome}")
    elif str(path) not in trial.outcome:
        trial.failures.append(f"the message does not name {path}: {trial.outcome}")
    try:
        trial.count = PriorCache(path, read_only=True, timeout=30).count(work.fingerprint)
    except CacheError as exc:
        trial.failures.append(f"the file does not open after the failed write: {exc}")
        return
    if trial.count not in whole:
        trial.failures.append(f"{trial.count} pairs is not a whole number of batches (from {before})")
    try:
        rerun()
    except CacheError as exc:
        trial.failures.append(f"rerun failed: {exc}")
        return
    if not same_values(stored(path, work.fingerprint), reference):
        trial.failures.append("values after the rerun differ from an uninterrupted run")
    if duplicate_keys(path):
        trial.failures.append("keys stored twice")


def fsize_trial(work: Workload, prefill: Workload, folder: Path, extra_bytes: int) -> FullDiskTrial:
    """Fill part of a cache, then run a precompute that may grow each file by at most
    ``extra_bytes`` (RLIMIT_FSIZE, unprivileged); rerun without the limit."""
    folder = Path(folder)
    path = folder / f"capped-{extra_bytes}-{time.monotonic_ns()}.duckdb"
    prefill.precompute(path)
    limit = path.stat().st_size + extra_bytes
    trial = FullDiskTrial("RLIMIT_FSIZE", limit)
    before, batches = work.plan(path)
    trial.before = before
    proc = work.run(path, setup=FSIZE_SETUP.format(limit=limit))
    _check_after_write_error(trial, work, path, proc, before, whole_counts(before, batches),
                             work.reference(folder), lambda: work.precompute(path))
    return trial


def tmpfs_available() -> bool:
    """Whether this process may mount a tmpfs (root without a locked-down container)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = Path(tempfile.mkdtemp(prefix="priorkit-tmpfs-probe-"))
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], check=True)
        return ok
    finally:
        probe.rmdir()


def tmpfs_trial(work: Workload, folder: Path, size_bytes: int) -> FullDiskTrial:
    """A precompute into a fresh cache on a tmpfs of ``size_bytes`` (a real ENOSPC); then
    the tmpfs is enlarged and the run repeated."""
    folder = Path(folder)
    mnt = folder / f"tmpfs-{size_bytes}-{time.monotonic_ns()}"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(mnt)], check=True)
    trial = FullDiskTrial("tmpfs", size_bytes)
    try:
        path = mnt / "c.duckdb"
        _, batches = work.plan(path)
        proc = work.run(path)

        def rerun() -> None:
            subprocess.run(["mount", "-o", "remount,size=256m", str(mnt)], check=True)
            work.precompute(path)

        _check_after_write_error(trial, work, path, proc, 0, whole_counts(0, batches),
                                 work.reference(folder), rerun)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        mnt.rmdir()
    return trial


# ---------------------------------------------------------------------------
# read-only folder
READ_ONLY_CHILD = """
import json, os, sys
import duckdb, pyarrow, numpy as np
import importlib.util
spec = importlib.util.spec_from_file_location("trigram_plugin", {plugin!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from priorkit.align.words import WordKeys
from priorkit.cache import PriorCache
from priorkit.errors import PriorkitError
from priorkit.precompute import precompute
provider = mod.Trigram(); provider.describe(); provider.data_checksum()
builder = WordKeys.paper(provider)
folder = {folder!r}
{setup}
cases = {{
    "new file": lambda: PriorCache(folder + "/new.duckdb").put(provider, [("a", "b")], np.array([0.5], np.float32)),
    "new subfolder": lambda: PriorCache(folder + "/sub/c.duckdb").check(),
    "write existing": lambda: PriorCache(folder + "/old.duckdb").put(provider, [("a", "b")], np.array([0.5], np.float32)),
    "precompute": lambda: precompute([("a cat", "a hat")], builder, PriorCache(folder + "/new.duckdb"), progress=False).new,
    "read existing": lambda: PriorCache(folder + "/old.duckdb", read_only=True).count(),
}}
out = {{}}
for name, fn in cases.items():
    try:
        out[name] = ["ok", fn()]
    except PriorkitError as exc:
        out[name] = [type(exc).__name__, " ".join(str(exc).split())]
print(json.dumps(out))
"""


@dataclasses.dataclass
class ReadOnlyTrial:
    results: dict[str, list]
    failures: list[str] = dataclasses.field(default_factory=list)


def read_only_trial(work: Workload) -> ReadOnlyTrial:
    """A folder without write permission (mode 0555; as root the child becomes `nobody`):
    writes fail with a CacheError naming the path and what to do; reading an existing
    cache there works; nothing in the folder changes."""
    outer = Path(tempfile.mkdtemp(prefix="priorkit-ro-"))  # not under a 0700 pytest folder
    try:
        outer.chmod(0o755)
        folder = outer / "ro"
        folder.mkdir()
        work.precompute(folder / "old.duckdb")
        (folder / "old.duckdb").chmod(0o666)  # the file is writable; only the folder is not
        expected = PriorCache(folder / "old.duckdb", read_only=True).count()
        before = {p.name: digest(p) for p in folder.iterdir()}
        folder.chmod(0o555)
        script = READ_ONLY_CHILD.format(plugin=str(work.plugin_file), folder=str(folder), setup=DROP_ROOT_SETUP)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        folder.chmod(0o755)
        after = {p.name: digest(p) for p in folder.iterdir()}
        if proc.returncode != 0:
            return ReadOnlyTrial({}, [f"child failed: {proc.stderr[-2000:]}"])
        trial = ReadOnlyTrial(json.loads(proc.stdout))
        for name, (kind, detail) in trial.results.items():
            if name == "read existing":
                if kind != "ok" or detail != expected:
                    trial.failures.append(f"read-only open in a read-only folder: {kind} {detail}")
                continue
            if kind != "CacheError":
                trial.failures.append(f"{name}: {kind} {detail}, expected a CacheError")
                continue
            for needed in (str(folder), "--cache", "PRIORKIT_CACHE", "read_only=True"):
                if needed not in detail:
                    trial.failures.append(f"{name}: the message lacks {needed!r}: {detail}")
        if after != before:
            trial.failures.append(f"the folder changed: {sorted(before)} -> {sorted(after)}")
        return trial
    finally:
        for p in outer.rglob("*"):
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(outer)

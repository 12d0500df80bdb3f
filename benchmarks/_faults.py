"""Fault injection for the prior cache, shared by ``benchmarks/cache_faults.py`` and the tests.

Everything is real: a provider plug-in file (character-trigram Jaccard,
symmetric, NaN for words without letters), STS-B dev sentence pairs, DuckDB
files, and child processes that run ``priorkit.precompute`` and are killed with
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
import functools
import hashlib
import importlib.util
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

import numpy as np

from priorkit.cache import PriorCache, canonical_pairs, nan_equal
from priorkit.datasets import read_dataset
from priorkit.errors import CacheError
from priorkit.precompute import collect_pairs, plan_batches, precompute
from priorkit.resources import stsb_path

#: A real plug-in file: character-trigram Jaccard, symmetric; NaN for words without letters.
PLUGIN = '''
import numpy as np
import priorkit
from priorkit.provider import PriorProvider


def grams(word):
    w = "##" + word + "##"
    return frozenset(w[i:i + 3] for i in range(len(w) - 2))


class Trigram(PriorProvider):
    """Character-trigram Jaccard similarity."""

    name = "trigram"
    version = "1"
    symmetric = True

    def compute(self, left, right):
        gl, gr = [grams(w) for w in left], [grams(w) for w in right]
        out = np.array([[len(a & b) / len(a | b) for b in gr] for a in gl], dtype=np.float32)
        out = out.reshape(len(left), len(right))
        out[[not any(c.isalpha() for c in w) for w in left], :] = np.nan
        out[:, [not any(c.isalpha() for c in w) for w in right]] = np.nan
        return out


class PaperWordPairs:
    """The word pairs of the paper preset (keys of cls + A + sep against B + sep,
    stop words dropped), without loading a tokenizer: lets a test process start
    in a second instead of importing torch."""

    def __init__(self, provider):
        self.provider = provider

    def word_pairs(self, text_a, text_b):
        from priorkit.words import is_stop_word, paper_key

        left = [k for k in dict.fromkeys(["cls", *map(paper_key, text_a.split()), "sep"]) if not is_stop_word(k)]
        right = [k for k in dict.fromkeys([*map(paper_key, text_b.split()), "sep"]) if not is_stop_word(k)]
        return [(a, b) for a in left for b in right]


@priorkit.hookimpl
def register_prior_providers(register):
    register("trigram", Trigram)
'''

#: A precompute as a standalone program.  Lines on stdout: ``start`` (just
#: before ``precompute``), ``batch INDEX COMMITTED`` after each commit,
#: ``done NEW`` or ``error TYPE MESSAGE`` (exit code 3).
CHILD = """
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("trigram_plugin", {plugin!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
import duckdb, pyarrow  # imported before any privilege drop in `setup`
from priorkit.cache import PriorCache
from priorkit.datasets import read_dataset
from priorkit.errors import PriorkitError
from priorkit.precompute import precompute
examples = read_dataset({dataset!r}, limit={limit})[{start}:]
builder = mod.PaperWordPairs(mod.Trigram())
{setup}
print("start", flush=True)
def report(r):
    print("batch", r.index, r.committed, flush=True)
    time.sleep({pause})  # a slower provider: leaves readers a window between batches
try:
    s = precompute(examples, builder, PriorCache({cache!r}), batch_size={batch}, progress=False, on_batch=report)
except PriorkitError as exc:
    print("error", type(exc).__name__, " ".join(str(exc).split()), flush=True)
    sys.exit(3)
print("done", s.new, flush=True)
"""

#: ``setup`` for CHILD: writes beyond N bytes per file fail with EFBIG ("File too large"),
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


def write_plugin(folder: Path) -> Path:
    path = Path(folder) / "trigram_plugin.py"
    path.write_text(PLUGIN)
    return path


def load_plugin(plugin_file: Path, name: str = "trigram_plugin_faults"):
    """The plug-in file as a module (``Trigram``, ``PaperWordPairs``)."""
    spec = importlib.util.spec_from_file_location(name, plugin_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class Workload:
    """STS-B dev examples ``[start:limit]``, paper word pairs, trigram provider, batches of ``batch``."""

    plugin_file: Path
    limit: int = 300
    start: int = 0
    batch: int = 300

    @functools.cached_property
    def module(self):
        return load_plugin(self.plugin_file)

    @functools.cached_property
    def builder(self):
        return self.module.PaperWordPairs(self.module.Trigram())

    @property
    def fingerprint(self) -> str:
        return self.builder.provider.fingerprint

    @functools.cached_property
    def examples(self) -> list:
        return read_dataset(stsb_path("dev"), limit=self.limit)[self.start:]

    @functools.cached_property
    def keys(self) -> list[tuple[str, str]]:
        """The stored keys (symmetric: folded), in the order precompute plans them."""
        return canonical_pairs(collect_pairs(self.examples, self.builder)[0])

    def script(self, cache: Path, *, pause: float = 0.0, setup: str = "") -> str:
        return CHILD.format(plugin=str(self.plugin_file), dataset=str(stsb_path("dev")), limit=self.limit,
                            start=self.start, cache=str(cache), batch=self.batch, pause=pause, setup=setup)

    def run(self, cache: Path, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", self.script(cache, **kw)], capture_output=True,
                              text=True, timeout=600)

    def precompute(self, cache: Path, batch: int | None = None):
        """In this process (the rerun after a fault, or a reference)."""
        return precompute(self.examples, self.builder, PriorCache(cache), batch_size=batch or self.batch,
                          progress=False)

    def reference(self, folder: Path) -> dict:
        """Values of an uninterrupted run (one batch: batch size does not change values)."""
        path = Path(folder) / f"reference-{self.start}-{self.limit}.duckdb"
        if not path.exists():
            self.precompute(path, batch=max(1, len(self.keys)))
        return stored(path, self.fingerprint)

    def plan(self, path: Path) -> tuple[int, list[list[tuple[str, str]]]]:
        """(keys stored now, the batches a run started now will commit, in order)."""
        todo = PriorCache(path).missing(self.fingerprint, self.keys) if path.exists() else self.keys
        batches = [[p for block in batch for p in block.pairs()] for batch in plan_batches(todo, self.batch)]
        return len(self.keys) - len(todo), batches


def whole_counts(before: int, batches: list[list]) -> set[int]:
    """Pair counts a file may hold after a run that starts with ``before`` keys commits some batches."""
    return {before + int(s) for s in np.cumsum([0, *[len(b) for b in batches]])}


def stored(path: Path, fingerprint: str) -> dict:
    return PriorCache(path, read_only=True).load(fingerprint).to_dict()


def same_values(a: dict, b: dict) -> bool:
    keys = sorted(a)
    return keys == sorted(b) and nan_equal(np.array([a[k] for k in keys]), np.array([b[k] for k in keys]))


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def duplicate_keys(path: Path) -> int:
    """Keys stored more than once (must be 0)."""
    with PriorCache(path, read_only=True).connect() as con:
        return con.execute('SELECT count(*) FROM (SELECT 1 FROM pairs GROUP BY fingerprint, "left", "right" '
                           "HAVING count(*) > 1)").fetchall()[0][0]


def file_state(path: Path, fingerprint: str) -> tuple[str, int | None]:
    """('absent' | 'no schema yet' | 'ok', pair count) read-only; CacheError for anything else."""
    if not path.exists():
        return "absent", 0
    try:
        return "ok", PriorCache(path, read_only=True, timeout=30).count(fingerprint)
    except CacheError as exc:
        if "not yet a prior cache" in str(exc):  # killed between creating the file and its schema
            return "no schema yet", 0
        raise


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
    for line in proc.stdout.read().splitlines():  # what it printed before the kill landed
        if line.strip():
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
# ---------------------------------------------------------------------------
READ_ONLY_CHILD = """
import json, os, sys
import duckdb, pyarrow, numpy as np
import importlib.util
spec = importlib.util.spec_from_file_location("trigram_plugin", {plugin!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from priorkit.cache import PriorCache
from priorkit.errors import PriorkitError
from priorkit.precompute import precompute
provider = mod.Trigram(); provider.describe(); provider.data_checksum()
builder = mod.PaperWordPairs(provider)
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


# ---------------------------------------------------------------------------
# concurrent readers and writers
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ReaderTrial:
    snapshots: list[int]  # pair counts the reader saw, in order
    failures: list[str] = dataclasses.field(default_factory=list)


def reader_trial(work: Workload, folder: Path, pause: float = 0.1) -> ReaderTrial:
    """A reader loads every stored value while another process commits batches: each
    snapshot must be exactly the first k batches, with the final values."""
    folder = Path(folder)
    path = folder / f"read-while-write-{time.monotonic_ns()}.duckdb"
    reference = work.reference(folder)
    PriorCache(path).check()  # the schema exists before the writer starts
    _, batches = work.plan(path)
    prefix: dict[int, set] = {0: set()}
    acc: set = set()
    for b in batches:
        acc |= set(b)
        prefix[len(acc)] = set(acc)
    proc = subprocess.Popen([sys.executable, "-c", work.script(path, pause=pause)], stdout=subprocess.DEVNULL)
    reader = PriorCache(path, read_only=True, timeout=60)
    trial = ReaderTrial([])
    fp = work.fingerprint
    while True:
        running = proc.poll() is None
        snap = reader.load(fp).to_dict()
        keys = {(a, b) for a, b in snap if a <= b}
        trial.snapshots.append(len(keys))
        if len(keys) not in prefix or keys != prefix[len(keys)]:
            trial.failures.append(f"a snapshot of {len(keys)} keys is not a prefix of whole batches")
        elif not same_values(snap, {k: reference[k] for k in snap}):
            trial.failures.append(f"a snapshot of {len(keys)} keys has values that differ from the final ones")
        if not running:
            break
        time.sleep(0.01)
    if proc.returncode != 0:
        trial.failures.append(f"the writer exited with {proc.returncode}")
    if trial.snapshots[-1] != len(work.keys):
        trial.failures.append(f"the last snapshot holds {trial.snapshots[-1]} of {len(work.keys)} keys")
    if len(set(trial.snapshots)) < 3:
        trial.failures.append("the reader never saw the writer in the middle of its run")
    return trial


@dataclasses.dataclass
class WritersTrial:
    counts: tuple[int, int]  # pairs stored, pairs of a one-writer run
    failures: list[str] = dataclasses.field(default_factory=list)


def writers_trial(first: Workload, second: Workload, union: Workload, folder: Path) -> WritersTrial:
    """Two precomputes on overlapping data, at the same time, on one file: nothing lost or doubled."""
    folder = Path(folder)
    path = folder / f"two-writers-{time.monotonic_ns()}.duckdb"
    PriorCache(path).check()
    procs = [subprocess.Popen([sys.executable, "-c", w.script(path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for w in (first, second)]
    failures = []
    for p in procs:
        if p.wait(timeout=600) != 0:
            failures.append(f"a writer failed: {p.stderr.read()[-500:]}")
    reference = union.reference(folder)
    got = stored(path, union.fingerprint)
    trial = WritersTrial((len(got), len(reference)), failures)
    if not same_values(got, reference):
        trial.failures.append(f"{len(got)} stored values vs {len(reference)} from one writer, or values differ")
    if duplicate_keys(path):
        trial.failures.append("keys stored twice")
    return trial


# ---------------------------------------------------------------------------
# files at the cache path that are not (whole) caches
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ForeignCase:
    name: str
    outcome: str  # "refused" | "opened"
    message: str
    unchanged: bool
    failures: list[str] = dataclasses.field(default_factory=list)


def foreign_cases(work: Workload, folder: Path) -> list[ForeignCase]:
    """Each kind of file priorkit may find at the cache path, opened writable and read-only.

    The main file must be refused and left byte-identical unless it is a whole
    cache -- or empty: the leftover of a creation killed in place, which a read-only
    open describes and a writable one replaces (creation.py).  WAL files next to a whole cache are DuckDB's business: a torn or
    garbage WAL holds no committed transaction and DuckDB drops it; a WAL of
    another database is refused.
    """
    import duckdb

    folder = Path(folder) / "foreign"
    folder.mkdir(exist_ok=True)
    good = folder / "good.duckdb"
    if not good.exists():
        work.precompute(good)
    data = good.read_bytes()
    other = folder / "other-app.duckdb"
    if not other.exists():
        con = duckdb.connect(str(other))
        con.execute("CREATE TABLE users (id INTEGER, name VARCHAR)")
        con.execute("INSERT INTO users VALUES (1, 'ada')")
        con.close()
    # a real WAL of the cache: one committed but not checkpointed transaction
    walsrc = folder / "walsrc.duckdb"
    shutil.copy(good, walsrc)
    con = duckdb.connect(str(walsrc))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("INSERT INTO pairs SELECT 'x-0', 'q', range::VARCHAR, 0.5 FROM range(2000)")
    con.close()
    own_wal = Path(f"{walsrc}.wal").read_bytes()
    otherwal_db = folder / "otherwal.duckdb"
    con = duckdb.connect(str(otherwal_db))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("CREATE TABLE z (i INTEGER)")
    con.execute("INSERT INTO z VALUES (1)")
    con.close()
    foreign_wal = Path(f"{otherwal_db}.wal").read_bytes()
    rng = np.random.default_rng(0)
    mains = {
        "empty file": b"",
        "text file": b"hello, world\n" * 50,
        "zeros (20 kB)": b"\0" * 20000,
        "random bytes (20 kB)": rng.integers(0, 256, 20000, dtype=np.uint8).tobytes(),
        "cache cut at 100 B": data[:100],
        "cache cut at 8 KiB": data[:8192],
        "cache cut in half": data[: len(data) // 2],
        "cache minus its last 4 KiB": data[:-4096],
        "another application's DuckDB": other.read_bytes(),
    }
    wals = {
        "cache + torn WAL (half of a committed one)": own_wal[: len(own_wal) // 2],
        "cache + garbage WAL": rng.integers(0, 256, 5000, dtype=np.uint8).tobytes(),
        "cache + WAL of another database": foreign_wal,
    }
    out = []
    for name, content in {**mains, **wals}.items():
        path = folder / f"case-{len(out)}.duckdb"
        wal = Path(f"{path}.wal")
        if name in wals:
            path.write_bytes(data)
            wal.write_bytes(content)
        else:
            path.write_bytes(content)
        main_before = path.read_bytes()
        msgs, outcomes = [], []
        for ro in (True, False):  # read-only first: it must never change anything
            try:
                c = PriorCache(path, read_only=ro, timeout=5)
                if ro:
                    c.count()
                else:
                    c.put(work.builder.provider, [("new", "pair")], np.array([0.5], np.float32))
                outcomes.append("opened")
            except CacheError as exc:
                outcomes.append("refused")
                msgs.append(" ".join(str(exc).split()))
        case = ForeignCase(name, "/".join(outcomes), msgs[0] if msgs else "", path.read_bytes() == main_before)
        if name == "empty file":  # the leftover of a creation killed in place: read-only says so, a writer replaces it
            if outcomes != ["refused", "opened"]:
                case.failures.append(f"expected refused read-only, then replaced ({case.outcome})")
            elif "killed while creating" not in case.message:
                case.failures.append(f"the read-only message does not say what the file is: {case.message}")
        elif name in mains or name.endswith("another database"):
            if outcomes != ["refused", "refused"]:
                case.failures.append(f"opened ({case.outcome})")
            if not case.unchanged:
                case.failures.append("the file was changed")
        else:  # a torn/garbage WAL: the committed cache must come back whole, then take writes
            if outcomes != ["opened", "opened"]:
                case.failures.append(f"refused: {case.message}")
            elif not same_values(stored(path, work.fingerprint), {**stored(good, work.fingerprint),
                                                                  ("new", "pair"): np.float32(0.5),
                                                                  ("pair", "new"): np.float32(0.5)}):
                case.failures.append("the committed values did not come back exactly")
        out.append(case)
    return out


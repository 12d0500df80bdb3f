"""Contention and foreign files: readers and writers at once, files at the cache path that are not whole caches.

Like :mod:`faults`, a trial never asserts: it returns what it saw and a list of
``failures``.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from priorkit.cache import PriorCache
from priorkit.errors import CacheError

from .workload import Workload, duplicate_keys, same_values, stored


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
    open describes and a writable one replaces (priorkit/cache/creation.py).  WAL files next to a whole cache are DuckDB's business: a torn or
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

"""Faults in the window where a cache file is created, shared by ``benchmarks/cache_faults.py``
(``--only creation``) and ``tests/test_cache_creation.py``.

Three kinds of creator are trialled, each a real child process:

- ``priorkit``: a ``priorkit.precompute`` run on a new file (``_faults.CHILD``), which
  creates the file through a temporary file in the same folder and ``os.link``;
- ``in place``: what older priorkit versions did (and what DuckDB does by itself):
  ``duckdb.connect(PATH)`` creates the file where it will stay, then the schema
  is created in it.  Its leftovers (0 B, 4 KiB, 8 KiB, header-only files) are what
  the current version must recognise and replace;
- ``in place, slow disk``: the same, with DuckDB's three header blocks written 50 ms
  apart under its lock, as on a busy shared file system, so that trials find the
  0, 4 and 8 KiB files the issue reports.

Both trials are timed by the file's appearance: the parent lists the folder in
a tight loop and acts the moment the watched name exists (``temp``: the creating
file, ``final``: the cache path), optionally after a random extra delay.

A trial never asserts; it returns what it saw and its ``failures`` (see faults.py).
"""
from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from priorkit.cache import PriorCache
from priorkit.errors import CacheError

from .workload import Workload, duplicate_keys, same_values, stored

#: what older versions did: DuckDB creates the file in place, then the schema goes in
IN_PLACE = """
import sys, duckdb
from priorkit.cache.schema import migrate
print("start", flush=True)
con = duckdb.connect({cache!r})
migrate(con, 0)
con.close()
print("done", flush=True)
"""

#: the same on a slow (shared, network) file system: DuckDB's three 4 KiB headers land one
#: every ``step`` seconds under its POSIX lock, so a kill or a stop finds 0, 4 or 8 KiB
#: (the leftovers the issue saw); then DuckDB takes over as above
IN_PLACE_SLOW = """
import fcntl, os, sys, tempfile, time, duckdb
from priorkit.cache.schema import migrate
scratch = os.path.join(tempfile.mkdtemp(), "h.duckdb")
duckdb.connect(scratch).close()
headers = open(scratch, "rb").read()[:3 * 4096]
print("start", flush=True)
fd = os.open({cache!r}, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX)
for i in range(3):
    time.sleep({step})
    os.pwrite(fd, headers[i * 4096:(i + 1) * 4096], i * 4096)
os.close(fd)
con = duckdb.connect({cache!r})
migrate(con, 0)
con.close()
print("done", flush=True)
"""

#: a reader of the cache: prints the pair count, or the error on one line
READER = """
import sys
from priorkit.cache import PriorCache
from priorkit.errors import PriorkitError
try:
    n = len(PriorCache({cache!r}, read_only=True, timeout={timeout}).load({fp!r}))
except PriorkitError as exc:
    print("error", type(exc).__name__, str(exc), flush=True)
    sys.exit(3)
print("done", n, flush=True)
"""

#: words no message about a file that a live process holds may contain
_ADVICE = ("delete", "move it away", "remove it", "rm ")


def _creating(folder: Path, path: Path) -> list[str]:
    prefix = f".{path.name}.creating-"
    return [n for n in os.listdir(folder) if n.startswith(prefix) and not n.endswith(".wal")]


def _script(work: Workload, path: Path, creator: str) -> str:
    if creator == "priorkit":
        return work.script(path)
    if creator == "in place, slow disk":
        return IN_PLACE_SLOW.format(cache=str(path), step=0.05)
    return IN_PLACE.format(cache=str(path))


def _start_and_wait_for(script: str, path: Path, watch: str, extra: float,
                        limit: float = 120.0) -> tuple[subprocess.Popen, str]:
    """Start ``script``; return once the watched file exists (plus ``extra`` seconds).

    Returns the process and what was there at that moment ('temp', 'final',
    'nothing: the run ended first')."""
    folder = path.parent
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + limit
    seen = ""
    while time.monotonic() < deadline:
        if watch == "temp" and _creating(folder, path):
            seen = "temp"
        elif path.exists():
            seen = "final"
        elif proc.poll() is not None:
            return proc, "nothing: the run ended first"
        if seen:
            break
    if extra:
        time.sleep(extra)
    return proc, seen or "nothing: timed out"


def _stage(path: Path) -> str:
    """What lies at the path right now: absent, SIZE bytes."""
    try:
        return f"{path.stat().st_size} bytes"
    except FileNotFoundError:
        return "absent"


def _check_final(work: Workload, folder: Path, path: Path, trial) -> None:
    """The file holds exactly the uninterrupted run's values, no key twice, no creation file left."""
    try:
        if not same_values(stored(path, work.fingerprint), work.reference(folder)):
            trial.failures.append("values differ from an uninterrupted run")
        if duplicate_keys(path):
            trial.failures.append("keys stored twice")
    except CacheError as exc:
        trial.failures.append(f"the final file does not open: {exc}")
    left = _creating(folder, path)
    if left:
        trial.failures.append(f"creation files left behind: {left}")


# ---------------------------------------------------------------------------
# kill -9 timed by the file's appearance
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class CreationKill:
    creator: str  # "priorkit" | "in place"
    watch: str  # "temp" | "final"
    extra: float  # seconds after the file appeared
    seen: str = ""  # what existed when the kill was sent
    after: str = ""  # the file at the path after the kill (absent / N bytes)
    rerun: str = ""  # the rerun's notice lines on stderr, and its outcome
    failures: list[str] = dataclasses.field(default_factory=list)


def creation_kill_trial(work: Workload, folder: Path, rng: random.Random, creator: str = "priorkit",
                        watch: str = "temp", max_extra: float = 0.0) -> CreationKill:
    """SIGKILL a creator the moment its file appears (plus 0..``max_extra`` s), then rerun a
    priorkit precompute with no human step in between.

    After the kill the path must be absent or a readable cache -- or, for an in-place
    creator, a leftover.  The rerun must finish, print one 'replaced' line exactly when
    it replaced a leftover, and end with the uninterrupted run's values.
    """
    folder = Path(folder)
    path = folder / f"born-{rng.getrandbits(32):08x}.duckdb"
    trial = CreationKill(creator, watch, round(rng.uniform(0, max_extra), 4) if max_extra else 0.0)
    proc, trial.seen = _start_and_wait_for(_script(work, path, creator), path, watch, trial.extra)
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    if trial.seen.startswith("nothing"):
        trial.failures.append(f"the kill was not timed: {trial.seen}")
    trial.after = _stage(path)
    leftover = False
    if path.exists():
        try:
            PriorCache(path, read_only=True, timeout=5).count()
        except CacheError as exc:
            leftover = True
            if creator == "priorkit":
                trial.failures.append(f"a kill of a priorkit creation left a file that does not open: {exc}")
    rerun = work.run(path)
    notices = [ln for ln in rerun.stderr.splitlines() if ln.startswith("priorkit: replaced")]
    lines = rerun.stdout.strip().splitlines()
    trial.rerun = (" | ".join(notices) + " -> " if notices else "") + (lines[-1] if lines else rerun.stderr[-300:])
    if rerun.returncode != 0:
        trial.failures.append(f"the rerun failed (exit {rerun.returncode}): {trial.rerun}")
        return trial
    if leftover and trial.after in ("0 bytes", "4096 bytes", "8192 bytes") and len(notices) != 1:
        trial.failures.append(f"a leftover of {trial.after} was replaced without one notice line: {notices}")
    if not leftover and notices:
        trial.failures.append(f"a notice without a leftover: {notices}")
    _check_final(work, folder, path, trial)
    return trial


# ---------------------------------------------------------------------------
# a creator stopped (SIGSTOP) in the window, with a writer, a reader and `cache info`
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class PausedCreator:
    creator: str
    watch: str
    extra: float
    seen: str = ""
    at_pause: str = ""  # the file at the path when the others started
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)  # writer/reader/info -> outcome
    busy: int = 0  # of the three, how many answered with a busy message
    failures: list[str] = dataclasses.field(default_factory=list)


def _judge(name: str, proc: subprocess.CompletedProcess, holder: int, trial: PausedCreator) -> None:
    """Success, or exactly one line saying the cache is busy and naming the stopped creator."""
    out = (proc.stdout.strip().splitlines() or [""])[-1]
    err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    if proc.returncode == 0:
        trial.outcomes[name] = out[:200] or "ok"
        return
    message = err[-1] if err else out
    if name != "info":  # the python children print "error TYPE MESSAGE" on stdout
        message = out
    trial.outcomes[name] = message[:400]
    low = message.lower()
    if not ("busy" in low or "locked by" in low):
        trial.failures.append(f"{name}: not a busy message: {message[:300]}")
        return
    trial.busy += 1
    if f"PID {holder}" not in message:
        trial.failures.append(f"{name}: the busy message does not name the creator (PID {holder}): {message[:300]}")
    if any(word in low for word in _ADVICE):
        trial.failures.append(f"{name}: the busy message advises removing a file a live process holds")
    if name == "info" and len(err) != 1:
        trial.failures.append(f"info: {len(err)} lines on stderr, not one: {err}")


def paused_creator_trial(work: Workload, folder: Path, rng: random.Random, creator: str = "priorkit",
                         watch: str = "temp", max_extra: float = 0.0, timeout: float = 1.0) -> PausedCreator:
    """Stop a creator (SIGSTOP) the moment its file appears (plus 0..``max_extra`` s); while it
    is stopped, run a second precompute, a read-only ``load`` and ``priorkit cache info``,
    each with ``timeout``; then let the creator go on.

    Each of the three must succeed or answer with one busy line naming the stopped
    process; none may call the file damaged or advise deleting it.  Afterwards the
    creator must finish, and a rerun must end with the uninterrupted values.
    """
    folder = Path(folder)
    path = folder / f"paused-{rng.getrandbits(32):08x}.duckdb"
    trial = PausedCreator(creator, watch, round(rng.uniform(0, max_extra), 4) if max_extra else 0.0)
    proc, trial.seen = _start_and_wait_for(_script(work, path, creator), path, watch, trial.extra)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass
    try:
        trial.at_pause = _stage(path)
        if trial.seen.startswith("nothing"):
            trial.failures.append(f"the pause was not timed: {trial.seen}")
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        writer = work.script(path).replace(f"PriorCache({str(path)!r})",
                                           f"PriorCache({str(path)!r}, timeout={timeout})")
        others = {
            "writer": subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=env),
            "reader": subprocess.Popen([sys.executable, "-c", READER.format(cache=str(path), timeout=timeout,
                                                                             fp=work.fingerprint)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env),
            "info": subprocess.Popen([sys.executable, "-m", "priorkit", "cache", "info", "--cache", str(path),
                                      "--timeout", str(timeout)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env),
        }
        for name, p in others.items():
            try:
                out, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                trial.failures.append(f"{name}: still waiting after 120 s")
            _judge(name, subprocess.CompletedProcess(p.args, p.returncode, out, err), proc.pid, trial)
    finally:
        with_cont = proc.poll() is None
        if with_cont:
            os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    if proc.returncode != 0:
        trial.failures.append(f"the creator failed after it went on (exit {proc.returncode}): "
                              f"{(out.strip().splitlines() or [''])[-1]} {err.strip()[-300:]}")
    try:
        work.precompute(path)  # whatever the writer and the creator left, a rerun completes it
    except CacheError as exc:
        trial.failures.append(f"the rerun failed: {exc}")
        return trial
    _check_final(work, folder, path, trial)
    return trial


# ---------------------------------------------------------------------------
# what creating through a temporary file costs
# ---------------------------------------------------------------------------
def creation_cost(folder: Path, n: int = 10) -> dict[str, float]:
    """Median milliseconds to create a new cache: priorkit's way (temporary file, schema,
    checkpoint, fsync, ``os.link``) and in place (DuckDB creates the file at the path, then
    the schema and a checkpoint), alternating, ``n`` of each."""
    import statistics

    import duckdb

    from priorkit.cache.schema import migrate

    folder = Path(folder) / "creation-cost"
    folder.mkdir(exist_ok=True)
    times: dict[str, list[float]] = {"temporary file + link": [], "in place": []}
    for i in range(n):
        cache = PriorCache(folder / f"linked-{i}.duckdb")  # the constructor creates nothing
        t = time.perf_counter()
        cache._create()
        times["temporary file + link"].append(time.perf_counter() - t)
        t = time.perf_counter()
        con = duckdb.connect(str(folder / f"in-place-{i}.duckdb"))
        migrate(con, 0)
        con.execute("CHECKPOINT")
        con.close()
        times["in place"].append(time.perf_counter() - t)
    return {k: round(1000 * statistics.median(v), 1) for k, v in times.items()}

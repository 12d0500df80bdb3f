"""The window in which a cache file is created (issue 14).

A kill at any moment leaves no file or a whole one; a file another process is
creating is waited for and then reported busy, naming that process; the
leftovers of an in-place creation (older versions, or DuckDB itself) are
replaced with one line saying so; a second connection with another
configuration in this process is named.  Real child processes, real DuckDB
files, real signals; the trials are shared with benchmarks/cache_faults.py,
which runs many more of them (counts in docs/reliability.md).
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from priorkit.cache import PriorCache
from priorkit.errors import CacheError

from support import creation_faults as C  # shared with benchmarks/cache_faults.py
from support import workload as _faults


@pytest.fixture(scope="module")
def plugin_file(tmp_path_factory) -> Path:
    return _faults.write_plugin(tmp_path_factory.mktemp("plugins"))


@pytest.fixture(scope="module")
def provider(plugin_file):
    return _faults.load_plugin(plugin_file, "trigram_plugin_for_creation_tests").Trigram()


def _empty_duckdb_headers(folder: Path) -> bytes:
    """The 12 KiB DuckDB writes first when it creates a file in place (main header + two
    database headers of an empty database); a kill during creation leaves a prefix of it."""
    import duckdb

    fresh = folder / "fresh-by-duckdb.duckdb"
    duckdb.connect(str(fresh)).close()
    return fresh.read_bytes()[:3 * 4096]


def _holder(path: Path) -> subprocess.Popen:
    """A live process holding a POSIX write lock on ``path``, as DuckDB does while it creates a file."""
    code = ("import fcntl, sys, time\n"
            f"fh = open({str(path)!r}, 'r+b'); fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
            "print('locked', flush=True); time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


# ---- leftovers of an in-place creation ---------------------------------------------------
@pytest.mark.parametrize("size", [0, 4096, 8192])
def test_leftover_of_an_in_place_creation_is_replaced_with_one_line(tmp_path, provider, capsys, size):
    path = tmp_path / "c.duckdb"
    left = _empty_duckdb_headers(tmp_path)[:size]
    path.write_bytes(left)
    with pytest.raises(CacheError, match=r"no prior cache at .* yet: .*killed while creating.*replaces it"):
        PriorCache(path, read_only=True, timeout=1).count()
    assert path.read_bytes() == left  # a read-only open changes nothing
    cache = PriorCache(path, timeout=1)
    assert cache.put(provider, [("cat", "hat")], np.array([0.5], np.float32)) == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith(f"priorkit: replaced {path}: it held ")
    assert f"({size:,} bytes)" in lines[0] and "no process had it open" in lines[0]
    assert PriorCache(path, read_only=True).count(provider.fingerprint) == 1
    assert not [p for p in os.listdir(tmp_path) if ".creating-" in p]


def test_a_leftover_stays_locked_while_it_is_replaced(tmp_path, capsys):
    """Another process looking while the new file is being built sees this process's lock on
    the leftover, so two processes never both replace it (an earlier version dropped the lock
    by reading the file through a second descriptor)."""
    path = tmp_path / "c.duckdb"
    path.write_bytes(b"")
    cache = PriorCache(path)
    build = cache._init_file
    seen = []

    def init(tmp):
        probe = ("from pathlib import Path; from priorkit.cache.creation import lock_holder; "
                 f"print(lock_holder(Path({str(path)!r})))")
        seen.append(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip())
        build(tmp)

    cache._init_file = init
    cache.check()
    assert seen == [str(os.getpid())]
    assert "priorkit: replaced" in capsys.readouterr().err
    assert PriorCache(path, read_only=True).count() == 0


def test_leftover_a_live_process_holds_is_busy_not_damaged(tmp_path):
    """A 4 KiB DuckDB header locked by a live process: a creation in progress.  Writers and
    readers wait up to their timeout, then name the process; the file is left alone."""
    path = tmp_path / "c.duckdb"
    path.write_bytes(_empty_duckdb_headers(tmp_path)[:4096])
    before = path.read_bytes()
    proc = _holder(path)
    try:
        for read_only in (False, True):
            with pytest.raises(CacheError) as err:
                PriorCache(path, read_only=read_only, timeout=0.3).count()
            msg = str(err.value)
            assert "is busy: it is being created by" in msg and f"PID {proc.pid}" in msg and "waited 0.3 s" in msg
            assert "\n" not in msg and "delete" not in msg.lower() and "move it away" not in msg.lower()
    finally:
        proc.kill()
        proc.wait()
    assert path.read_bytes() == before


def test_files_that_only_look_short_are_still_refused_unchanged(tmp_path):
    """Not leftovers: a real cache cut at 8 KiB (its header points at data), 4 KiB of text,
    a DuckDB header of 100 bytes."""
    good = tmp_path / "good.duckdb"
    PriorCache(good).check()
    data = good.read_bytes()
    for name, content in {"cut": data[:8192], "text": b"x" * 4096, "short": data[:100]}.items():
        path = tmp_path / f"{name}.duckdb"
        path.write_bytes(content)
        for read_only in (True, False):
            with pytest.raises(CacheError, match="truncated|not a DuckDB file"):
                PriorCache(path, read_only=read_only, timeout=0.3).count()
        assert path.read_bytes() == content


def test_stale_creation_file_of_a_dead_process_is_removed(tmp_path):
    import socket

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    host = socket.gethostname().replace("-", "_")
    stale = tmp_path / f".c.duckdb.creating-{host}-{dead}-abcdef"
    stale.write_bytes(b"half a database")
    Path(f"{stale}.wal").write_bytes(b"x")
    PriorCache(tmp_path / "c.duckdb").check()
    assert sorted(os.listdir(tmp_path)) == ["c.duckdb"]
    # killed between linking the new file and removing its temporary name: a second link
    # to the cache, dropped by the next writable open (the cache itself is untouched)
    os.link(tmp_path / "c.duckdb", stale)
    PriorCache(tmp_path / "c.duckdb", read_only=True).count()  # a reader leaves it
    assert stale.exists()
    assert PriorCache(tmp_path / "c.duckdb").count() == 0
    assert sorted(os.listdir(tmp_path)) == ["c.duckdb"]


def test_reader_waits_for_a_live_creator_then_names_it(tmp_path):
    """No file yet, but a live process's creation file: a reader waits up to its timeout and
    then says the cache is busy, naming the creator; once that process is gone (its
    creation file stale), the reader says there is no cache."""
    import socket

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    host = socket.gethostname().replace("-", "_")
    (tmp_path / f".c.duckdb.creating-{host}-{proc.pid}-abcdef").write_bytes(b"")
    try:
        reader = PriorCache(tmp_path / "c.duckdb", read_only=True, timeout=0.3)  # no error yet
        with pytest.raises(CacheError) as err:
            reader.count()
        msg = str(err.value)
        assert "is busy: it is being created by" in msg and f"PID {proc.pid}" in msg and f"on {host}" in msg
        assert "waited 0.3 s" in msg and "\n" not in msg and "delete" not in msg.lower()
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(CacheError, match="no prior cache at .*priorkit precompute"):
        PriorCache(tmp_path / "c.duckdb", read_only=True, timeout=0.3).count()


def test_simultaneous_creators_share_one_whole_file(tmp_path, provider):
    path = tmp_path / "c.duckdb"
    code = (f"from priorkit.cache import PriorCache\nPriorCache({str(path)!r}).check()\nprint('ok')")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in results]
    assert PriorCache(path, read_only=True).count() == 0
    assert sorted(os.listdir(tmp_path)) == ["c.duckdb"]


# ---- kills and pauses timed by the file's appearance ---------------------------------------
@pytest.mark.parametrize("creator,watch", [("priorkit", "temp"), ("priorkit", "final"), ("in place", "final")])
def test_kill_the_moment_the_file_appears_then_rerun(tmp_path, plugin_file, creator, watch):
    work = _faults.Workload(plugin_file, limit=120, batch=300)
    trial = C.creation_kill_trial(work, tmp_path, random.Random(3), creator=creator, watch=watch)
    assert trial.failures == [], trial
    assert trial.seen == watch  # the kill was timed by that file (the trial checks what it left)
    if creator == "priorkit" and watch == "final":
        assert trial.after != "absent"


@pytest.mark.parametrize("creator,watch", [("priorkit", "temp"), ("in place", "final")])
def test_paused_creator_with_a_writer_a_reader_and_cache_info(tmp_path, plugin_file, creator, watch):
    work = _faults.Workload(plugin_file, limit=120, batch=300)
    trial = C.paused_creator_trial(work, tmp_path, random.Random(4), creator=creator, watch=watch, timeout=1.0)
    assert trial.failures == [], trial
    if creator == "in place":  # stopped while DuckDB holds the half-created file: all three wait, then busy
        assert trial.busy == 3, trial


# ---- a second connection in this process -------------------------------------------------------
def test_another_thread_opening_the_cache_keeps_this_ones_lock(tmp_path):
    """Closing any descriptor of a file drops all of the process's POSIX locks on it, DuckDB's
    too.  A thread that constructs or opens the cache while another thread of the process
    holds a write connection must not read the file then (it waits for the path lock), or a
    second process gets in as a writer."""
    import threading
    import time

    path = tmp_path / "c.duckdb"
    PriorCache(path).check()
    probe = ("import duckdb\ntry:\n    duckdb.connect(%r).close(); print('got in')\n"
             "except duckdb.Error: print('refused')" % str(path))
    cache = PriorCache(path)
    with cache.connect(write=True):
        other = threading.Thread(target=lambda: PriorCache(path, read_only=False).count())
        other.start()
        time.sleep(0.3)  # the other thread's constructor and connect run now (or wait)
        second = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
    other.join(timeout=60)
    assert second == "refused"



def test_second_connection_with_another_configuration_is_named(tmp_path):
    import duckdb

    path = tmp_path / "c.duckdb"
    PriorCache(path).check()
    raw = duckdb.connect(str(path))  # read-write, outside priorkit
    try:
        with pytest.raises(CacheError, match=r"read-only: this process already holds it .*outside priorkit"
                                             r".*duckdb\.connect.*Close that connection"):
            PriorCache(path, read_only=True).count()
    finally:
        raw.close()
    cache = PriorCache(path)
    with cache.connect(write=True):
        with pytest.raises(CacheError, match=r"through PriorCache\('.*c\.duckdb', read_only=False\) \(a read-write connection\)"):
            PriorCache(path, read_only=True).count()
    assert PriorCache(path, read_only=True).count() == 0

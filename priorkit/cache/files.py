"""The cache file itself: path checks, connections, locking, DuckDB errors in our words.

Concurrency model (see docs/cache.md):

- DuckDB lets one process write *or* many processes read a file; any open
  connection holds an OS lock.  priorkit therefore never keeps a connection
  open: every operation opens one, does its work in one transaction and closes
  it in ``finally``.  A second process that finds the file locked retries until
  ``timeout`` and then raises :class:`CacheError` naming the process (PID and
  command line) that holds the lock.
- Inside one process, connections to the same file are serialised by a lock,
  so threads never clash over DuckDB's per-process configuration.

A file at the cache path that is not a priorkit cache (not DuckDB, truncated, or
another application's database) raises :class:`CacheError` and is never
modified.  :class:`CacheFile` holds all of this; :class:`~priorkit.cache.PriorCache`
adds the reads and writes.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import CacheError
from . import creation
from .schema import SCHEMA_VERSION, MigrateFirst, migrate, stored_version

#: seconds a connection waits for another process's lock before giving up
DEFAULT_TIMEOUT = 60.0
#: DuckDB's file header: 3 x 4 KiB (main header + two database headers)
_HEADER_BYTES = 3 * 4096
_MAGIC = b"DUCK"  # at byte offset 8 of every DuckDB file

Pair = tuple[str, str]


def default_cache_path() -> Path:
    """``priorkit_home()/cache.duckdb`` (``$PRIORKIT_CACHE`` overrides it)."""
    env = os.environ.get("PRIORKIT_CACHE")
    if env:
        return Path(env).expanduser()
    from ..resources import priorkit_home

    return priorkit_home() / "cache.duckdb"


_WRITABLE_HINT = ("put the cache in a writable folder (--cache FILE or $PRIORKIT_CACHE), or "
                  "read it without writing (PriorCache(path, read_only=True), which needs "
                  "no write access)")
_PATH_LOCKS: dict[str, threading.RLock] = {}
_PATH_LOCKS_GUARD = threading.Lock()
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


def _path_lock(path: Path) -> threading.RLock:
    key = os.path.realpath(path)
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(key, threading.RLock())


def _is_lock_error(exc: Exception) -> bool:
    msg = str(exc)
    return "Could not set lock" in msg or "Conflicting lock" in msg



def _first(cursor) -> tuple | None:
    """First row of a result, consuming it (DuckDB 2 refuses new work on a half-read result)."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


class CacheFile:
    """A prior cache file: checked before DuckDB touches it, opened briefly, locked politely.

    :param path: the file (default ``default_cache_path()``); created with its
        parent folder on first write.
    :param read_only: open for reading only (many processes at once; the file
        must exist).
    :param timeout: seconds to wait for another process's lock before raising
        :class:`CacheError`.  0 fails at once.
    """

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        self.read_only = bool(read_only)
        self.timeout = float(timeout)
        self._swept = False  # stale creation files removed (writable caches, first connection)
        with _path_lock(self.path):  # see connect(): never read the file while this process has it open
            self._check_file(wait=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, read_only={self.read_only})"

    # ---- files and connections ----------------------------------------
    def _check_file(self, wait: bool = True) -> None:
        """Refuse anything at the path that is not a DuckDB file, before DuckDB touches it.

        With ``wait`` (every connection), a file another process is creating is
        waited for like a lock, and the leftover of a creation killed in place is
        replaced by a writable cache (creation.py); without it (the constructor)
        such files are left for the first connection to handle.
        """
        p = self.path
        if p.is_dir():
            raise CacheError(f"cache path {p} is a folder; pass a file path such as {p / 'cache.duckdb'}")
        if not p.exists():
            if self.read_only:
                if wait:
                    self._wait_for_creator()
                elif creation.live_creator(p) is None:
                    raise self._no_cache()
            return
        try:
            with open(p, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise CacheError(f"cannot read cache file {p}: {exc}") from exc
        size = p.stat().st_size
        if len(head) >= 12 and head[8:12] == _MAGIC and size >= _HEADER_BYTES:
            return
        if creation.leftover_shape(p) is not None:
            if wait:
                self._settle_leftover()
            return
        holder = creation.lock_holder(p)
        if holder is not None:  # never advise moving a file a live process holds
            raise CacheError(
                f"{p} is not a prior cache priorkit can read ({size} bytes) and {self._who(holder)} "
                "has it open; priorkit will not touch it. Pass another --cache path"
            )
        if len(head) < 12 or head[8:12] != _MAGIC:
            raise CacheError(
                f"{p} is not a DuckDB file (starts with {head[:12]!r}, {size} bytes); priorkit will not "
                "overwrite it. Move it away or pass another --cache path"
            )
        raise CacheError(
            f"{p} is truncated ({size} bytes, a DuckDB file has at least {_HEADER_BYTES}); "
            "it was left untouched. Restore it from a copy or move it away and precompute again"
        )

    def _no_cache(self) -> CacheError:
        p = self.path
        return CacheError(f"no prior cache at {p}; create it with `priorkit precompute DATASET --cache {p}` "
                          "(or open it writable)")

    @staticmethod
    def _who(pid: int) -> str:
        return f"{creation.describe_pid(pid)} on {socket.gethostname()}" if pid > 0 else "another process"

    def _busy(self, holder: str) -> CacheError:
        return CacheError(
            f"prior cache {self.path} is busy: it is being created by {holder}; waited {self.timeout:g} s. "
            "Wait for that process (creating takes well under a second while it runs), raise the "
            "timeout (--timeout / PriorCache(timeout=...)), or use another --cache file"
        )

    def _wait_for_creator(self) -> None:
        """A read-only open of a missing file: wait while a live process is creating it."""
        deadline, delay = time.monotonic() + self.timeout, 0.02
        while not self.path.exists():
            who = creation.live_creator(self.path)
            if who is None:
                if self.path.exists():
                    break
                raise self._no_cache()
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._busy(who)
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.25)
        self._check_file(wait=True)

    def _settle_leftover(self) -> None:
        """A leftover-shaped file: wait while another process holds it (it is creating the
        file in place), then replace it (writable) or say what it is (read-only)."""
        p = self.path
        deadline, delay = time.monotonic() + self.timeout, 0.02
        while True:
            shape = creation.leftover_shape(p)
            if shape is None:  # completed, replaced or removed meanwhile: check it afresh
                self._check_file(wait=True)
                return
            holder = creation.lock_holder(p)
            if holder is None and creation.settled_leftover(p) is not None:
                if self.read_only:
                    raise CacheError(
                        f"no prior cache at {p} yet: it holds {shape}, left by a run killed while "
                        "creating the cache; no process has it open. `priorkit precompute DATASET "
                        f"--cache {p}` (or any writable PriorCache) replaces it"
                    )
                try:
                    replaced = creation.replace_leftover(p, self._init_file)
                except creation.Busy as busy:
                    holder = int(busy.args[0])
                except OSError as exc:
                    raise CacheError(f"cannot replace {p}, which holds {shape} left by a run killed while "
                                     f"creating the cache ({exc}); {_WRITABLE_HINT}") from exc
                else:
                    if replaced:
                        creation.notice(f"replaced {p}: it held {replaced}, left by a run killed while "
                                        "creating the cache; no process had it open and it held no data")
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._busy(self._who(holder) if holder else "another process")
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.25)

    def _init_file(self, tmp: Path) -> None:
        """Create the current schema in the new file ``tmp`` (checkpointed, closed: no WAL left)."""
        import duckdb

        try:
            con = duckdb.connect(str(tmp))
        except duckdb.Error as exc:
            raise self._open_error(exc) from exc
        try:
            migrate(con, 0)
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            raise self._open_error(exc) from exc
        finally:
            con.close()

    def _create(self) -> None:
        """Create the file whole: a temporary file, then ``os.link`` (creation.py)."""
        try:
            creation.create(self.path, self._init_file)
        except OSError as exc:
            raise CacheError(f"cannot create prior cache {self.path} ({exc}); {_WRITABLE_HINT}") from exc

    @contextlib.contextmanager
    def connect(self, write: bool = False) -> Iterator[Any]:
        """A short-lived DuckDB connection with the schema checked; closed on exit.

        ``write=True`` needs a writable cache and applies pending migrations.
        """
        import duckdb

        if write and self.read_only:
            raise CacheError(f"{self.path} was opened read-only; open PriorCache(path) to write")
        # Under the path lock, like every connection of this process to the file: closing
        # *any* descriptor of a file drops all of the process's POSIX locks on it, DuckDB's
        # included, so reading the header while another thread had a connection open let a
        # second process in as a writer.
        with _path_lock(self.path):
            self._check_file()
            if not self.read_only and not self.path.exists():
                # a writable cache is created on first use, even by a read; whole or not at all
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise CacheError(f"cannot create the cache folder {self.path.parent} ({exc}); "
                                     f"{_WRITABLE_HINT}") from exc
                self._create()
        if not self.read_only and not self._swept:
            # a creator killed between linking the file and removing its temporary name
            # leaves that name (a second link to the cache): once per object, drop it
            creation.remove_stale(self.path)
            self._swept = True
        with _path_lock(self.path):
            con = self._open(duckdb, read_only=not write)
            label = f"{self!r} (a {'read-write' if write else 'read-only'} connection)"
            try:
                with creation.holding(self.path, label):  # named if DuckDB refuses another configuration
                    try:
                        self._check_schema(con, write)
                    except MigrateFirst:
                        # a writable cache reads a file without (the current) schema -- e.g. one
                        # left by a run killed while creating it -- as it would read no file:
                        # it applies the migrations first
                        con.close()
                        write = True
                        con = self._open(duckdb, read_only=False)
                        self._check_schema(con, write)
                    yield con
                    if write:
                        # DuckDB checkpoints when the last connection closes too, but there it
                        # swallows a failed write (disk full, file size limit) and leaves the
                        # WAL growing unseen; checkpointing here turns that into an error now.
                        con.execute("CHECKPOINT")
            except duckdb.Error as exc:
                raise self._open_error(exc) from exc
            finally:
                con.close()

    def _open(self, duckdb, read_only: bool):
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.Error as exc:
                if not _is_lock_error(exc):
                    raise self._open_error(exc, read_only) from exc
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._lock_error(exc, read_only) from exc
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.25)

    def _open_error(self, exc: Exception, read_only: bool | None = None) -> CacheError:
        msg = str(exc)
        what = re.sub(r'"[^"]*"', '""', msg)  # match DuckDB's words, not a quoted path ("truncated/...")
        if "different configuration" in what:
            held = creation.holders(self.path)
            mode = "" if read_only is None else " read-only" if read_only else " for writing"
            by = held[0] if held else (f"a DuckDB connection opened outside priorkit (duckdb.connect("
                                       f"{str(self.path)!r}, ...) in your code)")
            return CacheError(
                f"cannot open prior cache {self.path}{mode}: this process already holds it with another "
                f"configuration (read-only vs read-write), through {by}; DuckDB allows one configuration "
                "per file in a process. Close that connection first (con.close(), or leave its `with "
                "cache.connect()` block), or open this PriorCache in the same mode (read_only=...)"
            )
        if "WAL does not match database file" in what:
            wal = f"{self.path}.wal"
            return CacheError(
                f"{wal} is the write-ahead log of another database, not of {self.path}; nothing "
                f"was changed. Move {wal} away (it may hold another database's last changes) "
                "and rerun"
            )
        if "not a valid DuckDB database" in what:
            return CacheError(f"{self.path} is not a DuckDB file; priorkit will not overwrite it. "
                              "Move it away or pass another --cache path")
        if "Could not read enough bytes" in what or "truncated" in what.lower():
            return CacheError(f"{self.path} is truncated or damaged ({msg}); it was left untouched. "
                              "Restore it from a copy or move it away and precompute again")
        if "Permission denied" in what or "Read-only file system" in what:
            return CacheError(f"cannot write prior cache {self.path} ({msg}); {_WRITABLE_HINT}")
        if "No space left" in what or "disk is full" in what.lower() or "File too large" in what:
            return CacheError(
                f"disk full or file size limit at {self.path} ({msg}): free space (or raise the "
                "limit, `ulimit -f`) and rerun; committed batches are kept, the batch being "
                "written is either complete or absent"
            )
        return CacheError(f"DuckDB error on prior cache {self.path}: {msg}")

    def _lock_error(self, exc: Exception, read_only: bool) -> CacheError:
        m = _LOCK_HOLDER.search(str(exc))
        holder = (f"{creation.describe_pid(int(m['pid']), m['exe'])} on {socket.gethostname()}" if m
                  else "another process")
        mode = "read" if read_only else "write to"
        return CacheError(
            f"cannot {mode} prior cache {self.path}: it is locked by {holder}; waited "
            f"{self.timeout:g} s. DuckDB allows one writing process or many readers. Wait for "
            "that process to finish (a precompute commits and releases the file after every "
            "batch), raise the timeout (--timeout / PriorCache(timeout=...)), or use another "
            "--cache file"
        )

    def _check_schema(self, con, write: bool) -> None:
        version = stored_version(con, self.path)
        self._check_size(con)
        if version == SCHEMA_VERSION:
            return
        if not write:
            if not self.read_only:
                raise MigrateFirst()
            if version == 0:
                raise CacheError(f"{self.path} is an empty DuckDB file, not yet a prior cache (a run "
                                 "killed while creating it leaves one); run `priorkit precompute` "
                                 "to fill it")
            raise CacheError(f"{self.path} has cache schema version {version}; open it writable "
                             f"once to migrate it to version {SCHEMA_VERSION}")
        migrate(con, version)

    def _check_size(self, con) -> None:
        """Refuse a file shorter than the blocks it uses (truncated behind DuckDB's back).

        DuckDB opens such a file and even writes to it; the lower bound is
        header + used blocks x block size (free blocks at the end may have been
        trimmed).  Skipped while a WAL exists: replaying it allocates blocks in
        memory that the file does not have yet, which is not damage.
        """
        if Path(str(self.path) + ".wal").exists() or not self.path.exists():
            return
        row = _first(con.execute("PRAGMA database_size"))
        block_size, used_blocks = int(row[2]), int(row[4])
        expected = _HEADER_BYTES + block_size * used_blocks
        size = self.path.stat().st_size
        if size < expected:
            raise CacheError(
                f"{self.path} is truncated ({size} bytes, but it uses {used_blocks} blocks of "
                f"{block_size} bytes); it was left untouched. Restore it from a copy or move it "
                "away and precompute again"
            )

    def check(self) -> None:
        """Open the file once (writable unless read-only) and close it.

        Fails fast -- before hours of work or seconds of model loading -- on a
        foreign or damaged file, a lock held by another process, or a schema
        this version cannot use.
        """
        with self.connect(write=not self.read_only):
            pass


__all__ = ["CacheFile", "DEFAULT_TIMEOUT", "default_cache_path"]

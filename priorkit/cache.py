"""A DuckDB file of word-pair similarities, keyed by provider fingerprint.

Why DuckDB: bulk (columnar) inserts and joins against hundreds of thousands of
pairs take milliseconds, the file is a single portable artefact, and its WAL
makes every committed transaction survive ``kill -9``.

Concurrency model (see docs/cache.md):

- DuckDB lets one process write *or* many processes read a file; any open
  connection holds an OS lock.  priorkit therefore never keeps a connection
  open: every operation opens one, does its work in one transaction and closes
  it in ``finally``.  A second process that finds the file locked retries until
  ``timeout`` and then raises :class:`CacheError` naming the process (PID and
  command line) that holds the lock.
- Training opens the cache read-only and loads a provider's pairs into memory
  once (:class:`PairTable`), so it holds no lock afterwards.
- Inside one process, connections to the same file are serialised by a lock,
  so threads never clash over DuckDB's per-process configuration.

Integrity: a pair is written only if its key is absent (an anti-join inside the
writing transaction, under DuckDB's single-writer lock), so each (fingerprint,
left, right) is stored once and the first value wins.  A unique index would
say the same declaratively, but on three string columns DuckDB's ART index made
the file 8x larger (73 MB vs 9 MB for 500k pairs) and writes 2x slower.

A file at the cache path that is not a priorkit cache (not DuckDB, truncated, or
another application's database) raises :class:`CacheError` and is never
modified.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import os
import re
import socket
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from . import cache_creation as creation
from .errors import CacheError
from .provider import PriorProvider

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
    from .resources import priorkit_home

    return priorkit_home() / "cache.duckdb"


def is_symmetric(provider: PriorProvider) -> bool:
    """Whether ``provider`` declares sim(a, b) == sim(b, a) (stored once then)."""
    return bool(getattr(provider, "symmetric", False))


def canonical_pairs(pairs: Iterable[Pair]) -> list[Pair]:
    """Unique pairs in first-seen order, each as (min, max): the key of a symmetric provider."""
    return list(dict.fromkeys((a, b) if a <= b else (b, a) for a, b in pairs))


# ---------------------------------------------------------------------------
# schema and migrations (numbered, applied in order, each in its own transaction)
# ---------------------------------------------------------------------------
def m001_initial(con) -> None:
    con.execute(
        """
        CREATE TABLE providers (
            fingerprint   VARCHAR PRIMARY KEY,
            name          VARCHAR NOT NULL,
            version       VARCHAR NOT NULL,
            params        VARCHAR NOT NULL,     -- JSON, canonical form
            data_checksum VARCHAR NOT NULL,
            "symmetric"   BOOLEAN NOT NULL,     -- pairs stored once as (min, max)
            plugin        VARCHAR,
            created       TIMESTAMP NOT NULL
        )"""
    )
    con.execute(
        """
        CREATE TABLE pairs (
            fingerprint VARCHAR NOT NULL,
            "left"      VARCHAR NOT NULL,
            "right"     VARCHAR NOT NULL,
            value       FLOAT               -- in [0, 1]; NaN = the source has no knowledge
        )"""
    )
    con.execute(
        """
        CREATE TABLE runs (
            id               INTEGER PRIMARY KEY,
            started          TIMESTAMP NOT NULL,
            finished         TIMESTAMP,
            status           VARCHAR NOT NULL,  -- running | finished | interrupted | failed
            dataset          VARCHAR,
            dataset_checksum VARCHAR,
            format           VARCHAR,
            examples         BIGINT,
            layout           VARCHAR,
            tokenizer        VARCHAR,
            fingerprint      VARCHAR,
            pairs            BIGINT,
            new              BIGINT,
            cached           BIGINT,
            seconds          DOUBLE,
            host             VARCHAR,
            pid              INTEGER,
            message          VARCHAR
        )"""
    )


MIGRATIONS: list[Callable] = [m001_initial]
SCHEMA_VERSION = len(MIGRATIONS)


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


# ---------------------------------------------------------------------------
# in-memory lookup structure
# ---------------------------------------------------------------------------
class PairTable:
    """In-memory ``(left, right) -> value`` for one provider, with vectorised lookups.

    Words map to integer ids; a pair is the int64 key ``left_id << 32 | right_id``
    kept in one sorted array, so looking up an (n, m) block costs n + m dict
    look-ups plus one ``searchsorted``.  For a symmetric provider both orders
    are held, so lookups never need to order the words.  Pairs added later go to
    a small dict that is merged into the sorted arrays once it grows.
    """

    def __init__(self, left: Sequence[str] = (), right: Sequence[str] = (),
                 values: Sequence[float] | np.ndarray = (), symmetric: bool = False) -> None:
        self.symmetric = symmetric
        self.vocab: dict[str, int] = {}
        self._keys = np.empty(0, dtype=np.int64)  # (N,) sorted
        self._vals = np.empty(0, dtype=np.float32)  # (N,)
        self._pending: dict[int, float] = {}
        if len(left):
            self.add(left, right, values)
            self._merge()

    @classmethod
    def from_arrow(cls, table, symmetric: bool = False) -> "PairTable":
        """Build from an Arrow table with columns left, right, value (no Python loop per pair)."""
        import pyarrow as pa

        self = cls(symmetric=symmetric)
        n = table.num_rows
        if n == 0:
            return self
        both = pa.concat_arrays([table.column("left").combine_chunks(),
                                 table.column("right").combine_chunks()]).dictionary_encode()
        self.vocab = {w: i for i, w in enumerate(both.dictionary.to_pylist())}
        ids = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)  # (2N,)
        vals = table.column("value").to_numpy().astype(np.float32, copy=False)
        keys = (ids[:n] << 32) | ids[n:]
        if symmetric:
            keys = np.concatenate([keys, (ids[n:] << 32) | ids[:n]])
            vals = np.concatenate([vals, vals])
        self._set(keys, vals)
        return self

    def _set(self, keys: np.ndarray, vals: np.ndarray) -> None:
        keys, first = np.unique(keys, return_index=True)  # sorted; first occurrence wins
        self._keys, self._vals = keys, vals[first]

    def _ids(self, words: Sequence[str], create: bool) -> np.ndarray:
        """Word ids; -1 for unknown words (then every key built from it is negative: never found)."""
        vocab = self.vocab
        if create:
            return np.array([vocab.setdefault(w, len(vocab)) for w in words], dtype=np.int64)
        return np.array([vocab.get(w, -1) for w in words], dtype=np.int64)

    def add(self, left: Sequence[str], right: Sequence[str], values: Sequence[float] | np.ndarray) -> None:
        """Add pairs (existing keys keep their value)."""
        values = np.asarray(values, dtype=np.float32)
        if not (len(left) == len(right) == len(values)):
            raise ValueError(f"add: {len(left)} left, {len(right)} right, {len(values)} values")
        li, ri = self._ids(left, True), self._ids(right, True)
        keys = (li << 32) | ri
        if self.symmetric:
            keys = np.concatenate([keys, (ri << 32) | li])
            values = np.concatenate([values, values])
        present = self._in_sorted(keys)
        pend = self._pending
        for k, v in zip(keys[~present].tolist(), values[~present].tolist()):
            pend.setdefault(k, v)
        if len(pend) > max(4096, len(self._keys) // 8):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        pk = np.fromiter(self._pending.keys(), np.int64, len(self._pending))
        pv = np.fromiter(self._pending.values(), np.float32, len(self._pending))
        self._pending = {}
        self._set(np.concatenate([self._keys, pk]), np.concatenate([self._vals, pv]))

    def _in_sorted(self, keys: np.ndarray) -> np.ndarray:
        if not len(self._keys):
            return np.zeros(keys.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        return self._keys[pos] == keys

    def _lookup_keys(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(self._keys)
        if n:
            pos = np.searchsorted(self._keys, keys)
            pos[pos == n] = 0
            found = self._keys[pos] == keys
            vals = np.where(found, self._vals[pos], np.float32(np.nan))
        else:
            found = np.zeros(keys.shape, dtype=bool)
            vals = np.full(keys.shape, np.nan, dtype=np.float32)
        if self._pending:
            flat_keys, flat_vals, flat_found = keys.reshape(-1), vals.reshape(-1), found.reshape(-1)
            for i in np.flatnonzero(~flat_found).tolist():
                v = self._pending.get(int(flat_keys[i]))
                if v is not None:
                    flat_vals[i] = v
                    flat_found[i] = True
        return vals, found

    def lookup(self, left: Sequence[str], right: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Block lookup: values (len(left), len(right)) float32 (NaN where absent) and a found mask."""
        li, ri = self._ids(left, False), self._ids(right, False)
        return self._lookup_keys((li[:, None] << 32) | ri[None, :])  # (n, m)

    def get_many(self, pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
        """Element-wise lookup: values (N,) float32 and found (N,) bool."""
        li = self._ids([a for a, _ in pairs], False)
        ri = self._ids([b for _, b in pairs], False)
        keys = (li << 32) | ri
        keys[(li < 0) | (ri < 0)] = -1  # unknown word: never found
        return self._lookup_keys(keys)

    # dict-like conveniences
    def __len__(self) -> int:
        return len(self._keys) + len(self._pending)

    def __contains__(self, pair: Pair) -> bool:
        return bool(self.get_many([pair])[1][0])

    def __getitem__(self, pair: Pair) -> float:
        vals, found = self.get_many([pair])
        if not found[0]:
            raise KeyError(pair)
        return float(vals[0])

    def get(self, pair: Pair, default: Any = None) -> Any:
        vals, found = self.get_many([pair])
        return float(vals[0]) if found[0] else default

    def to_dict(self) -> dict[Pair, float]:
        """Every stored pair (both orders for a symmetric provider) -> value."""
        self._merge()
        words = list(self.vocab)
        li, ri = (self._keys >> 32).tolist(), (self._keys & 0xFFFFFFFF).tolist()
        return {(words[a], words[b]): v for a, b, v in zip(li, ri, self._vals.tolist())}


# ---------------------------------------------------------------------------
# the cache file
# ---------------------------------------------------------------------------
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


def _describe_pid(pid: int, exe: str) -> str:
    """'PID 123 (python -m priorkit precompute ...)' from /proc where available."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        cmd = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
    except OSError:
        cmd = exe
    if len(cmd) > 160:
        cmd = cmd[:157] + "..."
    return f"PID {pid} ({cmd})" if cmd else f"PID {pid}"


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _MigrateFirst(Exception):
    """A read on a writable cache found an older (or no) schema: reopen writable and migrate."""


def _is_lock_error(exc: Exception) -> bool:
    msg = str(exc)
    return "Could not set lock" in msg or "Conflicting lock" in msg


class PriorCache:
    """A DuckDB file of word-pair similarities.

    :param path: the file (default ``default_cache_path()``); created with its
        parent folder on first write.
    :param read_only: open for reading only (many processes at once; the file
        must exist).  Training should read; ``priorkit precompute`` writes.
    :param timeout: seconds to wait for another process's lock before raising
        :class:`CacheError`.  0 fails at once.
    """

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        self.read_only = bool(read_only)
        self.timeout = float(timeout)
        self._check_file(wait=False)

    def __repr__(self) -> str:
        return f"PriorCache({str(self.path)!r}, read_only={self.read_only})"

    # ---- files and connections ----------------------------------------
    def _check_file(self, wait: bool = True) -> None:
        """Refuse anything at the path that is not a DuckDB file, before DuckDB touches it.

        With ``wait`` (every connection), a file another process is creating is
        waited for like a lock, and the leftover of a creation killed in place
        (priorkit/cache_creation.py) is replaced by a writable cache; without it
        (the constructor) such files are left for the first connection to handle.
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
        shape = creation.leftover_shape(p)
        if shape is not None:
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
        return (f"{creation.describe_pid(pid)} on {socket.gethostname()}" if pid > 0
                else "another process")

    def _busy(self, holder: str, waited: float) -> CacheError:
        return CacheError(
            f"prior cache {self.path} is busy: it is being created by {holder}; waited {waited:g} s. "
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
                raise self._busy(who, self.timeout)
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
                else:
                    if replaced:
                        creation.notice(f"replaced {p}: it held {replaced}, left by a run killed while "
                                        "creating the cache; no process had it open and it held no data")
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._busy(self._who(holder) if holder else "another process", self.timeout)
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
            self._migrate(con, 0)
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            raise self._open_error(exc) from exc
        finally:
            con.close()

    def _create(self) -> None:
        """Create the file whole (a temporary file, then ``os.link``); see cache_creation."""
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
        self._check_file()
        if not self.read_only and not self.path.exists():
            # a writable cache is created on first use, even by a read; whole or not at all
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CacheError(f"cannot create the cache folder {self.path.parent} ({exc}); "
                                 f"{_WRITABLE_HINT}") from exc
            with _path_lock(self.path):
                if not self.path.exists():
                    self._create()
        with _path_lock(self.path):
            con = self._open(duckdb, read_only=not write)
            label = f"{self!r} (a {'read-write' if write else 'read-only'} connection)"
            try:
                with creation.holding(self.path, label):  # named if DuckDB refuses another configuration
                    try:
                        self._check_schema(con, write)
                    except _MigrateFirst:
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
            by = (f"{held[0]}" if held else "a DuckDB connection opened outside priorkit (duckdb.connect("
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
        holder = f"{creation.describe_pid(int(m['pid']), m['exe'])} on {socket.gethostname()}" if m else "another process"
        mode = "read" if read_only else "write to"
        return CacheError(
            f"cannot {mode} prior cache {self.path}: it is locked by {holder}; waited "
            f"{self.timeout:g} s. DuckDB allows one writing process or many readers. Wait for "
            "that process to finish (a precompute commits and releases the file after every "
            "batch), raise the timeout (--timeout / PriorCache(timeout=...)), or use another "
            "--cache file"
        )

    def _check_schema(self, con, write: bool) -> None:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main'").fetchall()}
        version = 0
        if "schema_version" in tables:
            try:
                rows = con.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
            except Exception:  # noqa: BLE001 - a different table of that name
                rows = None
            known = [(i + 1, m.__name__) for i, m in enumerate(MIGRATIONS)]
            if rows is None or not rows or rows[0] != known[0]:
                raise self._foreign(tables)
            version = rows[-1][0]
            if version > SCHEMA_VERSION:
                raise CacheError(
                    f"{self.path} has cache schema version {version}, newer than this priorkit "
                    f"understands ({SCHEMA_VERSION}); upgrade priorkit"
                )
        elif tables:
            raise self._foreign(tables)
        self._check_size(con)
        if version == SCHEMA_VERSION:
            return
        if not write:
            if not self.read_only:
                raise _MigrateFirst()
            if version == 0:
                raise CacheError(f"{self.path} is an empty DuckDB file, not yet a prior cache (a run "
                                 "killed while creating it leaves one); run `priorkit precompute` "
                                 "to fill it")
            raise CacheError(f"{self.path} has cache schema version {version}; open it writable "
                             f"once to migrate it to version {SCHEMA_VERSION}")
        self._migrate(con, version)

    @staticmethod
    def _migrate(con, version: int) -> None:
        """Apply the migrations after ``version``, each in its own transaction."""
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            con.execute("BEGIN TRANSACTION")  # DDL is transactional: a kill leaves no half schema
            try:
                if number == 1:
                    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                                "name VARCHAR NOT NULL, applied TIMESTAMP NOT NULL)")
                migration(con)
                con.execute("INSERT INTO schema_version VALUES (?, ?, ?)",
                            [number, migration.__name__, _utcnow()])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

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

    def _foreign(self, tables: set[str]) -> CacheError:
        shown = ", ".join(sorted(tables)[:8])
        return CacheError(
            f"{self.path} is a DuckDB database of something else (tables: {shown}), not a prior "
            "cache; priorkit will not write into it. Pass another --cache path"
        )

    def check(self) -> None:
        """Open the file once (writable unless read-only) and close it.

        Fails fast -- before hours of work or seconds of model loading -- on a
        foreign or damaged file, a lock held by another process, or a schema
        this version cannot use.
        """
        with self.connect(write=not self.read_only):
            pass

    # ---- providers ----------------------------------------------------
    @staticmethod
    def _register(con, provider: PriorProvider) -> None:
        d = provider.describe()
        con.execute(
            "INSERT INTO providers VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [provider.fingerprint, d["name"], str(d["version"]),
             json.dumps(d["params"], sort_keys=True), provider.data_checksum(),
             is_symmetric(provider), d.get("plugin"), _utcnow()],
        )

    def register(self, provider: PriorProvider) -> None:
        """Record a provider's name, version, parameters and data checksum."""
        with self.connect(write=True) as con:
            self._register(con, provider)

    def providers(self) -> list[dict[str, Any]]:
        """Providers with their pair counts, NaN counts and mean values."""
        with self.connect() as con:
            return self._providers(con)

    @staticmethod
    def _providers(con) -> list[dict[str, Any]]:
        rows = con.execute(
            """SELECT p.fingerprint, p.name, p.version, p.params, p.data_checksum, p."symmetric",
                      p.plugin, p.created, coalesce(s.n, 0), coalesce(s.nan, 0), s.mean
               FROM providers p LEFT JOIN (
                   SELECT fingerprint, count(*) AS n, count(*) FILTER (WHERE isnan(value)) AS nan,
                          avg(value) FILTER (WHERE NOT isnan(value)) AS mean
                   FROM pairs GROUP BY fingerprint) s USING (fingerprint)
               ORDER BY p.created, p.fingerprint"""
        ).fetchall()
        keys = ("fingerprint", "name", "version", "params", "data_checksum", "symmetric", "plugin",
                "created", "pairs", "nan", "mean")
        out = []
        for r in rows:
            d = dict(zip(keys, r))
            d["params"] = json.loads(d["params"])
            d["created"] = d["created"].isoformat(timespec="seconds") + "Z"
            d["mean"] = None if d["mean"] is None else round(float(d["mean"]), 6)
            out.append(d)
        return out

    def _symmetric(self, con, fingerprint: str) -> bool:
        row = _first(con.execute('SELECT "symmetric" FROM providers WHERE fingerprint = ?', [fingerprint]))
        return bool(row and row[0])

    # ---- pairs ----------------------------------------------------------
    def count(self, fingerprint: str | None = None) -> int:
        with self.connect() as con:
            if fingerprint is None:
                return con.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
            return con.execute("SELECT count(*) FROM pairs WHERE fingerprint = ?", [fingerprint]).fetchall()[0][0]

    def get(self, fingerprint: str, pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
        """Values of ``pairs``: (N,) float32 (NaN where absent or unknown) and a found (N,) mask."""
        import pyarrow as pa

        pairs = list(pairs)
        values = np.full(len(pairs), np.nan, dtype=np.float32)
        found = np.zeros(len(pairs), dtype=bool)
        if not pairs:
            return values, found
        with self.connect() as con:
            sym = self._symmetric(con, fingerprint)
            keys = [(a, b) if not sym or a <= b else (b, a) for a, b in pairs]
            query = pa.table({"i": pa.array(np.arange(len(keys), dtype=np.int64)),
                              "left": pa.array([a for a, _ in keys], pa.string()),
                              "right": pa.array([b for _, b in keys], pa.string())})
            con.register("query_pairs", query)
            res = con.sql(
                'SELECT q.i, p.value FROM query_pairs q JOIN pairs p ON p.fingerprint = $fp '
                'AND p."left" = q."left" AND p."right" = q."right"', params={"fp": fingerprint}
            ).fetchnumpy()
            con.unregister("query_pairs")
        idx = np.asarray(res["i"], dtype=np.int64)
        values[idx] = np.asarray(res["value"], dtype=np.float32)
        found[idx] = True
        return values, found

    def missing(self, fingerprint: str, pairs: Sequence[Pair]) -> list[Pair]:
        """The pairs (unique, first-seen order) with no stored value for ``fingerprint``."""
        pairs = list(dict.fromkeys(pairs))
        _, found = self.get(fingerprint, pairs)
        return [p for p, f in zip(pairs, found.tolist()) if not f]

    def put(self, provider: PriorProvider, pairs: Sequence[Pair], values: Sequence[float] | np.ndarray) -> int:
        """Store values of ``pairs`` in one transaction; returns how many were new.

        Keys already present keep their value (the first write wins); for a
        symmetric provider (b, a) counts as (a, b).  Values must be float in
        [0, 1] or NaN.
        """
        import pyarrow as pa

        pairs = list(pairs)
        values = np.asarray(values)
        if values.shape != (len(pairs),):
            raise ValueError(f"put: {len(pairs)} pairs but values of shape {values.shape}")
        if not np.issubdtype(values.dtype, np.floating):
            raise ValueError(f"put: values must be floats in [0, 1] or NaN, got dtype {values.dtype}")
        values = values.astype(np.float32, copy=False)
        bad = ~np.isnan(values) & ((values < 0) | (values > 1))
        if bad.any():
            raise ValueError(f"put: values outside [0, 1] for provider {provider.name!r}: "
                             f"{values[bad][:3].tolist()} (NaN means 'no knowledge')")
        if not pairs:
            return 0
        fp = provider.fingerprint
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                self._register(con, provider)
                # the flag recorded with the fingerprint decides, so every writer folds alike
                sym = self._symmetric(con, fp)
                first: dict[Pair, int] = {}
                for i, (a, b) in enumerate(pairs):
                    first.setdefault((a, b) if not sym or a <= b else (b, a), i)
                rows = np.fromiter(first.values(), np.int64, len(first))
                table = pa.table({"left": pa.array([a for a, _ in first], pa.string()),
                                  "right": pa.array([b for _, b in first], pa.string()),
                                  "value": pa.array(values[rows], pa.float32())})
                con.register("new_pairs", table)
                inserted = con.execute(
                    'INSERT INTO pairs SELECT $fp, n."left", n."right", n.value FROM new_pairs n '
                    'WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE p.fingerprint = $fp '
                    'AND p."left" = n."left" AND p."right" = n."right")', {"fp": fp}).fetchall()[0][0]
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise
            finally:
                with contextlib.suppress(Exception):
                    con.unregister("new_pairs")
        return int(inserted)

    def load(self, fingerprint: str, symmetric: bool = False) -> PairTable:
        """Every stored pair of ``fingerprint`` in a :class:`PairTable` (lock released at return).

        ``symmetric`` applies only when the fingerprint is not registered yet;
        otherwise the flag recorded with it decides.
        """
        with self.connect() as con:
            known = _first(con.execute('SELECT "symmetric" FROM providers WHERE fingerprint = ?',
                                       [fingerprint]))
            sym = bool(known[0]) if known else symmetric
            table = con.sql('SELECT "left", "right", value FROM pairs WHERE fingerprint = $fp',
                            params={"fp": fingerprint}).to_arrow_table()
        return PairTable.from_arrow(table, symmetric=sym)

    def delete(self, fingerprint: str) -> int:
        """Remove a provider and its pairs; returns the number of pairs removed."""
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            n = con.execute("SELECT count(*) FROM pairs WHERE fingerprint = ?", [fingerprint]).fetchall()[0][0]
            con.execute("DELETE FROM pairs WHERE fingerprint = ?", [fingerprint])
            con.execute("DELETE FROM providers WHERE fingerprint = ?", [fingerprint])
            con.execute("COMMIT")
        return int(n)

    # ---- runs -----------------------------------------------------------
    def start_run(self, **fields: Any) -> int:
        """Record that a precompute started; returns its run id."""
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            run_id = con.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchall()[0][0]
            cols = {"id": run_id, "started": _utcnow(), "status": "running",
                    "host": socket.gethostname(), "pid": os.getpid(), **fields}
            _insert(con, "runs", cols)
            con.execute("COMMIT")
        return int(run_id)

    def finish_run(self, run_id: int, status: str = "finished", **fields: Any) -> None:
        """Record a run's outcome (finished, interrupted or failed) and counts."""
        cols = {"status": status, "finished": _utcnow(), **fields}
        sets = ", ".join(f"{_ident(k)} = ?" for k in cols)
        with self.connect(write=True) as con:
            con.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*cols.values(), run_id])

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        with self.connect() as con:
            return self._runs(con, limit)

    @staticmethod
    def _runs(con, limit: int) -> list[dict[str, Any]]:
        cur = con.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", [limit])
        names = [d[0] for d in cur.description]
        out = []
        host = socket.gethostname()
        for row in cur.fetchall():
            d = dict(zip(names, row))
            for k in ("started", "finished"):
                if d[k] is not None:
                    d[k] = d[k].isoformat(timespec="seconds") + "Z"
            if d["status"] == "running" and d["host"] == host and not _pid_alive(d["pid"]):
                d["status"] = "killed"  # the process died without recording an end
            out.append(d)
        return out

    # ---- summary --------------------------------------------------------
    def info(self, runs: int = 10) -> dict[str, Any]:
        """Path, sizes, schema version, providers (with counts) and the latest runs."""
        with self.connect() as con:
            version = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
            providers = self._providers(con)
            total = con.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
            recent = self._runs(con, runs)
        wal = Path(str(self.path) + ".wal")
        return {
            "path": str(self.path),
            "size_bytes": self.path.stat().st_size,
            "wal_bytes": wal.stat().st_size if wal.exists() else 0,
            "schema_version": int(version),
            "pairs": int(total),
            "providers": providers,
            "runs": recent,
        }


def _first(cursor) -> tuple | None:
    """First row of a result, consuming it (DuckDB 2 refuses new work on a half-read result)."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


def _ident(name: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"bad column name {name!r}")
    return f'"{name}"'


def _insert(con, table: str, cols: dict[str, Any]) -> None:
    names = ", ".join(_ident(k) for k in cols)
    marks = ", ".join("?" for _ in cols)
    con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(cols.values()))


# ---------------------------------------------------------------------------
# a provider that reads (and fills) the cache
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0


class _WriteBuffer:
    """Computed pairs waiting to be written; flushed in bulk (and at exit)."""

    def __init__(self, cache: PriorCache, provider: PriorProvider) -> None:
        self.cache, self.provider = cache, provider
        self.pairs: list[Pair] = []
        self.values: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.pairs)

    def take(self) -> tuple[list[Pair], np.ndarray]:
        pairs, values = self.pairs, self.values
        self.pairs, self.values = [], []
        return pairs, (np.concatenate(values) if values else np.empty(0, np.float32))

    def give_back(self, pairs: list[Pair], values: np.ndarray) -> None:
        self.pairs[:0] = pairs
        self.values.insert(0, values)

    def flush(self) -> int:
        pairs, values = self.take()
        if not pairs:
            return 0
        try:
            return self.cache.put(self.provider, pairs, values)
        except BaseException:
            self.give_back(pairs, values)
            raise


def _flush_at_exit(buffer: _WriteBuffer) -> None:
    try:
        buffer.flush()
    except Exception as exc:  # noqa: BLE001 - interpreter shutdown: warn, never crash
        warnings.warn(f"priorkit: could not write {len(buffer)} cached pairs at exit: {exc}")


class CachedProvider(PriorProvider):
    """Wraps a provider: values come from the cache; only missing pairs are computed.

    The provider's pairs are loaded into memory on first use (one query), so a
    training process holds no lock on the file afterwards.  Missing pairs are
    computed by the wrapped provider; on a writable cache they are buffered and
    written in bulk every ``flush_every`` pairs, on :meth:`flush`/:meth:`close`,
    and at interpreter exit.  Name, version, parameters and fingerprint are the
    wrapped provider's, so cached and uncached values are interchangeable.
    """

    def __init__(self, provider: PriorProvider, cache: PriorCache | str | os.PathLike,
                 flush_every: int = 20_000) -> None:
        if isinstance(provider, CachedProvider):
            provider = provider.provider
        if not isinstance(provider, PriorProvider):
            raise TypeError(f"CachedProvider wraps a PriorProvider, not {type(provider).__name__}")
        super().__init__(**provider.params)
        self.provider = provider
        self.cache = cache if isinstance(cache, PriorCache) else PriorCache(cache, read_only=True)
        self.name = provider.name  # type: ignore[misc] - instance value of the ClassVar
        self.version = provider.version  # type: ignore[misc]
        self.allows_nan = provider.allows_nan  # type: ignore[misc]
        self.symmetric = is_symmetric(provider)
        self.plugin = provider.plugin
        self._fingerprint = provider.fingerprint
        self.flush_every = int(flush_every)
        self.stats = CacheStats()
        self.table: PairTable | None = None
        self._buffer = _WriteBuffer(self.cache, provider)
        self._lock = threading.Lock()  # table and buffer are shared by threads (DataLoader workers)
        self._finalizer = None if self.cache.read_only else weakref.finalize(self, _flush_at_exit, self._buffer)

    def __repr__(self) -> str:
        return f"<CachedProvider {self.provider!r} in {self.cache.path}>"

    def load(self) -> None:
        self.table = self.cache.load(self.fingerprint, symmetric=self.symmetric)
        if len(self.table) == 0:
            self._warn_if_other_versions()

    def _warn_if_other_versions(self) -> None:
        """Say so when the file holds this provider only under other fingerprints.

        A new provider version, other parameters or other data give a new
        fingerprint, so old values are never served for new settings; they are
        kept (another setting may still use them) until deleted on purpose.
        """
        others = [p for p in self.cache.providers() if p["name"] == self.name and p["pairs"]]
        if others:
            desc = "; ".join(f"{p['fingerprint']} (version {p['version']}, params {p['params']}, "
                             f"{p['pairs']:,} pairs)" for p in others[:3])
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            warnings.warn(
                f"prior cache {self.cache.path} holds {self.name!r} values only for other "
                f"versions/parameters/data ({desc}{more}), none for {self.fingerprint} "
                f"(version {self.version}, params {self.describe()['params']}); they will be "
                "computed. Run `priorkit precompute` with these settings to fill the cache. "
                "The other values are kept untouched; `priorkit cache info` lists them, and "
                f"PriorCache({str(self.cache.path)!r}).delete(FINGERPRINT) removes one you no "
                "longer need.",
                stacklevel=3,
            )

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        return self.provider.segment(words)

    def data_checksum(self) -> str:
        return self.provider.data_checksum()

    def describe(self) -> dict[str, Any]:
        return self.provider.describe()

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        assert self.table is not None
        with self._lock:
            vals, found = self.table.lookup(left, right)  # (n, m)
        if found.all():
            self.stats.hits += found.size
            return vals
        n_missing = int(found.size - np.count_nonzero(found))
        self.stats.hits += found.size - n_missing
        self.stats.misses += n_missing
        rows = np.flatnonzero(~found.all(axis=1))
        cols = np.flatnonzero(~found.all(axis=0))
        sub = self.provider.similarity([left[i] for i in rows], [right[j] for j in cols])
        need = ~found[np.ix_(rows, cols)]  # (r, c)
        ri, ci = np.nonzero(need)
        new_left = [left[i] for i in rows[ri].tolist()]
        new_right = [right[j] for j in cols[ci].tolist()]
        new_vals = sub[ri, ci]
        vals[rows[ri], cols[ci]] = new_vals
        self._remember(new_left, new_right, new_vals)
        return vals

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise: one vectorised table look-up; missing pairs go to the provider."""
        assert self.table is not None
        with self._lock:
            vals, found = self.table.get_many(list(zip(left, right)))  # (N,)
        n_missing = int(len(found) - np.count_nonzero(found))
        self.stats.hits += len(found) - n_missing
        if n_missing == 0:
            return vals
        self.stats.misses += n_missing
        miss = np.flatnonzero(~found)
        new_left = [left[i] for i in miss.tolist()]
        new_right = [right[i] for i in miss.tolist()]
        new_vals = self.provider.pair_similarity(new_left, new_right)
        vals[miss] = new_vals
        self._remember(new_left, new_right, new_vals)
        return vals

    def _remember(self, left: list[str], right: list[str], values: np.ndarray) -> None:
        """Keep newly computed pairs in memory and, on a writable cache, buffer them for the file."""
        with self._lock:
            self.table.add(left, right, values)
            if not self.cache.read_only:
                self._buffer.pairs.extend(zip(left, right))
                self._buffer.values.append(values)
            due = len(self._buffer) >= self.flush_every
        if due:
            self.flush()

    def flush(self) -> int:
        """Write buffered pairs now (one transaction); returns how many were new in the file."""
        with self._lock:
            pairs, values = self._buffer.take()
        if not pairs:
            return 0
        try:
            n = self.cache.put(self.provider, pairs, values)
        except BaseException:
            with self._lock:  # keep them for the next flush (e.g. after a lock timeout)
                self._buffer.give_back(pairs, values)
            raise
        self.stats.written += n
        return n

    def close(self) -> None:
        self.flush()
        if self._finalizer is not None:
            self._finalizer.detach()

    def __enter__(self) -> "CachedProvider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def nan_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Exact equality with NaN == NaN (for comparing cached and computed values)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


__all__ = ["PriorCache", "CachedProvider", "PairTable", "CacheStats", "default_cache_path",
           "canonical_pairs", "is_symmetric", "nan_equal", "MIGRATIONS", "SCHEMA_VERSION",
           "DEFAULT_TIMEOUT"]

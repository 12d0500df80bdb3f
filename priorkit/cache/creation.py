"""Creating a cache file so that no other process, and no kill, ever sees half of it.

DuckDB creates a database in place: it opens the path with ``O_CREAT``, locks
it, writes three 4 KiB headers, and the schema follows in later transactions.
A kill in between leaves a 0-byte, 4 KiB or 8 KiB file at the path, and a
process that meets the file meanwhile cannot tell it from a damaged one.

priorkit therefore never lets DuckDB create the file at the cache path:

- the schema is created in a temporary file in the same folder
  (``.NAME.creating-HOST-PID-TOKEN``), checkpointed and closed, then given the
  cache's name with ``os.link`` -- atomic, and it never replaces a file that
  another process linked first (the loser drops its copy and uses the winner's).
  A kill at any moment leaves either no file or a whole one (plus at most a
  temporary file, removed by the next creation on this host once its process
  is gone);
- a read-only open that finds no file but a live creator's temporary file
  waits for it, like for a lock, and then names it (a writable one creates its
  own; ``os.link`` decides which file stays);
- a file left by a creation that an older priorkit (or DuckDB itself) did in
  place is recognised by its shape -- empty, or DuckDB headers that describe
  an empty database -- and by nobody holding a lock on it.  It holds nothing,
  so a writable cache replaces it (under an exclusive lock on it, again with
  a fully created file) and says so in one line.

POSIX record locks are per process and closing *any* descriptor of a file
drops all of the process's locks on it, so the lock probe here runs only on
files priorkit will not hand to DuckDB (leftover-shaped or refused), which no
DuckDB connection of this process holds.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Callable

try:
    import fcntl
except ImportError:  # not POSIX: no lock probe (every leftover-shaped file counts as free)
    fcntl = None  # type: ignore[assignment]

#: DuckDB's main header and each of its two database headers
_BLOCK = 4096
_MAGIC = b"DUCK"  # at offset 8 of the main header
_INVALID = b"\xff" * 8  # a database header's meta block pointer when the database is empty
_TAG = ".creating-"


# ---------------------------------------------------------------------------
# who holds a file
# ---------------------------------------------------------------------------
def describe_pid(pid: int, fallback: str = "") -> str:
    """'PID 123 (python -m priorkit precompute ...)' from /proc where available."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        cmd = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
    except OSError:
        cmd = fallback
    cmd = " ".join(cmd.split())  # one line, even for `python -c` programs
    if len(cmd) > 160:
        cmd = cmd[:157] + "..."
    return f"PID {pid} ({cmd})" if cmd else f"PID {pid}"


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_holder(path: Path) -> int | None:
    """PID of another process holding a POSIX lock on ``path`` (DuckDB locks every file it
    opens), or None.  Only for files no connection of this process has open (module doc)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0) + b"\0" * 4
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        l_type, _, _, _, pid = struct.unpack("hhqqi", answer[:28])
        return None if l_type == fcntl.F_UNLCK else (int(pid) or -1)
    except OSError:
        return None
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# leftovers of an in-place creation
# ---------------------------------------------------------------------------
def leftover_shape(path: Path) -> str | None:
    """What a file left by an in-place creation looks like, or None for any other file.

    Such a file is empty, or a DuckDB main header followed by up to two database
    headers that all describe an empty database (no meta block): it holds no
    data.  Everything else -- text, a DuckDB file cut at any other point, one
    whose headers point at data -- is not a leftover and stays refused.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(3 * _BLOCK + 1)
    except OSError:
        return None
    return _shape(data)


def _shape(data: bytes) -> str | None:
    """leftover_shape of a file's first 12 KiB + 1 byte."""
    size = len(data)
    if size == 0:
        return "an empty file (0 bytes)"
    if size not in (_BLOCK, 2 * _BLOCK) or data[8:12] != _MAGIC:
        return None
    for start in range(_BLOCK, size, _BLOCK):
        header = data[start:start + _BLOCK]
        if header[16:24] != _INVALID:  # checksum(8) iteration(8) meta_block(8) ...
            return None
    return f"DuckDB headers of an empty database, no tables ({size:,} bytes)"


# ---------------------------------------------------------------------------
# creation through a temporary file
# ---------------------------------------------------------------------------
def temp_path(path: Path) -> Path:
    host = socket.gethostname().replace("-", "_") or "host"
    return path.parent / f".{path.name}{_TAG}{host}-{os.getpid()}-{secrets.token_hex(3)}"


def _parse(name: str, target: str) -> tuple[str, int] | None:
    prefix = f".{target}{_TAG}"
    if not name.startswith(prefix) or name.endswith(".wal") or name.endswith(".tmp"):
        return None
    parts = name[len(prefix):].split("-")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


def creators(path: Path) -> list[tuple[Path, str, int, bool]]:
    """Temporary creation files of ``path``: (file, host, pid, process alive or on another host)."""
    here = socket.gethostname().replace("-", "_") or "host"
    out = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return out
    for name in names:
        parsed = _parse(name, path.name)
        if parsed:
            host, pid = parsed
            out.append((path.parent / name, host, pid, host != here or pid_alive(pid)))
    return out


def live_creator(path: Path) -> str | None:
    """'PID 123 (cmd) on HOST' of a live process creating ``path``, or None."""
    for _, host, pid, alive in creators(path):
        if alive and pid != os.getpid():
            return f"{describe_pid(pid)} on {host}"
    return None


def remove_stale(path: Path) -> list[Path]:
    """Remove creation files (and their WALs) of processes on this host that are gone."""
    removed = []
    here = socket.gethostname().replace("-", "_") or "host"
    for file, host, pid, alive in creators(path):
        if host == here and not alive:
            for p in (file, Path(f"{file}.wal")):
                with contextlib.suppress(OSError):  # gone already, or a folder we cannot write
                    p.unlink()
            removed.append(file)
    return removed


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _build(path: Path, init: Callable[[Path], None]) -> Path:
    """A whole new cache in a temporary file next to ``path`` (``init`` creates the schema)."""
    remove_stale(path)
    tmp = temp_path(path)
    try:
        init(tmp)
        wal = Path(f"{tmp}.wal")
        if wal.exists():  # init checkpoints and closes; a WAL left would hold part of the schema
            raise RuntimeError(f"creating {path}: DuckDB left {wal} after closing the new file")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        for p in (tmp, Path(f"{tmp}.wal")):
            with contextlib.suppress(OSError):
                p.unlink()
        raise
    return tmp


def create(path: Path, init: Callable[[Path], None]) -> bool:
    """Create ``path`` whole, unless another process creates it first.

    Returns True when this call created it, False when another process's file
    won (ours is dropped; both hold the same empty schema).
    """
    tmp = _build(path, init)
    try:
        try:
            os.link(tmp, path)  # fails if path exists: never replaces a file someone linked first
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: rename, which may replace (documented)
            if path.exists():
                return False
            os.rename(tmp, path)
            _fsync_dir(path.parent)
            return True
        _fsync_dir(path.parent)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


class Busy(Exception):
    """The leftover-shaped file is locked by another process (its PID in ``args[0]``)."""


def replace_leftover(path: Path, init: Callable[[Path], None]) -> str | None:
    """Replace a leftover of an in-place creation by a whole new cache.

    Returns the leftover's description when this call replaced it, None when the
    file is no longer a leftover (another process replaced or completed it).
    Raises :class:`Busy` when another process holds a lock on it (it is being
    created right now).  The file is locked exclusively while it is replaced,
    so two processes never both replace it.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        if fcntl is not None:
            try:
                fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
                            + b"\0" * 4)
            except OSError:
                raise Busy(lock_holder(path) or -1) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        # read through our descriptor: opening and closing another one would drop our lock
        shape = _shape(os.pread(fd, 3 * _BLOCK + 1, 0)) if same else None
        if shape is None:
            return None
        tmp = _build(path, init)
        try:
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _fsync_dir(path.parent)
        return shape
    finally:
        os.close(fd)  # releases our lock on the old inode


def settled_leftover(path: Path, pause: float = 0.05) -> str | None:
    """The leftover shape when it stays the same, unlocked, over ``pause`` seconds.

    DuckDB opens a new file and locks it a few microseconds later; a file seen
    in between is empty and unlocked although its creator is alive.  Looking
    twice rules that out.
    """
    shape = leftover_shape(path)
    if shape is None or lock_holder(path) is not None:
        return None
    try:
        before = os.stat(path)
    except FileNotFoundError:
        return None
    time.sleep(pause)
    try:
        after = os.stat(path)
    except FileNotFoundError:
        return None
    if (after.st_ino, after.st_size, after.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
        return None
    if leftover_shape(path) != shape or lock_holder(path) is not None:
        return None
    return shape


def notice(message: str) -> None:
    """One line on stderr (like the implicit-fetch notice)."""
    print(f"priorkit: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# connections this process holds (to name them when DuckDB refuses another configuration)
# ---------------------------------------------------------------------------
_OPEN: dict[str, list[str]] = {}
_OPEN_GUARD = threading.Lock()


@contextlib.contextmanager
def holding(path: Path, what: str):
    """Record that ``what`` (a PriorCache connection, read-only or not) holds ``path``."""
    key = os.path.realpath(path)
    entry = f"{what} in thread {threading.current_thread().name!r}"
    with _OPEN_GUARD:
        _OPEN.setdefault(key, []).append(entry)
    try:
        yield
    finally:
        with _OPEN_GUARD:
            _OPEN[key].remove(entry)
            if not _OPEN[key]:
                del _OPEN[key]


def holders(path: Path) -> list[str]:
    with _OPEN_GUARD:
        return list(_OPEN.get(os.path.realpath(path), ()))

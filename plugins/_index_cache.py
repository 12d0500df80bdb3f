"""Compact on-disk indexes that built-in providers derive from big data files.

Parsing a 488k-edge CSV or a text embedding file takes seconds to minutes;
reading a ``.npz`` of the same content takes milliseconds.  A provider
therefore parses a source file once, writes the result into a folder under
``priorkit_home()/index/<kind>/<key>`` and reads that folder afterwards.

The key carries everything the index content depends on -- the source file's
SHA-256, the build parameters and an index format version -- so a changed
file or parameter can never be served a stale index.  Hashing a large file
costs seconds too, so checksums are memoised per (path, size, mtime).
Folders are written under a temporary name and renamed into place, so a
crash mid-build never leaves a half-written index that looks complete.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from priorkit.errors import ResourceError
from priorkit.resources import priorkit_home

#: written last into a finished index folder; its presence marks completeness
DONE_MARKER = "index.json"


def index_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Root folder of all derived indexes (``cache_dir`` overrides the default)."""
    return Path(cache_dir).expanduser() if cache_dir else priorkit_home() / "index"


def file_sha256(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> str:
    """SHA-256 of a file, memoised by (absolute path, size, mtime) in ``checksums.json``."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ResourceError(f"data file {path} does not exist") from None
    if not path.is_file():
        raise ResourceError(f"{path} is not a file")
    memo_path = index_root(cache_dir) / "checksums.json"
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo: dict[str, str] = {}
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    digest = h.hexdigest()
    memo[key] = digest
    with contextlib.suppress(OSError):  # a read-only home only costs re-hashing
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_name(f".checksums.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, indent=0, sort_keys=True))
        os.replace(tmp, memo_path)
    return digest


def index_key(**parts: Any) -> str:
    """A short stable key of JSON-able build parameters."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def find_index(kind: str, key: str, cache_dir=None) -> Path | None:
    """The finished index folder for ``key``, or None if it was never built."""
    folder = index_root(cache_dir) / kind / key
    return folder if (folder / DONE_MARKER).exists() else None


@contextlib.contextmanager
def building_index(kind: str, key: str, meta: dict[str, Any], cache_dir=None) -> Iterator[Path]:
    """Yield a temporary folder to write an index into; publish it atomically.

    On success ``meta`` (plus whatever the body added to it) is written as
    ``index.json`` and the folder renamed to its final name.  If another
    process finished the same index first, its copy wins and ours is dropped.
    """
    final = index_root(cache_dir) / kind / key
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
    try:
        yield tmp
        (tmp / DONE_MARKER).write_text(json.dumps(meta, indent=2, sort_keys=True))
        if (final / DONE_MARKER).exists():
            return  # built concurrently by someone else: identical content
        if final.exists():  # an unfinished leftover from a crash
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            if not (final / DONE_MARKER).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_meta(folder: Path) -> dict[str, Any]:
    return json.loads((folder / DONE_MARKER).read_text())

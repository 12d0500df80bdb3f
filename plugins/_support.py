"""Saved indexes of the built-in providers: one format, one place, data only.

Parsing a 488k-edge CSV, an ontology or the WordNet database takes seconds;
reading arrays back takes milliseconds.  So a provider parses its source
once, saves what it derived into a folder
``priorkit_home()/index/<kind>/<key>/`` (``cache_dir`` replaces
``priorkit_home()/index``) and reads that folder afterwards.

- **Key**: everything the content depends on -- the source file's SHA-256
  (:func:`file_sha256`, priorkit's one checksum rule), the build parameters
  and an index format version -- so a changed file or parameter is never
  served a stale index (:func:`index_key`).
- **Files**: ``.npz`` arrays written and read with ``allow_pickle=False``
  (:func:`save_arrays` / :func:`load_arrays`; object arrays are refused on
  write), UTF-8 text with one string per line (:func:`save_lines`), and
  JSON (``index.json``, written last: its presence marks a finished index).
  Nothing read back can run code.
- **Atomic**: a folder is written under a temporary name and renamed into
  place, so a crash never leaves a half-written index that looks complete.
- **Trust**: a saved index is read only from folders that other accounts
  cannot write to (``priorkit.resources.shared_write_problem``); otherwise
  it is ignored (the provider parses its source again and does not save)
  and a warning names the ``chmod`` that fixes it.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from priorkit import checksums
from priorkit.resources import SharedFolderWarning, fix_hint, priorkit_home, shared_write_problem

#: written last into a finished index folder; its presence marks completeness
DONE_MARKER = "index.json"


def index_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Root folder of all saved indexes (``cache_dir`` overrides ``priorkit_home()/index``)."""
    return Path(cache_dir).expanduser() if cache_dir else priorkit_home() / "index"


def index_key(**parts: Any) -> str:
    """A short stable key of JSON-able build parameters."""
    return checksums.json_sha256(parts, 20)


def file_sha256(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> str:
    """SHA-256 of a file (:func:`priorkit.checksums.file_sha256`), remembered in
    ``<index root>/checksums.json`` when that folder is private to this account."""
    chain = _chain(None, cache_dir)
    memo = chain[-1] / "checksums.json"
    if _untrusted(*chain, memo) is not None:
        memo = None
    return checksums.file_sha256(path, memo_file=memo)


def _untrusted(*paths: Path) -> str | None:
    """The first of ``paths`` (folders or files) other accounts can write to, as a sentence."""
    for p in paths:
        problem = shared_write_problem(p)
        if problem is not None:
            return f"{problem}. {fix_hint(p)}"
    return None


_WARNED: set[str] = set()


def _chain(kind: str | None, cache_dir) -> list[Path]:
    """The folders a saved index of ``kind`` (None: the index root) is read through, outermost first."""
    root = index_root(cache_dir)
    chain = [root] if kind is None else [root, root / kind]
    if not cache_dir:
        chain.insert(0, priorkit_home())
    return chain


def trusted_kind_folder(kind: str, cache_dir=None) -> Path | None:
    """``<index root>/<kind>``, or None (after one warning) when others can write on the way."""
    chain = _chain(kind, cache_dir)
    problem = _untrusted(*chain)
    if problem is None:
        return chain[-1]
    if problem not in _WARNED:
        _WARNED.add(problem)
        warnings.warn(f"priorkit: not reading or saving {kind} indexes: {problem}",
                      SharedFolderWarning, stacklevel=3)
    return None


def find_index(kind: str, key: str, cache_dir=None) -> Path | None:
    """The finished index folder for ``key``, or None (never built, or not trusted)."""
    base = trusted_kind_folder(kind, cache_dir)
    if base is None:
        return None
    folder = base / key
    if not (folder / DONE_MARKER).exists():
        return None
    problem = _untrusted(folder, *sorted(folder.iterdir()))
    if problem is not None:
        if problem not in _WARNED:
            _WARNED.add(problem)
            warnings.warn(f"priorkit: not reading the saved {kind} index {folder}: {problem}",
                          SharedFolderWarning, stacklevel=2)
        return None
    return folder


@contextlib.contextmanager
def building_index(kind: str, key: str, meta: dict[str, Any], cache_dir=None) -> Iterator[Path]:
    """Yield a temporary folder to write an index into; publish it atomically.

    On success ``meta`` (plus whatever the body added to it) is written as
    ``index.json`` and the folder renamed to its final name.  If another
    process finished the same index first, its copy wins and ours is dropped.
    Where the folder is not trusted the index is written to a private
    temporary folder and dropped (the caller keeps what it built in memory).
    """
    base = trusted_kind_folder(kind, cache_dir)
    if base is None:
        with tempfile.TemporaryDirectory(prefix=f"priorkit-{kind}-") as tmp:
            yield Path(tmp)
        return
    final = base / key
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


# ---- data-only files ---------------------------------------------------------
def save_arrays(path: Path, **arrays: np.ndarray) -> None:
    """Numeric/bool/fixed-width arrays as one ``.npz``; object arrays are refused."""
    for name, a in arrays.items():
        if np.asarray(a).dtype.hasobject:
            raise TypeError(f"save_arrays: {name!r} is an object array; it would need pickle")
    np.savez(path, **arrays)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a ``.npz`` written by :func:`save_arrays` (never unpickles)."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def save_lines(path: Path, lines: list[str]) -> None:
    """Strings one per line, UTF-8 (none may hold a newline)."""
    bad = next((x for x in lines if "\n" in x), None)
    if bad is not None:
        raise ValueError(f"save_lines: {bad!r} holds a newline")
    path.write_text("\n".join(lines), encoding="utf-8")


def load_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.split("\n") if text else []


def save_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def open_text_lines(path: Path):
    """Binary line iterator over a plain or gzip file (gzip is detected by its magic bytes)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")

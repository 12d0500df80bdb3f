"""SHA-256 checksums of data files: the one implementation priorkit uses.

Checksums of data files are part of provider fingerprints, and so of cache
keys: the same bytes must always give the same hex string, whoever computes
it.  The rules:

- :func:`file_sha256` -- the SHA-256 of a file's bytes, hex (what
  ``sha256sum FILE`` prints).  Hashing a multi-GB file takes seconds to
  minutes, so results are remembered per process, and optionally in a JSON
  memo file, keyed by (absolute path, size, modification time in ns): a file
  whose size or mtime changes is hashed again.
- :func:`data_sha256` -- the same for bytes already in memory.
- :func:`parts_sha256` -- one digest over several named byte strings (a set
  of files that belong together, such as the WordNet database): for each
  part, in order, ``name + NUL + decimal length + NUL + bytes``.  The length
  prefix keeps ``("ab", "c")`` and ``("a", "bc")`` apart.
- :func:`json_sha256` -- the SHA-256 of the canonical JSON of a value (keys
  sorted, no spaces), hex, optionally cut to ``length`` characters: for keys
  made of parameters rather than of files.

    >>> from priorkit.checksums import json_sha256, parts_sha256
    >>> json_sha256({"b": 1, "a": [1, 2]}, length=12)
    '94a786c3662b'
    >>> parts_sha256([("x", b"1")]) == parts_sha256([("x", b"1")])
    True
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

from .errors import ResourceError

_CHUNK = 1 << 22  # 4 MiB reads
#: (absolute path, size, mtime_ns) -> hex digest, for this process
_MEMO: dict[str, str] = {}


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ResourceError(f"data file {path} does not exist") from None
    if not path.is_file():
        raise ResourceError(f"{path} is not a file")
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _read_memo(memo_file: Path | None) -> dict[str, str]:
    if memo_file is None:
        return {}
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def file_sha256(path: str | os.PathLike, *, memo_file: str | os.PathLike | None = None) -> str:
    """SHA-256 of the file's bytes (hex), remembered while its size and mtime stay the same.

    :param memo_file: a JSON file that keeps digests across processes (read
        and rewritten atomically; a read-only location only costs re-hashing).
    """
    path = Path(path)
    key = _stamp(path)
    if key in _MEMO:
        return _MEMO[key]
    memo_path = Path(memo_file) if memo_file is not None else None
    memo = _read_memo(memo_path)
    digest = memo.get(key)
    if not isinstance(digest, str):
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
        digest = h.hexdigest()
        if memo_path is not None:
            memo[key] = digest
            with contextlib.suppress(OSError):
                memo_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(memo, indent=0, sort_keys=True))
                os.replace(tmp, memo_path)
    _MEMO[key] = digest
    return digest


def data_sha256(data: bytes) -> str:
    """SHA-256 (hex) of bytes already in memory (a plug-in's source as it was imported)."""
    return hashlib.sha256(data).hexdigest()


def parts_sha256(parts: Iterable[tuple[str, bytes]]) -> str:
    """One SHA-256 (hex) over named byte strings, in order (see the module docstring)."""
    h = hashlib.sha256()
    for name, data in parts:
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


def json_sha256(value: Any, length: int | None = None) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON; ``default=str`` for other types."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()
    return digest if length is None else digest[:length]

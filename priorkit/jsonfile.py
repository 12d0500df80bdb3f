"""Small JSON state files (markers, metrics, trial results): read leniently, written atomically.

A write goes to a temporary file named after this process, then is renamed
over the target, so a crash never leaves half a file and two processes never
share a temporary file.  A missing or unreadable file reads as None.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_json(path: Path) -> dict | None:
    """The file's data, or None when it is missing or not valid JSON (e.g. left by an older crash)."""
    try:
        return json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_json(path: Path, data: Any, indent: int = 2) -> None:
    """Write ``data`` as JSON via a temporary file and a rename (non-JSON values as ``str``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=indent, default=str))
    tmp.replace(path)


__all__ = ["read_json", "write_json"]

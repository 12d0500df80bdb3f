"""An output file written in committed chunks, and resumed after a crash (docs/tagging.md,
"Tagging a corpus").

Each chunk is appended to the output, flushed and ``fsync``-ed; only then is ``<out>.progress``
replaced (a temporary file, ``fsync``, an atomic rename, the folder ``fsync``-ed) with the
committed byte offset and document count.  A kill at any moment (even ``kill -9``) leaves an
output whose first ``bytes`` bytes are whole chunks; whatever lies beyond is a chunk that was
never committed, and a restart cuts it off and goes on after the last committed chunk.

``<out>.progress`` holds the run's fingerprint: the model, the input files (path, size,
modification time and a hash of their head) and the options that change the bytes written.
A restart with another fingerprint refuses to resume and names what changed; ``restart=True``
(``--restart``) starts over.  A finished run's progress file says ``done``: the same command
run again does nothing.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import PriorkitError

PROGRESS_SUFFIX = ".progress"
_KIND = "priorkit-tagging-progress"
_VERSION = 1
_HEAD = 1 << 20  # bytes hashed at the head (and tail) of a file


def progress_path(out: str | os.PathLike) -> Path:
    return Path(str(out) + PROGRESS_SUFFIX)


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------
def file_fingerprint(path: str | os.PathLike, whole_below: int = 0) -> dict[str, Any]:
    """A file's identity without reading it all: path, size, mtime and a hash of its first
    (and last) MiB; files under ``whole_below`` bytes are hashed whole."""
    path = Path(path)
    st = path.stat()
    h = hashlib.sha256()
    with path.open("rb") as fh:
        if st.st_size <= max(whole_below, 2 * _HEAD):
            h.update(fh.read())
        else:
            h.update(fh.read(_HEAD))
            fh.seek(st.st_size - _HEAD)
            h.update(fh.read(_HEAD))
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": h.hexdigest()}


def inputs_fingerprint(paths: Iterable[str | os.PathLike]) -> list[dict[str, Any]]:
    return [file_fingerprint(p) for p in paths]


def folder_fingerprint(folder: str | os.PathLike) -> str:
    """A model folder's identity: every file's relative path and content (small files hashed
    whole, weights by size, mtime and their head and tail)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        fp = file_fingerprint(path, whole_below=4 << 20)
        fp["path"] = path.relative_to(folder).as_posix()
        if fp["size"] <= 4 << 20:
            fp.pop("mtime_ns")  # content decides for small files
        h.update(json.dumps(fp, sort_keys=True).encode())
    return h.hexdigest()[:32]


def run_fingerprint(model: str | os.PathLike | None, inputs: Iterable[str | os.PathLike],
                    options: dict[str, Any]) -> dict[str, Any]:
    """What a resumed output must match: the model folder, the input files and the options that
    change the bytes written (not those that only change speed: engine, workers, device)."""
    return {"model": folder_fingerprint(model) if model is not None else None,
            "inputs": inputs_fingerprint(inputs), "options": dict(options)}


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    if old.get("model") != new.get("model"):
        out.append("the model differs")
    a, b = old.get("inputs") or [], new.get("inputs") or []
    if [x.get("path") for x in a] != [x.get("path") for x in b]:
        out.append("the input files differ (" + ", ".join(x.get("path", "?") for x in a) + " before)")
    else:
        changed = [y["path"] for x, y in zip(a, b) if x != y]
        if changed:
            out.append("the input file" + ("s " if len(changed) > 1 else " ") + ", ".join(changed)
                       + (" have" if len(changed) > 1 else " has") + " changed since")
    oa, ob = old.get("options") or {}, new.get("options") or {}
    for key in sorted(set(oa) | set(ob)):
        if oa.get(key) != ob.get(key):
            out.append(f"option {key} was {oa.get(key)!r}, is {ob.get(key)!r}")
    return out


# ---------------------------------------------------------------------------
# the committed output
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Committed:
    """What the progress file records: ``documents`` whole documents in the first ``bytes`` bytes."""

    documents: int = 0
    bytes: int = 0
    chunks: int = 0
    done: bool = False


class CommittedOutput:
    """``out`` written chunk by chunk with a progress file beside it (the module doc)."""

    def __init__(self, out: str | os.PathLike, fingerprint: dict[str, Any], restart: bool = False) -> None:
        self.path = Path(out)
        self.progress = progress_path(self.path)
        self.fingerprint = json.loads(json.dumps(fingerprint))  # plain JSON, as read back
        self.state = Committed()
        self.resumed = False
        self._fd: int | None = None
        self._open(restart)

    def _open(self, restart: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_dir():
            raise PriorkitError(f"{self.path} is a folder; --out names the output file")
        record = None if restart else self._read_progress()
        if record is None and not restart and self.path.exists() and self.path.stat().st_size:
            raise PriorkitError(f"{self.path} exists and has no {self.progress.name} beside it, so it is not a run "
                                "this command can resume; pass --restart to overwrite it (or another --out)")
        if record is not None:
            why = _differences(record.get("fingerprint") or {}, self.fingerprint)
            if why:
                raise PriorkitError(
                    f"{self.path} was tagged by another run ({'; '.join(why)}), so it cannot be resumed: "
                    f"pass --restart to tag from the start (the {record.get('documents', 0)} documents tagged "
                    "so far are dropped), or rerun the command that started it")
            state = Committed(int(record["documents"]), int(record["bytes"]), int(record.get("chunks", 0)),
                              bool(record.get("done")))
            size = self.path.stat().st_size if self.path.exists() else -1
            if size < state.bytes:
                raise PriorkitError(f"{self.path} holds {max(size, 0)} bytes but {self.progress.name} records "
                                    f"{state.bytes} committed: the file was changed outside this command; pass "
                                    "--restart to tag from the start")
            self.state, self.resumed = state, state.documents > 0 or state.done
        for stale in self.progress.parent.glob(f".{self.progress.name}.*.tmp"):  # a record a kill cut short
            stale.unlink(missing_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not self.state.done:
            os.ftruncate(self._fd, self.state.bytes)  # an uncommitted tail: written, never recorded
            os.fsync(self._fd)
        os.lseek(self._fd, self.state.bytes, os.SEEK_SET)
        if record is None:
            self._record()

    def _read_progress(self) -> dict[str, Any] | None:
        try:
            record = json.loads(self.progress.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise PriorkitError(f"{self.progress}: unreadable ({exc}); pass --restart to tag from the start") from None
        if not isinstance(record, dict) or record.get("kind") != _KIND or "bytes" not in record:
            raise PriorkitError(f"{self.progress} is not a progress file of priorkit predict; move it away or "
                                "pass --restart")
        return record

    def _record(self) -> None:
        s = self.state
        data = {"kind": _KIND, "version": _VERSION, "output": self.path.name, "documents": s.documents,
                "bytes": s.bytes, "chunks": s.chunks, "done": s.done, "fingerprint": self.fingerprint}
        tmp = self.progress.with_name(f".{self.progress.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.progress)
        _fsync_dir(self.progress.parent)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def commit(self, text: str, documents: int) -> None:
        """Append ``text`` (``documents`` whole documents), make it durable, then record it."""
        if self.state.done:
            raise PriorkitError(f"{self.path} is finished; nothing more can be committed")
        data = text.encode("utf-8")
        self._write(data)
        self.state.bytes += len(data)
        self.state.documents += documents
        self.state.chunks += 1
        self._record()

    def finish(self, footer: str = "") -> None:
        """Write the footer and mark the run done."""
        if self.state.done:
            return
        data = footer.encode("utf-8")
        if data:
            self._write(data)
            self.state.bytes += len(data)
        self.state.done = True
        self._record()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "CommittedOutput":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["CommittedOutput", "Committed", "progress_path", "file_fingerprint", "inputs_fingerprint",
           "folder_fingerprint", "run_fingerprint", "PROGRESS_SUFFIX"]

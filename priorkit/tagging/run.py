"""Tagging a corpus: the one sequence every engine follows (docs/tagging.md, "Tagging a corpus").

1. The output is opened (:class:`~priorkit.tagging.commit.CommittedOutput`): a finished run
   ends here; a resumed one cuts the uncommitted tail off and skips the documents already
   committed (they are read, not tagged).
2. The input is read lazily and cut into chunks of ``chunk_size`` documents, counted from the
   first document of the input, so a chunk holds the same documents in every run.
3. The engine tags the chunks (each sorted by length inside, :func:`~priorkit.tagging.jobs.tag_chunk`)
   and gives their text back in input order; each is committed before the next is written.
4. A bad record in the input (the reader raises, naming file and line) stops the run once the
   chunks before it are committed; the error says so.  The few documents between the last whole
   chunk and the bad record are tagged when the run goes on (``--skip-bad``), so that chunk
   boundaries, and the bytes, are those of a run that skipped the record from the start.
5. The footer is written and the run marked done.

Output to a stream (standard output) follows the same steps without the progress file.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO

from ..documents import Document
from ..errors import PriorkitError
from .commit import CommittedOutput
from .engines import ENGINES, Engine, LocalEngine
from .jobs import Job, Writer
from .progress import TagProgress

DEFAULT_CHUNK_SIZE = 256


@dataclasses.dataclass
class TagSummary:
    documents: int = 0  # in the output when the run ended
    tagged: int = 0  # by this run
    resumed: int = 0  # committed before this run started
    chunks: int = 0  # committed by this run
    bytes: int = 0
    seconds: float = 0.0
    steady_documents: int = 0  # tagged after the first chunk came back (the model loaded, a cluster up) ...
    steady_seconds: float = 0.0  # ... and the time they took
    already_done: bool = False
    engine: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Documents per second once the first chunk came back (loading left out); the whole run's
        rate when it had one chunk only."""
        if self.steady_documents and self.steady_seconds > 0:
            return self.steady_documents / self.steady_seconds
        return self.tagged / self.seconds if self.seconds > 0 else 0.0


class Chunks:
    """The input's documents in chunks; an error of the reader ends the chunks (it is kept in
    :attr:`error` and raised once the chunks before it are committed).  The documents read since
    the last whole chunk are left for the run that goes on: committed, they would move every later
    chunk's boundary, and with it the batches and the last digits of the scores, so that a resumed
    file would no longer equal one written in one go."""

    def __init__(self, docs: Iterator[Document], size: int) -> None:
        self.docs, self.size = docs, size
        self.error: Exception | None = None
        self.held = 0  # documents read after the last whole chunk when the reader failed
        self.meta: collections.deque = collections.deque()  # (documents, first source, last source) per chunk

    def __iter__(self) -> Iterator[list[Document]]:
        while self.error is None:
            chunk: list[Document] = []
            try:
                for doc in self.docs:
                    chunk.append(doc)
                    if len(chunk) >= self.size:
                        break
            except Exception as exc:  # noqa: BLE001 - the reader's error, re-raised after the commits
                self.error, self.held = exc, len(chunk)
                return
            if not chunk:
                return
            self.meta.append((len(chunk), chunk[0].source, chunk[-1].source))
            yield chunk
            if len(chunk) < self.size:
                return


def skip(docs: Iterator[Document], n: int, where: str) -> None:
    """Read past the ``n`` documents a resumed output already holds."""
    got = sum(1 for _ in itertools.islice(docs, n))
    if got < n:
        raise PriorkitError(f"{where} records {n} committed documents but the input now holds {got}; pass --restart "
                            "to tag from the start")


def tag_corpus(documents: Iterable[Document], job: Job, writer: Writer, *, out: str | os.PathLike | None = None,
               stream: TextIO | None = None, fingerprint: dict[str, Any] | None = None,
               chunk_size: int = DEFAULT_CHUNK_SIZE, engine: Engine | None = None, restart: bool = False,
               progress: bool = True, inputs: Sequence[str | os.PathLike] = (),
               progress_file: TextIO | None = None,
               on_commit: Callable[[int], None] | None = None) -> TagSummary:
    """Tag ``documents`` with ``job`` (:func:`priorkit.tagging.jobs.build_chunk_tagger`) and write
    them with ``writer`` to ``out`` (committed, resumable) or ``stream``; see the module doc.

    ``fingerprint``: the model, input and option identity a resumed ``out`` must match
    (:mod:`priorkit.tagging.commit`); ``inputs``: the input files, for the progress's time
    left; ``on_commit(documents)``: called after each commit (tests use it to kill the run).
    """
    if chunk_size < 1:
        raise PriorkitError(f"--chunk-size must be at least 1, got {chunk_size}")
    if (out is None) == (stream is None):
        raise PriorkitError("tag_corpus writes to out (a file) or to stream, exactly one of them")
    engine = engine or LocalEngine()
    t0 = time.perf_counter()
    summary = TagSummary()
    output = CommittedOutput(out, fingerprint or {}, restart) if out is not None else None
    try:
        if output is not None:
            summary.resumed = output.state.documents
            if output.state.done:
                summary.documents, summary.bytes, summary.already_done = output.state.documents, output.state.bytes, True
                return summary
        docs = iter(documents)
        if summary.resumed:
            skip(docs, summary.resumed, str(output.progress))  # type: ignore[union-attr]
        header = writer.header() if output is None or output.state.bytes == 0 else ""
        chunks = Chunks(docs, chunk_size)
        shown = TagProgress(inputs, enabled=progress, resumed=summary.resumed, file=progress_file)
        try:
            for result in engine.map(job, chunks):
                n, first, last = chunks.meta.popleft()
                shown.started_at(first)
                text, header = header + result.value, ""
                if output is not None:
                    output.commit(text, n)
                else:
                    stream.write(text)  # type: ignore[union-attr]
                    stream.flush()  # type: ignore[union-attr]
                summary.tagged += n
                summary.chunks += 1
                now = time.perf_counter()
                if summary.chunks == 1:
                    t_first = now
                else:
                    summary.steady_documents, summary.steady_seconds = summary.steady_documents + n, now - t_first
                shown.update(n, last)
                if on_commit is not None:
                    on_commit(summary.resumed + summary.tagged)
        finally:
            shown.close()
        if chunks.error is not None:
            raise _stopped(chunks.error, summary, out, chunks.held)
        if output is not None:
            output.finish(header + writer.footer())
        else:
            stream.write(header + writer.footer())  # type: ignore[union-attr]
            stream.flush()  # type: ignore[union-attr]
    finally:
        if output is not None:
            summary.documents, summary.bytes = output.state.documents, output.state.bytes
            output.close()
        else:
            summary.documents = summary.tagged
        summary.seconds = time.perf_counter() - t0
        summary.engine = engine.describe()
    return summary


def make_engine(name: str = "local", *, workers: int | None = None, scheduler: str | None = None,
                client: Any = None, in_flight: int | None = None) -> Engine:
    """An engine by name: ``local``, or ``dask`` (a LocalCluster of ``workers`` processes, or the
    cluster of ``scheduler``, or ``client``)."""
    if name == "local":
        if scheduler or client is not None:
            raise PriorkitError("--scheduler is for --engine dask; add --engine dask (or drop --scheduler)")
        return LocalEngine()
    if name == "dask":
        from .dask_engine import DaskEngine

        if scheduler and workers is not None:
            raise PriorkitError("--workers starts a local Dask cluster; with --scheduler the cluster's own "
                                "workers tag: drop one of them")
        return DaskEngine(client=client, scheduler=scheduler, workers=workers or 2, in_flight=in_flight)
    raise PriorkitError(f"engine {name!r} is not one of {', '.join(ENGINES)}")


def _stopped(error: Exception, summary: TagSummary, out: str | os.PathLike | None, held: int) -> Exception:
    """The reader's error, with what stays committed (its type kept: a DocumentError stays one)."""
    if out is None or not isinstance(error, PriorkitError):
        return error
    total = summary.resumed + summary.tagged
    after = f" (the {held} after them are tagged when the run goes on)" if held else ""
    note = (f"; the {total} documents of the chunks before it are tagged and committed in {Path(out).name}{after}: "
            "rerun the same command with --skip-bad to skip the record and go on, or fix it and rerun with "
            "--restart")
    try:
        again = type(error)(f"{error}{note}")
    except Exception:  # noqa: BLE001 - an error type with its own constructor
        return error
    again.__cause__ = error.__cause__
    return again


__all__ = ["tag_corpus", "make_engine", "TagSummary", "Chunks", "DEFAULT_CHUNK_SIZE"]

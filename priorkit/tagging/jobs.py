"""What every process of a tagging run does with one chunk of documents (docs/tagging.md,
"Tagging a corpus").

A :class:`Job` names a piece of work built once per process (a model loaded, a writer made)
and applied to every chunk: the driver builds it for ``--engine local``, each Dask worker
process builds its own the first time it meets the job (:func:`apply`, keyed by
:attr:`Job.key`, the last :data:`MAX_BUILT` kept).  ``Job.build`` must be picklable (a
top-level function or a ``functools.partial`` of one), since Dask ships it to the workers.

:func:`tag_chunk` is the tagging of one chunk, the same in every process: the documents
sorted by length (so a batch pads little), tagged, put back in input order, checked (one
tagged document per document, same id) and serialised by the writer.  A chunk always holds
the same documents for the same input and ``--chunk-size``, so its bytes do not depend on
the engine, the worker or whether the run was resumed.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import socket
import sys
import threading
import time
from typing import Any, Callable, Protocol, Sequence

from ..documents import Document, TaggedDocument
from ..errors import PriorkitError

#: jobs a process keeps built (most recently used first): a model each
MAX_BUILT = 2

Tagger = Callable[[list[Document]], Sequence[TaggedDocument]]


class Writer(Protocol):
    """A per-format writer: one tagged document to a string (``.document``), and what comes
    before the first and after the last (``.header``, ``.footer``; often empty)."""

    def header(self) -> str: ...

    def document(self, tagged: TaggedDocument) -> str: ...

    def footer(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Job:
    """``build()`` -> a function of one chunk; ``key``: what it is (a process builds it once)."""

    key: str
    build: Callable[[], Callable[[Any], Any]]


@dataclasses.dataclass(frozen=True)
class ChunkResult:
    """A chunk's result and where and how long it took."""

    value: Any
    seconds: float
    host: str
    pid: int
    builds: int  # how often this process built the job (1 when the cache works)


_BUILT: "collections.OrderedDict[str, Callable[[Any], Any]]" = collections.OrderedDict()
_BUILDS: collections.Counter = collections.Counter()
_LOCK = threading.Lock()


def built(job: Job) -> Callable[[Any], Any]:
    """This process's instance of ``job`` (built on first use, kept by key)."""
    with _LOCK:
        fn = _BUILT.get(job.key)
        if fn is None:
            fn = job.build()
            _BUILDS[job.key] += 1
            _BUILT[job.key] = fn
            while len(_BUILT) > MAX_BUILT:
                _BUILT.popitem(last=False)
        _BUILT.move_to_end(job.key)
        return fn


def apply(job: Job, chunk: Any) -> ChunkResult:
    """``job`` on ``chunk`` in this process (what a Dask task runs); then the memory the chunk
    freed goes back to the system (:func:`release_memory`)."""
    t0 = time.perf_counter()
    fn = built(job)
    value = fn(chunk)
    release_memory()
    return ChunkResult(value, time.perf_counter() - t0, socket.gethostname(), os.getpid(), _BUILDS[job.key])


_TRIM: list[Any] = []  # [glibc's malloc_trim, or None where there is none]


def release_memory() -> None:
    """Hand the heap memory freed so far back to the operating system (glibc's ``malloc_trim``;
    nothing elsewhere).  Each chunk's batches allocate tensors of new shapes; glibc keeps what
    they free in its heap, fragmented, so without this the resident memory of a tagging process
    climbed with the documents tagged (400 against 8,000 BC5CDR sentences: 1,521 against
    1,861 MiB peak; one ``malloc_trim`` after 8,000 gave back about 500 MiB).  Once a chunk."""
    if not _TRIM:
        trim = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                trim = ctypes.CDLL("libc.so.6").malloc_trim
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):  # musl and others: no malloc_trim
                trim = None
        _TRIM.append(trim)
    if _TRIM[0] is not None:
        _TRIM[0](0)


def dask_worker_threads() -> int | None:
    """The thread count of the Dask worker running this task (``dask worker --nthreads N``), or
    None outside one: a model on a cluster's worker takes that many torch threads, not every core."""
    try:
        from distributed import get_worker

        return int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return None


def length_order(docs: Sequence[Document]) -> list[int]:
    """Indices of ``docs`` by text length (stable: equal lengths keep input order)."""
    return sorted(range(len(docs)), key=lambda i: len(docs[i].text))


def tag_chunk(tagger: Tagger, docs: Sequence[Document]) -> list[TaggedDocument]:
    """``docs`` tagged, in input order: the tagger sees them sorted by length."""
    order = length_order(docs)
    tagged = list(tagger([docs[i] for i in order]))
    if len(tagged) != len(docs):
        raise PriorkitError(f"the tagger gave {len(tagged)} tagged documents for {len(docs)} documents "
                            f"(the first: {docs[0].id!r}); a tagger must answer every document once, in order")
    out: list[Any] = [None] * len(docs)
    for i, t in zip(order, tagged):
        if t.id != docs[i].id:
            raise PriorkitError(f"the tagger answered document {docs[i].id!r} ({docs[i].source or 'no source'}) "
                                f"with document {t.id!r}; a tagger must keep the order it is given")
        out[i] = t
    return out


def render(writer: Writer, tagged: Sequence[TaggedDocument]) -> str:
    return "".join(writer.document(t) for t in tagged)


class ChunkTagger:
    """A tagger and a writer: a chunk of documents in, its output text out (:func:`tag_chunk`)."""

    def __init__(self, tagger: Tagger, writer: Writer) -> None:
        self.tagger, self.writer = tagger, writer

    def __call__(self, docs: Sequence[Document]) -> str:
        return render(self.writer, tag_chunk(self.tagger, docs))


def build_chunk_tagger(make_tagger: Callable[[], Tagger], make_writer: Callable[[], Writer]) -> ChunkTagger:
    """What a tagging job builds in each process (``Job(key, partial(build_chunk_tagger, ...))``)."""
    return ChunkTagger(make_tagger(), make_writer())


__all__ = ["Job", "ChunkResult", "Tagger", "Writer", "apply", "built", "tag_chunk", "length_order", "render",
           "dask_worker_threads", "ChunkTagger", "build_chunk_tagger", "MAX_BUILT", "release_memory"]

"""Where a tagging run's chunks are worked on: this process (``local``) or Dask workers
(``dask``, :mod:`priorkit.tagging.dask_engine`); :func:`priorkit.tagging.run.make_engine` makes
one by name.  An engine maps a :class:`~priorkit.tagging.jobs.Job` over a stream of chunks and
gives the results back **in input order**; it never holds more than a bounded number of
chunks, so memory does not grow with the corpus.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .jobs import ChunkResult, Job, apply

ENGINES = ("local", "dask")


class Engine:
    """The interface: ``start`` (before the first chunk; may take seconds), ``map``, ``close``."""

    name = "?"
    workers = 1

    def start(self) -> None:
        pass

    def map(self, job: Job, chunks: Iterable[Any]) -> Iterator[ChunkResult]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "workers": self.workers}

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalEngine(Engine):
    """Every chunk in this process, one after the other (the job built once)."""

    name = "local"

    def map(self, job: Job, chunks: Iterable[Any]) -> Iterator[ChunkResult]:
        for chunk in chunks:
            yield apply(job, chunk)


__all__ = ["Engine", "LocalEngine", "ENGINES"]

"""The Dask engine of a tagging run (``--engine dask``; docs/scaling.md, "Tagging on a cluster").

The driver reads the input, cuts it into chunks and submits one task per chunk
(:func:`priorkit.tagging.jobs.apply`), at most ``in_flight`` at a time (default: two per
worker), so the driver's memory and the cluster's stay flat however long the input.  Each
worker process builds the job once -- loads the model, makes the writer -- the first time it
meets it (:func:`priorkit.tagging.jobs.built`, keyed by the model folder and options) and
keeps it for the following chunks.  The driver takes the results in input order (a finished
chunk waits for the ones before it) and hands them to the same committed writer as the local
engine, so the output is the local run's, byte for byte.

A worker that raises stops the run with its message (committed chunks stay); a worker process
that dies has its task run again on another one (Dask's ``allowed-failures``).
"""
from __future__ import annotations

import collections
import contextlib
import os
import time
import uuid
from typing import Any, Iterable, Iterator

from ..errors import PriorkitError
from .engines import Engine
from .jobs import ChunkResult, Job, apply


class DaskEngine(Engine):
    """Chunks tagged by Dask workers: ``client`` (kept open), or a client of ``scheduler``, or
    of a new LocalCluster of ``workers`` processes with one thread each (both closed at the end)."""

    name = "dask"

    def __init__(self, client: Any = None, scheduler: str | None = None, workers: int = 2,
                 in_flight: int | None = None, connect_timeout: float = 30.0) -> None:
        if workers < 1:
            raise PriorkitError(f"--workers must be at least 1, got {workers}")
        if in_flight is not None and in_flight < 1:
            raise PriorkitError(f"in_flight must be at least 1, got {in_flight}")
        self.client, self.scheduler, self.n_asked = client, scheduler, workers
        self.own_client = client is None
        self.cluster: Any = None
        self.in_flight_asked, self.connect_timeout = in_flight, connect_timeout
        self.workers, self.startup, self.address = 0, 0.0, scheduler or "LocalCluster"
        self.builds: dict[str, int] = {}  # "host:pid" -> how often that process built the job
        self.worker_seconds = 0.0

    def start(self) -> None:
        if self.workers:
            return
        from ..precompute.dask_engine import start_client

        t0 = time.perf_counter()
        if self.own_client:
            self.client, self.cluster = start_client(self.scheduler, self.n_asked, self.connect_timeout)
        self.address = getattr(self.client.scheduler, "address", self.address)
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.startup = time.perf_counter() - t0

    @property
    def in_flight(self) -> int:
        return self.in_flight_asked or 2 * max(self.workers, 1)

    def map(self, job: Job, chunks: Iterable[Any]) -> Iterator[ChunkResult]:
        source = iter(chunks)
        first = next(source, None)
        if first is None:
            return  # nothing to do: no cluster started
        self.start()
        token = uuid.uuid4().hex[:12]
        pending: collections.deque = collections.deque()
        index = 0

        def submit() -> bool:
            nonlocal index, first
            chunk, first = (first, None) if first is not None else (next(source, None), None)
            if chunk is None:
                return False
            pending.append(self.client.submit(apply, job, chunk, key=f"priorkit-tag-{token}-{index}", pure=False,
                                              retries=0))
            index += 1
            return True

        try:
            while len(pending) < self.in_flight and submit():
                pass
            while pending:
                try:
                    result: ChunkResult = pending.popleft().result()
                except PriorkitError as exc:
                    raise _on_a_worker(exc) from exc
                submit()  # keep the workers busy while the driver commits
                self.builds[f"{result.host}:{result.pid}"] = result.builds
                self.worker_seconds += result.seconds
                yield result
        finally:
            if pending:
                with contextlib.suppress(Exception):
                    self.client.cancel(list(pending))

    def close(self) -> None:
        for thing in ((self.client if self.own_client else None), self.cluster):
            if thing is not None:
                with contextlib.suppress(Exception):
                    thing.close()
        if self.own_client:
            self.client, self.cluster = None, None

    def describe(self) -> dict[str, Any]:
        return {"engine": "dask", "scheduler": self.address, "workers": self.workers,
                "startup_seconds": round(self.startup, 2), "worker_seconds": round(self.worker_seconds, 2),
                "builds": dict(self.builds)}


def _on_a_worker(exc: PriorkitError) -> PriorkitError:
    """A worker's error, said to come from a worker (its type kept)."""
    text = (f"--engine dask: a worker failed: {exc} (workers load the model and read files themselves: on a "
            "cluster they need the same priorkit, plug-ins and model folder at the same path)")
    try:
        return type(exc)(text)
    except Exception:  # noqa: BLE001 - an error type with its own constructor
        return PriorkitError(text)


def local_threads(workers: int) -> int:
    """Torch threads per worker of a LocalCluster of ``workers`` processes: the cores shared out."""
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, cores // max(workers, 1))


__all__ = ["DaskEngine", "local_threads"]

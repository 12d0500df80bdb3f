"""The Dask engine: the same precompute run, its batches computed by Dask workers as shards.

Why Dask (``pip install 'priorkit[distributed]'``): it is pure Python from
PyPI with no daemons of its own, a ``LocalCluster`` of two worker processes
starts in 1-3 s on a 2-core machine, and the same client code runs on a
real cluster (``dask scheduler`` + ``dask worker`` over SSH, dask-jobqueue,
dask-kubernetes).  Ray would bring a far larger install and its own daemons.

How a run works (docs/scaling.md):

1. The driver (the process running ``priorkit precompute --engine dask``)
   goes through the one run sequence (:func:`priorkit.precompute.run.run_precompute`):
   it collects the unique pairs, removes those already cached and plans the
   rest into *shards* of ``shard_size`` pairs -- the same blocks, grouped like
   batches.
2. One task per shard (:mod:`priorkit.precompute.dask_worker`).  A worker rebuilds the provider from its registered
   name and parameters **once per process** (:func:`worker_provider`),
   checks its fingerprint against the driver's, computes the shard's blocks
   with :func:`priorkit.precompute.plan.compute_batch` and writes
   ``run<RUN>-shard<N>.parquet`` (left, right, value) into the shard folder:
   a temporary name first, then an atomic rename, so a half-written shard is
   never read.
3. The driver ingests finished shards with DuckDB's ``read_parquet``, one
   transaction for the shards that finished since the last one
   (:meth:`PriorCache.ingest_parquet <priorkit.cache.PriorCache.ingest_parquet>`,
   the anti-join of ``PriorCache.put``), then deletes the files.
   Shards that a crashed or interrupted run left behind are ingested first by
   the next run, so their work is not lost.

The shard folder must be visible to the driver and every worker (a shared
filesystem) when workers run on other machines.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import socket
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..align.words import WordKeys
from ..cache import Pair, PriorCache
from ..errors import CacheError, PriorkitError
from ..providers.base import PriorProvider
from .dask_worker import (_FP_KEY, MAX_WORKER_PROVIDERS, ProviderRecipe, ShardReport, build_provider,  # noqa: F401
                          compute_shard, pack_blocks, provider_recipe, shard_name, unpack_blocks, worker_provider,
                          write_shard)
from .plan import Block, plan_batches
from .run import BatchReport, Engine, PrecomputeSummary, run_precompute

#: pairs per shard (one task, one Parquet file); a shard takes whole blocks, so it may hold a few more
DEFAULT_SHARD_SIZE = 20_000
INSTALL_HINT = "pip install 'priorkit[distributed]'"
_SHARD_NAME = re.compile(r"run(?P<run>\d+)-shard(?P<shard>\d+)\.parquet$")


def ingest_shards(cache: PriorCache, fingerprint: str, paths: Sequence[str | os.PathLike]) -> int:
    """Insert the shards' pairs that the cache lacks, all in one transaction; returns how many.

    DuckDB reads the Parquet files directly.  Every shard must carry
    ``fingerprint`` in its metadata (written by :func:`write_shard`).
    """
    import pyarrow.parquet as pq

    paths = [Path(p) for p in paths]
    if not paths:
        return 0
    for path in paths:
        try:
            meta = pq.read_schema(path).metadata or {}
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise CacheError(f"cannot read shard {path}: {exc}; delete it and rerun the precompute") from exc
        got = meta.get(_FP_KEY, b"").decode()
        if got != fingerprint:
            raise CacheError(f"shard {path} holds values of provider {got or 'unknown'!r}, not "
                             f"{fingerprint!r}; it was not ingested. Move it out of the shard folder")
    return cache.ingest_parquet(fingerprint, paths)


def default_shard_dir(cache: PriorCache) -> Path:
    """``<cache file>.shards`` next to the cache file."""
    return Path(str(cache.path) + ".shards")


def leftover_shards(cache: PriorCache, folder: Path, current_run: int | None = None) -> list[Path]:
    """Complete shards in ``folder`` from runs that are no longer running (crashed,
    interrupted, killed), oldest first.  Temporary files of such runs are removed."""
    if not folder.is_dir():
        return []
    files = sorted(folder.iterdir())
    if not files:
        return []
    status = {r["id"]: r["status"] for r in cache.runs(limit=1 << 30)}
    out = []
    for f in files:
        m = _SHARD_NAME.search(f.name)
        if m is None:
            continue
        run = int(m["run"])
        if run == current_run or status.get(run) == "running":
            continue  # owned by a precompute still in progress
        if f.name.startswith("."):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()  # half-written by a worker of a dead run
        else:
            out.append(f)
    return out


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class DistributedSummary(PrecomputeSummary):
    """:class:`PrecomputeSummary` plus what the cluster did (``batches`` = shards computed)."""

    engine: str = "dask"
    scheduler: str = ""  # address, or "LocalCluster"
    workers: int = 0
    shards: int = 0
    resumed: int = 0  # pairs ingested from shards an earlier run left behind
    startup_seconds: float = 0.0  # starting or connecting to the cluster
    worker_seconds: float = 0.0  # summed over shards: time inside the tasks (provider builds included)
    builds: dict[str, int] = dataclasses.field(default_factory=dict)  # "host:pid" -> provider builds


def import_distributed():
    """``distributed`` (Dask's scheduler), or an error saying how to install it."""
    try:
        import distributed
    except ImportError as exc:
        raise PriorkitError(
            f"--engine dask needs Dask distributed, which is not installed ({exc}). "
            f"Install it with: {INSTALL_HINT}"
        ) from exc
    return distributed


def start_client(scheduler: str | None = None, workers: int = 2, timeout: float = 30.0):
    """(client, cluster): a client of ``scheduler``, or of a new LocalCluster of
    ``workers`` processes with one thread each (cluster is None for a scheduler)."""
    distributed = import_distributed()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise PriorkitError(
                f"cannot reach the Dask scheduler at {scheduler} ({exc}). Start one with "
                f"`dask scheduler` and workers with `dask worker {scheduler}`, or drop --scheduler "
                "to use a local cluster"
            ) from exc
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            client.close()
            raise PriorkitError(
                f"the Dask scheduler at {scheduler} has no workers after {timeout:g} s; start some "
                f"with `dask worker {scheduler}`"
            ) from exc
        return client, None
    if workers < 1:
        raise PriorkitError(f"--workers must be at least 1, got {workers}")
    import dask

    try:
        # Dask's statistical profiler samples every worker thread each 10 ms, holding the GIL
        # that the provider's Python code needs; a precompute has no use for it.
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=":0", silence_logs=logging.ERROR)
    except RuntimeError as exc:
        raise PriorkitError(
            f"could not start a local Dask cluster of {workers} worker processes ({exc}). Worker "
            "processes are spawned and import the main module: a script that calls this must do so "
            "under `if __name__ == '__main__':`"
        ) from exc
    return distributed.Client(cluster), cluster


class DaskEngine(Engine):
    """Compute the batches as shards on a Dask cluster; the cache ingests the workers' Parquet files.

    :param client: a ``distributed.Client`` to use (left open); otherwise one is
        made for ``scheduler`` (an address such as ``tcp://host:8786``) or for
        a new LocalCluster of ``workers`` processes, and closed at the end.
        No cluster is started when every pair is cached already.
    :param shard_size: pairs per shard (one task, one Parquet file); shards that
        finish together are ingested in one transaction.
    :param shard_dir: where workers write shards (default
        ``<cache>.shards``); must be shared with remote workers.
    """

    name = "dask"
    start_message = "engine=dask"
    failure_prefix = "engine=dask: "

    def __init__(self, client: Any = None, scheduler: str | None = None, workers: int = 2,
                 shard_size: int = DEFAULT_SHARD_SIZE, shard_dir: str | os.PathLike | None = None,
                 min_density: float = 1.0, connect_timeout: float = 30.0) -> None:
        self.client, self.scheduler, self.workers = client, scheduler, workers
        self.shard_size, self.shard_dir, self.min_density = shard_size, shard_dir, min_density
        self.connect_timeout = connect_timeout
        self.own_client = client is None
        self.cluster = None
        self.address, self.n_workers, self.startup = (scheduler or "LocalCluster"), 0, 0.0
        self.resumed = 0
        self.worker_seconds = 0.0
        self.builds: dict[str, int] = {}
        self.futures: list[Any] = []

    def check(self) -> None:
        if self.shard_size < 1:
            raise PriorkitError(f"shard_size must be positive, got {self.shard_size}")
        if self.client is None:
            import_distributed()  # fail before reading anything when Dask is missing

    def bind(self, cache: PriorCache, provider: PriorProvider) -> None:
        super().bind(cache, provider)
        self.fp = provider.fingerprint
        self.recipe = provider_recipe(provider)
        build_provider(self.recipe, "this process (the driver)")  # workers rebuild it the same way
        folder = Path(self.shard_dir) if self.shard_dir is not None else default_shard_dir(cache)
        self.folder = folder.expanduser().absolute() / self.fp  # workers may run elsewhere, in another folder

    def resume(self, run_id: int) -> int:
        leftovers = leftover_shards(self.cache, self.folder, run_id)
        if leftovers:
            self.resumed = ingest_shards(self.cache, self.fp, leftovers)
            for path in leftovers:
                path.unlink()
        return self.resumed

    def plan(self, todo: Sequence[Pair]) -> list[list[Block]]:
        return plan_batches(todo, batch_size=self.shard_size, min_density=self.min_density)

    def start(self, batches: Sequence[list[Block]]) -> None:
        if not batches:
            return
        t1 = time.perf_counter()
        if self.own_client:
            self.client, self.cluster = start_client(self.scheduler, self.workers, self.connect_timeout)
        else:
            self.address = self.client.scheduler.address
        self.startup = time.perf_counter() - t1
        self.n_workers = len(self.client.scheduler_info().get("workers", {}))

    def label(self) -> str:
        return f"{self.provider.name} pairs ({self.n_workers} Dask workers)"

    def compute(self, batches: Sequence[list[Block]], run_id: int) -> Iterator[tuple[int, int, int]]:
        if not batches:
            return
        fp, folder = self.fp, self.folder
        folder.mkdir(parents=True, exist_ok=True)
        self.futures = [self.client.submit(compute_shard, self.recipe, pack_blocks(blocks),
                                           str(folder / shard_name(run_id, i)),
                                           key=f"priorkit-{fp}-run{run_id}-shard{i}", pure=False)
                        for i, blocks in enumerate(batches, start=1)]
        distributed = import_distributed()
        # shards that finished meanwhile are ingested together: one transaction for all
        for done in distributed.as_completed(self.futures).batches():
            reports: list[ShardReport] = [future.result() for future in done]
            for report in reports:
                _check_visible(report)
            added = ingest_shards(self.cache, fp, [r.path for r in reports])
            for report in reports:
                Path(report.path).unlink()
                self.builds[f"{report.host}:{report.pid}"] = report.builds
            self.worker_seconds += sum(r.seconds for r in reports)
            yield len(reports), sum(r.pairs for r in reports), added

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            if self.futures:
                self.client.cancel(self.futures)
        _close(self.client if self.own_client else None, self.cluster)

    def close(self) -> None:
        _close(self.client if self.own_client else None, self.cluster)
        for path in (self.folder, self.folder.parent):  # tidy up empty folders; keep anything else
            with contextlib.suppress(OSError):
                path.rmdir()

    def finish_message(self, batches: int) -> str:
        return (f"engine=dask; scheduler={self.address}; workers={self.n_workers}; shards={batches} "
                f"(shard size {self.shard_size}); resumed={self.resumed}")

    def summary(self, base: PrecomputeSummary) -> "DistributedSummary":
        return DistributedSummary(
            **dataclasses.asdict(base), scheduler=self.address, workers=self.n_workers, shards=base.batches,
            resumed=self.resumed, startup_seconds=self.startup, worker_seconds=self.worker_seconds,
            builds=self.builds,
        )


def precompute_distributed(
    examples: Iterable[Any], builder: WordKeys, cache: PriorCache, *, client: Any = None,
    scheduler: str | None = None, workers: int = 2, shard_size: int = DEFAULT_SHARD_SIZE,
    shard_dir: str | os.PathLike | None = None, min_density: float = 1.0, progress: bool = True,
    run_info: dict[str, Any] | None = None, on_shard: Callable[[BatchReport], None] | None = None,
    connect_timeout: float = 30.0,
) -> "DistributedSummary":
    """:func:`priorkit.precompute.precompute` with the pairs computed on a Dask cluster
    (options: :class:`DaskEngine`).

    :param on_shard: called after every ingest transaction (``index`` counts
        shards, ``pairs`` those of this transaction).

    The values are those a single-process run stores; the run is recorded in the
    cache's ``runs`` table with ``engine=dask`` in its message.
    """
    engine = DaskEngine(client=client, scheduler=scheduler, workers=workers, shard_size=shard_size,
                        shard_dir=shard_dir, min_density=min_density, connect_timeout=connect_timeout)
    return run_precompute(examples, builder, cache, engine, progress=progress, run_info=run_info,
                          on_batch=on_shard)


def _check_visible(report: ShardReport) -> None:
    if not Path(report.path).is_file():
        raise PriorkitError(
            f"Dask worker {report.host} (PID {report.pid}) wrote shard {report.path}, but this process "
            f"on {socket.gethostname()} cannot see it: the shard folder (--shard-dir) must be on a "
            "filesystem shared by the driver and every worker"
        )


def _close(client: Any, cluster: Any) -> None:
    for thing in (client, cluster):
        if thing is not None:
            with contextlib.suppress(Exception):
                thing.close()


__all__ = ["precompute_distributed", "DaskEngine", "DistributedSummary", "ProviderRecipe", "ShardReport",
           "provider_recipe", "build_provider", "worker_provider", "compute_shard", "pack_blocks", "unpack_blocks",
           "write_shard", "ingest_shards", "leftover_shards", "default_shard_dir", "start_client",
           "import_distributed", "DEFAULT_SHARD_SIZE"]

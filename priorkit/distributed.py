"""Precompute on a Dask cluster: the same pairs as ``precompute``, computed by workers.

Why Dask (``pip install 'priorkit[distributed]'``): it is pure Python from
PyPI with no daemons of its own, a ``LocalCluster`` of two worker processes
starts in 1-3 s on a 2-core machine, and the same client code runs on a
real cluster (``dask scheduler`` + ``dask worker`` over SSH, dask-jobqueue,
dask-kubernetes).  Ray would bring a far larger install and its own daemons.

How a run works (docs/scaling.md):

1. The driver (the process running ``priorkit precompute --engine dask``)
   collects the unique pairs exactly like :func:`priorkit.precompute.precompute`,
   removes those already cached and plans the rest into *shards* of
   ``shard_size`` pairs -- the same blocks, grouped like batches.
2. One task per shard.  A worker rebuilds the provider from its registered
   name and parameters **once per process** (:func:`worker_provider`),
   checks its fingerprint against the driver's, computes the shard's blocks
   with :func:`priorkit.precompute.compute_batch` and writes
   ``run<RUN>-shard<N>.parquet`` (left, right, value) into the shard folder:
   a temporary name first, then an atomic rename, so a half-written shard is
   never read.
3. The driver ingests finished shards with DuckDB's ``read_parquet``, one
   transaction for the shards that finished since the last one (an anti-join,
   as ``PriorCache.put``), then deletes the files.
   Shards that a crashed or interrupted run left behind are ingested first by
   the next run, so their work is not lost.

The shard folder must be visible to the driver and every worker (a shared
filesystem) when workers run on other machines.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import pickle
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .cache import Pair, PriorCache, canonical_pairs, is_symmetric
from .errors import CacheError, PluginError, PriorkitError
from .precompute import (Block, BatchReport, PrecomputeSummary, _progress, base_provider, collect_pairs,
                         compute_batch, plan_batches, record_failure)
from .provider import PriorProvider

#: pairs per shard (one task, one Parquet file); a shard takes whole blocks, so it may hold a few more
DEFAULT_SHARD_SIZE = 20_000
#: providers a worker process keeps built (most recently used first)
MAX_WORKER_PROVIDERS = 4
INSTALL_HINT = "pip install 'priorkit[distributed]'"
_SHARD_NAME = re.compile(r"run(?P<run>\d+)-shard(?P<shard>\d+)\.parquet$")
_FP_KEY = b"priorkit.fingerprint"


# ---------------------------------------------------------------------------
# the provider, rebuilt on a worker
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ProviderSpec:
    """What a worker needs to rebuild a provider: its registered name, its
    parameters (nested providers as specs) and the fingerprint it must have."""

    name: str
    params: dict[str, Any]
    fingerprint: str


def provider_spec(provider: PriorProvider) -> ProviderSpec:
    return ProviderSpec(provider.name, _portable(provider.params), provider.fingerprint)


def _portable(value: Any) -> Any:
    if isinstance(value, PriorProvider):
        inner = getattr(value, "provider", None)  # a CachedProvider: rebuild what it wraps
        return provider_spec(inner if isinstance(inner, PriorProvider) else value)
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_portable(v) for v in value)
    return value


def _rebuild(value: Any, where: str) -> Any:
    if isinstance(value, ProviderSpec):
        return build_provider(value, where)
    if isinstance(value, dict):
        return {k: _rebuild(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuild(v, where) for v in value)
    return value


def build_provider(spec: ProviderSpec, where: str = "this process") -> PriorProvider:
    """The provider of ``spec`` from the plug-in manager; its fingerprint must match.

    Raises :class:`PluginError` naming ``where`` when the provider is not
    registered there or comes out different (other data, other plug-in version).
    """
    from .plugins import get_provider

    try:
        provider = get_provider(spec.name, **_rebuild(spec.params, where))
        fingerprint = provider.fingerprint
    except (PriorkitError, TypeError, ValueError, OSError) as exc:
        if isinstance(exc, PluginError) and str(exc).startswith("--engine dask"):
            raise  # a nested provider's failure, already explained
        raise PluginError(_rebuild_failed(spec, where, exc)) from exc
    if fingerprint != spec.fingerprint:
        raise PluginError(
            f"--engine dask: {where} rebuilt provider {spec.name!r} from its parameters "
            f"{provider.describe()['params']} but got fingerprint {fingerprint}, not the driver's "
            f"{spec.fingerprint}: its plug-in version or data differ. Install the same priorkit, "
            "plug-ins and data on every worker"
        )
    return provider


def _rebuild_failed(spec: ProviderSpec, where: str, exc: Exception) -> str:
    return (
        f"--engine dask rebuilds the provider on every worker from its registered name and "
        f"parameters, but {where} cannot build {spec.name!r}: {exc}. Register the provider through a "
        "plug-in that the workers load too (an installed entry point, or a plug-in file in "
        "PRIORKIT_PLUGINS_DIR set for the workers), or use --engine local"
    )


_PROVIDERS: collections.OrderedDict[str, PriorProvider] = collections.OrderedDict()
_BUILDS: collections.Counter[str] = collections.Counter()
_PROVIDERS_LOCK = threading.Lock()


def worker_provider(spec: ProviderSpec) -> PriorProvider:
    """This process's provider for ``spec``, built and loaded on first use only.

    Kept in a module-level map keyed by fingerprint, so every later shard in
    the same worker process reuses the loaded data (WordNet index, embeddings).
    """
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(spec.fingerprint)
        if provider is None:
            where = f"Dask worker {socket.gethostname()} (PID {os.getpid()})"
            provider = build_provider(spec, where)
            provider.ensure_loaded()
            _PROVIDERS[spec.fingerprint] = provider
            _BUILDS[spec.fingerprint] += 1
            while len(_PROVIDERS) > MAX_WORKER_PROVIDERS:
                _PROVIDERS.popitem(last=False)
        else:
            _PROVIDERS.move_to_end(spec.fingerprint)
        return provider


# ---------------------------------------------------------------------------
# shards
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class ShardReport:
    """What a worker returns for one shard."""

    path: str
    pairs: int
    seconds: float  # in the worker, provider build included when it happened
    host: str
    pid: int
    builds: int  # how often this worker process has built the provider (1 = once)


def shard_name(run_id: int, index: int) -> str:
    return f"run{run_id:05d}-shard{index:05d}.parquet"


def write_shard(path: str | os.PathLike, pairs: Sequence[Pair], values: np.ndarray, fingerprint: str) -> None:
    """Write (left, right, value) to ``path`` atomically: temp file, fsync, rename."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"left": pa.array([a for a, _ in pairs], pa.string()),
                      "right": pa.array([b for _, b in pairs], pa.string()),
                      "value": pa.array(np.asarray(values, np.float32), pa.float32())})
    table = table.replace_schema_metadata({_FP_KEY: fingerprint.encode()})
    tmp = path.with_name(f".{path.name}.{socket.gethostname()}-{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def pack_blocks(blocks: Sequence[Block]) -> bytes:
    """Blocks as one pickled byte string of plain lists.

    Dask walks list and tuple arguments element by element looking for futures
    (10 s for the 300k pairs of STS-B), and pickles NumPy arrays as separate
    out-of-band buffers (two per block, about 1 s); bytes cross as one frame.
    """
    return pickle.dumps([(b.left, b.right, b.rows.tolist(), b.cols.tolist()) for b in blocks],
                        protocol=pickle.HIGHEST_PROTOCOL)


def unpack_blocks(packed: bytes) -> list[Block]:
    return [Block(left, right, np.asarray(rows, np.int64), np.asarray(cols, np.int64))
            for left, right, rows, cols in pickle.loads(packed)]


def compute_shard(spec: ProviderSpec, blocks: bytes, path: str) -> ShardReport:
    """The task a worker runs: compute ``blocks`` (see :func:`pack_blocks`) with this
    process's provider and write them to ``path``."""
    t0 = time.perf_counter()
    provider = worker_provider(spec)
    pairs, values = compute_batch(provider, unpack_blocks(blocks))
    write_shard(path, pairs, values, spec.fingerprint)
    return ShardReport(path=str(path), pairs=len(pairs), seconds=time.perf_counter() - t0,
                       host=socket.gethostname(), pid=os.getpid(), builds=_BUILDS[spec.fingerprint])


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


def precompute_distributed(
    examples: Iterable[Any], builder: Any, cache: PriorCache, *, client: Any = None,
    scheduler: str | None = None, workers: int = 2, shard_size: int = DEFAULT_SHARD_SIZE,
    shard_dir: str | os.PathLike | None = None, min_density: float = 1.0, progress: bool = True,
    run_info: dict[str, Any] | None = None, on_shard: Callable[[BatchReport], None] | None = None,
    connect_timeout: float = 30.0,
) -> DistributedSummary:
    """:func:`priorkit.precompute.precompute` with the pairs computed on a Dask cluster.

    :param client: a ``distributed.Client`` to use (left open); otherwise one is
        made for ``scheduler`` (an address such as ``tcp://host:8786``) or for
        a new LocalCluster of ``workers`` processes, and closed at the end.
        No cluster is started when every pair is cached already.
    :param shard_size: pairs per shard (one task, one Parquet file); shards that
        finish together are ingested in one transaction.
    :param shard_dir: where workers write shards (default
        ``<cache>.shards``); must be shared with remote workers.
    :param on_shard: called after every ingest transaction (``index`` counts
        shards, ``pairs`` those of this transaction).

    The values are those a single-process run stores; the run is recorded in the
    cache's ``runs`` table with ``engine=dask`` in its message.
    """
    if cache.read_only:
        raise PriorkitError(f"precompute needs a writable cache; {cache.path} was opened read-only")
    if shard_size < 1:
        raise PriorkitError(f"shard_size must be positive, got {shard_size}")
    if client is None:
        import_distributed()  # fail before reading anything when Dask is missing
    t0 = time.perf_counter()
    provider = base_provider(builder)
    fp = provider.fingerprint
    spec = provider_spec(provider)
    build_provider(spec, "this process (the driver)")  # workers rebuild it the same way
    examples = list(examples)
    wanted, n_examples = collect_pairs(examples, builder)
    keys = canonical_pairs(wanted) if is_symmetric(provider) else wanted
    folder = Path(shard_dir) if shard_dir is not None else default_shard_dir(cache)
    folder = folder.expanduser().absolute() / fp  # workers may run elsewhere, in another folder
    run_id = cache.start_run(examples=n_examples, fingerprint=fp, message="engine=dask",
                             **(run_info or {}))
    new = computed = resumed = 0
    worker_seconds = 0.0
    shards: list[list[Block]] = []
    builds: dict[str, int] = {}
    own_client = client is None
    cluster = None
    address, n_workers, startup = (scheduler or "LocalCluster"), 0, 0.0
    futures: list[Any] = []
    try:
        cache.register(provider)
        keys = cache.keys(provider, wanted)  # the recorded flag decides, as in put()
        leftovers = leftover_shards(cache, folder, run_id)
        if leftovers:
            resumed = ingest_shards(cache, fp, leftovers)
            new += resumed
            for path in leftovers:
                path.unlink()
        todo = cache.missing(fp, keys)
        cached = len(keys) - len(todo)
        shards = plan_batches(todo, batch_size=shard_size, min_density=min_density)
        if shards:
            t1 = time.perf_counter()
            if own_client:
                client, cluster = start_client(scheduler, workers, connect_timeout)
            else:
                address = client.scheduler.address
            startup = time.perf_counter() - t1
            n_workers = len(client.scheduler_info().get("workers", {}))
            folder.mkdir(parents=True, exist_ok=True)
            futures = [client.submit(compute_shard, spec, pack_blocks(blocks), str(folder / shard_name(run_id, i)),
                                     key=f"priorkit-{fp}-run{run_id}-shard{i}", pure=False)
                       for i, blocks in enumerate(shards, start=1)]
            distributed = import_distributed()
            index = 0
            with _progress(progress, len(todo), f"{provider.name} pairs ({n_workers} Dask workers)") as advance:
                # shards that finished meanwhile are ingested together: one transaction for all
                for done in distributed.as_completed(futures).batches():
                    reports: list[ShardReport] = [future.result() for future in done]
                    for report in reports:
                        _check_visible(report)
                    added = ingest_shards(cache, fp, [r.path for r in reports])
                    for report in reports:
                        Path(report.path).unlink()
                        builds[f"{report.host}:{report.pid}"] = report.builds
                    pairs = sum(r.pairs for r in reports)
                    worker_seconds += sum(r.seconds for r in reports)
                    index += len(reports)
                    new += added
                    computed += pairs
                    advance(pairs)
                    if on_shard is not None:
                        on_shard(BatchReport(index, pairs, added, new, time.perf_counter() - t0))
    except BaseException as exc:
        with contextlib.suppress(Exception):
            if futures:
                client.cancel(futures)
        _close(client if own_client else None, cluster)
        record_failure(cache, run_id, exc, pairs=len(keys), new=new, t0=t0, prefix="engine=dask: ")
        raise
    _close(client if own_client else None, cluster)
    for path in (folder, folder.parent):  # tidy up empty folders; keep anything else
        with contextlib.suppress(OSError):
            path.rmdir()
    seconds = time.perf_counter() - t0
    message = (f"engine=dask; scheduler={address}; workers={n_workers}; shards={len(shards)} "
               f"(shard size {shard_size}); resumed={resumed}")
    cache.finish_run(run_id, status="finished", pairs=len(keys), new=new, cached=cached, seconds=seconds,
                     message=message)
    return DistributedSummary(
        examples=n_examples, requested=len(wanted), pairs=len(keys), new=new, cached=cached,
        computed=computed, seconds=seconds, batches=len(shards), provider=provider.name,
        fingerprint=fp, run_id=run_id, scheduler=address, workers=n_workers, shards=len(shards),
        resumed=resumed, startup_seconds=startup, worker_seconds=worker_seconds, builds=builds,
    )


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


__all__ = ["precompute_distributed", "DistributedSummary", "ProviderSpec", "ShardReport", "provider_spec",
           "build_provider", "worker_provider", "compute_shard", "pack_blocks", "unpack_blocks", "write_shard", "ingest_shards",
           "leftover_shards", "start_client", "import_distributed", "DEFAULT_SHARD_SIZE"]

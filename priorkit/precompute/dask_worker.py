"""What a Dask worker runs for ``--engine dask``: rebuild the provider, compute a shard, write it.

A worker rebuilds the provider from its registered name and parameters **once
per process** (:func:`worker_provider`), checks its fingerprint against the
driver's, computes the shard's blocks with
:func:`priorkit.precompute.plan.compute_batch` and writes
``run<RUN>-shard<N>.parquet`` (left, right, value) into the shard folder: a
temporary name first, then an atomic rename, so a half-written shard is never
read.  The driver's side is :mod:`priorkit.precompute.dask_engine`.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import pickle
import socket
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..cache import Pair
from ..errors import PluginError, PriorkitError
from ..providers.base import PriorProvider
from ..providers.spec import PriorSpec
from .plan import Block, compute_batch

#: providers a worker process keeps built (most recently used first)
MAX_WORKER_PROVIDERS = 4
_FP_KEY = b"priorkit.fingerprint"


@dataclasses.dataclass(frozen=True)
class ProviderRecipe:
    """What a worker needs to rebuild a provider: its :class:`PriorSpec` (registered
    name and parameters, nested providers as ProviderRecipes) and the fingerprint it must have."""

    prior: PriorSpec
    fingerprint: str

    @property
    def name(self) -> str:
        return str(self.prior.provider)

    @property
    def params(self) -> dict[str, Any]:
        return self.prior.params


def provider_recipe(provider: PriorProvider) -> ProviderRecipe:
    return ProviderRecipe(PriorSpec(provider=provider.name, params=_portable(provider.params)), provider.fingerprint)


def _portable(value: Any) -> Any:
    if isinstance(value, PriorProvider):
        from ..cache import CachedProvider

        return provider_recipe(value.provider if isinstance(value, CachedProvider) else value)  # rebuild what it wraps
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_portable(v) for v in value)
    return value


def _rebuild(value: Any, where: str) -> Any:
    if isinstance(value, ProviderRecipe):
        return build_provider(value, where)
    if isinstance(value, dict):
        return {k: _rebuild(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuild(v, where) for v in value)
    return value


def build_provider(recipe: ProviderRecipe, where: str = "this process") -> PriorProvider:
    """The provider of ``recipe`` from the plug-in manager; its fingerprint must match.

    Raises :class:`PluginError` naming ``where`` when the provider is not
    registered there or comes out different (other data, other plug-in version).
    """
    try:
        provider = dataclasses.replace(recipe.prior, params=_rebuild(recipe.params, where)).build_provider()
        fingerprint = provider.fingerprint
    except (PriorkitError, TypeError, ValueError, OSError) as exc:
        if isinstance(exc, PluginError) and str(exc).startswith("--engine dask"):
            raise  # a nested provider's failure, already explained
        raise PluginError(_rebuild_failed(recipe, where, exc)) from exc
    if fingerprint != recipe.fingerprint:
        raise PluginError(
            f"--engine dask: {where} rebuilt provider {recipe.name!r} from its parameters "
            f"{provider.describe()['params']} but got fingerprint {fingerprint}, not the driver's "
            f"{recipe.fingerprint}: its plug-in version or data differ. Install the same priorkit, "
            "plug-ins and data on every worker"
        )
    return provider


def _rebuild_failed(recipe: ProviderRecipe, where: str, exc: Exception) -> str:
    return (
        f"--engine dask rebuilds the provider on every worker from its registered name and "
        f"parameters, but {where} cannot build {recipe.name!r}: {exc}. Register the provider through a "
        "plug-in that the workers load too (an installed entry point, or a plug-in file in "
        "PRIORKIT_PLUGINS_DIR set for the workers), or use --engine local"
    )


_PROVIDERS: collections.OrderedDict[str, PriorProvider] = collections.OrderedDict()
_BUILDS: collections.Counter[str] = collections.Counter()
_PROVIDERS_LOCK = threading.Lock()


def worker_provider(recipe: ProviderRecipe) -> PriorProvider:
    """This process's provider for ``recipe``, built and loaded on first use only.

    Kept in a module-level map keyed by fingerprint, so every later shard in
    the same worker process reuses the loaded data (WordNet index, embeddings).
    """
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(recipe.fingerprint)
        if provider is None:
            where = f"Dask worker {socket.gethostname()} (PID {os.getpid()})"
            provider = build_provider(recipe, where)
            provider.ensure_loaded()
            _PROVIDERS[recipe.fingerprint] = provider
            _BUILDS[recipe.fingerprint] += 1
            while len(_PROVIDERS) > MAX_WORKER_PROVIDERS:
                _PROVIDERS.popitem(last=False)
        else:
            _PROVIDERS.move_to_end(recipe.fingerprint)
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


def compute_shard(recipe: ProviderRecipe, blocks: bytes, path: str) -> ShardReport:
    """The task a worker runs: compute ``blocks`` (see :func:`pack_blocks`) with this
    process's provider and write them to ``path``."""
    t0 = time.perf_counter()
    provider = worker_provider(recipe)
    pairs, values = compute_batch(provider, unpack_blocks(blocks))
    write_shard(path, pairs, values, recipe.fingerprint)
    return ShardReport(path=str(path), pairs=len(pairs), seconds=time.perf_counter() - t0,
                       host=socket.gethostname(), pid=os.getpid(), builds=_BUILDS[recipe.fingerprint])


__all__ = ["ProviderRecipe", "ShardReport", "provider_recipe", "build_provider", "worker_provider", "compute_shard",
           "pack_blocks", "unpack_blocks", "write_shard", "shard_name", "MAX_WORKER_PROVIDERS"]

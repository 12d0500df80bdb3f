"""The precompute engines by name: the one place that knows both (run.py knows neither,
the engines import run.py, so no module imports another back)."""
from __future__ import annotations

from typing import Any

from ..errors import PriorkitError
from .run import Engine

ENGINES = ("local", "dask")


def make_engine(engine: str = "local", **options: Any) -> Engine:
    """An engine by name: ``local`` (options: batch_size, min_density) or ``dask``
    (options: client, scheduler, workers, shard_size, shard_dir, min_density,
    connect_timeout).  Options left at None take the engine's defaults."""
    options = {k: v for k, v in options.items() if v is not None}
    if engine == "local":
        from .local import LocalEngine

        return LocalEngine(**options)
    if engine == "dask":
        from .dask_engine import DaskEngine

        return DaskEngine(**options)
    raise PriorkitError(f"unknown precompute engine {engine!r}; choose one of {', '.join(ENGINES)}")


__all__ = ["make_engine", "ENGINES"]

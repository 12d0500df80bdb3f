"""Fill the prior cache for a whole dataset before training.

- :mod:`~priorkit.precompute.plan`: which word pairs the examples need, and
  their grouping into blocks and batches;
- :mod:`~priorkit.precompute.run`: the one run sequence (read-only check,
  pairs, run record, missing pairs, plan, progress, failure record, summary)
  and the :class:`Engine` interface;
- :mod:`~priorkit.precompute.local`: the local engine and :func:`precompute`;
- :mod:`~priorkit.precompute.dask_engine` / :mod:`~priorkit.precompute.dask_worker`:
  the Dask engine's driver and worker sides (docs/scaling.md).

See docs/cache.md.
"""
from __future__ import annotations

from .local import DEFAULT_BATCH_SIZE, LocalEngine, precompute
from .engines import ENGINES, make_engine
from .plan import Block, base_provider, collect_pairs, compute_batch, example_inputs, plan_batches, plan_blocks
from .run import BatchReport, Engine, PrecomputeSummary, record_failure, run_precompute

__all__ = ["precompute", "PrecomputeSummary", "BatchReport", "Block", "collect_pairs", "plan_blocks",
           "plan_batches", "compute_batch", "example_inputs", "base_provider", "record_failure",
           "run_precompute", "make_engine", "Engine", "LocalEngine", "ENGINES", "DEFAULT_BATCH_SIZE"]

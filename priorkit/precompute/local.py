"""The local engine: batches computed in this process, one transaction each.

A run killed at any moment keeps every committed batch and a rerun computes
only what is left (the cache never holds part of a batch).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

from ..align.words import WordKeys
from ..cache import Pair, PriorCache
from ..errors import PriorkitError
from .plan import Block, compute_batch, plan_batches
from .run import BatchReport, Engine, PrecomputeSummary, run_precompute

#: pairs per transaction
DEFAULT_BATCH_SIZE = 50_000


class LocalEngine(Engine):
    """Compute every batch in this process and commit it in its own transaction.

    :param batch_size: pairs per transaction; a kill loses at most one batch.
    :param min_density: block planning (:func:`~priorkit.precompute.plan.plan_blocks`).
    """

    name = "local"

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE, min_density: float = 1.0) -> None:
        self.batch_size, self.min_density = batch_size, min_density

    def check(self) -> None:
        if self.batch_size < 1:
            raise PriorkitError(f"batch_size must be positive, got {self.batch_size}")

    def plan(self, todo: Sequence[Pair]) -> list[list[Block]]:
        return plan_batches(todo, batch_size=self.batch_size, min_density=self.min_density)

    def compute(self, batches: Sequence[list[Block]], run_id: int) -> Iterator[tuple[int, int, int]]:
        for batch in batches:
            pairs, values = compute_batch(self.provider, batch)
            added = self.cache.put(self.provider, pairs, values)
            yield 1, len(pairs), added


def precompute(examples: Iterable[Any], builder: WordKeys, cache: PriorCache, *, batch_size: int = DEFAULT_BATCH_SIZE,
               progress: bool = True, min_density: float = 1.0, run_info: dict[str, Any] | None = None,
               on_batch: Callable[[BatchReport], None] | None = None) -> PrecomputeSummary:
    """Compute and store every word pair ``builder`` needs for ``examples``, in this process.

    :param builder: a :class:`priorkit.PriorBuilder`, or a torch-free
        :class:`priorkit.align.words.WordKeys` (the pairs are the same).
    :param cache: a writable :class:`PriorCache`.
    :param batch_size: pairs per transaction; a kill loses at most one batch.
    :param run_info: extra fields for the ``runs`` table (dataset, format,
        dataset_checksum, layout, tokenizer).
    :param on_batch: called after every committed batch.
    """
    return run_precompute(examples, builder, cache, LocalEngine(batch_size, min_density), progress=progress,
                          run_info=run_info, on_batch=on_batch)


__all__ = ["precompute", "LocalEngine", "DEFAULT_BATCH_SIZE"]

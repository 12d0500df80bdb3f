"""The one precompute run, whatever computes the pairs.

Every precompute, local or on a Dask cluster, goes through the same steps in
:func:`run_precompute`:

1. refuse a read-only cache; let the engine check its options;
2. collect the unique pairs the builder needs (:func:`~priorkit.precompute.plan.collect_pairs`);
3. record the run's start in the cache's ``runs`` table;
4. register the provider; fold the pairs into stored keys (a symmetric
   provider stores (a, b) once; the flag recorded with the fingerprint decides);
5. let the engine store what an earlier, interrupted run left behind
   (Dask: finished shard files);
6. drop the pairs already cached, plan the rest into batches
   (:func:`~priorkit.precompute.plan.plan_batches`);
7. let the engine compute the batches; after every committed transaction,
   advance the progress bar and call ``on_batch``;
8. on any error (Ctrl-C included) record the run as ``interrupted`` or
   ``failed`` with the error, then re-raise; otherwise record it finished
   and return a :class:`PrecomputeSummary`.

An :class:`Engine` only computes and stores batches: :class:`LocalEngine
<priorkit.precompute.local.LocalEngine>` in this process, one transaction per
batch; :class:`DaskEngine <priorkit.precompute.dask_engine.DaskEngine>` on Dask
workers, whose Parquet shards the cache ingests.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..align.words import WordKeys
from ..cache import Pair, PriorCache, canonical_pairs, is_symmetric
from ..errors import PriorkitError
from ..output import Ticker, progress_style
from ..providers.base import PriorProvider
from .plan import Block, base_provider, collect_pairs



@dataclasses.dataclass
class PrecomputeSummary:
    """What a precompute did.  ``pairs`` counts stored keys: for a symmetric
    provider (a, b) and (b, a) are one key, so ``pairs <= requested``."""

    examples: int
    requested: int  # unique (left, right) pairs the builder asks for
    pairs: int  # unique keys after folding symmetric pairs
    new: int  # written by this run
    cached: int  # already in the cache
    computed: int  # computed by this run (> new only if another writer stored some meanwhile)
    seconds: float
    batches: int
    provider: str
    fingerprint: str
    run_id: int | None = None

    @property
    def pairs_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["pairs_per_second"] = round(self.pairs_per_second, 1) if self.seconds > 0 else None
        return d


@dataclasses.dataclass
class BatchReport:
    """Passed to ``on_batch`` after a batch is committed."""

    index: int  # 1-based
    pairs: int  # pairs in this batch
    new: int  # of which new in the file
    committed: int  # new pairs committed by this run so far
    seconds: float  # since the run started


class Engine:
    """What computes a run's batches; :func:`run_precompute` does everything else.

    The run calls, in order: :meth:`check` (before anything is read),
    :meth:`bind` (once the provider is known), :meth:`resume`, :meth:`plan`,
    :meth:`start`, :meth:`label`, :meth:`compute`, and :meth:`close` after
    success or :meth:`abort` after an error; then :meth:`finish_message` and
    :meth:`summary`.
    """

    name = "local"
    #: recorded in the ``runs`` table when the run starts (None: nothing)
    start_message: str | None = None
    #: put before the error recorded for a failed run
    failure_prefix = ""

    def check(self) -> None:
        """Validate the options; fail before any data is read."""

    def bind(self, cache: PriorCache, provider: PriorProvider) -> None:
        """The cache and the (unwrapped) provider of this run."""
        self.cache, self.provider = cache, provider

    def resume(self, run_id: int) -> int:
        """Store what earlier runs left behind; returns how many pairs were new."""
        return 0

    def plan(self, todo: Sequence[Pair]) -> list[list[Block]]:
        """The missing pairs as batches of blocks."""
        raise NotImplementedError

    def start(self, batches: Sequence[list[Block]]) -> None:
        """Get ready to compute ``batches`` (e.g. start a cluster when there are any)."""

    def label(self) -> str:
        """The progress bar's label."""
        return f"{self.provider.name} pairs"

    def compute(self, batches: Sequence[list[Block]], run_id: int) -> Iterator[tuple[int, int, int]]:
        """Compute and store ``batches``; yield ``(batches, pairs, new)`` after every transaction."""
        raise NotImplementedError

    def abort(self) -> None:
        """Stop whatever still runs after an error (never raises)."""

    def close(self) -> None:
        """Release what :meth:`start` took, after success."""

    def finish_message(self, batches: int) -> str | None:
        """Recorded in the ``runs`` table when the run finishes (None: keep the start message)."""
        return None

    def summary(self, base: PrecomputeSummary) -> PrecomputeSummary:
        """The summary to return (an engine may add its own fields)."""
        return base


def run_precompute(examples: Iterable[Any], builder: WordKeys, cache: PriorCache, engine: Engine, *,
                   progress: bool = True, run_info: dict[str, Any] | None = None,
                   on_batch: Callable[[BatchReport], None] | None = None) -> PrecomputeSummary:
    """Compute and store every word pair ``builder`` needs for ``examples`` with ``engine``.

    :param builder: a :class:`priorkit.PriorBuilder`, or a torch-free
        :class:`priorkit.align.words.WordKeys` (the pairs are the same).
    :param cache: a writable :class:`PriorCache`.
    :param run_info: extra fields for the ``runs`` table (dataset, format,
        dataset_checksum, layout, tokenizer).
    :param on_batch: called after every committed transaction.
    """
    if cache.read_only:
        raise PriorkitError(f"precompute needs a writable cache; {cache.path} was opened read-only")
    engine.check()
    t0 = time.perf_counter()
    provider = base_provider(builder)
    fp = provider.fingerprint
    engine.bind(cache, provider)
    examples = list(examples)
    wanted, n_examples = collect_pairs(examples, builder)
    keys = canonical_pairs(wanted) if is_symmetric(provider) else wanted
    start = {"message": engine.start_message} if engine.start_message is not None else {}
    run_id = cache.start_run(examples=n_examples, fingerprint=fp, **start, **(run_info or {}))
    new = computed = index = 0
    batches: list[list[Block]] = []
    try:
        cache.register(provider)
        keys = cache.keys(provider, wanted)  # the flag recorded with the fingerprint decides
        new += engine.resume(run_id)
        todo = cache.missing(fp, keys)
        cached = len(keys) - len(todo)
        batches = engine.plan(todo)
        engine.start(batches)
        with _progress(progress, len(todo), engine.label()) as advance:
            for done, pairs, added in engine.compute(batches, run_id):
                index += done
                new += added
                computed += pairs
                advance(pairs)
                if on_batch is not None:
                    on_batch(BatchReport(index, pairs, added, new, time.perf_counter() - t0))
    except BaseException as exc:
        engine.abort()
        record_failure(cache, run_id, exc, pairs=len(keys), new=new, t0=t0, prefix=engine.failure_prefix)
        raise
    engine.close()
    seconds = time.perf_counter() - t0
    message = engine.finish_message(len(batches))
    finish = {"message": message} if message is not None else {}
    cache.finish_run(run_id, status="finished", pairs=len(keys), new=new, cached=cached, seconds=seconds,
                     **finish)
    return engine.summary(PrecomputeSummary(
        examples=n_examples, requested=len(wanted), pairs=len(keys), new=new, cached=cached,
        computed=computed, seconds=seconds, batches=len(batches), provider=provider.name,
        fingerprint=fp, run_id=run_id,
    ))


def record_failure(cache: PriorCache, run_id: int, exc: BaseException, *, pairs: int, new: int, t0: float,
                   prefix: str = "") -> None:
    """Mark a run ``interrupted`` (Ctrl-C) or ``failed`` with the error in its message.
    Never raises: the caller re-raises the original error, which matters more."""
    status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
    with contextlib.suppress(Exception):
        cache.finish_run(run_id, status=status, pairs=pairs, new=new, seconds=time.perf_counter() - t0,
                         message=f"{prefix}{type(exc).__name__}: {exc}"[:500])


class _progress:
    """Progress over pairs, used as ``with _progress(...) as advance``: a rich bar on a
    terminal, a plain line every few seconds elsewhere, nothing when disabled or under ``-q``
    (``priorkit.output``)."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self.style = progress_style(enabled and total > 0)
        self.total, self.label = total, label
        self._bar: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if self.style == "off":
            return lambda n: None
        if self.style == "lines":
            self._bar = Ticker(self.label, self.total, "pairs")
            return self._bar.update
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), TimeRemainingColumn(), transient=False)
        self._bar.__enter__()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda n: self._bar.advance(task, n)

    def __exit__(self, *exc: Any) -> None:
        if isinstance(self._bar, Ticker):
            self._bar.close()
        elif self._bar is not None:
            self._bar.__exit__(*exc)


__all__ = ["run_precompute", "Engine", "PrecomputeSummary", "BatchReport", "record_failure"]

"""Fill the prior cache for a whole dataset before training.

``precompute`` asks the builder which (left, right) word pairs its examples
need, removes those already in the cache, and computes the rest in *batches*:
each batch is computed and committed in its own transaction, so a run killed
at any moment keeps every committed batch and a rerun computes only what is
left (the cache never holds part of a batch).

Within a batch, pairs are grouped into dense *blocks* so that one
``provider.similarity(lefts, rights)`` call covers many pairs: pairs are
grouped by the side with fewer distinct words, and groups are merged into one
block while at least ``min_density`` of the block's cells are pairs we need
(the provider computes every cell of a block; the extra ones are discarded).
The default, ``min_density=1``, computes exactly the needed pairs, one call
per word of the smaller side; measured on STS-B with WordNet it is the
fastest, because that provider's cost is per pair (docs/cache.md).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .cache import Pair, PriorCache, canonical_pairs, is_symmetric
from .errors import PriorkitError
from .provider import PriorProvider


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
class Block:
    """One provider call: ``similarity(left, right)``; cells ``(rows[k], cols[k])`` are needed."""

    left: list[str]
    right: list[str]
    rows: np.ndarray  # (K,) int64
    cols: np.ndarray  # (K,) int64

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def density(self) -> float:
        return len(self.rows) / max(1, len(self.left) * len(self.right))

    def pairs(self) -> list[Pair]:
        return [(self.left[i], self.right[j]) for i, j in zip(self.rows.tolist(), self.cols.tolist())]


@dataclasses.dataclass
class BatchReport:
    """Passed to ``on_batch`` after a batch is committed."""

    index: int  # 1-based
    pairs: int  # pairs in this batch
    new: int  # of which new in the file
    committed: int  # new pairs committed by this run so far
    seconds: float  # since the run started


def example_inputs(example: Any) -> tuple[Any, Any]:
    """(text_a, text_b) of a dataset example, a (text_a, text_b) tuple, or a string."""
    if hasattr(example, "inputs"):
        return example.inputs()
    if isinstance(example, str):
        return example, None
    if isinstance(example, (tuple, list)) and len(example) == 2:
        return example[0], example[1]
    raise PriorkitError(
        f"cannot read an example of type {type(example).__name__}; pass priorkit.datasets "
        "examples, (text_a, text_b) tuples or strings"
    )


def base_provider(builder: Any) -> PriorProvider:
    """The builder's provider without any cache wrapper around it."""
    provider = getattr(builder, "base_provider", None) or builder.provider
    inner = getattr(provider, "provider", None)
    return inner if isinstance(inner, PriorProvider) else provider


def collect_pairs(examples: Iterable[Any], builder: Any) -> tuple[list[Pair], int]:
    """Unique (left, right) pairs the builder needs for ``examples`` (first-seen order), and the example count."""
    seen: dict[Pair, None] = {}
    n = 0
    for example in examples:
        text_a, text_b = example_inputs(example)
        seen.update(dict.fromkeys(builder.word_pairs(text_a, text_b)))
        n += 1
    return list(seen), n


def plan_blocks(pairs: Sequence[Pair], min_density: float = 1.0, max_cells: int = 1 << 16) -> list[Block]:
    """Group pairs into blocks (see module doc); every pair lands in exactly one block.

    ``min_density=1`` gives one block per word of the smaller side with exactly
    the pairs needed -- best when the provider's cost is per cell (WordNet:
    25 s for STS-B train+dev against 31 s at 0.5 and 44 s at 0.25).  Lower
    values merge words into larger blocks with unneeded cells, which pays off
    only when a call's fixed cost dominates.
    """
    if not pairs:
        return []
    n_left = len({a for a, _ in pairs})
    n_right = len({b for _, b in pairs})
    transpose = n_right < n_left  # group by the side with fewer distinct words
    groups: dict[str, list[str]] = {}
    for a, b in pairs:
        key, other = (b, a) if transpose else (a, b)
        groups.setdefault(key, []).append(other)

    blocks: list[Block] = []
    keys: list[str] = []
    others: dict[str, int] = {}
    ki: list[int] = []
    oi: list[int] = []

    def flush() -> None:
        if not keys:
            return
        k = np.asarray(ki, dtype=np.int64)
        o = np.asarray(oi, dtype=np.int64)
        other_words = list(others)
        if transpose:
            blocks.append(Block(other_words, list(keys), o, k))
        else:
            blocks.append(Block(list(keys), other_words, k, o))
        keys.clear()
        others.clear()
        ki.clear()
        oi.clear()

    cap = max(1, max_cells)
    if min_density >= 1.0:  # exact blocks: one per word (the default; see docs/cache.md)
        for key, group in groups.items():
            for start in range(0, len(group), cap):
                chunk = group[start:start + cap]
                k = np.zeros(len(chunk), dtype=np.int64)
                o = np.arange(len(chunk), dtype=np.int64)
                blocks.append(Block(chunk, [key], o, k) if transpose else Block([key], chunk, k, o))
        return blocks
    for key, group in groups.items():
        for start in range(0, len(group), cap):  # a huge group becomes several blocks
            chunk = group[start:start + cap]
            fresh = sum(1 for w in chunk if w not in others)
            n_cells = (len(keys) + 1) * (len(others) + fresh)
            if keys and (len(ki) + len(chunk) < min_density * n_cells or n_cells > max_cells):
                flush()
            row = len(keys)
            keys.append(key)
            for w in chunk:
                ki.append(row)
                oi.append(others.setdefault(w, len(others)))
        # keep a group's chunks apart from the next group only when it was split
        if len(group) > cap:
            flush()
    flush()
    return blocks


def plan_batches(pairs: Sequence[Pair], batch_size: int = 50_000, min_density: float = 1.0,
                 max_cells: int = 1 << 16) -> list[list[Block]]:
    """Blocks grouped into batches of about ``batch_size`` pairs (one transaction each)."""
    batches: list[list[Block]] = []
    current: list[Block] = []
    size = 0
    for block in plan_blocks(pairs, min_density=min_density, max_cells=min(max_cells, batch_size)):
        current.append(block)
        size += len(block)
        if size >= batch_size:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


def compute_batch(provider: PriorProvider, blocks: Sequence[Block]) -> tuple[list[Pair], np.ndarray]:
    """Run the provider on every block; the needed pairs and their values (float32)."""
    pairs: list[Pair] = []
    values: list[np.ndarray] = []
    for block in blocks:
        matrix = provider.similarity(block.left, block.right)  # (len(left), len(right))
        pairs.extend(block.pairs())
        values.append(matrix[block.rows, block.cols])
    return pairs, (np.concatenate(values) if values else np.empty(0, np.float32))


def precompute(examples: Iterable[Any], builder: Any, cache: PriorCache, *, batch_size: int = 50_000,
               progress: bool = True, min_density: float = 1.0, run_info: dict[str, Any] | None = None,
               on_batch: Callable[[BatchReport], None] | None = None) -> PrecomputeSummary:
    """Compute and store every word pair ``builder`` needs for ``examples``.

    :param builder: a :class:`priorkit.PriorBuilder` (anything with
        ``word_pairs(text_a, text_b)`` and ``provider``).
    :param cache: a writable :class:`PriorCache`.
    :param batch_size: pairs per transaction; a kill loses at most one batch.
    :param run_info: extra fields for the ``runs`` table (dataset, format,
        dataset_checksum, layout, tokenizer).
    :param on_batch: called after every committed batch.
    """
    if cache.read_only:
        raise PriorkitError(f"precompute needs a writable cache; {cache.path} was opened read-only")
    if batch_size < 1:
        raise PriorkitError(f"batch_size must be positive, got {batch_size}")
    t0 = time.perf_counter()
    provider = base_provider(builder)
    fp = provider.fingerprint
    examples = list(examples)
    wanted, n_examples = collect_pairs(examples, builder)
    keys = canonical_pairs(wanted) if is_symmetric(provider) else wanted
    run_id = cache.start_run(examples=n_examples, fingerprint=fp, **(run_info or {}))
    new = computed = 0
    batches: list[list[Block]] = []
    try:
        cache.register(provider)
        todo = cache.missing(fp, keys)
        cached = len(keys) - len(todo)
        batches = plan_batches(todo, batch_size=batch_size, min_density=min_density)
        with _progress(progress, len(todo), f"{provider.name} pairs") as advance:
            for index, batch in enumerate(batches, start=1):
                pairs, values = compute_batch(provider, batch)
                added = cache.put(provider, pairs, values)
                new += added
                computed += len(pairs)
                advance(len(pairs))
                if on_batch is not None:
                    on_batch(BatchReport(index, len(pairs), added, new, time.perf_counter() - t0))
    except BaseException as exc:
        record_failure(cache, run_id, exc, pairs=len(keys), new=new, t0=t0)
        raise
    seconds = time.perf_counter() - t0
    cache.finish_run(run_id, status="finished", pairs=len(keys), new=new, cached=cached, seconds=seconds)
    return PrecomputeSummary(
        examples=n_examples, requested=len(wanted), pairs=len(keys), new=new, cached=cached,
        computed=computed, seconds=seconds, batches=len(batches), provider=provider.name,
        fingerprint=fp, run_id=run_id,
    )


def record_failure(cache: PriorCache, run_id: int, exc: BaseException, *, pairs: int, new: int, t0: float,
                   prefix: str = "") -> None:
    """Mark a run ``interrupted`` (Ctrl-C) or ``failed`` with the error in its message.
    Never raises: the caller re-raises the original error, which matters more."""
    status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
    with contextlib.suppress(Exception):
        cache.finish_run(run_id, status=status, pairs=pairs, new=new, seconds=time.perf_counter() - t0,
                         message=f"{prefix}{type(exc).__name__}: {exc}"[:500])


class _progress:
    """A rich progress bar over pairs (or nothing), used as ``with _progress(...) as advance``."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self.enabled, self.total, self.label = enabled and total > 0, total, label
        self._bar = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda n: None
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), TimeRemainingColumn(), transient=False)
        self._bar.__enter__()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda n: self._bar.advance(task, n)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


__all__ = ["precompute", "PrecomputeSummary", "BatchReport", "Block", "collect_pairs", "plan_blocks",
           "plan_batches", "compute_batch", "example_inputs", "base_provider", "record_failure"]

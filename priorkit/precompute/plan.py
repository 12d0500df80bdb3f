"""Which word pairs a precompute needs, and how they are grouped for the provider.

:func:`collect_pairs` asks the builder which (left, right) word pairs the
examples need; the run (:mod:`priorkit.precompute.run`) removes those already
in the cache and hands the rest to :func:`plan_batches`, which groups them
into *batches* (one transaction, or one Dask shard, each) of *blocks*.

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

import dataclasses
from typing import Any, Iterable, Sequence

import numpy as np

from ..align.words import WordKeys
from ..cache import Pair
from ..errors import PriorkitError
from ..providers.base import PriorProvider


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


def base_provider(builder: WordKeys) -> PriorProvider:
    """The builder's provider without any cache wrapper around it."""
    from ..cache import CachedProvider

    provider = builder.base_provider
    return provider.provider if isinstance(provider, CachedProvider) else provider


def collect_pairs(examples: Iterable[Any], builder: WordKeys) -> tuple[list[Pair], int]:
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


__all__ = ["Block", "collect_pairs", "plan_blocks", "plan_batches", "compute_batch", "example_inputs",
           "base_provider"]

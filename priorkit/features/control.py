"""The control arm of token features: the same matches placed on random word spans.

Per sentence, the mentions (a span with its one or more group matches) keep their
number, lengths, groups and concepts, and are put at random non-overlapping word
positions; the draw depends only on the seed and the sentence's words, so every run,
epoch and process sees the same control features for a sentence.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ..provider import Match


def sentence_rng(seed: int, words: Sequence[str]) -> np.random.Generator:
    """A generator from ``seed`` and the words (stable across processes, unlike ``hash``)."""
    digest = hashlib.blake2b("\x1f".join(words).encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest, "little")])


def random_spans(matches: Sequence[Match], words: Sequence[str], seed: int) -> list[Match]:
    """``matches`` moved to random non-overlapping spans of ``words`` (sorted by start)."""
    mentions: dict[tuple[int, int], list[Match]] = {}
    for m in matches:
        mentions.setdefault((m.start, m.end), []).append(m)
    if not mentions:
        return []
    rng = sentence_rng(seed, words)
    spans = list(mentions)
    lengths = [e - s for s, e in spans]
    free = len(words) - sum(lengths)  # words outside every mention; >= 0 as spans do not overlap
    order = rng.permutation(len(spans)).tolist()
    # stars and bars: k sorted slots among free + k give the free words before each mention
    slots = np.sort(rng.choice(free + len(spans), size=len(spans), replace=False)).tolist()
    out: list[Match] = []
    used = 0
    for j, (k, slot) in enumerate(zip(order, slots)):
        start = (slot - j) + used
        used += lengths[k]
        out += [Match(start, start + lengths[k], m.concept_ids, m.group) for m in mentions[spans[k]]]
    return out

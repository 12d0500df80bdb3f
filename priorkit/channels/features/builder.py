"""Words -> concept matches -> per-token feature tensors, aligned to a fast tokenizer.

A sentence's matches become B/I tags per group on its words; every token of a word
inherits the word's tags, except that B goes only to the first token of a
mention's first word (its other tokens, and the tokens of the mention's later
words, get I).  Special tokens and padding get no feature.  The batch tensors are

- ``token_features`` (B, L, 2G) float32: column ``2g`` is B of group ``g``, ``2g + 1`` its I;
- ``token_concepts`` (B, L, C) int64, only with ``concept_buckets`` > 0: hashed concept ids
  of the mention a token lies in (1 .. buckets; 0 = none), C the most any token has.

Matches are cached per sentence in memory (the matcher is fast; the cache saves the
repeat work of every later epoch and of the evaluation passes).
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np
import torch

from ...errors import PriorkitError
from ...providers.base import Match, PriorProvider
from .config import FeatureConfig

_MEMO_LIMIT = 500_000


def concept_bucket(concept_id: str, buckets: int) -> int:
    """1 .. buckets, the same on every machine (0 is 'no concept')."""
    digest = hashlib.blake2b(concept_id.encode("utf-8"), digest_size=8).digest()
    return 1 + int.from_bytes(digest, "little") % buckets


def check_provider(provider: PriorProvider) -> None:
    if not provider.supports_matches:
        raise PriorkitError(
            f"provider {provider.name!r} has no concept matches, so it cannot give token features; "
            "use a provider that implements matches() (compute_matches), e.g. ontology"
        )


class FeatureBuilder:
    """Token features of word lists from ``provider``'s concept matches (see the module doc)."""

    def __init__(self, provider: PriorProvider, config: FeatureConfig, tokenizer: Any = None,
                 max_length: int | None = None) -> None:
        check_provider(provider)
        bad = config.problems()
        if bad:
            raise PriorkitError(f"token features: {bad[0][0]} {bad[0][1]}")
        self.provider, self.config = provider, config
        self.tokenizer, self.max_length = tokenizer, max_length
        available = list(provider.match_groups())
        groups = list(config.groups) if config.groups is not None else available
        unknown = [g for g in groups if g not in available]
        if unknown:
            raise PriorkitError(f"token features: groups {unknown} are not groups of provider "
                                f"{provider.name!r}; it emits {available}")
        if not groups:
            raise PriorkitError(f"token features: provider {provider.name!r} lists no match groups")
        self.groups = groups
        self._index = {g: i for i, g in enumerate(groups)}
        self._memo: dict[tuple[str, ...], list[Match]] = {}

    @property
    def n_features(self) -> int:
        return 2 * len(self.groups)

    def describe(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "groups": list(self.groups),
                "provider": self.provider.describe()}

    # ---- words ----------------------------------------------------------
    def matches(self, words: Sequence[str]) -> list[Match]:
        """The matches that become features: the chosen groups only."""
        key = tuple(words)
        hit = self._memo.get(key)
        if hit is None:
            hit = [m for m in self.provider.matches(list(key)) if m.group in self._index]
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = hit
        return hit

    def token_arrays(self, words: Sequence[str], word_ids: Sequence[int | None]
                     ) -> tuple[np.ndarray, list[list[int]]]:
        """(L, 2G) float32 tags and each token's concept buckets for one encoded sentence."""
        L = len(word_ids)
        feats = np.zeros((L, self.n_features), dtype=np.float32)
        concepts: list[list[int]] = [[] for _ in range(L)]
        matches = self.matches(words)
        if not matches:
            return feats, concepts
        wid = np.array([-1 if w is None else w for w in word_ids], dtype=np.int64)
        first = np.ones(L, dtype=bool)  # the first token of its word
        first[1:] = wid[1:] != wid[:-1]
        buckets = self.config.concept_buckets
        for m in matches:
            inside = np.flatnonzero((wid >= m.start) & (wid < m.end))
            if not inside.size:  # cut off by truncation
                continue
            col = 2 * self._index[m.group]
            begin = inside[(wid[inside] == m.start) & first[inside]]
            feats[inside, col + 1] = 1.0
            feats[begin, col + 1] = 0.0
            feats[begin, col] = 1.0
            if buckets:
                ids = sorted({concept_bucket(c, buckets) for c in m.concept_ids})
                for t in inside.tolist():
                    concepts[t] += [b for b in ids if b not in concepts[t]]
        return feats, concepts

    # ---- batches ---------------------------------------------------------
    def batch_tensors(self, batch_words: Sequence[Sequence[str]], encoding: Any) -> dict[str, torch.Tensor]:
        """``token_features`` (and ``token_concepts``) for a padded batch ``encoding`` of
        ``batch_words`` (a fast tokenizer's BatchEncoding, ``is_split_into_words=True``)."""
        B, L = encoding["input_ids"].shape
        feats = torch.zeros((B, L, self.n_features), dtype=torch.float32)
        rows: list[list[list[int]]] = []
        for b, words in enumerate(batch_words):
            f, c = self.token_arrays(words, encoding.word_ids(b))
            feats[b, : f.shape[0]] = torch.from_numpy(f)
            rows.append(c)
        out = {"token_features": feats}
        if self.config.concept_buckets:
            width = max(1, max((len(c) for r in rows for c in r), default=1))
            ids = torch.zeros((B, L, width), dtype=torch.long)
            for b, r in enumerate(rows):
                for t, c in enumerate(r):
                    if c:
                        ids[b, t, : len(c)] = torch.tensor(c)
            out["token_concepts"] = ids
        return out

    def encode(self, batch_words: Sequence[Sequence[str]], **tokenizer_kwargs: Any):
        """A batch of word lists through the one collator (its tokenisation, padded, tensors),
        with the features attached: the BatchEncoding."""
        if self.tokenizer is None:
            raise PriorkitError("FeatureBuilder.encode needs a tokenizer (FeatureBuilder(..., tokenizer=...))")
        from ...collator import PriorCollator

        kw = {"truncation": self.max_length is not None, "max_length": self.max_length, **tokenizer_kwargs}
        enc, _ = PriorCollator(self.tokenizer, **kw).encode([{"words": list(w)} for w in batch_words])
        enc.update(self.batch_tensors(batch_words, enc))
        return enc

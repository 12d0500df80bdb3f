"""Built-in control providers: priors with the shape of knowledge and none of its content.

A prior "pays off" only when it beats no prior *and* a control that has the same
values without the knowledge (docs/providers/controls.md):

- ``shuffled`` wraps any provider and moves its values between word pairs::

      priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=0)

- ``constant`` gives every pair the same ``value``.

- ``random-spans`` wraps a provider with concept matches and moves each sentence's matches to
  random word spans (same count, lengths, groups and concepts; deterministic per seed and
  sentence): the control of token features and silver labels::

      priorkit.get_provider("random-spans", provider="ontology", params={"source": "hpo+mesh"}, seed=0)

The shuffle rule.  Within one ``compute_pairs`` call (one precompute batch, one
training batch, one ``similarity`` block) the unique pairs are ordered by a
seeded hash of ``(left, right)``; each pair gets the inner value of the pair that
follows it in that order, the last one the first one's (a cyclic shift).  So

* the values of a call are exactly the inner values of that call, moved (the
  multiset is kept), and a call of k >= 2 pairs moves every value;
* the result does not depend on the order the pairs arrive in, only on which
  pairs are asked together and on the seed;
* for a symmetric inner provider the pairs are folded to ``(min, max)`` first,
  so ``(a, b)`` and ``(b, a)`` get one value (the cache stores them once).

A pair's value therefore depends on the pairs asked with it.  Through a cache
(``priorkit precompute``, or a pipeline's ``prior.cache``) every pair is computed
once and keeps that value afterwards, and the multiset over a dataset is the
inner provider's, batch by batch.  Without a cache the same pair may get
another value in another batch: use a cache with ``shuffled``.

``segment`` is the inner provider's, so phrases (ontology concept mentions) are
laid out as before and only their values move.  The fingerprint holds the
inner provider's fingerprint and the seed.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Mapping, Sequence

import numpy as np

import priorkit
from priorkit.errors import PriorkitError
from priorkit.providers.base import PriorProvider

from priorkit.providers.base import Match

from .combine import resolve_provider


class ShuffledProvider(PriorProvider):
    """The inner provider's values, permuted over word pairs by a seed."""

    name = "shuffled"
    version = "1"
    needs_cache = True

    def __init__(self, provider: Any = None, params: Mapping[str, Any] | None = None, seed: int = 0) -> None:
        self.check_params({"provider": provider, "params": params, "seed": seed})
        if isinstance(provider, str):
            inner = priorkit.get_provider(provider, **dict(params or {}))
        else:
            if params:
                raise PriorkitError("shuffled: params= applies to an inner provider given by name; "
                                    "pass the parameters inside provider= instead")
            inner = resolve_provider(provider)  # a provider object or a {name: ..., **params} dict
        super().__init__(provider=inner, seed=int(seed))
        self.inner = inner
        self.seed = int(seed)
        self.allows_nan = inner.allows_nan
        self.symmetric = bool(getattr(inner, "symmetric", False))

    @staticmethod
    def check_params(params: Mapping[str, Any]) -> None:
        """Raise :class:`PriorkitError` naming the parameter that is missing or wrong."""
        provider = params.get("provider")
        if provider is None or provider == "":
            raise PriorkitError("shuffled needs params.provider: the name of the provider whose values it "
                                "shuffles, e.g. {provider: wordnet, params: {measure: wup}, seed: 0}")
        if provider == "shuffled":
            raise PriorkitError("shuffled: params.provider is 'shuffled' itself; name the provider whose "
                                "values it shuffles (e.g. wordnet)")
        inner_params = params.get("params")
        if inner_params is not None and not isinstance(inner_params, Mapping):
            raise PriorkitError(f"shuffled: params.params must be a mapping of the inner provider's "
                                f"parameters, got {inner_params!r}")
        seed = params.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise PriorkitError(f"shuffled: params.seed must be a whole number, got {seed!r}")

    def load(self) -> None:
        self.inner.ensure_loaded()

    def data_checksum(self) -> str:
        return ""  # the inner fingerprint (in params) already holds the inner data checksum

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        return self.inner.segment(words)

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        ls = [w for w in left for _ in right]
        rs = [w for _ in left for w in right]
        return self.compute_pairs(ls, rs).reshape(len(left), len(right))

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        pairs = list(zip(left, right))
        if self.symmetric:
            pairs = [(a, b) if a <= b else (b, a) for a, b in pairs]
        unique = list(dict.fromkeys(pairs))
        values = self.inner.pair_similarity([a for a, _ in unique], [b for _, b in unique])
        order = sorted(range(len(unique)), key=lambda k: (self._rank(unique[k]), unique[k]))
        moved = np.empty(len(unique), dtype=np.float32)
        # pair order[i] takes the value of pair order[i + 1] (cyclic)
        moved[order] = values[np.roll(order, -1)]
        index = {p: k for k, p in enumerate(unique)}
        return moved[[index[p] for p in pairs]]

    def _rank(self, pair: tuple[str, str]) -> bytes:
        h = hashlib.blake2b(digest_size=8, key=self.seed.to_bytes(8, "little", signed=True))
        h.update(pair[0].encode("utf-8", "surrogatepass") + b"\x00" + pair[1].encode("utf-8", "surrogatepass"))
        return h.digest()


class ConstantProvider(PriorProvider):
    """Every pair gets ``value``: a prior with no knowledge and no spread."""

    name = "constant"
    version = "1"
    allows_nan = False
    symmetric = True

    def __init__(self, value: float = 0.5) -> None:
        self.check_params({"value": value})
        super().__init__(value=float(value))
        self.value = float(value)

    @staticmethod
    def check_params(params: Mapping[str, Any]) -> None:
        value = params.get("value", 0.5)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0.0 <= value <= 1.0:
            raise PriorkitError(f"constant: params.value must be a number in [0, 1], got {value!r}")

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        return np.full((len(left), len(right)), self.value, dtype=np.float32)

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        return np.full(len(left), self.value, dtype=np.float32)


def sentence_rng(seed: int, words: Sequence[str]) -> np.random.Generator:
    """A generator from ``seed`` and the words (stable across processes, unlike ``hash``)."""
    digest = hashlib.blake2b("\x1f".join(words).encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest, "little")])


def random_spans(matches: Sequence[Match], words: Sequence[str], seed: int) -> list[Match]:
    """``matches`` moved to random non-overlapping spans of ``words`` (sorted by start).

    Per sentence, the mentions (a span with its one or more group matches) keep their number,
    lengths, groups and concepts and are put at random non-overlapping word positions; the draw
    depends only on the seed and the words, so every run, epoch and process sees the same spans.
    """
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


class RandomSpansProvider(PriorProvider):
    """The inner provider's concept matches, moved to random word spans of each sentence."""

    name = "random-spans"
    version = "1"

    def __init__(self, provider: Any = None, params: Mapping[str, Any] | None = None, seed: int = 0) -> None:
        self.check_params({"provider": provider, "params": params, "seed": seed})
        if isinstance(provider, str):
            inner = priorkit.get_provider(provider, **dict(params or {}))
        else:
            if params:
                raise PriorkitError("random-spans: params= applies to an inner provider given by name; "
                                    "pass the parameters inside provider= instead")
            inner = resolve_provider(provider)
        if not inner.supports_matches:
            raise PriorkitError(f"random-spans: provider {inner.name!r} has no concept matches to move; "
                                "wrap one that implements matches(), e.g. ontology")
        super().__init__(provider=inner, seed=int(seed))
        self.inner = inner
        self.seed = int(seed)

    @staticmethod
    def check_params(params: Mapping[str, Any]) -> None:
        provider = params.get("provider")
        if provider is None or provider == "":
            raise PriorkitError("random-spans needs params.provider: the provider whose matches it moves, "
                                "e.g. {provider: ontology, params: {source: hpo+mesh}, seed: 0}")
        if provider == "random-spans":
            raise PriorkitError("random-spans: params.provider is 'random-spans' itself; name the provider "
                                "whose matches it moves (e.g. ontology)")
        inner_params = params.get("params")
        if inner_params is not None and not isinstance(inner_params, Mapping):
            raise PriorkitError(f"random-spans: params.params must be a mapping of the inner provider's "
                                f"parameters, got {inner_params!r}")
        seed = params.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise PriorkitError(f"random-spans: params.seed must be a whole number, got {seed!r}")

    def load(self) -> None:
        self.inner.ensure_loaded()

    def match_groups(self) -> list[str]:
        return self.inner.match_groups()

    def compute_matches(self, words: Sequence[str]) -> list[Match]:
        return random_spans(self.inner.matches(words), words, self.seed)

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        raise PriorkitError("random-spans is a control of concept matches (token features, silver labels) "
                            "and has no pair values; the control of an attention prior is shuffled")


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("shuffled", ShuffledProvider, "control: another provider's values permuted over word pairs (seed)")
    register("constant", ConstantProvider, "control: one value for every pair")
    register("random-spans", RandomSpansProvider,
             "control: another provider's concept matches moved to random word spans (seed)")

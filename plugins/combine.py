"""Built-in ``combine`` provider: several providers as one.

::

    priorkit.get_provider("combine", providers=["embedding", ("wordnet", {"measure": "wup"})],
                          how="weighted", weights=[0.7, 0.3])

Children may be provider objects, registered names, ``(name, params)`` pairs
or ``{"name": ..., **params}`` dicts (the last two forms are what the command
line and YAML pipelines can express).  NaN means "this child has no
knowledge", so the reductions skip it:

- ``max``: the largest known value (``nanmax``);
- ``mean``: the mean of the known values (``nanmean``);
- ``weighted``: ``sum(w_i * v_i) / sum(w_i)`` over the children that know the
  pair, so a child's silence does not drag the value towards 0;
- ``first-known``: the first child, in order, that knows the pair.

A pair no child knows stays NaN.  The fingerprint is made of the children's
fingerprints (which include their data checksums), ``how`` and the weights,
so cached combined values change whenever any child's would.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

import priorkit
from priorkit.errors import PriorkitError
from priorkit.providers.base import PriorProvider

HOWS = ("max", "mean", "weighted", "first-known")

ChildEntry = Any  # PriorProvider | str | tuple[str, dict] | dict


def resolve_provider(entry: ChildEntry, position: int | None = None) -> PriorProvider:
    """A provider from an object, a name, a ``(name, params)`` pair or a ``{"name": ...}`` dict."""
    where = f"combine: providers[{position}]" if position is not None else "combine"
    if isinstance(entry, PriorProvider):
        return entry
    if isinstance(entry, str):
        return priorkit.get_provider(entry)
    if isinstance(entry, Mapping):
        params = dict(entry)
        name = params.pop("name", None)
        if not isinstance(name, str):
            raise PriorkitError(f"{where} is a dict without a 'name' key: {entry!r}")
        return priorkit.get_provider(name, **params)
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str) \
            and isinstance(entry[1], Mapping):
        return priorkit.get_provider(entry[0], **dict(entry[1]))
    raise PriorkitError(
        f"{where} is {entry!r} ({type(entry).__name__}); expected a PriorProvider, a provider name, "
        "a (name, params) pair or a {'name': ..., **params} dict"
    )


class CombineProvider(PriorProvider):
    """Combine other providers by max, mean, weighted mean or the first known value."""

    name = "combine"
    version = "1"

    def __init__(self, providers: Sequence[ChildEntry], how: str = "max",
                 weights: Sequence[float] | None = None) -> None:
        if isinstance(providers, (str, PriorProvider)) or not isinstance(providers, Sequence):
            raise PriorkitError("combine: providers= must be a list of providers (or names), "
                                f"got {type(providers).__name__}")
        if not providers:
            raise PriorkitError("combine: providers= is empty; give at least one provider")
        if how not in HOWS:
            raise PriorkitError(f"combine: how={how!r} is not one of {', '.join(HOWS)}")
        children = [resolve_provider(p, i) for i, p in enumerate(providers)]
        if how == "weighted":
            if weights is None:
                raise PriorkitError("combine: how='weighted' needs weights=[...], one per provider")
            weights = [float(w) for w in weights]
            if len(weights) != len(children):
                raise PriorkitError(
                    f"combine: {len(weights)} weight(s) for {len(children)} provider(s); give one each"
                )
            if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
                raise PriorkitError(
                    f"combine: weights must be finite, >= 0 and not all 0; got {weights}"
                )
        elif weights is not None:
            raise PriorkitError(f"combine: weights= only applies to how='weighted', not how={how!r}")
        super().__init__(providers=children, how=how, weights=weights)
        self.children: list[PriorProvider] = children
        self.how = how
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        # NaN can only come out if some child may return it (all-NaN -> NaN).
        self.allows_nan = any(c.allows_nan for c in children)
        # Symmetric only if every child is (what the DuckDB cache keys pairs by).
        self.symmetric = all(getattr(c, "symmetric", False) for c in children)

    def load(self) -> None:
        for child in self.children:
            child.ensure_loaded()

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        stack = np.stack([c.similarity(left, right) for c in self.children])  # (K, L, R)
        return reduce_stack(stack, self.how, self.weights)

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        """Longest multi-word spans of any child that do not overlap; single words elsewhere."""
        spans = {s for c in self.children for s in c.segment(words) if s[1] - s[0] > 1}
        taken = np.zeros(len(words), dtype=bool)
        chosen: list[tuple[int, int]] = []
        for start, end in sorted(spans, key=lambda s: (s[0] - s[1], s[0])):
            if not taken[start:end].any():
                taken[start:end] = True
                chosen.append((start, end))
        chosen += [(i, i + 1) for i in np.flatnonzero(~taken).tolist()]
        return sorted(chosen)


def reduce_stack(stack: np.ndarray, how: str, weights: np.ndarray | None = None) -> np.ndarray:
    """Combine (K, ...) child values into (...); NaN = unknown, all-NaN stays NaN."""
    known = ~np.isnan(stack)                                         # (K, L, R)
    any_known = known.any(axis=0)                                    # (L, R)
    filled = np.where(known, stack, 0.0).astype(np.float64)
    if how == "max":
        out = np.where(known, stack, -np.inf).max(axis=0)
    elif how == "mean":
        out = filled.sum(axis=0) / np.maximum(known.sum(axis=0), 1)
    elif how == "weighted":
        w = np.asarray(weights, dtype=np.float64).reshape((-1,) + (1,) * (stack.ndim - 1))
        mass = (w * known).sum(axis=0)
        out = np.divide((w * filled).sum(axis=0), mass, out=np.zeros(mass.shape), where=mass > 0)
        any_known &= mass > 0           # known only by zero-weight children: no opinion
    elif how == "first-known":
        first = known.argmax(axis=0)                                 # first True per cell
        out = np.take_along_axis(filled, first[None], axis=0)[0]
    else:  # pragma: no cover - validated in __init__
        raise PriorkitError(f"combine: unknown how={how!r}")
    return np.where(any_known, out, np.nan).astype(np.float32)


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("combine", CombineProvider, "combine other providers: max, mean, weighted, first-known")

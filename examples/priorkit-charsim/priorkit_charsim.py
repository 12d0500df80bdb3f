"""Example priorkit plug-in: Jaccard similarity of character n-grams.

Useful on its own for spelling variants and morphology ("hypotension" vs
"hypotensive"), and a template for writing a provider.
"""
from __future__ import annotations

import numpy as np

import priorkit

__version__ = "0.2.0"


class CharSimProvider(priorkit.PriorProvider):
    """Jaccard similarity of character n-grams (word boundaries marked with #)."""

    name = "charsim"
    version = "1"          # bump when the values change for the same parameters
    allows_nan = False     # every pair of strings has a value

    def __init__(self, n: int = 3):
        if n < 1:
            raise ValueError(f"charsim: n must be >= 1, got {n}")
        super().__init__(n=n)  # parameters go to the base class: they are part of the cache key
        self.n = n

    def _grams(self, word: str) -> set[str]:
        w = f"#{word}#"
        return {w[i:i + self.n] for i in range(max(1, len(w) - self.n + 1))}

    def compute(self, left, right):
        # Inputs arrive de-duplicated; build one sparse incidence matrix per side
        # and get every intersection with one matrix product.
        vocab: dict[str, int] = {}
        def incidence(words):
            rows = [[vocab.setdefault(g, len(vocab)) for g in self._grams(w)] for w in words]
            return rows
        lr, rr = incidence(left), incidence(right)
        A = np.zeros((len(left), len(vocab)), dtype=np.float32)
        B = np.zeros((len(right), len(vocab)), dtype=np.float32)
        for i, cols in enumerate(lr):
            A[i, cols] = 1
        for j, cols in enumerate(rr):
            B[j, cols] = 1
        inter = A @ B.T                                   # (len(left), len(right))
        union = A.sum(1)[:, None] + B.sum(1)[None, :] - inter
        return inter / np.maximum(union, 1)


@priorkit.hookimpl
def register_prior_providers(register):
    register("charsim", CharSimProvider, description="character n-gram Jaccard similarity")

"""A real provider plug-in for tests: character-trigram Jaccard similarity.

Symmetric; words without a letter get NaN ("no knowledge"), so NaN storage is
exercised.  Load it like a user's plug-in (``PRIORKIT_PLUGINS_DIR`` set to this
folder) or import it; :func:`jaccard_matrix` is the one trigram Jaccard of the
test suite.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import priorkit
from priorkit.providers.base import PriorProvider


def grams(word: str, pad: str = "##") -> frozenset[str]:
    """The character trigrams of ``word`` with ``pad`` on both sides."""
    w = pad + word + pad
    return frozenset(w[i:i + 3] for i in range(len(w) - 2))


def jaccard_matrix(left: Sequence[str], right: Sequence[str], pad: str = "##") -> np.ndarray:
    """(len(left), len(right)) float32 trigram Jaccard of every pair."""
    gl, gr = [grams(w, pad) for w in left], [grams(w, pad) for w in right]
    out = np.array([[len(a & b) / len(a | b) for b in gr] for a in gl], dtype=np.float32)
    return out.reshape(len(left), len(right))


def no_letter_is_nan(out: np.ndarray, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
    """NaN for every pair with a word that has no letter (numbers, punctuation)."""
    out[[not any(c.isalpha() for c in w) for w in left], :] = np.nan
    out[:, [not any(c.isalpha() for c in w) for w in right]] = np.nan
    return out


class Trigram(PriorProvider):
    """Character-trigram Jaccard similarity."""

    name = "trigram"
    version = "1"
    symmetric = True

    def compute(self, left, right):
        return no_letter_is_nan(jaccard_matrix(left, right), left, right)


@priorkit.hookimpl
def register_prior_providers(register):
    register("trigram", Trigram)

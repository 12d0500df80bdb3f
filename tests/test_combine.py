"""The combine provider against numpy references, on real providers with real gaps."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import priorkit
from priorkit.errors import PriorkitError
from priorkit.providers.base import PriorProvider

# Words chosen so that the children disagree about what they know: GloVe lacks
# "petshop" and "sofabed" (ConceptNet has them), ConceptNet lacks "coalition"
# and "arafat" (GloVe has them), and "qwzxvq" is unknown to all.
LEFT = ["dog", "petshop", "qwzxvq", "coalition", "sofabed", "heart attack"]
RIGHT = ["cat", "arafat", "qwzxvq", "pet", "couch", "stroke", "refridgerator"]


@pytest.fixture(scope="module")
def children():
    glove = priorkit.get_provider("embedding", vectors="glove")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conceptnet = priorkit.get_provider("conceptnet")
    glove_shift = priorkit.get_provider("embedding", vectors="glove", scale="shift")
    return [glove, conceptnet, glove_shift]


@pytest.fixture(scope="module")
def stack(children):
    values = np.stack([c.similarity(LEFT, RIGHT) for c in children]).astype(np.float64)  # (K, L, R)
    assert np.isnan(values).any() and not np.isnan(values).all(axis=0).all()
    assert np.isnan(values).all(axis=0).any()       # some cell nobody knows
    assert (np.isnan(values).any(axis=0) & ~np.isnan(values).all(axis=0)).any()  # partial knowledge
    return values


def _combine(children, **kw):
    return priorkit.get_provider("combine", providers=children, **kw)


def test_max_and_mean_ignore_nan(children, stack):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy's all-NaN slice warnings
        want_max = np.nanmax(stack, axis=0)
        want_mean = np.nanmean(stack, axis=0)
    np.testing.assert_allclose(_combine(children, how="max").similarity(LEFT, RIGHT), want_max,
                               rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(_combine(children, how="mean").similarity(LEFT, RIGHT), want_mean,
                               rtol=1e-6, equal_nan=True)


def test_weighted_renormalises_over_known_children(children, stack):
    w = np.array([0.5, 2.0, 1.0])
    got = _combine(children, how="weighted", weights=w.tolist()).similarity(LEFT, RIGHT)
    want = np.full(stack.shape[1:], np.nan)
    for i in range(stack.shape[1]):
        for j in range(stack.shape[2]):
            vals = stack[:, i, j]
            ok = ~np.isnan(vals)
            if ok.any():
                want[i, j] = np.dot(w[ok], vals[ok]) / w[ok].sum()
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_first_known_takes_children_in_order(children, stack):
    got = _combine([children[1], children[0]], how="first-known").similarity(LEFT, RIGHT)
    want = np.where(np.isnan(stack[1]), stack[0], stack[1])
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_all_unknown_stays_nan(children, stack):
    nobody = np.isnan(stack).all(axis=0)
    for how, kw in (("max", {}), ("mean", {}), ("first-known", {}), ("weighted", {"weights": [1, 1, 1]})):
        got = _combine(children, how=how, **kw).similarity(LEFT, RIGHT)
        assert np.array_equal(np.isnan(got), nobody), how


def test_fingerprint_comes_from_the_children(children):
    a = _combine(children[:2], how="max")
    b = priorkit.get_provider("combine", providers=[("embedding", {"vectors": "glove"}), "conceptnet"], how="max")
    c = priorkit.get_provider("combine", providers=[{"name": "embedding", "vectors": "glove"}, "conceptnet"],
                              how="max")
    assert a.fingerprint == b.fingerprint == c.fingerprint
    assert _combine(children[:2], how="mean").fingerprint != a.fingerprint
    assert _combine(children[1::-1], how="max").fingerprint != a.fingerprint       # order matters
    other = priorkit.get_provider("conceptnet", hops=1)
    assert _combine([children[0], other], how="max").fingerprint != a.fingerprint
    assert _combine(children, how="weighted", weights=[1, 2, 3]).fingerprint != \
        _combine(children, how="weighted", weights=[1, 2, 4]).fingerprint
    assert a.describe()["params"]["providers"] == [{"provider": children[0].fingerprint},
                                                  {"provider": children[1].fingerprint}]


def test_validation_errors():
    glove = priorkit.get_provider("embedding", vectors="glove")
    with pytest.raises(PriorkitError, match="how='median' is not one of max, mean, weighted, first-known"):
        _combine([glove], how="median")
    with pytest.raises(PriorkitError, match="needs weights"):
        _combine([glove], how="weighted")
    with pytest.raises(PriorkitError, match="2 weight.*for 1 provider"):
        _combine([glove], how="weighted", weights=[1, 2])
    with pytest.raises(PriorkitError, match="only applies to how='weighted'"):
        _combine([glove], how="max", weights=[1])
    with pytest.raises(PriorkitError, match=">= 0 and not all 0"):
        _combine([glove, glove], how="weighted", weights=[1, -1])
    with pytest.raises(PriorkitError, match="empty"):
        _combine([], how="max")
    with pytest.raises(PriorkitError, match=r"providers\[1\] is 42"):
        _combine([glove, 42], how="max")
    with pytest.raises(priorkit.UnknownProviderError, match="wordnett"):
        _combine(["wordnett"], how="max")


def test_nan_policy_follows_the_children(children):
    minilm = priorkit.get_provider("embedding")
    assert _combine([minilm], how="max").allows_nan is False
    assert _combine([minilm, children[0]], how="max").allows_nan is True
    assert _combine(children[:2], how="max").symmetric is True


class _Spans(PriorProvider):
    """A real (tiny) provider that knows one two-word unit, to test segmentation."""

    name = "spans-test"

    def __init__(self, phrase: tuple[str, str]) -> None:
        super().__init__(phrase=list(phrase))
        self.phrase = phrase

    def compute(self, left, right):
        return np.zeros((len(left), len(right)))

    def segment(self, words):
        spans, i = [], 0
        while i < len(words):
            if tuple(words[i:i + 2]) == self.phrase:
                spans.append((i, i + 2))
                i += 2
            else:
                spans.append((i, i + 1))
                i += 1
        return spans


def test_segment_merges_children_longest_first(children):
    words = ["a", "heart", "attack", "at", "ice", "cream", "time"]
    combo = _combine([children[0], _Spans(("heart", "attack")), _Spans(("ice", "cream"))], how="max")
    assert combo.segment(words) == [(0, 1), (1, 3), (3, 4), (4, 6), (6, 7)]
    overlap = _combine([_Spans(("attack", "at")), _Spans(("heart", "attack"))], how="max")
    spans = overlap.segment(words)
    covered = sorted(i for s, e in spans for i in range(s, e))
    assert covered == list(range(len(words)))          # a partition, no overlap
    assert (2, 4) in spans or (1, 3) in spans


def test_nested_combination_and_output_validation(children):
    inner = _combine(children[:2], how="mean")
    outer = priorkit.get_provider("combine", providers=[inner, children[2]], how="max")
    got = outer.similarity(LEFT, RIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmax(np.stack([inner.similarity(LEFT, RIGHT), children[2].similarity(LEFT, RIGHT)]), axis=0)
    np.testing.assert_allclose(got, want, equal_nan=True)
    assert got.dtype == np.float32 and np.nanmax(got) <= 1 and np.nanmin(got) >= 0

"""The provider interface: what every knowledge source implements.

A provider maps two lists of words (or phrases) to a matrix of similarities in
[0, 1], with NaN meaning "no knowledge".  Subclasses implement ``compute``;
the final ``similarity`` method de-duplicates the inputs, loads heavy
resources on first use, calls ``compute`` and validates what came back, so a
faulty plug-in is caught at its boundary with its name in the error.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from typing import Any, ClassVar, Sequence

import numpy as np

from ..checksums import json_sha256
from ..errors import ProviderOutputError


@dataclasses.dataclass(frozen=True)
class Match:
    """A concept mention a provider recognised: words ``[start, end)`` of the input word
    list name ``concept_ids``, which belong to the semantic ``group`` (one of the
    provider's :meth:`PriorProvider.match_groups`, e.g. ``"mesh:C"``)."""

    start: int
    end: int
    concept_ids: tuple[str, ...]
    group: str


class PriorProvider:
    """Base class of knowledge sources.

    Class attributes subclasses set:

    - ``name``: the registry name (``"wordnet"``)
    - ``version``: bump it whenever values change for the same parameters; it is
      part of the cache key
    - ``allows_nan``: whether NaN ("no knowledge") may appear in the output
    - ``symmetric``: whether sim(a, b) == sim(b, a); the cache then stores each
      unordered pair once

    ``supports_matches`` is set for a subclass that implements ``compute_matches``
    (concept mentions with spans and groups, for token features; docs/plugins.md).
    """

    name: ClassVar[str] = "provider"
    version: ClassVar[str] = "1"
    allows_nan: ClassVar[bool] = True
    symmetric: ClassVar[bool] = False
    #: whether a pair keeps one value only through a cache (values depend on the pairs asked
    #: together, as with ``shuffled``); pipelines then refuse ``cache: null``
    needs_cache: ClassVar[bool] = False
    #: whether ``matches(words)`` works: set automatically for a class that defines
    #: ``compute_matches``
    supports_matches: ClassVar[bool] = False

    #: set by the plug-in manager: the plug-in that registered this provider
    plugin: str | None = None
    #: set by the plug-in manager for a plug-in loaded from a folder: the SHA-256
    #: of its source file, so that editing the code gives new cache keys
    code_checksum: str = ""

    def __init__(self, **params: Any) -> None:
        self.params: dict[str, Any] = dict(params)
        self._loaded = False
        self._load_lock = threading.Lock()
        self._fingerprint: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        finals = (("similarity", "compute"), ("pair_similarity", "compute_pairs"), ("matches", "compute_matches"))
        for final, hook in finals:
            if final in cls.__dict__:
                raise TypeError(
                    f"{cls.__qualname__} overrides PriorProvider.{final}; implement "
                    f"{hook}(...) instead so that inputs and outputs are validated"
                )
        if "compute_matches" in cls.__dict__:
            cls.supports_matches = True

    # ---- to implement -------------------------------------------------
    @staticmethod
    def check_params(params: dict[str, Any]) -> None:
        """Raise a ``PriorkitError`` when ``params`` cannot build this provider.

        Cheap and without loading data: pipelines call it while loading the file, to
        report a missing or wrong parameter by file and line before anything trains.
        """

    def load(self) -> None:
        """Load heavy resources (files, models).  Called once, on first use."""

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Return a (len(left), len(right)) float array.  Inputs are unique."""
        raise NotImplementedError

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise values, shape (len(left),): ``out[k] = sim(left[k], right[k])``.

        Pairs arrive unique.  The default groups pairs by left word and calls
        ``compute`` once per group; providers with a pair kernel override it.
        """
        groups: dict[str, list[int]] = {}
        for k, w in enumerate(left):
            groups.setdefault(w, []).append(k)
        out = np.empty(len(left), dtype=np.float32)
        for w, ks in groups.items():
            rights = [right[k] for k in ks]
            block = validate_output(self.compute([w], rights), (1, len(rights)), self)
            out[ks] = block[0]
        return out

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        """Group consecutive words into phrases this source knows as one unit.

        Returns half-open spans ``[(start, end), ...]`` that cover ``words`` in
        order.  The default is one span per word; an ontology overrides it to
        mark multi-word concept mentions ("myocardial infarction").  The
        aligner compares spans (joined with a space) instead of single words,
        and tokens inside one span get similarity 1 with each other.
        """
        return [(i, i + 1) for i in range(len(words))]

    def compute_matches(self, words: Sequence[str]) -> list[Match]:
        """Concept mentions in ``words`` as :class:`Match` objects, sorted by start.

        Spans lie in ``[0, len(words)]``, do not overlap, and a span repeats only for
        a mention whose concepts fall in several groups (one match per group).
        Implement it together with :meth:`match_groups`; :meth:`matches` validates.
        """
        raise NotImplementedError

    def match_groups(self) -> list[str]:
        """Every group ``compute_matches`` can emit, in a fixed order (the feature width)."""
        return []

    def match_branch(self, match: Match) -> str:
        """The branch of a match inside its group, finer than the group (an ontology: the
        level-2 concepts above the match's concepts, e.g. MeSH's "Enzymes and Coenzymes" under
        tree D), for calibration by branch (``prior.calibrate.branches``); '' when the provider
        has no such level (the default)."""
        return ""

    def data_checksum(self) -> str:
        """A checksum of the data files the values depend on ('' if none)."""
        return ""

    # ---- provided -----------------------------------------------------
    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                self.load()
                self._loaded = True

    @property
    def fingerprint(self) -> str:
        """Stable key of (name, version, params, data checksum[, code checksum]): the cache key.

        The code checksum is there only for providers of folder plug-ins
        (``code_checksum``); installed plug-ins mark code changes by ``version``.
        """
        if self._fingerprint is None:
            payload = {
                "name": self.name,
                "version": self.version,
                "params": _canonical(self.params),
                "data": self.data_checksum(),
            }
            if self.code_checksum:
                payload["code"] = self.code_checksum
            self._fingerprint = self.name + "-" + json_sha256(payload, 16)
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "params": _canonical(self.params),
            "fingerprint": self.fingerprint,
            "plugin": self.plugin,
        }

    def similarity(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """(len(left), len(right)) float32 matrix in [0, 1]; NaN = no knowledge."""
        left = _as_words(left, "left", self)
        right = _as_words(right, "right", self)
        if not left or not right:
            return np.zeros((len(left), len(right)), dtype=np.float32)
        self.ensure_loaded()
        uleft, inv_l = _unique(left)
        uright, inv_r = _unique(right)
        out = self.compute(uleft, uright)
        out = validate_output(out, (len(uleft), len(uright)), self)
        return out[np.ix_(inv_l, inv_r)]

    def pair_similarity(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise (len(left),) float32: ``out[k] = similarity([left[k]], [right[k]])``.

        For many unrelated pairs at once (a batch of sentence pairs, a
        precompute batch) without building the full len(left) x len(right) block.
        """
        left = _as_words(left, "left", self)
        right = _as_words(right, "right", self)
        if len(left) != len(right):
            raise ValueError(
                f"{self.name}.pair_similarity: left has {len(left)} words but right has {len(right)}; "
                "pair k is (left[k], right[k])"
            )
        if not left:
            return np.zeros(0, dtype=np.float32)
        self.ensure_loaded()
        # de-duplicate pairs with integer codes (a dict of tuples is 10x slower); ids in
        # first-seen order, left then right, looked up with C-level map()
        ids = {w: i for i, w in enumerate(dict.fromkeys(left + right))}
        li = np.fromiter(map(ids.__getitem__, left), dtype=np.int64, count=len(left))
        ri = np.fromiter(map(ids.__getitem__, right), dtype=np.int64, count=len(right))
        _, first, inverse = np.unique(li * len(ids) + ri, return_index=True, return_inverse=True)
        uleft = [left[k] for k in first.tolist()]
        uright = [right[k] for k in first.tolist()]
        out = validate_output(self.compute_pairs(uleft, uright), (len(first),), self)
        return out[inverse]

    def matches(self, words: Sequence[str]) -> list[Match]:
        """Concept mentions in ``words`` (a list of words), validated; see :meth:`compute_matches`."""
        if not self.supports_matches:
            raise ProviderOutputError(
                f"{_who(self)} has no concept matches (it does not implement compute_matches); "
                "use a provider that does, e.g. ontology"
            )
        words = _as_words(words, "words", self)
        if not words:
            return []
        self.ensure_loaded()
        return validate_matches(self.compute_matches(words), len(words), self)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"<{type(self).__name__} {self.name}({params})>"


def _who(provider: PriorProvider) -> str:
    return f"provider {provider.name!r}" + (f" (plug-in {provider.plugin!r})" if provider.plugin else "")


def validate_matches(out: Any, n_words: int, provider: PriorProvider) -> list[Match]:
    """Check ``compute_matches`` output for ``n_words`` words; raises naming the culprit."""
    who = _who(provider)
    if not isinstance(out, (list, tuple)):
        raise ProviderOutputError(f"{who} returned {type(out).__name__} from compute_matches; "
                                  "expected a list of priorkit.Match")
    groups = set(provider.match_groups())
    previous: Match | None = None
    for k, m in enumerate(out):
        if not isinstance(m, Match):
            raise ProviderOutputError(f"{who}: compute_matches item {k} is {type(m).__name__}, "
                                      "not a priorkit.Match(start, end, concept_ids, group)")
        if (not all(isinstance(x, int) and not isinstance(x, bool) for x in (m.start, m.end))
                or not 0 <= m.start < m.end <= n_words):
            raise ProviderOutputError(f"{who}: match {k} spans words [{m.start!r}, {m.end!r}) of "
                                      f"{n_words}; a span needs 0 <= start < end <= len(words)")
        if not isinstance(m.concept_ids, tuple) or not all(isinstance(c, str) for c in m.concept_ids):
            raise ProviderOutputError(f"{who}: match {k} has concept_ids {m.concept_ids!r}; "
                                      "give a tuple of str")
        if m.group not in groups:
            raise ProviderOutputError(f"{who}: match {k} has group {m.group!r}, which match_groups() "
                                      f"does not list ({sorted(groups)}); list every group it emits")
        if previous is not None:
            same = (m.start, m.end) == (previous.start, previous.end)
            if same and m.group == previous.group:
                raise ProviderOutputError(f"{who}: matches {k - 1} and {k} repeat span [{m.start}, "
                                          f"{m.end}) with the same group {m.group!r}; merge them")
            if not same and m.start < previous.end:
                order = "not sorted" if m.start < previous.start else "overlapping"
                raise ProviderOutputError(
                    f"{who}: matches {k - 1} [{previous.start}, {previous.end}) and {k} [{m.start}, "
                    f"{m.end}) are {order}; return non-overlapping spans sorted by start")
        previous = m
    return list(out)


def validate_output(out: Any, shape: tuple[int, int], provider: PriorProvider) -> np.ndarray:
    """Check a provider's raw output; return it as float32.  Raises with the culprit named."""
    who = _who(provider)
    if not isinstance(out, np.ndarray):
        raise ProviderOutputError(
            f"{who} returned {type(out).__name__}, expected a numpy.ndarray of shape {shape}; "
            "fix its compute() method"
        )
    if out.shape != shape:
        what = f"{shape[0]} x {shape[1]} words" if len(shape) == 2 else f"{shape[0]} word pairs"
        raise ProviderOutputError(
            f"{who} returned shape {out.shape} for {what}; compute(left, right) must return "
            "(len(left), len(right)) and compute_pairs(left, right) (len(left),)"
        )
    if not np.issubdtype(out.dtype, np.floating):
        raise ProviderOutputError(f"{who} returned dtype {out.dtype}; expected a float array in [0, 1]")
    out = out.astype(np.float32, copy=False)
    nan = np.isnan(out)
    if nan.any() and not provider.allows_nan:
        raise ProviderOutputError(
            f"{who} returned {int(nan.sum())} NaN value(s) but declares allows_nan = False; "
            "return a number for every pair or set allows_nan = True"
        )
    finite = out[~nan]
    if finite.size and (not np.isfinite(finite).all() or finite.min() < 0.0 or finite.max() > 1.0):
        bad = finite[~np.isfinite(finite) | (finite < 0) | (finite > 1)]
        raise ProviderOutputError(
            f"{who} returned values outside [0, 1] (e.g. {bad[:3].tolist()}); "
            "scale its output into [0, 1] (NaN means 'no knowledge')"
        )
    return out


def _as_words(words: Sequence[str], side: str, provider: PriorProvider) -> list[str]:
    if isinstance(words, str):
        raise TypeError(
            f"{provider.name}.similarity({side}=...) got a str; pass a list of words, e.g. [{words!r}]"
        )
    out = list(words)
    if set(map(type, out)) - {str} and not all(isinstance(w, str) for w in out):  # fast path: all str
        bad = next(w for w in out if not isinstance(w, str))
        raise TypeError(f"{provider.name}.similarity: {side} holds {type(bad).__name__} {bad!r}, not str")
    return out


def _unique(words: list[str]) -> tuple[list[str], np.ndarray]:
    index: dict[str, int] = {}
    inverse = np.empty(len(words), dtype=np.int64)
    for i, w in enumerate(words):
        inverse[i] = index.setdefault(w, len(index))
    return list(index), inverse


def _canonical(value: Any) -> Any:
    """JSON-able, order-stable form of parameters (providers nest as fingerprints)."""
    if isinstance(value, PriorProvider):
        return {"provider": value.fingerprint}
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

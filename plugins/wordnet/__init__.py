"""Built-in ``wordnet`` prior provider: WordNet 3.0 similarities, identical to NLTK's, fast.

Measures (``measure=``):

- ``xia2021`` (default): the word measure of Xia et al. (WWW 2021), as in
  their code: stop words 0; both words in WordNet: 1.0 when one is a lemma of
  the other's synsets or the first antonym of such a lemma, else the MEAN of
  Wu-Palmer over all synset pairs in both directions; otherwise 1 for equal
  strings, 0 else.  Never NaN.
- ``path``, ``wup``, ``lch``, ``res``, ``jcn``, ``lin``: NLTK's synset
  similarity, MAX over the synset pairs of the two words, mapped into [0, 1]
  by a fixed monotone map where NLTK's range is wider (see
  docs/providers/wordnet.md).  NaN when a word has no synsets or no synset
  pair has a value.

WordNet becomes flat arrays once per machine (persisted, keyed by the files'
checksum) and the pair loops run compiled (numba): a 500k-pair corpus takes
seconds instead of the half hour NLTK needs.
"""
from __future__ import annotations

import difflib
import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

import priorkit
from priorkit.errors import PriorkitError
from priorkit.providers.base import PriorProvider, validate_output
from priorkit.align.words import PAPER_STOP_WORDS

from . import files as wnfiles

__version__ = "1.0"

MEASURES = ("xia2021", "path", "wup", "lch", "res", "jcn", "lin")
IC_MEASURES = ("res", "jcn", "lin")
#: measures whose value for (a, b) equals the value for (b, a)
SYMMETRIC = ("xia2021", "path", "lch", "res", "jcn", "lin")


class WordNetMeasureError(PriorkitError, ValueError):
    """An unknown ``measure=`` for the wordnet provider."""


# One index per WordNet checksum per process, shared by all providers.
_INDEXES: dict[str, Any] = {}
_IC: dict[str, tuple[np.ndarray, float]] = {}
_LOCK = threading.Lock()


def index_dir() -> Path:
    """Root of the saved indexes: ``$PRIORKIT_WORDNET_INDEX_DIR``, else
    ``$PRIORKIT_HOME/index`` (always writable, unlike a shared NLTK data folder);
    the WordNet index is the folder ``wordnet/<key>`` under it."""
    from .. import _support

    env = os.environ.get("PRIORKIT_WORDNET_INDEX_DIR")
    return Path(env).expanduser() if env else _support.index_root()


def get_index(files: wnfiles.FileSet, checksum: str):
    """The index of these WordNet files: from memory, from disk, or built (then saved)."""
    from . import build as wnbuild

    with _LOCK:
        idx = _INDEXES.get(checksum)
        if idx is None:
            idx = wnbuild.load_or_build(files, checksum, index_dir())
            _INDEXES[checksum] = idx
        return idx


class WordNetProvider(PriorProvider):
    """WordNet 3.0 word similarity (NLTK-identical measures and the paper's xia2021)."""

    name: ClassVar[str] = "wordnet"
    version: ClassVar[str] = "1"
    allows_nan: ClassVar[bool] = True

    def __init__(self, measure: str = "xia2021", path: str | os.PathLike | None = None,
                 ic: str = "ic-brown.dat") -> None:
        if measure not in MEASURES:
            near = difflib.get_close_matches(str(measure), MEASURES, n=1)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            raise WordNetMeasureError(
                f"wordnet provider: unknown measure {measure!r}; choose one of "
                f"{', '.join(MEASURES)}.{hint}"
            )
        params: dict[str, Any] = {"measure": measure}
        if measure in IC_MEASURES:
            params["ic"] = str(ic)
        super().__init__(**params)
        # The location is not a parameter: the data checksum identifies the files,
        # so the same WordNet in two places shares one cache.
        self.measure = measure
        #: sim(a, b) == sim(b, a): the cache stores such pairs once (wup alone is
        #: asymmetric: NLTK's a.wup_similarity(b) picks ``a`` as subsumer first)
        self.symmetric = measure in SYMMETRIC
        self.path = None if path is None else str(path)
        self.ic = str(ic)
        self._location: wnfiles.WordNetLocation | None = None
        self._checksums: dict[str, str] = {}
        self._index = None
        self._K = None  # the kernels module (imports numba), loaded with the data
        self._code = -1
        self._G: tuple | None = None
        self._words: dict[str, tuple[list[int], set[str] | None]] = {}
        self._tls = threading.local()
        self.load_seconds: float | None = None
        if self.path is not None:
            self.location()  # a bad path fails here, at construction

    # ---- data ---------------------------------------------------------
    def location(self) -> wnfiles.WordNetLocation:
        """Where the WordNet files are (explicit path, NLTK data, priorkit's copy)."""
        if self._location is None:
            self._location = wnfiles.locate(self.path)
        return self._location

    def _wordnet_checksum(self) -> str:
        if "wordnet" not in self._checksums:
            self._checksums["wordnet"] = wnfiles.checksum(self.location().wordnet, wnfiles.WORDNET_FILES)
        return self._checksums["wordnet"]

    def data_checksum(self) -> str:
        """sha256 of the WordNet files (and, for res/jcn/lin, of the IC file)."""
        parts = [self._wordnet_checksum()]
        if self.measure in IC_MEASURES:
            if "ic" not in self._checksums:
                files, name = wnfiles.locate_ic(self.location(), self.ic)
                self._checksums["ic"] = wnfiles.checksum(files, [name])
            parts.append(self._checksums["ic"])
        return ":".join(parts)

    def load(self) -> None:
        from . import index as wnindex
        from . import kernels as K

        t0 = time.perf_counter()
        idx = get_index(self.location().wordnet, self._wordnet_checksum())
        G = idx.tables
        if self.measure in IC_MEASURES:
            files, name = wnfiles.locate_ic(self.location(), self.ic)
            key = self.data_checksum()
            with _LOCK:
                if key not in _IC:
                    _IC[key] = wnindex.load_ic(files, name, idx)
            ic, max_ic = _IC[key]
            G = K.graph_tables(idx.arrays, ic, max_ic if max_ic > 0 else 1.0)
        self._K = K
        self._code = K.MEASURE_CODES[self.measure]
        self._index = idx
        self._G = G
        self.load_seconds = time.perf_counter() - t0

    @property
    def index(self):
        """The :class:`WordNetIndex` in use (loads it)."""
        self.ensure_loaded()
        return self._index

    def _workspace(self) -> tuple:
        """Per-thread scratch tables for the kernels (a provider may serve several threads)."""
        ws = getattr(self._tls, "ws", None)
        if ws is None:
            a = self._index.arrays["anc_ptr"]
            ws = self._tls.ws = self._K.workspace(int((a[1:] - a[:-1]).max()))
        return ws

    # ---- words --------------------------------------------------------
    def _word(self, word: str) -> tuple[list[int], set[str] | None]:
        """Synset ids of a word (NLTK's wn.synsets order) and, for xia2021, its related names."""
        got = self._words.get(word)
        if got is None:
            syn = self._index.synsets(word)
            if self.measure == "xia2021":
                # the MEAN counts every synset pair, duplicates included, as NLTK lists them
                got = (syn, self._index.related_names(syn) if syn else None)
            else:  # a MAX over pairs: order and duplicates do not matter
                got = (sorted(set(syn)), None)
            if len(self._words) >= 1_000_000:
                self._words.clear()
            self._words[word] = got
        return got

    def synsets(self, word: str) -> list[str]:
        """NLTK names of the word's synsets, as ``wn.synsets(word)`` lists them."""
        idx = self.index
        return [idx.name(i) for i in idx.synsets(word)]

    def _vocabulary(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the words' synset lists: ptr (W + 1,), syn (total,)."""
        lists = [self._word(w)[0] for w in words]
        ptr = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=ptr[1:])
        syn = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int32, count=int(ptr[-1]))
        return ptr, syn

    def _related_codes(self, words: list[str], index: dict[str, int]) -> np.ndarray:
        """Codes i * W + j (both orders) of word pairs the lemma/antonym rule sets to 1."""
        n = len(words)
        codes: list[int] = []
        for i, w in enumerate(words):
            rel = self._word(w)[1]
            if not rel:
                continue
            small, big = (rel, index) if len(rel) <= len(index) else (index, rel)
            for name in small:
                if name in big:
                    j = index[name]
                    codes += (i * n + j, j * n + i)
        return np.unique(np.asarray(codes, dtype=np.int64))

    # ---- computing ----------------------------------------------------
    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        words = list(dict.fromkeys([*left, *right]))
        index = {w: k for k, w in enumerate(words)}
        rows = np.array([index[w] for w in left], dtype=np.int64)  # (L,)
        cols = np.array([index[w] for w in right], dtype=np.int64)  # (R,)
        ptr, syn = self._vocabulary(words)
        known = ptr[1:] > ptr[:-1]  # (W,) word has synsets
        both = known[rows][:, None] & known[cols][None, :]  # (L, R)
        if self.measure == "xia2021":
            out, todo = self._xia_rules(words, index, rows[:, None], cols[None, :], both)
        else:
            out = np.full(both.shape, np.nan)
            todo = both
        if todo.any():
            r, c = np.nonzero(todo)  # (T,) each
            vals = np.empty(r.shape[0])
            self._K.run_pairs(self._code, rows[r], cols[c], np.ones(r.shape[0], dtype=bool), ptr, syn,
                              self._G, self._workspace(), vals)
            out[r, c] = vals
        return out

    def _xia_rules(self, words, index, i, j, both) -> tuple[np.ndarray, np.ndarray]:
        """The paper's rules before any Wu-Palmer: (values, pairs still to compute).

        ``i``/``j`` index ``words`` and broadcast to the output shape.
        """
        stop = np.array([(not w) or w in PAPER_STOP_WORDS for w in words], dtype=bool)
        n = len(words)
        related = np.isin(i * n + j, self._related_codes(words, index)) & both
        out = np.where(both, 0.0, (i == j).astype(np.float64))  # missing word: 1 iff equal strings
        out[related] = 1.0
        stopped = stop[i] | stop[j]
        out[stopped] = 0.0
        return out, both & ~related & ~stopped

    def compute_pairs(self, left: Sequence[str], right: Sequence[str], *,
                      dtype: type = np.float32) -> np.ndarray:
        """Element-wise: ``out[k] == similarity([left[k]], [right[k]])[0, 0]``; shape (n,).

        For filling a cache with many word pairs without building the
        len(left) x len(right) matrix.  Repeated pairs (and, for symmetric
        measures, reversed ones) are computed once.  ``dtype=np.float64``
        returns the kernels' values before the float32 cast (what the tests
        compare with NLTK to 1e-9).
        """
        if isinstance(left, str) or isinstance(right, str):
            raise TypeError("wordnet.compute_pairs takes two lists of words, not str")
        left, right = list(left), list(right)
        if len(left) != len(right):
            raise ValueError(
                f"wordnet.compute_pairs: left has {len(left)} words but right has {len(right)}; "
                "pass two lists of equal length (pair k is left[k], right[k])"
            )
        if not left:
            return np.zeros(0, dtype=dtype)
        words = list(dict.fromkeys([*left, *right]))
        for w in words:
            if not isinstance(w, str):
                raise TypeError(f"wordnet.compute_pairs: got {type(w).__name__} {w!r}, not str")
        self.ensure_loaded()
        index = {w: k for k, w in enumerate(words)}
        n = len(words)
        li = np.array([index[w] for w in left], dtype=np.int64)  # (P,)
        ri = np.array([index[w] for w in right], dtype=np.int64)  # (P,)
        if self.measure in SYMMETRIC:
            li, ri = np.minimum(li, ri), np.maximum(li, ri)
        codes, first, inverse = np.unique(li * n + ri, return_index=True, return_inverse=True)
        ui, uj = li[first], ri[first]  # (U,) unique pairs
        ptr, syn = self._vocabulary(words)
        known = ptr[1:] > ptr[:-1]
        both = known[ui] & known[uj]
        if self.measure == "xia2021":
            out, todo = self._xia_rules(words, index, ui, uj, both)
        else:
            out = np.full(ui.shape, np.nan)
            todo = both
        if todo.any():
            self._K.run_pairs(self._code, ui, uj, todo, ptr, syn, self._G, self._workspace(), out)
        out = out[inverse.reshape(-1)]
        checked = validate_output(out, (len(left),), self)  # type: ignore[arg-type]
        return out if np.dtype(dtype) == np.float64 else checked

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        if self._location is not None:
            d["wordnet"] = self._location.wordnet.describe()
            d["origin"] = self._location.origin
        return d


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("wordnet", WordNetProvider,
             "WordNet 3.0: xia2021 (the paper's measure), path, wup, lch, res, jcn, lin; NLTK-identical")

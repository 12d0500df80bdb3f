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

WordNet is turned into flat arrays once per process (or loaded from the
persisted copy) and the pair loops run compiled (numba), so a 433k-pair
corpus takes seconds instead of the half hour NLTK needs.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

import priorkit
from priorkit.errors import PriorkitError, ResourceError
from priorkit.provider import PriorProvider, validate_output
from priorkit.words import PAPER_STOP_WORDS

from . import _wordnet_files as wnfiles
from . import _wordnet_index as wnindex
from . import _wordnet_kernels as K

__version__ = "1.0"

MEASURES = ("xia2021", "path", "wup", "lch", "res", "jcn", "lin")
IC_MEASURES = ("res", "jcn", "lin")


class WordNetMeasureError(PriorkitError, ValueError):
    """An unknown ``measure=`` for the wordnet provider."""


# One index per WordNet checksum per process, shared by all providers.
_INDEXES: dict[str, wnindex.WordNetIndex] = {}
_IC: dict[tuple[str, str], tuple[np.ndarray, float]] = {}
_LOCK = threading.Lock()


def index_dir() -> Path:
    """Where built indexes are persisted: ``$PRIORKIT_HOME/indexes``."""
    from priorkit.resources import priorkit_home

    return priorkit_home() / "indexes"


def get_index(files: wnfiles.FileSet, checksum: str) -> wnindex.WordNetIndex:
    """The index of these WordNet files: from memory, from disk, or built (then saved)."""
    with _LOCK:
        idx = _INDEXES.get(checksum)
        if idx is not None:
            return idx
        path = index_dir() / f"wordnet-{checksum[:20]}-f{wnindex.INDEX_FORMAT}.npz"
        idx = wnindex.WordNetIndex.load(path, checksum) if path.exists() else None
        if idx is None:
            idx = wnindex.build(files, checksum)
            try:
                idx.save(path)
                idx.path = str(path)
            except OSError:
                pass  # a read-only home: keep the in-memory index, rebuild next time
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
            import difflib

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
        # The location is not a parameter: the data checksum identifies the files.
        self.measure = measure
        self.path = None if path is None else str(path)
        self.ic = str(ic)
        self._code = K.MEASURE_CODES[measure]
        self._location: wnfiles.WordNetLocation | None = None
        self._checksums: dict[str, str] = {}
        self._index: wnindex.WordNetIndex | None = None
        self._G: tuple | None = None
        self._words: dict[str, tuple[np.ndarray, set[str] | None]] = {}
        self.load_seconds: float | None = None
        self._tls = threading.local()
        if self.path is not None:
            self.location()  # a bad path fails here, at construction

    # ---- data ---------------------------------------------------------
    def location(self) -> wnfiles.WordNetLocation:
        if self._location is None:
            self._location = wnfiles.locate(self.path)
        return self._location

    def _wordnet_checksum(self) -> str:
        if "wordnet" not in self._checksums:
            self._checksums["wordnet"] = wnfiles.checksum(self.location().wordnet, wnfiles.WORDNET_FILES)
        return self._checksums["wordnet"]

    def _ic_file(self) -> tuple[wnfiles.FileSet, str]:
        return wnfiles.locate_ic(self.location(), self.ic)

    def data_checksum(self) -> str:
        """sha256 of the WordNet files (and, for res/jcn/lin, of the IC file)."""
        parts = [self._wordnet_checksum()]
        if self.measure in IC_MEASURES:
            if "ic" not in self._checksums:
                files, name = self._ic_file()
                self._checksums["ic"] = wnfiles.checksum(files, [name])
            parts.append(self._checksums["ic"])
        return ":".join(parts)

    def load(self) -> None:
        t0 = time.perf_counter()
        loc = self.location()
        idx = get_index(loc.wordnet, self._wordnet_checksum())
        G = idx.tables
        if self.measure in IC_MEASURES:
            files, name = self._ic_file()
            key = (idx.checksum, self.data_checksum())
            with _LOCK:
                if key not in _IC:
                    _IC[key] = wnindex.load_ic(files, name, idx)
            ic, max_ic = _IC[key]
            G = K.graph_tables(idx.arrays, ic, max_ic if max_ic > 0 else 1.0)
        self._index = idx
        self._G = G
        self.load_seconds = time.perf_counter() - t0

    def _workspace(self) -> tuple:
        """Per-thread scratch arrays for the kernels (one provider may serve several threads)."""
        ws = getattr(self._tls, "ws", None)
        if ws is None:
            a = self._index.arrays["anc_ptr"]
            ws = self._tls.ws = K.workspace(int((a[1:] - a[:-1]).max()))
        return ws

    @property
    def index(self) -> wnindex.WordNetIndex:
        self.ensure_loaded()
        assert self._index is not None
        return self._index

    # ---- words --------------------------------------------------------
    def _word(self, word: str) -> tuple[np.ndarray, set[str] | None]:
        """Synset ids of a word (NLTK's wn.synsets order) and, for xia2021, its related names."""
        got = self._words.get(word)
        if got is None:
            idx = self._index
            syn = idx.synsets(word)
            if self._code != K.XIA:
                syn = np.unique(syn)  # max over pairs: duplicates and order do not matter
                rel = None
            else:
                rel = idx.related_names(syn) if syn.size else None
            got = (syn, rel)
            if len(self._words) > 500_000:
                self._words.clear()
            self._words[word] = got
        return got

    def synsets(self, word: str) -> list[str]:
        """NLTK names of the word's synsets, as ``wn.synsets(word)`` lists them."""
        self.ensure_loaded()
        idx = self._index
        return [idx.name(i) for i in idx.synsets(word).tolist()]

    def _csr(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.zeros(len(words) + 1, dtype=np.int64)
        parts = []
        for k, w in enumerate(words):
            syn = self._word(w)[0]
            parts.append(syn)
            ptr[k + 1] = ptr[k] + syn.size
        syn = np.concatenate(parts).astype(np.int32) if parts else np.empty(0, np.int32)
        return ptr, syn

    # ---- computing ----------------------------------------------------
    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        words = list(dict.fromkeys([*left, *right]))
        pos = {w: k for k, w in enumerate(words)}
        ptr, syn = self._csr(words)
        rows = np.fromiter((pos[w] for w in left), dtype=np.int64, count=len(left))
        cols = np.fromiter((pos[w] for w in right), dtype=np.int64, count=len(right))
        known = ptr[1:] > ptr[:-1]  # (W,) word has synsets
        out = np.zeros((len(left), len(right)), dtype=np.float64)
        todo = known[rows][:, None] & known[cols][None, :]  # (L, R)
        if self._code == K.XIA:
            self._xia_prefill(left, right, rows, cols, known, todo, out)
        else:
            out[:] = np.nan
        if todo.any():
            K.matrix_kernel(self._code, rows, cols, todo, ptr, syn, self._G, self._workspace(), out)
        return out

    def _xia_prefill(self, left, right, rows, cols, known, todo, out) -> None:
        """Stop words, unknown words and the lemma/antonym rule; leaves ``todo`` = pairs needing wup."""
        both = known[rows][:, None] & known[cols][None, :]  # (L, R) both words in WordNet
        equal = np.asarray(left, dtype=object)[:, None] == np.asarray(right, dtype=object)[None, :]
        out[:] = np.where(both, 0.0, equal.astype(np.float64))  # missing word: 1 iff equal strings
        related = np.zeros_like(both)
        for words, other in ((left, right), (right, left)):
            where: dict[str, list[int]] = {}
            for k, w in enumerate(other):
                where.setdefault(w, []).append(k)
            for k, w in enumerate(words):
                rel = self._word(w)[1]
                if not rel:
                    continue
                small, big = (rel, where) if len(rel) < len(where) else (where, rel)
                for name in small:
                    if name in big:
                        if words is left:
                            related[k, where[name]] = True
                        else:
                            related[where[name], k] = True
        related &= both
        out[related] = 1.0
        stop_l = np.array([(not w) or w in PAPER_STOP_WORDS for w in left], dtype=bool)
        stop_r = np.array([(not w) or w in PAPER_STOP_WORDS for w in right], dtype=bool)
        stop = stop_l[:, None] | stop_r[None, :]
        out[stop] = 0.0
        todo &= ~related & ~stop

    def pair_similarity(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise: ``out[k] = similarity([left[k]], [right[k]])``, shape (n,), float32.

        For precomputing many word pairs at once (a cache fill) without
        building the full len(left) x len(right) matrix.
        """
        if isinstance(left, str) or isinstance(right, str):
            raise TypeError("wordnet.pair_similarity takes two lists of words, not str")
        left, right = list(left), list(right)
        if len(left) != len(right):
            raise ValueError(
                f"wordnet.pair_similarity: left has {len(left)} words but right has {len(right)}; "
                "pass two lists of equal length (pair k is left[k], right[k])"
            )
        for w in (*left, *right):
            if not isinstance(w, str):
                raise TypeError(f"wordnet.pair_similarity: got {type(w).__name__} {w!r}, not str")
        n = len(left)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        self.ensure_loaded()
        words = list(dict.fromkeys([*left, *right]))
        pos = {w: k for k, w in enumerate(words)}
        ptr, syn = self._csr(words)
        li = np.fromiter((pos[w] for w in left), dtype=np.int64, count=n)
        ri = np.fromiter((pos[w] for w in right), dtype=np.int64, count=n)
        known = ptr[1:] > ptr[:-1]
        both = known[li] & known[ri]
        if self._code == K.XIA:
            out = np.zeros(n, dtype=np.float64)
            todo = both.copy()
            for k in range(n):
                a, b = left[k], right[k]
                if not a or not b or a in PAPER_STOP_WORDS or b in PAPER_STOP_WORDS:
                    todo[k] = False
                elif not both[k]:
                    out[k] = 1.0 if a == b else 0.0
                elif b in self._word(a)[1] or a in self._word(b)[1]:
                    out[k] = 1.0
                    todo[k] = False
        else:
            out = np.full(n, np.nan, dtype=np.float64)
            todo = both
        if todo.any():
            K.pairs_kernel(self._code, li, ri, todo, ptr, syn, self._G, self._workspace(), out)
        return validate_output(out, (n,), self)  # type: ignore[arg-type]

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

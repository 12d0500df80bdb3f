"""WordNet as flat arrays: everything NLTK's similarity methods walk, precomputed once.

Built straight from the WordNet database files (the same files NLTK reads) in
about 5 s of CPU (``build.py``), then saved as a data-only index folder
(``arrays.npz`` + ``strings.txt``, through ``priorkit_plugins._support``) keyed
by the files' checksum, so later processes load it in a fraction of a second.  What it holds, per
synset (ids ``0..N-1``, in data-file order noun, verb, adj, adv):

- ``anc_ptr/anc_id/anc_dist``: the synset and all its hypernyms (hypernym and
  instance-hypernym links), sorted by id, with the breadth-first distance NLTK's
  ``_shortest_hypernym_paths`` finds; ``maxbfs`` is the largest of those
  distances (where NLTK puts its simulated ``*ROOT*``: ``max + 1``)
- ``min_depth``/``max_depth``: NLTK's ``Synset.min_depth()``/``max_depth()``
- ``rank``: the position of NLTK's synset name (``dog.n.01``) in sorted order,
  with one extra last entry for ``*ROOT*``: NLTK breaks lowest-common-hypernym
  ties with ``sorted()`` on names
- ``pos``: 0 n, 1 v, 2 a, 3 r, 4 s (satellite)
- ``rel_ptr/rel_str``: lemma names plus the first antonym of each lemma (the
  paper's "related" words), as ids into the string table

and, for word lookup, NLTK's lemma index (lemma -> synsets per POS, in
index-file order) and morphological exception lists, so that
``synsets(word)`` returns exactly ``nltk.corpus.wordnet.synsets(word)``.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from priorkit.errors import DataFormatError

from . import files as files_mod

#: bump when the layout or the semantics of the persisted arrays change
#: (2: a folder of arrays.npz + strings.txt + index.json, written through ``_support``)
INDEX_FORMAT = 2
INDEX_KIND = "wordnet"

POS_CODES = {"n": 0, "v": 1, "a": 2, "r": 3, "s": 4}
POS_NAMES = "nvars"
FILE_POS = ("n", "v", "a", "r")  # data.noun, data.verb, data.adj, data.adv; also NLTK's POS_LIST order
FILEMAP = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
ROOT_NAME = "*ROOT*"
MAX_HYPERNYM_DEPTH = 256  # nltk.corpus.reader.wordnet._MAX_HYPERNYM_DEPTH

#: NLTK's morphy rules (nltk.corpus.reader.wordnet.WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS)
MORPHOLOGICAL_SUBSTITUTIONS = {
    "n": [("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}



@dataclasses.dataclass
class WordNetIndex:
    """Flat arrays of one WordNet version (see module docstring)."""

    arrays: dict[str, np.ndarray]
    strings: list[str]
    checksum: str
    source: str = ""  # "built" or "loaded"
    seconds: float = 0.0
    path: str = ""

    def __post_init__(self) -> None:
        from .kernels import graph_tables

        a = self.arrays
        self.n_synsets = int(a["pos"].shape[0])
        self._lookup: tuple | None = None
        self._rel: tuple[list[int], list[int], dict[int, tuple[str, ...]]] | None = None
        self.tables = graph_tables(a)
        self.lch_depth = a["lch_depth"]  # (5,) per pos code, NLTK's _compute_max_depth

    # ---- word lookup --------------------------------------------------
    def _lookup_tables(self) -> tuple:
        """Python-side tables for synsets(): built on first use (about 0.2 s)."""
        if self._lookup is None:
            s = self.strings
            a = self.arrays
            lemmas = [s[k] for k in a["lemma_str"].tolist()]
            row = {w: i for i, w in enumerate(lemmas)}
            per_pos = {}
            for p in FILE_POS:
                ptr = a[f"lem_{p}_ptr"].tolist()
                syn = a[f"lem_{p}_syn"].tolist()
                has = {lemmas[i] for i in range(len(lemmas)) if ptr[i + 1] > ptr[i]}
                eptr, form, base = (a[f"exc_{p}_{k}"].tolist() for k in ("ptr", "form", "base"))
                exc = {s[f]: [s[b] for b in base[eptr[i]:eptr[i + 1]]] for i, f in enumerate(form)}
                per_pos[p] = (has, ptr, syn, exc, MORPHOLOGICAL_SUBSTITUTIONS[p])
            self._lookup = (row, per_pos)
        return self._lookup

    def morphy(self, form: str, pos: str) -> list[str]:
        """NLTK's ``WordNetCorpusReader._morphy(form, pos)``: base forms present for ``pos``."""
        has, _, _, exceptions, rules = self._lookup_tables()[1][pos]
        forms = exceptions.get(form)
        if forms is None:
            forms = [form[: -len(old)] + new for old, new in rules if form.endswith(old)]
        result: list[str] = []
        for f in (form, *forms):
            if f in has and f not in result:
                result.append(f)
        return result

    def synsets(self, word: str) -> list[int]:
        """Synset ids of ``nltk.corpus.wordnet.synsets(word)``, same order, duplicates kept."""
        lemma = word.lower()
        row, per_pos = self._lookup_tables()
        out: list[int] = []
        for pos in FILE_POS:  # NLTK's POS_LIST order
            has, ptr, syn, exceptions, rules = per_pos[pos]
            forms = exceptions.get(lemma)
            if forms is None:
                forms = [lemma[: -len(old)] + new for old, new in rules if lemma.endswith(old)]
            seen: list[str] = []
            for f in (lemma, *forms):
                if f in has and f not in seen:
                    seen.append(f)
                    r = row[f]
                    out.extend(syn[ptr[r]:ptr[r + 1]])
        return out

    def related_names(self, synset_ids) -> set[str]:
        """Lemma names of these synsets plus each lemma's first antonym (the paper's test)."""
        if self._rel is None:
            self._rel = (self.arrays["rel_ptr"].tolist(), self.arrays["rel_str"].tolist(), {})
        ptr, ids, memo = self._rel
        s = self.strings
        out: set[str] = set()
        for x in set(synset_ids):
            names = memo.get(x)
            if names is None:
                names = memo[x] = tuple(s[k] for k in ids[ptr[x]:ptr[x + 1]])
            out.update(names)
        return out

    def name(self, synset_id: int) -> str:
        return self.strings[int(self.arrays["name_str"][synset_id])]

    # ---- persistence --------------------------------------------------
    def save(self, folder: Path) -> None:
        """Write the arrays and the string table into an index folder (see :func:`.build.load_or_build`)."""
        from .. import _support

        _support.save_arrays(folder / "arrays.npz", **self.arrays)
        _support.save_lines(folder / "strings.txt", self.strings)

    @classmethod
    def load(cls, folder: Path, checksum: str) -> "WordNetIndex | None":
        """The saved index, or None when stale or unreadable."""
        from .. import _support

        t0 = time.perf_counter()
        try:
            meta = _support.read_meta(folder)
            if meta.get("format") != INDEX_FORMAT or meta.get("checksum") != checksum:
                return None
            strings = _support.load_lines(folder / "strings.txt")
            if len(strings) != meta.get("strings"):
                return None
            arrays = _support.load_arrays(folder / "arrays.npz")
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError):
            return None
        return cls(arrays, strings, checksum, "loaded", time.perf_counter() - t0, str(folder))


# ---------------------------------------------------------------------------
# information content
# ---------------------------------------------------------------------------
def load_ic(files: files_mod.FileSet, name: str, index: WordNetIndex) -> tuple[np.ndarray, float]:
    """IC per synset as NLTK's ``information_content`` returns it, and the largest finite IC.

    NaN marks synsets NLTK refuses (adjectives, adverbs: the IC file has only
    nouns and verbs); ``1e300`` marks a zero count, as in NLTK.
    """
    import math

    counts: dict[str, dict[int, float]] = {"n": {}, "v": {}}
    root = {"n": 0.0, "v": 0.0}
    for lineno, line in enumerate(files.lines(name)):
        if lineno == 0:
            continue  # header
        fields = line.split()
        if not fields:
            continue
        try:
            offset = int(fields[0][:-1])
            value = float(fields[1])
            pos = fields[0][-1]
            if pos not in counts:
                raise ValueError(f"unknown part of speech in {fields[0]!r}")
        except (ValueError, IndexError) as exc:
            raise DataFormatError(
                f"information-content file {files.describe(name)}, line {lineno + 1}: {exc}"
            ) from exc
        if len(fields) == 3 and fields[2] == "ROOT":
            root[pos] += value
        if value != 0:
            counts[pos][offset] = value
    pos_a = index.arrays["pos"]
    offs = index.arrays["offset"]
    ic = np.full(index.n_synsets, np.nan, dtype=np.float64)
    finite_max = 0.0
    for code, p in ((0, "n"), (1, "v")):
        if root[p] == 0:
            continue  # NLTK divides by zero here: every pair of this POS is skipped
        rc = root[p]
        for i in np.flatnonzero(pos_a == code).tolist():
            c = counts[p].get(int(offs[i]), 0.0)
            if c == 0:
                ic[i] = 1e300
            else:
                v = -math.log(c / rc)
                ic[i] = v
                finite_max = max(finite_max, v)
    # root counts stored under offset 0 are not synsets, but NLTK's max over the
    # file would include them: they have IC 0 and never change the maximum.
    return ic, finite_max

"""WordNet as flat arrays: everything NLTK's similarity methods walk, precomputed once.

Built straight from the WordNet database files (the same files NLTK reads) in
a couple of seconds, then persisted as an ``.npz`` keyed by the files' checksum,
so later processes load it in a fraction of a second.  What it holds, per
synset (ids ``0..N-1``, in data-file order noun, verb, adj, adv):

- ``anc_ptr/anc_id/anc_dist``: the synset and all its hypernyms (hypernym and
  instance-hypernym links), sorted by id, with the breadth-first distance NLTK's
  ``_shortest_hypernym_paths`` finds; ``maxbfs`` is the largest of those
  distances (where NLTK puts its simulated ``*ROOT*``: ``max + 1``)
- ``min_depth``/``max_depth``: NLTK's ``Synset.min_depth()``/``max_depth()``
- ``rank``: the position of NLTK's synset name (``dog.n.01``) in sorted order,
  with ``*ROOT*`` given ``root_rank``: NLTK breaks lowest-common-hypernym ties
  with ``sorted()`` on names
- ``pos``: 0 n, 1 v, 2 a, 3 r, 4 s (satellite)
- ``rel_ptr/rel_str``: lemma names plus the first antonym of each lemma (the
  paper's "related" words), as ids into the string table

and, for word lookup, NLTK's lemma index (lemma -> synsets per POS, in
index-file order) and morphological exception lists, so that
``synsets(word)`` returns exactly ``nltk.corpus.wordnet.synsets(word)``.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from priorkit.errors import DataFormatError, ResourceError

from . import _wordnet_files as files_mod
from ._wordnet_kernels import graph_tables

#: bump when the layout or the semantics of the persisted arrays change
INDEX_FORMAT = 1

POS_CODES = {"n": 0, "v": 1, "a": 2, "r": 3, "s": 4}
POS_NAMES = "nvars"
FILE_POS = ("n", "v", "a", "r")  # data.noun, data.verb, data.adj, data.adv; also NLTK's POS_LIST order
_FILEMAP = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
ROOT_NAME = "*ROOT*"

#: NLTK's morphy rules (nltk.corpus.reader.wordnet.WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS)
MORPHOLOGICAL_SUBSTITUTIONS = {
    "n": [("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}

_MARKER_RE = re.compile(r"(.*?)(\([^()]*\))?$")
_VERSION_RE = re.compile(r"Word[nN]et (\d+\+?|\d+\.\d+) Copyright")


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
        a = self.arrays
        self.n_synsets = int(a["pos"].shape[0])
        self._lemma_row: dict[str, int] | None = None
        self._exceptions: dict[str, dict[str, list[str]]] | None = None
        self.tables = graph_tables(a)
        self.lch_depth = a["lch_depth"]  # (5,) per pos code, NLTK's _compute_max_depth

    # ---- word lookup --------------------------------------------------
    @property
    def lemma_row(self) -> dict[str, int]:
        if self._lemma_row is None:
            s = self.strings
            self._lemma_row = {s[k]: i for i, k in enumerate(self.arrays["lemma_str"].tolist())}
        return self._lemma_row

    @property
    def exceptions(self) -> dict[str, dict[str, list[str]]]:
        if self._exceptions is None:
            s = self.strings
            out: dict[str, dict[str, list[str]]] = {}
            for p in FILE_POS:
                ptr, form, base = (self.arrays[f"exc_{p}_{k}"] for k in ("ptr", "form", "base"))
                ptr_l, base_l = ptr.tolist(), base.tolist()
                out[p] = {
                    s[f]: [s[b] for b in base_l[ptr_l[i]:ptr_l[i + 1]]] for i, f in enumerate(form.tolist())
                }
            self._exceptions = out
        return self._exceptions

    def _has(self, form: str, pos: str) -> int:
        """Lemma-index row of ``form`` when it has synsets for ``pos``, else -1."""
        row = self.lemma_row.get(form, -1)
        if row < 0:
            return -1
        ptr = self.arrays[f"lem_{pos}_ptr"]
        return row if ptr[row + 1] > ptr[row] else -1

    def morphy(self, form: str, pos: str) -> list[str]:
        """NLTK's ``WordNetCorpusReader._morphy(form, pos)``: base forms present for ``pos``."""
        exceptions = self.exceptions[pos]
        if form in exceptions:
            forms = exceptions[form]
        else:
            forms = [form[: -len(old)] + new for old, new in MORPHOLOGICAL_SUBSTITUTIONS[pos] if form.endswith(old)]
        result: list[str] = []
        seen: set[str] = set()
        for f in [form, *forms]:
            if f not in seen and self._has(f, pos) >= 0:
                result.append(f)
                seen.add(f)
        return result

    def synsets(self, word: str) -> np.ndarray:
        """Synset ids of ``nltk.corpus.wordnet.synsets(word)``, same order, duplicates kept."""
        lemma = word.lower()
        parts: list[np.ndarray] = []
        for pos in FILE_POS:
            for form in self.morphy(lemma, pos):
                row = self.lemma_row[form]
                ptr = self.arrays[f"lem_{pos}_ptr"]
                parts.append(self.arrays[f"lem_{pos}_syn"][ptr[row]:ptr[row + 1]])
        if not parts:
            return np.empty(0, dtype=np.int32)
        return np.concatenate(parts).astype(np.int32, copy=False)

    def related_names(self, synset_ids: np.ndarray) -> set[str]:
        """Lemma names of these synsets plus each lemma's first antonym (the paper's test)."""
        ptr, ids = self.arrays["rel_ptr"], self.arrays["rel_str"]
        s = self.strings
        out: set[str] = set()
        for x in np.unique(synset_ids).tolist():
            out.update(s[k] for k in ids[ptr[x]:ptr[x + 1]].tolist())
        return out

    def name(self, synset_id: int) -> str:
        return self.strings[int(self.arrays["name_str"][synset_id])]

    # ---- persistence --------------------------------------------------
    def save(self, path: Path) -> None:
        """Write atomically (a reader never sees a half-written file)."""
        blob = "\n".join(self.strings).encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".wordnet-index-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, strings=np.frombuffer(blob, dtype=np.uint8),
                         meta=np.array([INDEX_FORMAT, len(self.strings)], dtype=np.int64),
                         checksum=np.frombuffer(self.checksum.encode(), dtype=np.uint8),
                         **self.arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    @classmethod
    def load(cls, path: Path, checksum: str) -> "WordNetIndex | None":
        """The persisted index, or None when missing, stale or unreadable."""
        t0 = time.perf_counter()
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = z["meta"]
                if int(meta[0]) != INDEX_FORMAT or bytes(z["checksum"]).decode() != checksum:
                    return None
                strings = bytes(z["strings"]).decode("utf-8").split("\n")
                if len(strings) != int(meta[1]):
                    return None
                arrays = {k: z[k] for k in z.files if k not in ("strings", "meta", "checksum")}
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError):
            return None
        return cls(arrays, strings, checksum, "loaded", time.perf_counter() - t0, str(path))


# ---------------------------------------------------------------------------
# building from the database files
# ---------------------------------------------------------------------------
class _Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            if "\n" in s:
                raise DataFormatError(f"WordNet string {s!r} holds a newline")
            i = self.ids[s] = len(self.items)
            self.items.append(s)
        return i


def build(files: files_mod.FileSet, checksum: str) -> WordNetIndex:
    """Parse the WordNet database files into a :class:`WordNetIndex`."""
    t0 = time.perf_counter()
    strings = _Strings()

    # -- data files: synsets, lemma names, pointers ------------------------
    key_to_id: dict[tuple[str, int], int] = {}
    pos_l: list[int] = []
    offset_l: list[int] = []
    lemmas_l: list[list[str]] = []
    hyper_l: list[list[tuple[str, int]]] = []
    ant_l: list[dict[str, tuple[str, int, int]]] = []  # lemma name -> first antonym (file pos, offset, index)
    satellites: set[int] = set()
    version = None
    for fpos in FILE_POS:
        fname = f"data.{_FILEMAP[fpos]}"
        for lineno, line in enumerate(files.lines(fname), 1):
            if not line or line[0].isspace():
                if fpos == "a" and version is None:
                    m = _VERSION_RE.search(line)
                    version = m.group(1) if m else None
                continue
            try:
                columns = line.split("|", 1)[0].split()
                offset = int(columns[0])
                spos = columns[2]
                n_lemmas = int(columns[3], 16)
                names = []
                k = 4
                for _ in range(n_lemmas):
                    names.append(_MARKER_RE.match(columns[k]).group(1))
                    k += 2
                n_ptr = int(columns[k])
                k += 1
                hypers: list[tuple[str, int]] = []
                ants: dict[str, tuple[str, int, int]] = {}
                for _ in range(n_ptr):
                    symbol, p_off, p_pos, st = columns[k], int(columns[k + 1]), columns[k + 2], columns[k + 3]
                    k += 4
                    if st == "0000":
                        if symbol in ("@", "@i"):
                            hypers.append(("a" if p_pos == "s" else p_pos, p_off))
                    elif symbol == "!":
                        src = names[int(st[:2], 16) - 1]
                        if src not in ants:  # NLTK's lemma.antonyms()[0]: the first one listed
                            ants[src] = ("a" if p_pos == "s" else p_pos, p_off, int(st[2:], 16) - 1)
            except (ValueError, IndexError) as exc:
                raise DataFormatError(
                    f"WordNet file {files.describe(fname)}, line {lineno}: cannot parse synset ({exc}); "
                    f"re-fetch it with `priorkit data fetch wordnet`"
                ) from exc
            if spos not in POS_CODES:
                raise DataFormatError(f"WordNet file {files.describe(fname)}, line {lineno}: unknown POS {spos!r}")
            key_to_id[(fpos, offset)] = len(pos_l)
            pos_l.append(POS_CODES[spos])
            offset_l.append(offset)
            lemmas_l.append(names)
            hyper_l.append(hypers)
            ant_l.append(ants)
            if spos == "s":
                satellites.add(offset)
    n = len(pos_l)
    if n == 0:
        raise ResourceError(f"WordNet folder {files.describe()} holds no synsets; {files_mod.FETCH_HINT}")

    def resolve(fpos: str, off: int, what: str, src: int) -> int:
        try:
            return key_to_id[(fpos, off)]
        except KeyError:
            raise DataFormatError(
                f"WordNet data file data.{_FILEMAP[fpos]}: {what} of synset at offset {offset_l[src]} "
                f"points to missing offset {off}; the files are inconsistent, re-fetch them"
            ) from None

    par_ptr = np.zeros(n + 1, dtype=np.int64)
    par_id: list[int] = []
    for i, hypers in enumerate(hyper_l):
        ids = sorted({resolve(p, o, "hypernym", i) for p, o in hypers})
        par_id.extend(ids)
        par_ptr[i + 1] = len(par_id)
    par_id_a = np.asarray(par_id, dtype=np.int32)

    # -- index files: lemma -> synsets per POS -----------------------------
    lemma_pos: dict[str, dict[str, list[int]]] = {}
    for fpos in FILE_POS:
        fname = f"index.{_FILEMAP[fpos]}"
        for lineno, line in enumerate(files.lines(fname), 1):
            if line.startswith(" "):
                continue
            tok = line.split()
            try:
                lemma, lpos, n_syn = tok[0], tok[1], int(tok[2])
                n_p = int(tok[3])
                k = 4 + n_p
                n_sense = int(tok[k])
                offsets = [int(t) for t in tok[k + 2:k + 2 + n_syn]]
                if n_syn <= 0 or n_sense != n_syn or len(offsets) != n_syn:
                    raise ValueError("synset counts disagree")
            except (ValueError, IndexError) as exc:
                raise DataFormatError(
                    f"WordNet file {files.describe(fname)}, line {lineno}: {exc}; re-fetch it"
                ) from exc
            entry = lemma_pos.setdefault(lemma, {})
            entry[lpos] = offsets
            if lpos == "a":
                entry["s"] = [o for o in offsets if o in satellites]

    # -- NLTK's synset names (first lemma, pos, sense number) --------------
    names_l: list[str] = []
    for i in range(n):
        first = lemmas_l[i][0].lower()
        spos = POS_NAMES[pos_l[i]]
        try:
            sense = lemma_pos[first][spos].index(offset_l[i]) + 1
        except (KeyError, ValueError):
            raise DataFormatError(
                f"WordNet synset {first!r} ({spos}, offset {offset_l[i]}) is missing from index.{_FILEMAP['a' if spos == 's' else spos]}"
            ) from None
        names_l.append("%s.%s.%02i" % (first, spos, sense))
    if len(set(names_l)) != n:
        raise DataFormatError(f"WordNet folder {files.describe()}: synset names are not unique")
    order = sorted(range(n + 1), key=lambda i: names_l[i] if i < n else ROOT_NAME)
    rank = np.empty(n + 1, dtype=np.int32)
    rank[np.asarray(order)] = np.arange(n + 1, dtype=np.int32)

    # -- related names: lemma names + first antonym of each lemma ----------
    rel_ptr = np.zeros(n + 1, dtype=np.int64)
    rel: list[int] = []
    for i in range(n):
        seen = dict.fromkeys(strings(nm) for nm in lemmas_l[i])
        for fpos, off, tidx in ant_l[i].values():
            target = lemmas_l[resolve(fpos, off, "antonym", i)]
            if not 0 <= tidx < len(target):
                raise DataFormatError(f"WordNet antonym pointer of synset {names_l[i]} names lemma {tidx + 1}")
            seen.setdefault(strings(target[tidx]))
        rel.extend(seen)
        rel_ptr[i + 1] = len(rel)

    # -- lemma index as CSR per POS ----------------------------------------
    arrays: dict[str, np.ndarray] = {}
    lemma_list = list(lemma_pos)
    arrays["lemma_str"] = np.asarray([strings(x) for x in lemma_list], dtype=np.int32)
    for fpos in FILE_POS:
        ptr = np.zeros(len(lemma_list) + 1, dtype=np.int64)
        syn: list[int] = []
        for r, lemma in enumerate(lemma_list):
            for off in lemma_pos[lemma].get(fpos, ()):
                syn.append(resolve(fpos, off, f"index.{_FILEMAP[fpos]} entry {lemma!r}", 0))
            ptr[r + 1] = len(syn)
        arrays[f"lem_{fpos}_ptr"] = ptr
        arrays[f"lem_{fpos}_syn"] = np.asarray(syn, dtype=np.int32)

    # -- morphological exceptions ------------------------------------------
    for fpos in FILE_POS:
        exc: dict[str, list[str]] = {}
        for line in files.lines(f"{_FILEMAP[fpos]}.exc"):
            terms = line.split()
            if terms:
                exc[terms[0]] = terms[1:]
        ptr = np.zeros(len(exc) + 1, dtype=np.int64)
        base: list[int] = []
        for r, bases in enumerate(exc.values()):
            base.extend(strings(b) for b in bases)
            ptr[r + 1] = len(base)
        arrays[f"exc_{fpos}_ptr"] = ptr
        arrays[f"exc_{fpos}_form"] = np.asarray([strings(f) for f in exc], dtype=np.int32)
        arrays[f"exc_{fpos}_base"] = np.asarray(base, dtype=np.int32)

    # -- the graph: ancestors with BFS distances, depths --------------------
    from ._wordnet_kernels import ancestor_tables, depth_tables

    min_depth, max_depth, cycle_at = depth_tables(par_ptr, par_id_a, n)
    if cycle_at >= 0:
        raise DataFormatError(
            f"WordNet folder {files.describe()}: the hypernym graph has a cycle at {names_l[cycle_at]}"
        )
    anc_ptr, anc_id, anc_dist, maxbfs = ancestor_tables(par_ptr, par_id_a, n)

    pos_a = np.asarray(pos_l, dtype=np.int8)
    needs_root = (pos_a != POS_CODES["n"]) | (version == "1.6")
    # NLTK's _compute_max_depth(pos, need_root): max over all_synsets(pos) (+1 with a root)
    lch_depth = np.zeros(5, dtype=np.int64)
    for code, members in ((0, [0]), (1, [1]), (2, [2, 4]), (3, [3]), (4, [4])):
        sel = np.isin(pos_a, members)
        d = int(max_depth[sel].max()) if sel.any() else 0
        nr = bool(code != 0 or version == "1.6")
        lch_depth[code] = d + (1 if nr else 0)

    arrays.update(
        pos=pos_a,
        offset=np.asarray(offset_l, dtype=np.int32),
        name_str=np.asarray([strings(x) for x in names_l], dtype=np.int32),
        rank=rank,
        par_ptr=par_ptr,
        par_id=par_id_a,
        anc_ptr=anc_ptr,
        anc_id=anc_id,
        anc_dist=anc_dist,
        maxbfs=maxbfs,
        min_depth=min_depth,
        max_depth=max_depth,
        needs_root=needs_root.astype(np.bool_),
        lch_depth=lch_depth,
        rel_ptr=rel_ptr,
        rel_str=np.asarray(rel, dtype=np.int32),
    )
    return WordNetIndex(arrays, strings.items, checksum, "built", time.perf_counter() - t0, files.describe())


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

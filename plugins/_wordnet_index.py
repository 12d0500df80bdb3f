"""WordNet as flat arrays: everything NLTK's similarity methods walk, precomputed once.

Built straight from the WordNet database files (the same files NLTK reads) in
about 5 s of CPU, then persisted as an ``.npz`` keyed by the files' checksum,
so later processes load it in a fraction of a second.  What it holds, per
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
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from priorkit.errors import DataFormatError, ResourceError

from . import _wordnet_files as files_mod

#: bump when the layout or the semantics of the persisted arrays change
INDEX_FORMAT = 1

POS_CODES = {"n": 0, "v": 1, "a": 2, "r": 3, "s": 4}
POS_NAMES = "nvars"
FILE_POS = ("n", "v", "a", "r")  # data.noun, data.verb, data.adj, data.adv; also NLTK's POS_LIST order
_FILEMAP = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
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
        from ._wordnet_kernels import graph_tables

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
def build(files: files_mod.FileSet, checksum: str) -> WordNetIndex:
    """Parse the WordNet database files into a :class:`WordNetIndex`."""
    t0 = time.perf_counter()
    strings: dict[str, int] = {}  # string -> id, in insertion order
    intern = strings.setdefault

    # -- data files: synsets, lemma names, pointers ------------------------
    # Offsets stay strings ("00001740"): WordNet writes them zero-padded to 8
    # digits everywhere, and skipping int() halves the parse time.
    key_to_id: dict[tuple[str, str], int] = {}
    pos_l: list[int] = []
    offset_l: list[int] = []
    lemmas_l: list[list[str]] = []
    hyper_l: list[list[tuple[str, str]]] = []
    ant_l: list[dict[str, tuple[str, str, int]]] = []  # lemma name -> first antonym (file pos, offset, index)
    version = None
    file_pos = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r"}
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
                spos = columns[2]
                n_lemmas = int(columns[3], 16)
                names = []
                for k in range(4, 4 + 2 * n_lemmas, 2):
                    w = columns[k]
                    names.append(_MARKER_RE.match(w).group(1) if w.endswith(")") else w)
                k = 4 + 2 * n_lemmas
                n_ptr = int(columns[k])
                hypers: list[tuple[str, str]] = []
                ants: dict[str, tuple[str, str, int]] = {}
                for k in range(k + 1, k + 1 + 4 * n_ptr, 4):
                    symbol = columns[k]
                    if symbol == "@" or symbol == "@i":
                        if columns[k + 3] == "0000":  # synset pointers only, as NLTK's _pointers
                            hypers.append((file_pos[columns[k + 2]], columns[k + 1]))
                    elif symbol == "!":
                        st = columns[k + 3]
                        if st != "0000":
                            src = names[int(st[:2], 16) - 1]
                            if src not in ants:  # NLTK's lemma.antonyms()[0]: the first one listed
                                ants[src] = (file_pos[columns[k + 2]], columns[k + 1], int(st[2:], 16) - 1)
                offset = int(columns[0])
            except (ValueError, IndexError, KeyError) as exc:
                raise DataFormatError(
                    f"WordNet file {files.describe(fname)}, line {lineno}: cannot parse synset ({exc!r}); "
                    f"re-fetch it with `priorkit data fetch wordnet`"
                ) from exc
            if spos not in POS_CODES:
                raise DataFormatError(f"WordNet file {files.describe(fname)}, line {lineno}: unknown POS {spos!r}")
            key_to_id[(fpos, columns[0])] = len(pos_l)
            pos_l.append(POS_CODES[spos])
            offset_l.append(offset)
            lemmas_l.append(names)
            hyper_l.append(hypers)
            ant_l.append(ants)
    n = len(pos_l)
    if n == 0:
        raise ResourceError(f"WordNet folder {files.describe()} holds no synsets; {files_mod.FETCH_HINT}")

    def resolve(fpos: str, off: str, what: str) -> int:
        got = key_to_id.get((fpos, off))
        if got is None:
            try:  # tolerate offsets written without zero padding
                got = key_to_id.get((fpos, "%08d" % int(off)))
            except ValueError:
                got = None
            if got is None:
                raise DataFormatError(
                    f"WordNet file data.{_FILEMAP[fpos]}: {what} points to missing offset {off}; "
                    f"the files are inconsistent, re-fetch them with `priorkit data fetch wordnet`"
                )
        return got

    key_get = key_to_id.get
    par_ptr = np.zeros(n + 1, dtype=np.int64)
    par_id: list[int] = []
    for i, hypers in enumerate(hyper_l):
        par_id.extend(sorted({resolve(p, o, f"a hypernym of synset {offset_l[i]}") for p, o in hypers}))
        par_ptr[i + 1] = len(par_id)
    par_id_a = np.asarray(par_id, dtype=np.int32)
    pos_a = np.asarray(pos_l, dtype=np.int8)
    satellite = pos_a == POS_CODES["s"]

    # -- index files: lemma -> synset ids per POS (NLTK's _lemma_pos_offset_map)
    lemma_pos: dict[str, dict[str, list[int]]] = {}
    for fpos in FILE_POS:
        fname = f"index.{_FILEMAP[fpos]}"
        for lineno, line in enumerate(files.lines(fname), 1):
            if line.startswith(" "):
                continue
            tok = line.split()
            try:
                lemma, lpos, n_syn = tok[0], tok[1], int(tok[2])
                k = 4 + int(tok[3])
                n_sense = int(tok[k])
                offsets = tok[k + 2:k + 2 + n_syn]
                if n_syn <= 0 or n_sense != n_syn or len(offsets) != n_syn:
                    raise ValueError("synset counts disagree")
            except (ValueError, IndexError) as exc:
                raise DataFormatError(
                    f"WordNet file {files.describe(fname)}, line {lineno}: {exc}; re-fetch it with "
                    f"`priorkit data fetch wordnet`"
                ) from exc
            ids = [key_get((fpos, o), -1) for o in offsets]
            if -1 in ids:
                ids = [resolve(fpos, o, f"index.{_FILEMAP[fpos]} entry {lemma!r}") for o in offsets]
            entry = lemma_pos.setdefault(lemma, {})
            entry[lpos] = ids
            if lpos == "a":  # NLTK also files the satellites under "s", in index order
                entry["s"] = [i for i in ids if satellite[i]]

    # -- NLTK's synset names (first lemma, pos, sense number) --------------
    names_l: list[str] = []
    for i in range(n):
        first = lemmas_l[i][0].lower()
        spos = POS_NAMES[pos_l[i]]
        try:
            sense = lemma_pos[first][spos].index(i) + 1
        except (KeyError, ValueError):
            raise DataFormatError(
                f"WordNet synset {first!r} ({spos}, offset {offset_l[i]}) is missing from "
                f"index.{_FILEMAP['a' if spos == 's' else spos]}; re-fetch the files"
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
        seen = dict.fromkeys([intern(nm, len(strings)) for nm in lemmas_l[i]])
        for fpos, off, tidx in ant_l[i].values():
            target = lemmas_l[resolve(fpos, off, f"an antonym of synset {names_l[i]}")]
            if not 0 <= tidx < len(target):
                raise DataFormatError(f"WordNet antonym pointer of synset {names_l[i]} names lemma {tidx + 1}")
            seen.setdefault(intern(target[tidx], len(strings)))
        rel.extend(seen)
        rel_ptr[i + 1] = len(rel)

    # -- lemma index as CSR per POS ----------------------------------------
    arrays: dict[str, np.ndarray] = {}
    lemma_list = list(lemma_pos)
    arrays["lemma_str"] = np.asarray([intern(x, len(strings)) for x in lemma_list], dtype=np.int32)
    for fpos in FILE_POS:
        ptr = np.zeros(len(lemma_list) + 1, dtype=np.int64)
        syn: list[int] = []
        for r, lemma in enumerate(lemma_list):
            syn.extend(lemma_pos[lemma].get(fpos, ()))
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
            base.extend([intern(b, len(strings)) for b in bases])
            ptr[r + 1] = len(base)
        arrays[f"exc_{fpos}_ptr"] = ptr
        arrays[f"exc_{fpos}_form"] = np.asarray([intern(f, len(strings)) for f in exc], dtype=np.int32)
        arrays[f"exc_{fpos}_base"] = np.asarray(base, dtype=np.int32)

    # -- the graph: ancestors with BFS distances, depths --------------------
    depths = depth_tables(par_ptr, par_id_a, n)
    if depths is None:
        raise DataFormatError(
            f"WordNet folder {files.describe()}: the hypernym graph has a cycle or a chain deeper "
            f"than {MAX_HYPERNYM_DEPTH}; NLTK refuses such files too"
        )
    min_depth, max_depth = depths
    anc_ptr, anc_id, anc_dist, maxbfs = ancestor_tables(par_ptr, par_id_a, max_depth)

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
        name_str=np.asarray([intern(x, len(strings)) for x in names_l], dtype=np.int32),
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
    items = list(strings)
    bad = next((x for x in items if "\n" in x), None)
    if bad is not None:
        raise DataFormatError(f"WordNet folder {files.describe()}: a lemma holds a newline ({bad!r})")
    return WordNetIndex(arrays, items, checksum, "built", time.perf_counter() - t0, files.describe())


# ---------------------------------------------------------------------------
# the hypernym graph (numpy / plain Python: a numba kernel would cost more to
# compile on a fresh machine than these take to run, and the result is persisted)
# ---------------------------------------------------------------------------
def depth_tables(par_ptr: np.ndarray, par_id: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """NLTK's Synset.min_depth() and max_depth() for every synset; None on a cycle
    (or a chain deeper than NLTK's _MAX_HYPERNYM_DEPTH, which NLTK refuses too).

    Relaxation over all hypernym edges at once, one pass per level (about 20).
    """
    child = np.repeat(np.arange(n), np.diff(par_ptr))  # (E,) edge child -> parent par_id
    is_root = np.diff(par_ptr) == 0  # (n,)
    max_d = np.zeros(n, dtype=np.int64)
    min_d = np.where(is_root, 0, np.iinfo(np.int64).max // 2)
    for _ in range(MAX_HYPERNYM_DEPTH + 2):
        new_max = np.zeros(n, dtype=np.int64)
        np.maximum.at(new_max, child, max_d[par_id] + 1)
        new_min = np.where(is_root, 0, np.iinfo(np.int64).max // 2)
        np.minimum.at(new_min, child, min_d[par_id] + 1)
        if np.array_equal(new_max, max_d) and np.array_equal(new_min, min_d):
            return min_d.astype(np.int32), max_d.astype(np.int32)
        max_d, min_d = new_max, new_min
    return None  # still growing: a cycle, or a chain NLTK itself would refuse


def ancestor_tables(par_ptr: np.ndarray, par_id: np.ndarray, max_depth: np.ndarray):
    """Each synset's ancestors (itself included) sorted by id, with the shortest
    upward distance (what NLTK's breadth-first _shortest_hypernym_paths finds),
    and the largest of those distances.

    Parents before children (ascending max_depth), each synset's table is its
    parents' tables one step further, keeping the smaller distance.
    """
    n = max_depth.shape[0]
    ptr_l, par_l = par_ptr.tolist(), par_id.tolist()
    tables: list[dict[int, int] | None] = [None] * n
    for x in np.argsort(max_depth, kind="stable").tolist():
        own = {x: 0}
        for k in range(ptr_l[x], ptr_l[x + 1]):
            for a, d in tables[par_l[k]].items():  # type: ignore[union-attr]
                d += 1
                if own.get(a, d + 1) > d:
                    own[a] = d
        tables[x] = own
    counts = np.fromiter((len(t) for t in tables), dtype=np.int64, count=n)  # type: ignore[arg-type]
    anc_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=anc_ptr[1:])
    ids: list[int] = []
    dists: list[int] = []
    maxbfs = np.empty(n, dtype=np.int32)
    for x, t in enumerate(tables):
        keys = sorted(t)  # type: ignore[arg-type]
        ids.extend(keys)
        dists.extend([t[k] for k in keys])  # type: ignore[index]
        maxbfs[x] = max(t.values())  # type: ignore[union-attr]
    return anc_ptr, np.asarray(ids, dtype=np.int32), np.asarray(dists, dtype=np.int16), maxbfs


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

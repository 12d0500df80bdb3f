"""Building a :class:`~priorkit_plugins.wordnet.index.WordNetIndex` from the WordNet database files.

:func:`build` runs these steps, one function each:

1. :func:`parse_data_files` -- ``data.noun`` ... ``data.adv``: synsets, their
   lemma names, hypernym and first-antonym pointers (:class:`Synsets`);
2. :func:`hypernym_csr` -- the hypernym pointers resolved to synset ids;
3. :func:`parse_index_files` -- ``index.*``: lemma -> synsets per POS, in
   index-file order (NLTK's ``_lemma_pos_offset_map``);
4. :func:`synset_names` -- NLTK's names (``dog.n.01``) and their sort rank;
5. :func:`related_csr` -- lemma names plus each lemma's first antonym;
6. :func:`lemma_arrays` and :func:`exception_arrays` -- the word look-up tables;
7. :func:`graph_arrays` -- depths, ancestors with BFS distances, ``lch`` depths.

Strings (lemmas, names) are interned into one table; arrays hold their ids.
"""
from __future__ import annotations

import dataclasses
import re
import time

import numpy as np

from priorkit.errors import DataFormatError, ResourceError

from . import files as files_mod
from .index import (FILE_POS, INDEX_FORMAT, INDEX_KIND, MAX_HYPERNYM_DEPTH, POS_CODES, POS_NAMES, ROOT_NAME,
                    WordNetIndex,
                    FILEMAP)

_MARKER_RE = re.compile(r"(.*?)(\([^()]*\))?$")
_VERSION_RE = re.compile(r"Word[nN]et (\d+\+?|\d+\.\d+) Copyright")
#: a satellite adjective's pointers name the adjective data file
_FILE_OF_POS = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r"}


def build(files: files_mod.FileSet, checksum: str) -> WordNetIndex:
    """Parse the WordNet database files into a :class:`WordNetIndex`."""
    t0 = time.perf_counter()
    strings: dict[str, int] = {}  # string -> id, in insertion order

    def intern(text: str) -> int:
        return strings.setdefault(text, len(strings))

    syn = parse_data_files(files)
    par_ptr, par_id = hypernym_csr(syn)
    pos_a = np.asarray(syn.pos, dtype=np.int8)
    lemma_pos = parse_index_files(files, syn, satellite=pos_a == POS_CODES["s"])
    names, rank = synset_names(files, syn, lemma_pos)
    rel_ptr, rel = related_csr(syn, names, intern)

    arrays: dict[str, np.ndarray] = {}
    arrays.update(lemma_arrays(lemma_pos, intern))
    arrays.update(exception_arrays(files, intern))
    arrays.update(graph_arrays(files, par_ptr, par_id, pos_a, syn.version))
    arrays.update(
        pos=pos_a,
        offset=np.asarray(syn.offset, dtype=np.int32),
        name_str=np.asarray([intern(x) for x in names], dtype=np.int32),
        rank=rank,
        par_ptr=par_ptr,
        par_id=par_id,
        rel_ptr=rel_ptr,
        rel_str=np.asarray(rel, dtype=np.int32),
    )
    items = list(strings)
    bad = next((x for x in items if "\n" in x), None)
    if bad is not None:
        raise DataFormatError(f"WordNet folder {files.describe()}: a lemma holds a newline ({bad!r})")
    return WordNetIndex(arrays, items, checksum, "built", time.perf_counter() - t0, files.describe())


# ---------------------------------------------------------------------------
# 1-2. data files: synsets and their pointers
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class Synsets:
    """What the data files say, one list entry per synset (ids in file order n, v, a, r)."""

    files: files_mod.FileSet
    key_to_id: dict[tuple[str, str], int]  # (file pos, 8-digit offset string) -> id
    pos: list[int]
    offset: list[int]
    lemmas: list[list[str]]
    hypernyms: list[list[tuple[str, str]]]  # (file pos, offset) of hypernym synsets
    antonyms: list[dict[str, tuple[str, str, int]]]  # lemma -> first antonym (file pos, offset, lemma index)
    version: str | None

    def resolve(self, fpos: str, off: str, what: str) -> int:
        """Synset id of a pointer; offsets written without zero padding are tolerated."""
        got = self.key_to_id.get((fpos, off))
        if got is None:
            try:
                got = self.key_to_id.get((fpos, "%08d" % int(off)))
            except ValueError:
                got = None
            if got is None:
                raise DataFormatError(
                    f"WordNet file data.{FILEMAP[fpos]}: {what} points to missing offset {off}; "
                    f"the files are inconsistent, re-fetch them with `priorkit data fetch wordnet`"
                )
        return got


def _parse_synset_line(columns: list[str]) -> tuple[list[str], list[tuple[str, str]], dict]:
    """(lemma names, hypernym pointers, first antonym per lemma) of one data-file line."""
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
                hypers.append((_FILE_OF_POS[columns[k + 2]], columns[k + 1]))
        elif symbol == "!":
            st = columns[k + 3]
            if st != "0000":
                src = names[int(st[:2], 16) - 1]
                if src not in ants:  # NLTK's lemma.antonyms()[0]: the first one listed
                    ants[src] = (_FILE_OF_POS[columns[k + 2]], columns[k + 1], int(st[2:], 16) - 1)
    return names, hypers, ants


def parse_data_files(files: files_mod.FileSet) -> Synsets:
    """Every synset of ``data.noun`` ... ``data.adv``.

    Offsets stay strings ("00001740"): WordNet writes them zero-padded to 8
    digits everywhere, and skipping int() halves the parse time.
    """
    syn = Synsets(files, {}, [], [], [], [], [], None)
    for fpos in FILE_POS:
        fname = f"data.{FILEMAP[fpos]}"
        for lineno, line in enumerate(files.lines(fname), 1):
            if not line or line[0].isspace():
                if fpos == "a" and syn.version is None:
                    m = _VERSION_RE.search(line)
                    syn.version = m.group(1) if m else None
                continue
            try:
                columns = line.split("|", 1)[0].split()
                spos = columns[2]
                names, hypers, ants = _parse_synset_line(columns)
                offset = int(columns[0])
            except (ValueError, IndexError, KeyError) as exc:
                raise DataFormatError(
                    f"WordNet file {files.describe(fname)}, line {lineno}: cannot parse synset ({exc!r}); "
                    f"re-fetch it with `priorkit data fetch wordnet`"
                ) from exc
            if spos not in POS_CODES:
                raise DataFormatError(f"WordNet file {files.describe(fname)}, line {lineno}: unknown POS {spos!r}")
            syn.key_to_id[(fpos, columns[0])] = len(syn.pos)
            syn.pos.append(POS_CODES[spos])
            syn.offset.append(offset)
            syn.lemmas.append(names)
            syn.hypernyms.append(hypers)
            syn.antonyms.append(ants)
    if not syn.pos:
        raise ResourceError(f"WordNet folder {files.describe()} holds no synsets; {files_mod.FETCH_HINT}")
    return syn


def hypernym_csr(syn: Synsets) -> tuple[np.ndarray, np.ndarray]:
    """Each synset's hypernym ids, sorted and de-duplicated: ``par_ptr`` (n+1,), ``par_id``."""
    n = len(syn.pos)
    par_ptr = np.zeros(n + 1, dtype=np.int64)
    par_id: list[int] = []
    for i, hypers in enumerate(syn.hypernyms):
        par_id.extend(sorted({syn.resolve(p, o, f"a hypernym of synset {syn.offset[i]}") for p, o in hypers}))
        par_ptr[i + 1] = len(par_id)
    return par_ptr, np.asarray(par_id, dtype=np.int32)


# ---------------------------------------------------------------------------
# 3-5. index files, names, related words
# ---------------------------------------------------------------------------
def parse_index_files(files: files_mod.FileSet, syn: Synsets,
                      satellite: np.ndarray) -> dict[str, dict[str, list[int]]]:
    """lemma -> {pos: synset ids in index order}; satellites also filed under "s", as NLTK does."""
    key_get = syn.key_to_id.get
    lemma_pos: dict[str, dict[str, list[int]]] = {}
    for fpos in FILE_POS:
        fname = f"index.{FILEMAP[fpos]}"
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
                ids = [syn.resolve(fpos, o, f"index.{FILEMAP[fpos]} entry {lemma!r}") for o in offsets]
            entry = lemma_pos.setdefault(lemma, {})
            entry[lpos] = ids
            if lpos == "a":  # NLTK also files the satellites under "s", in index order
                entry["s"] = [i for i in ids if satellite[i]]
    return lemma_pos


def synset_names(files: files_mod.FileSet, syn: Synsets,
                 lemma_pos: dict[str, dict[str, list[int]]]) -> tuple[list[str], np.ndarray]:
    """NLTK's synset names (first lemma, pos, sense number) and each name's rank in sorted
    order, with one extra last rank for ``*ROOT*`` (NLTK breaks ties by sorted names)."""
    n = len(syn.pos)
    names: list[str] = []
    for i in range(n):
        first = syn.lemmas[i][0].lower()
        spos = POS_NAMES[syn.pos[i]]
        try:
            sense = lemma_pos[first][spos].index(i) + 1
        except (KeyError, ValueError):
            raise DataFormatError(
                f"WordNet synset {first!r} ({spos}, offset {syn.offset[i]}) is missing from "
                f"index.{FILEMAP['a' if spos == 's' else spos]}; re-fetch the files"
            ) from None
        names.append("%s.%s.%02i" % (first, spos, sense))
    if len(set(names)) != n:
        raise DataFormatError(f"WordNet folder {files.describe()}: synset names are not unique")
    order = sorted(range(n + 1), key=lambda i: names[i] if i < n else ROOT_NAME)
    rank = np.empty(n + 1, dtype=np.int32)
    rank[np.asarray(order)] = np.arange(n + 1, dtype=np.int32)
    return names, rank


def related_csr(syn: Synsets, names: list[str], intern) -> tuple[np.ndarray, list[int]]:
    """Per synset: its lemma names plus the first antonym of each lemma, as string ids."""
    n = len(syn.pos)
    rel_ptr = np.zeros(n + 1, dtype=np.int64)
    rel: list[int] = []
    for i in range(n):
        seen = dict.fromkeys([intern(nm) for nm in syn.lemmas[i]])
        for fpos, off, tidx in syn.antonyms[i].values():
            target = syn.lemmas[syn.resolve(fpos, off, f"an antonym of synset {names[i]}")]
            if not 0 <= tidx < len(target):
                raise DataFormatError(f"WordNet antonym pointer of synset {names[i]} names lemma {tidx + 1}")
            seen.setdefault(intern(target[tidx]))
        rel.extend(seen)
        rel_ptr[i + 1] = len(rel)
    return rel_ptr, rel


# ---------------------------------------------------------------------------
# 6. word look-up tables
# ---------------------------------------------------------------------------
def lemma_arrays(lemma_pos: dict[str, dict[str, list[int]]], intern) -> dict[str, np.ndarray]:
    """``lemma_str`` and, per POS, the CSR ``lem_<pos>_ptr`` / ``lem_<pos>_syn``."""
    arrays: dict[str, np.ndarray] = {}
    lemma_list = list(lemma_pos)
    arrays["lemma_str"] = np.asarray([intern(x) for x in lemma_list], dtype=np.int32)
    for fpos in FILE_POS:
        ptr = np.zeros(len(lemma_list) + 1, dtype=np.int64)
        syn: list[int] = []
        for r, lemma in enumerate(lemma_list):
            syn.extend(lemma_pos[lemma].get(fpos, ()))
            ptr[r + 1] = len(syn)
        arrays[f"lem_{fpos}_ptr"] = ptr
        arrays[f"lem_{fpos}_syn"] = np.asarray(syn, dtype=np.int32)
    return arrays


def exception_arrays(files: files_mod.FileSet, intern) -> dict[str, np.ndarray]:
    """The morphological exception lists (``noun.exc`` ...) as CSR of string ids."""
    arrays: dict[str, np.ndarray] = {}
    for fpos in FILE_POS:
        exc: dict[str, list[str]] = {}
        for line in files.lines(f"{FILEMAP[fpos]}.exc"):
            terms = line.split()
            if terms:
                exc[terms[0]] = terms[1:]
        ptr = np.zeros(len(exc) + 1, dtype=np.int64)
        base: list[int] = []
        for r, bases in enumerate(exc.values()):
            base.extend([intern(b) for b in bases])
            ptr[r + 1] = len(base)
        arrays[f"exc_{fpos}_ptr"] = ptr
        arrays[f"exc_{fpos}_form"] = np.asarray([intern(f) for f in exc], dtype=np.int32)
        arrays[f"exc_{fpos}_base"] = np.asarray(base, dtype=np.int32)
    return arrays


# ---------------------------------------------------------------------------
# 7. the hypernym graph (numpy / plain Python: a numba kernel would cost more to
# compile on a fresh machine than these take to run, and the result is persisted)
# ---------------------------------------------------------------------------
def graph_arrays(files: files_mod.FileSet, par_ptr: np.ndarray, par_id: np.ndarray, pos_a: np.ndarray,
                 version: str | None) -> dict[str, np.ndarray]:
    """Depths, ancestor tables, ``needs_root`` and NLTK's ``lch`` depth per POS code."""
    n = pos_a.shape[0]
    depths = depth_tables(par_ptr, par_id, n)
    if depths is None:
        raise DataFormatError(
            f"WordNet folder {files.describe()}: the hypernym graph has a cycle or a chain deeper "
            f"than {MAX_HYPERNYM_DEPTH}; NLTK refuses such files too"
        )
    min_depth, max_depth = depths
    anc_ptr, anc_id, anc_dist, maxbfs = ancestor_tables(par_ptr, par_id, max_depth)
    needs_root = (pos_a != POS_CODES["n"]) | (version == "1.6")
    # NLTK's _compute_max_depth(pos, need_root): max over all_synsets(pos) (+1 with a root)
    lch_depth = np.zeros(5, dtype=np.int64)
    for code, members in ((0, [0]), (1, [1]), (2, [2, 4]), (3, [3]), (4, [4])):
        sel = np.isin(pos_a, members)
        d = int(max_depth[sel].max()) if sel.any() else 0
        nr = bool(code != 0 or version == "1.6")
        lch_depth[code] = d + (1 if nr else 0)
    return dict(anc_ptr=anc_ptr, anc_id=anc_id, anc_dist=anc_dist, maxbfs=maxbfs, min_depth=min_depth,
                max_depth=max_depth, needs_root=needs_root.astype(np.bool_), lch_depth=lch_depth)


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


def load_or_build(files: files_mod.FileSet, checksum: str, root: Path) -> WordNetIndex:
    """The index of these files: read from ``root/wordnet/<key>``, or built and saved there."""
    from .. import _support

    key = _support.index_key(checksum=checksum, format=INDEX_FORMAT)
    folder = _support.find_index(INDEX_KIND, key, root)
    idx = WordNetIndex.load(folder, checksum) if folder is not None else None
    if idx is not None:
        return idx
    idx = build(files, checksum)
    meta = {"format": INDEX_FORMAT, "checksum": checksum, "strings": len(idx.strings), "source": idx.path}
    try:
        with _support.building_index(INDEX_KIND, key, meta, root) as tmp:
            idx.save(tmp)
        saved = _support.find_index(INDEX_KIND, key, root)
        idx.path = str(saved) if saved is not None else idx.path
    except OSError:
        pass  # a read-only home: keep the in-memory index, rebuild next time
    return idx

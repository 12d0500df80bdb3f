"""The ontology index on disk, as data only (no pickle): ``arrays.npz`` + ``data.json``.

An :class:`OntologyIndex` (parsed ontology, is-a DAG arrays, name matcher)
is written into an index folder of ``priorkit_plugins._support``:

- ``arrays.npz`` (``allow_pickle=False``): the DAG arrays (``anc_*``,
  ``depth``, ``parents_*``, one ``ic_<method>`` per IC method), the edges and
  the synonyms' concept numbers;
- ``data.json``: ids, names, synonym texts/scopes/kinds, alternative ids,
  counts, the parse's warnings, and the matcher's keys (token lists) with
  their concept numbers.

Reading it back builds the same objects; nothing in these files can run
code, so a folder shared with others can at worst hold wrong values (and
``_support`` does not read folders that others can write to).

An index already read by this process is shared instead of read again while
a provider still holds it, and the one read last is kept for the next provider
(the HPO + MeSH index is a 70 MB JSON file that takes seconds to decode, and one
pipeline run makes a dozen providers of it).  An index is read-only once built,
so sharing it changes no result; a rewritten file is read again.
"""
from __future__ import annotations

import weakref
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import _support
from .graph import ConceptGraph
from .match import ConceptMatcher
from .model import OntologyData, Synonym

#: bump when the saved layout or the parsing changes (1-2 were pickles)
INDEX_FORMAT = 3
INDEX_KIND = "ontology"


class OntologyIndex:
    """Everything derived from one ontology file: data, DAG arrays, name matcher."""

    def __init__(self, data: OntologyData, graph: ConceptGraph, matcher: ConceptMatcher,
                 notes: Sequence[str] = ()) -> None:
        self.data = data
        self.graph = graph
        self.matcher = matcher
        #: the malformed-line warnings of the parse, repeated when loading from the cache
        self.notes = list(notes)
        #: the concept groups (groups.concept_groups of data and graph), computed on first use
        self.groups: tuple | None = None


def save(index: OntologyIndex, folder: Path) -> None:
    d, g, m = index.data, index.graph, index.matcher
    _support.save_arrays(
        folder / "arrays.npz",
        edges=np.asarray(d.edges, dtype=np.int64).reshape(-1, 2),
        syn_concept=np.asarray([s.concept for s in d.synonyms], dtype=np.int64),
        anc_ptr=g.anc_ptr, anc_idx=g.anc_idx, anc_dist=g.anc_dist, depth=g.depth,
        parents_ptr=g.parents_ptr, parents_idx=g.parents_idx,
        **{f"ic_{k}": v for k, v in g.ic.items()},
    )
    keys, exact = m.state()
    _support.save_json(folder / "data.json", {
        "source": d.source, "format": d.format, "ids": d.ids, "names": d.names,
        "syn_text": [s.text for s in d.synonyms], "syn_scope": [s.scope for s in d.synonyms],
        "syn_kind": [s.kind for s in d.synonyms], "alt_ids": d.alt_ids, "stats": d.stats,
        "notes": index.notes,
        "graph": {"n_concepts": g.n_concepts, "n_nodes": g.n_nodes, "virtual_root": g.virtual_root,
                  "ic": sorted(g.ic)},
        "matcher": {"fold_plurals": m.fold_plurals, "stop_words": sorted(m.stop_words),
                    "options": m.options, "keys": keys, "exact": exact},
    })


#: indexes read by this process that some provider still holds, by folder and file stamps
_LOADED: weakref.WeakValueDictionary[tuple, OntologyIndex] = weakref.WeakValueDictionary()
#: the index read last (kept when no provider holds it any more)
_LAST: list[OntologyIndex] = []


def _stamp(folder: Path) -> tuple:
    """The folder and each file's inode, size and modification time: a rewritten file reads again."""
    out: list = [str(Path(folder).resolve())]
    for name in ("arrays.npz", "data.json", _support.DONE_MARKER):
        st = (Path(folder) / name).stat()
        out += [st.st_ino, st.st_size, st.st_mtime_ns]
    return tuple(out)


def load(folder: Path) -> OntologyIndex:
    """Raises OSError/ValueError/KeyError on a damaged folder (the caller rebuilds).

    The same index object when this process already read the unchanged folder and a
    provider still holds it, or it was the last one read."""
    stamp = _stamp(folder)
    index = _LOADED.get(stamp)
    if index is None:
        index = _LOADED[stamp] = _read(folder)
        _LAST[:] = [index]
    return index


def _read(folder: Path) -> OntologyIndex:
    a = _support.load_arrays(folder / "arrays.npz")
    j = _support.load_json(folder / "data.json")
    syns = [Synonym(int(c), t, s, k) for c, t, s, k in
            zip(a["syn_concept"].tolist(), j["syn_text"], j["syn_scope"], j["syn_kind"], strict=True)]
    data = OntologyData(j["source"], j["format"], j["ids"], j["names"], syns,
                        [tuple(e) for e in a["edges"].tolist()], j["alt_ids"], j["stats"])
    gj = j["graph"]
    graph = ConceptGraph(gj["n_concepts"], gj["n_nodes"], gj["virtual_root"], a["anc_ptr"], a["anc_idx"],
                         a["anc_dist"], a["depth"], {k: a[f"ic_{k}"] for k in gj["ic"]},
                         a["parents_ptr"], a["parents_idx"])
    mj = j["matcher"]
    matcher = ConceptMatcher.from_state(mj["fold_plurals"], mj["stop_words"], mj["keys"], mj["exact"],
                                      mj.get("options"))
    return OntologyIndex(data, graph, matcher, j["notes"])

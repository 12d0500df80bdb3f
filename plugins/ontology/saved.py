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
"""
from __future__ import annotations

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


def load(folder: Path) -> OntologyIndex:
    """Raises OSError/ValueError/KeyError on a damaged folder (the caller rebuilds)."""
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

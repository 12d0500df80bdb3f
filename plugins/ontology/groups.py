"""Semantic groups of concepts for token features: the top-level roots of the is-a graph.

A root is a concept without a parent (above the virtual root, when the graph has
one).  Groups are named short and stable from the root's id prefix: ``HP`` is
``hpo``, ``MESHCAT`` is ``mesh``, other prefixes are lower-cased; when several
roots share a prefix (MeSH's trees ``MESHCAT:C`` and ``MESHCAT:D``) each name
gets the id's local part (``mesh:C``, ``mesh:D``).  A concept belongs to every
group whose root is one of its ancestors (itself included).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .graph import ConceptGraph

#: id prefixes with a conventional short name
PREFIX_NAMES = {"hp": "hpo", "meshcat": "mesh"}


def root_names(root_ids: Sequence[str]) -> list[str]:
    """Group names of the roots, in the same order."""
    prefixes = [r.split(":", 1)[0].lower() if ":" in r else r.lower() for r in root_ids]
    out = []
    for rid, prefix in zip(root_ids, prefixes):
        name = PREFIX_NAMES.get(prefix, prefix)
        if prefixes.count(prefix) > 1:
            name += ":" + (rid.split(":", 1)[1] if ":" in rid else rid)
        out.append(name)
    return out


def concept_groups(ids: Sequence[str], graph: ConceptGraph) -> tuple[list[str], list[tuple[int, ...]]]:
    """(group names sorted, each concept's group numbers) for the concepts ``ids``."""
    n = graph.n_concepts
    parents = np.diff(graph.parents_ptr)[:n]
    only_virtual = np.zeros(n, dtype=bool)
    if graph.virtual_root:  # the virtual root's children are the real roots
        single = np.flatnonzero(parents == 1)
        only_virtual[single] = graph.parents_idx[graph.parents_ptr[single]] == n
    roots = np.flatnonzero((parents == 0) | only_virtual)
    names = root_names([ids[r] for r in roots.tolist()])
    order = sorted(set(names))
    group_of_root = np.full(graph.n_nodes, -1, dtype=np.int64)
    group_of_root[roots] = [order.index(nm) for nm in names]
    rows = np.repeat(np.arange(graph.n_nodes), np.diff(graph.anc_ptr))
    g = group_of_root[graph.anc_idx]
    keep = (g >= 0) & (rows < n)
    pairs = np.unique(np.stack([rows[keep], g[keep]], axis=1), axis=0)
    of_concept: list[list[int]] = [[] for _ in range(n)]
    for c, grp in pairs.tolist():
        of_concept[c].append(grp)
    return order, [tuple(x) for x in of_concept]

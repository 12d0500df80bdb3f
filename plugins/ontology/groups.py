"""Semantic groups of concepts for token features: the top-level roots of the is-a graph.

A root is a concept without a parent (above the virtual root, when the graph has
one).  Groups are named short and stable from the root's id prefix: ``HP`` is
``hpo``, ``MESHCAT`` is ``mesh``, other prefixes are lower-cased; when several
roots share a prefix (MeSH's trees ``MESHCAT:C`` and ``MESHCAT:D``) each name
gets the id's local part (``mesh:C``, ``mesh:D``).  A concept belongs to every
group whose root is one of its ancestors (itself included).

:func:`subset_under` keeps the concepts under chosen roots (the ``roots`` parameter).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from priorkit.errors import ProviderParameterError
from priorkit.providers.base import Match

from .graph import ConceptGraph
from .model import OntologyData

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


def group_matches(found: Sequence[tuple[int, int, Sequence[int]]], ids: Sequence[str], names: Sequence[str],
                  of_concept: Sequence[tuple[int, ...]]) -> list[Match]:
    """The matcher's ``(start, end, concepts)`` mentions as matches: one per group of the
    mention's concepts, same span, in group order, each with that group's concept ids."""
    out: list[Match] = []
    for s, e, concepts in found:
        by_group: dict[int, list[str]] = {}
        for c in concepts:
            for g in of_concept[c]:
                by_group.setdefault(g, []).append(ids[c])
        out += [Match(s, e, tuple(by_group[g]), names[g]) for g in sorted(by_group)]
    return out


def concept_branch(graph: ConceptGraph, ids: Sequence[str], concept: int) -> tuple[str, ...]:
    """The level-2 concepts above ``concept`` (itself included; level 1 is a top concept of the
    file, e.g. MeSH's tree D, so level 2 is e.g. "Enzymes and Coenzymes"), as sorted ids."""
    anc = graph.anc_idx[graph.anc_ptr[concept]:graph.anc_ptr[concept + 1]]
    level = graph.depth[anc] - (1 if graph.virtual_root else 0)
    return tuple(sorted(ids[a] for a, lv in zip(anc.tolist(), level.tolist()) if a < graph.n_concepts and lv == 2))


def subset_under(data: OntologyData, graph: ConceptGraph, roots: Sequence[str]) -> OntologyData:
    """Only the concepts under ``roots`` (inclusive), e.g. HPO's HP:0000118."""
    missing = [r for r in roots if r not in data.ids and r not in data.alt_ids]
    if missing:
        raise ProviderParameterError(f"roots {missing} are not concepts of {data.source}")
    root_idx = np.array([data.index(r) for r in roots])
    rows = np.repeat(np.arange(graph.n_nodes), np.diff(graph.anc_ptr))
    keep = np.unique(rows[np.isin(graph.anc_idx, root_idx)])
    keep = keep[keep < len(data)]  # not the virtual root
    renum = np.full(graph.n_nodes, -1)
    renum[keep] = np.arange(keep.size)
    edges = [(int(renum[c]), int(renum[p])) for c, p in data.edges if renum[c] >= 0 and renum[p] >= 0]
    syns = [dataclasses.replace(s, concept=int(renum[s.concept])) for s in data.synonyms if renum[s.concept] >= 0]
    stats = dict(data.stats, concepts=int(keep.size), edges=len(edges), synonyms=len(syns),
                 outside_roots=len(data) - int(keep.size))
    return OntologyData(
        data.source, data.format, [data.ids[i] for i in keep], [data.names[i] for i in keep], syns,
        edges, {a: int(renum[i]) for a, i in data.alt_ids.items() if renum[i] >= 0}, stats,
    )

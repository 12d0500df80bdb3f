"""Similarity between concepts of an is-a DAG, vectorised over concept pairs.

Precomputed once per ontology (all arrays, so the index saves as one ``.npz``):

- every concept's ancestors *including itself* with the shortest upward
  distance, as CSR rows sorted by ancestor number
  (``anc_ptr`` (n+1,), ``anc_idx`` (nnz,), ``anc_dist`` (nnz,));
- ``depth``: 1 + shortest distance from the root (the root has depth 1);
- intrinsic information content ``ic`` in [0, 1].

When the DAG has several roots a *virtual root* (number ``n_concepts``) is
added above them, so every pair has a common ancestor; it has no name and is
never recognised in text.  A cycle in is-a is an error (an ontology whose
``is_a`` loops has no hierarchy to measure), naming the concepts on it.

Measures for concepts ``a``, ``b`` with common ancestors ``C(a, b)`` and
``d(x, y)`` the shortest upward distance:

- ``path``    1 / (1 + min_{c in C} d(a, c) + d(b, c))
- ``wup``     max_{c in C} 2 depth(c) / (d(a, c) + d(b, c) + 2 depth(c))
- ``resnik``  max_{c in C} IC(c)                     (IC already in [0, 1])
- ``lin``     2 IC(mica) / (IC(a) + IC(b)),  mica = argmax_{c in C} IC(c)

and 1 for identical concepts.  Intrinsic IC (no corpus needed):

- ``seco`` (Seco, Veale & Hayes 2004): IC(c) = 1 - log(hypo(c) + 1) / log(N),
  hypo(c) = number of descendants, N = number of nodes;
- ``sanchez`` (Sanchez, Batet & Isern 2011): IC(c) = -log((leaves(c) /
  subsumers(c) + 1) / (max_leaves + 1)) divided by log(max_leaves + 1) to
  land in [0, 1]; leaves(c) = leaf descendants of c (0 for a leaf),
  subsumers(c) = ancestors including c.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from priorkit.errors import DataFormatError, ProviderParameterError

MEASURES = ("lin", "resnik", "path", "wup")
IC_METHODS = ("seco", "sanchez")


@dataclasses.dataclass
class ConceptGraph:
    n_concepts: int  # real concepts; a virtual root, if any, is number n_concepts
    n_nodes: int
    virtual_root: bool
    anc_ptr: np.ndarray  # (n_nodes + 1,) int64
    anc_idx: np.ndarray  # (nnz,) int32, ancestors incl. self, sorted per row
    anc_dist: np.ndarray  # (nnz,) int32, shortest upward distance
    depth: np.ndarray  # (n_nodes,) int32, root = 1
    ic: dict[str, np.ndarray]  # method -> (n_nodes,) float64 in [0, 1]
    parents_ptr: np.ndarray  # (n_nodes + 1,) int64
    parents_idx: np.ndarray  # (n_edges,) int32

    # ---- construction -------------------------------------------------
    @classmethod
    def build(cls, n: int, edges: Sequence[tuple[int, int]], ids: Sequence[str], source: str) -> "ConceptGraph":
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)  # (E, 2) child, parent
        has_parent = np.zeros(n, dtype=bool)
        has_parent[e[:, 0]] = True
        roots = np.flatnonzero(~has_parent)
        if roots.size == 0:
            raise DataFormatError(f"{source}: every concept has a parent, so is-a has a cycle; " + _cycle_hint(n, e, ids))
        virtual = roots.size > 1
        n_nodes = n + 1 if virtual else n
        if virtual:
            e = np.concatenate([e, np.stack([roots, np.full_like(roots, n)], axis=1)])
        order = np.lexsort((e[:, 1], e[:, 0]))
        e = e[order]
        parents_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
        np.add.at(parents_ptr, e[:, 0] + 1, 1)
        parents_ptr = np.cumsum(parents_ptr)
        parents_idx = e[:, 1].astype(np.int32)

        topo = _topological(n_nodes, e, ids, source)  # parents before children
        # ancestors with shortest distances, parents first (dict merge per node)
        anc: list[dict[int, int] | None] = [None] * n_nodes
        pp = parents_ptr.tolist()
        pidx = parents_idx.tolist()
        for v in topo.tolist():
            own = {v: 0}
            for p in pidx[pp[v]:pp[v + 1]]:
                for a, d in anc[p].items():
                    d += 1
                    if own.get(a, 1 << 30) > d:
                        own[a] = d
            anc[v] = own
        lengths = np.fromiter((len(a) for a in anc), dtype=np.int64, count=n_nodes)
        anc_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(lengths, out=anc_ptr[1:])
        anc_idx = np.empty(anc_ptr[-1], dtype=np.int32)
        anc_dist = np.empty(anc_ptr[-1], dtype=np.int32)
        for v, a in enumerate(anc):
            keys = sorted(a)
            anc_idx[anc_ptr[v]:anc_ptr[v + 1]] = keys
            anc_dist[anc_ptr[v]:anc_ptr[v + 1]] = [a[k] for k in keys]
        root = n if virtual else int(roots[0])
        rows = np.repeat(np.arange(n_nodes), lengths)
        depth = np.ones(n_nodes, dtype=np.int32)
        at_root = anc_idx == root
        depth[rows[at_root]] = anc_dist[at_root] + 1
        graph = cls(n, n_nodes, virtual, anc_ptr, anc_idx, anc_dist, depth, {}, parents_ptr, parents_idx)
        graph.ic = graph._information_content(rows)
        return graph

    def _information_content(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        N = self.n_nodes
        members = np.bincount(self.anc_idx, minlength=N)  # descendants incl. self
        hypo = members - 1
        seco = 1.0 - np.log(hypo + 1.0) / np.log(N) if N > 1 else np.ones(N)
        is_leaf = hypo == 0
        leaves = np.bincount(self.anc_idx[is_leaf[rows]], minlength=N)  # leaf descendants incl. self
        leaves = np.where(is_leaf, 0, leaves)
        subsumers = np.diff(self.anc_ptr)
        max_leaves = max(int(is_leaf.sum()), 1)
        sanchez = -np.log((leaves / subsumers + 1.0) / (max_leaves + 1.0)) / np.log(max_leaves + 1.0)
        return {"seco": np.clip(seco, 0.0, 1.0), "sanchez": np.clip(sanchez, 0.0, 1.0)}

    # ---- queries ------------------------------------------------------
    def ancestors(self, v: int) -> dict[int, int]:
        s, e = self.anc_ptr[v], self.anc_ptr[v + 1]
        return dict(zip(self.anc_idx[s:e].tolist(), self.anc_dist[s:e].tolist()))

    def parents(self, v: int) -> list[int]:
        return self.parents_idx[self.parents_ptr[v]:self.parents_ptr[v + 1]].tolist()

    def pair_similarity(self, a: np.ndarray, b: np.ndarray, measure: str, ic: str = "seco") -> np.ndarray:
        """Similarity of concept pairs ``(a[k], b[k])``: (P,) float64 in [0, 1].

        Vectorised: the ancestor rows of all pairs are laid end to end with
        key ``pair * n_nodes + ancestor``; one ``intersect1d`` finds every
        common ancestor of every pair, and ``reduceat`` takes the best per pair.
        """
        if measure not in MEASURES:
            raise ProviderParameterError(f"unknown measure {measure!r}; choose one of {', '.join(MEASURES)}")
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        P = a.size
        out = np.ones(P, dtype=np.float64)
        if P == 0:
            return out
        starts, anc, dist = self._common(a, b)
        if measure == "path":
            out = 1.0 / (1.0 + np.minimum.reduceat(dist, starts))
        elif measure == "wup":
            d2 = 2.0 * self.depth[anc]
            out = np.maximum.reduceat(d2 / (dist + d2), starts)
        else:
            values = self.ic[ic]
            mica = np.maximum.reduceat(values[anc], starts)
            if measure == "resnik":
                out = mica
            else:  # lin
                den = values[a] + values[b]
                out = np.divide(2.0 * mica, den, out=np.zeros(P), where=den > 0)
        out[a == b] = 1.0
        return np.clip(out, 0.0, 1.0)

    def _common(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every common ancestor of every pair ``(a[k], b[k])``, grouped by pair.

        The ancestor rows of all pairs are laid end to end with key
        ``pair * n_nodes + ancestor``; one ``intersect1d`` finds them all.
        Returns ``starts`` (P,) (where each pair's group begins), ``anc`` and
        ``dist`` = d(a, c) + d(b, c) per common ancestor c (float64).
        """
        P = a.size
        pos_a, pair_a = _rows(self.anc_ptr, a)
        pos_b, pair_b = _rows(self.anc_ptr, b)
        N = np.int64(self.n_nodes)
        key_a = pair_a * N + self.anc_idx[pos_a]
        key_b = pair_b * N + self.anc_idx[pos_b]
        common, ia, ib = np.intersect1d(key_a, key_b, assume_unique=True, return_indices=True)
        pair = common // N  # sorted, every pair present (they share the root)
        anc = common % N
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        if starts.size != P:  # cannot happen with a single (possibly virtual) root
            raise RuntimeError("concept pair without a common ancestor")
        dist = (self.anc_dist[pos_a[ia]] + self.anc_dist[pos_b[ib]]).astype(np.float64)
        return starts, anc, dist

    def pair_relation(self, a: np.ndarray, b: np.ndarray, hops: int, groups: int) -> np.ndarray:
        """How concept pairs ``(a[k], b[k])`` relate: (P,) int8, 2 same concept, 1 related, 0 not.

        Related: joined by at most ``hops`` is-a steps through a common ancestor
        (up from one, down to the other: ``min_c d(a, c) + d(b, c) <= hops``), or
        sharing an ancestor at level ``groups`` or below (level 1 = a top concept
        of the file, e.g. HPO's "All" or MeSH's tree C; ``groups=0``: not used).
        The virtual root above several top concepts joins nothing.
        """
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(a.size, dtype=np.int8)
        if a.size == 0:
            return out
        starts, anc, dist = self._common(a, b)
        real = anc < self.n_concepts if self.virtual_root else np.ones(anc.size, dtype=bool)
        near = np.minimum.reduceat(np.where(real, dist, np.inf), starts) <= hops
        if groups > 0:
            level = self.depth[anc] - (1 if self.virtual_root else 0)
            near |= np.maximum.reduceat(np.where(real, level, 0), starts) >= groups
        out[near] = 1
        out[a == b] = 2
        return out

def _rows(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the CSR entries of ``rows`` laid end to end, and their row number in ``rows``."""
    starts = ptr[rows]
    lengths = ptr[rows + 1] - starts
    total = int(lengths.sum())
    pair = np.repeat(np.arange(rows.size, dtype=np.int64), lengths)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + offsets, pair


def _topological(n: int, e: np.ndarray, ids: Sequence[str], source: str) -> np.ndarray:
    """Kahn's algorithm from the roots down; a cycle raises DataFormatError."""
    order_by_parent = np.argsort(e[:, 1], kind="stable")
    child_of = e[order_by_parent, 0]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, e[:, 1] + 1, 1)
    ptr = np.cumsum(ptr)
    remaining = np.bincount(e[:, 0], minlength=n)  # unprocessed parents per node
    frontier = np.flatnonzero(remaining == 0)
    out: list[np.ndarray] = []
    done = 0
    while frontier.size:
        out.append(frontier)
        done += frontier.size
        pos, _ = _rows(ptr, frontier)
        kids = child_of[pos]
        np.subtract.at(remaining, kids, 1)
        kids = np.unique(kids)
        frontier = kids[remaining[kids] == 0]
    if done < n:
        raise DataFormatError(f"{source}: the is-a hierarchy has a cycle; " + _cycle_hint(n, e, ids))
    return np.concatenate(out)


def _cycle_hint(n: int, e: np.ndarray, ids: Sequence[str]) -> str:
    """Find one cycle (DFS over parent links) and name its concepts."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_edges_from(map(tuple, e.tolist()))
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:  # pragma: no cover - callers only ask when there is one
        return "no cycle found"
    names = [ids[c] if c < len(ids) else "<root>" for c, _ in cycle]
    return "e.g. " + " is_a ".join([*names, names[0]]) + ". Remove one of these is_a links."

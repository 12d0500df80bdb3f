"""Similarity between ConceptNet concepts: direct edges plus shared neighbours.

The graph is the undirected, weighted adjacency ``A`` (N x N, scipy CSR) of
the kept edges.  An edge's strength is ``relation_weight * (1 - exp(-w))``
for its JSON weight ``w`` (1 -> 0.63, 2 -> 0.86: more sources, more trust,
saturating), and parallel edges combine by noisy-or,
``1 - prod(1 - strength)``, so every entry stays in [0, 1).

Similarity of two concepts is the cosine of their *closed neighbourhoods*:
rows of ``F = (A + I) D`` where ``D`` damps hub concepts by
``1 / log2(2 + degree)`` (sharing "person" says less than sharing "kennel").
The dot product of two rows sums the direct edge between them (through the
identity) and every two-hop path through a shared neighbour, so this is
"direct relations plus proximity within two hops", in [0, 1] because all
entries are non-negative.  Hub-heavy neighbourhoods make these cosines small
(median 0.017 over SimLex-999's pairs), so the result is raised to ``power``
(default 0.5): ranks are unchanged, values spread over [0, 1] (median 0.13),
and the linear agreement with human ratings rises (Pearson on SimLex-999
0.40 -> 0.45, WordSim-353 0.31 -> 0.60), which is what lets it be averaged
with other providers.  Measured on WordSim-353 / SimLex-999 (see
docs/providers/conceptnet.md) it beats direct edges alone (0.68 vs 0.58
Spearman on WordSim-353) and wider four-hop neighbourhoods (``F @ F``, 0.56).
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from priorkit.errors import DataFormatError, PriorkitError

from .index import KNOWN_RELATIONS, EdgeIndex
from .lemma import lemmatize

#: relation weights used unless ``relation_weights=`` overrides them.  On the
#: shipped graph uniform weights evaluated best (see the provider docs), so
#: most relations weigh 1; relations that say little about likeness are
#: halved and negated ones ("NotDesires") are dropped.
DEFAULT_RELATION_WEIGHT = 1.0
RELATION_WEIGHTS: dict[str, float] = {
    "Antonym": 0.5, "DistinctFrom": 0.5, "HasContext": 0.5, "SimilarSize": 0.5,
    "EtymologicallyRelatedTo": 0.5, "EtymologicallyDerivedFrom": 0.5,
    "NotDesires": 0.0, "NotUsedFor": 0.0, "NotCapableOf": 0.0, "NotHasProperty": 0.0,
    "ExternalURL": 0.0,
}
_DBPEDIA_WEIGHT = 0.5

_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = "\"'.,;:!?()[]{}<>"


def canonical_relation(name: str, known: Iterable[str]) -> str | None:
    """Match ``"/r/IsA"``, ``"isa"`` or ``"IsA"`` to a known relation name."""
    bare = name.strip()
    bare = bare[3:] if bare.startswith("/r/") else bare
    bare = bare.strip("/")
    lower = {k.lower(): k for k in known}
    return lower.get(bare.lower())


def normalize_term(text: str) -> str:
    """ConceptNet's surface-to-term rule: lower case, whitespace runs -> '_'."""
    return _SPACES.sub("_", text.strip().strip(_EDGE_PUNCT).lower())


class ConceptGraph:
    """The filtered, weighted graph of one :class:`EdgeIndex` and its similarity."""

    def __init__(
        self,
        index: EdgeIndex,
        *,
        relations: Sequence[str] | None = None,
        min_weight: float = 0.0,
        relation_weights: Mapping[str, float] | None = None,
        hops: int = 2,
        power: float = 0.5,
        lemmatize_words: bool = True,
        source: str = "",
    ) -> None:
        if hops not in (1, 2):
            raise PriorkitError(f"conceptnet: hops must be 1 (direct edges) or 2 (shared neighbours), not {hops!r}")
        if not (0.0 < power <= 4.0):
            raise PriorkitError(f"conceptnet: power must be in (0, 4], not {power!r}")
        self.index = index
        self.hops = hops
        self.power = float(power)
        self.lemmatize_words = lemmatize_words
        known = list(dict.fromkeys([*KNOWN_RELATIONS, *index.relations]))
        rel_weight = np.array([self._relation_weight(r) for r in index.relations], dtype=np.float32)
        if relation_weights:
            for name, value in relation_weights.items():
                canon = canonical_relation(name, known)
                if canon is None:
                    raise PriorkitError(_unknown_relation(name, known, "relation_weights"))
                if not (0.0 <= float(value) <= 1.0):
                    raise PriorkitError(f"conceptnet: relation_weights[{name!r}] = {value!r} is outside [0, 1]")
                if canon in index.relations:
                    rel_weight[index.relations.index(canon)] = float(value)
        if relations is not None:
            keep = np.zeros(len(index.relations), dtype=bool)
            for name in relations:
                canon = canonical_relation(name, known)
                if canon is None:
                    raise PriorkitError(_unknown_relation(name, known, "relations"))
                if canon in index.relations:
                    keep[index.relations.index(canon)] = True
            rel_weight = np.where(keep, rel_weight, 0.0).astype(np.float32)

        mask = (
            (index.weight > 0)
            & (index.weight >= min_weight)
            & (rel_weight[index.rel] > 0)
            & (index.src != index.dst)
        )
        if not mask.any():
            raise DataFormatError(
                f"conceptnet: no edge of {source or 'the file'} is left after the filters "
                f"(relations={list(relations) if relations is not None else 'all'}, "
                f"min_weight={min_weight}); the file has {len(index.weight)} edges with relations "
                f"{', '.join(index.relations)}"
            )
        src, dst = index.src[mask], index.dst[mask]
        strength = rel_weight[index.rel[mask]] * -np.expm1(-index.weight[mask].astype(np.float64))
        log_keep = np.log1p(-np.minimum(strength, 1 - 1e-7))   # noisy-or in log space
        n = len(index.vocab)
        A = sp.coo_matrix(
            (np.concatenate([log_keep, log_keep]), (np.concatenate([src, dst]), np.concatenate([dst, src]))),
            shape=(n, n),
        ).tocsr()
        A.sum_duplicates()
        A.data = (-np.expm1(A.data)).astype(np.float32)
        self.A = A                                             # (N, N) in [0, 1)
        self.degree = np.diff(A.indptr)                        # (N,)
        damp = (1.0 / np.log2(2.0 + self.degree)).astype(np.float32)
        F = (A + sp.identity(n, dtype=np.float32, format="csr")) @ sp.diags(damp)
        self.F = F.tocsr()                                     # (N, N) closed neighbourhoods
        self.norms = np.sqrt(np.asarray(self.F.multiply(self.F).sum(axis=1)).ravel()).astype(np.float32)
        self.edges_used = int(mask.sum())
        self.lookup_table = self._term_table()
        self._memo: dict[str, int] = {}

    # ---- words -> nodes ---------------------------------------------------
    def _relation_weight(self, name: str) -> float:
        if name.startswith("dbpedia/"):
            return _DBPEDIA_WEIGHT
        return RELATION_WEIGHTS.get(name, DEFAULT_RELATION_WEIGHT)

    def _term_table(self) -> dict[str, int]:
        """term -> node for nodes with at least one kept edge; earlier languages win."""
        table: dict[str, int] = {}
        vocab, degree, lang = self.index.vocab, self.degree, self.index.node_lang
        order = np.argsort(lang, kind="stable")            # languages in the order asked for
        for node in order[degree[order] > 0].tolist():
            table.setdefault(vocab[node], node)
        return table

    def node_of(self, word: str) -> int:
        """Node id of a word or phrase, or -1 if the graph does not know it."""
        node = self._memo.get(word)
        if node is None:
            node = self._resolve(word)
            self._memo[word] = node
        return node

    def _resolve(self, word: str) -> int:
        term = normalize_term(word)
        if not term:
            return -1
        table = self.lookup_table
        for cand in dict.fromkeys((term, term.replace("-", "_"))):
            if cand in table:
                return table[cand]
        if self.lemmatize_words:
            lemma = lemmatize(term.replace("-", "_"), table.__contains__)
            if lemma is not None:
                return table[lemma]
        return -1

    # ---- similarity -------------------------------------------------------
    def similarity(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """(len(left), len(right)) float32 in [0, 1]; NaN where a word is unknown."""
        li = np.array([self.node_of(w) for w in left], dtype=np.int64)
        ri = np.array([self.node_of(w) for w in right], dtype=np.int64)
        out = np.full((len(li), len(ri)), np.nan, dtype=np.float32)
        lk, rk = np.flatnonzero(li >= 0), np.flatnonzero(ri >= 0)
        if lk.size == 0 or rk.size == 0:
            return out
        # several words may share a node ("dog", "dogs"): compute on unique nodes, then expand
        ln, l_inv = np.unique(li[lk], return_inverse=True)
        rn, r_inv = np.unique(ri[rk], return_inverse=True)
        if self.hops == 1:
            block = _sparse_dots(self.A, ln, rn, identity=False)       # (l, r) = A[ln, rn]
        else:
            dots = _sparse_dots(self.F, ln, rn)                        # (l, r)
            block = dots / np.outer(self.norms[ln], self.norms[rn])
        block = np.clip(block, 0.0, 1.0)
        if self.power != 1.0:
            block = block ** self.power                                # monotone: ranks unchanged
        block[ln[:, None] == rn[None, :]] = 1.0                       # same concept
        out[np.ix_(lk, rk)] = block[np.ix_(l_inv, r_inv)]
        return out

    def neighbours(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` strongest direct neighbours of a word (for inspection and docs)."""
        node = self.node_of(word)
        if node < 0:
            return []
        row = self.A[node]
        order = np.argsort(-row.data)[:k]
        return [(self.index.vocab[row.indices[i]], float(row.data[i])) for i in order]


def _row_block(M: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, column indices, values) of some rows of a CSR matrix, gathered with numpy."""
    starts, ends = M.indptr[rows], M.indptr[rows + 1]
    lengths = ends - starts
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    # positions starts[i] .. ends[i] - 1 for every row, as one flat index array
    flat = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - starts, lengths)
    return indptr, M.indices[flat], M.data[flat]


def _sparse_dots(M: sp.csr_matrix, left: np.ndarray, right: np.ndarray, identity: bool = True) -> np.ndarray:
    """Dense (l, r) block of ``M[left] @ M[right].T`` (or of ``M[left, right]``).

    Slicing a 260k-column CSR matrix and transposing it makes scipy allocate
    arrays as long as the vocabulary on every call (milliseconds each); here
    the rows are gathered directly and their columns renumbered to the few
    that occur, so a call costs microseconds plus the work on its own rows.
    """
    lp, lc, lv = _row_block(M, left)
    if not identity:   # M[left, right]: find each left-row entry's column among `right` (unique ids)
        out = np.zeros((len(left), len(right)), dtype=np.float32)
        row_of = np.repeat(np.arange(len(left)), np.diff(lp))
        order = np.argsort(right, kind="stable")
        at = np.minimum(np.searchsorted(right[order], lc), len(right) - 1)
        hit = right[order][at] == lc
        out[row_of[hit], order[at[hit]]] = lv[hit]
        return out
    rp, rc, rv = _row_block(M, right)
    cols, inverse = np.unique(np.concatenate([lc, rc]), return_inverse=True)
    L = sp.csr_matrix((lv, inverse[: len(lc)], lp), shape=(len(left), len(cols)))
    R = sp.csr_matrix((rv, inverse[len(lc):], rp), shape=(len(right), len(cols)))
    return (L @ R.T).toarray()


def _unknown_relation(name: str, known: list[str], param: str) -> str:
    return (
        f"conceptnet: unknown relation {name!r} in {param}=. Known relations: {', '.join(known)}"
    )

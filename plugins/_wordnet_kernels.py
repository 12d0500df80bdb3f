"""Compiled (numba) WordNet similarity kernels that reproduce NLTK 3.10 exactly.

Every function mirrors one method of ``nltk.corpus.reader.wordnet.Synset``;
the comments name it.  Synsets are ints; ``ROOT = -2`` stands for NLTK's
simulated ``*ROOT*`` synset (min/max depth 0, name ``*ROOT*``).  A missing
value (NLTK's ``None``, or an exception NLTK raises, such as a part-of-speech
mismatch for ``lch``/``res``/``jcn``/``lin``) is NaN here.

The graph ``G`` is a tuple of arrays (see ``graph_tables``); ancestor lists are
sorted by id, so common hypernyms come from a linear merge.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

ROOT = -2
BIG = 1 << 30
INF = 1e300  # nltk.corpus.reader.wordnet._INF

# measure codes
PATH, WUP, LCH, RES, JCN, LIN, XIA = 0, 1, 2, 3, 4, 5, 6
MEASURE_CODES = {"path": PATH, "wup": WUP, "lch": LCH, "res": RES, "jcn": JCN, "lin": LIN, "xia2021": XIA}


def graph_tables(a: dict, ic: np.ndarray | None = None, max_ic: float = 1.0) -> tuple:
    """The tuple of arrays the kernels take (order matters)."""
    if ic is None:
        ic = np.full(a["pos"].shape[0], np.nan)
    return (
        a["anc_ptr"], a["anc_id"], a["anc_dist"], a["maxbfs"], a["min_depth"], a["max_depth"],
        a["needs_root"], a["rank"], a["pos"], a["lch_depth"].astype(np.float64), ic,
        np.float64(max_ic),
    )


# ---------------------------------------------------------------------------
# index building
# ---------------------------------------------------------------------------
@njit(cache=True)
def depth_tables(par_ptr, par_id, n):
    """Synset.min_depth() and max_depth() for every synset (iterative DFS).

    Returns (min_depth, max_depth, cycle_at) with cycle_at = -1 when acyclic.
    """
    mind = np.zeros(n, np.int32)
    maxd = np.zeros(n, np.int32)
    state = np.zeros(n, np.int8)  # 0 new, 1 open, 2 done
    stack = np.empty(n * 4 + 16, np.int64)
    for x in range(n):
        if state[x] != 0:
            continue
        top = 0
        stack[top] = x
        top += 1
        while top > 0:
            y = stack[top - 1]
            if state[y] == 0:
                state[y] = 1
                for k in range(par_ptr[y], par_ptr[y + 1]):
                    p = par_id[k]
                    if state[p] == 1:
                        return mind, maxd, p
                    if state[p] == 0:
                        if top >= stack.shape[0]:
                            bigger = np.empty(stack.shape[0] * 2, np.int64)
                            bigger[:top] = stack[:top]
                            stack = bigger
                        stack[top] = p
                        top += 1
            elif state[y] == 1:
                lo = BIG
                hi = -1
                for k in range(par_ptr[y], par_ptr[y + 1]):
                    p = par_id[k]
                    lo = min(lo, mind[p])
                    hi = max(hi, maxd[p])
                if hi < 0:
                    mind[y] = 0
                    maxd[y] = 0
                else:
                    mind[y] = lo + 1
                    maxd[y] = hi + 1
                state[y] = 2
                top -= 1
            else:
                top -= 1
    return mind, maxd, -1


@njit(cache=True)
def _bfs(x, par_ptr, par_id, stamp, dist, queue):
    """Synset._shortest_hypernym_paths(x) without the root: fills queue[:count]."""
    head = 0
    tail = 1
    queue[0] = x
    stamp[x] = x
    dist[x] = 0
    while head < tail:
        y = queue[head]
        head += 1
        for k in range(par_ptr[y], par_ptr[y + 1]):
            p = par_id[k]
            if stamp[p] != x:
                stamp[p] = x
                dist[p] = dist[y] + 1
                queue[tail] = p
                tail += 1
    return tail


@njit(cache=True)
def ancestor_tables(par_ptr, par_id, n):
    """Each synset's ancestors (itself included), sorted by id, with BFS distances."""
    stamp = np.full(n, -1, np.int64)
    dist = np.zeros(n, np.int32)
    queue = np.empty(n, np.int64)
    counts = np.zeros(n, np.int64)
    for x in range(n):
        counts[x] = _bfs(x, par_ptr, par_id, stamp, dist, queue)
    ptr = np.zeros(n + 1, np.int64)
    for x in range(n):
        ptr[x + 1] = ptr[x] + counts[x]
    ids = np.empty(ptr[n], np.int32)
    dd = np.empty(ptr[n], np.int16)
    maxbfs = np.zeros(n, np.int32)
    stamp[:] = -1
    for x in range(n):
        c = _bfs(x, par_ptr, par_id, stamp, dist, queue)
        seg = np.sort(queue[:c])
        m = 0
        for k in range(c):
            ids[ptr[x] + k] = seg[k]
            d = dist[seg[k]]
            dd[ptr[x] + k] = d
            if d > m:
                m = d
        maxbfs[x] = m
    return ptr, ids, dd, maxbfs


# ---------------------------------------------------------------------------
# synset-pair measures
# ---------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _spd(x, s, sim, G):
    """Synset.shortest_path_distance(x, s, simulate_root=sim); -1 means None."""
    anc_ptr, anc_id, anc_dist, maxbfs = G[0], G[1], G[2], G[3]
    if x == s:
        return 0
    if s == ROOT:
        # dist_dict2 is {*ROOT*: 0}; x reaches the simulated root at max + 1
        return maxbfs[x] + 1
    best = BIG
    i, ie = anc_ptr[x], anc_ptr[x + 1]
    j, je = anc_ptr[s], anc_ptr[s + 1]
    while i < ie and j < je:
        u = anc_id[i]
        v = anc_id[j]
        if u == v:
            d = anc_dist[i] + anc_dist[j]
            if d < best:
                best = d
            i += 1
            j += 1
        elif u < v:
            i += 1
        else:
            j += 1
    if best == BIG:
        if sim:
            return maxbfs[x] + maxbfs[s] + 2  # both reach the simulated root
        return -1
    return best


@njit(cache=True)
def _wup_value(x, y, s, sim, G):
    """The tail of Synset.wup_similarity(x, y) once the subsumer s is chosen."""
    max_depth = G[5]
    depth = 1 if s == ROOT else max_depth[s] + 1
    len1 = _spd(x, s, sim, G)
    len2 = _spd(y, s, sim, G)
    if len1 < 0 or len2 < 0:
        return np.nan
    return (2.0 * depth) / ((len1 + depth) + (len2 + depth))


@njit(cache=True)
def wup_both(a, b, G):
    """(a.wup_similarity(b), b.wup_similarity(a)), NaN for None.

    lowest_common_hypernyms(use_min_depth=True, simulate_root=need_root): the
    common hypernyms (plus *ROOT* when simulated) of greatest min_depth, sorted
    by name; the subsumer is ``self`` when self is among them, else the first.
    """
    anc_ptr, anc_id = G[0], G[1]
    min_depth, needs_root, rank = G[4], G[6], G[7]
    sim = needs_root[a] or needs_root[b]
    best = -1
    best_md = -1
    best_rank = BIG
    a_in = False
    b_in = False
    i, ie = anc_ptr[a], anc_ptr[a + 1]
    j, je = anc_ptr[b], anc_ptr[b + 1]
    while i < ie and j < je:
        u = anc_id[i]
        v = anc_id[j]
        if u == v:
            md = min_depth[u]
            if md > best_md or (md == best_md and rank[u] < best_rank):
                best = u
                best_md = md
                best_rank = rank[u]
            if u == a:
                a_in = True
            if u == b:
                b_in = True
            i += 1
            j += 1
        elif u < v:
            i += 1
        else:
            j += 1
    if sim:
        root_rank = rank[rank.shape[0] - 1]
        if best_md < 0 or (best_md == 0 and root_rank < best_rank):
            best = ROOT
            best_md = 0
    if best == -1:
        return np.nan, np.nan
    s_ab = a if (a_in and min_depth[a] == best_md) else best
    s_ba = b if (b_in and min_depth[b] == best_md) else best
    ab = _wup_value(a, b, s_ab, sim, G)
    if s_ba == s_ab:
        ba = ab  # same subsumer: the formula is symmetric in the two lengths
    else:
        ba = _wup_value(b, a, s_ba, sim, G)
    return ab, ba


@njit(cache=True)
def _lcs_ic(a, b, G):
    """max IC over common hypernyms (0 when none), as nltk's _lcs_ic."""
    anc_ptr, anc_id, ic = G[0], G[1], G[10]
    best = -1.0
    found = False
    i, ie = anc_ptr[a], anc_ptr[a + 1]
    j, je = anc_ptr[b], anc_ptr[b + 1]
    while i < ie and j < je:
        u = anc_id[i]
        v = anc_id[j]
        if u == v:
            c = ic[u]
            if not found or c > best:
                best = c
                found = True
            i += 1
            j += 1
        elif u < v:
            i += 1
        else:
            j += 1
    return best if found else 0.0


@njit(cache=True)
def synset_pair(code, a, b, G):
    """One synset pair's value, already mapped into [0, 1] (NaN = NLTK gave None/raised)."""
    needs_root, pos, lch_depth, ic, max_ic = G[6], G[8], G[9], G[10], G[11]
    if code == PATH:
        d = _spd(a, b, needs_root[a] or needs_root[b], G)
        if d < 0:
            return np.nan
        return 1.0 / (d + 1)
    if code == WUP:
        ab, ba = wup_both(a, b, G)
        return ab
    if code == JCN and a == b:
        return 1.0  # NLTK returns _INF before looking at the IC; INF / (1 + INF) == 1.0
    if pos[a] != pos[b]:
        return np.nan  # NLTK raises WordNetError
    if code == LCH:
        depth = lch_depth[pos[a]]
        d = _spd(a, b, needs_root[a], G)
        if d < 0 or depth == 0:
            return np.nan
        raw = -math.log((d + 1) / (2.0 * depth))
        v = raw / math.log(2.0 * depth)
        return min(max(v, 0.0), 1.0)
    ic1 = ic[a]
    ic2 = ic[b]
    if ic1 != ic1 or ic2 != ic2:
        return np.nan  # no IC for this part of speech: NLTK raises
    lcs = _lcs_ic(a, b, G)
    if code == RES:
        return min(lcs / max_ic, 1.0)
    if code == JCN:
        if ic1 == 0 or ic2 == 0:
            raw = 0.0
        else:
            diff = ic1 + ic2 - 2 * lcs
            raw = INF if diff == 0 else 1 / diff
        raw = max(raw, 0.0)
        return raw / (1.0 + raw)
    if code == LIN:
        den = ic1 + ic2
        if den == 0:
            return np.nan  # ZeroDivisionError in NLTK
        v = (2.0 * lcs) / den
        return min(max(v, 0.0), 1.0)
    return np.nan


@njit(cache=True)
def word_pair(code, p0, p1, q0, q1, syn, G):
    """A word pair from the synset lists syn[p0:p1] and syn[q0:q1].

    ``xia2021``: mean of wup over all synset pairs in both directions (0 if
    NLTK gave None for all); other measures: max over synset pairs (NaN when
    no pair has a value).  Empty lists are handled by the caller.
    """
    if code == XIA:
        s1 = 0.0
        s2 = 0.0
        c1 = 0
        c2 = 0
        for p in range(p0, p1):
            for q in range(q0, q1):
                ab, ba = wup_both(syn[p], syn[q], G)
                if ab == ab:
                    s1 += ab
                    c1 += 1
                if ba == ba:
                    s2 += ba
                    c2 += 1
        if c1 + c2 == 0:
            return 0.0
        return (s1 + s2) / (c1 + c2)
    best = np.nan
    for p in range(p0, p1):
        for q in range(q0, q1):
            v = synset_pair(code, syn[p], syn[q], G)
            if v == v and (best != best or v > best):
                best = v
    return best


@njit(cache=True)
def pairs_kernel(code, left, right, todo, w_ptr, w_syn, G, out):
    """out[k] = word_pair(left[k], right[k]) where todo[k]; words index w_ptr."""
    for k in range(left.shape[0]):
        if todo[k]:
            i = left[k]
            j = right[k]
            out[k] = word_pair(code, w_ptr[i], w_ptr[i + 1], w_ptr[j], w_ptr[j + 1], w_syn, G)


@njit(cache=True)
def matrix_kernel(code, rows, cols, todo, w_ptr, w_syn, G, out):
    """out[r, c] = word_pair(rows[r], cols[c]) where todo[r, c]."""
    for r in range(rows.shape[0]):
        i = rows[r]
        for c in range(cols.shape[0]):
            if todo[r, c]:
                j = cols[c]
                out[r, c] = word_pair(code, w_ptr[i], w_ptr[i + 1], w_ptr[j], w_ptr[j + 1], w_syn, G)

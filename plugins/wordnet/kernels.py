"""Compiled (numba) WordNet similarity kernels that reproduce NLTK 3.10 exactly.

Every function mirrors one method of ``nltk.corpus.reader.wordnet.Synset``;
the comments name it.  Synsets are ints; ``ROOT = -2`` stands for NLTK's
simulated ``*ROOT*`` synset (min/max depth 0, name ``*ROOT*``).  A missing
value (NLTK's ``None``, or an exception NLTK raises, such as a part-of-speech
mismatch for ``lch``/``res``/``jcn``/``lin``) is NaN here.

The graph ``G`` is a tuple of arrays (see ``graph_tables``); ``W`` is a
per-thread workspace of two small hash tables (see ``workspace``).
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
    """The tuple the kernels take as ``G`` (order matters):

    0 anc_ptr, 1 anc_id, 2 anc_dist (ancestors incl. self, sorted by id, BFS
    distance), 3 maxbfs, 4 min_depth, 5 max_depth, 6 needs_root, 7 rank
    (name order; last entry = *ROOT*), 8 pos code, 9 lch depth per pos code,
    10 IC per synset (NaN: none for its POS), 11 largest finite IC.
    """
    if ic is None:
        ic = np.full(a["pos"].shape[0], np.nan)
    return (
        a["anc_ptr"], a["anc_id"], a["anc_dist"], a["maxbfs"], a["min_depth"], a["max_depth"],
        a["needs_root"], a["rank"], a["pos"], a["lch_depth"].astype(np.float64), ic,
        np.float64(max_ic),
    )


# ---------------------------------------------------------------------------
# word-pair kernels
#
# For each synset ``a`` of the left word, a's ancestors go into a tiny
# open-addressing hash table (id -> BFS distance, a few hundred bytes, so it
# stays in L1); each synset ``b`` of the right word then scans its own sorted
# ancestor list against it.  Tables are "cleared" by bumping a generation
# number.  The two tiny look-up helpers are inlined into the loops; a call
# per synset pair with the whole graph tuple as argument costs more than the
# work itself (refcounts), so each word-pair function holds its loop nest.
# ---------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _slot(c, mask):
    return ((c * 2654435761) >> 13) & mask


@njit(cache=True)
def _fill(x, anc_ptr, anc_id, anc_dist, keys, vals, gens, gen, mask):
    for t in range(anc_ptr[x], anc_ptr[x + 1]):
        c = anc_id[t]
        h = _slot(c, mask)
        while gens[h] == gen:
            h = (h + 1) & mask
        gens[h] = gen
        keys[h] = c
        vals[h] = anc_dist[t]


@njit(cache=True, inline="always")
def _get(c, keys, vals, gens, gen, mask):
    """BFS distance of ancestor c in the table, -1 when absent."""
    h = _slot(c, mask)
    while gens[h] == gen:
        if keys[h] == c:
            return vals[h]
        h = (h + 1) & mask
    return -1


@njit(cache=True)
def _spd_to(x, s, sim, anc_ptr, anc_id, anc_dist, maxbfs, keys, vals, gens, gen, mask):
    """Synset.shortest_path_distance(x, s, simulate_root=sim) where s is a common
    hypernym of x (or ROOT) and x's ancestors are in the table: min over the
    ancestors c of s of d_x(c) + d_s(c), NLTK's up-then-down path."""
    if x == s:
        return 0
    if s == ROOT:
        return maxbfs[x] + 1  # dist_dict2 is {*ROOT*: 0}; x meets it at max + 1
    best = BIG
    for t in range(anc_ptr[s], anc_ptr[s + 1]):
        v = _get(anc_id[t], keys, vals, gens, gen, mask)
        if v >= 0:
            d = v + anc_dist[t]
            if d < best:
                best = d
    if best == BIG:
        return maxbfs[x] + maxbfs[s] + 2 if sim else -1
    return best


@njit(cache=True)
def word_dist(code, p0, p1, q0, q1, syn, G, W):
    """path / lch of a word pair: max over synset pairs (NaN when none has a value)."""
    anc_ptr, anc_id, anc_dist, maxbfs = G[0], G[1], G[2], G[3]
    needs_root, pos, lch_depth = G[6], G[8], G[9]
    ka, va, ga, gen, mask = W[0], W[1], W[2], W[6], W[7][0]
    best = np.nan
    for p in range(p0, p1):
        a = syn[p]
        gen[0] += 1
        g = gen[0]
        _fill(a, anc_ptr, anc_id, anc_dist, ka, va, ga, g, mask)
        for q in range(q0, q1):
            b = syn[q]
            if code == LCH:
                if pos[a] != pos[b]:
                    continue  # NLTK raises WordNetError
                sim = needs_root[a]
            else:
                sim = needs_root[a] or needs_root[b]
            # Synset.shortest_path_distance(a, b, simulate_root=sim)
            if a == b:
                d = 0
            else:
                d = BIG
                for t in range(anc_ptr[b], anc_ptr[b + 1]):
                    v = _get(anc_id[t], ka, va, ga, g, mask)
                    if v >= 0 and v + anc_dist[t] < d:
                        d = v + anc_dist[t]
                if d == BIG:
                    if not sim:
                        continue  # None
                    d = maxbfs[a] + maxbfs[b] + 2  # both reach the simulated *ROOT*
            if code == PATH:
                val = 1.0 / (d + 1)
            else:
                depth = lch_depth[pos[a]]
                if depth == 0:
                    continue
                raw = -math.log((d + 1) / (2.0 * depth))
                val = min(max(raw / math.log(2.0 * depth), 0.0), 1.0)
            if best != best or val > best:
                best = val
    return best


@njit(cache=True)
def word_ic(code, p0, p1, q0, q1, syn, G, W):
    """res / jcn / lin of a word pair: max over synset pairs, mapped into [0, 1]."""
    anc_ptr, anc_id, anc_dist = G[0], G[1], G[2]
    pos, ic, max_ic = G[8], G[10], G[11]
    ka, va, ga, gen, mask = W[0], W[1], W[2], W[6], W[7][0]
    best = np.nan
    for p in range(p0, p1):
        a = syn[p]
        gen[0] += 1
        g = gen[0]
        _fill(a, anc_ptr, anc_id, anc_dist, ka, va, ga, g, mask)
        for q in range(q0, q1):
            b = syn[q]
            if code == JCN and a == b:
                val = 1.0  # NLTK returns _INF before the IC look-up; INF / (1 + INF) == 1.0
            else:
                ic1 = ic[a]
                ic2 = ic[b]
                if pos[a] != pos[b] or ic1 != ic1 or ic2 != ic2:
                    continue  # NLTK raises: POS mismatch or no IC for this POS
                # _lcs_ic: max IC over common hypernyms, 0 when there are none
                lcs = 0.0
                found = False
                for t in range(anc_ptr[b], anc_ptr[b + 1]):
                    c = anc_id[t]
                    if _get(c, ka, va, ga, g, mask) >= 0 and (not found or ic[c] > lcs):
                        lcs = ic[c]
                        found = True
                if code == RES:
                    val = min(lcs / max_ic, 1.0)
                elif code == JCN:
                    if ic1 == 0 or ic2 == 0:
                        raw = 0.0
                    else:
                        diff = ic1 + ic2 - 2 * lcs
                        raw = INF if diff == 0 else 1 / diff
                    raw = max(raw, 0.0)
                    val = raw / (1.0 + raw)
                else:
                    den = ic1 + ic2
                    if den == 0:
                        continue  # ZeroDivisionError in NLTK
                    val = min(max((2.0 * lcs) / den, 0.0), 1.0)
            if best != best or val > best:
                best = val
    return best


@njit(cache=True)
def word_wup(code, p0, p1, q0, q1, syn, G, W):
    """wup (max over synset pairs of a.wup_similarity(b)) or xia2021's mean in both directions.

    Synset.wup_similarity: lowest_common_hypernyms(use_min_depth=True,
    simulate_root=need_root) gives the common hypernyms (plus *ROOT* when
    simulated) of greatest min_depth, sorted by name; the subsumer is ``self``
    when self is among them, else the first; then 2 * depth / (len1 + len2)
    with depth = max_depth(subsumer) + 1 and len = distance to it + depth.
    """
    anc_ptr, anc_id, anc_dist, maxbfs = G[0], G[1], G[2], G[3]
    min_depth, max_depth, needs_root, rank = G[4], G[5], G[6], G[7]
    ka, va, ga, kb, vb, gb, gen, mask = W[0], W[1], W[2], W[3], W[4], W[5], W[6], W[7][0]
    root_rank = rank[rank.shape[0] - 1]
    s1 = 0.0
    s2 = 0.0
    c1 = 0
    c2 = 0
    best = np.nan
    for p in range(p0, p1):
        a = syn[p]
        gen[0] += 1
        g1 = gen[0]
        _fill(a, anc_ptr, anc_id, anc_dist, ka, va, ga, g1, mask)
        for q in range(q0, q1):
            b = syn[q]
            gen[0] += 1
            g2 = gen[0]
            sim = needs_root[a] or needs_root[b]
            sub = -1
            sub_md = -1
            sub_rank = BIG
            a_in = False
            for t in range(anc_ptr[b], anc_ptr[b + 1]):
                c = anc_id[t]
                h = _slot(c, mask)  # b's table, for distances from b
                while gb[h] == g2:
                    h = (h + 1) & mask
                gb[h] = g2
                kb[h] = c
                vb[h] = anc_dist[t]
                if _get(c, ka, va, ga, g1, mask) >= 0:
                    md = min_depth[c]
                    if md > sub_md or (md == sub_md and rank[c] < sub_rank):
                        sub = c
                        sub_md = md
                        sub_rank = rank[c]
                    if c == a:
                        a_in = True
            if sim and (sub_md < 0 or (sub_md == 0 and root_rank < sub_rank)):
                sub = ROOT
                sub_md = 0
            if sub == -1:
                ab = np.nan
                ba = np.nan
            else:
                b_in = _get(b, ka, va, ga, g1, mask) >= 0
                s_ab = a if (a_in and min_depth[a] == sub_md) else sub
                s_ba = b if (b_in and min_depth[b] == sub_md) else sub
                depth = 1 if s_ab == ROOT else max_depth[s_ab] + 1
                l1 = _spd_to(a, s_ab, sim, anc_ptr, anc_id, anc_dist, maxbfs, ka, va, ga, g1, mask)
                l2 = _spd_to(b, s_ab, sim, anc_ptr, anc_id, anc_dist, maxbfs, kb, vb, gb, g2, mask)
                ab = np.nan if (l1 < 0 or l2 < 0) else (2.0 * depth) / ((l1 + depth) + (l2 + depth))
                if code == WUP or s_ba == s_ab:
                    ba = ab  # same subsumer: the formula is symmetric in the two lengths
                else:
                    depth = 1 if s_ba == ROOT else max_depth[s_ba] + 1
                    l1 = _spd_to(b, s_ba, sim, anc_ptr, anc_id, anc_dist, maxbfs, kb, vb, gb, g2, mask)
                    l2 = _spd_to(a, s_ba, sim, anc_ptr, anc_id, anc_dist, maxbfs, ka, va, ga, g1, mask)
                    ba = np.nan if (l1 < 0 or l2 < 0) else (2.0 * depth) / ((l1 + depth) + (l2 + depth))
            if code == XIA:
                if ab == ab:
                    s1 += ab
                    c1 += 1
                if ba == ba:
                    s2 += ba
                    c2 += 1
            elif ab == ab and (best != best or ab > best):
                best = ab
    if code == XIA:
        if c1 + c2 == 0:
            return 0.0
        return (s1 + s2) / (c1 + c2)
    return best


def workspace(max_ancestors: int) -> tuple:
    """Two small hash tables (keys, values, generations), the generation counter, the mask."""
    size = 1
    while size < 4 * max(max_ancestors, 1):
        size *= 2
    return (
        np.zeros(size, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int64),
        np.zeros(size, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int64),
        np.zeros(1, np.int64), np.array([size - 1], np.int64),
    )


@njit(cache=True, nogil=True)
def pairs_dist(code, left, right, todo, w_ptr, w_syn, G, W, out):
    """out[k] = word_dist(left[k], right[k]) where todo[k] (path, lch)."""
    for k in range(left.shape[0]):
        if todo[k]:
            i = left[k]
            j = right[k]
            out[k] = word_dist(code, w_ptr[i], w_ptr[i + 1], w_ptr[j], w_ptr[j + 1], w_syn, G, W)


@njit(cache=True, nogil=True)
def pairs_ic(code, left, right, todo, w_ptr, w_syn, G, W, out):
    """out[k] = word_ic(left[k], right[k]) where todo[k] (res, jcn, lin)."""
    for k in range(left.shape[0]):
        if todo[k]:
            i = left[k]
            j = right[k]
            out[k] = word_ic(code, w_ptr[i], w_ptr[i + 1], w_ptr[j], w_ptr[j + 1], w_syn, G, W)


@njit(cache=True, nogil=True)
def pairs_wup(code, left, right, todo, w_ptr, w_syn, G, W, out):
    """out[k] = word_wup(left[k], right[k]) where todo[k] (wup, xia2021)."""
    for k in range(left.shape[0]):
        if todo[k]:
            i = left[k]
            j = right[k]
            out[k] = word_wup(code, w_ptr[i], w_ptr[i + 1], w_ptr[j], w_ptr[j + 1], w_syn, G, W)


def run_pairs(code: int, left: np.ndarray, right: np.ndarray, todo: np.ndarray, w_ptr: np.ndarray,
              w_syn: np.ndarray, G: tuple, W: tuple, out: np.ndarray) -> None:
    """Fill out[k] for the word pairs (left[k], right[k]) with todo[k] (all 1-D).

    One compiled loop per family of measures, so a process compiles (or loads
    from numba's cache) only the family it uses.
    """
    if code in (PATH, LCH):
        pairs_dist(code, left, right, todo, w_ptr, w_syn, G, W, out)
    elif code in (RES, JCN, LIN):
        pairs_ic(code, left, right, todo, w_ptr, w_syn, G, W, out)
    else:
        pairs_wup(code, left, right, todo, w_ptr, w_syn, G, W, out)

"""Abbreviations defined in the text, after Schwartz and Hearst (PSB 2003).

A definition is a long form followed by a short form in parentheses,
``acute renal failure ( ARF )`` (one word ``(ARF)`` works too).  The short form
has 2-10 characters in at most three words, starts with a letter or digit and
holds a letter; the long form is the shortest run of the at most
``min(|SF| + 5, 2 |SF|)`` words before the parenthesis whose characters, read
backwards, contain every letter and digit of the short form in order, the
short form's first character starting a word (Schwartz and Hearst's
``findBestLongForm``).

:func:`definitions` finds them; the provider (``abbreviations`` rule) gives a
short form the concepts of the dictionary mention that ends at the
parenthesis inside the long form, and every later occurrence of the short
form (same words, same case) in the sentence -- or in the following sentences
with ``matches_document`` -- becomes a mention of those concepts.
"""
from __future__ import annotations

from typing import Sequence

_BAD_SF_CHARS = set("=<>;,%")


def _short_form(words: Sequence[str], i: int) -> tuple[str, int, int] | None:
    """(text, start, end) of a short form in parentheses at word ``i``, or None."""
    w = words[i]
    if len(w) > 2 and w[0] == "(" and w[-1] == ")":
        sf, start, end = w[1:-1], i, i + 1
    elif w == "(":
        for j in range(i + 2, min(i + 5, len(words))):
            if words[j] == ")":
                break
        else:
            return None
        sf, start, end = "".join(words[i + 1:j]), i + 1, j
    else:
        return None
    if not 2 <= len(sf) <= 10 or not sf[0].isalnum() or not any(c.isalpha() for c in sf):
        return None
    if _BAD_SF_CHARS & set(sf) or " " in sf:
        return None
    return sf, start, end


def _best_long_form(sf: str, lf: str) -> int | None:
    """Start (character index in ``lf``) of the shortest long form of ``sf``, or None."""
    s, l = len(sf) - 1, len(lf) - 1
    while s >= 0:
        c = sf[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while l >= 0 and (lf[l].lower() != c or (s == 0 and l > 0 and lf[l - 1].isalnum())):
            l -= 1
        if l < 0:
            return None
        l -= 1
        s -= 1
    return l + 1


def definitions(words: Sequence[str]) -> list[tuple[tuple[str, ...], int, int, int]]:
    """``(short form words, long form start, long form end, short form start)`` of every
    definition in ``words``; the long form is ``words[start:end]`` (end = the parenthesis)."""
    out = []
    for i, w in enumerate(words):
        if not w.startswith("("):
            continue
        found = _short_form(words, i)
        if found is None:
            continue
        sf, start, end = found
        limit = min(len(sf) + 5, 2 * len(sf))
        first, n_words = i, 0
        while first > 0 and n_words < limit:
            prev = words[first - 1]
            if prev in (".", ";", ")", "(", ":") or prev.endswith(")"):
                break
            first -= 1
            n_words += any(c.isalnum() for c in prev)
        if first == i:
            continue
        cand = words[first:i]
        text = " ".join(cand)
        if sf.lower() in (x.lower() for x in cand):
            continue  # "( DOX )" after "DOX" is no definition
        at = _best_long_form(sf, text)
        if at is None:
            continue
        # the word holding character ``at``
        pos, k = 0, 0
        for k, x in enumerate(cand):
            if pos + len(x) > at:
                break
            pos += len(x) + 1
        sf_words = tuple(words[start:end]) if w == "(" else (w[1:-1],)
        out.append((sf_words, first + k, i, start if w == "(" else i))
    return out


def occurrences(words: Sequence[str], short: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans ``[s, e)`` where ``words`` holds the short form (same case), also as ``(SF)``."""
    n, m = len(words), len(short)
    out = []
    for s in range(n - m + 1):
        if tuple(words[s:s + m]) == short:
            out.append((s, s + m))
        elif m == 1 and words[s] == f"({short[0]})":
            out.append((s, s + 1))
    return out

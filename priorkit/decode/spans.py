"""The one span reader: BIO / BIOES tags -> entities (word spans), for every part of priorkit.

conlleval's reading, as seqeval's ``get_entities`` does it on BIO and BIOES tags:

* ``B-X`` and ``S-X`` open an entity; ``S-X`` and ``E-X`` close it after their word;
* ``I-X`` and ``E-X`` continue an entity of type ``X`` opened by ``B-X`` or ``I-X`` just before;
  after anything else (``O``, another type, a closed ``E-`` / ``S-``) they open one (a stray
  ``I-`` tag is the start of an entity, not dropped);
* every other tag (``O``, the silver labels' unknown ``?``, anything not ``P-TYPE`` with ``P`` one of
  ``B I E S``) is outside and closes an open entity.  (seqeval reads such a tag as an entity of type
  ``_``; no tagger or scorer of priorkit gives one to its readers.)

:func:`spans` gives ``Span(type, start, end)`` with ``end`` exclusive; :func:`seqeval_entities`
the ``(type, first, last)`` form (last inclusive) of seqeval, which the post-hoc arms' and the
dictionary recall's code is written in; :func:`entity_dicts` the ``{"type", "start", "end",
"text"}`` records of ``priorkit predict``.  Torch-free.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

_PREFIXES = "BIES"


class Span(NamedTuple):
    """An entity: its ``type`` and its words ``[start, end)``."""

    type: str
    start: int
    end: int


def _parse(tag: str) -> tuple[str, str] | None:
    """(prefix, type) of an entity tag; None for ``O`` and every tag outside BIO / BIOES."""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in _PREFIXES:
        return tag[0], tag[2:]
    return None


def spans(tags: Sequence[str]) -> list[Span]:
    """The entities of one sentence's tags, in order (module doc)."""
    out: list[Span] = []
    start, kind, last = None, None, ""
    for i, tag in enumerate(tags):
        parsed = _parse(tag)
        if parsed is None:
            if start is not None:
                out.append(Span(kind, start, i))
                start = None
            continue
        prefix, t = parsed
        continues = start is not None and t == kind and last in "BI" and prefix in "IE"
        if not continues:
            if start is not None:
                out.append(Span(kind, start, i))
            start, kind = i, t
        last = prefix
        if prefix in "ES":
            out.append(Span(kind, start, i + 1))
            start = None
    if start is not None:
        out.append(Span(kind, start, len(tags)))
    return out


def seqeval_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """:func:`spans` as ``(type, first word, last word)`` with the last word inclusive (seqeval's form)."""
    return [(s.type, s.start, s.end - 1) for s in spans(tags)]


def entity_dicts(words: Sequence[str], tags: Sequence[str]) -> list[dict]:
    """:func:`spans` as ``{"type", "start", "end" (exclusive), "text"}`` (the words joined by spaces)."""
    return [{"type": s.type, "start": s.start, "end": s.end, "text": " ".join(words[s.start:s.end])}
            for s in spans(tags)]


def render(entities: Sequence[Span], n_words: int) -> list[str]:
    """BIO tags of ``n_words`` words holding exactly ``entities`` (non-overlapping)."""
    tags = ["O"] * n_words
    for t, s, e in sorted(entities, key=lambda x: x[1]):
        tags[s] = f"B-{t}"
        for i in range(s + 1, e):
            tags[i] = f"I-{t}"
    return tags


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans share a word."""
    return a.start < b.end and b.start < a.end

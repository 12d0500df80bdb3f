"""Pre-split words back to text: :func:`detokenize` rebuilds running text from CoNLL-style
sentences of words (BC5CDR's ``data/bc5cdr/*.tsv`` split at every punctuation character:
``56 - year - old``, ``2 . 5 mcg / kg``, ``K ( + ) - channels``) and says where each word
landed, so that gold entities given on words become character offsets.  Torch-free.

The corpus lost the original spacing, so the text is an approximation of the PubMed text.
"""
from __future__ import annotations

from typing import Sequence

#: no space before these (``dose .``, ``10 %``, ``( 2 )``)
CLOSING = frozenset(".,;:)]}%?!")
#: no space after these
OPENING = frozenset("([{")
#: joined to both neighbours when both are alphanumeric (``56-year-old``, ``2.5``, ``mg/kg``, ``5-FU``)
JOINERS = frozenset("-/.")


def _alnum_end(word: str) -> bool:
    return bool(word) and word[-1].isalnum()


def _alnum_start(word: str) -> bool:
    return bool(word) and word[0].isalnum()


def _glue(words: Sequence[str]) -> list[bool]:
    """``glue[i]``: no space between ``words[i - 1]`` and ``words[i]`` (``glue[0]`` unused)."""
    n = len(words)
    glue = [False] * n
    quote_open = False
    for i, w in enumerate(words):
        prev = words[i - 1] if i else ""
        nxt = words[i + 1] if i + 1 < n else ""
        if w in JOINERS:
            # 56-year-old, 2.5, mg/kg, K(+)-channels, (+)-enantiomer
            left_ok = _alnum_end(prev) or (w == "-" and prev in (")", "]"))
            right_ok = _alnum_start(nxt) or (w == "-" and nxt == "(")
            if i and left_ok and right_ok:
                glue[i] = True
                glue[i + 1] = True
                continue
            if w == "." and nxt[:1].isdigit():  # P = .03
                glue[i + 1] = True
                continue
        if w in CLOSING and i:
            glue[i] = True
        if w in OPENING and i + 1 < n:
            glue[i + 1] = True
        if w == "'" and i:
            # Parkinson's, patient's; Graves' disease
            if _alnum_end(prev):
                glue[i] = True
                if nxt in ("s", "S", "t"):
                    glue[i + 1] = True
        if w == '"':
            if quote_open and i:
                glue[i] = True            # closing quote: no space before
            elif i + 1 < n:
                glue[i + 1] = True        # opening quote: no space after
            quote_open = not quote_open
    return glue


def detokenize(sentences: Sequence[Sequence[str]], sep: str = " "
               ) -> tuple[str, list[list[tuple[int, int]]]]:
    """Running text from sentences of words, and each word's ``(start, end)`` in it.

    Rules, applied word by word within a sentence (sentences are joined by ``sep``):

    - words are separated by one space, except:
    - no space before ``. , ; : ) ] } % ? !`` (``dose.``, ``10%``, ``(2)``);
    - no space after ``( [ {``;
    - ``-``, ``/`` and ``.`` between two alphanumeric words are joined on both sides
      (``56-year-old``, ``2.5``, ``mg/kg``, ``5-FU``); a hyphen also joins after ``)`` or ``]``
      and before ``(`` (``K(+)-channels`` stays ``K (+)-channels``: the space before an opening
      bracket is kept, as after most words);
    - ``.`` before a digit with no alphanumeric word before it joins the digit (``P = .03``);
    - ``'`` after an alphanumeric word is joined to it, and to a following ``s`` or ``t``
      (``Parkinson's``; ``Graves' disease``);
    - ``"`` alternates between opening (no space after) and closing (no space before).

    Every word appears verbatim: ``text[start:end] == word``.
    """
    parts: list[str] = []
    offsets: list[list[tuple[int, int]]] = []
    pos = 0
    for s_index, words in enumerate(sentences):
        if s_index:
            parts.append(sep)
            pos += len(sep)
        glue = _glue(words)
        spans = []
        for i, w in enumerate(words):
            if i and not glue[i]:
                parts.append(" ")
                pos += 1
            spans.append((pos, pos + len(w)))
            parts.append(w)
            pos += len(w)
        offsets.append(spans)
    return "".join(parts), offsets


def bio_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(first word, last word + 1, type)`` of each entity in BIO/BIOES ``tags``; an ``I-`` that
    follows nothing of its type starts an entity (as seqeval reads it)."""
    out: list[tuple[int, int, str]] = []
    start, kind = None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, label = tag.partition("-")
        continues = prefix in ("I", "E") and kind == label and start is not None
        if not continues and start is not None:
            out.append((start, i, kind))
            start, kind = None, None
        if prefix in ("B", "S") or (prefix in ("I", "E") and start is None):
            start, kind = i, label
        if prefix in ("E", "S") and start is not None:
            out.append((start, i + 1, kind))
            start, kind = None, None
    return out

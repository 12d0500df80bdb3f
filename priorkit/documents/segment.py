"""A document's sentences and words, as the models were trained to read them.

Sentences come from **syntok** (``syntok.segmenter``: rule-based, pure Python, abbreviation
aware); words are every run of word characters and every other non-space character on its own
(``56-year-old`` -> ``56 - year - old``, ``2.5 mcg/kg`` -> ``2 . 5 mcg / kg``,
``K(+)-channels`` -> ``K ( + ) - channels``), which is how BC5CDR's CoNLL words, the models'
training data, are split.  Chosen by measurement (``benchmarks/tokeniser_agreement.py``,
docs/tagging.md "How text is split"): on BC5CDR's test split rebuilt as raw text every
candidate's sentences keep 100% of the entities whole; syntok's sentence starts agree with the
corpus's at 98.4 F1 (pysbd 99.1, spaCy's sentencizer 98.6, a plain ``. `` + capital rule 99.6),
it is the best of them on hand-written abbreviation cases (``et al.``, ``Fig. 2``, ``i.p. Three
days later``: 91.7 F1; pysbd 88.0, spaCy 85.7, the plain rule 76.5) and 5 to 8 times as fast as
pysbd; the punctuation word rule gives the corpus's words exactly, where spaCy's and scispaCy's
tokenizers keep ``2.5``, ``mcg/kg`` or ``K(+)-channels`` whole (96.5 and 90.8 token F1).

A sentence never crosses a passage, nor a blank line; a document read from pre-split words
(``conll``: ``meta["sentences"]``) keeps its given split.  Torch-free.
"""
from __future__ import annotations

import re
from typing import Iterable

from .model import Document, Sentence, Token

#: a word: a run of word characters, or any other single non-space character
WORD = re.compile(r"\w+|[^\w\s]")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


def _blocks(text: str) -> Iterable[tuple[int, int]]:
    """``(start, end)`` of the parts of ``text`` between blank lines."""
    start = 0
    for m in _BLANK_LINE.finditer(text):
        yield start, m.start()
        start = m.end()
    yield start, len(text)


def sentence_starts(text: str) -> list[int]:
    """The offsets in ``text`` where syntok starts a sentence (the first one included)."""
    from syntok import segmenter

    starts = []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            first = next((t for t in sentence if t.value), None)
            if first is not None:
                starts.append(first.offset)
    return sorted(set(starts))


def split_text(text: str, offset: int = 0) -> list[Sentence]:
    """``text``'s sentences of words; every offset is shifted by ``offset`` (the text's place in
    its document).  Words never straddle a sentence: each belongs to the sentence its first
    character lies in."""
    out: list[Sentence] = []
    for b_start, b_end in _blocks(text):
        block = text[b_start:b_end]
        if not block.strip():
            continue
        starts = sentence_starts(block)[1:]
        current: list[Token] = []
        k = 0
        for m in WORD.finditer(block):
            while k < len(starts) and m.start() >= starts[k]:
                if current:
                    out.append(Sentence(tuple(current)))
                    current = []
                k += 1
            s = offset + b_start + m.start()
            current.append(Token(s, s + len(m.group()), m.group()))
        if current:
            out.append(Sentence(tuple(current)))
    return out


def given_sentences(document: Document) -> list[Sentence] | None:
    """The document's own split (``meta["sentences"]``: token ``(start, end)`` per sentence), or None."""
    given = document.meta.get("sentences")
    if not given:
        return None
    text = document.text
    return [Sentence(tuple(Token(int(s), int(e), text[int(s):int(e)]) for s, e in sentence))
            for sentence in given if sentence]


def segment(document: Document) -> list[Sentence]:
    """The sentences of ``document``, each a tuple of words with offsets into its ``text``:
    the given split when it has one, else each passage split on its own."""
    given = given_sentences(document)
    if given is not None:
        return given
    out: list[Sentence] = []
    for passage in document.passages:
        out.extend(split_text(passage.text, passage.offset))
    return out

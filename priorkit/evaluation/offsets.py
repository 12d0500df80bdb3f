"""Entities scored by character offsets, and BC5CDR's CoNLL split rebuilt as raw-text documents.

:func:`offset_scores`: entity precision, recall and F1 where an entity is right when its
document, start, end (exclusive) and type all equal a gold entity's; overall (micro) and per
type.  It scores a tagger on raw text the way seqeval scores tags on words, so that "the same
model on the test text rebuilt as raw text, scored by character offsets" can be set beside its
score on the CoNLL input (issue 45: within 1.0 F1).

:func:`rebuilt_documents` / :func:`write_rebuilt_documents` (and :func:`write_chunked_conll`, the
same documents as CoNLL): BC5CDR's CoNLL files
(``data/bc5cdr/*.tsv``, word TAB BIO tag) carry no document boundaries (no ``-DOCSTART-``; the
test split is 4,797 sentences from 500 PubMed abstracts, in order), so a rebuilt "document" is
a run of ``per_document`` consecutive sentences (default 10, about one abstract's length; the
last one shorter; it may begin or end inside an abstract, never inside a sentence), or the
whole split as one document with ``per_document=0``.  Its text is
:func:`priorkit.documents.conll.detokenize` of those sentences (an approximation of the PubMed
spacing: the corpus lost it), and the gold entities are the BIO spans as character offsets
into it.  Torch-free.

The comparison, with the same document boundaries on both sides::

    write_chunked_conll("data/bc5cdr/test.tsv", "test-docs.conll")      # words as given, -DOCSTART- per 10
    write_rebuilt_documents("data/bc5cdr/test.tsv", "test-docs.jsonl")  # the same documents as raw text
    # tag each (priorkit.load_model(FOLDER).tag_documents(read_documents(...)) -> write_documents(...))
    score_files("test-docs.conll", "tagged-conll.jsonl")   # the CoNLL input, by offsets into its text
    score_files("test-docs.jsonl", "tagged-raw.jsonl")     # the raw text
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..datasets import read_conll
from ..documents.conll import bio_spans, detokenize
from ..documents.readers import annotations_of, read_documents
from ..errors import DataFormatError

Span = tuple[int, int, str]


@dataclasses.dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "tp": self.tp, "fp": self.fp, "fn": self.fn}


@dataclasses.dataclass(frozen=True)
class OffsetScores:
    """Micro-averaged counts over all entities (``overall``) and per type."""

    overall: Counts
    per_type: dict[str, Counts]

    def as_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.as_dict(), "per_type": {t: c.as_dict() for t, c in sorted(self.per_type.items())}}


def _spans(entities: Iterable[Any]) -> set[Span]:
    out = set()
    for e in entities:
        if isinstance(e, Mapping):
            out.add((int(e["start"]), int(e["end"]), str(e["type"])))
        else:
            out.add((int(e.start), int(e.end), str(e.type)))
    return out


def offset_scores(gold: Mapping[str, Iterable[Any]], predicted: Mapping[str, Iterable[Any]]) -> OffsetScores:
    """Score ``predicted`` against ``gold``, both ``{document id: entities}`` (``Entity`` objects
    or dicts with ``start``, ``end``, ``type``).  A gold document the predictions lack counts
    all its entities as missed; a predicted document the gold lacks is an error (wrong input
    paired with the gold)."""
    unknown = sorted(set(predicted) - set(gold))
    if unknown:
        raise DataFormatError(f"predictions for {len(unknown)} document(s) the gold does not have (first: "
                              f"{unknown[0]!r}); score the tagger's output of the same documents")
    tp: dict[str, int] = {}
    fp: dict[str, int] = {}
    fn: dict[str, int] = {}
    for doc_id, gold_entities in gold.items():
        g = _spans(gold_entities)
        p = _spans(predicted.get(doc_id, ()))
        for span in p & g:
            tp[span[2]] = tp.get(span[2], 0) + 1
        for span in p - g:
            fp[span[2]] = fp.get(span[2], 0) + 1
        for span in g - p:
            fn[span[2]] = fn.get(span[2], 0) + 1
    types = set(tp) | set(fp) | set(fn)
    per_type = {t: Counts(tp.get(t, 0), fp.get(t, 0), fn.get(t, 0)) for t in types}
    overall = Counts(sum(tp.values()), sum(fp.values()), sum(fn.values()))
    return OffsetScores(overall, per_type)


def score_files(gold: str | os.PathLike, predicted: str | os.PathLike, gold_format: str | None = None,
                predicted_format: str | None = None) -> OffsetScores:
    """:func:`offset_scores` of two document files (any input format with entities: a tagger's
    jsonl / PubTator / BioC output, a rebuilt split's JSONL); the texts of documents with the
    same id must be equal, else the offsets would not mean the same."""
    texts: dict[str, str] = {}
    gold_entities: dict[str, Any] = {}
    for doc in read_documents(gold, gold_format):
        texts[doc.id] = doc.text
        gold_entities[doc.id] = annotations_of(doc)
    pred_entities: dict[str, Any] = {}
    for doc in read_documents(predicted, predicted_format):
        if doc.id in texts and texts[doc.id] != doc.text:
            raise DataFormatError(f"{predicted}: document {doc.id!r} has another text than in {gold}; "
                                  "offsets can only be compared on the same text")
        pred_entities[doc.id] = annotations_of(doc)
    return offset_scores(gold_entities, pred_entities)


@dataclasses.dataclass(frozen=True)
class RebuiltDocument:
    """A run of CoNLL sentences as raw text: ``words[i]`` at ``offsets[i]`` (per sentence), gold
    ``entities`` as ``(start, end, type)`` character spans; ``first``: its first sentence's index."""

    id: str
    text: str
    first: int
    offsets: list[list[tuple[int, int]]]
    entities: list[Span]

    def as_record(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "sentences": [self.first, self.first + len(self.offsets)],
                "entities": [{"start": s, "end": e, "text": self.text[s:e], "type": t} for s, e, t in self.entities]}


def rebuilt_documents(conll: str | os.PathLike, per_document: int = 10) -> list[RebuiltDocument]:
    """The sentences of a CoNLL file (word TAB tag) as raw-text documents of ``per_document``
    consecutive sentences (0: the whole file as one), ids ``<file stem>-<number>``."""
    if per_document < 0:
        raise ValueError(f"per_document must be 0 (one document) or more, got {per_document}")
    sentences = read_conll(conll)
    size = per_document or max(len(sentences), 1)
    stem = Path(conll).stem
    out = []
    for number, first in enumerate(range(0, len(sentences), size)):
        chunk = sentences[first:first + size]
        text, offsets = detokenize([s.words for s in chunk])
        entities = []
        for sentence, spans in zip(chunk, offsets):
            for a, b, kind in bio_spans(sentence.tags):
                entities.append((spans[a][0], spans[b - 1][1], kind))
        out.append(RebuiltDocument(f"{stem}-{number:04d}", text, first, offsets, entities))
    return out


def write_chunked_conll(conll: str | os.PathLike, out: str | os.PathLike, per_document: int = 10) -> Path:
    """The same sentences as :func:`rebuilt_documents`, as CoNLL (word TAB tag) with a
    ``-DOCSTART-`` line before each run of ``per_document`` sentences: the CoNLL side of the
    comparison with the same document boundaries (a recipe's document pass reads one document)."""
    if per_document < 0:
        raise ValueError(f"per_document must be 0 (one document) or more, got {per_document}")
    sentences = read_conll(conll)
    size = per_document or max(len(sentences), 1)
    out = Path(out)
    with open(out, "w", encoding="utf-8") as fh:
        for first in range(0, len(sentences), size):
            fh.write("-DOCSTART-\tO\n\n")
            for sentence in sentences[first:first + size]:
                fh.write("".join(f"{w}\t{t}\n" for w, t in zip(sentence.words, sentence.tags)) + "\n")
    return out


def write_rebuilt_documents(conll: str | os.PathLike, out: str | os.PathLike, per_document: int = 10) -> Path:
    """:func:`rebuilt_documents` written as JSON Lines ``{id, text, sentences: [first, end),
    entities: [{start, end, text, type}]}`` (read back by ``read_documents``, the gold for
    :func:`score_files`)."""
    out = Path(out)
    with open(out, "w", encoding="utf-8") as fh:
        for doc in rebuilt_documents(conll, per_document):
            fh.write(json.dumps(doc.as_record(), ensure_ascii=False) + "\n")
    return out

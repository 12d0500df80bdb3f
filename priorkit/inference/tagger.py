"""Tagging documents with an NER model folder, one model or a recipe (docs/tagging.md).

:class:`Tagging` gives a :class:`~priorkit.inference.Predictor` of an NER model and a
:class:`~priorkit.inference.recipe.Recipe` the same document API:

* ``tag_documents(docs, batch_size=32)``: an iterator of
  :class:`~priorkit.documents.TaggedDocument`, in input order;
* ``model(text)`` / ``model([text, ...])``: the dicts of ``transformers.pipeline("token-classification",
  aggregation_strategy="simple")`` (``entity_group``, ``score``, ``word``, ``start``, ``end``) plus
  ``concept_ids``.

Per document: its passages are split into sentences and words
(:func:`priorkit.documents.segment.segment`); each model gives every word's scores, a sentence
longer than the model's token limit in overlapping windows of words (:func:`word_windows`: each word
is read in the window where it sits furthest from a cut edge, so nothing is cut); the steps run in
their one order (:mod:`priorkit.decode.steps`), the document pass over this document's sentences
only; entities become character spans.  An entity's ``score`` is the mean over its words of the
probability the model (the mix, normalised) gives the tag the word got; its ``concept_ids`` are
those of the dictionary's matches with its exact span and type; its ``source`` says which step put
it there (``model``, ``dictionary``, ``fragments``, ``document``).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..decode.decoding import decode_tags, log_softmax
from ..decode.spans import Span, spans
from ..decode.steps import Decode, after_decode, first, mix
from ..documents.model import Document, Entity, Sentence, TaggedDocument, Token
from ..errors import PriorkitError

#: the share of a window that the next one reads again (the overlap of a long sentence's windows)
OVERLAP = 0.5


def word_windows(counts: Sequence[int], budget: int, overlap: float = OVERLAP) -> list[tuple[int, int]]:
    """Windows ``[start, end)`` of words whose token ``counts`` sum to at most ``budget`` (a word
    longer than that alone: its own window), each next one starting ``overlap`` of the way back
    into the one before; one window when the whole sentence fits."""
    n = len(counts)
    out: list[tuple[int, int]] = []
    start = 0
    while start < n:
        end, used = start, 0
        while end < n and (end == start or used + counts[end] <= budget):
            used += counts[end]
            end += 1
        out.append((start, end))
        if end >= n:
            break
        start = max(start + 1, end - int((end - start) * overlap))
    return out


def _best_window(i: int, windows: Sequence[tuple[int, int]], n: int) -> int:
    """The window where word ``i`` has the most context on its nearer cut side (a sentence's own
    start or end is no cut)."""
    def room(w: tuple[int, int]) -> int:
        s, e = w
        return min(i - s if s > 0 else n, e - 1 - i if e < n else n)

    return max((k for k, w in enumerate(windows) if w[0] <= i < w[1]), key=lambda k: room(windows[k]))


def windowed_word_logits(predictor: Any, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                         windows: bool = True) -> list[np.ndarray]:
    """``predictor.word_logits`` of each sentence, one row per word: a sentence longer than the
    model's token limit is read in overlapping windows of words (``windows=False``: cut, as
    ``predict`` does, and the words past the limit have no row)."""
    sentences = [list(w) for w in sentences]
    if not windows or not sentences:
        return predictor.word_logits(sentences, batch_size) if sentences else []
    tok = predictor.tokenizer
    budget = predictor.max_length - tok.num_special_tokens_to_add(pair=False)
    enc = tok(sentences, is_split_into_words=True, add_special_tokens=False, truncation=False, verbose=False)
    pieces: list[list[str]] = []
    plan: list[list[tuple[int, int]]] = []
    for j, words in enumerate(sentences):
        counts = [0] * len(words)
        for w in enc.word_ids(j):
            if w is not None:
                counts[w] += 1
        counts = [max(c, 1) for c in counts]  # a word of no token still takes a row
        spans_ = word_windows(counts, budget) if sum(counts) > budget else [(0, len(words))]
        plan.append(spans_)
        pieces += [words[s:e] for s, e in spans_]
    rows = predictor.word_logits(pieces, batch_size)
    out, k = [], 0
    for words, spans_ in zip(sentences, plan):
        got = rows[k:k + len(spans_)]
        k += len(spans_)
        if len(spans_) == 1:
            out.append(got[0])
            continue
        block = np.zeros((len(words), got[0].shape[1]), dtype=got[0].dtype)
        for i in range(len(words)):
            w = _best_window(i, spans_, len(words))
            block[i] = got[w][i - spans_[w][0]]
        out.append(block)
    return out


@dataclasses.dataclass
class DocumentTags:
    """One document's result on words: per sentence its tags, the probabilities its words' scores
    give each label, the step that put each entity there, and each span's concept IDs."""

    tags: list[list[str]]
    probs: list[np.ndarray]
    sources: list[dict[Span, str]]
    concept_ids: list[dict[Span, tuple[str, ...]]]


def _softmax(scores: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(np.asarray(scores, dtype=np.float64)))


class Tagging:
    """The document API of an NER model (module doc).  A class using it provides ``labels``,
    ``_scorers()`` (its models, each with the columns of ``labels`` in its own label order),
    ``steps`` (the steps after the model, :mod:`priorkit.decode.steps`), ``dictionary`` (a
    :class:`~priorkit.decode.dictionary.Dictionary` or None) and ``_mix_weights()``."""

    #: read sentences longer than the token limit in overlapping windows (False: cut them, as predict does)
    windows: bool = True

    # ---- the model part: many sentences at once ---------------------------------------------
    def word_scores(self, sentences: Sequence[Sequence[str]], batch_size: int = 32) -> list[np.ndarray]:
        """Each sentence's (words, labels) scores in ``labels``' order: one model's logits, or the
        members' log-probabilities mixed (:func:`priorkit.decode.steps.mix`)."""
        scorers = self._scorers()
        if len(scorers) == 1:
            p, cols = scorers[0]
            return [b[:, cols] for b in windowed_word_logits(p, sentences, batch_size, self.windows)]
        blocks = [[log_softmax(b[:, cols]) for b in windowed_word_logits(p, sentences, batch_size, self.windows)]
                  for p, cols in scorers]
        return mix(blocks, self._mix_weights())

    # ---- the steps: one document at a time ----------------------------------------------------
    def run_steps(self, words: Sequence[Sequence[str]], scores: Sequence[np.ndarray]) -> DocumentTags:
        """The steps after the model on one document's sentences ``words`` and their ``scores``."""
        labels = list(self.labels)
        dec = first(self.steps, "decode") or Decode()
        tags = [decode_tags(s, labels, dec.how, dec.o_bias) + ["O"] * (len(w) - len(s)) for w, s in zip(words, scores)]
        probs = [_softmax(s) for s in scores]
        d = self.dictionary
        sentence = document = None
        found: list[list[Any]] = [[] for _ in words]
        if d is not None:
            matches = d.sentence_matches(words)
            sentence = d.tags(matches, words)
            doc_step = first(self.steps, "document")
            if doc_step is not None:
                doc_matches = d.document_matches(words, doc_step.window)
                document = d.tags(doc_matches, words)
                found = [list(a) + list(b) for a, b in zip(matches, doc_matches)]
            else:
                found = matches if not d.drop else [list(d.provider.matches(list(w))) for w in words]
        tags, sources = after_decode(self.steps, tags, sentence, document, sources=True)
        ids = [d.concept_ids(m) for m in found] if d is not None else [{} for _ in words]
        return DocumentTags(tags, probs, sources, ids)

    # ---- documents ----------------------------------------------------------------------------
    def tag_documents(self, docs: Iterable[Document | str], batch_size: int = 32) -> Iterator[TaggedDocument]:
        """Each document tagged (:class:`~priorkit.documents.TaggedDocument`), in input order; the
        input is read lazily, ``batch_size`` documents at a time (their sentences go through the
        model in batches of ``batch_size``)."""
        if batch_size < 1:
            raise PriorkitError(f"batch size must be at least 1, got {batch_size}")
        if getattr(self, "task_type", "token-classification") != "token-classification":
            raise PriorkitError(f"{getattr(self, 'folder', 'this model')} is a {self.task_type} model; tagging "
                                "documents needs an NER (token-classification) model or a recipe")
        return self._tag_stream(docs, batch_size)

    def _tag_stream(self, docs: Iterable[Document | str], batch_size: int) -> Iterator[TaggedDocument]:
        chunk: list[Document] = []
        for i, doc in enumerate(docs):
            chunk.append(_as_document(doc, i))
            if len(chunk) >= batch_size:
                yield from self._tag_chunk(chunk, batch_size)
                chunk = []
        if chunk:
            yield from self._tag_chunk(chunk, batch_size)

    def _tag_chunk(self, docs: Sequence[Document], batch_size: int) -> Iterator[TaggedDocument]:
        split = [segment(d) for d in docs]
        flat = [s.words for sentences in split for s in sentences]
        scores = self.word_scores(flat, batch_size) if flat else []
        k = 0
        for doc, sentences in zip(docs, split):
            mine = scores[k:k + len(sentences)]
            k += len(sentences)
            result = self.run_steps([s.words for s in sentences], mine) if sentences else DocumentTags([], [], [], [])
            yield TaggedDocument(doc, tuple(sentences), tuple(document_entities(doc, sentences, result, self.labels)))

    def __call__(self, inputs: str | Document | Sequence[str | Document], batch_size: int = 32) -> list:
        """A text (or Document) -> its entities as transformers-pipeline dicts plus ``concept_ids``;
        a list of them -> one such list per text."""
        one = isinstance(inputs, (str, Document))
        docs = [inputs] if one else list(inputs)
        out = [[e.as_pipeline() for e in t.entities] for t in self.tag_documents(docs, batch_size)]
        return out[0] if one else out


def document_entities(doc: Document, sentences: Sequence[Sentence], result: DocumentTags,
                      labels: Sequence[str]) -> list[Entity]:
    """The entities of one document's tagged sentences as character spans of its text, by start."""
    out = []
    for sentence, tags, probs, sources, ids in zip(sentences, result.tags, result.probs, result.sources,
                                                   result.concept_ids):
        for span in spans(tags):
            tokens = sentence.tokens[span.start:span.end]
            start, end = tokens[0].start, tokens[-1].end
            out.append(Entity(start, end, doc.text[start:end], span.type, entity_score(probs, tags, span, labels),
                              tuple(ids.get(span, ())), sources.get(span, "model")))
    return sorted(out, key=lambda e: (e.start, e.end))


def entity_score(probs: np.ndarray, tags: Sequence[str], span: Span, labels: Sequence[str]) -> float:
    """The mean over the entity's words of the probability of the tag each word got (0 for a word
    without scores)."""
    column = {label: k for k, label in enumerate(labels)}
    per_word = [float(probs[w, column[tags[w]]]) if w < len(probs) and tags[w] in column else 0.0
                for w in range(span.start, span.end)]
    return float(np.mean(per_word))


def _as_document(doc: Any, i: int) -> Document:
    if isinstance(doc, Document):
        return doc
    if isinstance(doc, str):
        return Document(str(i), doc)
    if isinstance(doc, dict) and isinstance(doc.get("text"), str):
        return Document(str(doc.get("id", i)), doc["text"])
    raise PriorkitError(f"document {i} is {type(doc).__name__}; pass a text, a {{'id', 'text'}} dict or a "
                        "priorkit.documents.Document")


def segment(doc: Document) -> list[Sentence]:
    """The document's sentences: the reader's own split when it kept one (``meta["sentences"]``:
    CoNLL's words as given), else :func:`priorkit.documents.segment.segment` once it exists, until
    then :func:`_temporary_segment`."""
    given = doc.meta.get("sentences")
    if given:
        return [Sentence(tuple(Token(s, e, doc.text[s:e]) for s, e in sentence)) for sentence in given if sentence]
    try:
        from ..documents.segment import segment as real
    except ImportError:
        return _temporary_segment(doc)
    return list(real(doc))


_WORD = re.compile(r"\w+|[^\w\s]")


def _temporary_segment(doc: Document) -> list[Sentence]:
    """TEMPORARY (until priorkit/documents/segment.py lands): each passage split into words at
    whitespace and punctuation (BC5CDR's tokens: ``56 - year - old``), and into sentences after
    ``.``, ``!`` or ``?`` before a capital letter, a digit or the passage's end."""
    out = []
    for passage in doc.passages:
        tokens = [Token(passage.offset + m.start(), passage.offset + m.end(), m.group())
                  for m in _WORD.finditer(passage.text)]
        current: list[Token] = []
        for k, tok in enumerate(tokens):
            current.append(tok)
            nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
            if tok.text in ".!?" and (not nxt or nxt[0].isupper() or nxt[0].isdigit()):
                out.append(Sentence(tuple(current)))
                current = []
        if current:
            out.append(Sentence(tuple(current)))
    return out

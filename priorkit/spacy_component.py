"""priorkit's tagger as a spaCy pipeline component (extra ``priorkit[spacy]``, docs/tagging.md):

    nlp = spacy.blank("en")
    nlp.add_pipe("priorkit_ner", config={"model": "models/bc5cdr-recipe"})
    doc = nlp(text)
    [(e.start_char, e.end_char, e.label_, e.kb_id_, e._.priorkit_concept_ids) for e in doc.ents]

The factory is found through the ``spacy_factories`` entry point (pyproject.toml): spaCy's
``Language.__init__`` loads every entry point of that group (``registry._entry_point_factories``),
and importing this module runs the ``@Language.factory`` decorator, so no import is needed.

The component tags ``doc.text`` with the model folder's ``tag_documents`` (a single NER model or a
recipe, loaded once by ``priorkit.load_model``; its own sentence and word split, not spaCy's) and
sets ``doc.ents``: each entity's character span as ``doc.char_span(start, end, alignment_mode=
"expand")`` (the smallest run of spaCy tokens that covers it), ``label_`` its type, ``kb_id_`` its
first concept ID; overlapping spans (two entities expanding onto one token) resolved by
``spacy.util.filter_spans`` (the longest, then the first, wins).  Span extensions:
``priorkit_concept_ids`` (every concept ID), ``priorkit_score``, ``priorkit_source``.
``overwrite_ents=False`` keeps the entities already on the doc where they do not overlap.

A top-level module in the entry-point layer of docs/architecture.md: it loads a model folder
(``priorkit.inference``, which reads ``priorkit.documents``), so it cannot live in
``priorkit/documents/`` without a circle between the two packages.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

from .documents.model import Document, TaggedDocument
from .errors import PriorkitError

EXTENSIONS = {"priorkit_concept_ids": (), "priorkit_score": None, "priorkit_source": None}


def register_extensions() -> None:
    for name, default in EXTENSIONS.items():
        if not Span.has_extension(name):
            Span.set_extension(name, default=default)


class PriorkitNER:
    """The component: ``__call__`` tags one doc, ``pipe`` tags a stream in batches."""

    def __init__(self, nlp: Language, name: str, model: str | None, batch_size: int = 32,
                 overwrite_ents: bool = True, device: str | None = None) -> None:
        if not model:
            raise PriorkitError(f"spaCy component {name!r} needs a model folder: "
                                "nlp.add_pipe('priorkit_ner', config={'model': FOLDER})")
        from .inference import load_model

        register_extensions()
        self.name = name
        self.model = str(model)
        self.batch_size = int(batch_size)
        self.overwrite_ents = bool(overwrite_ents)
        self.tagger = load_model(self.model, device=device)

    def set_entities(self, doc: Doc, tagged: TaggedDocument) -> Doc:
        spans = []
        for e in tagged.entities:
            span = doc.char_span(e.start, e.end, label=e.type, kb_id=e.concept_ids[0] if e.concept_ids else "",
                                 alignment_mode="expand")
            if span is None:
                continue
            span._.priorkit_concept_ids = tuple(e.concept_ids)
            span._.priorkit_score = float(e.score)
            span._.priorkit_source = e.source
            spans.append(span)
        spans = filter_spans(spans)
        if not self.overwrite_ents:
            taken = {i for s in spans for i in range(s.start, s.end)}
            spans += [s for s in doc.ents if not taken.intersection(range(s.start, s.end))]
        doc.ents = sorted(spans, key=lambda s: s.start)
        return doc

    def _tag(self, docs: list[Doc]) -> Iterator[Doc]:
        inputs = [Document(str(i), d.text) for i, d in enumerate(docs)]
        for doc, tagged in zip(docs, self.tagger.tag_documents(inputs, batch_size=self.batch_size)):
            yield self.set_entities(doc, tagged)

    def __call__(self, doc: Doc) -> Doc:
        return next(self._tag([doc]))

    def pipe(self, stream: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        size = batch_size or self.batch_size
        chunk: list[Doc] = []
        for doc in stream:
            chunk.append(doc)
            if len(chunk) >= size:
                yield from self._tag(chunk)
                chunk = []
        if chunk:
            yield from self._tag(chunk)


@Language.factory("priorkit_ner", default_config={"model": None, "batch_size": 32, "overwrite_ents": True,
                                                   "device": None})
def make_priorkit_ner(nlp: Language, name: str, model: Any, batch_size: int, overwrite_ents: bool,
                      device: Any) -> PriorkitNER:
    """``nlp.add_pipe("priorkit_ner", config={"model": FOLDER})``: a model folder (one NER model or a
    recipe) tagging the doc's text; ``device`` as ``priorkit.load_model``'s (None: its default)."""
    return PriorkitNER(nlp, name, model, batch_size, overwrite_ents, device)

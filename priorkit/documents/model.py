"""Documents in, tagged documents out: the plain data every reader, tagger and writer shares.

Every offset is a character offset into the document's ``text`` with ``end`` exclusive, so
``doc.text[x.start:x.end] == x.text`` for every passage, token and entity.  Torch-free.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence


@dataclasses.dataclass(frozen=True)
class Passage:
    """A part of a document with its own kind (``title``, ``abstract``, ``text``): ``text`` is
    ``document.text[offset:offset + len(text)]``.  Sentences never cross a passage."""

    offset: int
    text: str
    kind: str = "text"

    @property
    def end(self) -> int:
        return self.offset + len(self.text)


@dataclasses.dataclass(frozen=True)
class Document:
    """One document: its ``id`` (unique within an input), its whole ``text`` and its passages
    (one passage covering the text when the format has none).  ``source`` names where it was
    read (``file:line``), for error messages; ``meta`` keeps what a format carries beyond that
    (e.g. a PubTator block's own annotations) so that a writer can give it back."""

    id: str
    text: str
    passages: tuple[Passage, ...] = ()
    source: str = ""
    meta: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.passages:
            object.__setattr__(self, "passages", (Passage(0, self.text),))

    @classmethod
    def from_passages(cls, id: str, passages: Sequence[tuple[str, str]], source: str = "",
                      sep: str = " ") -> "Document":
        """A document whose text is the ``(kind, text)`` passages joined by ``sep`` (PubTator's
        convention: the abstract's offset is the title's length plus one)."""
        parts, out, pos = [], [], 0
        for kind, text in passages:
            if out:
                parts.append(sep)
                pos += len(sep)
            out.append(Passage(pos, text, kind))
            parts.append(text)
            pos += len(text)
        return cls(id, "".join(parts), tuple(out), source)


@dataclasses.dataclass(frozen=True)
class Token:
    """A word of a sentence: ``text == document.text[start:end]``."""

    start: int
    end: int
    text: str


@dataclasses.dataclass(frozen=True)
class Sentence:
    """A sentence's words, in order; ``start``/``end``: its first word's start, its last word's end."""

    tokens: tuple[Token, ...]

    @property
    def start(self) -> int:
        return self.tokens[0].start

    @property
    def end(self) -> int:
        return self.tokens[-1].end

    @property
    def words(self) -> list[str]:
        return [t.text for t in self.tokens]


@dataclasses.dataclass(frozen=True)
class Entity:
    """A tagged mention: ``text == document.text[start:end]``; ``score`` in [0, 1];
    ``concept_ids``: the dictionary entries behind it (``MESH:D006220``), none when no entry
    matches its span; ``source``: ``model`` or the step that added it (``fragments``,
    ``document``, ``dictionary``)."""

    start: int
    end: int
    text: str
    type: str
    score: float
    concept_ids: tuple[str, ...] = ()
    source: str = "model"

    def as_pipeline(self) -> dict[str, Any]:
        """The dict ``transformers.pipeline("token-classification", aggregation_strategy="simple")``
        gives for an entity, plus ``concept_ids``."""
        return {"entity_group": self.type, "score": self.score, "word": self.text, "start": self.start,
                "end": self.end, "concept_ids": list(self.concept_ids)}

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text, "type": self.type,
                "score": self.score, "concept_ids": list(self.concept_ids), "source": self.source}


@dataclasses.dataclass(frozen=True)
class TaggedDocument:
    """A document, its sentences as the tagger read them, and the entities found, by start."""

    document: Document
    sentences: tuple[Sentence, ...]
    entities: tuple[Entity, ...]

    @property
    def id(self) -> str:
        return self.document.id

    @property
    def text(self) -> str:
        return self.document.text

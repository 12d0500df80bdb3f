"""Documents in, tagged documents out (docs/tagging.md): the plain data readers, taggers and
writers share (:mod:`.model`).  Torch-free."""
from __future__ import annotations

from .model import Document, Entity, Passage, Sentence, TaggedDocument, Token

__all__ = ["Document", "Passage", "Sentence", "Token", "Entity", "TaggedDocument"]

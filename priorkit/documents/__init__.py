"""Documents in, tagged documents out (docs/tagging.md): the plain data readers, taggers and
writers share (:mod:`.model`), the readers (:mod:`.readers`), the writers (:mod:`.writers`) and
the segmentation into sentences and words (:mod:`.segment`).  Torch-free."""
from __future__ import annotations

from .model import Document, Entity, Passage, Sentence, TaggedDocument, Token
from .readers import FORMATS, annotations_of, check_inputs, read_documents
from .segment import segment
from .writers import OUTPUT_FORMATS, format_of, write_documents, writer_for

__all__ = ["Document", "Passage", "Sentence", "Token", "Entity", "TaggedDocument",
           "read_documents", "check_inputs", "annotations_of", "FORMATS",
           "write_documents", "writer_for", "format_of", "OUTPUT_FORMATS", "segment"]

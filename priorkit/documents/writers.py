"""Tagged documents out, one at a time: a :class:`DocumentWriter` turns ONE
:class:`~.model.TaggedDocument` into a string (so that a resumable streaming writer can commit
chunks), between a header and a footer.

Formats (docs/tagging.md, "Output formats"):

- ``jsonl``: one object per line: ``id``, ``text``, ``entities`` (:meth:`Entity.as_dict`: start,
  end, text, type, score, concept_ids, source) and, unless the document is one plain passage,
  ``passages`` (``[{kind, offset, length}]``, which :func:`~.readers.read_documents` reads back);
- ``pubtator``: :func:`~.pubtator.pubtator_document`;
- ``bioc``: BioC XML, :func:`~.biocfile.bioc_document` between the collection's header and footer.

Torch-free.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable

from ..errors import DataFormatError
from .biocfile import bioc_document, bioc_footer, bioc_header
from .model import TaggedDocument
from .pubtator import pubtator_document

OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc")
_SUFFIXES = ((".pubtator.txt", "pubtator"), (".pubtator", "pubtator"), (".jsonl", "jsonl"),
             (".bioc.xml", "bioc"), (".xml", "bioc"), (".bioc", "bioc"))


def jsonl_document(tagged: TaggedDocument) -> str:
    """One JSON line: id, text, entities (and passages unless the text is one plain passage)."""
    doc = tagged.document
    record = {"id": doc.id, "text": doc.text, "entities": [e.as_dict() for e in tagged.entities]}
    ps = doc.passages
    if not (len(ps) == 1 and ps[0].offset == 0 and ps[0].end == len(doc.text) and ps[0].kind == "text"):
        record["passages"] = [{"kind": p.kind, "offset": p.offset, "length": len(p.text)} for p in ps]
    return json.dumps(record, ensure_ascii=False) + "\n"


class DocumentWriter:
    """A format's serialisation: ``header()``, then ``document(tagged)`` per document, then
    ``footer()``; every piece is a string, so the pieces can be committed as they come."""

    def __init__(self, format: str, document: Callable[[TaggedDocument], str],
                 header: str = "", footer: str = "") -> None:
        self.format = format
        self._document = document
        self._header = header
        self._footer = footer

    def header(self) -> str:
        return self._header

    def document(self, tagged: TaggedDocument) -> str:
        return self._document(tagged)

    def footer(self) -> str:
        return self._footer


def writer_for(format: str, *, source: str = "priorkit", date: str = "") -> DocumentWriter:
    """The writer of an output format (``source`` and ``date``: BioC's collection fields)."""
    if format == "jsonl":
        return DocumentWriter("jsonl", jsonl_document)
    if format == "pubtator":
        return DocumentWriter("pubtator", pubtator_document)
    if format == "bioc":
        return DocumentWriter("bioc", bioc_document, bioc_header(source, date), bioc_footer())
    raise DataFormatError(f"unknown output format {format!r}; pass --format (one of {', '.join(OUTPUT_FORMATS)})")


def format_of(path: str | os.PathLike, format: str | None = None) -> str:
    """``format`` checked, or the output format ``path``'s extension names."""
    if format is not None:
        if format not in OUTPUT_FORMATS:
            raise DataFormatError(f"unknown output format {format!r}; pass --format (one of "
                                  f"{', '.join(OUTPUT_FORMATS)})")
        return format
    name = Path(path).name.lower()
    for suffix, fmt in _SUFFIXES:
        if name.endswith(suffix):
            return fmt
    raise DataFormatError(f"{path}: cannot tell the output format from its name (.jsonl, .pubtator, "
                          f".bioc.xml); pass --format (one of {', '.join(OUTPUT_FORMATS)})")


def write_documents(tagged: Iterable[TaggedDocument], path: str | os.PathLike, format: str | None = None) -> int:
    """Write ``tagged`` to ``path`` as it comes (through ``path`` + ``.part``, renamed when the
    last document is written, so a failed run leaves no half file under the name); returns the
    number of documents."""
    path = Path(path)
    writer = writer_for(format_of(path, format))
    part = path.with_name(path.name + ".part")
    n = 0
    try:
        with open(part, "w", encoding="utf-8", newline="") as fh:
            fh.write(writer.header())
            for doc in tagged:
                fh.write(writer.document(doc))
                n += 1
            fh.write(writer.footer())
        os.replace(part, path)
    finally:
        if part.exists():
            part.unlink()
    return n

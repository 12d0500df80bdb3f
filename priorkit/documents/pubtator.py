"""PubTator in and out.

A PubTator block is ``ID|t|title``, ``ID|a|abstract`` (other one-letter passage kinds are read
too), then annotation lines ``ID<TAB>start<TAB>end<TAB>text<TAB>type<TAB>ids`` and relation
lines ``ID<TAB>relation<TAB>id1<TAB>id2``, blocks separated by a blank line.  The document's
text is the passages joined by one space (PubTator's convention: the abstract starts at
``len(title) + 1``); annotation offsets must give their text there, else the error names the
file and line.  The block's annotations are kept in ``meta["annotations"]`` (concept ids
split at ``|`` and ``,``; ``-1`` means none) and its relation lines in ``meta["relations"]``.
Torch-free.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from ..errors import DocumentError
from .files import check_annotations, lines
from .model import Document, TaggedDocument

_PASSAGE = re.compile(r"^([^|\t]+)\|([A-Za-z])\|(.*)$")
_KINDS = {"t": "title", "a": "abstract"}
_LETTERS = {"title": "t", "abstract": "a"}
_LINE = ("expected 'ID|t|title', 'ID|a|abstract', an annotation 'ID<TAB>start<TAB>end<TAB>text<TAB>type"
         "<TAB>ids' or a blank line between documents")


class _Block:
    def __init__(self) -> None:
        self.id: str | None = None
        self.first = 0
        self.passages: list[tuple[str, str]] = []
        self.annotations: list[tuple[int, dict[str, Any]]] = []
        self.relations: list[str] = []
        self.error: DocumentError | None = None

    def fail(self, error: DocumentError) -> None:
        self.error = self.error or error

    @property
    def started(self) -> bool:
        return self.id is not None or self.error is not None


def _concepts(field: str) -> list[str]:
    return [c.strip() for c in re.split(r"[|,]", field) if c.strip() and c.strip() != "-1"]


def _finish(path: Path, block: _Block) -> Document | DocumentError:
    if block.error:
        return block.error
    where = f"{path}:{block.first}"
    if not block.passages:
        return DocumentError(f"{where}: document {block.id!r} has annotation lines but no 'ID|t|' or 'ID|a|' "
                             "passage line")
    passages = list(block.passages)
    while len(passages) > 1 and not passages[-1][1]:  # a trailing empty abstract adds no text
        passages.pop()
    doc = Document.from_passages(block.id, passages, source=where)
    if not doc.text.strip():
        return DocumentError(f"{where}: document {block.id!r} is empty (no title or abstract text); "
                             "drop it or pass --skip-bad")
    for number, a in block.annotations:
        bad = check_annotations(doc.text, [a], f"{path}:{number} (document {block.id!r})")
        if bad:
            return bad
    doc.meta["annotations"] = [a for _, a in block.annotations]
    if block.relations:
        doc.meta["relations"] = list(block.relations)
    return doc


def _annotation(path: Path, number: int, block: _Block, fields: list[str]) -> None:
    where = f"{path}:{number}"
    if fields[0] != block.id:
        block.fail(DocumentError(f"{where}: annotation of document {fields[0]!r} inside document "
                                 f"{block.id!r}; put a blank line between documents"))
        return
    if len(fields) >= 5 and fields[1].isdigit() and fields[2].isdigit():
        block.annotations.append((number, {
            "start": int(fields[1]), "end": int(fields[2]), "text": fields[3], "type": fields[4],
            "concept_ids": _concepts(fields[5]) if len(fields) > 5 else []}))
    elif len(fields) == 4:
        block.relations.append("\t".join(fields))
    else:
        block.fail(DocumentError(f"{where}: not a PubTator annotation line ({len(fields)} tab-separated "
                                 f"fields, start and end must be numbers); {_LINE}"))


def read_pubtator(path: Path) -> Iterator[Document | DocumentError]:
    """The blocks of a PubTator file as documents, one at a time (a new ``ID|t|`` line of another
    document also ends a block, for files without blank lines)."""
    block = _Block()
    for number, line in lines(path):
        if isinstance(line, DocumentError):
            block.first = block.first or number
            block.fail(line)
            continue
        if not line.strip():
            if block.started:
                yield _finish(path, block)
            block = _Block()
            continue
        m = _PASSAGE.match(line)
        if m:
            doc_id, letter, text = m.groups()
            if block.started and (doc_id != block.id or block.annotations or block.relations):
                yield _finish(path, block)
                block = _Block()
            if block.id is None:
                block.id, block.first = doc_id, block.first or number
            block.passages.append((_KINDS.get(letter, letter), text))
        elif "\t" in line and block.id is not None:
            _annotation(path, number, block, line.split("\t"))
        else:
            block.first = block.first or number
            block.fail(DocumentError(f"{path}:{number}: not a PubTator line: {line[:60]!r}; {_LINE}"))
    if block.started:
        yield _finish(path, block)


def _flat(text: str, tabs: bool = False) -> str:
    """Line breaks (and tabs) as spaces: the same length, so every offset still holds."""
    text = text.replace("\r", " ").replace("\n", " ")
    return text.replace("\t", " ") if tabs else text


def pubtator_document(tagged: TaggedDocument) -> str:
    """One PubTator block: ``ID|t|``, ``ID|a|``, one annotation line per entity (concept ids
    joined by ``|``), the input's relation lines, a blank line.  A document of a title and an
    abstract (or one passage) keeps them; any other layout is written whole as the title with
    an empty abstract, so every offset holds.  Line breaks and tabs in the text become spaces."""
    doc = tagged.document
    if any(c in doc.id for c in "|\t\r\n") or not doc.id:
        raise DocumentError(f"document {doc.id!r}: a PubTator id cannot be empty or hold '|', a tab or a "
                            "line break; give the documents plain ids or write jsonl or bioc")
    ps = doc.passages
    two = (len(ps) <= 2 and ps[0].offset == 0 and ps[-1].end == len(doc.text)
           and (len(ps) == 1 or ps[1].offset == ps[0].end + 1))
    title, abstract = (ps[0].text, ps[1].text if len(ps) > 1 else "") if two else (doc.text, "")
    out = [f"{doc.id}|t|{_flat(title, True)}\n", f"{doc.id}|a|{_flat(abstract, True)}\n"]
    for e in tagged.entities:
        out.append(f"{doc.id}\t{e.start}\t{e.end}\t{_flat(e.text, True)}\t{e.type}\t{'|'.join(e.concept_ids)}\n")
    for relation in doc.meta.get("relations", ()):
        out.append(relation + "\n")
    out.append("\n")
    return "".join(out)

"""BioC in and out, through the ``bioc`` library's data structures, decoders and encoder.

Reading: BioC XML one ``<document>`` at a time (lxml's ``iterparse``, each element cleared once
decoded, so memory stays flat; the ``bioc`` library's own ``BioCXMLDocumentReader`` keeps every
element it read) and BioC JSON collections one document at a time (``ijson`` over the
``documents`` array, each decoded by ``bioc.biocjson``).  A document's text is its passages at
their offsets (gaps filled with spaces; a passage given as sentences is rebuilt from them); its
annotations (document, passage and sentence level) are kept in ``meta["annotations"]`` with
type (infon ``type``) and concept ids (infon ``identifier`` or ``MESH``, split at ``|``, ``;`` and
``,``), and their offsets must give their text.

Writing: :func:`bioc_document` encodes one tagged document with ``bioc.biocxml.encoder``: its
passages at their offsets, one annotation per entity (location, infons ``type``,
``identifier`` = concept ids joined by ``|``, ``score``, ``source``), for a streaming writer
between :func:`bioc_header` and :func:`bioc_footer`.  Torch-free.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator
from xml.sax.saxutils import escape

from ..errors import DataFormatError, DocumentError
from .files import check_annotations
from .model import Document, Passage, TaggedDocument

_MAX_SNIFF_EVENTS = 100_000


def _first_byte(path: Path) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1]


def is_bioc_json(path: Path) -> bool:
    """Whether ``path`` holds a JSON object with a top-level ``documents`` key (a BioC collection)."""
    import ijson

    try:
        with open(path, "rb") as fh:
            for i, (prefix, event, value) in enumerate(ijson.parse(fh)):
                if i == 0 and event != "start_map":
                    return False
                if prefix == "" and event == "map_key" and value == "documents":
                    return True
                if i > _MAX_SNIFF_EVENTS or (prefix == "" and event == "end_map"):
                    return False
    except (OSError, ijson.JSONError, ValueError):
        return False
    return False


def _concepts(value: Any) -> list[str]:
    return [c.strip() for c in re.split(r"[|;,]", str(value or "")) if c.strip() and c.strip() != "-1"]


def _annotation(ann: Any) -> dict[str, Any] | None:
    if not ann.locations:
        return None
    starts = [loc.offset for loc in ann.locations]
    ends = [loc.offset + loc.length for loc in ann.locations]
    infons = ann.infons or {}
    out: dict[str, Any] = {
        "start": int(min(starts)), "end": int(max(ends)),
        "text": ann.text if len(ann.locations) == 1 else None, "type": infons.get("type") or "",
        "concept_ids": _concepts(infons.get("identifier") or infons.get("MESH"))}
    if infons.get("score") not in (None, ""):
        out["score"] = float(infons["score"])
    if infons.get("source"):
        out["source"] = infons["source"]
    return out


def _passage_text(p: Any) -> str:
    if p.text:
        return p.text
    parts, pos = [], p.offset
    for s in p.sentences:
        if s.offset is None or s.offset < pos:
            raise ValueError(f"a sentence at offset {s.offset} overlaps the one before it")
        parts.append(" " * (s.offset - pos) + (s.text or ""))
        pos = s.offset + len(s.text or "")
    return "".join(parts)


def to_document(bdoc: Any, where: str, fallback_id: str) -> Document | DocumentError:
    """A ``bioc.BioCDocument`` as a Document (``where``: file:line for messages)."""
    doc_id = str(bdoc.id) if bdoc.id not in (None, "") else fallback_id
    here = f"{where} (document {doc_id!r})"
    parts, passages, pos = [], [], 0
    try:
        for p in bdoc.passages:
            offset = int(p.offset)
            if offset < pos:
                return DocumentError(f"{here}: a passage at offset {offset} overlaps the one before it "
                                     f"(which ends at {pos}); BioC passages must follow each other")
            text = _passage_text(p)
            parts.append(" " * (offset - pos) + text)
            kind = (p.infons or {}).get("type") or (p.infons or {}).get("section_type") or "text"
            passages.append(Passage(offset, text, str(kind)))
            pos = offset + len(text)
    except (TypeError, ValueError) as exc:
        return DocumentError(f"{here}: bad passage ({exc})")
    text = "".join(parts)
    if not text.strip():
        return DocumentError(f"{here}: document {doc_id!r} is empty (no passage text); drop it or pass --skip-bad")
    doc = Document(doc_id, text, tuple(passages), source=where)
    annotations = list(bdoc.annotations)
    for p in bdoc.passages:
        annotations += list(p.annotations)
        for s in p.sentences:
            annotations += list(s.annotations)
    try:
        found = [a for a in map(_annotation, annotations) if a is not None]
    except (TypeError, ValueError) as exc:
        return DocumentError(f"{here}: bad annotation ({exc})")
    bad = check_annotations(text, found, here)
    if bad:
        return bad
    if found:
        doc.meta["annotations"] = sorted(found, key=lambda a: (a["start"], a["end"]))
    return doc


def _read_xml(path: Path) -> Iterator[Document | DocumentError]:
    from lxml import etree
    from bioc import biocxml

    count = 0
    context = etree.iterparse(str(path), events=("end",), tag="document", resolve_entities=False,
                              no_network=True, huge_tree=True)
    try:
        for _, elem in context:
            count += 1
            line = elem.sourceline
            xml = etree.tostring(elem, encoding="unicode")
            elem.clear(keep_tail=True)
            while elem.getprevious() is not None:
                del elem.getparent()[0]
            where = f"{path}:{line}"
            try:
                bdoc = biocxml.loads(f"<collection>{xml}</collection>").documents[0]
            except (KeyError, TypeError, ValueError, etree.XMLSyntaxError) as exc:
                yield DocumentError(f"{where}: not a BioC document ({type(exc).__name__}: {exc}); "
                                    "every passage needs an <offset>, every annotation an id")
                continue
            yield to_document(bdoc, where, f"{path.name}:{line}")
    except etree.XMLSyntaxError as exc:
        raise DataFormatError(f"{path}:{exc.lineno}: not valid XML ({exc.msg}); fix the file or "
                              "pass the right --input-format") from None
    if not count:
        raise DataFormatError(f"{path}: no BioC <document> in it; is it a BioC XML collection?")


def _read_json(path: Path) -> Iterator[Document | DocumentError]:
    import ijson
    from bioc.biocjson.decoder import parse_doc

    count = 0
    try:
        with open(path, "rb") as fh:
            for count, obj in enumerate(ijson.items(fh, "documents.item", use_float=True), start=1):
                where = f"{path} document {count}"
                try:
                    bdoc = parse_doc(obj)
                except (KeyError, TypeError, ValueError) as exc:
                    yield DocumentError(f"{where}: not a BioC document (missing or bad {exc}); each needs "
                                        "id, infons, passages (offset, infons, text, sentences, annotations, "
                                        "relations) and relations")
                    continue
                yield to_document(bdoc, where, f"{path.name}:{count}")
    except ijson.JSONError as exc:
        raise DataFormatError(f"{path}: not valid JSON after document {count} ({exc}); fix the file") from None
    if not count:
        raise DataFormatError(f"{path}: no BioC documents in it ('documents' is missing or empty)")


def read_bioc(path: Path) -> Iterator[Document | DocumentError]:
    """The documents of a BioC XML or JSON file (told apart by the first character)."""
    first = _first_byte(path)
    if first == b"<":
        return _read_xml(path)
    if first == b"{":
        return _read_json(path)
    raise DataFormatError(f"{path}: neither BioC XML (starts with '<') nor BioC JSON (starts with '{{'); "
                          "pass the right --input-format")


def bioc_header(source: str = "priorkit", date: str = "", key: str = "") -> str:
    """The collection's opening: the XML declaration, ``<collection>``, source, date and key
    (``date`` empty by default so that the same input gives the same bytes)."""
    return ("<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n<collection>\n"
            f"<source>{escape(source)}</source>\n<date>{escape(date)}</date>\n<key>{escape(key)}</key>\n")


def bioc_footer() -> str:
    return "</collection>\n"


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Characters XML cannot hold (control characters but tab and line breaks, lone surrogates)
    as spaces: the same length, so every offset still holds."""
    return _NOT_XML.sub(" ", text)


def bioc_document(tagged: TaggedDocument) -> str:
    """One ``<document>``: the passages at their offsets and one annotation per entity.  Characters
    XML cannot hold (e.g. a form feed) are written as spaces, so every offset still holds."""
    import bioc
    from bioc.biocxml.encoder import encode_document
    from lxml import etree

    doc = tagged.document
    bdoc = bioc.BioCDocument()
    bdoc.id = _xml_text(doc.id)
    bpassages = []
    for p in doc.passages:
        bp = bioc.BioCPassage()
        bp.offset, bp.text = p.offset, _xml_text(p.text)
        bp.infons["type"] = _xml_text(p.kind)
        bdoc.add_passage(bp)
        bpassages.append((p, bp))
    for i, e in enumerate(tagged.entities):
        ann = bioc.BioCAnnotation()
        ann.id = f"T{i + 1}"
        ann.infons["type"] = _xml_text(e.type)
        if e.concept_ids:
            ann.infons["identifier"] = "|".join(e.concept_ids)
        ann.infons["score"] = repr(float(e.score))
        ann.infons["source"] = e.source
        ann.add_location(bioc.BioCLocation(e.start, e.end - e.start))
        ann.text = _xml_text(e.text)
        home = next((bp for p, bp in bpassages if p.offset <= e.start and e.end <= p.end), None)
        (home or bdoc).add_annotation(ann)
    return etree.tostring(encode_document(bdoc), encoding="unicode", pretty_print=True)

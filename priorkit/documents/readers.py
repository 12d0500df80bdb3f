"""Documents in: :func:`read_documents` streams :class:`~.model.Document` objects from files of
any input format (docs/tagging.md, "Input formats"), lazily: line-based formats are read line
by line, BioC one ``<document>`` at a time, so memory stays flat in the corpus size.

Formats: ``txt`` (a file is one document, id = the file name), ``lines`` (one document per
non-empty line, id ``<file>:<line>``), ``jsonl`` (``text``, optional ``id``, ``title``,
``entities``, ``passages``), ``pubtator`` (:mod:`.pubtator`), ``bioc`` (XML or JSON,
:mod:`.biocfile`) and ``conll`` (pre-split words, one per line; the text is the words joined by
single spaces and the split is kept in ``meta["sentences"]``).

Bad input is a :class:`~priorkit.errors.DocumentError` (one document: skippable with
``skip_bad=True``) or a :class:`~priorkit.errors.DataFormatError` (the whole file: always an
error), each one line naming the file and line or the document id.  :func:`check_inputs` runs
the cheap checks before a model loads.  Torch-free.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Union

from ..errors import DataFormatError, DocumentError
from .biocfile import is_bioc_json, read_bioc
from .conll import bio_spans
from .files import check_annotations, check_file, lines
from .model import Document, Entity, Passage
from .pubtator import read_pubtator

log = logging.getLogger(__name__)

FORMATS = ("txt", "lines", "jsonl", "pubtator", "bioc", "conll")
PathLike = Union[str, os.PathLike]

# (suffix, format), longest first: .pubtator.txt before .txt
_SUFFIXES = ((".pubtator.txt", "pubtator"), (".bioc.json", "bioc"), (".bioc.xml", "bioc"),
             (".pubtator", "pubtator"), (".txt", "txt"), (".jsonl", "jsonl"), (".xml", "bioc"),
             (".bioc", "bioc"), (".json", "bioc"), (".conll", "conll"), (".tsv", "conll"),
             (".iob", "conll"))


def _hint() -> str:
    return f"pass --input-format (one of {', '.join(FORMATS)})"


def _paths(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def input_format(path: PathLike, format: str | None = None) -> str:
    """``format`` checked, or the format ``path``'s extension names (``.json``: BioC JSON)."""
    if format is not None:
        if format not in FORMATS:
            raise DataFormatError(f"unknown input format {format!r}; {_hint()}")
        return format
    name = Path(path).name.lower()
    for suffix, fmt in _SUFFIXES:
        if name.endswith(suffix):
            if suffix == ".json":
                if not is_bioc_json(Path(path)):
                    raise DataFormatError(
                        f"{path}: a .json input must be a BioC collection (an object with 'documents'); "
                        "JSON Lines documents go in a .jsonl file, or " + _hint())
            return fmt
    raise DataFormatError(f"{path}: cannot tell the input format from its name; {_hint()}")


def annotations_of(document: Document) -> tuple[Entity, ...]:
    """The entities a document came with (``meta["annotations"]``: PubTator annotation lines,
    BioC annotations, a JSON Lines record's ``entities``, CoNLL tags), by start."""
    out = []
    for a in document.meta.get("annotations", ()):
        out.append(Entity(a["start"], a["end"], document.text[a["start"]:a["end"]], a.get("type") or "",
                          float(a.get("score", 1.0)), tuple(a.get("concept_ids", ())),
                          a.get("source", "input")))
    return tuple(sorted(out, key=lambda e: (e.start, e.end)))


def _empty(where: str, doc_id: str) -> DocumentError:
    return DocumentError(f"{where}: document {doc_id!r} is empty (no text); drop it or pass --skip-bad")


# ---------------------------------------------------------------------------
# the plain formats
# ---------------------------------------------------------------------------
def _read_txt(path: Path) -> Iterator[Document | DocumentError]:
    with open(path, "rb") as fh:  # one document: read whole, its own line endings kept
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        number = raw.count(b"\n", 0, exc.start) + 1
        yield DocumentError(
            f"{path}:{number}: not UTF-8 ({exc.reason} at byte "
            f"{exc.start - line_start} of the line, byte {exc.start} of the file); re-encode the file as UTF-8")
        return
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        yield _empty(str(path), path.name)
        return
    yield Document(path.name, text, source=f"{path}:1")


def _read_lines(path: Path) -> Iterator[Document | DocumentError]:
    for number, line in lines(path):
        if isinstance(line, DocumentError) or not line.strip():
            if isinstance(line, DocumentError):
                yield line
            continue
        yield Document(f"{path.name}:{number}", line, source=f"{path}:{number}")


def _entities_field(value: Any, where: str) -> list[dict[str, Any]] | DocumentError:
    if not isinstance(value, list):
        return DocumentError(f"{where}: 'entities' must be a list of objects with start, end, type")
    out = []
    for e in value:
        if not isinstance(e, dict) or "start" not in e or "end" not in e:
            return DocumentError(f"{where}: each entity needs 'start' and 'end' (character offsets), got {e!r}")
        item = {"start": e["start"], "end": e["end"], "text": e.get("text"), "type": e.get("type") or "",
                "concept_ids": list(e.get("concept_ids") or ())}
        for key in ("score", "source"):
            if key in e:
                item[key] = e[key]
        out.append(item)
    return out


def _jsonl_passages(value: Any, text: str, where: str) -> tuple[Passage, ...] | DocumentError:
    """A written record's ``passages`` (``[{kind, offset, length}]``) back as Passage objects."""
    try:
        out = tuple(Passage(int(p["offset"]), text[int(p["offset"]):int(p["offset"]) + int(p["length"])],
                            str(p.get("kind", "text"))) for p in value)
    except (TypeError, KeyError, ValueError):
        return DocumentError(f"{where}: 'passages' must be a list of {{kind, offset, length}} objects")
    if any(p.end > len(text) or p.offset < 0 for p in out):
        return DocumentError(f"{where}: a passage lies outside the text")
    return out


def _jsonl_record(path: Path, number: int, line: str) -> Document | DocumentError:
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return DocumentError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                             "each line must be one JSON object with a 'text'")
    if not isinstance(record, dict):
        return DocumentError(f"{where}: a JSON Lines record must be an object with 'text', "
                             f"got {type(record).__name__}")
    text = record.get("text")
    if not isinstance(text, str):
        what = "has no 'text'" if text is None else f"has a 'text' that is a {type(text).__name__}, not a string"
        return DocumentError(f"{where}: the record {what}; each record needs the document's text as 'text'")
    doc_id = str(record["id"]) if record.get("id") is not None else f"{path.name}:{number}"
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        return DocumentError(f"{where}: 'title' must be a string")
    if title:
        doc = Document.from_passages(doc_id, [("title", title), ("text", text)], source=where)
    elif "passages" in record:
        passages = _jsonl_passages(record["passages"], text, where)
        if isinstance(passages, DocumentError):
            return passages
        doc = Document(doc_id, text, passages, source=where)
    else:
        doc = Document(doc_id, text, source=where)
    if not doc.text.strip():
        return _empty(where, doc_id)
    if "entities" in record:
        ents = _entities_field(record["entities"], where)
        if isinstance(ents, DocumentError):
            return ents
        bad = check_annotations(doc.text, ents, f"{where} (document {doc_id!r})")
        if bad:
            return bad
        doc.meta["annotations"] = ents
    return doc


def _read_jsonl(path: Path) -> Iterator[Document | DocumentError]:
    for number, line in lines(path):
        if isinstance(line, DocumentError):
            yield line
        elif line.strip():
            yield _jsonl_record(path, number, line)


def _conll_document(path: Path, first: int, sentences: list[list[tuple[str, str | None]]],
                    doc_id: str) -> Document:
    words = [w for s in sentences for w, _ in s]
    text = " ".join(words)
    spans, annotations, pos = [], [], 0
    for sentence in sentences:
        offsets = []
        for w, _ in sentence:
            offsets.append((pos, pos + len(w)))
            pos += len(w) + 1
        spans.append(offsets)
        tags = [t for _, t in sentence]
        if all(t is not None for t in tags):
            for a, b, kind in bio_spans(tags):
                s, e = offsets[a][0], offsets[b - 1][1]
                annotations.append({"start": s, "end": e, "text": text[s:e], "type": kind, "concept_ids": []})
    doc = Document(doc_id, text, source=f"{path}:{first}")
    doc.meta["sentences"] = spans
    if annotations:
        doc.meta["annotations"] = annotations
    return doc


def _conll_tag(fields: list[str]) -> str | None:
    if len(fields) < 2:
        return None
    tag = fields[-1]
    return tag if tag == "O" or (len(tag) > 2 and tag[0] in "BIES" and tag[1] == "-") else None


def _read_conll(path: Path) -> Iterator[Document | DocumentError]:
    """Word per line (first column), blank line between sentences, ``-DOCSTART-`` between
    documents (ids ``<file>:<line>`` of each document's first word); without any, the file is
    one document with the file's name as id.  A last column that is a BIO tag becomes
    ``meta["annotations"]``."""
    sentences: list[list[tuple[str, str | None]]] = []
    current: list[tuple[str, str | None]] = []
    first, docstart, bad = 0, False, None
    for number, line in lines(path):
        if isinstance(line, DocumentError):
            bad = bad or line
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if fields and fields[0].startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
                current = []
            if sentences or bad:
                yield bad or _conll_document(path, first, sentences, f"{path.name}:{first}")
            sentences, bad, docstart, first = [], None, True, 0
            continue
        if not fields or not fields[0].strip():
            if current:
                sentences.append(current)
                current = []
            continue
        first = first or number
        current.append((fields[0].strip(), _conll_tag(fields)))
    if current:
        sentences.append(current)
    if bad:
        yield bad
    elif sentences:
        yield _conll_document(path, first, sentences, f"{path.name}:{first}" if docstart else path.name)
    elif not docstart:
        yield _empty(str(path), path.name)


def _reader(fmt: str) -> Callable[[Path], Iterator[Document | DocumentError]]:
    return {"txt": _read_txt, "lines": _read_lines, "jsonl": _read_jsonl, "conll": _read_conll,
            "pubtator": read_pubtator, "bioc": read_bioc}[fmt]


def _skip(on_skip: Callable[[str], Any] | None, reason: str) -> None:
    if on_skip is None:
        log.warning("skipped: %s", reason)
    else:
        on_skip(reason)


def read_documents(paths: PathLike | Iterable[PathLike], format: str | None = None, *,
                   skip_bad: bool = False, on_skip: Callable[[str], Any] | None = None) -> Iterator[Document]:
    """The documents of ``paths`` (a file or several), one at a time, in file order.

    ``format``: one of :data:`FORMATS`, else each file's extension decides.  A bad document
    raises a :class:`DocumentError`; with ``skip_bad`` it is skipped and its reason handed to
    ``on_skip`` (logged when None).  A file that cannot be read at all (missing, binary, an
    unknown format, broken XML or JSON structure) raises a :class:`DataFormatError` either way.
    """
    for path in _paths(paths):
        check_file(path)
        fmt = input_format(path, format)
        for item in _reader(fmt)(path):
            if isinstance(item, DocumentError):
                if not skip_bad:
                    raise item
                _skip(on_skip, str(item))
            else:
                yield item


def check_inputs(paths: PathLike | Iterable[PathLike], format: str | None = None, *,
                 skip_bad: bool = False, records: int = 3) -> list[tuple[Path, str]]:
    """The checks that can run before a model loads, in milliseconds: every file exists, is not
    binary, has a known format, and its first ``records`` documents parse (with ``skip_bad``, a
    bad one among them is passed over).  Returns ``(path, format)`` per file; raises the error
    :func:`read_documents` would."""
    out = []
    for path in _paths(paths):
        check_file(path)
        fmt = input_format(path, format)
        stream = read_documents([path], fmt, skip_bad=skip_bad, on_skip=lambda reason: None)
        for _ in itertools.islice(stream, records):
            pass
        out.append((path, fmt))
    if not out:
        raise DataFormatError("no input files given; pass one or more document files")
    return out

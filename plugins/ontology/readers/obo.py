"""A small streaming reader for OBO 1.2/1.4 flat files (e.g. hp.obo, go.obo).

Only what a similarity prior needs is read from ``[Term]`` stanzas: ``id``,
``name``, ``synonym`` (and the OBO 1.0 ``exact_synonym``/... tags), ``is_a``,
``alt_id`` and ``is_obsolete``.  ``relationship``/``intersection_of`` lines
are ignored on purpose: the hierarchy is is-a only.  Other stanza types
(``[Typedef]``, ``[Instance]``) are skipped.

A dedicated reader rather than obonet/pronto: one pass over the lines with
``str.partition`` parses the 10 MB HPO in well under a second, and the reader
can name the file and line of every malformed line it skips.
"""
from __future__ import annotations

import re
from pathlib import Path

from priorkit.errors import DataFormatError

from ..model import OntologyBuilder, OntologyData, ProblemLog

# "text" SCOPE [TYPE] [xrefs] -- the text may hold escaped quotes (\")
_SYNONYM = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(?:(EXACT|RELATED|NARROW|BROAD)\b\s*)?([^\s\[{]+)?')
_OLD_SYNONYM_TAGS = {
    "exact_synonym": "EXACT",
    "related_synonym": "RELATED",
    "narrow_synonym": "NARROW",
    "broad_synonym": "BROAD",
}
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "W": " "}


def read_text(path: Path) -> str:
    """UTF-8 text of ``path``; a decoding error names the line."""
    import gzip

    try:
        raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot read: {exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(f"{path}:{line}: not UTF-8 text ({exc.reason}); OBO files must be UTF-8") from exc


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text) if "\\" in text else text


def _first_token(value: str) -> str:
    """``HP:0001507 ! Growth abnormality`` -> ``HP:0001507`` (also drops ``{...}``)."""
    return value.split(None, 1)[0] if value else ""


def read_obo(path: Path, problems: ProblemLog) -> OntologyData:
    text = read_text(path)
    builder = OntologyBuilder(path, "obo", problems)
    obsolete: set[str] = set()

    in_term = False  # inside a [Term] stanza
    in_other = False  # inside another stanza type: skipped
    stanza_line = 0
    current: int | None = None  # concept number of the current term
    current_id = ""
    pending: list[tuple[str, str, int]] = []  # tags seen before the stanza's id

    def flush_pending() -> None:
        for tag, value, ln in pending:
            handle(tag, value, ln)
        pending.clear()

    def handle(tag: str, value: str, ln: int) -> None:
        if tag == "name":
            builder.set_name(current, _unescape(value))
        elif tag == "is_a":
            parent = _first_token(value)
            if parent:
                builder.add_parent(current, parent, ln)
            else:
                problems.report(ln, "empty is_a")
        elif tag == "synonym" or tag in _OLD_SYNONYM_TAGS:
            m = _SYNONYM.match(value)
            if m is None:
                problems.report(ln, f"synonym without a closed quoted text: {value[:60]!r}")
                return
            scope = m.group(2) or _OLD_SYNONYM_TAGS.get(tag, "RELATED")  # OBO default scope
            kind = m.group(3) or ""
            builder.add_synonym(current, _unescape(m.group(1)), scope, kind)
        elif tag == "alt_id":
            alt = _first_token(value)
            if alt:
                builder.add_alt_id(alt, current_id)
        elif tag == "is_obsolete":
            if value.split(None, 1)[:1] == ["true"]:
                obsolete.add(current_id)

    for ln, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] == "!":
            continue
        if line[0] == "[":
            if in_term and current is None:
                problems.report(stanza_line, "[Term] stanza without an id: skipped")
                pending.clear()
            if not line.endswith("]"):
                problems.report(ln, f"malformed stanza header {line[:40]!r}")
                in_term, in_other = False, True
                continue
            kind = line[1:-1].strip()
            in_term, in_other = kind == "Term", kind != "Term"
            stanza_line, current, current_id = ln, None, ""
            pending.clear()
            if in_term:
                builder.count("term_stanzas")
            continue
        if in_other:
            continue
        tag, sep, value = line.partition(":")
        if not sep or not tag or " " in tag:
            problems.report(ln, f"not a 'tag: value' line: {line[:60]!r}")
            continue
        if not in_term:
            continue  # header tags (format-version, synonymtypedef, ...)
        value = value.strip()
        if tag == "id":
            if current is not None:
                problems.report(ln, f"second id {value!r} in the stanza of {current_id!r}")
                continue
            current_id = _first_token(value)
            if not current_id:
                problems.report(ln, "empty id")
                continue
            current = builder.concept(current_id)
            flush_pending()
        elif current is None:
            pending.append((tag, value, ln))  # OBO allows id anywhere, usually first
        else:
            handle(tag, value, ln)
    if in_term and current is None:
        problems.report(stanza_line, "[Term] stanza without an id: skipped")

    builder.count("obsolete_dropped", len(obsolete))
    return builder.finish(drop=obsolete)

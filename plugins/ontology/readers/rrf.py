"""The UMLS Metathesaurus Rich Release Format pair MRCONSO.RRF + MRREL.RRF.

Column layouts (UMLS Reference Manual, section 3.3.4 "Concept Names and
Sources" and 3.3.7 "Related Concepts"); every line is ``|``-separated and
``|``-terminated:

- MRCONSO: CUI LAT TS LUI STT SUI ISPREF AUI SAUI SCUI SDUI SAB TTY CODE STR
  SRL SUPPRESS CVF (18 fields)
- MRREL: CUI1 AUI1 STYPE1 REL CUI2 AUI2 STYPE2 RELA RUI SRUI SAB SL RG DIR
  SUPPRESS CVF (16 fields)

MRREL's REL is the relationship the *second* concept has to the *first*:
``CUI1|...|PAR|CUI2|...`` says CUI2 is a parent of CUI1, ``CHD`` that CUI2 is
a child of CUI1; ``RB``/``RN`` (broader/narrower) likewise.  RELA refines it
(``isa``/``inverse_isa``; ``part_of`` etc. are not is-a and are skipped by
default).  Each concept's name is its first string with TS=P, STT=PF,
ISPREF=Y (the UMLS preferred atom), the other strings are EXACT synonyms.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from priorkit.errors import DataFormatError, ProviderParameterError, ResourceError

from ..model import OntologyBuilder, OntologyData, ProblemLog

MRCONSO_COLUMNS = ("CUI", "LAT", "TS", "LUI", "STT", "SUI", "ISPREF", "AUI", "SAUI", "SCUI", "SDUI",
                   "SAB", "TTY", "CODE", "STR", "SRL", "SUPPRESS", "CVF")
MRREL_COLUMNS = ("CUI1", "AUI1", "STYPE1", "REL", "CUI2", "AUI2", "STYPE2", "RELA", "RUI", "SRUI",
                 "SAB", "SL", "RG", "DIR", "SUPPRESS", "CVF")
#: REL values of the UMLS (Reference Manual, "Abbreviations used in data elements")
KNOWN_RELS = ("AQ", "CHD", "DEL", "PAR", "QB", "RB", "RL", "RN", "RO", "RQ", "RU", "SIB", "SY", "XR")
#: REL -> True if CUI2 is the parent (CUI2 broader), False if CUI1 is the parent
_DIRECTION = {"PAR": True, "RB": True, "CHD": False, "RN": False}
HIERARCHICAL_RELS = tuple(_DIRECTION)
ABBREVIATION_TTYS = frozenset({"AB", "ACR", "AA", "AM", "MTH_AB", "MTH_ACR"})


def locate(path: Path) -> tuple[Path, Path]:
    """(MRCONSO, MRREL) from a folder (or its META/ sub-folder) or an MRCONSO path."""
    if path.is_dir():
        for folder in (path, path / "META"):
            conso = folder / "MRCONSO.RRF"
            if conso.exists():
                break
        else:
            raise ResourceError(f"{path}: no MRCONSO.RRF in this folder (or its META/ sub-folder)")
    else:
        conso = path
    rel = conso.with_name("MRREL.RRF")
    if not rel.exists():
        raise ResourceError(
            f"{rel}: MRREL.RRF not found beside {conso.name}; the hierarchy comes from MRREL, "
            "so both files are needed"
        )
    return conso, rel


def _rows(path: Path, columns: tuple[str, ...], problems: ProblemLog) -> Iterator[tuple[int, list[str]]]:
    want = len(columns) + 1  # the line ends with '|'
    try:
        fh = open(path, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise ResourceError(f"{path}: cannot open: {exc}") from exc
    ln = 0
    with fh:
        try:
            for ln, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if not line:
                    continue
                fields = line.split("|")
                if len(fields) != want or fields[-1] != "":
                    problems.report(
                        ln, f"expected {len(columns)} '|'-terminated fields ({' '.join(columns[:4])} ...), "
                        f"found {len(fields) - (fields[-1] == '')}"
                    )
                    continue
                yield ln, fields
        except UnicodeDecodeError as exc:
            raise DataFormatError(f"{path}:{ln + 1}: not UTF-8 text ({exc.reason})") from exc


def read_rrf(
    path: Path,
    problems: ProblemLog,
    rel_problems: ProblemLog,
    language: str | None = "ENG",
    sources: Iterable[str] | None = None,
    relations: Iterable[str] = ("PAR", "CHD"),
    rela: Iterable[str] | None = ("", "isa", "inverse_isa"),
    skip_suppress: Iterable[str] = ("O", "E"),
) -> OntologyData:
    bad = set(relations) - set(_DIRECTION)
    if bad:
        raise ProviderParameterError(
            f"relations {sorted(bad)} are not hierarchical; choose from {', '.join(_DIRECTION)} "
            "(PAR/CHD: parent/child, RB/RN: broader/narrower)"
        )
    conso, rel = locate(path)
    sources = set(sources) if sources is not None else None
    relations = set(relations)
    rela = set(rela) if rela is not None else None
    skip_suppress = set(skip_suppress)
    builder = OntologyBuilder(conso, "rrf", problems)

    # MRCONSO: strings per CUI in file order; the preferred atom becomes the name
    strings: dict[str, list[tuple[bool, str, str]]] = {}
    filtered = 0
    for ln, f in _rows(conso, MRCONSO_COLUMNS, problems):
        cui, lat, ts, stt, ispref, sab, tty, text, suppress = f[0], f[1], f[2], f[4], f[6], f[11], f[12], f[14], f[16]
        if not cui or not text:
            problems.report(ln, "empty CUI or STR")
            continue
        if (language and lat != language) or (sources is not None and sab not in sources) or suppress in skip_suppress:
            filtered += 1
            continue
        strings.setdefault(cui, []).append((ts == "P" and stt == "PF" and ispref == "Y", text, tty))
    builder.count("strings_filtered", filtered)
    for cui, rows in strings.items():
        idx = builder.concept(cui)
        preferred = next((r for r in rows if r[0]), rows[0])
        builder.set_name(idx, preferred[1])
        seen = {preferred[1]}
        for _, text, tty in rows:
            if text not in seen:
                seen.add(text)
                builder.add_synonym(idx, text, "EXACT", "abbreviation" if tty in ABBREVIATION_TTYS else tty)

    # MRREL: hierarchical relations between known concepts
    outside = skipped = 0
    for ln, f in _rows(rel, MRREL_COLUMNS, rel_problems):
        cui1, relname, cui2, relattr, sab, suppress = f[0], f[3], f[4], f[7], f[10], f[14]
        if relname not in KNOWN_RELS:
            rel_problems.report(ln, f"unknown REL {relname!r}; UMLS RELs are {', '.join(KNOWN_RELS)}")
            continue
        if not cui1 or not cui2:
            rel_problems.report(ln, "empty CUI1 or CUI2")
            continue
        if (relname not in relations or (rela is not None and relattr not in rela)
                or (sources is not None and sab not in sources) or suppress in skip_suppress):
            skipped += 1
            continue
        if not (builder.has(cui1) and builder.has(cui2)):
            outside += 1  # e.g. a concept without English names: not an error
            continue
        child, parent = (cui1, cui2) if _DIRECTION[relname] else (cui2, cui1)
        builder.add_parent(builder.concept(child), parent, ln)
    builder.count("relations_skipped", skipped)
    builder.count("relations_to_filtered_concepts", outside)
    return builder.finish()

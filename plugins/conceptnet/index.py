"""Parsing ConceptNet assertion dumps into a compact, cached edge index.

The ConceptNet 5 assertions CSV has one edge per line, five tab-separated
fields::

    /a/[/r/IsA/,/c/en/dog/,/c/en/animal/]  /r/IsA  /c/en/dog/n  /c/en/animal  {"weight": 2.0, ...}

Parsing 488k lines costs a few seconds; the official 34M-line dump minutes.
So the file is parsed once per (checksum, languages) into integer arrays
(``edges.npz``: src, dst, relation id, weight) plus a vocabulary
(``vocab.txt``), and every later load reads those in milliseconds.  Relation
filters, minimum weights and relation weights are applied to the arrays at
load time, vectorised, so changing them needs no re-parse.
"""
from __future__ import annotations

import dataclasses
import json
import re
import warnings
from array import array
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from priorkit.errors import DataFormatError

from .. import _support
from .._support import open_text_lines

#: bump when the parser or the stored layout changes: old indexes are ignored
INDEX_FORMAT = 1
INDEX_KIND = "conceptnet"

#: ConceptNet 5.7's relations plus the ConceptNet 4 ones found in older dumps
KNOWN_RELATIONS: tuple[str, ...] = (
    "RelatedTo", "FormOf", "IsA", "PartOf", "HasA", "UsedFor", "CapableOf", "AtLocation",
    "Causes", "HasSubevent", "HasFirstSubevent", "HasLastSubevent", "HasPrerequisite",
    "HasProperty", "MotivatedByGoal", "ObstructedBy", "Desires", "CreatedBy", "Synonym",
    "Antonym", "DistinctFrom", "DerivedFrom", "SymbolOf", "DefinedAs", "MannerOf",
    "LocatedNear", "HasContext", "SimilarTo", "EtymologicallyRelatedTo",
    "EtymologicallyDerivedFrom", "CausesDesire", "MadeOf", "ReceivesAction", "ExternalURL",
    "InstanceOf", "Entails", "NotDesires", "NotUsedFor", "NotCapableOf", "NotHasProperty",
    "dbpedia/genre", "dbpedia/influencedBy", "dbpedia/knownFor", "dbpedia/occupation",
    "dbpedia/language", "dbpedia/field", "dbpedia/product", "dbpedia/capital",
    "dbpedia/leader", "dbpedia/genus",
    # ConceptNet 4
    "ConceptuallyRelatedTo", "SimilarSize", "InheritsFrom", "HasPainIntensity", "HasPainCharacter",
)

_WEIGHT_RE = re.compile(rb'"weight"\s*:\s*(-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*[,}]')
_MAX_REPORTED_LINES = 5


@dataclasses.dataclass
class EdgeIndex:
    """Every usable edge of one dump, for the chosen languages (unfiltered otherwise)."""

    vocab: list[str]          # node id -> concept term ("heart_attack")
    node_lang: np.ndarray     # (N,) int16 index into ``languages``
    src: np.ndarray           # (E,) int32
    dst: np.ndarray           # (E,) int32
    rel: np.ndarray           # (E,) int16 index into ``relations``
    weight: np.ndarray        # (E,) float32, as in the file's JSON info
    relations: list[str]      # relation names without "/r/", as found in the file
    languages: list[str]      # language codes of ``node_lang``
    meta: dict[str, Any]      # counts, checksum, skipped lines
    folder: Path | None = None


def _preview(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= 120 else text[:117] + "..."


def parse_assertions(path: Path, languages: Sequence[str]) -> EdgeIndex:
    """Parse a ConceptNet assertions file; keep edges whose two ends are in ``languages``.

    Lines that cannot be in the layout at all (wrong number of fields, no
    ``/r/`` relation) raise :class:`DataFormatError` naming the file and line:
    such a file is not a ConceptNet dump.  Single damaged lines inside a valid
    dump (unreadable JSON info, no weight, bad UTF-8, empty concept) are
    skipped and reported in one warning with their count and line numbers.
    Edges to non-concepts (``ExternalURL`` links) are skipped silently, as
    ConceptNet's own tools do.
    """
    langs = [lang.encode() for lang in languages]
    lang_id = {lang: i for i, lang in enumerate(langs)}
    node_of: dict[bytes, int] = {}
    vocab: list[str] = []
    node_lang = array("h")
    rel_of: dict[bytes, int] = {}
    src, dst, rel, weight = array("i"), array("i"), array("h"), array("f")
    bad: dict[str, list[int]] = {}
    n_lines = n_other_lang = n_non_concept = 0

    def skip(reason: str, lineno: int) -> None:
        bad.setdefault(reason, []).append(lineno)

    def node(uri: bytes) -> int:
        """Node id; -1 other language, -2 empty term, -3 bad UTF-8."""
        # /c/en/heart_attack/n/... -> key b"en/heart_attack"
        parts = uri.split(b"/", 4)
        if len(parts) < 4 or not parts[3]:
            return -2
        lang = parts[2]
        if lang not in lang_id:
            return -1
        key = lang + b"/" + parts[3]
        idx = node_of.get(key)
        if idx is None:
            try:
                term = parts[3].decode("utf-8").lower()
            except UnicodeDecodeError:
                return -3
            idx = node_of[key] = len(vocab)
            vocab.append(term)
            node_lang.append(lang_id[lang])
        return idx

    with open_text_lines(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            n_lines += 1
            fields = line.split(b"\t")
            if len(fields) != 5:
                raise DataFormatError(
                    f"{path}, line {lineno}: expected 5 tab-separated fields (assertion uri, "
                    f"relation, start, end, JSON info) as in ConceptNet 5's assertions CSV, "
                    f"found {len(fields)}: {_preview(line)!r}"
                )
            r = fields[1]
            if not r.startswith(b"/r/"):
                raise DataFormatError(
                    f"{path}, line {lineno}: the relation field {_preview(r)!r} does not start "
                    "with '/r/'; is this a ConceptNet assertions file?"
                )
            start, end = fields[2], fields[3]
            if not (start.startswith(b"/c/") and end.startswith(b"/c/")):
                n_non_concept += 1
                continue
            s, e = node(start), node(end)
            if s < -1 or e < -1:
                skip("an empty concept term" if -2 in (s, e) else "invalid UTF-8", lineno)
                continue
            if s == -1 or e == -1:
                n_other_lang += 1
                continue
            info = fields[4]
            m = _WEIGHT_RE.search(info)
            if m is not None:
                w = float(m.group(1))
            else:
                try:
                    w = float(json.loads(info)["weight"])
                except (ValueError, KeyError, TypeError):
                    skip("JSON info without a numeric 'weight'", lineno)
                    continue
            if not np.isfinite(w):
                skip("non-finite weight", lineno)
                continue
            rid = rel_of.get(r)
            if rid is None:
                rid = rel_of[r] = len(rel_of)
            src.append(s)
            dst.append(e)
            rel.append(rid)
            weight.append(w)

    relations = [r[3:].decode("utf-8", "replace").rstrip("/") for r in rel_of]
    skipped = {reason: {"count": len(lines), "first_lines": lines[:_MAX_REPORTED_LINES]}
               for reason, lines in bad.items()}
    meta = {
        "format": INDEX_FORMAT,
        "source": str(path),
        "languages": list(languages),
        "relations": relations,
        "lines": n_lines,
        "edges": len(src),
        "nodes": len(vocab),
        "other_language_edges": n_other_lang,
        "non_concept_edges": n_non_concept,
        "skipped": skipped,
    }
    return EdgeIndex(
        vocab=vocab,
        node_lang=np.frombuffer(node_lang, dtype=np.int16).copy(),
        src=np.frombuffer(src, dtype=np.int32).copy(),
        dst=np.frombuffer(dst, dtype=np.int32).copy(),
        rel=np.frombuffer(rel, dtype=np.int16).copy(),
        weight=np.frombuffer(weight, dtype=np.float32).copy(),
        relations=relations,
        languages=list(languages),
        meta=meta,
    )


def warn_skipped(index: EdgeIndex, path: Path) -> None:
    """One warning per load that names how many lines were skipped and where."""
    skipped = index.meta.get("skipped") or {}
    if not skipped:
        return
    total = sum(v["count"] for v in skipped.values())
    detail = "; ".join(
        f"{v['count']} with {reason} (lines {', '.join(map(str, v['first_lines']))}"
        f"{', ...' if v['count'] > len(v['first_lines']) else ''})"
        for reason, v in skipped.items()
    )
    warnings.warn(f"conceptnet: skipped {total} malformed line(s) of {path}: {detail}",
                  UserWarning, stacklevel=4)


def load_edge_index(path: Path, languages: Sequence[str], cache_dir=None,
                    use_cache: bool = True) -> EdgeIndex:
    """The edge index of ``path``: read from the cache, or parsed and cached."""
    checksum = _support.file_sha256(path, cache_dir)
    key = _support.index_key(sha256=checksum, languages=list(languages), format=INDEX_FORMAT)
    folder = _support.find_index(INDEX_KIND, key, cache_dir) if use_cache else None
    if folder is not None:
        index = _read(folder)
    else:
        index = parse_assertions(path, languages)
        index.meta["sha256"] = checksum
        if use_cache:
            try:
                with _support.building_index(INDEX_KIND, key, index.meta, cache_dir) as tmp:
                    _write(index, tmp)
                index.folder = _support.find_index(INDEX_KIND, key, cache_dir)
            except OSError as exc:  # read-only or full disk: work on, parse again next time
                warnings.warn(f"conceptnet: could not save the index of {path} under "
                              f"{_support.index_root(cache_dir)} ({exc}); it will be parsed again "
                              "next time (set PRIORKIT_HOME or cache_dir= to a writable folder)",
                              UserWarning, stacklevel=3)
    if index.meta["edges"] == 0:
        langs = ", ".join(languages)
        raise DataFormatError(
            f"{path} holds no usable ConceptNet edge between concepts in language(s) {langs} "
            f"({index.meta['lines']} lines read); check the file and the languages= parameter"
        )
    warn_skipped(index, path)
    return index


def _write(index: EdgeIndex, folder: Path) -> None:
    _support.save_arrays(folder / "edges.npz", src=index.src, dst=index.dst, rel=index.rel,
                         weight=index.weight, node_lang=index.node_lang)
    _support.save_lines(folder / "vocab.txt", index.vocab)


def _read(folder: Path) -> EdgeIndex:
    meta = _support.read_meta(folder)
    arrays = _support.load_arrays(folder / "edges.npz")
    vocab = _support.load_lines(folder / "vocab.txt")
    return EdgeIndex(vocab=vocab, relations=meta["relations"], languages=meta["languages"],
                     meta=meta, folder=folder, **arrays)

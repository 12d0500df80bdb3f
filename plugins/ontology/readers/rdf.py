"""OWL / RDF ontologies through rdflib (RDF/XML, Turtle, N-Triples, N3, JSON-LD).

Concepts are the IRIs typed ``owl:Class``, ``rdfs:Class`` or ``skos:Concept``,
plus every IRI on either side of ``rdfs:subClassOf`` / ``skos:broader`` /
``skos:narrower``.  ``owl:Thing`` is not a concept (classes under it are
roots); ``rdfs:subClassOf`` to a blank node (an OWL restriction such as
``part_of some X``) is not is-a and is skipped (counted in ``stats``).
Concepts with ``owl:deprecated true`` are dropped.

Names: ``skos:prefLabel`` then ``rdfs:label`` (the first becomes the name,
others EXACT synonyms); ``skos:altLabel`` and ``oboInOwl:hasExactSynonym``
are EXACT, ``hasRelatedSynonym`` / ``hasNarrowSynonym`` / ``hasBroadSynonym``
RELATED / NARROW / BROAD.  Literals tagged with another language than
``language`` are skipped; untagged literals are kept.  OBO PURLs are shortened
to CURIEs (``http://purl.obolibrary.org/obo/HP_0000118`` -> ``HP:0000118``).
"""
from __future__ import annotations

import re
from pathlib import Path

from priorkit.errors import DataFormatError

from ..model import OntologyBuilder, OntologyData, ProblemLog

OBO_IN_OWL = "http://www.geneontology.org/formats/oboInOwl#"
_OBO_PURL = re.compile(r"^http://purl\.obolibrary\.org/obo/([A-Za-z][A-Za-z0-9]*)_(\w+)$")

#: file suffix -> rdflib parser name
RDF_SUFFIXES = {
    ".owl": "xml",
    ".rdf": "xml",
    ".xml": "xml",
    ".ttl": "turtle",
    ".nt": "nt",
    ".n3": "n3",
    ".jsonld": "json-ld",
}


def compact(iri: str) -> str:
    m = _OBO_PURL.match(iri)
    return f"{m.group(1)}:{m.group(2)}" if m else iri


def _parse(path: Path, rdf_format: str):
    import gzip

    import rdflib

    graph = rdflib.Graph()
    try:
        if path.suffix == ".gz":
            graph.parse(data=gzip.open(path).read(), format=rdf_format)
        else:
            graph.parse(source=str(path), format=rdf_format)
    except Exception as exc:  # noqa: BLE001 - every parser error becomes one clear message
        raise DataFormatError(
            f"{path}{_line_of(exc)}: rdflib could not parse it as {rdf_format!r}: "
            f"{type(exc).__name__}: {exc}. Check the syntax, or pass format= (obo, owl, ttl, nt, rrf)"
        ) from exc
    return graph


def _line_of(exc: Exception) -> str:
    """':LINE' from rdflib/SAX parser errors when they carry one."""
    get_line = getattr(exc, "getLineNumber", None)  # xml.sax.SAXParseException (RDF/XML)
    if callable(get_line):
        return f":{get_line()}"
    args = getattr(exc, "args", ())  # notation3.BadSyntax(uri, lines, text, offset, why)
    if len(args) == 5 and isinstance(args[2], str) and isinstance(args[3], int):
        return f":{args[2][:args[3]].count(chr(10)) + 1}"
    return ""


def read_rdf(path: Path, rdf_format: str, problems: ProblemLog, language: str = "en") -> OntologyData:
    from rdflib import BNode, Literal, URIRef
    from rdflib.namespace import OWL, RDF, RDFS, SKOS

    graph = _parse(path, rdf_format)
    builder = OntologyBuilder(path, f"rdf/{rdf_format}", problems)
    oio = lambda name: URIRef(OBO_IN_OWL + name)  # noqa: E731
    not_concepts = {OWL.Thing, OWL.Nothing, RDFS.Resource}

    def usable(node) -> bool:
        return isinstance(node, URIRef) and node not in not_concepts

    concepts: set = set()
    for cls in (OWL.Class, RDFS.Class, SKOS.Concept):
        concepts.update(s for s in graph.subjects(RDF.type, cls) if usable(s))
    links: list[tuple] = []  # (child, parent)
    restrictions = 0
    for child, parent in graph.subject_objects(RDFS.subClassOf):
        if isinstance(parent, BNode):
            restrictions += 1
        elif usable(child) and usable(parent):
            links.append((child, parent))
    links += [(c, p) for c, p in graph.subject_objects(SKOS.broader) if usable(c) and usable(p)]
    links += [(c, p) for p, c in graph.subject_objects(SKOS.narrower) if usable(c) and usable(p)]
    for c, p in links:
        concepts.update((c, p))
    if restrictions:
        builder.count("subclass_restrictions_skipped", restrictions)

    deprecated = {compact(str(s)) for s in graph.subjects(OWL.deprecated, None)
                  if str(graph.value(s, OWL.deprecated)).lower() in ("true", "1")}

    def literals(node, prop) -> list[str]:
        out = []
        for o in graph.objects(node, prop):
            if not isinstance(o, Literal):
                problems.report(None, f"{prop.n3(graph.namespace_manager)} of {node} is not a literal: {o}")
                continue
            if o.language and language and not o.language.lower().startswith(language.lower()):
                continue
            out.append(str(o))
        return sorted(out)  # rdflib returns triples in no fixed order

    for node in sorted(concepts, key=str):
        idx = builder.concept(compact(str(node)))
        for prop in (SKOS.prefLabel, RDFS.label):
            for text in literals(node, prop):
                builder.set_name(idx, text)
        for prop, scope in ((SKOS.altLabel, "EXACT"), (oio("hasExactSynonym"), "EXACT"),
                            (oio("hasRelatedSynonym"), "RELATED"), (oio("hasNarrowSynonym"), "NARROW"),
                            (oio("hasBroadSynonym"), "BROAD")):
            for text in literals(node, prop):
                builder.add_synonym(idx, text, scope)
        for alt in literals(node, oio("hasAlternativeId")):
            builder.add_alt_id(alt, builder.ids[idx])
    for child, parent in sorted(links, key=lambda cp: (str(cp[0]), str(cp[1]))):
        builder.add_parent(builder.concept(compact(str(child))), compact(str(parent)))
    builder.count("obsolete_dropped", len(deprecated & set(builder.ids)))
    return builder.finish(drop=deprecated)

"""Ontology file readers, one module per format; each returns an :class:`~..model.OntologyData`.

- ``obo``: OBO 1.2/1.4, our own streaming reader (plain or gzip);
- ``rdf``: OWL/RDF/Turtle/N-Triples/JSON-LD through rdflib;
- ``rrf``: the UMLS pair MRCONSO.RRF + MRREL.RRF.

rdflib is imported only when an RDF file is read.
"""
from __future__ import annotations

from .obo import read_obo
from .rdf import RDF_SUFFIXES, read_rdf
from .rrf import HIERARCHICAL_RELS, locate, read_rrf

__all__ = ["read_obo", "read_rdf", "read_rrf", "locate", "RDF_SUFFIXES", "HIERARCHICAL_RELS"]

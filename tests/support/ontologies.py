"""Tiny OBO ontologies the tests build real providers from."""

#: two MeSH-like roots (Diseases, Chemicals) with one concept under each
TREES = """\
format-version: 1.2

[Term]
id: MESHCAT:C
name: Diseases

[Term]
id: MESHCAT:D
name: Chemicals

[Term]
id: MESH:D1
name: hypotension
is_a: MESHCAT:C

[Term]
id: MESH:D2
name: cocaine
is_a: MESHCAT:D
"""

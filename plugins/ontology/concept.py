"""Named ontology sources (``source="hpo+mesh"``) and the ``concept`` measure's parameters.

``measure="concept"`` is not a similarity score but a relation, turned into
three values a user chooses:

- ``within``: the same concept (one mention with itself, "MI" and "myocardial
  infarction", two mentions of cocaine);
- ``related``: concepts at most ``hops`` is-a steps apart (up from one to a
  common ancestor, down to the other; parent and child are 1 step, siblings 2),
  or (``groups`` > 0) concepts that share an ancestor at level ``groups`` or
  deeper -- level 1 is a top concept of the file (HPO's "All", MeSH's trees
  ``MESHCAT:C`` / ``MESHCAT:D``), so ``groups=2`` in MeSH means "under the same
  top-level heading" (C14 Cardiovascular Diseases, D02 Organic Chemicals);
- ``unrelated``: two recognised concepts with neither relation.

A phrase that names no concept stays NaN, so the aligner gives it the layout's
neutral value.  A phrase naming several concepts takes the strongest relation
of any of its concepts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from priorkit.errors import ProviderParameterError

#: ontology resources by name: (resource, file in it); ``priorkit data fetch <resource>``
SOURCES = {"hpo": ("hpo", "hp.obo"), "mesh": ("mesh", "mesh.obo")}
#: defaults of the concept measure's parameters
CONCEPT_DEFAULTS: dict[str, Any] = {"within": 1.0, "related": 0.8, "unrelated": 0.5, "hops": 2, "groups": 0}


def source_names(source: str) -> list[str]:
    """``"hpo+mesh"`` -> ``["hpo", "mesh"]``; ValueError naming an unknown or repeated one."""
    names = [s.strip() for s in str(source).split("+")]
    bad = [n for n in names if n not in SOURCES]
    if bad:
        raise ProviderParameterError(f"ontology: unknown source {bad} in {source!r}; choose from {', '.join(SOURCES)} "
                         "or several joined with '+' (e.g. 'hpo+mesh'), or pass path= a file")
    if len(set(names)) != len(names):
        raise ProviderParameterError(f"ontology: source {source!r} names an ontology twice")
    return names


def source_paths(source: str, fetch: bool = True) -> list[Path]:
    """``"hpo+mesh"`` -> the fetched files (fetched on first use; ``fetch=False``: only their
    names matter, nothing is fetched), in that order."""
    from priorkit.resources import resource_path

    if not fetch:
        return [Path(SOURCES[n][1]) for n in source_names(source)]
    return [resource_path(*SOURCES[n]) for n in source_names(source)]


def concept_params(measure: str, given: dict[str, Any]) -> dict[str, Any]:
    """The concept measure's parameters (validated), or {} for other measures.

    Raises ValueError for a concept parameter given with another measure (it
    would be silently ignored), a value outside [0, 1], or a negative count.
    """
    set_ = {k: v for k, v in given.items() if v is not None}
    if measure != "concept":
        if set_:
            raise ProviderParameterError(f"ontology: {', '.join(sorted(set_))} only apply to measure='concept', "
                             f"not {measure!r}")
        return {}
    out = {**CONCEPT_DEFAULTS, **set_}
    for k in ("within", "related", "unrelated"):
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
            raise ProviderParameterError(f"ontology: {k}={v!r} must be a number in [0, 1] (a prior value)")
        out[k] = float(v)
    for k in ("hops", "groups"):
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ProviderParameterError(f"ontology: {k}={v!r} must be a whole number >= 0")
    return out


def relation_values(codes: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """Relation codes (0 unrelated, 1 related, 2 same; NaN unknown) -> the user's values."""
    table = np.array([params["unrelated"], params["related"], params["within"]], dtype=np.float64)
    out = np.full(codes.shape, np.nan)
    known = ~np.isnan(codes)
    out[known] = table[codes[known].astype(np.int64)]
    return out

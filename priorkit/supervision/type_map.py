"""Which entity type each of a dictionary's match groups becomes: the type map.

No map is the default.  The map comes from the pipeline (``task.dictionary_types``, or a
section's own ``types``; ``priorkit predict --dictionary-types``), or from the data when the
dictionary's groups already are its entity types (a dictionary whose groups are named
``Disease`` and ``Chemical`` tags a corpus of those types as they are).  Without either,
:func:`resolve_types` stops with the field to set.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from ..errors import PriorkitError

#: what a null type map meant before issue 47 (BC5CDR's: MeSH tree D Chemical, MeSH tree C and
#: HPO Disease).  Not a default: only the run keys read it, so that a run made then keeps its
#: key when its pipeline now names this map (``task.dictionary_types``).
MAP_BEFORE_47 = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}


def entity_types_of(tags: Iterable[str]) -> list[str]:
    """The entity types of BIO tags or label names (``B-Disease`` -> ``Disease``), sorted."""
    return sorted({t.split("-", 1)[1] for t in tags if t != "O" and "-" in t})


def resolve_types(given: Mapping[str, str] | None, groups: Callable[[], Sequence[str]] | Sequence[str],
                  entity_types: Iterable[str], *, field: str, who: str) -> dict[str, str]:
    """The type map: ``given`` (group -> type, in priority order) when set; else, when every entity
    type of the data is a group of the dictionary (``groups``: the provider's ``match_groups``, or a
    callable giving them, asked only then), each of those groups typed as itself, in the
    dictionary's order.  Otherwise raises, naming ``field`` (what to set) and ``who`` (what needs
    the map)."""
    if given is not None:
        if not given:
            raise PriorkitError(f"{who}: {field} is empty; map at least one match group to an entity type")
        return dict(given)
    have = sorted(set(entity_types))
    emitted = list(groups() if callable(groups) else groups)
    if have and set(have) <= set(emitted):
        return {g: g for g in emitted if g in have}
    raise PriorkitError(
        f"{who}: no type map for the dictionary's matches; set {field} (match group -> entity type, e.g. "
        f"{{mesh:D: Chemical, mesh:C: Disease, hpo: Disease}} for BC5CDR with the hpo+mesh ontology). "
        f"The dictionary's groups ({', '.join(emitted) or 'none'}) are not the data's entity types "
        f"({', '.join(have) or 'none'}), so they cannot be read as them")

"""Options a pipeline file could set once and can no longer: name -> why, and what to write instead.

The loader (:func:`priorkit.config.loader._convert`) reads this table when a section holds a
field it does not know: an old pipeline file that still sets a removed option stops with one
line naming the field (its ``file:line``) and the entry here, instead of "unknown field".

A name is the end of a field's dotted path; ``*`` stands for one name of the file's own (an arm,
a setting).  ``posthoc.*.propagate`` matches ``sweep.posthoc.carry.propagate``;
``features.edge_noise`` matches ``prior.features.edge_noise`` and
``sweep.priors.st.features.edge_noise`` alike.  Results made with these options stay in
docs/results/ (docs/benchmarks.md tells their story).
"""
from __future__ import annotations

_NOT_ADOPTED = "tried in one experiment and not adopted (docs/benchmarks.md)"

#: dotted name (its end) -> why it was removed and what to do instead
REMOVED: dict[str, str] = {
    "posthoc.*.propagate": f"the post-hoc arm's propagation was {_NOT_ADOPTED}; delete the field",
    "posthoc.*.share": f"the vote of the post-hoc arm's propagation, {_NOT_ADOPTED}; delete the field",
    "posthoc.*.min_prob": f"the gate of the post-hoc arm's propagation, {_NOT_ADOPTED}; delete the field",
}


def _matches(pattern: tuple[str, ...], path: tuple) -> bool:
    if len(path) < len(pattern):
        return False
    tail = tuple(str(p) for p in path[len(path) - len(pattern):])
    return all(p == "*" or p == t for p, t in zip(pattern, tail))


def removed(path: tuple) -> str | None:
    """Why the field at ``path`` was removed (and what replaced it), or None when it never existed."""
    for name, why in REMOVED.items():
        if _matches(tuple(name.split(".")), path):
            return why
    return None

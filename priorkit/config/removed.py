"""Options a pipeline file could set once and can no longer: name -> why, and what to write instead.

The loader (:func:`priorkit.config.loader._convert`) reads this table when a section holds a
field it does not know: an old pipeline file that still sets a removed option stops with one
line naming the field (its ``file:line``) and the entry here, instead of "unknown field".

A name is the end of a field's dotted path; ``*`` stands for one name of the file's own (an arm,
a setting); ``name=value`` is a value the field no longer takes.  ``posthoc.*.propagate`` matches ``sweep.posthoc.carry.propagate``;
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
    "features.outside_weight": f"the loss weight of entity words without a match was {_NOT_ADOPTED}; delete the field",
    "features.edge_noise": f"moving a mention's bounds while training was {_NOT_ADOPTED}; delete the field",
    "features.mention_dropout": f"knowledge dropout was {_NOT_ADOPTED}; delete the field",
    "attention.mention_dropout": f"knowledge dropout was {_NOT_ADOPTED}; delete the field",
    "features.control": ("controls are providers now: write features: {provider: random-spans, params: "
                         "{provider: ontology, params: {...}, seed: 0}} (docs/providers/controls.md)"),
    "features.seed": ("it was the seed of features.control; the random-spans provider takes its own seed "
                      "(features: {provider: random-spans, params: {..., seed: 0}})"),
    "teacher.entity_threshold": f"a lower threshold for the teacher's entity words was {_NOT_ADOPTED}; "
                                "delete the field (teacher.threshold applies to every word)",
    "teacher.merge=teacher-veto": f"the teacher-veto merge was {_NOT_ADOPTED}; use teacher-first",
    **{f"sweep.dictionary.{name}": "the dictionary report reads only provider, params and types; delete the field"
       for name in ("of", "merge", "calibrate", "mix", "weights", "decode", "o_bias", "fragments", "document")},
}


def _matches(pattern: tuple[str, ...], path: tuple) -> bool:
    if len(path) < len(pattern):
        return False
    tail = tuple(str(p) for p in path[len(path) - len(pattern):])
    return all(p == "*" or p == t for p, t in zip(pattern, tail))


def removed(path: tuple, value: object = None) -> str | None:
    """Why the field at ``path`` was removed (and what replaced it), or None when it never existed;
    with ``value``: why the field no longer takes that value."""
    for name, why in REMOVED.items():
        name, _, gone = name.partition("=")
        if (gone == "") == (value is None) and (value is None or str(value) == gone) \
                and _matches(tuple(name.split(".")), path):
            return why
    return None

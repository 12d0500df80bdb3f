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
    "precompute": ("the precompute section is the engine section now (it also says where a self-training "
                   "teacher labels): engine: {type: local|dask, workers, scheduler, batch_size, shard_dir}; "
                   "precompute.engine is engine.type, precompute.shard_size is engine.batch_size"),
    "teacher.engine": "where the teacher labels is the pipeline's engine section now: engine: {type: dask, ...}",
    "teacher.workers": "the teacher's Dask workers are the pipeline's engine section now: engine: {type: dask, workers: N}",
    "teacher.scheduler": ("the teacher's Dask scheduler is the pipeline's engine section now: "
                          "engine: {type: dask, scheduler: ADDRESS}"),
    "silver.ratio": ("silver rows per gold row was never used by a pipeline (silver_epochs says how much silver "
                     "a run trains on); delete the field, or write silver_epochs"),
    "silver.chunk_size": "the silver store's shard size is fixed (2000 sentences a shard); delete the field",
    "tune.timeout": "a time limit belongs to one process, not the study: priorkit tune --timeout SECONDS",
    "final.enabled": "the final comparison runs unless priorkit tune is given --no-final; delete the field",
    "pruner.lower": "the threshold pruner's range is one field now: pruner: {type: threshold, bounds: [LOWER, UPPER]}",
    "pruner.upper": "the threshold pruner's range is one field now: pruner: {type: threshold, bounds: [LOWER, UPPER]}",
    "save_steps": "a checkpoint every N optimiser steps is save: N now; delete save_steps",
    "save=steps": "write save: N (a checkpoint every N optimiser steps) instead of save: steps and save_steps: N",
    "data.*.hf": "a Hugging Face datasets id is a source now: write source: hf:ID (hf:ID:CONFIG with a configuration)",
    "data.*.hf_config": "a Hugging Face dataset's configuration is part of its source now: write source: hf:ID:CONFIG",
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


#: removed fields a run's ``config.yaml`` holds at these values (the defaults it was written with):
#: dropped when an old dump is read again (:func:`upgrade_dump`); any other value stays, so that the
#: loader names the field
_DUMPED_DEFAULTS = {
    ("features", "control"): None, ("features", "seed"): 0, ("features", "mention_dropout"): 0.0,
    ("features", "outside_weight"): 1.0, ("features", "edge_noise"): 0.0,
    ("attention", "mention_dropout"): 0.0, ("teacher", "entity_threshold"): None,
    ("silver", "ratio"): None, ("silver", "chunk_size"): 2000,
    ("tune", "timeout"): None, ("final", "enabled"): True,
}


def upgrade_dump(raw: dict) -> dict:
    """A run's ``config.yaml`` written before a field was removed (every field at its value, defaults
    included), spelled in today's schema: folded fields in their new form (``hf``/``hf_config`` in
    ``source``, ``save_steps`` in ``save``, ``precompute`` and the teacher's engine fields in
    ``engine``, the pruner's ``lower``/``upper`` in ``bounds``), removed ones at the defaults they
    were written with dropped.  ``raw`` is changed in place and returned."""
    if not isinstance(raw, dict):
        return raw
    for split in (raw.get("data") or {}).values():
        if isinstance(split, dict) and ("hf" in split or "hf_config" in split):
            hf, config = split.pop("hf", None), split.pop("hf_config", None)
            if hf:
                split["source"] = f"hf:{hf}" + (f":{config}" if config else "")
    train = raw.get("train")
    if isinstance(train, dict) and "save_steps" in train:
        steps = train.pop("save_steps")
        if train.get("save") == "steps":
            train["save"] = steps
    old = raw.pop("precompute", None)
    if isinstance(old, dict) and "engine" not in raw:
        dask = old.get("engine") == "dask"
        raw["engine"] = {"type": old.get("engine", "local"), "workers": old.get("workers", 2),
                         "scheduler": old.get("scheduler"), "shard_dir": old.get("shard_dir"),
                         "batch_size": old.get("shard_size" if dask else "batch_size")}
    pruner = (raw.get("tune") or {}).get("pruner") if isinstance(raw.get("tune"), dict) else None
    if isinstance(pruner, dict) and ("lower" in pruner or "upper" in pruner):
        lower, upper = pruner.pop("lower", None), pruner.pop("upper", None)
        if lower is not None or upper is not None:
            pruner["bounds"] = [lower, upper]
    _drop_defaults(raw, None)
    return raw


def _drop_defaults(node: object, parent: str | None) -> None:
    if isinstance(node, list):
        for item in node:
            _drop_defaults(item, parent)
        return
    if not isinstance(node, dict):
        return
    if parent == "teacher":
        for field in ("engine", "workers", "scheduler"):  # the pipeline's engine section now
            if node.get(field) in (None, "local"):
                node.pop(field, None)
    for key in list(node):
        gone = (parent, key)
        if gone in _DUMPED_DEFAULTS and node[key] == _DUMPED_DEFAULTS[gone]:
            del node[key]
        else:
            _drop_defaults(node[key], key)

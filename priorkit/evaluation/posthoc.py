"""Post-hoc arms of a sweep: a trained setting's predictions merged with a dictionary's
matches afterwards, without training (``sweep.posthoc``, docs/pipelines.md#post-hoc-arms).

The cheapest use of the knowledge a learned channel gets: the no-prior model tags the
sentences, the dictionary's matches (each an entity of its group's type, as
:mod:`priorkit.evaluation.dictionary_baseline` scores the dictionary alone) are merged in afterwards,
on the entity level:

* ``union``: every model entity stays; a dictionary entity is added where it overlaps
  no model entity (the model predicted ``O`` on all its words);
* ``override``: every dictionary entity is taken; a model entity stays where it
  overlaps no dictionary entity.

Each arm reads the saved ``predictions-<split>.jsonl`` of the run of setting ``of`` with
the same fraction and seed, scores the merged tags with the trained runs' scorer and
writes a ``metrics.json`` and ``predictions-<split>.jsonl`` of its own in
``runs/<name>/<arm>/frac<F>/seed<S>/``, so the tables, the paired Δ, the verdicts and the
curves treat it as an arm.  Its ``posthoc_key`` (the base run's eval key, the arm's
settings, the split digests) says when the merge must be redone.

With ``fragments``, after the merge or the mix, the dictionary also mends the model's bounds
where it split one dictionary entity into pieces (:func:`~priorkit.decode.steps.join_fragments`).
With ``document``, the dictionary then reads the whole split in order (abbreviations defined in
one sentence recognised in the next ones, ``matches_document``) and its entities that the
sentence-by-sentence matches lack are added where the model found nothing
(:func:`~priorkit.decode.steps.add_document_matches`).

The steps themselves, their order and the dictionary's matches -> tags are
:mod:`priorkit.decode.steps` and :mod:`priorkit.decode.dictionary` (a recipe folder and
``priorkit predict`` run the same ones); an arm's steps as data are :func:`arm_steps`.  This module
runs the arms: it reads the kept runs, calls those, scores the tags and writes the arm's files.

An arm with ``mix`` merges no dictionary: it loads the kept models of ``of`` and of the
settings in ``mix`` (same fraction and seed) as one :class:`~priorkit.inference.Ensemble`,
tags every evaluated split with their mixed word log-probabilities and scores the tags the
same way (docs/pipelines.md#mixing-trained-models); its key also holds the mixed runs' eval
keys and the task's decoding.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any, Callable, Iterable, Sequence

from ..config import PipelineConfig, PosthocConfig, digest
from ..decode.dictionary import Dictionary, group_entities
from ..decode.spans import seqeval_entities as entities  # noqa: F401 (the arms' scripts read entities here)
from ..decode.steps import (Decode, DocumentPass, Fragments, Merge, Mix, Step, add_document_matches,  # noqa: F401
                            DICTIONARY_STEPS, after_decode, join_fragments, merge, ordered)
from ..errors import PriorkitError
from ..jsonfile import read_json, write_json
from ..training.data import Split
from ..training.layout import METRICS_FILE
from ..training.plan import RunPlan
from ..training.predictions import read_predictions, write_predictions


def arm_steps(cfg: PipelineConfig, arm: PosthocConfig) -> tuple[Step, ...]:
    """A post-hoc arm's steps, in their one order (:mod:`priorkit.decode.steps`): the mix of ``of``
    and ``mix`` and its decoding, or ``of``'s own tags (the task's decoding) merged with the
    dictionary; then ``fragments`` and the document pass."""
    members = [arm.of, *arm.mix]
    steps: list[Step] = []
    if arm.mix:
        weights = arm.weights if arm.weights is not None else [1.0] * len(members)
        steps.append(Mix(tuple(members), tuple(float(w) for w in weights)))
        steps.append(Decode(arm.decode or cfg.task.decode, float(cfg.task.o_bias if arm.o_bias is None else arm.o_bias)))
    else:
        steps += [Decode(cfg.task.decode, float(cfg.task.o_bias)), Merge(arm.merge)]
    if arm.fragments:
        steps.append(Fragments())
    if arm.document is not None:
        steps.append(DocumentPass(int(arm.document)))
    return ordered(steps, members, True, "sweep.posthoc")


def arm_dictionary(arm: PosthocConfig, drop: Sequence[Sequence[str]] = (),
                   keep: Sequence[Sequence[str]] = ()) -> Dictionary:
    """The arm's dictionary as plain values: its provider, its type map (filled: :func:`typed_arm`)
    and what a calibration dropped and kept."""
    import priorkit

    types = _types_set(arm)
    return Dictionary(priorkit.get_provider(arm.provider, **arm.params), types, drop, keep)


def dictionary_steps(tags: Sequence[Sequence[str]], sentence: Sequence[Sequence[str]], fragments: bool,
                     document: Sequence[Sequence[str]] | None = None) -> list[list[str]]:
    """The steps after a merge or mix (:func:`priorkit.decode.steps.after_decode`): the dictionary
    joins the entities the model split (``fragments``), then its document-level tags add what the
    sentence-level ones (``sentence``) lack (``document``; None: no document pass)."""
    steps = ([Fragments()] if fragments else []) + ([DocumentPass()] if document is not None else [])
    return after_decode(steps, tags, sentence, document)


def document_tags(arm: PosthocConfig, words: Sequence[Sequence[str]], positions: Sequence[int],
                  window: int) -> list[list[str]]:
    """The dictionary's BIO tags of the sentences at ``positions`` of ``words`` (a whole split, in
    order), read as one document: abbreviations carry ``window`` sentences (-1: to the end)."""
    import priorkit

    provider = priorkit.get_provider(arm.provider, **arm.params)
    if not hasattr(provider, "matches_document"):
        raise PriorkitError(f"post-hoc document pass: provider {arm.provider!r} reads one sentence at a time "
                            "(no matches_document); use the ontology provider or set document: null")
    d = Dictionary(provider, _types_set(arm))
    found = d.document_matches(words, window)
    return [group_entities(found[p], len(words[p]), d.types) for p in positions]


def dictionary_tags(arm: PosthocConfig, examples: Sequence[dict], drop: Sequence[Sequence[str]] = (),
                    keep: Sequence[Sequence[str]] = ()) -> list[list[str]]:
    """The dictionary's BIO tags of every sentence (its matches, typed by ``arm.types``); ``drop``
    and ``keep``: what a calibration left out and kept (the ``calibrated`` provider)."""
    d = arm_dictionary(arm, drop, keep)
    words = [list(e["words"]) for e in examples]
    return d.tags(d.sentence_matches(words), words)


def _types_set(arm: PosthocConfig) -> dict[str, str]:
    if arm.types is None:
        raise PriorkitError(f"the dictionary of provider {arm.provider!r} has no type map (match group -> entity "
                            "type); set the arm's types, or fill it from the pipeline with typed_arm(cfg, arm, ...)")
    return dict(arm.types)


def typed_arm(cfg: PipelineConfig, arm: PosthocConfig, field: str, tags: Iterable[str]) -> PosthocConfig:
    """``arm`` with its type map filled in: its own ``types`` (``field``, e.g. ``sweep.posthoc.dict``),
    else the pipeline's ``task.dictionary_types``, else the data's entity types (``data.entity_types``,
    or those of the gold ``tags``) when they are groups of the arm's dictionary; raises otherwise."""
    if arm.types is not None:
        return arm
    import priorkit
    from ..supervision.type_map import entity_types_of, resolve_types

    types = resolve_types(cfg.task.dictionary_types,
                          lambda: priorkit.get_provider(arm.provider, **arm.params).match_groups(),
                          cfg.data.entity_types or entity_types_of(tags),
                          field=f"task.dictionary_types or {field}.types", who=f"{cfg.where(field)}: {field}")
    return dataclasses.replace(arm, types=types)


def posthoc_plans(cfg: PipelineConfig, pairs: Sequence[tuple[float, int]]) -> list[RunPlan]:
    """The run folders of every post-hoc arm at the given (fraction, seed) pairs."""
    return [RunPlan(cfg, name, None, f, s) for f, s in pairs for name in cfg.sweep.posthoc]


#: fields added after the first merge arms: at these values they stay out of an arm's key, so that
#: arms scored before them are not redone
_NEW_DEFAULTS = {"mix": [], "weights": None, "decode": None, "o_bias": None, "fragments": False, "document": None}


def _key(cfg: PipelineConfig, arm: PosthocConfig, base: dict, splits: dict[str, Split],
         mixed: Sequence[dict] = (), types: dict[str, str] | None = None) -> str:
    """The arm's key; ``types``: the type map its null ``types`` was filled with (from the pipeline
    or the data), in the key unless it is the map null meant before (old arms keep their keys)."""
    from ..supervision.type_map import MAP_BEFORE_47

    settings = {k: v for k, v in dataclasses.asdict(arm).items()
                if not (k in _NEW_DEFAULTS and v == _NEW_DEFAULTS[k])}
    key = {"base": base.get("eval_key"), "arm": settings, "splits": {s: splits[s].digest for s in cfg.evaluate}}
    if arm.types is None and types is not None and list(types.items()) != list(MAP_BEFORE_47.items()):
        key["types"] = types
    if arm.document is not None:  # it reads the whole split, not only the sample
        from ..training.data import document_context

        key["context"] = {s: digest(document_context(getattr(cfg.data, s), cfg.where(f"data.{s}"))[0])
                          for s in cfg.evaluate}
    if mixed:
        key["mixed"] = [m.get("eval_key") for m in mixed]
        key["decoding"] = [cfg.task.decode, cfg.task.o_bias]
    return digest(key)


def _dictionary(arm: PosthocConfig, plan: RunPlan, splits: dict[str, Split], split: str,
                matched: dict[tuple, Any]) -> list[list[str]]:
    """The dictionary's tags of ``split`` for ``plan``'s run (after its calibration, when the arm
    has one), from ``matched`` or matched now and kept there (once per split and calibration)."""
    drop, keep = (), ()
    if arm.calibrate is not None:  # once per run
        calibration = ("calibration", str(plan.run_dir))
        if calibration not in matched:
            matched[calibration] = _drop(arm, plan, splits["train"])
        drop, keep = matched[calibration]
    which = (split, tuple(drop), tuple(keep))
    if which not in matched:
        matched[which] = dictionary_tags(arm, splits[split].examples, drop, keep)
    return matched[which]


def split_document_tags(cfg: PipelineConfig, arm: PosthocConfig, split: str, words: Sequence[Sequence[str]],
                        window: int) -> list[list[str]]:
    """:func:`document_tags` of the sentences ``words`` of ``cfg``'s split ``split`` ("eval" /
    "test"): the whole split read in order (before its ``sample``), these sentences kept.  Raises
    when the split no longer gives these sentences."""
    every, positions = split_context(cfg, split, words, "post-hoc document pass")
    return document_tags(arm, every, positions, window)


def split_context(cfg: PipelineConfig, split: str, words: Sequence[Sequence[str]],
                  who: str) -> tuple[list[list[str]], list[int]]:
    """Every sentence of ``cfg``'s split ``split`` in order (before its ``sample``) and the position
    there of each of ``words`` (the sampled sentences); raises, naming ``who``, when the split no
    longer gives these sentences."""
    from ..training.data import document_context

    every, positions = document_context(getattr(cfg.data, split), cfg.where(f"data.{split}"))
    if len(positions) != len(words) or any(every[p] != list(w) for p, w in zip(positions, words)):
        raise PriorkitError(f"{who}: data.{split} no longer gives the sentences the runs were "
                            "scored on; score them again (--force)")
    return every, positions


def _document(cfg: PipelineConfig, arm: PosthocConfig, splits: dict[str, Split], split: str,
              matched: dict[tuple, Any]) -> list[list[str]]:
    """The document pass's tags of ``split``'s examples, read once per arm and split."""
    which = ("document", split)
    if which not in matched:
        words = [e["words"] for e in splits[split].examples]
        matched[which] = split_document_tags(cfg, arm, split, words, arm.document)
    return matched[which]


def _saved_tags(cfg: PipelineConfig, name: str, base_dir: Any, splits: dict[str, Split]) -> dict[str, list[list[str]]]:
    """Each evaluated split's tags as the base run saved them (its predictions, decoded as the task says)."""
    tags = {}
    for split in cfg.evaluate:
        got = read_predictions(base_dir, split)
        if got is None:
            raise PriorkitError(
                f"{base_dir} has no predictions-{split}.jsonl, which post-hoc arm {name!r} merges "
                f"(the run was scored before the evaluate step saved its predictions); score it again: "
                f"keep its model (train.keep_model) and run `priorkit sweep ... --force`, or delete "
                f"the folder to retrain it")
        predicted, gold = got
        examples = splits[split].examples
        if len(predicted) != len(examples) or any(g != list(e["tags"]) for g, e in zip(gold, examples)):
            raise PriorkitError(f"{base_dir}/predictions-{split}.jsonl does not hold the {len(examples)} "
                                f"sentences of split {split!r}; score the run again (--force)")
        tags[split] = [list(p) for p in predicted]
    return tags


def _ensemble(cfg: PipelineConfig, name: str, arm: PosthocConfig, dirs: Sequence[Any]) -> Any:
    """The kept models of ``of`` and ``mix`` as one ensemble, with the arm's decoding."""
    from ..inference import load_ensemble
    from ..training.layout import MODEL_DIR

    for d in dirs:
        if not (d / MODEL_DIR / "config.json").exists():
            raise PriorkitError(f"post-hoc arm {name!r} mixes the saved models of {', '.join([arm.of, *arm.mix])}, and "
                                f"{d} has none; set train.keep_model: true and train it again (--force)")
    return load_ensemble([d / MODEL_DIR for d in dirs], arm.weights, decode=arm.decode or cfg.task.decode,
                         o_bias=cfg.task.o_bias if arm.o_bias is None else arm.o_bias,
                         max_length=cfg.model.max_length)


def _mixed_tags(cfg: PipelineConfig, name: str, arm: PosthocConfig, dirs: Sequence[Any],
                splits: dict[str, Split]) -> dict[str, list[list[str]]]:
    """Each evaluated split's tags from the kept models of ``of`` and ``mix`` mixed word by word."""
    ens = _ensemble(cfg, name, arm, dirs)
    return {split: [r["tags"] for r in ens.predict([list(e["words"]) for e in splits[split].examples])]
            for split in cfg.evaluate}


def run_posthoc(cfg: PipelineConfig, splits: dict[str, Split], pairs: Sequence[tuple[float, int]], *,
                force: bool = False, log: Callable[[str], None] = print) -> None:
    """Merge and score every post-hoc arm at every (fraction, seed); valid outputs are skipped.

    The dictionary matches every evaluated split once per arm (not once per seed).
    """
    from ..metrics import ner_metrics

    mixes: dict[tuple, dict[str, list[list[str]]]] = {}  # arms of one mix (with and without steps after it) mix once
    for name, arm in cfg.sweep.posthoc.items():
        matched: dict[tuple, Any] = {}
        typed = None  # the arm with its type map, filled when a dictionary step needs one
        for fraction, seed in pairs:
            plan = RunPlan(cfg, name, None, fraction, seed)
            base_dir = RunPlan(cfg, arm.of, None, fraction, seed).run_dir
            base = read_json(base_dir / METRICS_FILE)
            if base is None:
                log(f"[{plan.label}] post-hoc: skipped (no scored run of {arm.of!r} in {base_dir})")
                continue
            mixed_dirs = [RunPlan(cfg, m, None, fraction, seed).run_dir for m in arm.mix]
            mixed = [read_json(d / METRICS_FILE) for d in mixed_dirs]
            if any(m is None for m in mixed):
                log(f"[{plan.label}] post-hoc: skipped (no scored run of {', '.join(arm.mix)} to mix in)")
                continue
            steps = arm_steps(cfg, arm)
            if typed is None and any(s.kind in DICTIONARY_STEPS for s in steps):
                typed = typed_arm(cfg, arm, f"sweep.posthoc.{name}",
                                  (t for s in splits.values() for e in s.examples for t in e.get("tags", ())))
            key = _key(cfg, arm, base, splits, mixed, typed.types if typed is not None else None)
            done = read_json(plan.run_dir / METRICS_FILE)
            if done and done.get("posthoc_key") == key and not force:
                log(f"[{plan.label}] post-hoc: skipped (metrics.json is up to date)")
                continue
            if arm.mix:  # mix, decode
                which = (tuple(str(d) for d in (base_dir, *mixed_dirs)), tuple(arm.weights or ()),
                         arm.decode or cfg.task.decode, cfg.task.o_bias if arm.o_bias is None else arm.o_bias)
                if which not in mixes:
                    mixes[which] = _mixed_tags(cfg, name, arm, [base_dir, *mixed_dirs], splits)
                tags = {split: [list(t) for t in ts] for split, ts in mixes[which].items()}
            else:
                tags = _saved_tags(cfg, name, base_dir, splits)
            if typed is not None:  # the dictionary's steps (merge, fragments, document pass), in their order
                tags = {split: after_decode(steps, ts, _dictionary(typed, plan, splits, split, matched),
                                            _document(cfg, typed, splits, split, matched)
                                            if arm.document is not None else None)
                        for split, ts in tags.items()}
            scores = {split: {**ner_metrics([list(e["tags"]) for e in splits[split].examples], t),
                              "examples": float(len(t))} for split, t in tags.items()}
            for split, merged in tags.items():
                write_predictions(plan.run_dir, split, merged, [e["tags"] for e in splits[split].examples])
            write_json(plan.run_dir / METRICS_FILE, _metrics(cfg, plan, arm, base, key, scores))
            main = scores.get(cfg.sweep.split) or next(iter(scores.values()))
            what = (f"mix of {', '.join([arm.of, *arm.mix])}" if arm.mix else f"{arm.merge} of {arm.of}") + (
                ", fragments joined" if arm.fragments else "") + (
                f", document pass ({arm.document} sentences)" if arm.document is not None else "")
            log(f"[{plan.label}] post-hoc {what}: done ({cfg.task.metric} "
                f"{main[cfg.task.metric]:.4f}, {arm.of} {base['metrics'].get(cfg.sweep.split, {}).get(cfg.task.metric, float('nan')):.4f})")


def _drop(arm: PosthocConfig, plan: RunPlan, train: Split) -> tuple[list[tuple[str, ...]], list[tuple[str, str]]]:
    """What a calibration on the run's gold subset leaves out of the merged dictionary, and the
    forms it keeps inside a dropped branch."""
    import priorkit

    from ..supervision.calibration import calibrate
    from ..supervision.silver.checks import task_types

    gold = [train.examples[i] for i in plan.train_indices(len(train))]
    types = task_types(arm.calibrate.types or _types_set(arm), (t for e in gold for t in e["tags"]))
    c = arm.calibrate
    cal = calibrate(priorkit.get_provider(arm.provider, **arm.params), gold, types, c.prior_strength, c.branches)
    return (cal.dropped(c.threshold), cal.kept(c.threshold)) if c.threshold > 0 else ([], [])


def _metrics(cfg: PipelineConfig, plan: RunPlan, arm: PosthocConfig, base: dict, key: str,
             scores: dict[str, Any]) -> dict[str, Any]:
    return {
        "pipeline": cfg.name, "prior": plan.prior_name, "fraction": plan.fraction, "seed": plan.seed,
        "metric": cfg.task.metric,
        "posthoc": {**dataclasses.asdict(arm), "base_run": str(RunPlan(cfg, arm.of, None, plan.fraction,
                                                                         plan.seed).run_dir)},
        "posthoc_key": key,
        "train": {"examples": (base.get("train") or {}).get("examples"), "seconds": 0.0, "steps": 0},
        "splits": base.get("splits"),
        "metrics": scores,
        "prior_usage": None,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }

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
where it split one dictionary entity into pieces (:func:`join_fragments`).  With ``document``,
the dictionary then reads the whole split in order (abbreviations defined in one sentence
recognised in the next ones, ``matches_document``) and its entities that the sentence-by-sentence
matches lack are added where the model found nothing (:func:`add_document_matches`).

An arm with ``mix`` merges no dictionary: it loads the kept models of ``of`` and of the
settings in ``mix`` (same fraction and seed) as one :class:`~priorkit.inference.Ensemble`,
tags every evaluated split with their mixed word log-probabilities and scores the tags the
same way (docs/pipelines.md#mixing-trained-models); its key also holds the mixed runs' eval
keys and the task's decoding.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any, Callable, Sequence

from ..errors import PriorkitError
from ..jsonfile import read_json, write_json
from ..config import PipelineConfig, PosthocConfig, digest
from ..training.data import Split
from ..training.layout import METRICS_FILE
from ..training.plan import RunPlan
from ..training.predictions import read_predictions, write_predictions

Entity = tuple[str, int, int]  # type, first word, last word (inclusive, seqeval's form)


def entities(tags: Sequence[str]) -> list[Entity]:
    from seqeval.metrics.sequence_labeling import get_entities

    return [(t, s, e) for t, s, e in get_entities(list(tags))]


def overlaps(a: Entity, b: Entity) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


def render(ents: Sequence[Entity], n_words: int) -> list[str]:
    """BIO tags of ``n_words`` words holding exactly ``ents`` (non-overlapping)."""
    tags = ["O"] * n_words
    for t, s, e in sorted(ents, key=lambda x: x[1]):
        tags[s] = f"B-{t}"
        for i in range(s + 1, e + 1):
            tags[i] = f"I-{t}"
    return tags


def merge(model: Sequence[str], dictionary: Sequence[str], how: str) -> list[str]:
    """The model's tags merged with the dictionary's (both BIO, one per word), ``union`` or ``override``."""
    if len(model) != len(dictionary):
        raise PriorkitError(f"{len(model)} model tags for {len(dictionary)} dictionary tags")
    m, d = entities(model), entities(dictionary)
    if how == "union":
        kept = m + [x for x in d if not any(overlaps(x, y) for y in m)]
    elif how == "override":
        kept = d + [x for x in m if not any(overlaps(x, y) for y in d)]
    else:
        raise PriorkitError(f"unknown merge {how!r}; choose union or override")
    return render(kept, len(model))


def join_fragments(model: Sequence[str], dictionary: Sequence[str], min_pieces: int = 2) -> list[str]:
    """The model's tags, except where ``min_pieces`` or more of its entities of one type lie inside
    one dictionary entity of that type and none of its entities crosses that entity's edges: there
    the dictionary entity replaces them (a model that split "migraine with aura" into "migraine"
    and "aura" gets the whole term back).  By default one model entity inside a longer dictionary
    entity stays: the annotators' bounds may be the shorter ones ("hypertension" in "essential
    hypertension")."""
    if len(model) != len(dictionary):
        raise PriorkitError(f"{len(model)} model tags for {len(dictionary)} dictionary tags")
    m = entities(model)
    kept = list(m)
    for d in entities(dictionary):
        touching = [x for x in m if overlaps(x, d)]
        inside = [x for x in touching if d[1] <= x[1] and x[2] <= d[2]]
        if len(inside) < max(1, min_pieces) or len(inside) != len(touching) or any(x[0] != d[0] for x in inside):
            continue
        kept = [x for x in kept if x not in inside] + [d]
    return render(kept, len(model))


def add_document_matches(model: Sequence[str], sentence: Sequence[str], document: Sequence[str]) -> list[str]:
    """The model's tags plus the entities of the document-level dictionary tags ``document`` that
    the sentence-level ones (``sentence``) lack, each where no model entity overlaps it."""
    if not len(model) == len(sentence) == len(document):
        raise PriorkitError(f"{len(model)} model tags, {len(sentence)} sentence-level and {len(document)} "
                            "document-level dictionary tags: the same sentence's, please")
    m, known = entities(model), set(entities(sentence))
    extra = [d for d in entities(document) if d not in known and not any(overlaps(d, x) for x in m)]
    return render(m + extra, len(model))


def _surface(words: Sequence[str], s: int, e: int) -> tuple[str, ...]:
    return tuple(w.lower() for w in words[s:e + 1])


def propagate(tags: Sequence[Sequence[str]], words: Sequence[Sequence[str]], window: int,
              share: float = 0.5, *, probs: Sequence[Any] | None = None, labels: Sequence[str] | None = None,
              min_prob: float = 0.0) -> list[list[str]]:
    """The tags of a document's sentences (in order), plus each entity carried to the same words
    (case folded) elsewhere within ``window`` sentences before or after (-1: the whole document),
    where no entity overlaps them: the model's own finds made consistent across a document
    ("PTH" tagged in one sentence and left ``O`` in the next).

    An untagged occurrence gets the type its surface is tagged with most often in its window,
    when the occurrences tagged so make up at least ``share`` of that surface's occurrences there
    that are tagged so or left untagged (the untagged one included; 0: one tagged occurrence
    suffices).  Votes count the tags given, not the ones added; surfaces without a letter and
    one-character ones are never carried.

    With ``probs`` (per sentence, the model's word probabilities over ``labels``: one row a word,
    rows past a truncated sentence's end count as 0) an occurrence is carried only where the model
    itself gave the carried type at least ``min_prob`` on average over its words (``B-`` and ``I-``
    of that type together): a second opinion at the very place, so that a surface tagged by
    mistake elsewhere does not spread where the model saw nothing of it."""
    if len(tags) != len(words) or any(len(t) != len(w) for t, w in zip(tags, words)):
        raise PriorkitError("propagate: one tag per word of every sentence, please")
    if window < -1 or not 0.0 <= share <= 1.0:
        raise PriorkitError(f"propagate: window {window} (>= -1) and share {share} (0-1) out of range")
    if not 0.0 <= min_prob <= 1.0:
        raise PriorkitError(f"propagate: min_prob {min_prob} out of range (0-1)")
    if min_prob > 0 and probs is None:
        raise PriorkitError(f"propagate: min_prob {min_prob} needs the model's word probabilities (probs, labels)")
    type_prob = _type_probabilities(probs, labels, words) if min_prob > 0 else None  # min_prob 0: no gate
    ents = [entities(t) for t in tags]
    typed: dict[tuple[str, ...], list[tuple[int, str]]] = {}  # surface -> (sentence, type) of its entities
    for i, (es, ws) in enumerate(zip(ents, words)):
        for t, s, e in es:
            key = _surface(ws, s, e)
            if len("".join(key)) > 1 and any(c.isalpha() for c in "".join(key)):
                typed.setdefault(key, []).append((i, t))
    if not typed:
        return [list(t) for t in tags]
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for key in typed:
        by_first.setdefault(key[0], []).append(key)
    free: dict[tuple[str, ...], list[tuple[int, int]]] = {}  # surface -> (sentence, start) left untagged
    for i, (es, ws) in enumerate(zip(ents, words)):
        taken = [False] * len(ws)
        for _, s, e in es:
            taken[s:e + 1] = [True] * (e + 1 - s)
        low = [w.lower() for w in ws]
        for j, w in enumerate(low):
            for key in by_first.get(w, ()):
                n = len(key)
                if tuple(low[j:j + n]) == key and not any(taken[j:j + n]):
                    free.setdefault(key, []).append((i, j))
    added: list[list[Entity]] = [[] for _ in tags]
    for key, spots in sorted(free.items(), key=lambda kv: -len(kv[0])):  # the longest surface first
        for i, j in spots:
            near = lambda k: window < 0 or abs(k - i) <= window  # noqa: E731
            counts: dict[str, int] = {}
            for k, t in typed[key]:
                if near(k):
                    counts[t] = counts.get(t, 0) + 1
            if not counts:
                continue
            t = max(sorted(counts), key=counts.get)
            untagged = sum(1 for k, _ in spots if near(k))
            if counts[t] >= share * (counts[t] + untagged):
                if type_prob is not None:
                    if t not in type_prob[i]:
                        raise PriorkitError(f"propagate: the tags have type {t!r}, the probabilities' labels "
                                            f"none (B-{t} / I-{t}); pass the labels of the model that tagged them")
                    if float(type_prob[i][t][j:j + len(key)].mean()) < min_prob:
                        continue
                d = (t, j, j + len(key) - 1)
                if not any(overlaps(d, x) for x in added[i]):
                    added[i].append(d)
    return [render(es + extra, len(t)) for es, extra, t in zip(ents, added, tags)]


def _type_probabilities(probs: Sequence[Any], labels: Sequence[str] | None,
                        words: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """Per sentence, per entity type: each word's probability of ``B-type`` plus ``I-type``."""
    import numpy as np

    if labels is None:
        raise PriorkitError("propagate: probs given without their labels (the tag of each column)")
    if len(probs) != len(words):
        raise PriorkitError(f"propagate: probabilities for {len(probs)} sentences, {len(words)} sentences given")
    types = sorted({lab[2:] for lab in labels if lab[:2] in ("B-", "I-")})
    out = []
    for i, (p, ws) in enumerate(zip(probs, words)):
        p = np.asarray(p, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != len(labels) or p.shape[0] > len(ws):
            raise PriorkitError(f"propagate: sentence {i}: probabilities of shape {p.shape}, expected at most "
                                f"{len(ws)} rows of {len(labels)} labels")
        if not np.isfinite(p).all() or (p < 0).any():
            raise PriorkitError(f"propagate: sentence {i}: probabilities must be finite and >= 0")
        full = np.zeros((len(ws), len(labels)))
        full[: p.shape[0]] = p
        out.append({t: sum(full[:, k] for k, lab in enumerate(labels) if lab in (f"B-{t}", f"I-{t}")) for t in types})
    return out


def dictionary_steps(tags: Sequence[Sequence[str]], sentence: Sequence[Sequence[str]], fragments: bool,
                     document: Sequence[Sequence[str]] | None = None) -> list[list[str]]:
    """A post-hoc arm's steps after its merge or mix, sentence by sentence, in their order: the
    dictionary joins the entities the model split (``fragments``, :func:`join_fragments`), then its
    document-level tags add what the sentence-level ones (``sentence``) lack (``document``,
    :func:`add_document_matches`; None: no document pass)."""
    out = [join_fragments(t, d) if fragments else list(t) for t, d in zip(tags, sentence)]
    if document is not None:
        out = [add_document_matches(t, d, x) for t, d, x in zip(out, sentence, document)]
    return out


def document_tags(arm: PosthocConfig, words: Sequence[Sequence[str]], positions: Sequence[int],
                  window: int) -> list[list[str]]:
    """The dictionary's BIO tags of the sentences at ``positions`` of ``words`` (a whole split, in
    order), read as one document: abbreviations carry ``window`` sentences (-1: to the end)."""
    import priorkit
    from ..supervision.silver.label import BC5CDR_TYPES, group_entities

    provider = priorkit.get_provider(arm.provider, **arm.params)
    if not hasattr(provider, "matches_document"):
        raise PriorkitError(f"post-hoc document pass: provider {arm.provider!r} reads one sentence at a time "
                            "(no matches_document); use the ontology provider or set document: null")
    found = provider.matches_document([list(w) for w in words], window=None if window < 0 else window)
    types = arm.types if arm.types is not None else BC5CDR_TYPES
    return [group_entities(found[p], len(words[p]), types) for p in positions]


def dictionary_tags(arm: PosthocConfig, examples: Sequence[dict], drop: Sequence[Sequence[str]] = (),
                    keep: Sequence[Sequence[str]] = ()) -> list[list[str]]:
    """The dictionary's BIO tags of every sentence (its matches, typed by ``arm.types``); ``drop``
    and ``keep``: what a calibration left out and kept (the ``calibrated`` provider)."""
    import priorkit
    from ..supervision.silver.label import BC5CDR_TYPES, group_entities

    provider = priorkit.get_provider(arm.provider, **arm.params)
    if drop:
        provider = priorkit.get_provider("calibrated", provider=provider, drop=[list(d) for d in drop],
                                         keep=[list(k) for k in keep])
    types = arm.types if arm.types is not None else BC5CDR_TYPES
    return [group_entities(provider.matches(list(e["words"])), len(e["words"]), types) for e in examples]


def posthoc_plans(cfg: PipelineConfig, pairs: Sequence[tuple[float, int]]) -> list[RunPlan]:
    """The run folders of every post-hoc arm at the given (fraction, seed) pairs."""
    return [RunPlan(cfg, name, None, f, s) for f, s in pairs for name in cfg.sweep.posthoc]


#: fields added after the first merge arms: at these values they stay out of an arm's key, so that
#: arms scored before them are not redone
_NEW_DEFAULTS = {"mix": [], "weights": None, "decode": None, "o_bias": None, "fragments": False, "document": None,
                 "propagate": None, "share": 0.5}


def _key(cfg: PipelineConfig, arm: PosthocConfig, base: dict, splits: dict[str, Split],
         mixed: Sequence[dict] = ()) -> str:
    settings = {k: v for k, v in dataclasses.asdict(arm).items()
                if not (k in _NEW_DEFAULTS and v == _NEW_DEFAULTS[k])}
    key = {"base": base.get("eval_key"), "arm": settings, "splits": {s: splits[s].digest for s in cfg.evaluate}}
    if arm.document is not None or arm.propagate is not None:  # these read the whole split, not only the sample
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


def _merged_tags(cfg: PipelineConfig, name: str, arm: PosthocConfig, plan: RunPlan, base_dir: Any,
                 splits: dict[str, Split], matched: dict[tuple, Any]) -> dict[str, list[list[str]]]:
    """Each evaluated split's tags: the base run's saved predictions merged with the dictionary's
    matches (``matched``: the dictionary's tags per split and calibration, filled once per arm)."""
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
        tags[split] = [merge(p, d, arm.merge) for p, d in zip(predicted, _dictionary(arm, plan, splits, split, matched))]
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


def _context_tags(cfg: PipelineConfig, name: str, arm: PosthocConfig, dirs: Sequence[Any],
                  splits: dict[str, Split]) -> dict[str, list[list[str]]]:
    """An arm with ``propagate``: the mixed models tag every sentence of each evaluated split in
    order (before its ``sample``), the dictionary's steps follow (:func:`dictionary_steps`), the
    model's finds are carried across the split (:func:`propagate`), and the sampled sentences' tags
    are returned."""
    ens = _ensemble(cfg, name, arm, dirs)
    out = {}
    for split in cfg.evaluate:
        every, positions = split_context(cfg, split, [e["words"] for e in splits[split].examples],
                                         f"post-hoc arm {name!r}")
        tags = [r["tags"] for r in ens.predict(every)]
        if arm.fragments or arm.document is not None:
            sentence = dictionary_tags(arm, [{"words": w} for w in every])
            document = (document_tags(arm, every, range(len(every)), arm.document)
                        if arm.document is not None else None)
            tags = dictionary_steps(tags, sentence, arm.fragments, document)
        tags = propagate(tags, every, arm.propagate, arm.share)
        out[split] = [tags[p] for p in positions]
    return out


def run_posthoc(cfg: PipelineConfig, splits: dict[str, Split], pairs: Sequence[tuple[float, int]], *,
                force: bool = False, log: Callable[[str], None] = print) -> None:
    """Merge and score every post-hoc arm at every (fraction, seed); valid outputs are skipped.

    The dictionary matches every evaluated split once per arm (not once per seed).
    """
    from ..metrics import ner_metrics

    for name, arm in cfg.sweep.posthoc.items():
        matched: dict[tuple, Any] = {}
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
            key = _key(cfg, arm, base, splits, mixed)
            done = read_json(plan.run_dir / METRICS_FILE)
            if done and done.get("posthoc_key") == key and not force:
                log(f"[{plan.label}] post-hoc: skipped (metrics.json is up to date)")
                continue
            if arm.propagate is not None:  # the dictionary's steps included, on the whole split
                tags = _context_tags(cfg, name, arm, [base_dir, *mixed_dirs], splits)
            else:
                tags = (_mixed_tags(cfg, name, arm, [base_dir, *mixed_dirs], splits) if arm.mix
                        else _merged_tags(cfg, name, arm, plan, base_dir, splits, matched))
            if arm.propagate is None and (arm.fragments or arm.document is not None):
                tags = {split: dictionary_steps(
                    ts, _dictionary(arm, plan, splits, split, matched), arm.fragments,
                    _document(cfg, arm, splits, split, matched) if arm.document is not None else None)
                    for split, ts in tags.items()}
            scores = {split: {**ner_metrics([list(e["tags"]) for e in splits[split].examples], t),
                              "examples": float(len(t))} for split, t in tags.items()}
            for split, merged in tags.items():
                write_predictions(plan.run_dir, split, merged, [e["tags"] for e in splits[split].examples])
            write_json(plan.run_dir / METRICS_FILE, _metrics(cfg, plan, arm, base, key, scores))
            main = scores.get(cfg.sweep.split) or next(iter(scores.values()))
            what = (f"mix of {', '.join([arm.of, *arm.mix])}" if arm.mix else f"{arm.merge} of {arm.of}") + (
                ", fragments joined" if arm.fragments else "") + (
                f", document pass ({arm.document} sentences)" if arm.document is not None else "") + (
                f", finds carried {arm.propagate} sentences (share {arm.share:g})" if arm.propagate is not None else "")
            log(f"[{plan.label}] post-hoc {what}: done ({cfg.task.metric} "
                f"{main[cfg.task.metric]:.4f}, {arm.of} {base['metrics'].get(cfg.sweep.split, {}).get(cfg.task.metric, float('nan')):.4f})")


def _drop(arm: PosthocConfig, plan: RunPlan, train: Split) -> tuple[list[tuple[str, ...]], list[tuple[str, str]]]:
    """What a calibration on the run's gold subset leaves out of the merged dictionary, and the
    forms it keeps inside a dropped branch."""
    import priorkit

    from ..supervision.calibration import calibrate
    from ..supervision.silver.checks import task_types
    from ..supervision.silver.label import BC5CDR_TYPES

    gold = [train.examples[i] for i in plan.train_indices(len(train))]
    types = task_types(arm.calibrate.types or arm.types or BC5CDR_TYPES, (t for e in gold for t in e["tags"]))
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

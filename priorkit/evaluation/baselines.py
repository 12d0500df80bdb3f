"""The baselines every token-classification sweep reports beside its arms (issue 48), computed
like the arms, on the same sentences, per seed, so that the paired Δ and its CIs against them come
out of the same table code (:mod:`priorkit.evaluation.curve`, :func:`priorkit.stats.paired`):

* ``dictionary-alone``: the sweep's dictionary (``sweep.dictionary`` or the file prior's
  provider) as it is, each match an entity;
* ``dictionary-calibrated``: the same dictionary calibrated on each run's own gold subset exactly
  as a calibrated setting of the sweep calibrates it (:func:`priorkit.training.calibrate_stage.calibration_of`:
  its threshold, branches, prior strength and type map), so it differs by seed as the recipe's
  features do; one per distinct calibration, named ``dictionary-calibrated-<setting>`` when there
  are several;
* ``<each of those>-doc``: read as a document the way a post-hoc arm's document pass reads it
  (``matches_document`` over the whole split with the arm's window, the arm's dictionary): its
  entities that the sentence-level matches lack are added where the dictionary alone found none;
* ``<baseline>-as-<arm>``: the baseline setting's kept models (no knowledge) decoded like a
  post-hoc mix arm whose decoding (``decode`` / ``o_bias``) differs from the task's;
* a sweep setting that is self-training without knowledge (``self-training-no-knowledge``) is
  trained like any setting; it is listed here so that the comparisons below include it.

Each computed baseline writes ``metrics.json`` and ``predictions-<split>.jsonl`` in
``runs/<name>/<baseline>/frac<F>/seed<S>/`` (skipped while its ``baseline_key`` holds), so the
results table, the sentence bootstrap and a final read on test treat it as an arm.
:func:`comparisons_section` is results.md's "Against the baselines"; :func:`few_entities` names
the runs that predict no entity, or fewer than a third of the dictionary's.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import PipelineConfig, PosthocConfig, digest, for_fraction, prior_settings
from ..jsonfile import read_json, write_json
from ..training.data import Split
from ..training.layout import METRICS_FILE, MODEL_DIR
from ..training.plan import RunPlan, prior_fields
from ..training.predictions import read_predictions, write_predictions

DICTIONARY = "dictionary-alone"
CALIBRATED = "dictionary-calibrated"
DOCUMENT = "-doc"
CSV_FILE = "results-baselines.csv"
#: a run that predicts fewer entities than this share of the dictionary's is named in the report
FEW_ENTITIES = 1 / 3


@dataclasses.dataclass(frozen=True)
class Baseline:
    """One baseline of a sweep (module doc).  ``kind``: "dictionary" (computed from the
    dictionary), "decoded" (a kept model decoded again) or "trained" (a setting of the sweep)."""

    name: str
    kind: str
    what: str
    calibrated_as: str | None = None  # dictionary: the setting whose calibration it copies
    document: str | None = None  # dictionary: the post-hoc arm whose document pass it reads like
    arm: str | None = None  # decoded: the post-hoc arm whose decoding it copies
    decode: str | None = None
    o_bias: float | None = None


def is_no_knowledge_self_training(prior: Any) -> bool:
    """Self-training whose teacher and student see no dictionary: no channel, no calibration,
    silver labels from a teacher alone (``teacher.dictionary: false``)."""
    silver = getattr(prior, "silver", None)
    return (prior is not None and silver is not None and silver.teacher is not None and not silver.uses_dictionary
            and prior.features is None and prior.attention is None and not prior.channels)


def baselines(cfg: PipelineConfig) -> list[Baseline]:
    """The sweep's baselines (none for a task other than token classification).  A computed
    baseline whose name is a setting or post-hoc arm of the sweep is left out: the user's wins."""
    if cfg.task.type != "token-classification":
        return []
    from .dictionary_report import dictionary_of

    settings = prior_settings(cfg)
    docs = {}  # window -> the first post-hoc arm reading the dictionary as a document with it
    for name, arm in cfg.sweep.posthoc.items():
        if arm.document is not None:
            docs.setdefault(arm.document, name)
    out: list[Baseline] = []
    bases: list[tuple[str, str | None, str]] = []
    if dictionary_of(cfg) is not None:
        bases.append((DICTIONARY, None, "the dictionary alone, as it is"))
    calibrations: dict[str, list[str]] = {}
    for name, prior in settings.items():
        if prior is not None and prior.calibrate is not None:
            key = digest([prior.provider, prior.params, dataclasses.asdict(prior.calibrate),
                          prior.silver.types if prior.silver is not None else None])
            calibrations.setdefault(key, []).append(name)
    for names in calibrations.values():
        label = CALIBRATED if len(calibrations) == 1 else f"{CALIBRATED}-{names[0]}"
        bases.append((label, names[0], f"the dictionary alone, calibrated on each run's gold subset as "
                                       f"{', '.join(names)} calibrate it"))
    for label, setting, what in bases:
        out.append(Baseline(label, "dictionary", what, calibrated_as=setting))
        for window, arm in docs.items():
            suffix = DOCUMENT if len(docs) == 1 else f"{DOCUMENT}{window}"
            out.append(Baseline(label + suffix, "dictionary", f"{what}, read as a document like {arm} "
                                f"(window {window})", calibrated_as=setting, document=arm))
    for name, arm in cfg.sweep.posthoc.items():  # a mix decoded otherwise than the task: the baseline so too
        decode = arm.decode or cfg.task.decode
        o_bias = cfg.task.o_bias if arm.o_bias is None else arm.o_bias
        if arm.mix and (decode, o_bias) != (cfg.task.decode, cfg.task.o_bias):
            out.append(Baseline(f"{cfg.sweep.baseline}-as-{name}", "decoded",
                                f"{cfg.sweep.baseline}'s kept models decoded like {name} ({decode}, O bias "
                                f"{o_bias:g})", arm=name, decode=decode, o_bias=o_bias))
    taken = set(settings) | set(cfg.sweep.posthoc)
    out = [b for b in out if b.name not in taken]
    out += [Baseline(name, "trained", "self-training without knowledge (a teacher trained on the gold alone)")
            for name, prior in settings.items() if is_no_knowledge_self_training(prior)]
    return out


def computed(cfg: PipelineConfig) -> list[Baseline]:
    return [b for b in baselines(cfg) if b.kind != "trained"]


def baseline_plans(cfg: PipelineConfig, pairs: Sequence[tuple[float, int]]) -> list[RunPlan]:
    """The run folders of every computed baseline at the given (fraction, seed) pairs."""
    return [RunPlan(cfg, b.name, None, f, s) for f, s in pairs for b in computed(cfg)]


# ---- computing them ---------------------------------------------------------------------------
def _gold_tags(examples: Sequence[dict]) -> list[list[str]]:
    return [list(e["tags"]) for e in examples]


def _calibrated_tags(cfg: PipelineConfig, b: Baseline, fraction: float, seed: int, splits: dict[str, Split],
                     split: str, memo: dict) -> tuple[list[list[str]], dict]:
    """The calibrated dictionary's tags of ``split`` for the run of ``b.calibrated_as`` at
    (fraction, seed), and what the calibration dropped and kept."""
    import priorkit

    from ..supervision.silver.label import group_entities
    from ..training.calibrate_stage import calibration_of
    from ..training.tasks import make_task

    prior = prior_settings(cfg)[b.calibrated_as]
    plan = RunPlan(for_fraction(cfg, fraction, prior), b.calibrated_as, prior, fraction, seed)
    which = ("calibration", b.calibrated_as, fraction, seed)
    if which not in memo:
        task = make_task(cfg.task)
        task.fit_labels(splits["train"].examples)
        _, _, drop, keep, types = calibration_of(plan, splits, task.labels)
        memo[which] = ([list(d) for d in drop], [list(k) for k in keep], types)
    drop, keep, types = memo[which]
    provider = priorkit.get_provider(prior.provider, **(prior.params or {}))
    if drop:
        provider = priorkit.get_provider("calibrated", provider=provider, drop=drop, keep=keep)
    tags = [group_entities(provider.matches(list(e["words"])), len(e["words"]), types)
            for e in splits[split].examples]
    return tags, {"dropped": len(drop), "kept": len(keep), "types": types}


def _document_pass(cfg: PipelineConfig, arm_name: str, splits: dict[str, Split], split: str, memo: dict
                   ) -> tuple[list[list[str]], list[list[str]]]:
    """(the post-hoc arm's sentence-level dictionary tags, its document-level ones) of ``split``."""
    which = ("document", arm_name, split)
    if which not in memo:
        from .posthoc import dictionary_tags, split_document_tags, typed_arm

        examples = splits[split].examples
        arm = typed_arm(cfg, cfg.sweep.posthoc[arm_name], f"sweep.posthoc.{arm_name}",
                        (t for e in examples for t in e["tags"]))
        words = [e["words"] for e in examples]
        memo[which] = (dictionary_tags(arm, examples), split_document_tags(cfg, arm, split, words, arm.document))
    return memo[which]


def _dictionary_tags(cfg: PipelineConfig, b: Baseline, fraction: float, seed: int, splits: dict[str, Split],
                     split: str, memo: dict) -> tuple[list[list[str]], dict]:
    if b.calibrated_as is not None:
        tags, info = _calibrated_tags(cfg, b, fraction, seed, splits, split, memo)
    else:
        which = ("dictionary", split)
        if which not in memo:
            from .dictionary_report import dictionary_of, dictionary_split_tags

            examples = splits[split].examples
            memo[which] = dictionary_split_tags(dictionary_of(cfg), [e["words"] for e in examples],
                                                _gold_tags(examples))
        tags, info = memo[which], {}
    if b.document is not None:
        from .posthoc import dictionary_steps

        sentence, document = _document_pass(cfg, b.document, splits, split, memo)
        tags = dictionary_steps(tags, sentence, False, document)
    return tags, info


def _decoded_tags(cfg: PipelineConfig, b: Baseline, fraction: float, seed: int, splits: dict[str, Split]
                  ) -> dict[str, list[list[str]]] | None:
    """The baseline setting's kept model at (fraction, seed) decoded like ``b.arm`` (None: no
    kept model)."""
    from ..inference import load_model

    folder = RunPlan(cfg, cfg.sweep.baseline, None, fraction, seed).run_dir / MODEL_DIR
    if not (folder / "config.json").exists():
        return None
    model = load_model(folder, decode=b.decode, o_bias=b.o_bias, max_length=cfg.model.max_length)
    return {split: [r["tags"] for r in model.predict([list(e["words"]) for e in splits[split].examples])]
            for split in cfg.evaluate}


def _key(cfg: PipelineConfig, b: Baseline, fraction: float, seed: int, splits: dict[str, Split],
         base: dict | None) -> str:
    key: dict[str, Any] = {"baseline": dataclasses.asdict(b), "splits": {s: splits[s].digest for s in cfg.evaluate}}
    if b.kind == "dictionary":
        from .dictionary_report import dictionary_of

        d = dictionary_of(cfg)
        key["dictionary"] = dataclasses.asdict(d) if d is not None else None
        if b.calibrated_as is not None:
            prior = prior_settings(cfg)[b.calibrated_as]
            plan = RunPlan(for_fraction(cfg, fraction, prior), b.calibrated_as, prior, fraction, seed)
            idx = plan.train_indices(len(splits["train"]))
            key["calibration"] = [prior_fields(prior, cfg), splits["train"].digest, digest(idx.tolist())]
        if b.document is not None:
            from ..training.data import document_context

            key["document"] = dataclasses.asdict(cfg.sweep.posthoc[b.document])
            key["context"] = {s: digest(document_context(getattr(cfg.data, s), cfg.where(f"data.{s}"))[0])
                              for s in cfg.evaluate}
    else:
        key["base"] = (base or {}).get("eval_key")
    return digest(key)


def run_baselines(cfg: PipelineConfig, splits: dict[str, Split], pairs: Sequence[tuple[float, int]], *,
                  force: bool = False, log: Callable[[str], None] = print) -> None:
    """Score every computed baseline at every (fraction, seed); valid outputs are skipped."""
    from ..metrics import ner_metrics

    memo: dict = {}
    for b in computed(cfg):
        for fraction, seed in pairs:
            plan = RunPlan(cfg, b.name, None, fraction, seed)
            label = f"[{plan.label}] baseline"
            base = None
            if b.kind == "decoded":
                base = read_json(RunPlan(cfg, cfg.sweep.baseline, None, fraction, seed).run_dir / METRICS_FILE)
                if base is None:
                    log(f"{label}: skipped (no scored run of {cfg.sweep.baseline!r} yet)")
                    continue
            key = _key(cfg, b, fraction, seed, splits, base)
            done = read_json(plan.run_dir / METRICS_FILE)
            if done and done.get("baseline_key") == key and not force:
                log(f"{label}: skipped (metrics.json is up to date)")
                continue
            info: dict = {}
            if b.kind == "decoded":
                tags = _decoded_tags(cfg, b, fraction, seed, splits)
                if tags is None:
                    log(f"{label}: skipped ({cfg.sweep.baseline!r} kept no model at fraction {fraction:g} seed "
                        f"{seed}; set train.keep_model: true to decode it like {b.arm})")
                    continue
            else:
                tags = {}
                for split in cfg.evaluate:
                    tags[split], info = _dictionary_tags(cfg, b, fraction, seed, splits, split, memo)
            scores = {split: {**ner_metrics(_gold_tags(splits[split].examples), t), "examples": float(len(t))}
                      for split, t in tags.items()}
            for split, t in tags.items():
                write_predictions(plan.run_dir, split, t, [e["tags"] for e in splits[split].examples])
            write_json(plan.run_dir / METRICS_FILE, {
                "pipeline": cfg.name, "prior": b.name, "fraction": fraction, "seed": seed,
                "metric": cfg.task.metric, "baseline": {**dataclasses.asdict(b), **info}, "baseline_key": key,
                "train": {"examples": None, "seconds": 0.0, "steps": 0},
                "splits": {s: {"origin": splits[s].origin, "examples": len(splits[s]), "digest": splits[s].digest}
                           for s in cfg.evaluate},
                "metrics": scores, "prior_usage": None,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            })
            main = scores.get(cfg.sweep.split) or next(iter(scores.values()))
            log(f"{label} ({b.what}): done ({cfg.task.metric} {main[cfg.task.metric]:.4f})")


# ---- reporting --------------------------------------------------------------------------------
def comparisons(cfg: PipelineConfig, rows: Sequence[dict[str, Any]]) -> list[Any]:
    """Per fraction: every arm of the sweep (its settings but the baseline, its post-hoc arms)
    against every baseline it stands beside, paired by seed (:class:`priorkit.evaluation.curve.Comparison`).
    A decoded baseline stands beside its own arm only."""
    from . import curve

    column = f"{cfg.sweep.split}_{cfg.task.metric}"
    scores = curve.score_table(rows, column)
    bs = baselines(cfg)
    names = {b.name for b in bs}
    arms = [a for a in [*prior_settings(cfg), *cfg.sweep.posthoc] if a not in names and a != cfg.sweep.baseline]
    out = []
    for f in cfg.sweep.fractions:
        for arm in arms:
            for b in bs:
                if b.kind == "decoded" and b.arm != arm:
                    continue
                c = curve.compare(scores, arm, b.name, float(f))
                if c is not None:
                    out.append(c)
    return out


def comparisons_section(cfg: PipelineConfig, rows: Sequence[dict[str, Any]], folder: Path,
                        cache: dict | None = None) -> tuple[str, Path | None]:
    """results.md's "Against the baselines" (each arm's paired Δ against each baseline, both CIs)
    and ``results-baselines.csv``; ("", None) without baselines or paired runs."""
    from . import curve
    from ..training.predictions import sentence_ci

    comps = comparisons(cfg, rows)
    if not comps:
        return "", None
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    cache = {} if cache is None else cache
    cis = [sentence_ci([(RunPlan(cfg, c.setting, None, c.fraction, s).run_dir,
                         RunPlan(cfg, c.reference, None, c.fraction, s).run_dir) for s in c.seeds],
                       cfg.sweep.split, cfg.task.metric, cache) for c in comps]
    shown = ["" if ci is None else f"[{ci[0] * scale:+.2f}, {ci[1] * scale:+.2f}]" for ci in cis]
    what = "".join(f"- `{b.name}`: {b.what}\n" for b in baselines(cfg))
    note = ("Every arm against every baseline it stands beside, paired by seed on the same sentences "
            f"({cfg.sweep.split}); the second CI also resamples the sentences.\n\n" + what)
    text = curve.markdown(comps, "Against the baselines", note, scale, {"95% CI (sent.+seeds)": shown})
    path = curve.write_csv(comps, folder / CSV_FILE, {"ci_low_sentences": [ci[0] if ci else "" for ci in cis],
                                                      "ci_high_sentences": [ci[1] if ci else "" for ci in cis]})
    return "\n" + text.replace("# Against the baselines", "## Against the baselines", 1), path


def _count(tags: Sequence[Sequence[str]]) -> int:
    from seqeval.metrics.sequence_labeling import get_entities

    return sum(len(get_entities(list(t))) for t in tags)


def few_entities(cfg: PipelineConfig, rows: Sequence[dict[str, Any]],
                 words: Sequence[Sequence[str]] | None = None) -> list[str]:
    """One line per (arm, fraction) with runs that predict no entity on ``sweep.split``, or fewer
    than a third of the entities the dictionary alone finds on the same sentences: a run that did
    not learn (too few epochs, a learning rate too high ...), whose score says nothing about
    knowledge.  ``words``: the split's sentences (default: read from the pipeline's data)."""
    if cfg.task.type != "token-classification":
        return []
    split = cfg.sweep.split
    skip = {b.name for b in computed(cfg) if b.kind == "dictionary"}
    runs: dict[tuple[str, float], list[tuple[int, int]]] = {}
    gold = None
    for r in rows:
        if r["prior"] in skip or not r.get("run_dir"):
            continue
        got = read_predictions(Path(r["run_dir"]), split)
        if got is None:
            continue
        gold = got[1] if gold is None else gold
        runs.setdefault((r["prior"], float(r["fraction"])), []).append((int(r["seed"]), _count(got[0])))
    if not runs:
        return []
    found = None
    from .dictionary_report import dictionary_of, dictionary_split_tags

    arm = dictionary_of(cfg)
    if arm is not None:
        if words is None:
            from ..training.data import load_data

            words = [e["words"] for e in load_data(cfg)["eval" if split == "eval" else "test"].examples]
        if len(words) == len(gold):
            found = _count(dictionary_split_tags(arm, words, gold))
    out = []
    for (name, fraction), counts in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        low = [(s, n) for s, n in sorted(counts) if n == 0 or (found and n < FEW_ENTITIES * found)]
        if not low:
            continue
        which = ", ".join(f"seed {s}: {n}" for s, n in low)
        if all(n == 0 for _, n in low):
            what = "predicts no entity at all"
        else:
            what = "predicts fewer than a third of the dictionary's entities"
        ref = f" (the dictionary alone finds {found})" if found else ""
        out.append(f"few entities: {name} at fraction {fraction:g} {what} on {split} in {len(low)} of "
                   f"{len(counts)} runs ({which}){ref}: it has not learned the task, and its score says nothing "
                   "about knowledge; check its training (epochs, learning rate; train_log.json)")
    return out

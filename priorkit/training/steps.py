"""The steps of a pipeline -- precompute, train, evaluate, report -- each skipping valid work.

Validity is decided by keys, not by file dates:

- precompute: a marker ``cache/precompute-<key>.json`` for (builder description,
  data digests), and the cache file still holding the provider's pairs;
- train: ``model/priorkit.json``'s ``run`` record carries the run's *train key* (a hash of
  the model, task, prior setting, training settings, seed and the exact
  training subset); interrupted training resumes from ``checkpoints/`` when
  ``run.json`` has the same key;
- evaluate: ``metrics.json`` carries the train key and an *eval key* (train key
  plus the evaluated splits' digests).

A folder made with other settings is never silently reused or overwritten:
the step stops and says so, unless ``force`` is given.

Under a multi-process launcher (torchrun, accelerate launch) every process runs
these steps; the decisions and every file write happen on the main process
only, and the others wait for its answer (:mod:`priorkit.training.ranks`).
Only training and evaluation run in every process.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import PriorkitError
from ..jsonfile import read_json, write_json
from . import ranks
from ..config import PipelineConfig, PriorConfig, digest
from .data import Split, load_data
from .plan import METRICS_FILE, MODEL_DIR, RUN_FILE, RunPlan, plan_for_run
from .train import evaluate_run, load_run_model, run_task, train_run
from .wiring import cache_path, configure_torch, make_builder

STEPS = ("precompute", "train", "evaluate", "report")


@dataclasses.dataclass
class StepOutcome:
    step: str
    status: str  # "done", "skipped", "resumed", "n/a"
    seconds: float = 0.0
    detail: str = ""


Log = Callable[[str], None]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_read_json, _write_json = read_json, write_json  # the names this module's callers use


# ---------------------------------------------------------------------------
# precompute
# ---------------------------------------------------------------------------
def precompute_step(cfg: PipelineConfig, name: str, prior: PriorConfig | None, splits: dict[str, Split], *,
                    force: bool = False, log: Log = print) -> StepOutcome:
    """Fill the prior cache with every word pair the splits need (once per setting).

    With several processes only the main one writes the cache (DuckDB has one
    writer); the others wait, then open it read-only for training.
    """
    return ranks.on_main(_precompute, cfg, name, prior, splits, force=force, log=log)


def _precompute(cfg: PipelineConfig, name: str, prior: PriorConfig | None, splits: dict[str, Split], *,
                force: bool, log: Log) -> StepOutcome:
    path = cache_path(cfg, prior)
    if prior is None or path is None or prior.attention is None:
        detail = "no prior" if prior is None else "prior.cache is null" if path is None else "no attention prior"
        return StepOutcome("precompute", "n/a", detail=detail)
    from transformers import AutoTokenizer

    from ..cache import PriorCache
    from ..precompute import base_provider, make_engine, run_precompute
    from .wiring import model_source

    tokenizer = AutoTokenizer.from_pretrained(model_source(cfg))
    builder = make_builder(cfg, prior, tokenizer, use_cache=False)
    desc = builder.describe()
    desc.pop("tokenizer_kwargs", None)  # truncation does not change which word pairs exist
    key = digest({"builder": desc, "data": {s: splits[s].digest for s in sorted(splits)}})
    marker = path.parent / f"precompute-{key}.json"
    fp = base_provider(builder).fingerprint
    done = _read_json(marker)
    if done and not force and path.exists():
        try:
            have = PriorCache(path, read_only=True).count(fp)
        except PriorkitError:
            have = -1
        if have >= done.get("pairs", 0):
            return StepOutcome("precompute", "skipped", detail=f"{name}: {have:,} pairs already in {path}")
    t0 = time.perf_counter()
    examples = [e for s in sorted(splits) for e in splits[s].examples]
    inputs = [(e["words"], None) if "words" in e else (e["text_a"], e.get("text_b")) for e in examples]
    cache = PriorCache(path)
    engine = make_engine(cfg.engine.type, **cfg.engine.engine_options())
    summary = run_precompute(inputs, builder, cache, engine, progress=cfg.train.progress,
                             run_info={"dataset": f"pipeline {cfg.name}", "layout": builder.layout})
    _write_json(marker, {**summary.as_dict(), "prior": name, "key": key, "created": _now()})
    return StepOutcome("precompute", "done", time.perf_counter() - t0,
                       f"{name}: {summary.pairs:,} pairs ({summary.new:,} new) in {summary.seconds:.1f}s")


# ---------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------
def metrics_valid(plan: RunPlan, splits: dict[str, Split]) -> dict | None:
    """``metrics.json`` if it was made from this run's settings and data, else None."""
    m = _read_json(plan.run_dir / METRICS_FILE)
    if not m:
        return None
    key = plan.train_key(splits["train"])
    if m.get("train_key") != key or m.get("eval_key") != plan.eval_key(key, splits):
        return None
    return m


def model_valid(plan: RunPlan, key: str) -> bool:
    from ..inference.manifest import trained_with

    return trained_with(plan.run_dir / MODEL_DIR, key)


def _claim_run_dir(plan: RunPlan, key: str, force: bool) -> bool:
    """Make sure the run folder belongs to this key; returns whether a resume is possible."""
    run_file = plan.run_dir / RUN_FILE
    info = _read_json(run_file)
    if info is not None and info.get("train_key") != key:
        if not force:
            raise PriorkitError(
                f"{plan.run_dir} holds a run made with other settings (train key {info.get('train_key')} "
                f"vs {key}: model, task, prior, training settings, number of processes, seed or data changed). Delete the folder, "
                "choose another output_dir, or pass --force to retrain there."
            )
        shutil.rmtree(plan.run_dir)
        info = None
    elif info is not None and force:
        shutil.rmtree(plan.run_dir)
        info = None
    if info is None:
        _write_json(run_file, {
            "train_key": key, "pipeline": plan.cfg.name, "prior_name": plan.prior_name,
            "fraction": plan.fraction, "seed": plan.seed, "created": _now(),
        })
        (plan.run_dir / "config.yaml").write_text(_run_config_yaml(plan))
        return False
    return True


def _run_config_yaml(plan: RunPlan) -> str:
    import yaml

    d = plan.cfg.to_dict()
    d["prior"] = dataclasses.asdict(plan.prior) if plan.prior is not None else None
    d["train"]["fraction"] = plan.fraction
    d["train"]["seed"] = plan.seed
    d.pop("sweep", None)
    return ("# the settings of this run (priorkit pipeline "
            f"{plan.cfg.name}: {plan.label})\n") + yaml.safe_dump(d, sort_keys=False)


def _prepare_train(plan: RunPlan, splits: dict[str, Split], force: bool) -> StepOutcome | bool:
    """A "skipped" outcome, or whether training resumes (the run folder is claimed)."""
    key = plan.train_key(splits["train"])
    if not force and metrics_valid(plan, splits) is not None:
        return StepOutcome("train", "skipped", detail="metrics.json is up to date")
    if not force and model_valid(plan, key):
        return StepOutcome("train", "skipped", detail=f"model in {plan.run_dir / MODEL_DIR}")
    resumable = _claim_run_dir(plan, key, force)
    from .train import last_checkpoint

    return resumable and last_checkpoint(plan.run_dir) is not None


def train_step(plan: RunPlan, splits: dict[str, Split], *, force: bool = False,
               callbacks: Sequence[Any] = ()) -> StepOutcome:
    resume = ranks.on_main(_prepare_train, plan, splits, force)  # one decision for every process
    if isinstance(resume, StepOutcome):
        return resume
    t0 = time.perf_counter()
    summary = train_run(plan, splits, resume=resume, callbacks=callbacks)
    status = "resumed" if summary["resumed_from"] else "done"
    return StepOutcome("train", status, time.perf_counter() - t0,
                       f"{summary['examples']} examples, {summary['steps']} steps, loss {summary['train_loss']:.4f}"
                       + (f", resumed from {summary['resumed_from']}" if summary["resumed_from"] else ""))


# ---------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------
def _prepare_evaluate(plan: RunPlan, splits: dict[str, Split], force: bool) -> StepOutcome | None:
    if not force and metrics_valid(plan, splits) is not None:
        return StepOutcome("evaluate", "skipped", detail="metrics.json is up to date")
    if not model_valid(plan, plan.train_key(splits["train"])):
        raise PriorkitError(f"{plan.run_dir}: no trained model for these settings; run the train step first")
    return None


def evaluate_step(plan: RunPlan, splits: dict[str, Split], *, force: bool = False) -> StepOutcome:
    """Score the saved model; with several processes each scores a shard and the main one writes."""
    skipped = ranks.on_main(_prepare_evaluate, plan, splits, force)
    if skipped is not None:
        return skipped
    t0 = time.perf_counter()
    model = load_run_model(plan)  # priorkit.load_model: the one loader
    task = run_task(plan.cfg, model.labels)
    tags: dict[str, list[list[str]]] = {}  # token classification: each split's predicted tags
    scores = evaluate_run(plan, splits, model=model, task=task, tags=tags)  # the Trainer gathers every process's predictions
    usage = ranks.on_main(_prior_usage, plan, splits, model, task)
    ranks.on_main(_write_predictions, plan, splits, tags)
    return ranks.on_main(_write_metrics, plan, splits, scores, t0, usage)


def _write_predictions(plan: RunPlan, splits: dict[str, Split], tags: dict[str, list[list[str]]]) -> None:
    """``predictions-<split>.jsonl``: predicted and gold tags per sentence (predictions.py)."""
    from .predictions import write_predictions

    for split, predicted in tags.items():
        write_predictions(plan.run_dir, split, predicted, [e["tags"] for e in splits[split].examples])


def _prior_usage(plan: RunPlan, splits: dict[str, Split], model: Any, task: Any) -> dict | None:
    """Whether the model uses its prior, on a fixed sample of the reported split (prior_usage.py)."""
    from .prior_usage import measure

    split = plan.cfg.sweep.split if plan.cfg.sweep.split in splits else plan.cfg.evaluate[0]
    return measure(model, task, splits[split].examples, split)


def _write_metrics(plan: RunPlan, splits: dict[str, Split], scores: dict, t0: float,
                   usage: dict | None = None) -> StepOutcome:
    key = plan.train_key(splits["train"])
    from ..inference.manifest import read_run

    meta = read_run(plan.run_dir / MODEL_DIR) or {}
    metrics = {
        "pipeline": plan.cfg.name,
        "prior": plan.prior_name,
        "fraction": plan.fraction,
        "seed": plan.seed,
        "metric": plan.cfg.task.metric,
        "train_key": key,
        "eval_key": plan.eval_key(key, splits),
        "train": meta.get("train"),
        "splits": {s: {"origin": splits[s].origin, "examples": len(splits[s]), "digest": splits[s].digest}
                   for s in splits},
        "metrics": scores,
        "prior_usage": usage,
        "created": _now(),
    }
    _write_json(plan.run_dir / METRICS_FILE, metrics)
    from .trackers import log_scores

    log_scores(plan, scores, usage)  # the scores beside the training curves (train.report_to)
    from ..inference.manifest import add_scores

    add_scores(plan.run_dir / MODEL_DIR, scores)  # into priorkit.json and the model card
    if not plan.cfg.train.keep_model:
        shutil.rmtree(plan.run_dir / MODEL_DIR, ignore_errors=True)
    main = scores[plan.cfg.sweep.split if plan.cfg.sweep.split in scores else plan.cfg.evaluate[0]]
    return StepOutcome("evaluate", "done", time.perf_counter() - t0,
                       f"{plan.cfg.task.metric} {main[plan.cfg.task.metric]:.4f}")


# ---------------------------------------------------------------------------
# one run, end to end
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class RunResult:
    plan: RunPlan
    outcomes: list[StepOutcome]
    metrics: dict


def run_one(plan: RunPlan, splits: dict[str, Split], *, force: bool = False,
            steps: tuple[str, ...] = ("train", "evaluate"), log: Log = print,
            callbacks: Sequence[Any] = ()) -> RunResult:
    """Train and evaluate one run (each step skipped when its outputs are valid)."""
    outcomes = []
    for step in steps:
        if step == "train":
            outcome = train_step(plan, splits, force=force, callbacks=callbacks)
        elif step == "evaluate":
            outcome = evaluate_step(plan, splits, force=force)
        else:
            continue
        log(_describe(plan, outcome))
        outcomes.append(outcome)
        force = False  # a forced train makes the following steps stale anyway
    metrics = _read_json(plan.run_dir / METRICS_FILE) or {}
    return RunResult(plan, outcomes, metrics)


def _silent(message: str) -> None:
    pass


def _describe(plan: RunPlan, o: StepOutcome) -> str:
    took = f" in {o.seconds:.1f}s" if o.seconds else ""
    return f"[{plan.label}] {o.step}: {o.status}{took}" + (f" ({o.detail})" if o.detail else "")


def run_pipeline(cfg: PipelineConfig, *, prior_name: str | None = None, force: bool = False,
                 steps: tuple[str, ...] = STEPS, log: Log = print, callbacks: Sequence[Any] = ()) -> RunResult:
    """``priorkit run``: precompute, train, evaluate, report for one run.

    ``callbacks``: extra ``transformers.TrainerCallback`` objects for training.
    """
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise PriorkitError(f"unknown step(s) {unknown}; steps are {', '.join(STEPS)}")
    plan = plan_for_run(cfg, prior_name)
    configure_torch(cfg)  # joins the process group of a multi-process launch
    if not ranks.is_main():
        log = _silent  # one voice: the main process reports for all
    splits = load_data(cfg)
    from .silver_stage import check_settings

    check_settings(cfg, {plan.prior_name: plan.prior}, splits["train"])  # before anything is written
    log(f"pipeline {cfg.name}: {plan.label}; data " + ", ".join(f"{s} {len(v)}" for s, v in splits.items()))
    outcomes = []
    if "precompute" in steps:
        o = precompute_step(cfg, plan.prior_name, plan.prior, splits, force=force, log=log)
        log(_describe(plan, o))
        outcomes.append(o)
    result = run_one(plan, splits, force=force, steps=tuple(s for s in steps if s in ("train", "evaluate")),
                     log=log, callbacks=callbacks)
    result.outcomes[:0] = outcomes
    if "report" in steps and result.metrics:
        report = ranks.on_main(write_run_report, plan, result.metrics)
        result.outcomes.append(StepOutcome("report", "done", detail=str(report)))
    return result


def write_run_report(plan: RunPlan, metrics: dict) -> Path:
    """A small Markdown summary beside metrics.json."""
    lines = [f"# {plan.cfg.name}: {plan.label}", ""]
    for split, scores in metrics.get("metrics", {}).items():
        lines += [f"## {split}", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in scores.items() if isinstance(v, float)]
        lines.append("")
    tr = metrics.get("train") or {}
    if tr:
        lines.append(f"Trained on {tr.get('examples')} examples, {tr.get('steps')} steps, "
                     f"{tr.get('seconds')} s on {tr.get('device')} ({tr.get('threads')} threads).")
    path = plan.run_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path

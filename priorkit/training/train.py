"""Fine-tuning and scoring one run with the Hugging Face ``Trainer`` and ``PriorCollator``.

A *run* is one (prior setting, training fraction, seed) of a pipeline.  Its
folder holds::

    run.json            what the run is (train key, prior, fraction, seed)
    config.yaml         the resolved pipeline config and prior setting
    checkpoints/        Trainer checkpoints (resume); removed when done unless kept
    model/              the final model + tokenizer, priorkit.json (the channels, the prior and the
                        run's record under ``run``) and README.md (model card): ``priorkit.load_model``
    train_log.json      the Trainer's log history (loss, learning rate, ...)
    metrics.json        scores per evaluated split, with the keys they are valid for

The evaluate step reloads ``model/`` through the one loader, :func:`priorkit.load_model`
(every channel restored from ``priorkit.json``), and scores it with the run's task.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..errors import PriorkitError
from . import ranks
from ..config import PipelineConfig
from .data import Split
from .plan import MODEL_DIR, RunPlan
from .tasks import Task, make_task
from .trainer import ListDataset, _token_lengths, make_trainer
from .wiring import cache_path, configure_torch, make_channels, make_collator, model_source

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# train / evaluate / reload
# ---------------------------------------------------------------------------
def fit_task(cfg: PipelineConfig, train: Split) -> Task:
    task = make_task(cfg.task)
    task.fit_labels(train.examples)
    return task


def _whole_checkpoint(path: Path) -> bool:
    """A checkpoint a kill did not cut short: its trainer state reads as JSON."""
    import json

    try:
        json.loads((path / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return True


def last_checkpoint(run_dir: Path) -> Path | None:
    """The newest whole checkpoint (one cut short by a kill while it was written is passed over)."""
    ckpts = [p for p in (run_dir / "checkpoints").glob("checkpoint-*") if p.is_dir()]
    ckpts = [p for p in ckpts if _whole_checkpoint(p)]
    if not ckpts:
        return None
    return max(ckpts, key=lambda p: int(p.name.split("-")[-1]))


def train_run(plan: RunPlan, splits: dict[str, Split], *, resume: bool = True,
              callbacks: Sequence[Any] = (), eval_each_epoch: str | None = None) -> dict[str, Any]:
    """Fine-tune one run and save ``model/`` (see :func:`_train_one`); a setting with a silver
    teacher trains its teacher and student(s) in the order its course gives
    (:class:`priorkit.training.self_training.SelfTraining`: which model next, with which
    teacher, whether another round follows)."""
    from .self_training import SelfTraining, needs_teacher

    kw: dict[str, Any] = {"resume": resume, "callbacks": callbacks, "eval_each_epoch": eval_each_epoch}
    if not needs_teacher(plan):
        return _train_one(plan, splits, **kw)
    course = SelfTraining(plan, splits)
    for step in course:  # the teacher (unless teacher.model), then each round's student
        summary = _train_one(step.run, splits, teacher=step.teacher, **kw) if step.run is not None else None
        course.done(step, summary, evaluate_run(step.judge, splits) if step.judge is not None else None)
    return course.finish()


def _train_one(plan: RunPlan, splits: dict[str, Split], *, resume: bool = True, callbacks: Sequence[Any] = (),
               eval_each_epoch: str | None = None, teacher: Path | None = None) -> dict[str, Any]:
    """Fine-tune one run and save ``model/``; returns a training summary.

    Resumes from the newest checkpoint in ``checkpoints/`` when there is one
    (the caller checked it belongs to this run's train key).  ``callbacks`` are
    extra ``transformers.TrainerCallback`` objects (early stopping, logging).
    ``eval_each_epoch``: a split of ``splits`` scored after every epoch; the scores
    reach the callbacks' ``on_evaluate`` as ``eval_<metric>``.
    """
    from transformers import AutoTokenizer, set_seed

    cfg = plan.cfg
    device = configure_torch(cfg)
    train = splits["train"]
    task = fit_task(cfg, train)
    rows = [task.encode(train.examples[i]) for i in plan.train_indices(len(train))]
    key = plan.train_key(train)
    from .calibrate_stage import calibrate_run
    from .silver_stage import silver_for_run, silver_first, training_rows

    plan, calibration = calibrate_run(plan, splits, task.labels)  # prints the dictionary's quality
    silver = silver_for_run(plan, splits, task, log=log.info, teacher=teacher)
    stage, trained_rows = training_rows(plan, rows, silver)  # mix: gold and silver in one pass
    source = model_source(cfg)

    set_seed(plan.seed)  # the new head's initial weights depend on it: same for every prior setting
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = task.load_model(source)
    channels = make_channels(cfg, plan.prior, tokenizer)
    for channel in channels:
        channel.attach(model)
    collator = make_collator(cfg, tokenizer, channels)  # silver rows carry their own word weights
    eval_rows = compute_metrics = None
    if eval_each_epoch is not None:
        scored = splits[eval_each_epoch].examples
        eval_rows = [task.encode(e) for e in scored]

        def compute_metrics(pred: Any) -> dict[str, float]:
            return task.score(pred.predictions, pred.label_ids, scored)

    checkpoint = last_checkpoint(plan.run_dir) if resume else None
    t0 = time.perf_counter()
    first = None
    if silver is not None and silver.config.recipe == "then-gold" and checkpoint is None:
        first = silver_first(plan, silver, model, tokenizer, collator, device, channels)  # silver, then gold below
    trainer = make_trainer(stage, model, tokenizer, collator, device, trained_rows, eval_rows, compute_metrics, channels)
    for callback in callbacks:
        trainer.add_callback(callback)
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds = time.perf_counter() - t0
    summary = {
        "train_key": key,
        "examples": len(rows),
        "steps": int(trainer.state.global_step),
        "epochs": float(trainer.state.epoch or 0),
        "train_loss": float(result.training_loss),
        "seconds": round(seconds, 2),
        "resumed_from": checkpoint.name if checkpoint else None,
        "device": device,
        "threads": torch.get_num_threads(),
        "world_size": int(trainer.args.world_size),
    }
    if silver is not None:
        summary["silver"] = {**silver.describe(), "rows": len(trained_rows), "first_stage": first}
    if calibration is not None:
        summary["calibration"] = {k: calibration[k] for k in ("before", "after", "dropped", "threshold")}
    _save_model(plan, trainer, tokenizer, task, summary, inputs=_input_kind(train, task), channels=channels)

    ranks.on_main(_write_log, plan.run_dir, trainer.state.log_history, cfg.train.keep_checkpoints)
    del trainer, model
    _release_memory()
    return summary


def _release_memory() -> None:
    """Give cached GPU memory back between runs of a sweep (no full gc: it costs seconds
    with WordNet's object graph in memory, and tensors are freed by reference counting)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _input_kind(train: Split, task: Task) -> str:
    from ..inference.manifest import input_kind

    return input_kind(train.examples[0] if train.examples else None, task.type)


def _save_model(plan: RunPlan, trainer: Any, tokenizer: Any, task: Task, summary: dict,
                inputs: str = "pairs", channels: Sequence[Any] = ()) -> None:
    """Write ``model/`` atomically: a half-written model never looks finished.

    Every process calls it: ``trainer.save_model`` writes on the main process
    only (under FSDP/DeepSpeed all processes must take part in gathering the
    weights); the rest is the main process's, and the others wait for it.
    """
    final = plan.run_dir / MODEL_DIR
    tmp = plan.run_dir / (MODEL_DIR + ".partial")
    ranks.on_main(shutil.rmtree, tmp, ignore_errors=True)
    trainer.save_model(str(tmp))
    meta = run_metadata(plan, task)
    meta["train"] = summary
    ranks.on_main(_finish_model, tmp, final, tokenizer, meta, inputs, channels)


# what the main process does for a run (``ranks.on_main``): plain values in, no run plan, so
# the plan is never handed back up from ranks.py (issue 31, benchmarks/plan_walk.py)
def _finish_model(tmp: Path, final: Path, tokenizer: Any, meta: dict, inputs: str, channels: Sequence[Any]) -> None:
    from ..inference.manifest import write_model_files

    tokenizer.save_pretrained(str(tmp))
    # priorkit.json (the prior, each channel's description for load_model, and the run's record
    # under "run") and README.md; the channels' weights are in model.safetensors
    write_model_files(tmp, meta, inputs, channels)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def _write_log(run_dir: Path, history: list[dict], keep_checkpoints: bool) -> None:
    (run_dir / "train_log.json").write_text(json.dumps(history, indent=1))
    if not keep_checkpoints:
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)


def run_metadata(plan: RunPlan, task: Task) -> dict[str, Any]:
    path = cache_path(plan.cfg, plan.prior)
    return {
        "format": 1,
        "pipeline": plan.cfg.name,
        "prior_name": plan.prior_name,
        "prior": dataclasses.asdict(plan.prior) if plan.prior is not None else None,
        "cache": str(path.resolve()) if path is not None else None,
        "fraction": plan.fraction,
        "seed": plan.seed,
        "task": dataclasses.asdict(plan.cfg.task),
        "labels": task.labels,
        "model_source": plan.cfg.model.name_or_path,
        "max_length": plan.cfg.model.max_length,
        "config": plan.cfg.to_dict(),
    }


def run_task(cfg: PipelineConfig, labels: Sequence[str] | None) -> Task:
    """The run's task with the labels a saved model was trained with (``Predictor.labels``)."""
    task = make_task(cfg.task)
    if labels is not None:
        task.labels = list(labels)
        task._index = {n: i for i, n in enumerate(task.labels)}
    return task


def load_run_model(plan: RunPlan) -> Any:
    """The run's saved model through the one loader, :func:`priorkit.load_model` (every channel
    restored; the prior builder reads the run's cache), at the run's max length."""
    from ..inference import load_model

    return load_model(plan.run_dir / MODEL_DIR, max_length=plan.cfg.model.max_length)


def predict_by_length(trainer: Any, rows: Sequence[dict], max_length: int) -> tuple[np.ndarray, Any]:
    """``trainer.predict`` over ``rows`` taken longest first, outputs put back in input order.

    Batches of sentences of similar length carry little padding: on BC5CDR test (4,797
    sentences, batches of 64) this scores a split about twice as fast as input order.
    """
    lengths = np.asarray(_token_lengths(trainer.processing_class, rows, max_length))
    order = np.argsort(-lengths, kind="stable")
    pred = trainer.predict(ListDataset([rows[i] for i in order]))
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    label_ids = None if pred.label_ids is None else np.asarray(pred.label_ids)[back]
    return np.asarray(pred.predictions)[back], label_ids


def evaluate_run(plan: RunPlan, splits: dict[str, Split], *, model: Any = None, task: Task | None = None,
                 tags: dict[str, list[list[str]]] | None = None) -> dict[str, dict[str, float]]:
    """Score the run's saved model on every split in ``evaluate``.

    ``model``: the run's :class:`priorkit.Predictor` (default: :func:`load_run_model`); ``task``:
    its task (default: :func:`run_task` with the model's labels).  ``tags``: a dict that
    receives each split's predicted tags per sentence (token classification only; the
    evaluate step saves them as ``predictions-<split>.jsonl``).
    """
    device = configure_torch(plan.cfg)
    model = model if model is not None else load_run_model(plan)
    task = task if task is not None else run_task(plan.cfg, model.labels)
    trainer = make_trainer(plan, model.model, model.tokenizer, model.collator(), device, channels=model.channels)
    out: dict[str, dict[str, float]] = {}
    for name in plan.cfg.evaluate:
        split = splits[name]
        rows = [task.encode(e) for e in split.examples]
        t0 = time.perf_counter()
        pred, label_ids = predict_by_length(trainer, rows, plan.cfg.model.max_length)
        metrics = task.score(pred, label_ids, split.examples)
        if tags is not None and hasattr(task, "predicted_tags"):
            tags[name] = task.predicted_tags(pred, label_ids, split.examples)[0]
        metrics["examples"] = float(len(rows))
        metrics["seconds"] = round(time.perf_counter() - t0, 2)
        out[name] = metrics
    del trainer
    _release_memory()
    ckpt_dir = plan.run_dir / "checkpoints"  # the eval-only Trainer creates its output_dir

    def tidy() -> None:
        if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
            ckpt_dir.rmdir()

    ranks.on_main(tidy)
    return out

"""Self-training (``prior.silver.teacher``; docs/silver.md, "Self-training").

Without ``teacher.model`` a run trains its own teacher first: the same setting on the gold
subset without silver labels (its channels, e.g. token features, included), in the run
folder's ``teacher/``.  The teacher labels the unlabelled text (its confident words, merged
with the dictionary's matches: :mod:`priorkit.silver.teacher`), and the student trains on gold
plus those labels by the setting's recipe.  With ``rounds`` > 1 each round's student is the
next round's teacher (``round<r>/``); the rounds stop when a student's devel score (the
pipeline's ``data.eval``) does not beat its teacher's, and the best model is the run's.

The training and scoring functions come in as arguments (``train_run``'s own body and
``evaluate_run``), so this module imports nothing of :mod:`priorkit.pipeline.train`.
"""
from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path
from typing import Any, Callable

from ..errors import PriorkitError
from ..jsonfile import write_json
from .data import Split
from .layout import MODEL_DIR
from .plan import RunPlan

log = logging.getLogger(__name__)

TEACHER_DIR = "teacher"
RECORD_FILE = "self_training.json"


def needs_teacher(plan: RunPlan) -> bool:
    prior = plan.prior
    return prior is not None and prior.silver is not None and prior.silver.teacher is not None


@dataclasses.dataclass
class _Sub(RunPlan):
    """A run inside another run's folder (the teacher, a round's student)."""

    folder: Path = Path(".")

    @property
    def run_dir(self) -> Path:  # type: ignore[override]
        return self.folder

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"{self.prior_name} fraction={self.fraction:g} seed={self.seed} ({self.folder.name})"


def _sub(plan: RunPlan, folder: Path, prior: Any) -> _Sub:
    return _Sub(plan.cfg, plan.prior_name, prior, plan.fraction, plan.seed, folder=folder)


def _devel(plan: RunPlan, splits: dict[str, Split], evaluate: Callable, folder: Path, metric: str) -> float:
    if "eval" not in splits:
        raise PriorkitError(f"{plan.cfg.where('prior.silver.teacher.rounds')}: more than one self-training round "
                            "needs data.eval to tell whether a round helps")
    cfg = dataclasses.replace(plan.cfg, evaluate=["eval"])
    sub = _Sub(cfg, plan.prior_name, plan.prior, plan.fraction, plan.seed, folder=folder)
    return float(evaluate(sub, splits)["eval"][metric])


def self_train(plan: RunPlan, splits: dict[str, Split], train: Callable[..., dict], evaluate: Callable,
               **kwargs: Any) -> dict[str, Any]:
    """Teacher, labels, student (and more rounds); returns the final student's summary with a
    ``self_training`` record (see the module doc)."""
    t = plan.prior.silver.teacher
    record: dict[str, Any] = {"rounds_asked": t.rounds, "rounds": []}
    if t.model is not None:
        teacher = Path(t.model).expanduser()
        if not (teacher / "config.json").exists() and not (teacher / MODEL_DIR / "config.json").exists():
            raise PriorkitError(f"{plan.cfg.where('prior.silver.teacher.model')}: prior.silver.teacher.model: "
                                f"{teacher} is not a trained model folder (no config.json)")
        teacher = teacher / MODEL_DIR if (teacher / MODEL_DIR / "config.json").exists() else teacher
    else:
        gold_only = dataclasses.replace(plan.prior, silver=None)
        sub = _sub(plan, plan.run_dir / TEACHER_DIR, gold_only)
        summary = train(sub, splits, **kwargs)
        teacher = sub.run_dir / MODEL_DIR
        record["teacher"] = {"seconds": summary["seconds"], "steps": summary["steps"]}
    metric = plan.cfg.task.metric or "f1"
    best_score = _devel(plan, splits, evaluate, teacher.parent, metric) if t.rounds > 1 else None
    best_dir, summary = None, {}
    for r in range(1, t.rounds + 1):
        last = r == t.rounds
        folder = plan.run_dir if last else plan.run_dir / f"round{r}"
        sub = _sub(plan, folder, plan.prior)
        summary = train(sub, splits, teacher=teacher, **kwargs)
        entry = {"round": r, "seconds": summary["seconds"]}
        if t.rounds > 1:
            score = _devel(plan, splits, evaluate, folder, metric)
            entry["devel"] = score
            log.info("[%s] self-training round %d: devel %s %.4f (teacher %.4f)", plan.label, r, metric, score,
                     best_score)
            if score <= best_score:
                record["rounds"].append({**entry, "kept": False})
                break
            best_score, best_dir = score, folder
        record["rounds"].append({**entry, "kept": True})
        teacher = folder / MODEL_DIR
    if t.rounds > 1 and best_dir is not None and best_dir != plan.run_dir:
        shutil.rmtree(plan.run_dir / MODEL_DIR, ignore_errors=True)  # the run's model: the best round's
        shutil.copytree(best_dir / MODEL_DIR, plan.run_dir / MODEL_DIR)
    elif t.rounds > 1 and best_dir is None:  # no round beat the teacher: the teacher is the run's model
        shutil.rmtree(plan.run_dir / MODEL_DIR, ignore_errors=True)
        shutil.copytree(teacher if teacher.name == MODEL_DIR else teacher, plan.run_dir / MODEL_DIR)
    summary = dict(summary)
    summary["self_training"] = record
    write_json(plan.run_dir / RECORD_FILE, record)
    return summary

"""Self-training (``prior.silver.teacher``; docs/silver.md, "Self-training").

Without ``teacher.model`` a run trains its own teacher first: the same setting on the gold
subset without silver labels (its channels, e.g. token features, included; ``teacher.prior``
replaces fields of it, e.g. ``{features: null}``), in the run folder's ``teacher/``.  The
teacher labels the unlabelled text (its confident words, merged with the dictionary's
matches: :mod:`priorkit.supervision.silver.teacher`), and the student trains on gold
plus those labels by the setting's recipe.  With ``rounds`` > 1 each round's student is the
next round's teacher (``round<r>/``); the rounds stop when a student's devel score (the
pipeline's ``data.eval``) does not beat its teacher's, and the best model is the run's.

A teacher that some model in the pipeline's output folder was already trained as (the same
train key: settings, gold subset, seed; e.g. a student without token features, whose teacher
is the gold alone, the ``none`` arm's model when that is kept) is copied, not trained again.

``train_run`` (:mod:`priorkit.training.train`) drives the course: a :class:`SelfTraining`
names each model to train next (:class:`Step`: the teacher, then each round's student, with
its teacher and the run that scores it on ``data.eval``), ``train_run`` trains and scores it
and tells the course (:meth:`SelfTraining.done`), which decides whether another round
follows and, at the end, which model is the run's.  Nothing here trains or scores a model,
and nothing calls back into :mod:`priorkit.training.train` (issue 31: the run plan is not
handed back up; ``benchmarks/plan_walk.py``).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

from ..errors import PriorkitError
from ..jsonfile import write_json
from . import ranks
from ..config.checks import teacher_prior
from ..supervision.silver.config import own_model
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


def _sub(plan: RunPlan, folder: Path, prior: Any, cfg: Any = None) -> _Sub:
    return _Sub(cfg if cfg is not None else plan.cfg, plan.prior_name, prior, plan.fraction, plan.seed, folder=folder)


def teacher_config(plan: RunPlan) -> Any:
    """The pipeline as the run's own teacher trains with it: ``teacher.encoder`` as the model (a
    stronger encoder than the students'), ``teacher.max_length``, and ``teacher.train``'s fields over
    the run's train section; the run's pipeline when the teacher has none of them."""
    from ..config import TrainConfig, _convert

    t = plan.prior.silver.teacher
    cfg = plan.cfg
    if not own_model(t.encoder, t.max_length, t.train):
        return cfg
    model = dataclasses.replace(cfg.model, name_or_path=t.encoder or cfg.model.name_or_path,
                                max_length=t.max_length or cfg.model.max_length)
    train = cfg.train
    if t.train:
        train = _convert({**dataclasses.asdict(cfg.train), **t.train}, TrainConfig,
                         ("prior", "silver", "teacher", "train"), cfg.locations, cfg.source)
    return dataclasses.replace(cfg, model=model, train=train)


def _given_teacher(plan: RunPlan) -> Path:
    """``teacher.model``'s model folder (a run folder's ``model/`` or the folder itself)."""
    teacher = Path(plan.prior.silver.teacher.model).expanduser()
    if not (teacher / "config.json").exists() and not (teacher / MODEL_DIR / "config.json").exists():
        raise PriorkitError(f"{plan.cfg.where('prior.silver.teacher.model')}: prior.silver.teacher.model: "
                            f"{teacher} is not a trained model folder (no config.json)")
    return teacher / MODEL_DIR if (teacher / MODEL_DIR / "config.json").exists() else teacher


def trained_before(plan: RunPlan, key: str) -> Path | None:
    """A model folder in the pipeline's output folder (a run's ``model/`` or a teacher's) trained
    with train key ``key`` at ``plan``'s fraction and seed: the same weights; None when none is
    kept."""
    from ..inference.manifest import trained_with

    cell = Path(f"frac{plan.fraction:g}") / f"seed{plan.seed}"
    for pattern in (str(cell / MODEL_DIR), str(cell / TEACHER_DIR / MODEL_DIR)):
        for folder in sorted(plan.cfg.out_dir.glob(f"*/{pattern}")):
            if trained_with(folder, key) and (folder / "config.json").exists():
                return folder
    return None


def _copy_teacher(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".copying")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    tmp.rename(target)  # whole or absent: a stopped copy is never read as a teacher


@dataclasses.dataclass
class Step:
    """One model of the course.  ``run``: the run to train (None: ``teacher.model``, only
    scored); ``teacher``: the model folder labelling its silver text (None for the teacher);
    ``judge``: the run whose ``evaluate_run`` scores it on ``data.eval`` (None: one round,
    nothing to compare)."""

    kind: str  # "teacher" | "student"
    run: RunPlan | None
    teacher: Path | None
    judge: RunPlan | None


class SelfTraining:
    """The course of one run with ``prior.silver.teacher`` (see the module doc)::

        course = SelfTraining(plan, splits)
        for step in course:
            summary = train(step.run, teacher=step.teacher) if step.run is not None else None
            course.done(step, summary, evaluate(step.judge) if step.judge is not None else None)
        summary = course.finish()
    """

    def __init__(self, plan: RunPlan, splits: dict[str, Split]) -> None:
        t = plan.prior.silver.teacher
        if t.rounds > 1 and "eval" not in splits:
            raise PriorkitError(f"{plan.cfg.where('prior.silver.teacher.rounds')}: more than one self-training "
                                "round needs data.eval to tell whether a round helps")
        self.plan, self.rounds, self.splits = plan, t.rounds, splits
        self.metric = plan.cfg.task.metric or "f1"
        self.record: dict[str, Any] = {"rounds_asked": t.rounds, "rounds": []}
        self.teacher: Path | None = _given_teacher(plan) if t.model is not None else None
        self.best_score: float | None = None
        self.best_dir: Path | None = None
        self.summary: dict[str, Any] = {}
        self._stop = False

    def _judge(self, folder: Path, cfg: Any = None) -> RunPlan | None:
        """The run that scores the model in ``folder`` on data.eval (None for one round, except a
        teacher with a model of its own when there is a data.eval: its devel score is recorded, the
        teacher's own choice is made on it); ``cfg``: the pipeline that model was trained with (the
        teacher's own, :func:`teacher_config`)."""
        if self.rounds == 1 and (cfg is None or cfg is self.plan.cfg or "eval" not in self.splits):
            return None
        cfg = dataclasses.replace(cfg if cfg is not None else self.plan.cfg, evaluate=["eval"])
        p = self.plan
        return _Sub(cfg, p.prior_name, p.prior, p.fraction, p.seed, folder=folder)

    def __iter__(self) -> Iterator[Step]:
        plan = self.plan
        if self.teacher is None:  # no teacher.model: the setting without silver labels, trained first
            own = teacher_config(plan)  # an encoder, max length or train fields of its own, or the run's
            t = plan.prior.silver.teacher
            if own_model(t.encoder, t.max_length, t.train):
                self.record["teacher_model"] = {"encoder": own.model.name_or_path, "max_length": own.model.max_length,
                                                "train": dict(t.train)}
            sub = _sub(plan, plan.run_dir / TEACHER_DIR, teacher_prior(plan.prior, ("prior",), plan.cfg), own)
            found = trained_before(sub, sub.train_key(self.splits["train"]))
            if found is None:
                yield Step("teacher", sub, None, self._judge(sub.run_dir, own))
            else:  # the same weights are kept already: copied, and judged like a trained one
                if found != sub.run_dir / MODEL_DIR:
                    ranks.on_main(_copy_teacher, found, sub.run_dir / MODEL_DIR)
                log.info("[%s] teacher: the model in %s has its settings; not trained again", plan.label, found)
                self.record["teacher"] = {"reused": os.path.relpath(found, plan.cfg.out_dir), "seconds": 0.0, "steps": 0}
                yield Step("teacher", None, None, self._judge(sub.run_dir, own))
            self.teacher = sub.run_dir / MODEL_DIR
        elif self.rounds > 1:
            yield Step("teacher", None, None, self._judge(self.teacher.parent))
        for r in range(1, self.rounds + 1):
            folder = plan.run_dir if r == self.rounds else plan.run_dir / f"round{r}"
            yield Step("student", _sub(plan, folder, plan.prior), self.teacher, self._judge(folder))
            if self._stop:
                break
            self.teacher = folder / MODEL_DIR

    def done(self, step: Step, summary: dict[str, Any] | None, scores: dict[str, dict] | None) -> None:
        """How ``step`` went: its training summary (None: not trained) and its scores (None: not judged)."""
        score = None if scores is None else float(scores["eval"][self.metric])
        if step.kind == "teacher":
            if summary is not None:
                self.record["teacher"] = {"seconds": summary["seconds"], "steps": summary["steps"]}
            if score is not None:
                self.record.setdefault("teacher", {})["devel"] = score
            self.best_score = score
            return
        self.summary = summary or {}
        r = len(self.record["rounds"]) + 1
        entry: dict[str, Any] = {"round": r, "seconds": self.summary["seconds"]}
        if score is not None:
            entry["devel"] = score
            log.info("[%s] self-training round %d: devel %s %.4f (teacher %.4f)", self.plan.label, r, self.metric,
                     score, self.best_score)
            if score <= self.best_score:
                self.record["rounds"].append({**entry, "kept": False})
                self._stop = True
                return
            self.best_score, self.best_dir = score, step.run.run_dir
        self.record["rounds"].append({**entry, "kept": True})

    def finish(self) -> dict[str, Any]:
        """The run's model (the best round's, or the teacher's when no round beat it), the
        ``self_training`` record; returns the last student's summary with the record."""
        run_dir = self.plan.run_dir
        if self.rounds > 1 and self.best_dir is not None and self.best_dir != run_dir:
            shutil.rmtree(run_dir / MODEL_DIR, ignore_errors=True)  # the run's model: the best round's
            shutil.copytree(self.best_dir / MODEL_DIR, run_dir / MODEL_DIR)
        elif self.rounds > 1 and self.best_dir is None:  # no round beat the teacher: the teacher is the run's model
            shutil.rmtree(run_dir / MODEL_DIR, ignore_errors=True)
            shutil.copytree(self.teacher, run_dir / MODEL_DIR)
        summary = dict(self.summary)
        summary["self_training"] = self.record
        write_json(run_dir / RECORD_FILE, self.record)
        return summary

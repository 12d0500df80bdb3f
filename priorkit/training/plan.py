"""What a run is: which prior setting, which fraction, which seed (:class:`RunPlan`), its
folder, and the keys that say whether its saved model and scores are still valid."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PriorkitError
from . import ranks
from ..config import PipelineConfig, PriorConfig, digest, for_fraction, prior_settings
from .data import Split, fraction_indices
from .layout import METRICS_FILE, MODEL_DIR, NO_PRIOR, RUN_FILE  # noqa: F401

#: task fields that change how tags are read from the scores, not what a run learns (in the scores' key only)
DECODING_FIELDS = ("decode", "o_bias")
#: task fields that reach a run only through a section that uses them (its key holds them there)
_THROUGH_SECTIONS = ("dictionary_types",)
#: train-section fields that do not change what a run learns (not in its key)
_NON_SEMANTIC = ("save", "keep_checkpoints", "keep_model", "logging_steps", "threads", "report_to",
                 "device", "dataloader_workers", "progress", "eval_batch_size")


@dataclasses.dataclass
class RunPlan:
    """One cell of a sweep: which prior setting, which fraction, which seed."""

    cfg: PipelineConfig
    prior_name: str
    prior: PriorConfig | None
    fraction: float
    seed: int

    @property
    def run_dir(self) -> Path:
        return self.cfg.out_dir / self.prior_name / f"frac{self.fraction:g}" / f"seed{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.prior_name} fraction={self.fraction:g} seed={self.seed}"

    def train_indices(self, n: int) -> np.ndarray:
        tc = self.cfg.train
        return fraction_indices(n, self.fraction, mode=tc.subset, seed=self.seed, subset_seed=tc.subset_seed)

    def train_key(self, train: Split) -> str:
        """Everything that changes the trained weights, hashed."""
        idx = self.train_indices(len(train))
        train_cfg = {k: v for k, v in dataclasses.asdict(self.cfg.train).items() if k not in _NON_SEMANTIC}
        train_cfg.update(fraction=self.fraction, seed=self.seed)
        if ranks.world_size() > 1:  # the effective batch grows with it (absent for one process: old keys hold)
            train_cfg["world_size"] = ranks.world_size()
        extra = {}
        if self.prior is not None and self.prior.silver is not None and self.cfg.data.unlabeled is not None:
            extra["unlabeled"] = source_identity(self.cfg.data.unlabeled)  # the silver text's source
        types = pipeline_types_identity(self.cfg, self.prior)
        if types is not None:
            extra["dictionary_types"] = types
        return digest({
            **extra,
            "model": dataclasses.asdict(self.cfg.model),
            "task": {k: v for k, v in dataclasses.asdict(self.cfg.task).items()
                     if k not in DECODING_FIELDS + _THROUGH_SECTIONS},
            "prior": prior_identity(self.prior),
            "train": train_cfg,
            "data": [train.digest, digest(idx.tolist())],
        })

    def eval_key(self, train_key: str, splits: dict[str, Split]) -> str:
        key = {"train": train_key, "splits": {s: splits[s].digest for s in self.cfg.evaluate}}
        if self.cfg.task.decode != "argmax":  # absent at the defaults: the scores made before them stay valid
            key["decode"] = self.cfg.task.decode
        if self.cfg.task.o_bias:
            key["o_bias"] = self.cfg.task.o_bias
        return digest(key)


def source_identity(src: Any) -> dict[str, Any]:
    """A data split's source as a run's key holds it: its fields, with ``source: hf:ID[:CONFIG]``
    spelled as the ``hf`` and ``hf_config`` fields it replaced (issue 47), so keys made before hold."""
    d = dataclasses.asdict(src)
    d.update(hf=src.hf, hf_config=src.hf_config)
    if src.hf is not None:
        d["source"] = None
    return d


def pipeline_types_identity(cfg: PipelineConfig, prior: PriorConfig | None) -> Any:
    """What the pipeline's type map adds to a run's key: None when the setting reads no map of the
    pipeline's (no silver labels or calibration, or their own ``types``) or when that map is the one
    a null map meant before issue 47 (runs made then keep their keys); else the map, or "the data"
    when there is none (the map is then read off the data's entity types)."""
    from ..supervision.type_map import MAP_BEFORE_47

    if prior is None:
        return None
    silver, cal = prior.silver, prior.calibrate
    own = silver.types if silver is not None else None
    reads = (silver is not None and own is None) or (cal is not None and cal.types is None and own is None)
    if not reads:
        return None
    given = cfg.task.dictionary_types
    if given is not None and list(given.items()) == list(MAP_BEFORE_47.items()):
        return None
    return dict(given) if given is not None else "the data's entity types"


def prior_fields(prior: PriorConfig, cfg: PipelineConfig | None = None) -> dict[str, Any]:
    """``dataclasses.asdict(prior)`` as the keys made before issue 47 hashed it: the silver section's
    fields removed since (``ratio``, ``chunk_size``) at the values every run had, and the teacher's
    ``engine``, ``workers`` and ``scheduler`` (the pipeline's ``engine`` section now; the defaults
    without ``cfg``)."""
    from ..supervision.silver.config import REMOVED_IN_KEYS

    d = dataclasses.asdict(prior)
    silver = d.get("silver")
    if isinstance(silver, dict):
        silver.update(REMOVED_IN_KEYS)
        teacher = silver.get("teacher")
        if isinstance(teacher, dict):
            teacher.update(teacher_engine_fields(cfg))
    return d


def teacher_engine_fields(cfg: PipelineConfig | None) -> dict[str, Any]:
    """``prior.silver.teacher``'s engine, workers and scheduler as they were before the pipeline's
    ``engine`` section took them (issue 47): local and unset, or the section's dask engine."""
    if cfg is None or cfg.engine.type == "local":
        return {"engine": "local", "workers": None, "scheduler": None}
    return {"engine": cfg.engine.type, "workers": None if cfg.engine.scheduler else cfg.engine.workers,
            "scheduler": cfg.engine.scheduler}


def prior_identity(prior: PriorConfig | None) -> Any:
    """The parts of a prior setting that change values (not its label or cache file)."""
    if prior is None:
        return None
    d = prior_fields(prior)
    d.pop("name", None)
    d.pop("cache", None)
    if not d.get("train"):  # absent before per-prior train fields existed: old keys hold
        d.pop("train", None)
    if d.get("features") is None:  # absent before token features existed: old keys hold
        d.pop("features", None)
    if d.get("silver") is None:  # absent before silver labels existed: old keys hold
        d.pop("silver", None)
    if d.get("calibrate") is None:  # absent before calibration: old keys hold
        d.pop("calibrate", None)
    if isinstance(d.get("features"), dict):  # removed in issue 47 (config/removed.py); every key held them so
        d["features"].update(control=None, seed=0)
    for section, defaults in (("silver", {"unmatched_weight": None, "teacher": None}),):
        for field, default in defaults.items():  # fields added later: old keys hold at their defaults
            if isinstance(d.get(section), dict) and d[section].get(field, default) == default:
                d[section].pop(field, None)
    teacher = d.get("silver", {}).get("teacher") if isinstance(d.get("silver"), dict) else None
    for field, default in (("encoder", None), ("max_length", None), ("train", {})):  # a teacher's own model
        if isinstance(teacher, dict) and teacher.get(field, default) == default:  # (issue 48): old keys hold
            teacher.pop(field, None)
    teacher = d["silver"].get("teacher") if isinstance(d.get("silver"), dict) else None
    if isinstance(teacher, dict):  # teacher.entity_threshold, removed in issue 47: every key held it so
        teacher["entity_threshold"] = None
    if isinstance(teacher, dict):  # where the teacher labels, never what: not in the key
        for field in ("engine", "workers", "scheduler"):
            teacher.pop(field, None)
    if not d.get("channels"):  # absent before the channels: old keys hold
        d.pop("channels", None)
    # the defaults of fields added later are left out, so older runs' keys hold
    for field, default in (("within", "all"), ("stop_words", None), ("stop_value", 0.0)):
        if d.get(field) == default:
            d.pop(field, None)
    return d


def plan_for_run(cfg: PipelineConfig, prior_name: str | None = None) -> RunPlan:
    """The single run ``priorkit run`` does: ``train.fraction``, ``train.seed`` and a prior."""
    if prior_name is None:
        prior = cfg.prior
        name = (prior.name or "prior") if prior is not None else NO_PRIOR
    else:
        settings = prior_settings(cfg)
        if prior_name not in settings:
            raise PriorkitError(
                f"{cfg.source}: no prior setting {prior_name!r}; sweep.priors has {', '.join(settings)}"
            )
        prior, name = settings[prior_name], prior_name
    return RunPlan(for_fraction(cfg, cfg.train.fraction, prior), name, prior, cfg.train.fraction, cfg.train.seed)

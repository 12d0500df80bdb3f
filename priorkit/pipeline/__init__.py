"""YAML pipelines: precompute the prior cache, fine-tune, evaluate, report; sweeps.

    from priorkit.pipeline import load_config, run_pipeline, run_sweep, load_trained
    cfg = load_config("pipelines/demo.yaml", ["train.fraction=0.5"])
    result = run_pipeline(cfg)              # one run (train.fraction, train.seed, cfg.prior)
    sweep = run_sweep(cfg)                  # sweep.fractions x sweep.seeds x sweep.priors
    trained = load_trained("runs/demo/paper/frac1/seed0")   # model with its prior settings

Modules: ``config`` (schema, YAML, overrides, validation), ``data`` (splits,
slices, fractions), ``tasks`` (heads and metrics), ``train`` (Trainer, reload),
``steps`` (skip-if-valid steps), ``sweep`` (grid, table, plot).  See
docs/pipelines.md.  Heavy modules (torch, transformers) load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

from .config import ConfigError, PipelineConfig, config_from_dict, load_config

_LAZY = {
    "run_pipeline": "priorkit.pipeline.steps",
    "run_one": "priorkit.pipeline.steps",
    "run_sweep": "priorkit.pipeline.sweep",
    "load_trained": "priorkit.pipeline.train",
    "TrainedModel": "priorkit.pipeline.train",
    "RunSpec": "priorkit.pipeline.train",
    "load_data": "priorkit.pipeline.data",
    "make_task": "priorkit.pipeline.tasks",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'priorkit.pipeline' has no attribute {name!r}")


__all__ = ["ConfigError", "PipelineConfig", "config_from_dict", "load_config", *_LAZY]

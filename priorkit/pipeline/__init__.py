"""YAML pipelines: precompute the prior cache, fine-tune, evaluate, report; sweeps.

    from priorkit.pipeline import load_config, run_pipeline, run_sweep
    cfg = load_config("pipelines/demo.yaml", ["train.fraction=0.5"])
    result = run_pipeline(cfg)              # one run (train.fraction, train.seed, cfg.prior)
    sweep = run_sweep(cfg)                  # sweep.fractions x sweep.seeds x sweep.priors
    model = priorkit.load_model("runs/demo/paper/frac1/seed0")   # a run's model: the one loader

Modules: ``config`` (loader, schema, checks), ``data`` (splits,
slices, fractions), ``tasks`` (heads and metrics), ``train`` (training, saving
and scoring a run), ``steps`` (skip-if-valid steps), ``sweep`` (grid, table, plot),
``ranks`` (several processes under torchrun).  See
docs/pipelines.md.  Heavy modules (torch, transformers) load on first use.
"""
from __future__ import annotations

from .. import _lazy_attributes
from .config import ConfigError, PipelineConfig, config_from_dict, load_config

_LAZY = {
    "run_pipeline": "priorkit.pipeline.steps",
    "run_one": "priorkit.pipeline.steps",
    "run_sweep": "priorkit.pipeline.sweep",
    "RunPlan": "priorkit.pipeline.plan",
    "load_data": "priorkit.pipeline.data",
    "make_task": "priorkit.pipeline.tasks",
}


__getattr__ = _lazy_attributes("priorkit.pipeline", _LAZY)


__all__ = ["ConfigError", "PipelineConfig", "config_from_dict", "load_config", *_LAZY]

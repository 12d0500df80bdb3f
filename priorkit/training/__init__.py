"""Training a run of a pipeline: precompute the prior cache, fine-tune, save, score.

    from priorkit.config import load_config
    from priorkit.training import run_pipeline
    from priorkit.evaluation.sweep import run_sweep
    cfg = load_config("pipelines/demo.yaml", ["train.fraction=0.5"])
    result = run_pipeline(cfg)              # one run (train.fraction, train.seed, cfg.prior)
    sweep = run_sweep(cfg)                  # sweep.fractions x sweep.seeds x sweep.priors
    model = priorkit.load_model("runs/demo/paper/frac1/seed0")   # a run's model: the one loader

Modules: ``data`` (splits, slices, fractions), ``tasks`` (heads and metrics), ``train``
(training, saving and scoring a run), ``steps`` (skip-if-valid steps), ``ranks`` (several
processes under torchrun); the pipeline file is :mod:`priorkit.config`, sweeps are
:mod:`priorkit.evaluation.sweep`.  See
docs/pipelines.md.  Heavy modules (torch, transformers) load on first use.
"""
from __future__ import annotations

from .. import _lazy_attributes

_LAZY = {
    "run_pipeline": "priorkit.training.steps",
    "run_one": "priorkit.training.steps",
    "RunPlan": "priorkit.training.plan",
    "load_data": "priorkit.training.data",
    "make_task": "priorkit.training.tasks",
}


__getattr__ = _lazy_attributes("priorkit.training", _LAZY)


__all__ = [*_LAZY]

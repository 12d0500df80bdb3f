"""``priorkit tune``: find the prior setting that pays off for a task, with Optuna.

A pipeline's ``tune:`` section declares the search space (providers, layout values,
attention mode, layers, heads, strengths, learning rates), the budget and the pruner;
trials are scored on a validation slice carved from the training data and compared
with a cached no-prior baseline; the best setting is written as a pipeline and re-run
with several seeds on the reported split.  See docs/tune.md.

Modules: ``space`` (checking and sampling the space), ``study`` (storage, baseline,
trials, pruning), ``report`` (tables, plots, best.yaml, the final comparison).
"""
from __future__ import annotations

from .study import TuneContext, TuneError, prepare, run_study

__all__ = ["TuneContext", "TuneError", "prepare", "run_study"]

"""Which Optuna sampler a study uses: a grid when every field is a plain choice and the
budget covers the grid (or ``tune.sampler: grid``), else the file's sampler.

Shared by the single-space study (``study.py``) and the arms (``arms.py``).
"""
from __future__ import annotations

import math

from ..config import ConfigError, PipelineConfig
from . import space as sp


# ---------------------------------------------------------------------------
def grid_space(dims: list[sp.Dimension]) -> dict[str, list] | None:
    """Every field's labels when all fields are unconditional choices, else None."""
    if not dims or any(not d.categorical or d.space.when for d in dims):
        return None
    return {d.path: list(d.labels) for d in dims}


def grid_size(dims: list[sp.Dimension]) -> int | None:
    space = grid_space(dims)
    return None if space is None else math.prod(len(v) for v in space.values())


def uses_grid(cfg: PipelineConfig, dims: list[sp.Dimension], auto: bool = True) -> bool:
    """``sampler: grid``, or (``auto``) when the space is a finite grid the budget covers."""
    size = grid_size(dims)
    return size is not None and (cfg.tune.sampler == "grid" or (auto and cfg.tune.trials >= size))


def check_sampler(cfg: PipelineConfig, arm: str | None, dims: list[sp.Dimension]) -> None:
    if cfg.tune.sampler == "grid" and grid_space(dims) is None:
        what = f"arm {arm!r}'s space" if arm else "tune.space"
        raise ConfigError(f"{cfg.where('tune.sampler')}: tune.sampler: grid needs {what} to be choices "
                          "without `when` (ranges have no grid); use tpe or random")


def apply_sampler(study, cfg: PipelineConfig, dims: list[sp.Dimension], auto: bool = True) -> int:
    """Put a grid sampler on ``study`` when :func:`uses_grid`; returns the trials to run
    (the grid size when that is smaller than ``tune.trials``)."""
    import optuna

    if not uses_grid(cfg, dims, auto):
        return cfg.tune.trials
    study.sampler = optuna.samplers.GridSampler(grid_space(dims), seed=cfg.tune.sampler_seed)
    return min(cfg.tune.trials, grid_size(dims))

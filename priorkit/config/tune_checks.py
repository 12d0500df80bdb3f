"""The ``tune`` section's rules: budget, validation slice, pruner and final runs."""
from __future__ import annotations

from .loader import ConfigError
from .schema import PipelineConfig


def check_tune_section(cfg: PipelineConfig) -> None:
    """Budget and study fields, named by file and line (``priorkit tune`` checks them before
    anything runs; the search space itself is checked by :func:`priorkit.tune.space.check_space`)."""
    tc = cfg.tune
    if tc is None:
        raise ConfigError(f"{cfg.source}: no `tune` section; add one (docs/tune.md) to use priorkit tune")

    def fail(field: str, msg: str) -> ConfigError:
        return ConfigError(f"{cfg.where('tune.' + field)}: tune.{field}: {msg}")

    if tc.trials < 1:
        raise fail("trials", f"must be at least 1, got {tc.trials}")
    if not 0.0 < tc.fraction <= 1.0:
        raise fail("fraction", f"must lie in (0, 1], got {tc.fraction:g}")
    if not tc.seeds:
        raise fail("seeds", "give at least one seed")
    if tc.validation.size <= 0:
        raise fail("validation.size", f"must be a positive count or share, got {tc.validation.size:g}")
    if tc.pruner.startup_trials < 0 or tc.pruner.warmup_epochs < 0:
        raise fail("pruner", "startup_trials and warmup_epochs must not be negative")
    bounds = tc.pruner.bounds
    if bounds is not None and len(bounds) != 2:
        raise fail("pruner.bounds", f"is [lower, upper] (null for an open end), got {bounds}")
    if tc.pruner.type == "threshold" and (bounds is None or bounds == [None, None]):
        raise fail("pruner", "a threshold pruner needs bounds: [lower, upper] (one of them may be null)")
    if not tc.final.seeds:
        raise fail("final.seeds", "give at least one seed")
    for i, f in enumerate(tc.final.fractions or []):
        if not 0.0 < f <= 1.0:
            raise fail(f"final.fractions.{i}", f"fractions must lie in (0, 1], got {f:g}")
    if tc.final.split == "test" and cfg.data.test is None:
        raise fail("final.split", "is test but data.test is not set")
    if tc.final.split == "eval" and cfg.data.eval is None:
        raise fail("final.split", "is eval but data.eval is not set")

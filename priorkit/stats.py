"""Paired comparisons over seeds: the mean difference, its spread, its 95% CI and the
smallest difference those seeds could detect.

Two settings trained with the same seeds share the data subset, the new head and the
batch order, so their per-seed differences Δ_i are paired; a paired t analysis of
the Δ_i is what every comparison table of priorkit reports (docs/tune.md#power):

* ``mean`` and ``sd`` (sample standard deviation, ddof 1) of the Δ_i;
* the 95% confidence interval ``mean ± t(0.975, n-1) * sd / sqrt(n)``;
* the minimum detectable effect at 80% power, α = 0.05 two-sided:
  ``MDE = (t(0.975, n-1) + t(0.80, n-1)) * sd / sqrt(n)`` -- a true Δ smaller than
  this is missed more often than one time in five with these seeds.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

ALPHA = 0.05
POWER = 0.80


@dataclasses.dataclass(frozen=True)
class Paired:
    """The paired analysis of per-seed differences (NaN where n is too small)."""

    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    mde: float

    def excludes_zero(self, higher_is_better: bool = True) -> bool:
        """Whether the 95% CI lies entirely on the better side of 0."""
        if self.n < 2 or math.isnan(self.ci_low):
            return False
        return self.ci_low > 0 if higher_is_better else self.ci_high < 0


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile (scipy)."""
    from scipy import stats

    return float(stats.t.ppf(q, df))


def paired(deltas: Sequence[float], alpha: float = ALPHA, power: float = POWER) -> Paired:
    """Mean, sd, 95% CI and minimum detectable effect of per-seed differences."""
    d = np.asarray(list(deltas), dtype=np.float64)
    n = int(d.size)
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    mean = float(d.mean())
    if n == 1:
        return Paired(1, mean, math.nan, math.nan, math.nan, math.nan)
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    t_ci = t_quantile(1 - alpha / 2, n - 1)
    half = t_ci * se
    mde = (t_ci + t_quantile(power, n - 1)) * se
    return Paired(n, mean, sd, mean - half, mean + half, mde)

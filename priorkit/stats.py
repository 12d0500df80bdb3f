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

Those intervals count the seeds only, on one fixed test sample.  For entity F1,
:func:`bootstrap_f1_delta` also resamples the test sentences (a paired bootstrap over
sentences and seeds, from the runs' saved per-sentence predictions).
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


def f1_from_counts(correct: np.ndarray, predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Micro F1 = 2·correct / (predicted + gold), 0 where there is nothing to find or predict."""
    denom = predicted + gold
    return np.divide(2.0 * correct, denom, out=np.zeros(np.broadcast(correct, denom).shape), where=denom > 0)


def bootstrap_f1_delta(setting: Sequence[np.ndarray], reference: Sequence[np.ndarray], *,
                       replicates: int = 2000, seed: int = 0, alpha: float = ALPHA,
                       chunk: int = 200) -> tuple[float, float]:
    """The paired bootstrap CI of a mean entity-F1 difference over test sentences *and* seeds.

    ``setting[s]`` and ``reference[s]`` are seed ``s``'s per-sentence entity counts, (N, 3):
    correct, predicted, gold (:func:`priorkit.training.predictions.entity_counts`), on the
    same N sentences.  One replicate draws N sentences with replacement -- the same draw for
    every seed and both sides, as they were scored on the same sample -- and the seeds with
    replacement; it recomputes each drawn seed's micro F1 difference on the drawn sentences
    and averages them.  The interval is the replicates' ``alpha/2`` and ``1 - alpha/2``
    percentiles.  The t interval of :func:`paired` counts only the seeds, on one fixed
    sample of sentences; this one also counts which sentences the test sample happened to hold.
    """
    a = np.stack([np.asarray(x, dtype=np.float64) for x in setting])
    b = np.stack([np.asarray(x, dtype=np.float64) for x in reference])
    if a.shape != b.shape or a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"expected two (seeds, sentences, 3) count arrays of one shape, got {a.shape} and {b.shape}")
    n_seeds, n = a.shape[:2]
    if n_seeds == 0 or n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    deltas = []
    for start in range(0, replicates, chunk):
        r = min(chunk, replicates - start)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=r).astype(np.float64)  # (r, N)
        sa = np.einsum("rn,snk->rsk", weights, a)
        sb = np.einsum("rn,snk->rsk", weights, b)
        d = f1_from_counts(*np.moveaxis(sa, 2, 0)) - f1_from_counts(*np.moveaxis(sb, 2, 0))  # (r, S)
        pick = rng.integers(0, n_seeds, size=(r, n_seeds))
        deltas.append(np.take_along_axis(d, pick, axis=1).mean(axis=1))
    d = np.concatenate(deltas)
    return float(np.quantile(d, alpha / 2)), float(np.quantile(d, 1 - alpha / 2))

"""The paired analysis every comparison table reports, against values worked out by hand
from the formulas with Student's t quantiles read from a table."""
from __future__ import annotations

import math

import pytest

from priorkit.stats import paired

# Student's t quantiles from a printed table
T975 = {2: 4.302653, 4: 2.776445}
T80 = {2: 1.060660, 4: 0.940965}


def test_paired_five_seeds():
    p = paired([1.0, 2.0, 3.0, 4.0, 5.0])
    sd = math.sqrt(2.5)  # sum of squares 10 over n-1 = 4
    se = sd / math.sqrt(5)
    assert p.n == 5 and p.mean == pytest.approx(3.0) and p.sd == pytest.approx(sd)
    assert (p.ci_low, p.ci_high) == pytest.approx((3 - T975[4] * se, 3 + T975[4] * se), abs=1e-5)
    assert p.mde == pytest.approx((T975[4] + T80[4]) * se, abs=1e-5)
    assert p.excludes_zero()
    assert not p.excludes_zero(higher_is_better=False)


def test_paired_three_seeds_straddling_zero():
    p = paired([0.02, -0.01, 0.005])
    mean = 0.015 / 3
    sd = math.sqrt(((0.02 - mean) ** 2 + (-0.01 - mean) ** 2 + (0.005 - mean) ** 2) / 2)
    se = sd / math.sqrt(3)
    assert p.sd == pytest.approx(sd)
    assert p.ci_low == pytest.approx(mean - T975[2] * se, abs=1e-6)
    assert p.mde == pytest.approx((T975[2] + T80[2]) * se, abs=1e-6)
    assert p.ci_low < 0 < p.ci_high and not p.excludes_zero()


def test_paired_with_too_few_seeds_gives_no_interval():
    one = paired([0.3])
    assert one.n == 1 and one.mean == pytest.approx(0.3) and math.isnan(one.ci_low) and math.isnan(one.mde)
    assert not one.excludes_zero()
    assert paired([]).n == 0

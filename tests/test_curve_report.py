"""Where a learning curve's gain stops being detected (priorkit.evaluation.curve)."""
from __future__ import annotations

from priorkit.evaluation.curve import Comparison, first_ci_with_zero, write_curve


def _c(setting: str, fraction: float, deltas: list[float]) -> Comparison:
    return Comparison(setting, "none", fraction, list(range(len(deltas))), deltas)


def test_first_ci_with_zero_is_where_detection_ends_for_good():
    comps = [
        _c("a", 0.01, [0.05, 0.06, 0.055, 0.052]),   # detected
        _c("a", 0.1, [0.01, -0.02, 0.03, 0.0]),      # CI includes 0
        _c("a", 1.0, [0.021, 0.02, 0.022, 0.019]),   # detected again: the end of the curve counts
        _c("b", 0.01, [0.05, 0.06, 0.055, 0.052]),
        _c("b", 0.1, [0.01, -0.02, 0.03, 0.0]),
        _c("b", 1.0, [0.0, 0.01, -0.01, 0.005]),
        _c("c", 0.01, [0.01, -0.01, 0.0, 0.02]),     # never detected
        _c("c", 1.0, [0.01, -0.01, 0.0, 0.02]),
        _c("d", 0.01, [-0.05, -0.06, -0.055, -0.052]),  # a detected loss also excludes 0
        _c("d", 1.0, [0.03]),                          # one seed: no CI, counts as including 0
    ]
    got = first_ci_with_zero(comps)
    assert got == {("a", "none"): None, ("b", "none"): 0.1, ("c", "none"): 0.01, ("d", "none"): 1.0}


def test_curve_markdown_names_the_fractions(tmp_path):
    comps = [_c("b", 0.01, [0.05, 0.06, 0.055]), _c("b", 0.1, [0.01, -0.02, 0.03])]
    files = write_curve(comps, tmp_path, "t", "Δ", extra={"x": ["first", "second"]}, appendix="\nTAIL\n")
    md = files["curve_md"].read_text()
    assert "| b | none | 0.1 | 0.01 |" in md and md.rstrip().endswith("TAIL")
    rows = files["curve_csv"].read_text().splitlines()
    assert rows[0].endswith(",x") and rows[1].endswith(",first") and rows[2].endswith(",second")

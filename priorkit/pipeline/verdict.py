"""Does a prior pay off?  The verdict shared by ``sweep.controls`` and ``tune.arms``.

A prior setting *pays off* at a training fraction only when the 95% CI of its paired
Δ (same seeds on both sides, :func:`priorkit.stats.paired`) lies entirely on the
metric's better side of 0 against the baseline (no prior) **and** against each of its
controls: knowledge-free twins of the prior (``shuffled`` values, ``random-spans``
features) that keep its shape but not what it knows.  Beating no prior alone can be
the extra parameters, the values' distribution or a tuned learning rate at work.

:func:`judge` is the pure rule, from :class:`~priorkit.pipeline.curve.Comparison`
objects; :func:`control_comparisons` / :func:`control_verdicts` / :func:`write_controls`
apply it to a sweep's per-seed scores (``controls.md``, ``controls.csv``, ``controls.png``).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import curve as cv
from .config import PipelineConfig
from .curve import Comparison
from .tasks import is_better

CONTROLS_MD, CONTROLS_CSV, CONTROLS_PNG = "controls.md", "controls.csv", "controls.png"

#: {(setting, fraction): {seed: score}}, the form :func:`curve.compare` reads
Scores = Mapping[tuple[str, float], Mapping[int, float]]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether ``setting`` pays off at ``fraction``, and why (not)."""

    fraction: float
    setting: str
    pays_off: bool
    reason: str

    @property
    def label(self) -> str:
        """``yes`` or ``no: <what failed>`` (the ``pays off`` column)."""
        return "yes" if self.pays_off else f"no: {self.reason}"

    @property
    def line(self) -> str:
        return f"fraction {self.fraction:g}, {self.setting}: {'pays off' if self.pays_off else 'does not pay off'}" \
               f" ({self.reason})"


def _side(higher_is_better: bool) -> str:
    return "above" if higher_is_better else "below"


def shortfall(c: Comparison, higher_is_better: bool, scale: float = 100.0) -> str | None:
    """Why ``c`` does not show ``c.setting`` better than ``c.reference`` (None when it does)."""
    s = c.stats
    if s.excludes_zero(higher_is_better):
        return None
    if s.n < 2:
        return f"vs {c.reference}: {s.n} paired seed(s), no CI"
    return (f"vs {c.reference}: 95% CI [{s.ci_low * scale:+.2f}, {s.ci_high * scale:+.2f}] "
            f"not {_side(higher_is_better)} 0")


def judge(setting: str, fraction: float, baseline: str, vs_baseline: Comparison | None,
          vs_controls: Mapping[str, Comparison | None], higher_is_better: bool, *, scale: float = 100.0,
          no_control: str = "no control") -> Verdict:
    """The rule: both CIs (vs the baseline, vs every control) on the better side of 0.

    ``vs_controls`` maps each control's name to the comparison ``setting`` minus that
    control (None: no paired runs yet); ``no_control`` says where a control would be named
    when the setting has none (then it cannot pay off: the values alone are not ruled out).
    """
    if vs_baseline is None:
        return Verdict(fraction, setting, False, f"no paired runs with {baseline} yet")
    missing = [name for name, c in vs_controls.items() if c is None]
    if missing:
        return Verdict(fraction, setting, False, f"no paired runs with control {', '.join(missing)} yet")
    failed = [why for c in [vs_baseline, *vs_controls.values()]
              if c is not None and (why := shortfall(c, higher_is_better, scale)) is not None]
    if failed:
        return Verdict(fraction, setting, False, "; ".join(failed))
    if not vs_controls:
        return Verdict(fraction, setting, False,
                       f"beats {baseline}, but {no_control} to rule out the values alone")
    return Verdict(fraction, setting, True, f"beats {baseline} and {', '.join(vs_controls)}")


def control_comparisons(scores: Scores, controls: Mapping[str, str], baseline: str,
                        fractions: Sequence[float]) -> list[Comparison]:
    """Per fraction and ``controls`` entry: the setting vs the baseline, then vs its control."""
    out = []
    for f in fractions:
        for setting, control in controls.items():
            for reference in (baseline, control):
                c = cv.compare(scores, setting, reference, f)
                if c is not None:
                    out.append(c)
    return out


def control_verdicts(comps: Sequence[Comparison], controls: Mapping[str, str], baseline: str,
                     fractions: Sequence[float], higher_is_better: bool, scale: float = 100.0) -> list[Verdict]:
    """One verdict per (fraction, ``controls`` key) from the comparisons of :func:`control_comparisons`."""
    by = {(c.fraction, c.setting, c.reference): c for c in comps}
    return [judge(setting, f, baseline, by.get((f, setting, baseline)),
                  {control: by.get((f, setting, control))}, higher_is_better, scale=scale)
            for f in fractions for setting, control in controls.items()]


def seeds_ahead(c: Comparison, higher_is_better: bool) -> int:
    """Seeds on which the setting scored better than its reference."""
    return sum(1 for d in c.deltas if (d > 0 if higher_is_better else d < 0))


def write_controls(comps: Sequence[Comparison], verdicts: Sequence[Verdict], folder: Path, *, title: str,
                   baseline: str, ylabel: str, higher_is_better: bool, scale: float = 100.0,
                   plot: bool = True) -> dict[str, Path]:
    """``controls.md`` / ``controls.csv`` (the power table, seeds ahead, pays off) and
    ``controls.png`` (each seed's paired Δ vs the baseline and vs the control)."""
    folder.mkdir(parents=True, exist_ok=True)
    label = {(v.fraction, v.setting): v.label for v in verdicts}
    ahead = [f"{seeds_ahead(c, higher_is_better)}/{len(c.deltas)}" for c in comps]
    pays = [label.get((c.fraction, c.setting), "") for c in comps]
    unit = "" if math.isclose(scale, 1.0) else " (x100)"
    note = (f"Each setting against `{baseline}` (no prior) and against its control (`sweep.controls`), "
            f"paired by seed; Δ = setting − vs{unit}. MDE: the smallest Δ these seeds detect with 80% power "
            f"at α 0.05. A setting pays off only when both 95% CIs lie {_side(higher_is_better)} 0 "
            "(the metric's better side).")
    text = cv.markdown(comps, title, note, scale, extra={"seeds ahead": ahead, "pays off": pays})
    text += "\n## Verdict\n\n| fraction | setting | pays off |\n|---|---|---|\n"
    text += "".join(f"| {v.fraction:g} | {v.setting} | {v.label} |\n" for v in verdicts)
    (folder / CONTROLS_MD).write_text(text)
    files = {"controls_md": folder / CONTROLS_MD,
             "controls_csv": cv.write_csv(comps, folder / CONTROLS_CSV,
                                          extra={"seeds_ahead": [a.split("/")[0] for a in ahead],
                                                 "pays_off": pays})}
    if plot and comps:
        files["controls_png"] = cv.plot_paired(comps, folder / CONTROLS_PNG, title, ylabel, scale)
    return files


def sweep_controls(cfg: PipelineConfig, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Verdict], dict[str, Path]]:
    """A sweep's ``sweep.controls`` report from its result rows (``results.csv``), in ``cfg.out_dir``."""
    sw = cfg.sweep
    if not sw.controls:
        return [], {}
    column = f"{sw.split}_{cfg.task.metric}"
    scores: dict[tuple[str, float], dict[int, float]] = {}
    for r in rows:
        if r.get(column) is not None:
            scores.setdefault((r["prior"], float(r["fraction"])), {})[int(r["seed"])] = float(r[column])
    higher = is_better(cfg.task.metric, 1.0, 0.0)
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    comps = control_comparisons(scores, sw.controls, sw.baseline, sw.fractions)
    verdicts = control_verdicts(comps, sw.controls, sw.baseline, sw.fractions, higher, scale)
    unit = "" if scale == 1.0 else " x100"
    files = write_controls(comps, verdicts, cfg.out_dir, title=f"{cfg.name}: priors vs {sw.baseline} and their "
                           f"controls ({cfg.task.metric} on {sw.split})", baseline=sw.baseline,
                           ylabel=f"Δ {cfg.task.metric}{unit}", higher_is_better=higher, scale=scale, plot=sw.plot)
    return verdicts, files

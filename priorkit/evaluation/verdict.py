"""Does a prior pay off?  The verdict shared by ``sweep.controls`` and ``tune.arms``.

A prior setting *pays off* at a training fraction only when the 95% CI of its paired
Δ (same seeds on both sides, :func:`priorkit.stats.paired`) lies entirely on the
metric's better side of 0 against the baseline (no prior) **and** against each of its
controls: knowledge-free twins of the prior (``shuffled`` values, ``random-spans``
features) that keep its shape but not what it knows.  Beating no prior alone can be
the extra parameters, the values' distribution or a tuned learning rate at work.

:func:`judge` is the pure rule, from :class:`~priorkit.evaluation.curve.Comparison`
objects; :func:`control_comparisons` / :func:`control_verdicts` / :func:`write_controls`
apply it to a sweep's per-seed scores (``controls.md``, ``controls.csv``, ``controls.png``).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import curve as cv
from ..config import PipelineConfig
from .curve import Comparison
from ..training.tasks import is_better

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
    #: "pays off" (vs the baseline and the controls) or "posthoc" (vs the post-hoc arms: does
    #: the knowledge need a learned channel, or does merging the dictionary afterwards do as well?)
    question: str = "pays off"
    #: False when ``setting`` has no finished run at ``fraction`` at all (:func:`mark_not_run`)
    ran: bool = True
    #: False when a side the rule needs (the baseline, a control) has no paired run at
    #: ``fraction`` and nothing run so far already fails it: the rule cannot answer yet
    judged: bool = True

    @property
    def label(self) -> str:
        """``yes``, ``no: <what failed>``, ``not judged: <what is missing>`` or ``not run``
        (the ``pays off`` column)."""
        if not self.ran:
            return "not run"
        if not self.judged:
            return f"not judged: {self.reason}"
        return "yes" if self.pays_off else f"no: {self.reason}"

    @property
    def line(self) -> str:
        if not self.ran:
            return f"fraction {self.fraction:g}, {self.setting}: not run"
        if not self.judged:
            return f"fraction {self.fraction:g}, {self.setting}: not judged ({self.reason})"
        if self.question == "posthoc":
            did = "beats" if self.pays_off else "does not beat"
            return f"fraction {self.fraction:g}, {self.setting}: {did} the dictionary merged afterwards ({self.reason})"
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
    failed = [why for c in [vs_baseline, *vs_controls.values()]
              if c is not None and (why := shortfall(c, higher_is_better, scale)) is not None]
    if failed:  # a comparison that fails settles it, whatever is still missing
        return Verdict(fraction, setting, False, "; ".join(failed))
    if vs_baseline is None:
        return Verdict(fraction, setting, False, f"no paired runs with {baseline} yet", judged=False)
    missing = [name for name, c in vs_controls.items() if c is None]
    if missing:
        return Verdict(fraction, setting, False, f"no paired runs with control {', '.join(missing)} yet",
                       judged=False)
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


def posthoc_comparisons(scores: Scores, judged: Sequence[str], posthoc: Sequence[str],
                        fractions: Sequence[float]) -> list[Comparison]:
    """Per fraction: every judged setting against every post-hoc arm (``sweep.posthoc``)."""
    return [c for f in fractions for setting in judged for arm in posthoc
            if (c := cv.compare(scores, setting, arm, f)) is not None]


def posthoc_verdicts(comps: Sequence[Comparison], judged: Sequence[str], posthoc: Sequence[str],
                     fractions: Sequence[float], higher_is_better: bool, scale: float = 100.0) -> list[Verdict]:
    """Whether each judged setting beats every post-hoc arm (each 95% CI on the better side of 0)."""
    by = {(c.fraction, c.setting, c.reference): c for c in comps}
    out = []
    for f in fractions:
        for setting in judged:
            got = {arm: by.get((f, setting, arm)) for arm in posthoc}
            missing = [a for a, c in got.items() if c is None]
            failed = [why for c in got.values() if c is not None
                      and (why := shortfall(c, higher_is_better, scale)) is not None]
            if failed:
                out.append(Verdict(f, setting, False, "; ".join(failed), "posthoc"))
            elif missing:
                out.append(Verdict(f, setting, False, f"no paired runs with {', '.join(missing)} yet", "posthoc",
                                   judged=False))
            else:
                out.append(Verdict(f, setting, True, f"vs {', '.join(posthoc)}", "posthoc"))
    return out


def mark_not_run(verdicts: Sequence[Verdict], scores: Scores) -> list[Verdict]:
    """The verdicts of settings with no finished run at their fraction marked ``not run``.

    Without this such a setting would read "does not pay off (no paired runs with none
    yet)", as if it had been run and failed, when a sweep covers some arms at some
    fractions only (cells run by hand, ``sweep.priors`` cut down on the command line)."""
    return [v if scores.get((v.setting, v.fraction)) else
            dataclasses.replace(v, pays_off=False, reason="not run", ran=False) for v in verdicts]


def seeds_ahead(c: Comparison, higher_is_better: bool) -> int:
    """Seeds on which the setting scored better than its reference."""
    return sum(1 for d in c.deltas if (d > 0 if higher_is_better else d < 0))


def write_controls(comps: Sequence[Comparison], verdicts: Sequence[Verdict], folder: Path, *, title: str,
                   baseline: str, ylabel: str, higher_is_better: bool, scale: float = 100.0,
                   plot: bool = True, posthoc: Sequence[str] = (),
                   sentence_cis: Sequence[tuple[float, float] | None] | None = None) -> dict[str, Path]:
    """``controls.md`` / ``controls.csv`` (the power table, seeds ahead, pays off) and
    ``controls.png`` (each seed's paired Δ vs the baseline and vs the control).

    Rows against a ``posthoc`` arm get a ``beats the merge`` cell (from the verdicts whose
    ``question`` is "posthoc") instead of ``pays off``; ``sentence_cis`` (one per
    comparison) adds a ``95% CI (sent.+seeds)`` column."""
    folder.mkdir(parents=True, exist_ok=True)
    label = {(v.fraction, v.setting): v.label for v in verdicts if v.question != "posthoc"}
    merge = {(v.fraction, v.setting): v.label for v in verdicts if v.question == "posthoc"}
    ahead = [f"{seeds_ahead(c, higher_is_better)}/{len(c.deltas)}" for c in comps]
    vs_merge = [c.reference in posthoc for c in comps]
    pays = ["" if m else label.get((c.fraction, c.setting), "") for c, m in zip(comps, vs_merge)]
    extra: dict[str, list[str]] = {}
    if sentence_cis is not None:
        extra["95% CI (sent.+seeds)"] = ["" if ci is None else f"[{ci[0] * scale:+.2f}, {ci[1] * scale:+.2f}]"
                                         for ci in sentence_cis]
    extra.update({"seeds ahead": ahead, "pays off": pays})
    if posthoc:  # this row's own comparison; the verdict below needs every post-hoc arm beaten
        extra["beats the merge"] = ["" if not m else "yes" if (why := shortfall(c, higher_is_better, scale)) is None
                                    else f"no: {why}" for c, m in zip(comps, vs_merge)]
    unit = "" if math.isclose(scale, 1.0) else " (x100)"
    note = (f"Each setting against `{baseline}` (no prior) and against its control (`sweep.controls`), "
            f"paired by seed; Δ = setting − vs{unit}. MDE: the smallest Δ these seeds detect with 80% power "
            f"at α 0.05. A setting pays off only when both 95% CIs lie {_side(higher_is_better)} 0 "
            "(the metric's better side).")
    if posthoc:
        note += (f" Rows against {', '.join(f'`{a}`' for a in posthoc)} (`sweep.posthoc`: the dictionary merged "
                 "into a trained setting's predictions afterwards, no training) ask whether the knowledge needs a "
                 "learned channel: `beats the merge` is yes when the 95% CI against every post-hoc arm lies "
                 f"{_side(higher_is_better)} 0.")
    if sentence_cis is not None:
        note += (" 95% CI (sent.+seeds): a paired bootstrap over the test sentences and the seeds "
                 "(docs/tune.md#power); the 95% CI of Δ counts the seeds only.")
    text = cv.markdown(comps, title, note, scale, extra=extra)
    if label or not merge:
        text += "\n## Verdict\n\n| fraction | setting | pays off |\n|---|---|---|\n"
        text += "".join(f"| {v.fraction:g} | {v.setting} | {v.label} |\n" for v in verdicts if v.question != "posthoc")
    if merge:
        text += ("\n## Against the dictionary merged afterwards\n\n| fraction | setting | beats the merge |\n"
                 "|---|---|---|\n")
        text += "".join(f"| {v.fraction:g} | {v.setting} | {v.label} |\n" for v in verdicts if v.question == "posthoc")
    (folder / CONTROLS_MD).write_text(text)
    csv_extra: dict[str, list[Any]] = {"seeds_ahead": [a.split("/")[0] for a in ahead], "pays_off": pays}
    if sentence_cis is not None:
        csv_extra["ci_low_sentences"] = ["" if ci is None else ci[0] for ci in sentence_cis]
        csv_extra["ci_high_sentences"] = ["" if ci is None else ci[1] for ci in sentence_cis]
    if posthoc:
        csv_extra["beats_merge"] = extra["beats the merge"]
    files = {"controls_md": folder / CONTROLS_MD,
             "controls_csv": cv.write_csv(comps, folder / CONTROLS_CSV, extra=csv_extra)}
    if plot and comps:
        files["controls_png"] = cv.plot_paired(comps, folder / CONTROLS_PNG, title, ylabel, scale)
    return files


def sweep_controls(cfg: PipelineConfig, rows: Sequence[Mapping[str, Any]], cache: dict | None = None
                   ) -> tuple[list[Verdict], dict[str, Path]]:
    """A sweep's ``sweep.controls`` report from its result rows (``results.csv``), in ``cfg.out_dir``.

    With ``sweep.posthoc`` every setting of ``sweep.controls`` (without controls: every
    trained setting but the baseline) is also compared with each post-hoc arm that merges a
    dictionary (not the arms that mix trained models: they are recipes, not cheap baselines).
    """
    sw = cfg.sweep
    merges = [name for name, arm in sw.posthoc.items() if not arm.mix]
    if not sw.controls and not merges:
        return [], {}
    column = f"{sw.split}_{cfg.task.metric}"
    scores = cv.score_table(rows, column)
    higher = is_better(cfg.task.metric, 1.0, 0.0)
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    comps = control_comparisons(scores, sw.controls, sw.baseline, sw.fractions)
    verdicts = control_verdicts(comps, sw.controls, sw.baseline, sw.fractions, higher, scale)
    if merges:
        trained = {r["prior"] for r in rows} - set(sw.posthoc) - {sw.baseline}
        judged = list(sw.controls) or sorted(trained)
        merge_comps = posthoc_comparisons(scores, judged, merges, sw.fractions)
        comps = sorted(comps + merge_comps, key=lambda c: sw.fractions.index(c.fraction))  # stable: by fraction
        verdicts += posthoc_verdicts(merge_comps, judged, merges, sw.fractions, higher, scale)
    verdicts = mark_not_run(verdicts, scores)
    from ..training.plan import RunPlan
    from ..training.predictions import sentence_ci

    cache = {} if cache is None else cache  # run folder -> its per-sentence counts (shared with results.md)
    cis = [sentence_ci([(RunPlan(cfg, c.setting, None, c.fraction, s).run_dir,
                         RunPlan(cfg, c.reference, None, c.fraction, s).run_dir) for s in c.seeds],
                       sw.split, cfg.task.metric, cache) for c in comps]
    unit = "" if scale == 1.0 else " x100"
    files = write_controls(comps, verdicts, cfg.out_dir, title=f"{cfg.name}: priors vs {sw.baseline} and their "
                           f"controls ({cfg.task.metric} on {sw.split})", baseline=sw.baseline,
                           ylabel=f"Δ {cfg.task.metric}{unit}", higher_is_better=higher, scale=scale, plot=sw.plot,
                           posthoc=merges, sentence_cis=cis if any(ci is not None for ci in cis) else None)
    return verdicts, files

"""The final stage of ``tune.arms``: each arm's best setting on the reported split, then
the comparison that says whether a prior pays off.

For every arm the best trial's setting becomes a pipeline (``tune/final/<arm>.yaml``,
a one-setting sweep over ``tune.final.seeds`` and ``tune.final.fractions``); its runs
are ordinary sweep runs in ``tune/final/<arm>/frac*/seed*``, so a killed final stage
loses only the run it was training and the next start skips finished ones.

``tune/final.md`` / ``final-compare.csv``: every arm against the best no-prior arm,
and every prior arm against its controls (``control_of``), paired by seed, with the
power columns (:mod:`priorkit.stats`).  A prior arm **pays off** at a fraction when
the 95% CI of its Δ against no prior lies entirely on the better side of 0 and the
same holds against each of its controls; without a control arm the verdict says so.
``final.png`` shows the per-seed Δ; with several fractions ``curve.png`` / ``curve.md``
/ ``curve.csv`` show Δ against the fraction.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..evaluation import curve as cv
from ..config import PipelineConfig, config_from_dict, prior_settings
from ..training.tasks import is_better
from ..evaluation.verdict import judge
from . import arms as am
from .sampler import grid_size, uses_grid

FINAL_MD, FINAL_CSV, COMPARE_CSV, FINAL_PNG = "final.md", "final.csv", "final-compare.csv", "final.png"


def arm_configs(cfg: PipelineConfig, arms: dict[str, am.Arm], studies: dict[str, Any]) -> dict[str, PipelineConfig]:
    """Each arm's best setting as a pipeline, written to ``tune/final/<arm>.yaml``."""
    root = am.final_root(cfg)
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, arm in arms.items():
        raw = am.best_arm_pipeline(arm, studies[name], cfg.tune.final)
        raw["output_dir"] = str(root)
        path = root / f"{name}.yaml"
        t = studies[name].best_trial
        header = (f"# Arm {name!r}: the best setting of its study (trial {t.number}, validation "
                  f"{cfg.task.metric} {t.value:.4f}), written by `priorkit tune {cfg.source}`.\n"
                  f"# Sampled: {json.dumps(t.params, default=str)}\n"
                  "#   priorkit sweep THIS_FILE   reruns this arm's final runs (finished ones are skipped)\n")
        path.write_text(header + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        out[name] = config_from_dict(raw, source=str(path))
    return out


def run_final(configs: dict[str, PipelineConfig], log) -> None:
    """Train and score every arm's final runs (scored ones are skipped)."""
    from ..evaluation import sweep as sw
    from ..training.data import load_data
    from ..training.steps import precompute_step, run_one

    for name, acfg in configs.items():
        splits = load_data(acfg)
        for pname, prior in prior_settings(acfg).items():
            precompute_step(acfg, pname, prior, splits, log=lambda m: None)
        plans = sw.grid(acfg)
        for i, plan in enumerate(plans, start=1):
            log(f"final [{name}] run {i}/{len(plans)}: {plan.label}")
            run_one(plan, splits, log=log)


def collect_scores(configs: dict[str, PipelineConfig]) -> tuple[list[dict], dict[tuple[str, float], dict[int, float]]]:
    from ..evaluation import sweep as sw

    rows, scores = [], {}
    for name, acfg in configs.items():
        column = f"{acfg.sweep.split}_{acfg.task.metric}"
        for r in sw.collect_rows(acfg, sw.grid(acfg)):
            rows.append(r)
            if r.get(column) is not None:
                scores.setdefault((name, r["fraction"]), {})[r["seed"]] = float(r[column])
    return rows, scores


def comparisons(cfg: PipelineConfig, arms: dict[str, am.Arm], reference: str,
                scores: dict[tuple[str, float], dict[int, float]]) -> list[cv.Comparison]:
    fractions = list(cfg.tune.final.fractions or [cfg.tune.fraction])
    out = []
    for f in fractions:
        for name in arms:
            if name != reference:
                c = cv.compare(scores, name, reference, f)
                if c is not None:
                    out.append(c)
        for name, arm in arms.items():
            if arm.control_of is not None:
                c = cv.compare(scores, arm.control_of, name, f)
                if c is not None:
                    out.append(c)
    return out


def verdicts(cfg: PipelineConfig, arms: dict[str, am.Arm], reference: str,
             comps: list[cv.Comparison]) -> list[tuple[float, str, str]]:
    """(fraction, prior arm, verdict) for every prior arm that is not a control
    (the rule: :func:`priorkit.evaluation.verdict.judge`)."""
    higher = is_better(cfg.task.metric, 1.0, 0.0)
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    by = {(c.fraction, c.setting, c.reference): c for c in comps}
    out = []
    for f in sorted({c.fraction for c in comps}):
        for name, arm in arms.items():
            if not arm.has_prior or arm.control_of is not None:
                continue
            controls = {n: by.get((f, name, n)) for n, a in arms.items() if a.control_of == name}
            v = judge(name, f, reference, by.get((f, name, reference)), controls, higher, scale=scale,
                      no_control=f"no control arm (control_of: {name})")
            said = "pays off: " if v.pays_off else "does not pay off: " if v.judged else "not judged: "
            out.append((f, name, said + v.reason))
    return out


def write_final(cfg: PipelineConfig, arms: dict[str, am.Arm], reference: str,
                configs: dict[str, PipelineConfig]) -> tuple[list[cv.Comparison], list, dict[str, Path]]:
    from ..evaluation import sweep as sw

    root = cfg.out_dir / "tune"
    rows, scores = collect_scores(configs)
    comps = comparisons(cfg, arms, reference, scores)
    verdict = verdicts(cfg, arms, reference, comps)
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    unit = "" if scale == 1.0 else " x100"
    split = cfg.tune.final.split
    note = (f"Each arm's best setting (own search of {cfg.tune.trials} trial(s) on the validation slice), "
            f"trained with seeds {cfg.tune.final.seeds} and scored on the {split} split. Δ = setting − vs, "
            f"paired by seed ({cfg.task.metric}{unit}); `{reference}` is the best no-prior arm. MDE: the smallest "
            "Δ these seeds detect with 80% power at α 0.05.")
    text = cv.markdown(comps, f"{cfg.name}: arms compared on {split}", note, scale)
    text += "\n## Verdict\n\nA prior pays off only when the 95% CI of Δ excludes 0 on the better side " \
            "against no prior and against each of its controls.\n\n| fraction | arm | verdict |\n|---|---|---|\n"
    text += "".join(f"| {f:g} | {n} | {v} |\n" for f, n, v in verdict)
    root.mkdir(parents=True, exist_ok=True)
    (root / FINAL_MD).write_text(text)
    files = {"final_md": root / FINAL_MD, "final_compare_csv": cv.write_csv(comps, root / COMPARE_CSV)}
    if rows:
        sw.write_csv(rows, root / FINAL_CSV)
        files["final_csv"] = root / FINAL_CSV
    if comps:
        files["final_png"] = cv.plot_paired(comps, root / FINAL_PNG, f"{cfg.name}: arms on {split}",
                                            f"Δ {cfg.task.metric}{unit}", scale)
    files.update(cv.write_curve(comps, root, f"{cfg.name}: Δ against the training fraction ({split})",
                                f"Δ {cfg.task.metric}{unit}", scale))
    return comps, verdict, files


def tune_arms(cfg: PipelineConfig, *, storage: str | None = None, study_name: str | None = None,
              trials: int | None = None, timeout: float | None = None, final: bool = True,
              report_only: bool = False, dry_run: bool = False, log=print) -> dict[str, Path]:
    """``priorkit tune`` on a pipeline with ``tune.arms``: one study per arm, then the final
    comparison (once every arm has its budget)."""
    from . import study as st

    arms = am.prepare_arms(cfg, cfg.raw, log=log)
    if trials:
        for arm in arms.values():
            arm.ctx.cfg.tune.trials = trials
    if dry_run:
        for name, arm in arms.items():
            size = grid_size(arm.dims)
            how = "grid" if uses_grid(arm.ctx.cfg, arm.dims) else arm.ctx.tune.sampler
            log(f"arm {name}: {'prior ' + arm.ctx.cfg.prior.provider if arm.has_prior else 'no prior'}"
                + (f", control of {arm.control_of}" if arm.control_of else "")
                + f"; {am.arm_budget(arm)} trial(s), {how} sampler"
                + (f" over a grid of {size}" if size else ""))
            for dim in arm.dims:
                what = (f"one of {list(dim.labels)}" if dim.categorical else
                        f"[{dim.space.low:g}, {dim.space.high:g}]" + (" log" if dim.space.log else ""))
                log(f"  {dim.path}: {what}")
        return {}
    studies = {}
    for name, arm in arms.items():
        studies[name] = (am.open_arm_study(arm, storage, study_name, create=False) if report_only
                         else am.run_arm(arm, storage=storage, base_name=study_name, timeout=timeout))
    unfinished = [n for n, a in arms.items() if st.finished_count(studies[n]) < am.arm_budget(a)
                  or am.best_value(a, studies[n]) is None]
    for name, arm in arms.items():
        value = am.best_value(arm, studies[name])
        if value is not None:
            log(f"arm {name}: best validation {cfg.task.metric} {value:.4f} {studies[name].best_trial.params}")
    if unfinished:
        log(f"arms without their budget or a complete trial: {', '.join(unfinished)}; the final comparison "
            "runs once every arm has them")
        return {}
    if not final:
        return {}
    reference = am.reference_arm(arms, studies)
    configs = arm_configs(cfg, arms, studies)
    with st.file_lock(cfg.out_dir / "tune" / "final.lock", wait=False) as mine:
        if not mine:
            log("another process is running the final comparison; not starting it twice")
            return {}
        if not report_only:
            run_final(configs, log)
        comps, verdict, files = write_final(cfg, arms, reference, configs)
    for f, n, v in verdict:
        log(f"fraction {f:g}, {n}: {v}")
    return files

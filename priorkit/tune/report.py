"""What a study leaves behind, in ``runs/<name>/tune/``:

* ``trials.csv`` / ``trials.md``: every trial with its state, score, delta against the
  baseline, parameters and time;
* ``history.png`` (optimisation history) and ``importance.png`` (parameter
  importances, Optuna's default evaluator: PED-ANOVA in Optuna 5), drawn with Optuna's matplotlib plots;
* ``best.yaml``: the pipeline with the best setting as its ``prior`` (sampled
  ``train.*`` fields become the setting's own ``prior.train``) and a sweep that
  compares it with no prior and the file's own prior -- ``priorkit run best.yaml``
  trains the tuned setting, ``priorkit sweep best.yaml`` repeats the final comparison;
* ``final.md`` / ``final.csv`` / ``final.png``: that comparison on the reported split
  with several seeds (paired differences, 95% CI).
"""
from __future__ import annotations

import copy
import csv
import json
import math
from pathlib import Path
from typing import Any

import yaml

from ..config import PipelineConfig, config_from_dict, prior_settings
from . import space as sp
from .study import TuneContext, TuneError, params_digest

TRIALS_CSV, TRIALS_MD = "trials.csv", "trials.md"
HISTORY_PNG, IMPORTANCE_PNG = "history.png", "importance.png"
BEST_YAML = "best.yaml"
FINAL = "final"


def trial_rows(study) -> list[dict[str, Any]]:
    rows = []
    for t in study.get_trials(deepcopy=False):
        ua = t.user_attrs
        rows.append({
            "trial": t.number,
            "state": t.state.name.lower(),
            "value": t.value,
            "delta": ua.get("delta", ua.get("delta_at_prune")),
            "epochs": len(ua["epochs"]) if "epochs" in ua else None,
            "seconds": ua.get("seconds"),
            "retry_of": ua.get("retry_of", t.system_attrs.get("failed_trial")),
            "error": ua.get("error"),
            **{f"param:{k}": v for k, v in t.params.items()},
        })
    return rows


def write_trials(study, root: Path, metric: str) -> dict[str, Path]:
    rows = trial_rows(study)
    root.mkdir(parents=True, exist_ok=True)
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with open(root / TRIALS_CSV, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["state"]] = counts.get(r["state"], 0) + 1
    params = [c for c in columns if c.startswith("param:")]
    head = ["trial", "state", metric, "Δ vs no prior", "epochs", "s"] + [p[6:] for p in params] + ["error"]
    lines = [f"# Study {study.study_name}: {len(rows)} trials "
             f"({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))})", "",
             f"Validation {metric} (mean over the trial's seeds); Δ against the no-prior baseline of the "
             "same seeds (at the pruning epoch for pruned trials).", "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [str(r["trial"]), r["state"], _num(r["value"]), _num(r["delta"], signed=True),
                 "" if r["epochs"] is None else str(r["epochs"]), _num(r["seconds"], digits=0)]
        cells += [_cell(r.get(p)) for p in params] + [_cell(r["error"])]
        lines.append("| " + " | ".join(cells) + " |")
    (root / TRIALS_MD).write_text("\n".join(lines) + "\n")
    return {"trials_csv": root / TRIALS_CSV, "trials_md": root / TRIALS_MD}


def _num(x: Any, signed: bool = False, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v).replace("|", "/")


def write_plots(study, root: Path) -> dict[str, Path]:
    """Optimisation history and parameter importances as PNG (when there is enough to draw)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.trial import TrialState

    out: dict[str, Path] = {}
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        return out
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
        ax = optuna.visualization.matplotlib.plot_optimization_history(study)
        ax.figure.set_size_inches(7, 4.2)
        ax.figure.tight_layout()
        ax.figure.savefig(root / HISTORY_PNG, dpi=120)
        plt.close(ax.figure)
        out["history"] = root / HISTORY_PNG
        varied = {k for t in complete for k in t.params if len({str(u.params.get(k)) for u in complete}) > 1}
        if len(complete) >= 3 and varied:
            try:
                ax = optuna.visualization.matplotlib.plot_param_importances(study)
            except (RuntimeError, ValueError) as exc:  # e.g. every trial has the same value
                (root / "importance.txt").write_text(f"parameter importances not computed: {exc}\n")
            else:
                ax.figure.set_size_inches(7, 4.2)
                ax.figure.tight_layout()
                ax.figure.savefig(root / IMPORTANCE_PNG, dpi=120)
                plt.close(ax.figure)
                out["importance"] = root / IMPORTANCE_PNG
    return out


def importances(study) -> dict[str, float]:
    """Parameter importances (Optuna's default evaluator) of the complete trials ({} when they cannot be computed)."""
    import optuna
    from optuna.trial import TrialState

    if len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) < 3:
        return {}
    try:
        return optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError):
        return {}


# ---------------------------------------------------------------------------
# the best setting as a pipeline, and the final comparison
# ---------------------------------------------------------------------------
def best_trial(study):
    from optuna.trial import TrialState

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        raise TuneError(f"study {study.study_name!r} has no complete trial yet (pruned and failed trials do "
                        "not count); run more trials")
    return study.best_trial


def best_pipeline(ctx: TuneContext, params: dict[str, Any]) -> dict[str, Any]:
    """The pipeline dict of the best setting: ``prior`` = tuned (sampled ``train.*`` fields in
    ``prior.train``; sampled ``model.*`` fields apply to every setting), and a sweep against
    no prior and the file's own prior on the final seeds, fractions and split."""
    raw = copy.deepcopy(ctx.raw)
    raw.pop("tune", None)
    original_prior = copy.deepcopy(raw.get("prior"))
    applied = sp.apply({"prior": copy.deepcopy(original_prior) or {}, "train": {}, "model": raw.get("model") or {}},
                       ctx.dims, params)
    tuned = applied["prior"]
    tuned["train"] = {**(tuned.get("train") or {}), **applied["train"]}
    name = f"tuned-{params_digest(params)[:6]}"
    tuned["name"] = name
    raw["prior"] = tuned
    raw["model"] = applied["model"]
    tc = ctx.tune
    if tc.final.compare is not None:
        compare = copy.deepcopy(tc.final.compare)
    else:
        compare = {"none": None}
        if original_prior is not None:
            label = original_prior.get("name") or "prior"
            full = config_from_dict({**raw, "prior": original_prior}, source=ctx.cfg.source).prior
            entry = _explicit(full)
            entry["name"] = label
            compare[label] = entry
    raw["sweep"] = {
        "fractions": list(tc.final.fractions or [tc.fraction]),
        "seeds": list(tc.final.seeds),
        "priors": {**compare, name: {}},
        "baseline": "none" if "none" in compare else next(iter(compare)),
        "split": tc.final.split,
        "per_fraction": (ctx.raw.get("sweep") or {}).get("per_fraction", {}),
    }
    evaluate = raw.get("evaluate")
    if evaluate is not None and tc.final.split not in evaluate:
        raw["evaluate"] = [*evaluate, tc.final.split]
    return raw


def _explicit(prior) -> dict[str, Any]:
    """A PriorConfig as a complete mapping (so merging it over the tuned prior leaves nothing
    of the tuned one behind)."""
    import dataclasses

    d = dataclasses.asdict(prior)
    d.pop("name", None)
    return d


def control_command(raw: dict[str, Any]) -> str | None:
    """The sweep that trains *no prior* with the training fields the tuned setting changed
    (``prior.train``), or None when it changed none.

    A tuned learning rate can win on its own: the no-prior baseline kept the file's.
    Comparing the tuned prior with no prior at the same training settings tells what the
    prior adds (docs/tune.md).
    """
    tuned_train = (raw.get("prior") or {}).get("train") or {}
    if not tuned_train:
        return None
    sweep = raw.get("sweep") or {}
    sets = [f"--set name={raw['name']}-train-control"]
    sets += [f"--set train.{k}={json.dumps(v)}" for k, v in sorted(tuned_train.items())]
    grid = {"fractions": sweep.get("fractions"), "seeds": sweep.get("seeds"), "priors": {"none": None},
            "split": sweep.get("split", "eval")}
    sets.append("--set 'sweep=" + json.dumps(grid) + "'")
    return "priorkit sweep THIS_FILE " + " ".join(sets)


def write_best(ctx: TuneContext, study) -> tuple[Path, dict[str, Any]]:
    t = best_trial(study)
    raw = best_pipeline(ctx, t.params)
    config_from_dict(raw, source=str(ctx.root / BEST_YAML))  # it must load as written
    header = (f"# The best setting of study {study.study_name!r} (trial {t.number}, validation "
              f"{ctx.metric} {t.value:.4f}, {t.user_attrs.get('delta', float('nan')):+.4f} against no prior),\n"
              f"# written by `priorkit tune {ctx.cfg.source}`.\n"
              "#   priorkit run THIS_FILE      trains the tuned setting\n"
              "#   priorkit sweep THIS_FILE    compares it with the settings below on the reported split\n"
              f"# Sampled parameters: {json.dumps(t.params, default=str)}\n")
    control = control_command(raw)
    if control is not None:
        header += ("# The tuned setting also changed training fields (prior.train). To see what the prior\n"
                   "# adds beyond them, train no prior with the same fields and compare:\n"
                   f"#   {control}\n")
    path = ctx.root / BEST_YAML
    path.write_text(header + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return path, raw


def run_final(ctx: TuneContext, raw: dict[str, Any], log) -> Any:
    """Train and score the final comparison (cells already scored are skipped)."""
    cfg: PipelineConfig = config_from_dict(raw, source=str(ctx.root / BEST_YAML))
    return write_final(ctx, cfg, log, train=True)


def write_final(ctx: TuneContext, cfg: PipelineConfig, log, *, train: bool) -> Any:
    from ..evaluation import sweep as sw
    from ..training.data import load_data
    from ..training.steps import precompute_step, run_one

    plans = sw.grid(cfg)
    if train:
        splits = load_data(cfg)
        for name, prior in prior_settings(cfg).items():
            precompute_step(cfg, name, prior, splits, log=lambda m: None)
        for i, plan in enumerate(plans, start=1):
            log(f"final run {i}/{len(plans)}: {plan.label}")
            run_one(plan, splits, log=log)
    rows = sw.collect_rows(cfg, plans)
    column = f"{cfg.sweep.split}_{cfg.task.metric}"
    cells = sw.aggregate(rows, column, cfg.sweep.baseline, list(prior_settings(cfg)), cfg.sweep.fractions)
    root = ctx.root
    sw.write_csv(rows, root / f"{FINAL}.csv")
    (root / f"{FINAL}.md").write_text(sw.markdown_table(cfg, cells))
    files = {"final_md": root / f"{FINAL}.md", "final_csv": root / f"{FINAL}.csv"}
    if cells:
        png = sw.plot(cfg, cells, root / f"{FINAL}.png")
        if png is not None:
            files["final_png"] = png
        files.update(sw.curve_files(cfg, cells, root))
    return cfg, cells, files

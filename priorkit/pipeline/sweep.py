"""Low-resource sweeps: training fractions x seeds x prior settings, then a table and a plot.

Every cell is an ordinary run (:mod:`priorkit.pipeline.steps`), so a sweep
that is interrupted picks up where it stopped, and cells already scored are
skipped.  Fairness is structural: for one (fraction, seed) every prior
setting gets the same training subset, the same seed (hence the same new head
and batch order) and the same budget.

Outputs in ``runs/<name>/``: ``results.csv`` (one row per run), ``results.md``
(mean, sample standard deviation across seeds, delta against the baseline
setting, and how many seeds the setting beat the baseline on) and
``results.png`` (the metric against the fraction, error bars = std).
"""
from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import ranks
from .config import PipelineConfig, for_fraction, prior_settings
from .data import load_data
from .steps import Log, _silent, precompute_step, run_one
from .train import RunPlan, configure_torch

CSV_FILE, MD_FILE, PLOT_FILE = "results.csv", "results.md", "results.png"


@dataclasses.dataclass
class Cell:
    """Aggregate of one (prior setting, fraction) over seeds."""

    prior: str
    fraction: float
    values: list[float]
    baseline: list[float] | None = None  # the baseline's values for the same seeds (paired)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    @property
    def delta(self) -> float | None:
        if not self.baseline:
            return None
        return self.mean - float(np.mean(self.baseline))

    @property
    def delta_std(self) -> float | None:
        """Spread of the per-seed (paired) differences."""
        if not self.baseline or len(self.baseline) != len(self.values):
            return None
        d = np.asarray(self.values) - np.asarray(self.baseline)
        return float(np.std(d, ddof=1)) if len(d) > 1 else 0.0

    @property
    def delta_ci95(self) -> tuple[float, float] | None:
        """95% confidence interval of the mean paired difference (Student's t over seeds)."""
        if not self.baseline or len(self.baseline) != len(self.values) or len(self.values) < 2:
            return None
        from scipy import stats

        d = np.asarray(self.values) - np.asarray(self.baseline)
        half = float(stats.t.ppf(0.975, len(d) - 1) * np.std(d, ddof=1) / math.sqrt(len(d)))
        return float(d.mean()) - half, float(d.mean()) + half

    @property
    def wins(self) -> int | None:
        if not self.baseline or len(self.baseline) != len(self.values):
            return None
        return int(sum(v > b for v, b in zip(self.values, self.baseline)))


@dataclasses.dataclass
class SweepResult:
    cfg: PipelineConfig
    rows: list[dict[str, Any]]
    cells: list[Cell]
    files: dict[str, Path]


def grid(cfg: PipelineConfig) -> list[RunPlan]:
    """All runs of the sweep, fraction-major so early results are comparable across settings."""
    settings = prior_settings(cfg)
    return [RunPlan(for_fraction(cfg, fraction, prior), name, prior, fraction, seed)
            for fraction in cfg.sweep.fractions
            for seed in cfg.sweep.seeds
            for name, prior in settings.items()]


def run_sweep(cfg: PipelineConfig, *, force: bool = False, log: Log = print) -> SweepResult:
    """Precompute each prior setting once, train and score every cell, write the reports.

    Under a multi-process launcher every process trains every cell together
    (one data-parallel job per cell); the main process writes and reports.
    """
    configure_torch(cfg)  # joins the process group of a multi-process launch
    if not ranks.is_main():
        log = _silent
    splits = load_data(cfg)
    settings = prior_settings(cfg)
    plans = grid(cfg)
    log(f"sweep {cfg.name}: {len(cfg.sweep.fractions)} fraction(s) x {len(cfg.sweep.seeds)} seed(s) x "
        f"{len(settings)} prior setting(s) = {len(plans)} runs; data "
        + ", ".join(f"{s} {len(v)}" for s, v in splits.items()))
    for name, prior in settings.items():
        outcome = precompute_step(cfg, name, prior, splits, force=force, log=log)
        if outcome.status != "n/a":
            log(f"[{name}] precompute: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""))
    for i, plan in enumerate(plans, start=1):
        log(f"run {i}/{len(plans)}: {plan.label}")
        run_one(plan, splits, force=force, log=log)
    rows = collect_rows(cfg, plans)
    return ranks.on_main(write_reports, cfg, rows)


def collect_rows(cfg: PipelineConfig, plans: Sequence[RunPlan]) -> list[dict[str, Any]]:
    """One flat row per scored run (missing runs are left out)."""
    import json

    rows = []
    for plan in plans:
        path = plan.run_dir / "metrics.json"
        if not path.exists():
            continue
        m = json.loads(path.read_text())
        row: dict[str, Any] = {"prior": plan.prior_name, "fraction": plan.fraction, "seed": plan.seed}
        train = m.get("train") or {}
        row["train_examples"] = train.get("examples")
        row["train_seconds"] = train.get("seconds")
        for split, scores in m.get("metrics", {}).items():
            for k, v in scores.items():
                if k not in ("examples", "seconds"):
                    row[f"{split}_{k}"] = v
        row["run_dir"] = str(plan.run_dir)
        rows.append(row)
    return rows


def aggregate(rows: Sequence[dict[str, Any]], column: str, baseline: str, priors: Sequence[str],
              fractions: Sequence[float]) -> list[Cell]:
    """Cells per (prior, fraction), paired with the baseline's runs of the same seeds."""
    by = {}
    for r in rows:
        if r.get(column) is not None:
            by.setdefault((r["prior"], r["fraction"]), {})[r["seed"]] = float(r[column])
    cells = []
    for f in fractions:
        base = by.get((baseline, f), {})
        for p in priors:
            got = by.get((p, f), {})
            if not got:
                continue
            seeds = sorted(got)
            paired = [base[s] for s in seeds if s in base]
            cells.append(Cell(p, f, [got[s] for s in seeds],
                              paired if p != baseline and len(paired) == len(seeds) else None))
    return cells


def write_reports(cfg: PipelineConfig, rows: list[dict[str, Any]]) -> SweepResult:
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    metric = cfg.task.metric
    column = f"{cfg.sweep.split}_{metric}"
    priors = list(prior_settings(cfg))
    cells = aggregate(rows, column, cfg.sweep.baseline, priors, cfg.sweep.fractions)
    files = {"csv": out / CSV_FILE, "md": out / MD_FILE}
    write_csv(rows, files["csv"])
    files["md"].write_text(markdown_table(cfg, cells))
    if cfg.sweep.plot and cells:
        files["png"] = plot(cfg, cells, out / PLOT_FILE)
    return SweepResult(cfg, rows, cells, files)


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _fmt(x: float | None, signed: bool = False, scale: float = 1.0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x * scale:+.2f}" if signed else f"{x * scale:.2f}"


def table_rows(cfg: PipelineConfig, cells: Sequence[Cell]) -> list[list[str]]:
    """Rows shared by the Markdown file and the terminal table (metric in points, x100)."""
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    rows = []
    for c in cells:
        rows.append([
            f"{c.fraction:g}", c.prior, str(c.n),
            f"{_fmt(c.mean, scale=scale)} ± {_fmt(c.std, scale=scale)}",
            "" if c.delta is None else f"{_fmt(c.delta, True, scale)} ± {_fmt(c.delta_std, scale=scale)}",
            "" if c.delta_ci95 is None else
            f"[{_fmt(c.delta_ci95[0], True, scale)}, {_fmt(c.delta_ci95[1], True, scale)}]",
            "" if c.wins is None else f"{c.wins}/{c.n}",
            " ".join(_fmt(v, scale=scale) for v in c.values),
        ])
    return rows


TABLE_HEADER = ["fraction", "prior", "seeds", "mean ± std", "Δ vs baseline ± std", "95% CI of Δ", "wins",
                "per seed"]


def markdown_table(cfg: PipelineConfig, cells: Sequence[Cell]) -> str:
    unit = "" if cfg.task.metric == "mse" else " (x100)"
    lines = [
        f"# {cfg.name}: {cfg.task.metric}{unit} on the {cfg.sweep.split} split",
        "",
        f"Baseline: `{cfg.sweep.baseline}`. Std is the sample standard deviation over seeds; Δ is the "
        "difference of means, its ± the spread of the per-seed (paired) differences and its 95% CI "
        "Student's t over the paired differences; wins counts seeds where the setting beat the baseline.",
        "",
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "|".join("---" for _ in TABLE_HEADER) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(cfg, cells)]
    return "\n".join(lines) + "\n"


def print_table(cfg: PipelineConfig, cells: Sequence[Cell], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    unit = "" if cfg.task.metric == "mse" else " x100"
    table = Table(title=f"{cfg.name}: {cfg.task.metric}{unit} ({cfg.sweep.split} split, baseline "
                        f"{cfg.sweep.baseline})")
    for col in TABLE_HEADER:
        table.add_column(col, justify="left" if col in ("prior", "per seed") else "right")
    for r in table_rows(cfg, cells):
        table.add_row(*r)
    (console or Console()).print(table)


def plot(cfg: PipelineConfig, cells: Sequence[Cell], path: Path) -> Path:
    """The metric against the training fraction, one line per prior setting, error bars = std."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    priors = list(dict.fromkeys(c.prior for c in cells))
    fractions = sorted({c.fraction for c in cells})
    log_x = len(fractions) > 1 and max(fractions) / min(fractions) >= 5
    span = (max(fractions) - min(fractions)) or max(fractions)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for k, p in enumerate(priors):
        pts = sorted((c.fraction, c.mean, c.std) for c in cells if c.prior == p)
        xs = np.array([x for x, _, _ in pts])
        # a small horizontal offset keeps error bars of different settings apart
        offset = (k - (len(priors) - 1) / 2) * 0.03
        xs = xs * (10 ** offset) if log_x else xs + offset * span
        ax.errorbar(xs, [m for _, m, _ in pts], yerr=[s for _, _, s in pts], marker="o", capsize=4,
                    label=p, linewidth=1.5)
    if log_x:
        ax.set_xscale("log")
    elif len(fractions) == 1:  # one fraction: keep the settings' points close together
        ax.set_xlim(fractions[0] - 0.25 * span, fractions[0] + 0.25 * span)
    ax.set_xticks(fractions)
    ax.set_xticklabels([f"{f:g}" for f in fractions])
    ax.set_xlabel("training fraction")
    ax.set_ylabel(f"{cfg.task.metric} ({cfg.sweep.split})")
    seeds = max((c.n for c in cells), default=0)
    ax.set_title(f"{cfg.name}: mean ± std over {seeds} seed(s)")
    ax.grid(alpha=0.3)
    ax.legend(title="prior")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path

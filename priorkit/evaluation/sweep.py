"""Low-resource sweeps: training fractions x seeds x prior settings, then a table and a plot.

Every cell is an ordinary run (:mod:`priorkit.training.steps`), so a sweep
that is interrupted picks up where it stopped, and cells already scored are
skipped.  Fairness is structural: for one (fraction, seed) every prior
setting gets the same training subset, the same seed (hence the same new head
and batch order) and the same budget.

Outputs in ``runs/<name>/``: ``results.csv`` (one row per run), ``results.md``
(mean, sample standard deviation across seeds, the paired delta against the
baseline setting with its spread, 95% CI and the smallest delta the seeds could
detect, and how many seeds the setting beat the baseline on), ``results.png``
(each seed's paired delta, the mean with its 95% CI) and, with several
fractions, the learning curve ``curve.png`` / ``curve.md`` / ``curve.csv``
(:mod:`priorkit.evaluation.curve`); with ``sweep.controls``, ``controls.md`` /
``controls.csv`` / ``controls.png``: each prior against the baseline and against its
control, and whether it pays off (:mod:`priorkit.evaluation.verdict`); with ``sweep.posthoc``, the
post-hoc arms' rows (:mod:`priorkit.evaluation.posthoc`); when ``sweep.split`` is not test, the
selection file ``selection.csv`` (:mod:`priorkit.evaluation.selection`).
"""
from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..stats import Paired, paired
from ..training import ranks
from . import curve
from ..config import PipelineConfig, for_fraction, prior_settings
from .curve import Comparison
from ..training.data import load_data
from .posthoc import posthoc_plans, run_posthoc
from ..training.predictions import sentence_ci
from .selection import write_sweep_selection
from ..training.steps import Log, _silent, precompute_step, run_one
from ..training.plan import RunPlan
from ..training.wiring import configure_torch
from .verdict import Verdict, sweep_controls

CSV_FILE, MD_FILE, PLOT_FILE = "results.csv", "results.md", "results.png"
SELECTION_FILE = "selection.csv"  # when sweep.split is not test (pipeline/selection.py)


@dataclasses.dataclass
class Cell:
    """Aggregate of one (prior setting, fraction) over seeds."""

    prior: str
    fraction: float
    values: list[float]
    baseline: list[float] | None = None  # the baseline's values for the same seeds (paired)
    seeds: list[int] | None = None  # the seeds of ``values``
    baseline_name: str = ""
    #: per seed, the attention-mass shift towards the prior's favoured cells (prior_usage.py)
    shifts: list[float] = dataclasses.field(default_factory=list)
    #: per seed, the mean learned gate / strength, and its name ("gate", "strength")
    learned: list[float] = dataclasses.field(default_factory=list)
    learned_name: str | None = None
    #: the 95% CI of Δ over test sentences and seeds (entity F1, saved predictions; predictions.py)
    ci_sentences: tuple[float, float] | None = None
    #: per seed, the training time in seconds (none for post-hoc arms)
    seconds: list[float] = dataclasses.field(default_factory=list)

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
        p = self.paired
        if p is None or p.n < 2:
            return None
        return p.ci_low, p.ci_high

    @property
    def paired(self) -> Paired | None:
        """The paired analysis of the per-seed differences (n, sd, 95% CI, MDE)."""
        if not self.baseline or len(self.baseline) != len(self.values):
            return None
        return paired(np.asarray(self.values) - np.asarray(self.baseline))

    def comparison(self) -> Comparison | None:
        if not self.baseline or len(self.baseline) != len(self.values):
            return None
        seeds = self.seeds or list(range(len(self.values)))
        return Comparison(self.prior, self.baseline_name or "baseline", self.fraction, seeds,
                          [v - b for v, b in zip(self.values, self.baseline)])

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
    #: with ``sweep.controls``: whether each setting pays off at each fraction
    verdicts: list[Verdict] = dataclasses.field(default_factory=list)
    #: token classification with a dictionary: the arms blind where it is silent (dictionary_report.blind_spots)
    blind: list[str] = dataclasses.field(default_factory=list)
    #: what the console must say besides: runs that predict (almost) no entity (baselines.few_entities),
    #: test scored outside a final read (ledger.unsealed)
    warnings: list[str] = dataclasses.field(default_factory=list)


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
    from ..training.silver_stage import check_settings

    check_settings(cfg, settings, splits["train"])  # silver type maps, before anything is written
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
    if cfg.sweep.posthoc:  # no training: the base runs' predictions merged with a dictionary
        ranks.on_main(run_posthoc, cfg, splits, _pairs(plans), force=force, log=log)
    from .baselines import run_baselines

    ranks.on_main(run_baselines, cfg, splits, _pairs(plans), force=force, log=log)  # the dictionary alone ...
    rows = collect_rows(cfg, plans)
    return ranks.on_main(write_reports, cfg, rows)


def _pairs(plans: Sequence[RunPlan]) -> list[tuple[float, int]]:
    return list(dict.fromkeys((p.fraction, p.seed) for p in plans))


def all_plans(cfg: PipelineConfig) -> list[RunPlan]:
    """The trained runs of the grid, then the post-hoc arms' runs (``sweep.posthoc``)."""
    from .baselines import baseline_plans

    plans = grid(cfg)
    return plans + posthoc_plans(cfg, _pairs(plans)) + baseline_plans(cfg, _pairs(plans))


def collect_rows(cfg: PipelineConfig, plans: Sequence[RunPlan]) -> list[dict[str, Any]]:
    """One flat row per scored run, the post-hoc arms' included (missing runs are left out)."""
    import json

    rows = []
    from .baselines import baseline_plans

    known = {p.run_dir for p in plans}
    more = [*posthoc_plans(cfg, _pairs(plans)), *baseline_plans(cfg, _pairs(plans))]
    plans = [*plans, *(p for p in more if p.run_dir not in known)]
    for plan in plans:
        path = plan.run_dir / "metrics.json"
        if not path.exists():
            continue
        m = json.loads(path.read_text())
        row: dict[str, Any] = {"prior": plan.prior_name, "fraction": plan.fraction, "seed": plan.seed}
        train = m.get("train") or {}
        row["train_examples"] = train.get("examples")
        row["train_seconds"] = train.get("seconds")
        usage = m.get("prior_usage") or {}
        row["prior_shift"] = usage.get("shift")
        learned = usage.get("learned") or {}
        row["prior_learned"] = learned.get("mean")
        row["prior_learned_name"] = learned.get("name")
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
    by = curve.score_table(rows, column)
    run_of = {(r["prior"], float(r["fraction"]), int(r["seed"])): r for r in rows if r.get(column) is not None}
    cells = []
    for f in fractions:
        base = by.get((baseline, float(f)), {})
        for p in priors:
            got = by.get((p, float(f)), {})
            if not got:
                continue
            seeds = sorted(got)
            paired = [base[s] for s in seeds if s in base]
            cell = Cell(p, f, [got[s] for s in seeds],
                        paired if p != baseline and len(paired) == len(seeds) else None,
                        seeds, baseline)
            runs = [run_of[(p, float(f), s)] for s in seeds]
            cell.shifts = [float(r["prior_shift"]) for r in runs if r.get("prior_shift") is not None]
            cell.learned = [float(r["prior_learned"]) for r in runs if r.get("prior_learned") is not None]
            cell.seconds = [float(r["train_seconds"]) for r in runs if r.get("train_seconds") is not None]
            cell.learned_name = next((r.get("prior_learned_name") for r in runs if r.get("prior_learned_name")), None)
            cells.append(cell)
    return cells


def write_reports(cfg: PipelineConfig, rows: list[dict[str, Any]]) -> SweepResult:
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    metric = cfg.task.metric
    column = f"{cfg.sweep.split}_{metric}"
    from . import baselines as bl

    computed = [b.name for b in bl.computed(cfg)]
    priors = [*prior_settings(cfg), *cfg.sweep.posthoc, *computed]
    cells = aggregate(rows, column, cfg.sweep.baseline, priors, cfg.sweep.fractions)
    for c in cells:  # post-hoc arms and computed baselines train nothing: no training time to average
        if c.prior in cfg.sweep.posthoc or c.prior in computed:
            c.seconds = []
    counts: dict = {}  # run folder -> per-sentence entity counts, read once for both tables
    add_sentence_cis(cfg, cells, counts)
    files = {"csv": out / CSV_FILE, "md": out / MD_FILE}
    write_csv(rows, files["csv"])
    from .dictionary_report import write as dictionary_section

    alone = {b.name for b in bl.computed(cfg) if b.kind == "dictionary"}  # the dictionary's own row stands for them
    section, dict_csv, blind = dictionary_section(cfg, [r for r in rows if r["prior"] not in alone], out)
    against, against_csv = bl.comparisons_section(cfg, rows, out, counts)  # each arm vs each baseline
    warnings = bl.few_entities(cfg, rows)
    from .ledger import unsealed

    warnings += unsealed(cfg)
    files["md"].write_text(markdown_table(cfg, cells) + against + section
                           + "".join(f"\n- warning: {w}\n" for w in warnings))
    if dict_csv is not None:
        files["dictionary"] = dict_csv
    if against_csv is not None:
        files["baselines"] = against_csv
    if cfg.sweep.plot and cells:
        png = plot(cfg, cells, out / PLOT_FILE)
        if png is not None:
            files["png"] = png
        files.update(curve_files(cfg, cells, out))
    if cfg.sweep.split != "test":  # a selection: its file (docs/results/*-selection.csv form)
        files["selection"] = write_sweep_selection(cfg, rows, out / SELECTION_FILE)
    verdicts, control_files = sweep_controls(cfg, [r for r in rows if r["prior"] not in computed], counts)
    files.update(control_files)
    return SweepResult(cfg, rows, cells, files, verdicts, blind, warnings)


def add_sentence_cis(cfg: PipelineConfig, cells: Sequence[Cell], cache: dict | None = None) -> None:
    """Each paired cell's CI over test sentences and seeds, from the runs' saved predictions."""
    cache = {} if cache is None else cache
    for c in cells:
        if c.baseline is None or c.seeds is None:
            continue
        runs = [(RunPlan(cfg, c.prior, None, c.fraction, s).run_dir,
                 RunPlan(cfg, c.baseline_name, None, c.fraction, s).run_dir) for s in c.seeds]
        c.ci_sentences = sentence_ci(runs, cfg.sweep.split, cfg.task.metric, cache)


def curve_files(cfg: PipelineConfig, cells: Sequence[Cell], folder: Path) -> dict[str, Path]:
    """The learning curve (Δ against the fraction) when the sweep has several fractions:
    each point's paired Δ with both CIs, both sides' absolute scores and the training time
    per run; then the absolute score of every arm at every fraction, and where each arm's
    CI first includes 0."""
    paired_cells = [c for c in cells if c.comparison() is not None]
    comps = [c.comparison() for c in paired_cells]
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    unit = "" if scale == 1.0 else " x100"

    def ci(c: Cell) -> str:
        return "" if c.ci_sentences is None else \
            f"[{_fmt(c.ci_sentences[0], True, scale)}, {_fmt(c.ci_sentences[1], True, scale)}]"

    extra = {
        "95% CI (sentences x seeds)": [ci(c) for c in paired_cells],
        f"{cfg.task.metric} setting": [_fmt(c.mean, scale=scale) for c in paired_cells],
        f"{cfg.task.metric} vs": [_fmt(float(np.mean(c.baseline)), scale=scale) for c in paired_cells],
        "train s/run": [_fmt(float(np.mean(c.seconds))) if c.seconds else "" for c in paired_cells],
    }
    return curve.write_curve(comps, folder, f"{cfg.name}: Δ vs {cfg.sweep.baseline} against the training "
                             f"fraction ({cfg.sweep.split})", f"Δ {cfg.task.metric}{unit}", scale,
                             extra, absolute_section(cfg, cells, scale))


def absolute_section(cfg: PipelineConfig, cells: Sequence[Cell], scale: float) -> str:
    """Markdown: every arm's mean score (sd, seeds) at every fraction, and the mean training
    time of a run at each point."""
    fractions = sorted({c.fraction for c in cells})
    priors = list(dict.fromkeys(c.prior for c in cells))
    at = {(c.prior, c.fraction): c for c in cells}
    metric = cfg.task.metric
    lines = ["", f"## Absolute {metric} ({cfg.sweep.split}) of every arm", "",
             f"Mean {metric} x{scale:g} (sd over seeds, seeds); post-hoc arms train nothing.", "",
             "| fraction | " + " | ".join(priors) + " | train s/run (mean over arms) |",
             "|" + "---|" * (len(priors) + 2)]
    for f in fractions:
        row, secs = [f"{f:g}"], []
        for p in priors:
            c = at.get((p, f))
            row.append("-" if c is None else f"{_fmt(c.mean, scale=scale)} ({_fmt(c.std, scale=scale)}, {c.n})")
            if c is not None:
                secs += c.seconds
        row.append(_fmt(float(np.mean(secs))) if secs else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """``rows`` as CSV (the union of their keys, in order of appearance); makes the folder."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
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
            "" if c.ci_sentences is None else
            f"[{_fmt(c.ci_sentences[0], True, scale)}, {_fmt(c.ci_sentences[1], True, scale)}]",
            "" if c.paired is None or c.paired.n < 2 else _fmt(c.paired.mde, scale=scale),
            "" if c.wins is None else f"{c.wins}/{c.n}",
            " ".join(_fmt(v, scale=scale) for v in c.values),
            _usage(c),
        ])
    return rows


def _usage(c: Cell) -> str:
    """Mean attention-mass shift towards the favoured cells (and mean learned gate/strength) over seeds."""
    if not c.shifts:
        return ""
    text = f"{float(np.mean(c.shifts)):+.3f}"
    if c.learned:
        text += f" ({c.learned_name} {float(np.mean(c.learned)):.2f})"
    return text


TABLE_HEADER = ["fraction", "prior", "seeds", "mean ± std", "Δ vs baseline ± std", "95% CI of Δ",
                "95% CI (sent.+seeds)", "MDE (80%)", "wins", "per seed", "prior use"]


def markdown_table(cfg: PipelineConfig, cells: Sequence[Cell]) -> str:
    unit = "" if cfg.task.metric == "mse" else " (x100)"
    lines = [
        f"# {cfg.name}: {cfg.task.metric}{unit} on the {cfg.sweep.split} split",
        "",
        f"Baseline: `{cfg.sweep.baseline}`. Std is the sample standard deviation over seeds; Δ is the "
        "difference of means, its ± the spread of the per-seed (paired) differences and its 95% CI "
        "Student's t over the paired differences (seeds only, on one fixed sample of the split); "
        "95% CI (sent.+seeds) a paired bootstrap over the split's sentences and the seeds (entity F1, "
        "from the runs' saved predictions; docs/tune.md#power); MDE is the smallest Δ these seeds detect with 80% power "
        "at α 0.05; wins counts seeds where the setting beat the baseline. "
        "Prior use: the mean shift of attention mass towards the cells the prior favours (with minus without "
        "the prior, docs/show.md) and the mean learned gate or strength; near 0, the model ignored the prior.",
        "",
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "|".join("---" for _ in TABLE_HEADER) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(cfg, cells)]
    return "\n".join(lines) + "\n"


def print_table(cfg: PipelineConfig, cells: Sequence[Cell], console: Any = None) -> None:
    """The table on a terminal (rich); elsewhere (a log, CI, a pipe) as plain Markdown rows,
    which no terminal width cuts (``priorkit.output.print_table``)."""
    from ..output import print_table as print_any

    unit = "" if cfg.task.metric == "mse" else " x100"
    title = f"{cfg.name}: {cfg.task.metric}{unit} ({cfg.sweep.split} split, baseline {cfg.sweep.baseline})"
    print_any(title, TABLE_HEADER, table_rows(cfg, cells), console=console,
              justify={c: "left" if c in ("prior", "per seed") else "right" for c in TABLE_HEADER})


def plot(cfg: PipelineConfig, cells: Sequence[Cell], path: Path) -> Path | None:
    """Each setting's paired Δ against the baseline, seed by seed (dots), with the mean and
    its 95% CI and a zero line; None when no setting has a paired baseline.

    Each arm's mean ± std would hide a paired effect: two settings whose spreads overlap
    can still differ on every seed.
    """
    comps = [c for c in (cell.comparison() for cell in cells) if c is not None]
    if not comps:
        return None
    scale = 1.0 if cfg.task.metric == "mse" else 100.0
    unit = "" if scale == 1.0 else " x100"
    return curve.plot_paired(comps, path, f"{cfg.name}: {cfg.task.metric} on {cfg.sweep.split}, "
                             f"vs {cfg.sweep.baseline}", f"Δ {cfg.task.metric}{unit}", scale)

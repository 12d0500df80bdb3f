"""Paired comparisons as tables and figures, shared by ``priorkit sweep`` and ``priorkit tune``.

A :class:`Comparison` is one setting against a reference (no prior, or a control) at
one training fraction: the per-seed differences Δ_i (same seeds on both sides) and
their paired analysis (:func:`priorkit.stats.paired`).  From a list of them:

* :func:`plot_paired` -- each seed's Δ as a dot, the mean with its 95% CI as an error
  bar, a zero line (mean ± std of each arm would hide a paired effect);
* :func:`plot_curve` -- Δ against the training fraction (log x), the mean as a line and
  its 95% CI as a band, one line per setting: the learning curve;
* :func:`comparison_rows` / :func:`write_csv` / :func:`markdown` -- the power table:
  seeds, mean Δ, sd of Δ, 95% CI, minimum detectable effect (80% power, α 0.05).
"""
from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..stats import Paired, paired

CURVE_PNG, CURVE_MD, CURVE_CSV = "curve.png", "curve.md", "curve.csv"


@dataclasses.dataclass
class Comparison:
    """``setting`` minus ``reference`` at ``fraction``, seed by seed."""

    setting: str
    reference: str
    fraction: float
    seeds: list[int]
    deltas: list[float]

    @property
    def stats(self) -> Paired:
        return paired(self.deltas)


def score_table(rows: Sequence[Mapping[str, Any]], column: str, scale: float = 1.0
                ) -> dict[tuple[str, float], dict[int, float]]:
    """``{(setting, fraction): {seed: score * scale}}`` from a sweep's result rows (rows
    without ``column`` are left out): the form :func:`compare` reads."""
    scores: dict[tuple[str, float], dict[int, float]] = {}
    for r in rows:
        if r.get(column) is not None:
            scores.setdefault((r["prior"], float(r["fraction"])), {})[int(r["seed"])] = scale * float(r[column])
    return scores


def compare(scores: dict[tuple[str, float], dict[int, float]], setting: str, reference: str,
            fraction: float) -> Comparison | None:
    """The paired comparison over the seeds both sides have (None when they share none)."""
    a, b = scores.get((setting, fraction), {}), scores.get((reference, fraction), {})
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    return Comparison(setting, reference, fraction, seeds, [a[s] - b[s] for s in seeds])


def _f(x: float, scale: float, signed: bool = True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x * scale:+.2f}" if signed else f"{x * scale:.2f}"


POWER_HEADER = ["fraction", "setting", "vs", "seeds", "mean Δ", "sd of Δ", "95% CI of Δ", "MDE (80%)", "per seed Δ"]


def comparison_rows(comparisons: Sequence[Comparison], scale: float = 100.0) -> list[list[str]]:
    rows = []
    for c in comparisons:
        s = c.stats
        rows.append([f"{c.fraction:g}", c.setting, c.reference, str(s.n), _f(s.mean, scale), _f(s.sd, scale, False),
                     f"[{_f(s.ci_low, scale)}, {_f(s.ci_high, scale)}]", _f(s.mde, scale, False),
                     " ".join(_f(d, scale) for d in c.deltas)])
    return rows


def markdown(comparisons: Sequence[Comparison], title: str, note: str, scale: float = 100.0,
             extra: Mapping[str, Sequence[str]] | None = None) -> str:
    """The power table; ``extra`` adds columns (header -> one value per comparison)."""
    extra = dict(extra or {})
    header = POWER_HEADER + list(extra)
    lines = [f"# {title}", "", note, "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r + [str(v[i]) for v in extra.values()]) + " |"
              for i, r in enumerate(comparison_rows(comparisons, scale))]
    return "\n".join(lines) + "\n"


def write_csv(comparisons: Sequence[Comparison], path: Path,
              extra: Mapping[str, Sequence[object]] | None = None) -> Path:
    """One row per comparison (unscaled); ``extra`` adds columns (name -> one value per comparison)."""
    extra = dict(extra or {})
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["fraction", "setting", "vs", "seeds", "mean_delta", "sd_delta", "ci_low", "ci_high", "mde",
                    "per_seed_delta", *extra])
        for i, c in enumerate(comparisons):
            s = c.stats
            w.writerow([c.fraction, c.setting, c.reference, s.n, s.mean, s.sd, s.ci_low, s.ci_high, s.mde,
                        " ".join(f"{d:.6g}" for d in c.deltas), *(v[i] for v in extra.values())])
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_paired(comparisons: Sequence[Comparison], path: Path, title: str, ylabel: str,
                scale: float = 100.0) -> Path:
    """Per-seed Δ (dots), mean and 95% CI (error bar) of every comparison, zero line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4.8, 1.3 * len(comparisons) + 2), 4.2), dpi=120)
    multi = len({c.fraction for c in comparisons}) > 1
    labels = []
    # each comparison's dots and CI sit together, centred over its own label (dots left of the
    # tick, the CI right of it, both well inside their slot), and a faint line between slots
    # keeps them from reading as the neighbour's
    for x, c in enumerate(comparisons):
        s = c.stats
        d = np.asarray(c.deltas) * scale
        jitter = np.linspace(-0.08, 0.08, len(d)) if len(d) > 1 else np.zeros(1)
        ax.scatter(x - 0.12 + jitter, d, s=18, alpha=0.6, color="C0", zorder=2)
        if s.n >= 2:
            ax.errorbar([x + 0.14], [s.mean * scale], yerr=[[(s.mean - s.ci_low) * scale],
                                                             [(s.ci_high - s.mean) * scale]],
                        fmt="o", color="C3", capsize=5, zorder=3)
        else:
            ax.plot([x + 0.14], [s.mean * scale], "o", color="C3", zorder=3)
        if x:
            ax.axvline(x - 0.5, color="0.85", linewidth=0.8, zorder=0)
        labels.append(f"{c.setting}\nvs {c.reference}" + (f"\nfrac {c.fraction:g}" if multi else ""))
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(-0.5, len(comparisons) - 0.5)
    ax.set_xticks(range(len(comparisons)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    seeds = max((c.stats.n for c in comparisons), default=0)
    ax.set_title(f"{title}\npaired Δ per seed (dots), mean and 95% CI (red), {seeds} seed(s)", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_curve(comparisons: Sequence[Comparison], path: Path, title: str, ylabel: str,
               scale: float = 100.0) -> Path:
    """Δ against the training fraction (log x): mean line, 95% CI band, one line per setting."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    keys = list(dict.fromkeys((c.setting, c.reference) for c in comparisons))
    fractions = sorted({c.fraction for c in comparisons})
    for k, (setting, ref) in enumerate(keys):
        pts = sorted((c.fraction, c.stats) for c in comparisons if (c.setting, c.reference) == (setting, ref))
        xs = np.array([f for f, _ in pts])
        mean = np.array([s.mean for _, s in pts]) * scale
        low = np.array([s.ci_low if s.n >= 2 else s.mean for _, s in pts]) * scale
        high = np.array([s.ci_high if s.n >= 2 else s.mean for _, s in pts]) * scale
        ax.plot(xs, mean, marker="o", color=f"C{k}", label=f"{setting} vs {ref}")
        ax.fill_between(xs, low, high, color=f"C{k}", alpha=0.2)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.minorticks_off()  # only the swept fractions are labelled
    ax.set_xticks(fractions)
    ax.set_xticklabels([f"{f:g}" for f in fractions])
    ax.set_xlabel("training fraction (log)")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}\nmean paired Δ with its 95% CI band", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _detected(s: Paired) -> bool:
    """Whether the 95% CI excludes 0 on either side (a gain or a loss is detected)."""
    return s.excludes_zero(True) or s.excludes_zero(False)


def first_ci_with_zero(comparisons: Sequence[Comparison]) -> dict[tuple[str, str], float | None]:
    """Per (setting, reference): the smallest fraction from which on every CI includes 0.

    That is where the gain stops being detectable for good along the curve; None when the
    CI excludes 0 at the largest fraction (the gain is still detected there).  A point with
    one seed has no CI and counts as including 0.
    """
    out: dict[tuple[str, str], float | None] = {}
    for key in dict.fromkeys((c.setting, c.reference) for c in comparisons):
        pts = sorted((c.fraction, c.stats) for c in comparisons if (c.setting, c.reference) == key)
        first = None
        for f, s in reversed(pts):
            if _detected(s):
                break
            first = f
        out[key] = first
    return out


def _zero_section(comparisons: Sequence[Comparison]) -> str:
    lines = ["", "## Where the difference stops being detected", "",
             "The smallest fraction from which on every 95% CI of Δ (over seeds) includes 0.", "",
             "| setting | vs | CI includes 0 from | CI excludes 0 at |", "|---|---|---|---|"]
    for (setting, ref), f in first_ci_with_zero(comparisons).items():
        sig = [f"{c.fraction:g}" for c in sorted(comparisons, key=lambda c: c.fraction)
               if (c.setting, c.reference) == (setting, ref) and _detected(c.stats)]
        lines.append(f"| {setting} | {ref} | {'never (detected at the largest fraction)' if f is None else f'{f:g}'} "
                     f"| {', '.join(sig) or 'none'} |")
    return "\n".join(lines) + "\n"


def write_curve(comparisons: Sequence[Comparison], folder: Path, title: str, ylabel: str,
                scale: float = 100.0, extra: Mapping[str, Sequence[object]] | None = None,
                appendix: str = "") -> dict[str, Path]:
    """``curve.png`` / ``curve.md`` / ``curve.csv`` in ``folder`` (only with several fractions).

    ``extra``: more columns, one value per comparison in the given order (e.g. each side's
    absolute score, the sentence CI, the cost); ``appendix``: Markdown added to curve.md.
    """
    if len({c.fraction for c in comparisons}) < 2:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(comparisons)),
                   key=lambda i: (comparisons[i].setting, comparisons[i].reference, comparisons[i].fraction))
    ordered = [comparisons[i] for i in order]
    extra = {k: [v[i] for i in order] for k, v in (extra or {}).items()}
    note = ("Learning curve: the paired Δ at each training fraction (same seeds on both sides); "
            "MDE is the smallest Δ these seeds detect with 80% power at α 0.05.")
    text = markdown(ordered, title, note, scale, extra) + _zero_section(ordered) + appendix
    (folder / CURVE_MD).write_text(text)
    return {"curve_md": folder / CURVE_MD, "curve_csv": write_csv(ordered, folder / CURVE_CSV, extra),
            "curve_png": plot_curve(ordered, folder / CURVE_PNG, title, ylabel, scale)}

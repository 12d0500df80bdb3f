"""The files and the formatting behind the claims blocks (:mod:`lab.claims`):
result CSVs read once each (:class:`Results`), scores and paired differences as Markdown tables."""
from __future__ import annotations

import csv
import json
import statistics as st
from pathlib import Path
from typing import Any, Sequence

from priorkit.evaluation.curve import compare, score_table

# the result files under docs/results the blocks read
CURVE = "bc5cdr-curve-results.csv"
ARMS = "bc5cdr-arms-results.csv"
SILVER = "bc5cdr-silver-runs.csv"
MPNET = "bc5cdr-curve-mpnet-e10-results.csv"
STSB = "stsb-curve-results.csv"


def _fraction(name: str) -> float | None:
    """The fraction of a file without that column (the silver study's runs: 10%)."""
    return 0.1 if name == SILVER else None


Scores = dict[tuple[str, float], dict[int, float]]


def read_runs(path: Path, fraction: float | None = None) -> list[dict[str, Any]]:
    """The rows of a results or runs CSV, numbers as floats; ``prior`` is the arm (a runs CSV's
    ``arm``), ``fraction`` the file's or ``fraction`` (a file of one fraction without the column)."""
    rows = []
    with open(path, newline="") as fh:
        for raw in csv.DictReader(fh):
            row: dict[str, Any] = {}
            for k, v in raw.items():
                try:
                    row[k] = float(v) if v not in ("", None) else None
                except ValueError:
                    row[k] = v
            row["prior"] = raw.get("prior") or raw["arm"]
            row["seed"] = int(float(raw["seed"]))
            row["fraction"] = float(raw["fraction"]) if raw.get("fraction") else fraction
            rows.append(row)
    return rows


class Results:
    """The result files of a folder, read once each."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._rows: dict[str, list[dict[str, Any]]] = {}

    def rows(self, name: str, fraction: float | None = None) -> list[dict[str, Any]]:
        if name not in self._rows:
            self._rows[name] = read_runs(self.folder / name, fraction)
        return self._rows[name]

    def scores(self, name: str, column: str = "test_f1", fraction: float | None = None) -> Scores:
        return score_table(self.rows(name, fraction), column, scale=100.0)

    def csv(self, name: str) -> list[dict[str, str]]:
        """A CSV's rows as they are (strings), for files that are not runs (a ``-`` seed ...)."""
        key = "csv:" + name
        if key not in self._rows:
            with open(self.folder / name, newline="") as fh:
                self._rows[key] = list(csv.DictReader(fh))
        return self._rows[key]

    def json(self, name: str) -> Any:
        key = "json:" + name
        if key not in self._rows:
            self._rows[key] = json.loads((self.folder / name).read_text(encoding="utf-8"))
        return self._rows[key]


# ---- formatting ------------------------------------------------------------------------------
def _mean_sd(v: Sequence[float]) -> str:
    return f"{st.mean(v):.2f} ({st.stdev(v):.2f}, {len(v)})" if len(v) > 1 else (f"{v[0]:.2f} (1)" if v else "-")


def _ci(scores: Scores, a: str, b: str, f: float, ahead: bool = True) -> str:
    """``+m [lo, hi] k/n`` for a minus b at fraction f; ``-`` without two shared seeds."""
    c = compare(scores, a, b, f)
    if c is None or c.stats.n < 2:
        return "-"
    p = c.stats
    text = f"{p.mean:+.2f} [{p.ci_low:+.2f}, {p.ci_high:+.2f}]"
    return text + (f" {sum(d > 0 for d in c.deltas)}/{p.n}" if ahead else "")


def _pct(f: float) -> str:
    return f"{f * 100:g}%"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                      *("| " + " | ".join(r) + " |" for r in rows)]) + "\n"


def scores_markdown(rows: Sequence[dict[str, Any]], scores: Scores, arms: Sequence[str]) -> str:
    """Every arm's absolute score at every fraction (mean (sd, seeds)) and the mean training
    seconds of a run there (post-hoc arms, which train nothing, left out)."""
    present = {a for a, _ in scores}
    arms = [a for a in arms if a in present]
    out = []
    for f in sorted({f for _, f in scores}):
        secs = [r["train_seconds"] for r in rows if r["fraction"] == f and r.get("train_seconds")]
        out.append([_pct(f), *(_mean_sd(list(scores.get((a, f), {}).values())) for a in arms),
                    f"{st.mean(secs):.0f}" if secs else "-"])
    return _table(["fraction", *arms, "train s/run"], out)


def deltas_markdown(scores: Scores, pairs: Sequence[tuple[str, str]]) -> str:
    """The paired differences ``a − b`` at every fraction: mean [95% CI over seeds] seeds ahead."""
    present = {a for a, _ in scores}
    pairs = [(a, b) for a, b in pairs if a in present and b in present]
    rows = [[_pct(f), *(_ci(scores, a, b, f) for a, b in pairs)] for f in sorted({f for _, f in scores})]
    return _table(["fraction", *(f"{a} − {b}" for a, b in pairs)], rows)


GAIN_COLUMNS = ("f1", "precision", "recall", "recall_dict", "recall_other")


def gain_markdown(groups: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    """Where the gain comes from: per arm, the means over its runs (x100) of F1, precision,
    recall and recall on the gold entities the dictionary tags exactly (inside) and the others."""
    rows = [[arm, *(f"{st.mean(float(r[k]) for r in runs):.2f}" for k in GAIN_COLUMNS)] for arm, runs in groups]
    return _table(["arm", "F1", "precision", "recall", "recall inside", "recall outside"], rows)


def _by_arm(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows grouped by ``prior`` in the file's order, the dictionary alone last."""
    from priorkit.evaluation.dictionary_report import DICTIONARY_ROW

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["prior"], []).append(r)
    return sorted(groups.items(), key=lambda kv: kv[0] == DICTIONARY_ROW)

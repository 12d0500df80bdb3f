"""Claims generated from files: the measured tables of README.md and docs/benchmarks.md.

Every block between ``<!-- claims:begin NAME -->`` and ``<!-- claims:end -->`` is rewritten
from the result files under ``docs/results/`` (a sweep's ``results.csv`` or a runs CSV:
one row per run with its arm, fraction, seed and scores) by the renderer :data:`BLOCKS`
names; ``benchmarks/claims.py`` rewrites them and ``tests/test_claims.py`` fails when a
document differs from what the files give.  The paired comparisons are those of the sweep
reports (:func:`priorkit.pipeline.curve.compare`, :func:`priorkit.stats.paired`: mean Δ
over the seeds both arms share, its 95% CI, seeds ahead).

Blocks: ``readme`` (the README's measured table and its two sentences), ``curve-scores`` /
``curve-deltas`` (the BC5CDR learning curve), ``arms-scores`` / ``arms-deltas`` (the fair
arms at 10%), ``silver-scores`` / ``silver-deltas`` (silver labels and the post-hoc merges);
issue 30: ``knowledge-scores`` / ``knowledge-deltas`` (self-training at 10%), ``weak-scores`` /
``weak-deltas`` (the weak-dictionary regime), ``knowledge-devel-gain`` / ``knowledge-gain`` /
``weak-gain`` (where the gain comes from: recall inside and outside the dictionary) and
``knowledge-calibration`` (the dictionary's quality per run, as it is and calibrated),
``knowledge-recipes`` (every recipe of both regimes in one table, for silver.md and features.md),
``calibration-thresholds`` (the dictionary's calibrated quality at each threshold).
"""
from __future__ import annotations

import csv
import json
import re
import statistics as st
from pathlib import Path
from typing import Any, Callable, Sequence

from .curve import compare, score_table

MARKER = re.compile(r"<!-- claims:begin (?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- claims:end -->", re.DOTALL)

CURVE = "bc5cdr-curve-results.csv"
ARMS = "bc5cdr-arms-results.csv"
SILVER = "bc5cdr-silver-runs.csv"
MPNET = "bc5cdr-curve-mpnet-e10-results.csv"
STSB = "stsb-curve-results.csv"
KNOW = "bc5cdr-knowledge-results.csv"    # issue 30: self-training at 10% (none/features: the curve's runs)
WEAK = "bc5cdr-weak-results.csv"         # issue 30: the weak-dictionary regime (Disease, HPO alone)
# issue 30, where the gain comes from (benchmarks/knowledge_report.py; recall inside/outside the dictionary)
KNOW_DEVEL_GAIN = "bc5cdr-knowledge-devel-dictionary.csv"
KNOW_GAIN = "bc5cdr-knowledge-selftrain-dictionary.csv"
WEAK_GAIN = "bc5cdr-weak-dictionary.csv"
CURVE_ERRORS = "bc5cdr-curve-errors-0.1.json"   # the curve's none/features at 10%, the same definition
CALIBRATION = "bc5cdr-knowledge-calibration.csv"  # every run's calibration.json (benchmarks/calibration_report.py)
THRESHOLDS = "bc5cdr-knowledge-calibration-thresholds.csv"  # the same counts at each threshold (same script)

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


# ---- the learning curve (also benchmarks/curve_tables.py's output) -----------------------------
CURVE_ARMS = ["none", "features", "attention", "both", "random-spans", "shuffled", "dict-union", "dict-override"]
CURVE_PAIRS = [("features", "none"), ("attention", "none"), ("both", "none"), ("both", "features"),
               ("features", "random-spans"), ("attention", "shuffled"), ("features", "dict-override"),
               ("dict-override", "none")]


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


def curve_scores(res: Results) -> str:
    return scores_markdown(res.rows(CURVE), res.scores(CURVE), CURVE_ARMS)


def curve_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(CURVE), CURVE_PAIRS)


# ---- the fair arms at 10% and the silver study -----------------------------------------------
ARM_LABELS = {"none": "none (lr 4e-4)", "features": "features (HPO + MeSH token features)",
              "random-spans": "random-spans (control of features)",
              "attention": "attention (concept prior, bias lam 3)", "shuffled": "shuffled (control of attention)"}
ARM_PAIRS = [("features", "none"), ("features", "random-spans"), ("random-spans", "none"),
             ("attention", "none"), ("attention", "shuffled"), ("shuffled", "none")]


def _per_type(res: Results, name: str, arm: str, f: float, t: str, fraction: float | None = None) -> str:
    v = list(res.scores(name, f"test_f1_{t}", fraction).get((arm, f), {}).values())
    return f"{st.mean(v):.2f}" if v else "-"


def arms_scores(res: Results) -> str:
    s, f = res.scores(ARMS), 0.1
    rows = []
    for arm, label in ARM_LABELS.items():
        v = list(s[(arm, f)].values())
        shift = [r["prior_shift"] for r in res.rows(ARMS) if r["prior"] == arm and r.get("prior_shift") is not None]
        rows.append([label, f"{st.mean(v):.2f} ± {st.stdev(v):.2f}", _per_type(res, ARMS, arm, f, "Chemical"),
                     _per_type(res, ARMS, arm, f, "Disease"), f"{st.mean(shift):+.3f}" if shift else ""])
    return _table(["arm", "F1 mean ± sd", "Chemical", "Disease", "prior use (attention shift)"], rows)


def _comparison_rows(res: Results, name: str, pairs: Sequence[tuple[str, str]], f: float, *,
                     fraction: float | None = None, types: bool = True, scores: Scores | None = None,
                     labels: dict[tuple[str, str], str] | None = None) -> list[list[str]]:
    s = scores if scores is not None else res.scores(name, fraction=fraction)
    rows = []
    for a, b in pairs:
        c = compare(s, a, b, f)
        if c is None:
            continue
        p = c.stats
        row = [(labels or {}).get((a, b), f"{a} vs {b}"), str(p.n), f"{p.mean:+.2f}", f"{p.sd:.2f}",
               f"[{p.ci_low:+.2f}, {p.ci_high:+.2f}]", *([f"{p.mde:.2f}"] if types else []),
               f"{sum(d > 0 for d in c.deltas)}/{p.n}"]
        for t in ("Chemical", "Disease") if types else ():
            ct = compare(res.scores(name, f"test_f1_{t}", fraction), a, b, f)
            row.append(f"{ct.stats.mean:+.2f}" if ct else "-")
        rows.append(row)
    return rows


def arms_deltas(res: Results) -> str:
    head = ["comparison", "seeds", "Δ F1", "sd of Δ", "95% CI", "MDE", "seeds ahead", "Δ Chemical", "Δ Disease"]
    return _table(head, _comparison_rows(res, ARMS, ARM_PAIRS, 0.1))


SILVER_LABELS = {"none": "none", "features": "features (new matcher)", "silver": "silver (features + silver, mix)",
                 "silver-control": "silver-control (random-spans labels)",
                 "dict-union": "dict-union (none + matcher, afterwards)",
                 "dict-override": "dict-override (matcher wins, afterwards)"}
SILVER_PAIRS = [("silver", "none"), ("silver", "features"), ("silver", "silver-control"), ("features", "none"),
                ("features", "features-old"), ("dict-override", "none"), ("dict-union", "none"),
                ("features", "dict-override"), ("silver", "dict-override")]


def silver_scores(res: Results) -> str:
    rows = []
    for arm, label in SILVER_LABELS.items():
        v = list(res.scores(SILVER, fraction=0.1).get((arm, 0.1), {}).values())
        rows.append([label, str(len(v)), f"{st.mean(v):.2f} ± {st.stdev(v):.2f}",
                     _per_type(res, SILVER, arm, 0.1, "Chemical", 0.1), _per_type(res, SILVER, arm, 0.1, "Disease", 0.1)])
    return _table(["arm", "seeds", "F1 mean ± sd", "Chemical", "Disease"], rows)


def silver_deltas(res: Results) -> str:
    """The silver study's comparisons; ``features-old`` is the fair arms' features run of the same
    seed (the matcher before issue 23)."""
    s = dict(res.scores(SILVER, fraction=0.1))
    s[("features-old", 0.1)] = res.scores(ARMS)[("features", 0.1)]
    labels = {("features", "features-old"): "features, new matcher vs old matcher (bc5cdr-arms runs, same seeds)",
              ("features", "none"): "features (new matcher) vs none"}
    rows = _comparison_rows(res, SILVER, SILVER_PAIRS, 0.1, fraction=0.1, types=False, scores=s, labels=labels)
    return _table(["comparison (paired by seed)", "n", "Δ F1", "sd", "95% CI (t)", "ahead"], rows)


# ---- knowledge that does not blind (issue 30) --------------------------------------------------
KNOW_ARMS = ["none", "features", "self-train"]
KNOW_PAIRS = [("self-train", "none"), ("self-train", "features"), ("features", "none")]
WEAK_ARMS = ["none", "features", "silver", "self-train"]
WEAK_PAIRS = [("features", "none"), ("silver", "none"), ("self-train", "none"), ("self-train", "features")]


def knowledge_scores(res: Results) -> str:
    return scores_markdown(res.rows(KNOW), res.scores(KNOW), KNOW_ARMS)


def knowledge_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(KNOW), KNOW_PAIRS)


def weak_scores(res: Results) -> str:
    return scores_markdown(res.rows(WEAK), res.scores(WEAK), WEAK_ARMS)


def weak_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(WEAK), WEAK_PAIRS)


# issue 32: MPNet at 10%, 10 epochs, lr 1e-4: none and features (one sweep), the attention prior
# (a later sweep, the same settings and training subsets)
MPNET = "bc5cdr-curve-mpnet-e10-results.csv"
MPNET_ATTENTION = "bc5cdr-curve-mpnet-attention-e10-results.csv"
MPNET_ARMS = ["none", "features", "attention"]
MPNET_PAIRS = [("features", "none"), ("attention", "none"), ("attention", "features")]


def _mpnet_rows(res: Results) -> list[dict[str, Any]]:
    return res.rows(MPNET) + res.rows(MPNET_ATTENTION)


def mpnet_scores(res: Results) -> str:
    rows = _mpnet_rows(res)
    return scores_markdown(rows, score_table(rows, "test_f1", scale=100.0), MPNET_ARMS)


def mpnet_deltas(res: Results) -> str:
    return deltas_markdown(score_table(_mpnet_rows(res), "test_f1", scale=100.0), MPNET_PAIRS)


GAIN_COLUMNS = ("f1", "precision", "recall", "recall_dict", "recall_other")


def gain_markdown(groups: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    """Where the gain comes from: per arm, the means over its runs (x100) of F1, precision,
    recall and recall on the gold entities the dictionary tags exactly (inside) and the others."""
    rows = [[arm, *(f"{st.mean(float(r[k]) for r in runs):.2f}" for k in GAIN_COLUMNS)] for arm, runs in groups]
    return _table(["arm", "F1", "precision", "recall", "recall inside", "recall outside"], rows)


def _by_arm(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows grouped by ``prior`` in the file's order, the dictionary alone last."""
    from .dictionary_report import DICTIONARY_ROW

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["prior"], []).append(r)
    return sorted(groups.items(), key=lambda kv: kv[0] == DICTIONARY_ROW)


def knowledge_devel_gain(res: Results) -> str:
    return gain_markdown(_by_arm(res.csv(KNOW_DEVEL_GAIN)))


def knowledge_gain(res: Results) -> str:
    """The test sample: ``none`` and ``features`` from the curve's error profile at 10% (the same
    runs as the scores table), self-training and the dictionary alone from its own file."""
    curve = res.json(CURVE_ERRORS)["per_seed"]
    return gain_markdown([(a, list(curve[a].values())) for a in ("none", "features")] + _by_arm(res.csv(KNOW_GAIN)))


def weak_gain(res: Results) -> str:
    return gain_markdown(_by_arm(res.csv(WEAK_GAIN)))


BC5_REGIME, WEAK_REGIME = "BC5CDR, HPO + MeSH", "Disease, HPO alone"
RECIPE_ROWS = [  # regime, recipe, scores file, arm, (recall file or the curve's errors, its arm)
    (BC5_REGIME, "none", KNOW, "none", (CURVE_ERRORS, "none")),
    (BC5_REGIME, "token features", KNOW, "features", (CURVE_ERRORS, "features")),
    (BC5_REGIME, "silver labels + features (`mix`, weight 1)", SILVER, "silver", None),
    (BC5_REGIME, "self-training (teacher + calibrated dictionary)", KNOW, "self-train", (KNOW_GAIN, "self-train")),
    (BC5_REGIME, "dictionary alone", None, None, (KNOW_GAIN, "dictionary alone")),
    (WEAK_REGIME, "none", WEAK, "none", (WEAK_GAIN, "none")),
    (WEAK_REGIME, "token features, calibrated", WEAK, "features", (WEAK_GAIN, "features")),
    (WEAK_REGIME, "silver labels + features (`auto` weights)", WEAK, "silver", (WEAK_GAIN, "silver")),
    (WEAK_REGIME, "self-training", WEAK, "self-train", (WEAK_GAIN, "self-train")),
    (WEAK_REGIME, "dictionary alone", None, None, (WEAK_GAIN, "dictionary alone")),
]


def _gain_runs(res: Results, name: str, arm: str) -> list[dict[str, Any]]:
    if name == CURVE_ERRORS:
        return list(res.json(name)["per_seed"][arm].values())
    return [r for r in res.csv(name) if r["prior"] == arm]


def knowledge_recipes(res: Results) -> str:
    """Issue 30 in one table (docs/silver.md, docs/features.md): each recipe's test F1 at 10% gold,
    its paired Δ against no knowledge, and its recall inside / outside the dictionary."""
    rows = []
    for regime, label, name, arm, gain in RECIPE_ROWS:
        runs = _gain_runs(res, *gain) if gain else []
        if name is not None:  # a trained arm: its scores file, paired with that file's none
            s = res.scores(name, fraction=_fraction(name))
            f1 = f"{st.mean(s[(arm, 0.1)].values()):.2f}"
            delta = "-" if arm == "none" else _ci(s, arm, "none", 0.1)
        else:  # the dictionary alone: its row of the recall file
            f1, delta = f"{st.mean(float(r['f1']) for r in runs):.2f}", "-"
        recall = (" / ".join(f"{st.mean(float(r[k]) for r in runs):.1f}" for k in ("recall_dict", "recall_other"))
                  if runs else "-")
        file = name or gain[0]
        rows.append([regime, label, f1, delta, recall, f"[{file}](results/{file})"])
    return _table(["regime (10% gold)", "recipe", "test F1", "Δ vs none [95% CI], seeds ahead",
                   "recall inside / outside the dictionary", "file"], rows)


CALIBRATION_REGIMES = {"bc5cdr-knowledge": BC5_REGIME, "bc5cdr-weak": WEAK_REGIME}


def knowledge_calibration(res: Results) -> str:
    """Per regime and seed, the dictionary's quality on the run's gold subset as it is and
    calibrated (held-out), the forms dropped, and the silver weights ``auto`` gave (one row for
    the runs of a regime and seed: their counts are the same, else an error)."""
    cells: dict[tuple[str, str], list[str]] = {}
    weights: dict[tuple[str, str], str] = {}
    for r in res.csv(CALIBRATION):
        key = (r["pipeline"], r["seed"])
        row = [CALIBRATION_REGIMES.get(r["pipeline"], r["pipeline"]), r["seed"],
               " / ".join(f"{float(r[k]):.1f}" for k in ("precision", "recall", "f1")),
               " / ".join(f"{float(r['calibrated_' + k]):.1f}" for k in ("precision", "recall", "f1")), r["dropped"]]
        if cells.setdefault(key, row) != row:
            raise ValueError(f"{CALIBRATION}: the runs of {key[0]} seed {key[1]} disagree on the calibration")
        if r.get("silver_weight"):
            weights[key] = (f"{float(r['silver_weight']):.2f} / {float(r['silver_unmatched_weight']):.2f}"
                            + (" (warned)" if r.get("warning") == "yes" else ""))
    rows = [[*row, weights.get(key, "-")] for key, row in cells.items()]
    return _table(["regime", "seed", "dictionary P / R / F1", "calibrated P / R / F1", "forms dropped",
                   "silver weight / unmatched O (auto)"], rows)


def calibration_thresholds(res: Results) -> str:
    """Per regime and threshold (0: the dictionary as it is), over the seeds: the forms dropped
    (lowest-highest) and the held-out P, R and F1 (means; F1 also lowest-highest)."""
    groups: dict[tuple[str, float], list[dict[str, str]]] = {}
    for r in res.csv(THRESHOLDS):
        groups.setdefault((r["pipeline"], float(r["threshold"])), []).append(r)
    rows = []
    for (pipeline, th), runs in groups.items():
        dropped = sorted(int(r["dropped"]) for r in runs)
        f1 = [float(r["f1"]) for r in runs]

        def mean(k: str) -> str:
            return f"{st.mean(float(r[k]) for r in runs):.1f}"

        rows.append([CALIBRATION_REGIMES.get(pipeline, pipeline), f"{th:g}" if th else "- (as it is)",
                     f"{dropped[0]}-{dropped[-1]}" if dropped[0] != dropped[-1] else str(dropped[0]),
                     mean("precision"), mean("recall"), f"{st.mean(f1):.1f} ({min(f1):.1f}-{max(f1):.1f})",
                     str(len(runs))])
    return _table(["regime", "threshold", "forms dropped", "P", "R", "F1 (lowest-highest)", "seeds"], rows)


# ---- the README's measured section --------------------------------------------------------------
BC5 = "BC5CDR NER (entity F1)"
README_ROWS = [  # task, file, fraction, arm, label
    (BC5, ARMS, 0.1, "features", "HPO+MeSH token features (fair arms)"),
    (BC5, ARMS, 0.1, "attention", "concept attention prior (fair arms)"),
    (BC5, SILVER, 0.1, "silver", "silver labels + token features"),
    (BC5, KNOW, 0.1, "self-train", "self-training: teacher + calibrated dictionary labels"),
    ("BC5CDR Disease, HPO alone (weak dictionary)", WEAK, 0.1, "features", "token features, calibrated"),
    ("BC5CDR Disease, HPO alone (weak dictionary)", WEAK, 0.1, "silver", "silver labels, default (auto) weights"),
    ("BC5CDR Disease, HPO alone (weak dictionary)", WEAK, 0.1, "self-train", "self-training"),
    (BC5, CURVE, 0.05, "features", "token features"),
    (BC5, CURVE, 1.0, "features", "token features"),
    (BC5, CURVE, 1.0, "attention", "concept attention prior"),
    (BC5, CURVE, 0.01, "dict-override", "dictionary merged afterwards"),
    (BC5, CURVE, 1.0, "dict-override", "dictionary merged afterwards"),
    ("BC5CDR NER, all-mpnet-base-v2", MPNET, 0.1, "features", "token features"),
    ("STS-B (Spearman)", STSB, 0.01, "paper", "the paper's WordNet prior"),
    ("STS-B (Spearman)", STSB, 0.02, "paper", "the paper's WordNet prior"),
]
LEARNED = ("features", "attention", "both")


def _column(name: str) -> str:
    return "test_spearman" if name.startswith("stsb") else "test_f1"


def _fraction(name: str) -> float | None:
    return 0.1 if name == SILVER else None


def readme(res: Results) -> str:
    rows = []
    for task, name, f, arm, label in README_ROWS:
        s = res.scores(name, _column(name), _fraction(name))
        v = s[(arm, f)]
        c = compare(s, arm, "none", f)
        rows.append([task, _pct(f), label, f"{st.mean(v.values()):.2f}", _ci(s, arm, "none", f, ahead=False),
                     f"{c.stats.n} ({sum(d > 0 for d in c.deltas)} ahead)", f"[{name}](docs/results/{name})"])
    table = _table(["task", "train", "arm", "score", "Δ vs no knowledge [95% CI]", "seeds", "file"], rows)
    return table + "\n" + sentences(res) + "\n"


def merge_beats_all(res: Results) -> list[float]:
    """The curve's fractions at which the dictionary merged afterwards (``dict-override``) is above
    every learned arm, each by a 95% CI that excludes 0."""
    s = res.scores(CURVE)
    out = []
    for f in sorted({f for _, f in s}):
        cs = [compare(s, a, "dict-override", f) for a in LEARNED if (a, f) in s]
        if cs and all(c is not None and c.stats.n > 1 and c.stats.ci_high < 0 for c in cs):
            out.append(f)
    return out


def _list(fs: Sequence[float]) -> str:
    p = [f"{f * 100:g}" for f in fs]
    return (", ".join(p[:-1]) + " and " + p[-1] if len(p) > 1 else "".join(p)) + "%"


def sentences(res: Results) -> str:
    """Where knowledge pays and where it hurts, the numbers from the files."""
    s, stsb = res.scores(CURVE), res.scores(STSB, "test_spearman")
    fr = sorted({f for a, f in s if a == "features"})
    pays = [f for f in fr if (c := compare(s, "features", "none", f)) and c.stats.ci_low > 0]
    peak = max(fr, key=lambda f: compare(s, "features", "none", f).stats.mean)
    beats = merge_beats_all(res)
    hurt_stsb = [f for f in sorted({f for _, f in stsb}) if (c := compare(stsb, "paper", "none", f))
                 and c.stats.ci_high < 0]
    hurt_merge = [f for f in fr if (c := compare(s, "dict-override", "none", f)) and c.stats.ci_high < 0]
    first = (f"**Where knowledge pays:** on BC5CDR, HPO+MeSH token features beat no knowledge at "
             f"{'every training fraction' if pays == fr else _list(pays)} from {_pct(fr[0])} to {_pct(fr[-1])} "
             f"(most at {_pct(peak)}: {_ci(s, 'features', 'none', peak, ahead=False)}; on all of train "
             f"{_ci(s, 'features', 'none', fr[-1], ahead=False)}), and the concept attention prior adds "
             f"{_ci(s, 'attention', 'none', fr[-1], ahead=False)} on all of train, where it also beats its "
             f"shuffled control ({_ci(s, 'attention', 'shuffled', fr[-1], ahead=False)}).")
    second = (f"**Where it hurts:** the paper's WordNet prior on STS-B is below no prior at {_list(hurt_stsb)} "
              f"of train ({', '.join(_ci(stsb, 'paper', 'none', f, ahead=False) for f in hurt_stsb)} Spearman); "
              f"the dictionary merged into the no-knowledge model's output afterwards costs "
              f"{', '.join(_ci(s, 'dict-override', 'none', f, ahead=False) for f in hurt_merge)} F1 at "
              f"{_list(hurt_merge)}, yet at {_list(beats)} it beats every learned arm, and at 10% it still beats "
              f"the attention prior ({_ci(s, 'attention', 'dict-override', 0.1, ahead=False)}) while token "
              f"features beat it ({_ci(s, 'features', 'dict-override', 0.1, ahead=False)}).")
    return first + "\n\n" + second + "\n"


BLOCKS: dict[str, Callable[[Results], str]] = {
    "readme": readme, "curve-scores": curve_scores, "curve-deltas": curve_deltas,
    "arms-scores": arms_scores, "arms-deltas": arms_deltas,
    "silver-scores": silver_scores, "silver-deltas": silver_deltas,
    "knowledge-scores": knowledge_scores, "knowledge-deltas": knowledge_deltas,
    "weak-scores": weak_scores, "weak-deltas": weak_deltas,
    "knowledge-devel-gain": knowledge_devel_gain, "knowledge-gain": knowledge_gain, "weak-gain": weak_gain,
    "knowledge-calibration": knowledge_calibration, "knowledge-recipes": knowledge_recipes,
    "calibration-thresholds": calibration_thresholds,
    "mpnet-scores": mpnet_scores, "mpnet-deltas": mpnet_deltas,
}


def update_claims(text: str, folder: Path, res: Results | None = None) -> tuple[str, list[str]]:
    """``text`` with every claims block regenerated from the files in ``folder``; the block names used.
    An unknown block name raises ``KeyError`` naming the known ones."""
    res = res or Results(folder)
    used = []

    def repl(m: re.Match) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise KeyError(f"unknown claims block {name!r}; known: {', '.join(BLOCKS)}")
        used.append(name)
        return f"<!-- claims:begin {name} -->\n{BLOCKS[name](res)}<!-- claims:end -->"

    return MARKER.sub(repl, text), used

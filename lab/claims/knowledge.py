"""Claims blocks of issue 30 (knowledge that does not blind: self-training, the weak-dictionary
regime, recall inside and outside the dictionary, calibration) and issue 32 (MPNet with the
attention prior); registered in :data:`lab.claims.BLOCKS`."""
from __future__ import annotations

import statistics as st
from typing import Any

from .tables import (MPNET, SILVER, Results, _by_arm, _ci, _fraction, _table, deltas_markdown,
                            gain_markdown, score_table, scores_markdown)

KNOW = "bc5cdr-knowledge-results.csv"    # issue 30: self-training at 10% (none/features: the curve's runs)
WEAK = "bc5cdr-weak-results.csv"         # issue 30: the weak-dictionary regime (Disease, HPO alone)
# issue 30, where the gain comes from (benchmarks/knowledge_report.py; recall inside/outside the dictionary)
KNOW_DEVEL_GAIN = "bc5cdr-knowledge-devel-dictionary.csv"
KNOW_GAIN = "bc5cdr-knowledge-selftrain-dictionary.csv"
WEAK_GAIN = "bc5cdr-weak-dictionary.csv"
MIX_WEAK = "bc5cdr-mix-weak-results.csv"  # pipelines/bc5cdr-mix.yaml in the weak regime (claims_mix)
MIX_WEAK_GAIN = "bc5cdr-mix-weak-results-dictionary.csv"
CURVE_ERRORS = "bc5cdr-curve-errors-0.1.json"   # the curve's none/features at 10%, the same definition
CALIBRATION = "bc5cdr-knowledge-calibration.csv"  # every run's calibration.json (benchmarks/calibration_report.py)
THRESHOLDS = "bc5cdr-knowledge-calibration-thresholds.csv"  # the same counts at each threshold (same script)


# ---- knowledge that does not blind (issue 30) --------------------------------------------------
KNOW_ARMS = ["none", "features", "self-train", "self-train-control"]
KNOW_PAIRS = [("self-train", "none"), ("self-train", "features"), ("self-train", "self-train-control"),
              ("features", "none")]
WEAK_ARMS = ["none", "features", "silver", "self-train"]
WEAK_PAIRS = [("features", "none"), ("silver", "none"), ("self-train", "none"), ("self-train", "features")]


def knowledge_scores(res: Results) -> str:
    return scores_markdown(res.rows(KNOW), res.scores(KNOW), KNOW_ARMS)


def knowledge_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(KNOW), KNOW_PAIRS)


# issue 30, calibration by branch (prior.calibrate.branches) on the test sample: its own file holds
# the new arms and, copied with their source, none / features / self-train / its control at 10%
KNOW_BRANCH = "bc5cdr-knowledge-branch-results.csv"
KNOW_BRANCH_GAIN = "bc5cdr-knowledge-branch-dictionary.csv"
BRANCH_ARMS = ["none", "features", "features-branch", "self-train", "st-branch", "st-branch-tg", "st-w5"]
BRANCH_PAIRS = [("st-branch", "self-train"), ("st-branch", "none"), ("st-branch", "features"),
                ("st-branch", "self-train-control"), ("features-branch", "features"),
                ("st-branch-tg", "st-branch"), ("st-branch-tg", "self-train-control")]
# the fourth devel round's choice (silver.weight 0.5) on the test sample, the same file
W5_PAIRS = [("st-w5", "st-branch"), ("st-w5", "none"), ("st-w5", "features"), ("st-w5", "self-train-control")]
KNOW_W5_GAIN = "bc5cdr-knowledge-weight-dictionary.csv"


# the decoding round (decoding.py): the recipe's devel choice on test in the sweep's formats,
# beside none and features each decoded by its own devel choice and the control (argmax)
DECODE_RESULTS = "bc5cdr-knowledge-decode-results.csv"
DECODE_GAIN = "bc5cdr-knowledge-decode-dictionary.csv"


KNOW_DEVEL_MORE = ["bc5cdr-knowledge-devel-nodict-dictionary.csv", "bc5cdr-knowledge-devel-veto-dictionary.csv",
                   "bc5cdr-knowledge-devel-branch-dictionary.csv", "bc5cdr-knowledge-devel-branch2-dictionary.csv"]


def branch_devel_gain(res: Results) -> str:
    """The devel variants of this round (seeds 0-1) beside self-training's selection runs."""
    first = [g for g in _by_arm(res.csv(KNOW_DEVEL_GAIN)) if g[0] in ("self-train", "dictionary alone")]
    more = [g for name in KNOW_DEVEL_MORE for g in _by_arm(res.csv(name))
            if g[0] not in ("self-train", "dictionary alone")]
    return gain_markdown(first[:1] + more + first[1:])


# the third devel round (2026-12-05): soft O, no features, a teacher without features, the teacher's
# entity threshold, the silver weight; beside calibration by branch (its devel runs)
KNOW_DEVEL_BRANCH = "bc5cdr-knowledge-devel-branch-dictionary.csv"
KNOW_DEVEL_ROUND3 = ["bc5cdr-knowledge-devel-soft-dictionary.csv", "bc5cdr-knowledge-devel-tnone-dictionary.csv",
                     "bc5cdr-knowledge-devel-et-dictionary.csv", "bc5cdr-knowledge-devel-weight-dictionary.csv"]


def devel_round3_gain(res: Results) -> str:
    """This round's devel variants (seeds 0-1) beside calibration by branch and the dictionary."""
    branch = _by_arm(res.csv(KNOW_DEVEL_BRANCH))
    more = [g for name in KNOW_DEVEL_ROUND3 for g in _by_arm(res.csv(name)) if g[0] != "dictionary alone"]
    return gain_markdown([g for g in branch if g[0] == "st-branch"] + more
                         + [g for g in branch if g[0] == "dictionary alone"])


KNOW_1PCT_GAIN = "bc5cdr-knowledge-1pct-dictionary.csv"
KNOW_1PCT_BRANCH_GAIN = "bc5cdr-knowledge-1pct-branch-dictionary.csv"


def branch_1pct_gain(res: Results) -> str:
    """At 1%: self-training (the earlier sweep) beside it calibrated by branch, and the dictionary."""
    earlier = [g for g in _by_arm(res.csv(KNOW_1PCT_GAIN)) if g[0] in ("none", "features", "self-train")]
    return gain_markdown(earlier + _by_arm(res.csv(KNOW_1PCT_BRANCH_GAIN)))


KNOW_100PCT_BRANCH_GAIN = "bc5cdr-knowledge-100pct-branch-dictionary.csv"
CURVE_ERRORS_100 = "bc5cdr-curve-errors-1.json"  # the curve's none/features at 100%, the same definition


def branch_100pct_gain(res: Results) -> str:
    """At 100%: none and features (the curve's runs, the seeds of the 100% point) beside
    self-training calibrated by branch, and the dictionary alone."""
    ours = _by_arm(res.csv(KNOW_100PCT_BRANCH_GAIN))
    seeds = {r["seed"] for arm, runs in ours if arm != "dictionary alone" for r in runs}
    curve = res.json(CURVE_ERRORS_100)["per_seed"]
    earlier = [(arm, [v for s, v in curve[arm].items() if s in seeds]) for arm in ("none", "features")]
    return gain_markdown(earlier + ours)


def branch_scores(res: Results) -> str:
    return scores_markdown(res.rows(KNOW_BRANCH), res.scores(KNOW_BRANCH), BRANCH_ARMS)


def branch_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(KNOW_BRANCH), BRANCH_PAIRS)


def branch_gain(res: Results) -> str:
    """Recall inside / outside the dictionary of the branch-calibrated arms (their own report),
    beside self-training's and the dictionary alone (the earlier report, the same definition)."""
    earlier = [g for g in _by_arm(res.csv(KNOW_GAIN)) if g[0] == "self-train"]
    branch = _by_arm(res.csv(KNOW_BRANCH_GAIN))
    w5 = [g for g in _by_arm(res.csv(KNOW_W5_GAIN)) if g[0] != "dictionary alone"]
    return gain_markdown(earlier + branch[:-1] + w5 + branch[-1:])


def w5_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(KNOW_BRANCH), W5_PAIRS)


def weak_scores(res: Results) -> str:
    return scores_markdown(res.rows(WEAK), res.scores(WEAK), WEAK_ARMS)


def weak_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(WEAK), WEAK_PAIRS)


# issue 32: MPNet at 10%, 10 epochs, lr 1e-4: none and features (one sweep), the attention prior
# (a later sweep, the same settings and training subsets)
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
    (BC5_REGIME, "self-training + calibration by branch", KNOW_BRANCH, "st-branch", (KNOW_BRANCH_GAIN, "st-branch")),
    (BC5_REGIME, "the same mixed 0.6/0.4 with its twin without features, Viterbi, O bias 1 "
     "(Δ against none decoded by its own devel choice)", DECODE_RESULTS, "st-branch-decoded",
     (DECODE_GAIN, "st-branch-decoded")),
    (BC5_REGIME, "dictionary alone", None, None, (KNOW_GAIN, "dictionary alone")),
    (WEAK_REGIME, "none", WEAK, "none", (WEAK_GAIN, "none")),
    (WEAK_REGIME, "token features, calibrated", WEAK, "features", (WEAK_GAIN, "features")),
    (WEAK_REGIME, "silver labels + features (`auto` weights)", WEAK, "silver", (WEAK_GAIN, "silver")),
    (WEAK_REGIME, "self-training", WEAK, "self-train", (WEAK_GAIN, "self-train")),
    (WEAK_REGIME, "the recipe of record (`bc5cdr-mix.yaml`: two self-trained students mixed 0.6/0.4, Viterbi, "
     "O bias 1; Δ against none decoded the same way)", MIX_WEAK, "st-mix", (MIX_WEAK_GAIN, "st-mix")),
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

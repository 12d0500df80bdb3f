"""Claims blocks of issue 30's tenth round: the recipe of record retrained from scratch, and the
model's own finds carried across the split (post-hoc ``propagate``), scored by
``benchmarks/propagate_check.py`` on the retrained kept models (devel and test).

* ``retrain-check``: the retrained recipe (with and without the document pass) seed by seed
  beside the same settings' rows of round 9 (``bc5cdr-knowledge-document.csv``);
* ``carry-devel``: every (window, share) on the devel sample, 5 seeds, and the round's rule
  (the best mean devel F1; adopted only when ahead of no propagation on 4 of 5 seeds);
* ``carry-test``: no knowledge, the recipe with the document pass and the rule's choice on the
  test sample, paired by seed, recall inside and outside by both definitions;
* ``gate-devel`` / ``gate-test`` (round 11): the same carrying, only where the mix itself gives the
  carried type at least ``min_prob`` (``bc5cdr-carry-gate.csv``), on devel and on test;
* ``doc-curve`` / ``doc-curve-deltas`` (round 11): the recipe with the document pass at 1%, 10% and
  100% gold, from the sweeps' own reports of ``pipelines/bc5cdr-mix.yaml`` at each fraction.

Registered in :data:`lab.claims.BLOCKS`.
"""
from __future__ import annotations

import statistics as st

from .decoding import FRACTION, _mean
from .knowledge import KNOW_BRANCH
from .tables import Results, Scores, _ci, _mean_sd, _pct, _table, deltas_markdown
from priorkit.evaluation.dictionary_report import DICTIONARY_ROW

CARRY = "bc5cdr-carry.csv"  # propagate_check rows: recipe-doc (grid) and none (reference), eval + test
ROUND9 = "bc5cdr-knowledge-document.csv"  # round 9's decode_check rows (models lost since, retrained here)
RECIPE, NONE = "recipe-doc", "none"


GATE = "bc5cdr-carry-gate.csv"  # propagate_check rows with --min-prob (round 11), eval + test
#: the sweeps' reports of pipelines/bc5cdr-mix.yaml at 1%, 10% (the retrained recipe) and 100%
DOC_CURVE = {0.01: "bc5cdr-mix-1pct-results", 0.1: "bc5cdr-mix-retrain-results", 1.0: "bc5cdr-mix-100pct-results"}


def _label(row: dict) -> str:
    if row["propagate"] == "0":
        return "no propagation"
    gate = row.get("min_prob") or "0"
    return f"propagate {row['propagate']}, share {row['share']}" + (
        f", min_prob {gate}" if float(gate) > 0 else "")


def _cells(res: Results, arm: str, split: str, name: str = CARRY) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in res.csv(name):
        if r["arm"] == arm and r["split"] == split:
            out.setdefault(_label(r), []).append(r)
    return out


def _scores(cells: dict[str, list[dict]], key: str = "f1") -> Scores:
    return {(k, FRACTION): {int(r["seed"]): float(r[key]) for r in rows} for k, rows in cells.items()}


def choice(res: Results, name: str = CARRY) -> tuple[str, bool]:
    """The rule's choice on devel and whether it is adopted (ahead of no propagation on >= 4 of 5 seeds);
    in the gate's file, among the gated settings only."""
    cells = _cells(res, RECIPE, "eval", name)
    best = max((k for k in cells if k != "no propagation" and (name == CARRY or "min_prob" in k)),
               key=lambda k: _mean(cells[k], "f1"))
    base = {r["seed"]: float(r["f1"]) for r in cells["no propagation"]}
    ahead = sum(float(r["f1"]) > base[r["seed"]] for r in cells[best])
    return best, ahead >= 4


def _added(rows: list[dict]) -> str:
    added = sum(int(r["added"]) for r in rows)
    right = sum(int(r["added_right"]) for r in rows)
    return f"{added / len(rows):.0f} ({100 * right / added:.0f}%)" if added else "0"


def carry_devel(res: Results) -> str:
    """The grid on the devel sample (5 seeds): F1, the paired gain over no propagation, recall
    outside by both definitions, and the entities added per seed with the share of them that is right."""
    cells = _cells(res, RECIPE, "eval")
    scores = _scores(cells)
    head = ["setting (devel, 5 seeds)", "F1", "− no propagation [95% CI], ahead", "recall inside",
            "recall outside (sentence-level)", "recall outside (document-level)", "added a seed (right)"]
    lines = [[k, _mean_sd([float(r["f1"]) for r in rows]),
              "-" if k == "no propagation" else _ci(scores, k, "no propagation", FRACTION),
              f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}",
              f"{_mean(rows, 'recall_other_doc'):.1f}", "-" if k == "no propagation" else _added(rows)]
             for k, rows in cells.items()]
    best, adopted = choice(res)
    return _table(head, lines) + (
        f"\nThe rule's choice: {best} ({_mean(cells[best], 'f1'):.2f} on devel); "
        + ("adopted (ahead of no propagation on at least 4 of 5 seeds).\n" if adopted else
           "not adopted (ahead of no propagation on fewer than 4 of 5 seeds): the recipe stays as it is.\n"))


def carry_test(res: Results) -> str:
    """Test, 5 seeds: no knowledge, the recipe with the document pass and the rule's choice, paired."""
    best, adopted = choice(res)
    recipe, none = _cells(res, RECIPE, "test"), _cells(res, NONE, "test")
    picks = {"none (argmax)": none["no propagation"], "the recipe + the document pass": recipe["no propagation"],
             f"the same, {best} (the rule's choice{'' if adopted else ', not adopted'})": recipe[best]}
    scores = _scores(picks)
    base = "the recipe + the document pass"
    head = ["setting (test, 5 seeds)", "F1", "− the recipe + document pass [95% CI], ahead", "recall inside",
            "recall outside (sentence-level)", "recall outside (document-level)",
            "precision of its finds beyond the dictionary", "added a seed (right)"]
    lines = [[k, _mean_sd([float(r["f1"]) for r in rows]), "-" if k == base or k.startswith("none") else
              _ci(scores, k, base, FRACTION), f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}",
              f"{_mean(rows, 'recall_other_doc'):.1f}", f"{_mean(rows, 'precision_other'):.1f}",
              _added(rows) if "rule" in k else "-"] for k, rows in picks.items()]
    return _table(head, lines)


def retrain_check(res: Results) -> str:
    """The recipe of record retrained from scratch this round, seed by seed, against round 9's rows
    of the same settings (test; the document pass's columns from the same files)."""
    old = {}
    for r in res.csv(ROUND9):
        if r["split"] == "test" and r["arm"] == "st-branch+st-nofeat" and r.get("join") in ("", "none", None) \
                and float(r["weight"]) == 0.6 and float(r["o_bias"]) == 1.0 and r["decode"] == "viterbi":
            old[int(r["seed"])] = float(r["f1"])
    new = {int(r["seed"]): float(r["f1"]) for r in _cells(res, RECIPE, "test")["no propagation"]}
    seeds = sorted(set(old) & set(new))
    lines = [[str(s), f"{old[s]:.2f}", f"{new[s]:.2f}", f"{new[s] - old[s]:+.2f}"] for s in seeds]
    lines.append(["mean", f"{sum(old[s] for s in seeds) / len(seeds):.2f}",
                  f"{sum(new[s] for s in seeds) / len(seeds):.2f}",
                  f"{sum(new[s] - old[s] for s in seeds) / len(seeds):+.2f}"])
    return _table(["seed", "round 9 (test F1)", "retrained (test F1)", "difference"], lines)


# ---- round 11: carrying only where the mix half agrees --------------------------------------
def gate_devel(res: Results) -> str:
    """The gated grid on the devel sample (5 seeds), best first, beside the ungated rows and no
    propagation: F1, the paired gain, recall outside by both definitions, entities added (right)."""
    cells = _cells(res, RECIPE, "eval", GATE)
    scores = _scores(cells)
    head = ["setting (devel, 5 seeds)", "F1", "− no propagation [95% CI], ahead", "recall outside (sentence-level)",
            "recall outside (document-level)", "added a seed (right)"]
    order = sorted(cells, key=lambda k: -_mean(cells[k], "f1"))
    lines = [[k, _mean_sd([float(r["f1"]) for r in cells[k]]),
              "-" if k == "no propagation" else _ci(scores, k, "no propagation", FRACTION),
              f"{_mean(cells[k], 'recall_other'):.1f}", f"{_mean(cells[k], 'recall_other_doc'):.1f}",
              "-" if k == "no propagation" else _added(cells[k])] for k in order]
    best, adopted = choice(res, GATE)
    return _table(head, lines) + (
        f"\nThe rule's choice among the gated settings: {best} ({_mean(cells[best], 'f1'):.2f} on devel); "
        + ("adopted.\n" if adopted else "not adopted (ahead of no propagation on fewer than 4 of 5 seeds).\n"))


def gate_test(res: Results) -> str:
    """Test, 5 seeds, read once: the recipe with the document pass, the same carried ungated and gated
    (the devel choice), paired by seed."""
    best, adopted = choice(res, GATE)
    cells = _cells(res, RECIPE, "test", GATE)
    ungated = best.rsplit(", min_prob", 1)[0]
    base = "no propagation"
    picks = {base: cells[base], ungated: cells[ungated],
             f"{best} (the rule's choice{'' if adopted else ', not adopted'})": cells[best]}
    scores = _scores(picks)
    head = ["recipe + document pass (test, 5 seeds)", "F1", "− no propagation [95% CI], ahead", "recall inside",
            "recall outside (sentence-level)", "recall outside (document-level)", "added a seed (right)"]
    lines = [[k, _mean_sd([float(r["f1"]) for r in rows]), "-" if k == base else _ci(scores, k, base, FRACTION),
              f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}",
              f"{_mean(rows, 'recall_other_doc'):.1f}", "-" if k == base else _added(rows)]
             for k, rows in picks.items()]
    return _table(head, lines)


# ---- round 11: the recipe with the document pass across the curve ---------------------------
def _doc_curve(res: Results) -> tuple[Scores, dict[tuple[str, float], list[dict]]]:
    """Test F1 by (arm, fraction): none and features from the curve's runs (argmax), the mix and the
    mix with the document pass from the sweeps of pipelines/bc5cdr-mix.yaml; and their
    inside/outside rows (the sweeps' -dictionary files)."""
    s: Scores = {k: v for k, v in res.scores(KNOW_BRANCH).items() if k[0] in ("none", "features")}
    rows: dict[tuple[str, float], list[dict]] = {}
    for f, stem in DOC_CURVE.items():
        for arm, v in res.scores(f"{stem}.csv").items():
            if arm[0] in ("st-mix", "st-mix-doc"):
                s[(arm[0], f)] = v
        for r in res.csv(f"{stem}-dictionary.csv"):
            rows.setdefault((r["prior"], f), []).append(r)
    return s, rows


def doc_curve(res: Results) -> str:
    """The recipe with the document pass at 1%, 10% and 100% gold: test F1 (mean (sd, seeds)) beside
    none, features and the mix without the pass; the dictionary alone; recall inside and outside
    (sentence-level and document-level dictionary) of the recipe, and none's recall outside."""
    from .mix import _none_outside

    s, rows = _doc_curve(res)
    out = []
    for f in sorted(DOC_CURVE):
        doc = rows[("st-mix-doc", f)]
        none_out = _none_outside(res, f, set(s[("st-mix-doc", f)]))
        dictionary = rows.get((DICTIONARY_ROW, f)) or []
        out.append([_pct(f), *(_mean_sd(list(s.get((a, f), {}).values())) for a in ("none", "features", "st-mix")),
                    f"**{_mean_sd(list(s[('st-mix-doc', f)].values()))}**",
                    f"{_mean(dictionary, 'f1'):.2f}" if dictionary else "-",
                    f"{_mean(doc, 'recall_dict'):.1f}", f"{_mean(doc, 'recall_other'):.1f}",
                    f"{_mean(doc, 'recall_other_doc'):.1f}", f"{st.mean(none_out):.1f}" if none_out else "-"])
    return _table(["gold", "none", "features", "recipe (mix)", "recipe + document pass", "dictionary alone",
                   "recipe + pass: recall inside", "outside (sentence-level)", "outside (document-level)",
                   "none: recall outside"], out)


def doc_curve_deltas(res: Results) -> str:
    """The recipe with the document pass paired by seed against the mix, none and features."""
    s, _ = _doc_curve(res)
    s = {k: v for k, v in s.items() if k[1] in DOC_CURVE}
    return deltas_markdown(s, [("st-mix-doc", "st-mix"), ("st-mix-doc", "none"), ("st-mix-doc", "features")])

"""Claims blocks of issue 30's tenth round: the recipe of record retrained from scratch, and the
model's own finds carried across the split (post-hoc ``propagate``), scored by
``benchmarks/propagate_check.py`` on the retrained kept models (devel and test).

* ``retrain-check``: the retrained recipe (with and without the document pass) seed by seed
  beside the same settings' rows of round 9 (``bc5cdr-knowledge-document.csv``);
* ``carry-devel``: every (window, share) on the devel sample, 5 seeds, and the round's rule
  (the best mean devel F1; adopted only when ahead of no propagation on 4 of 5 seeds);
* ``carry-test``: no knowledge, the recipe with the document pass and the rule's choice on the
  test sample, paired by seed, recall inside and outside by both definitions.

Registered in :data:`priorkit.pipeline.claims.BLOCKS`.
"""
from __future__ import annotations

from .claims_decoding import FRACTION, _mean
from .claims_tables import Results, Scores, _ci, _mean_sd, _table

CARRY = "bc5cdr-carry.csv"  # propagate_check rows: recipe-doc (grid) and none (reference), eval + test
ROUND9 = "bc5cdr-knowledge-document.csv"  # round 9's decode_check rows (models lost since, retrained here)
RECIPE, NONE = "recipe-doc", "none"


def _label(row: dict) -> str:
    return "no propagation" if row["propagate"] == "0" else f"propagate {row['propagate']}, share {row['share']}"


def _cells(res: Results, arm: str, split: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in res.csv(CARRY):
        if r["arm"] == arm and r["split"] == split:
            out.setdefault(_label(r), []).append(r)
    return out


def _scores(cells: dict[str, list[dict]], key: str = "f1") -> Scores:
    return {(k, FRACTION): {int(r["seed"]): float(r[key]) for r in rows} for k, rows in cells.items()}


def choice(res: Results) -> tuple[str, bool]:
    """The rule's choice on devel and whether it is adopted (ahead of no propagation on >= 4 of 5 seeds)."""
    cells = _cells(res, RECIPE, "eval")
    best = max((k for k in cells if k != "no propagation"), key=lambda k: _mean(cells[k], "f1"))
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

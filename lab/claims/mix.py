"""Claims blocks of issue 30's fifth round, on the recipe of record (0.6 of the features
student's log-probabilities and 0.4 of its twin's without features, Viterbi, O bias 1;
:mod:`.decoding`): a mix gated by the dictionary, the O bias chosen per run on devel,
the recipe at 1%, 10% and 100% gold, and (sixth round) every post-hoc family's trade between
F1 and recall outside the dictionary, and the recipe's file in the weak-dictionary regime.
Rows are ``benchmarks/decode_check.py``'s (one per model, split, weights, O bias and decoding)
or ``benchmarks/span_union.py``'s; registered in :data:`lab.claims.BLOCKS`.
"""
from __future__ import annotations

import statistics as st
from typing import Any

from . import decoding
from .knowledge import CURVE_ERRORS, CURVE_ERRORS_100, KNOW_1PCT_GAIN, KNOW_BRANCH, MIX_WEAK, MIX_WEAK_GAIN
from .tables import (Results, Scores, _by_arm, _ci, _mean_sd, _pct, _table, deltas_markdown, gain_markdown,
                            scores_markdown)

GATE = "bc5cdr-knowledge-mix-gate.csv"
GATE_NONE = "bc5cdr-knowledge-mix-gate-none.csv"  # the same gate with no knowledge as the partner
UNION = "bc5cdr-knowledge-union.csv"  # benchmarks/span_union.py: the recipe + a partner's confident entities
BIAS = "bc5cdr-knowledge-obias.csv"
CURVE = "bc5cdr-knowledge-mix-curve.csv"
CURVE_RESULTS = "bc5cdr-knowledge-mix-curve-results.csv"  # the recipe in the sweep's format (README rows)
RECIPE = "mix6-v-o1"  # the devel choice of the decoding round (decode-devel)
_mean = decoding._mean  # a column's mean over rows


# ---- a mix gated by the dictionary -------------------------------------------------------
def _gate_groups(res: Results) -> dict[tuple[float, float, float], dict[str, list[dict[str, Any]]]]:
    groups: dict[tuple[float, float, float], dict[str, list[dict[str, Any]]]] = {}
    for r in res.csv(GATE):
        key = (float(r["weight"]), float(r["weight_outside"]), float(r["o_bias"]))
        groups.setdefault(key, {}).setdefault(r["split"], []).append(r)
    return groups


def mix_gate(res: Results) -> str:
    """Per (st-branch's share at the words the dictionary tags, its share at the others): the O
    bias with the best devel mean, devel F1 and recall outside there, and the same on test;
    the best devel row in bold (equal shares: the ungated mix)."""
    best: dict[tuple[float, float], tuple[float, dict[str, list[dict[str, Any]]]]] = {}
    for (w, wo, b), by in _gate_groups(res).items():
        if "eval" not in by or "test" not in by:
            continue
        if (w, wo) not in best or _mean(by["eval"], "f1") > _mean(best[(w, wo)][1]["eval"], "f1"):
            best[(w, wo)] = (b, by)
    top = max(best, key=lambda k: _mean(best[k][1]["eval"], "f1"))
    rows = []
    for (w, wo), (b, by) in sorted(best.items(), key=lambda kv: (-kv[0][0], -kv[0][1])):
        f1 = f"{_mean(by['eval'], 'f1'):.2f}"
        rows.append([f"{w:g}", f"{wo:g}", f"{b:g}", f"**{f1}**" if (w, wo) == top else f1,
                     f"{_mean(by['eval'], 'recall_other'):.1f}", f"{_mean(by['test'], 'f1'):.2f}",
                     f"{_mean(by['test'], 'recall_dict'):.1f}",
                     f"{_mean(by['test'], 'recall_other'):.1f}", str(len(by["test"]))])
    table = _table(["share inside", "share outside", "O bias (devel)", "devel F1", "devel recall outside", "test F1",
                    "test recall inside", "test recall outside", "seeds"], rows)
    groups = {k: by for k, by in _gate_groups(res).items() if "eval" in by and "test" in by}
    (w, wo, b), by = max(groups.items(), key=lambda kv: _mean(kv[1]["eval"], "recall_other"))
    return table + (f"\nThe least blind setting on devel: share {w:g} inside, {wo:g} outside, O bias {b:g}: devel recall "
                    f"outside {_mean(by['eval'], 'recall_other'):.1f} at F1 {_mean(by['eval'], 'f1'):.2f}; test "
                    f"{_mean(by['test'], 'recall_other'):.1f} at {_mean(by['test'], 'f1'):.2f}.\n")


# ---- the O bias chosen per run -----------------------------------------------------------
FAMILIES = [("st-branch", 1.0, "st-branch-v-o1"), ("st-branch+st-nofeat", 0.6, RECIPE), ("none", 1.0, "none-v-o1"),
            ("features", 1.0, "features-v-o1")]


def obias_per_run(res: Results) -> str:
    """Each model's O bias chosen per seed on devel (Viterbi, the finer grid), its test F1 against
    the model's best bias over all seeds on the decoding round's coarse grid, paired by seed."""
    rows_by: dict[tuple[str, float, str, int], list[dict[str, Any]]] = {}
    for r in res.csv(BIAS):
        rows_by.setdefault((r["arm"], float(r["weight"]), r["split"], int(r["seed"])), []).append(r)
    fixed = decoding._scores(res, "test")
    scores: Scores = {}
    out = []
    for arm, w, reference in FAMILIES:
        seeds = sorted({k[3] for k in rows_by if k[:3] == (arm, w, "eval")})
        chosen, per_run = [], {}
        for s in seeds:
            b = float(max(rows_by[(arm, w, "eval", s)], key=lambda r: float(r["f1"]))["o_bias"])
            test = next(r for r in rows_by[(arm, w, "test", s)] if float(r["o_bias"]) == b)
            chosen.append(b)
            per_run[s] = float(test["f1"])
        if not per_run or (reference, decoding.FRACTION) not in fixed:
            continue
        name = f"{reference.split('-v')[0] if w == 1.0 else 'mix6'}-v-auto"
        scores[(name, decoding.FRACTION)] = per_run
        scores[(reference, decoding.FRACTION)] = fixed[(reference, decoding.FRACTION)]
        delta = _ci(scores, name, reference, decoding.FRACTION)
        out.append([name, " ".join(f"{b:g}" for b in chosen), _mean_sd(list(per_run.values())), reference,
                    _mean_sd(list(fixed[(reference, decoding.FRACTION)].values())), delta])
    return _table(["per-run choice", "O bias per seed", "test F1", "one choice", "test F1", "Δ [95% CI], seeds ahead"],
                  out)


# ---- the recipe at 1%, 10% and 100% --------------------------------------------------------
def _curve_rows(res: Results) -> dict[tuple[str, float], list[dict[str, Any]]]:
    """Test rows by (setting, fraction): this round's models at 1% and 100%, the decoding round's at 10%."""
    out: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in res.csv(CURVE):
        if r["split"] == "test":
            out.setdefault((decoding.setting(r), float(r["fraction"])), []).append(r)
    for r in res.csv(decoding.DECODE):
        if r["split"] == "test":
            out.setdefault((decoding.setting(r), decoding.FRACTION), []).append(r)
    return out


def _none_outside(res: Results, fraction: float, seeds: set[int]) -> list[float]:
    """No knowledge's recall outside the dictionary at ``fraction``, on the recipe's ``seeds``."""
    if fraction in (decoding.FRACTION, 1.0):
        per_seed = res.json(CURVE_ERRORS if fraction == decoding.FRACTION else CURVE_ERRORS_100)["per_seed"]["none"]
        return [v["recall_other"] for s, v in per_seed.items() if int(s) in seeds]
    return [float(r["recall_other"]) for r in res.csv(KNOW_1PCT_GAIN) if r["prior"] == "none"
            and abs(float(r["fraction"]) - fraction) < 1e-9 and int(r["seed"]) in seeds]


def _curve_scores(res: Results) -> Scores:
    s: Scores = {k: v for k, v in res.scores(KNOW_BRANCH).items() if k[0] in ("none", "features")}
    for (name, f), rows in _curve_rows(res).items():
        if name in (RECIPE, "st-branch", "st-nofeat"):
            s[(f"{name} (kept)" if name == "st-branch" else name, f)] = {int(r["seed"]): float(r["f1"]) for r in rows}
    return s


def mix_curve_scores(res: Results) -> str:
    """Test F1 (mean (sd, seeds)) per fraction: none and features (the pipeline's runs, argmax),
    st-branch and st-nofeat (kept models, argmax) and the recipe; recall outside the dictionary
    of none (on the recipe's seeds), st-branch and the recipe, recall inside of the recipe."""
    s, rows = _curve_scores(res), _curve_rows(res)
    out = []
    for f in sorted({f for (name, f) in s if name == RECIPE}):
        cells = [_mean_sd(list(s.get((a, f), {}).values())) for a in
                 ("none", "features", "st-branch (kept)", "st-nofeat", RECIPE)]
        none_out = _none_outside(res, f, set(s[(RECIPE, f)]))
        out.append([_pct(f), *cells, f"{st.mean(none_out):.1f}" if none_out else "-",
                    f"{_mean(rows[('st-branch', f)], 'recall_other'):.1f}",
                    f"{_mean(rows[(RECIPE, f)], 'recall_dict'):.1f} / {_mean(rows[(RECIPE, f)], 'recall_other'):.1f}"])
    return _table(["fraction", "none", "features", "st-branch", "st-nofeat", "recipe (mix6-v-o1)",
                   "none: recall outside", "st-branch: recall outside", "recipe: recall inside / outside"], out)


def mix_curve_deltas(res: Results) -> str:
    """The recipe paired by seed against st-branch (the same kept models), none and features
    (the pipeline's runs, argmax) at each fraction."""
    s = _curve_scores(res)
    fractions = {f for (name, f) in s if name == RECIPE}
    return deltas_markdown({k: v for k, v in s.items() if k[1] in fractions},
                           [(RECIPE, "st-branch (kept)"), (RECIPE, "none"), (RECIPE, "features")])


# ---- the post-hoc frontier: F1 against recall outside the dictionary -------------------------
Family = dict[str, dict[str, list[dict[str, Any]]]]  # setting -> split -> rows (one a seed)


def _union_label(how: str, threshold: float) -> str:
    return f"{how}, confidence ≥ {threshold:g}"


def _union_family(partner: str) -> str:
    return f"the recipe + {partner}'s confident entities"


DIAL_FAMILY = "one mix weight at every word (2c)"  # the recipe of record's students and their mixes


def add(fam: Family, label: str, r: dict[str, Any]) -> None:
    """File row ``r`` under its setting ``label`` and its split in family ``fam``."""
    fam.setdefault(label, {}).setdefault(r["split"], []).append(r)


def families(res: Results) -> list[tuple[str, Family]]:
    """Every post-hoc family measured on the kept 10% models, each setting's rows by split."""
    dial: Family = {}
    for r in res.csv(decoding.DECODE):
        if decoding.family(r) == decoding.RECIPE:
            add(dial, decoding.setting(r), r)
    out = [(DIAL_FAMILY, dial)]
    for name, file in (("gated: st-nofeat where the dictionary is silent", GATE),
                       ("gated: none where the dictionary is silent", GATE_NONE)):
        fam: Family = {}
        for r in res.csv(file):
            add(fam, f"{float(r['weight']):g} / {float(r['weight_outside']):g}, O bias {float(r['o_bias']):g}", r)
        out.append((name, fam))
    for partner in ("none", "st-nofeat"):
        fam = {}
        for r in res.csv(UNION):
            if r["arm"] == f"mix+{partner}":
                add(fam, _union_label(r["filter"], float(r["threshold"])), r)
        out.append((_union_family(partner), fam))
    return out


def none_recall_outside(res: Results, split: str) -> float:
    """No knowledge's recall outside the dictionary (its kept models, argmax, no O bias)."""
    return _mean([r for r in res.csv(decoding.DECODE) if r["arm"] == "none" and r["split"] == split
                  and r["decode"] == "argmax" and float(r["o_bias"]) == 0.0], "recall_other")


def unblind_choice(fam: Family, floor: float) -> str | None:
    """The setting with the best devel F1 among those whose devel recall outside the dictionary
    reaches ``floor`` (no knowledge's); None when none does."""
    reach = [k for k in fam if _mean(fam[k]["eval"], "recall_other") >= floor]
    return max(reach, key=lambda k: _mean(fam[k]["eval"], "f1")) if reach else None


def frontier_table(families: dict[str, Family], floor: float) -> str:
    """Per family (its settings scored on devel and test): its devel optimum (devel and test F1 and
    recall outside), its least blind setting on devel, and :func:`unblind_choice`."""
    rows = []
    for name, fam in families.items():
        fam = {k: v for k, v in fam.items() if "eval" in v and "test" in v}
        if not fam:
            continue
        opt = max(fam, key=lambda k: _mean(fam[k]["eval"], "f1"))
        least = max(fam, key=lambda k: _mean(fam[k]["eval"], "recall_other"))
        at = unblind_choice(fam, floor)
        ev, te = fam[opt]["eval"], fam[opt]["test"]
        rows.append([name, str(len(fam)), opt,
                     f"{_mean(ev, 'f1'):.2f} / {_mean(ev, 'recall_other'):.1f}",
                     f"{_mean(te, 'f1'):.2f} / {_mean(te, 'recall_other'):.1f}",
                     f"{least}: {_mean(fam[least]['eval'], 'recall_other'):.1f} at {_mean(fam[least]['eval'], 'f1'):.2f}",
                     f"{at}: {_mean(fam[at]['eval'], 'f1'):.2f} (test {_mean(fam[at]['test'], 'f1'):.2f} / "
                     f"{_mean(fam[at]['test'], 'recall_other'):.1f})" if at else "no setting reaches it",
                     str(len(ev))])
    return _table(["family", "settings", "devel optimum", "devel F1 / outside", "test F1 / outside",
                   "least blind on devel: outside at F1", "best devel F1 at outside ≥ none's", "seeds"], rows)


def blind_frontier(res: Results) -> str:
    """Per post-hoc family: its devel optimum (devel and test F1 and recall outside), its least
    blind setting on devel, and its best devel F1 among the settings whose devel recall outside
    reaches no knowledge's (the issue's target, chosen on devel)."""
    floor = none_recall_outside(res, "eval")
    fams = dict(families(res))
    table = frontier_table(fams, floor)
    added = []
    for partner in ("none", "st-nofeat"):
        cells = []
        for th in (0.5, 0.9):
            setting = fams[_union_family(partner)].get(_union_label("any", th), {})
            runs = [r for r in setting.get("eval", []) if r["added_right"]]
            if runs:
                cells.append(f"{_mean(runs, 'added_right'):.1f}% at confidence ≥ {th:g} "
                             f"({_mean(runs, 'added'):.0f} a seed)")
        if cells:
            added.append(f"{partner}'s: {', '.join(cells)}")
    return table + (f"\nNo knowledge (its kept models, argmax): recall outside {floor:.1f} on devel, "
                    f"{none_recall_outside(res, 'test'):.1f} on test. The entities a union adds (filter any, devel) "
                    f"are gold entities in {'; '.join(added)}.\n")


# ---- the recipe's file in the weak-dictionary regime -----------------------------------------
MIX_WEAK_ARMS = ["none", "st-branch", "st-nofeat", "st-mix"]
MIX_WEAK_PAIRS = [("st-mix", "none"), ("st-branch", "none"), ("st-nofeat", "none"), ("st-mix", "st-branch")]


def mix_weak_scores(res: Results) -> str:
    """Every arm of pipelines/bc5cdr-mix.yaml (all scored with Viterbi, O bias 1) on BC5CDR
    Disease with the HPO dictionary alone, 10% gold."""
    return scores_markdown(res.rows(MIX_WEAK), res.scores(MIX_WEAK), MIX_WEAK_ARMS)


def mix_weak_deltas(res: Results) -> str:
    return deltas_markdown(res.scores(MIX_WEAK), MIX_WEAK_PAIRS)


def mix_weak_gain(res: Results) -> str:
    return gain_markdown(_by_arm(res.csv(MIX_WEAK_GAIN)))

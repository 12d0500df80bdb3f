"""Claims blocks of issue 30's seventh round: two training changes against blindness, scored
like the recipe of record (``benchmarks/decode_check.py`` rows on kept models, devel and test):
``features.outside_weight`` (the loss weight of the entity words the dictionary does not match;
its devel sweep's features arms from the sweep's recall file, its self-training students alone
and mixed with the kept student without features), and the student without features taught by
the features teacher (alone and mixed with the kept features student).  Registered in
:data:`priorkit.pipeline.claims.BLOCKS`.
"""
from __future__ import annotations

from collections import Counter

from . import claims_decoding as decoding
from . import claims_mix as mix
from .claims_tables import Results, Scores, _by_arm, _ci, _mean_sd, _table, gain_markdown

OUTSIDE = "bc5cdr-knowledge-outside-weight.csv"  # decode_check rows of st-ow3 and st-ow6 (and their mixes)
OUTSIDE_DEVEL = "bc5cdr-knowledge-outside-weight-devel-dictionary.csv"  # the devel sweep's recall file
NOFEAT_FT = "bc5cdr-knowledge-nofeat-ft.csv"  # st-nofeat-ft (the features teacher's pupil) alone and mixed
_mean = decoding._mean


def outside_weight_devel(res: Results) -> str:
    """Where the devel F1 of token features with and without ``outside_weight`` comes from
    (the sweep's own recall file: calibrated features, Viterbi, O bias 1, seeds 0-1)."""
    return gain_markdown([(arm, runs) for arm, runs in _by_arm(res.csv(OUTSIDE_DEVEL))
                          if arm.startswith("features") or arm == "dictionary alone"])


#: (family, result file, the rows' arms): the students this round trained, alone and mixed
NEW_FAMILIES = [
    ("st-ow3: outside weight 3 (± st-nofeat)", OUTSIDE, ("st-ow3", "st-ow3+st-nofeat")),
    ("st-ow6: outside weight 6 (± st-nofeat)", OUTSIDE, ("st-ow6", "st-ow6+st-nofeat")),
    ("st-nofeat-ft: taught by the features teacher (± st-branch)", NOFEAT_FT,
     ("st-nofeat-ft", "st-branch+st-nofeat-ft")),
]


def _families(res: Results) -> dict[str, mix.Family]:
    """2c's family (the recipe of record's students and their mixes) and each of
    :data:`NEW_FAMILIES` whose file is there."""
    out = dict(mix.families(res)[:1])
    for name, file, arms in NEW_FAMILIES:
        if not (res.folder / file).exists():
            continue
        fam: mix.Family = {}
        for r in res.csv(file):
            if r["arm"] in arms:
                mix.add(fam, decoding.setting(r), r)
        out[name] = fam
    return out


def all_families(res: Results) -> dict[str, mix.Family]:
    """Every family of 2c-2f: the post-hoc ones (:func:`claims_mix.families`) and this round's."""
    return {**dict(mix.families(res)), **_families(res)}


def _choices(fams: dict[str, mix.Family], floor: float) -> tuple[tuple[str, str], tuple[str, str] | None]:
    """(family, setting) of the best devel F1 over ``fams``, and the same among the settings
    reaching ``floor`` (no knowledge's devel recall outside; None when none does)."""
    best = max(((n, k) for n, f in fams.items() for k in f if "eval" in f[k]),
               key=lambda nk: _mean(fams[nk[0]][nk[1]]["eval"], "f1"))
    reach = [(n, k) for n, k in ((n, mix.unblind_choice(f, floor)) for n, f in fams.items()) if k is not None]
    unblind = max(reach, key=lambda nk: _mean(fams[nk[0]][nk[1]]["eval"], "f1")) if reach else None
    return best, unblind


def round7_frontier(res: Results) -> str:
    """The frontier table of 2e for the recipe of record's family and each of this round's,
    then the two devel choices (best F1; best F1 at no knowledge's recall outside)."""
    fams, floor = _families(res), mix.none_recall_outside(res, "eval")
    best, unblind = _choices(fams, floor)
    text = mix.frontier_table(fams, floor)
    text += f"\nBest devel F1 of all: {best[1]} ({best[0]}). "
    text += (f"Best devel F1 at recall outside ≥ none's ({floor:.1f}): {unblind[1]} ({unblind[0]}).\n" if unblind
             else f"No setting reaches none's devel recall outside ({floor:.1f}).\n")
    return text


def _pareto(fams: dict[str, mix.Family]) -> list[tuple[str, str]]:
    """(family, setting) of every setting no other beats on both devel F1 and devel recall outside."""
    pts = [(_mean(v["eval"], "recall_other"), _mean(v["eval"], "f1"), n, k)
           for n, f in fams.items() for k, v in f.items() if "eval" in v and "test" in v]
    front, best = [], float("-inf")
    for outside, f1, n, k in sorted(pts, key=lambda p: (-p[0], -p[1])):
        if f1 > best:
            front.append((n, k))
            best = f1
    return front


def round7_test(res: Results) -> str:
    """Test scores, recall inside and outside the dictionary of the unblind choice and of each
    new family's devel optimum, paired against no knowledge (argmax, the issue's reference)
    and the recipe of record; then how many of the devel frontier's settings are each kind's."""
    fams = _families(res)
    _, unblind = _choices(fams, mix.none_recall_outside(res, "eval"))
    picks = [] if unblind is None else [("unblind choice", *unblind)]
    for name, fam in fams.items():
        if name != mix.DIAL_FAMILY:
            opt = max((k for k in fam if "eval" in fam[k]), key=lambda k: _mean(fam[k]["eval"], "f1"))
            picks.append((f"{name.split(':')[0]}, devel optimum", name, opt))
    decoded, by_setting = decoding._scores(res, "test"), decoding._runs(res, "test")
    scores: Scores = {(k, decoding.FRACTION): decoded[(k, decoding.FRACTION)] for k in ("none", mix.RECIPE)}
    out = []
    for label, family, setting in picks:
        rows = fams[family][setting]["test"]
        key = f"{label}: {setting}"
        scores[(key, decoding.FRACTION)] = {int(r["seed"]): float(r["f1"]) for r in rows}
        out.append((key, rows, _ci(scores, key, "none", decoding.FRACTION),
                    _ci(scores, key, mix.RECIPE, decoding.FRACTION)))
    for key in (mix.RECIPE, "none"):
        label = f"{key} (the recipe of record)" if key == mix.RECIPE else "none (argmax)"
        out.append((label, by_setting[key], "-", "-"))
    table = _table(["setting (test)", "F1", "precision", "recall inside", "recall outside", "− none [95% CI], ahead",
                    f"− {mix.RECIPE} [95% CI], ahead"],
                   [[k, _mean_sd([float(r["f1"]) for r in rows]), f"{_mean(rows, 'precision'):.2f}",
                     f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}", a, b]
                    for k, rows, a, b in out])
    front = _pareto(all_families(res))
    kinds = Counter(n for n, _ in front)
    return table + (f"\nThe devel frontier (no other setting has both a higher devel F1 and a higher devel recall "
                    f"outside): {len(front)} settings; "
                    + "; ".join(f"{n}: {c}" for n, c in kinds.most_common()) + ".\n")

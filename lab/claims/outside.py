"""Claims blocks of issue 30's seventh and eighth rounds, scored like the recipe of record
(``benchmarks/decode_check.py`` rows on kept models, devel and test).  Round 7: two training
changes against blindness, ``features.outside_weight`` (the loss weight of the entity words the
dictionary does not match; its devel sweep's features arms from the sweep's recall file, its
self-training students alone and mixed with the kept student without features) and the student
without features taught by the features teacher (alone and mixed with the kept features
student).  Round 8: recall outside the dictionary split into the entities a match overlaps with
other bounds and those no match touches (``outside-split``), and ``features.edge_noise``
(``edge-noise-devel``, ``round8-frontier``, ``round8-test``).  Round 9: the precision of the
entities a model predicts beyond the dictionary and the precision the target needs there
(``outside-precision``), mixes, the join and ensembles (``round9-frontier``, ``round9-test``,
``join-screening``), and the dictionary read as a document (``document-frontier``,
``document-test``, ``document-strict``, ``document-weak``).  Registered in
:data:`lab.claims.BLOCKS`.
"""
from __future__ import annotations

from collections import Counter

from . import decoding
from . import mix
from .tables import Results, Scores, _by_arm, _ci, _mean_sd, _table, gain_markdown

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


EDGE = "bc5cdr-knowledge-edge-noise.csv"  # decode_check rows of round 8's students, alone and mixed
#: round 8's families: the outside weight 3 or 6 with the edge noise 0.3, and 3 with 0.6
ROUND8_FAMILIES = [("st-ow3-e3: outside weight 3 + edge noise 0.3 (± st-nofeat)", EDGE,
                    ("st-ow3-e3", "st-ow3-e3+st-nofeat")),
                   ("st-ow3-e6: outside weight 3 + edge noise 0.6 (± st-nofeat)", EDGE,
                    ("st-ow3-e6", "st-ow3-e6+st-nofeat")),
                   ("st-ow6-e3: outside weight 6 + edge noise 0.3 (± st-nofeat)", EDGE,
                    ("st-ow6-e3", "st-ow6-e3+st-nofeat"))]


def _families(res: Results, new: list = NEW_FAMILIES) -> dict[str, mix.Family]:
    """2c's family (the recipe of record's students and their mixes) and each of ``new``
    (default :data:`NEW_FAMILIES`) whose file is there."""
    out = dict(mix.families(res)[:1])
    for name, file, arms in new:
        if not (res.folder / file).exists():
            continue
        fam: mix.Family = {}
        for r in res.csv(file):
            if r["arm"] in arms:
                mix.add(fam, decoding.setting(r), r)
        if fam:  # a family whose rows are not in the file yet is left out
            out[name] = fam
    return out


def all_families(res: Results, new: list | None = None) -> dict[str, mix.Family]:
    """Every family of 2c-2g: the post-hoc ones (:func:`mix.families`) and the trained ones
    of ``new`` (default: rounds 7, 8 and 9, the document pass too)."""
    return {**dict(mix.families(res)), **_families(res, ALL_ROUNDS if new is None else new)}


def _choices(fams: dict[str, mix.Family], floor: float) -> tuple[tuple[str, str], tuple[str, str] | None]:
    """(family, setting) of the best devel F1 over ``fams``, and the same among the settings
    reaching ``floor`` (no knowledge's devel recall outside; None when none does)."""
    best = max(((n, k) for n, f in fams.items() for k in f if "eval" in f[k]),
               key=lambda nk: _mean(fams[nk[0]][nk[1]]["eval"], "f1"))
    reach = [(n, k) for n, k in ((n, mix.unblind_choice(f, floor)) for n, f in fams.items()) if k is not None]
    unblind = max(reach, key=lambda nk: _mean(fams[nk[0]][nk[1]]["eval"], "f1")) if reach else None
    return best, unblind


def round7_frontier(res: Results, new: list = NEW_FAMILIES) -> str:
    """The frontier table of 2e for the recipe of record's family and each of ``new``'s,
    then the two devel choices (best F1; best F1 at no knowledge's recall outside)."""
    fams, floor = _families(res, new), mix.none_recall_outside(res, "eval")
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


def round7_test(res: Results, new: list = NEW_FAMILIES, show: list | None = None) -> str:
    """Test scores, recall inside and outside the dictionary of the unblind choice and of each
    of ``show``'s devel optimum (default: ``new``'s), paired against no knowledge (argmax, the
    issue's reference) and the recipe of record; then how many of the devel frontier's settings
    are each kind's."""
    fams = _families(res, new)
    _, unblind = _choices(fams, mix.none_recall_outside(res, "eval"))
    picks = [] if unblind is None else [(f"unblind choice ({unblind[0].split(':')[0]})", *unblind)]
    shown = {n for n, _, _ in (new if show is None else show)}
    for name, fam in fams.items():
        if name in shown:
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
    front = _pareto(all_families(res, new))
    kinds = Counter(n for n, _ in front)
    return table + (f"\nThe devel frontier (no other setting has both a higher devel F1 and a higher devel recall "
                    f"outside): {len(front)} settings; "
                    + "; ".join(f"{n}: {c}" for n, c in kinds.most_common()) + ".\n")


SPLIT = "bc5cdr-knowledge-outside-split.csv"  # decode_check rows with the outside split (round 8)
#: (label, the rows' arm, their setting) in the table's order
SPLIT_ROWS = [("none (argmax)", "none", "none"), ("features (argmax)", "features", "features"),
              ("st-nofeat (Viterbi)", "st-nofeat", "st-nofeat-v"),
              ("st-branch (Viterbi, O bias 1)", "st-branch", "st-branch-v-o1"),
              ("the recipe of record: st-branch + st-nofeat 0.6 / 0.4 (mix6-v-o1)", "st-branch+st-nofeat", "mix6-v-o1"),
              ("st-ow6 (Viterbi, O bias 1)", "st-ow6", "st-ow6-v-o1"),
              ("st-ow6 + st-nofeat 0.6 / 0.4, O bias 0 (mix6-v)", "st-ow6+st-nofeat", "mix6-v")]
_SPLIT_KEYS = ("f1", "precision", "recall_dict", "recall_other", "recall_boundary", "recall_unseen")


def _split_cells(rows: list[dict]) -> list[str]:
    """The means of :data:`_SPLIT_KEYS` over ``rows`` (F1 and precision to 2 decimals, recalls to 1)."""
    return [f"{_mean(rows, k):.2f}" if k in ("f1", "precision") else f"{_mean(rows, k):.1f}" for k in _SPLIT_KEYS]


def _rows_by(res: Results, file: str, key, split: str = "test") -> dict[str, list[dict]]:
    """``file``'s rows of ``split`` grouped by ``key(row)``."""
    out: dict[str, list[dict]] = {}
    for r in res.csv(file):
        if r["split"] == split:
            out.setdefault(key(r), []).append(r)
    return out


def outside_split(res: Results) -> str:
    """Recall outside the dictionary cut in two (a match with other bounds or type / no match at
    all) for the round's key settings on test, 5 seeds, and the share of the recipe's blindness
    each part holds."""
    rows, lines = _rows_by(res, SPLIT, lambda r: f"{r['arm']}|{decoding.setting(r)}"), []
    head = ["setting (test, 5 seeds)", "F1", "precision", "recall inside", "recall outside",
            "outside: other bounds", "outside: no match"]
    for label, arm, name in SPLIT_ROWS:
        runs = rows.get(f"{arm}|{name}")
        if runs:
            lines.append([label] + _split_cells(runs))
    any_row = next(iter(rows.values()))[0]
    n = {k: int(any_row[f"gold_{k}"]) for k in ("dict", "boundary", "unseen")}
    none, recipe = rows["none|none"], rows["st-branch+st-nofeat|mix6-v-o1"]
    other = n["boundary"] + n["unseen"]
    part = {k: (_mean(none, f"recall_{k}") - _mean(recipe, f"recall_{k}")) * n[k] / other
            for k in ("boundary", "unseen")}
    gap = _mean(none, "recall_other") - _mean(recipe, "recall_other")
    return (_table(head, lines) + f"\nGold entities of the test sample: {n['dict']} the dictionary tags exactly, "
            f"{n['boundary']} a match overlaps with other bounds or another type, {n['unseen']} no match touches. "
            f"Of the recipe's {gap:.1f} points of recall outside the dictionary below no knowledge, "
            f"{part['boundary']:.1f} come from the entities with other bounds and {part['unseen']:.1f} from those "
            "no match touches.\n")


def round8_frontier(res: Results) -> str:
    """:func:`round7_frontier` with round 8's family beside round 7's."""
    return round7_frontier(res, NEW_FAMILIES + ROUND8_FAMILIES)


def round8_test(res: Results) -> str:
    """:func:`round7_test` with round 8's family beside round 7's."""
    return round7_test(res, NEW_FAMILIES + ROUND8_FAMILIES, ROUND8_FAMILIES)


EDGE_DEVEL = "bc5cdr-knowledge-edge-noise-devel.csv"  # round 8's screening, seeds 0-1, devel (decode_check rows)
#: the students of the screening in the table's order (each alone or mixed with st-nofeat)
EDGE_STUDENTS = ["st-branch", "st-ow3", "st-ow3-e3", "st-ow3-e6", "st-ow6", "st-ow6-e3", "st-ow6-e6"]


def edge_noise_devel(res: Results) -> str:
    """Round 8's screening on devel, seeds 0-1: token features alone with and without the edge
    noise (Viterbi, O bias 1), then each self-training student mixed with st-nofeat like the
    recipe of record (mix6-v-o1) and its best setting on the grid of 2c whose recall outside
    reaches no knowledge's (5 seeds' devel floor)."""
    floor = mix.none_recall_outside(res, "eval")
    groups: dict[str, dict[str, list[dict]]] = {}
    for r in res.csv(EDGE_DEVEL):
        student = r["arm"].split("+")[0]
        groups.setdefault(student, {}).setdefault(decoding.setting(r).replace(student, "alone"), []).append(r)
    head = ["model", "setting", "seeds", "F1", "precision", "recall inside", "recall outside",
            "outside: other bounds", "outside: no match"]

    def line(model: str, name: str, rows: list[dict]) -> list[str]:
        return [model, name, str(len(rows))] + _split_cells(rows)
    lines = [line(a, "alone-v-o1", groups[a]["alone-v-o1"]) for a in sorted(groups) if a.startswith("features")]
    for student in EDGE_STUDENTS:
        fam = groups.get(student)
        if not fam:
            continue
        reach = {k: v for k, v in fam.items() if _mean(v, "recall_other") >= floor}
        best = max(reach, key=lambda k: _mean(reach[k], "f1")) if reach else None
        note = f" (also the best at outside ≥ {floor:.1f})" if best == mix.RECIPE else ""
        lines.append(line(student, mix.RECIPE + note, fam[mix.RECIPE]))
        if best is None:
            lines.append([student, f"no setting reaches outside {floor:.1f}"] + ["-"] * 7)
        elif best != mix.RECIPE:
            lines.append(line(student, f"{best} (best at outside ≥ {floor:.1f})", reach[best]))
    return _table(head, lines)


MIX3 = "bc5cdr-knowledge-mix3.csv"  # decode_check rows of the three-model mixes (round 9)
FRAGMENTS = "bc5cdr-knowledge-fragments.csv"  # the same and st-ow3-e6 (± st-nofeat), decode_check --join fragments
ENSEMBLES = "bc5cdr-knowledge-ensembles.csv"  # five and eight kept students per seed, with and without the join
#: round 9's families: the recipe's features student, the unblind choice's student and st-nofeat mixed;
#: then the same mixes and st-ow3-e6's with the dictionary joining the entities a model split
ROUND9_FAMILIES = [("mix3: st-branch + st-ow3-e6 + st-nofeat", MIX3, ("st-branch+st-ow3-e6+st-nofeat",)),
                   ("mix3 + fragments joined by the dictionary", FRAGMENTS, ("st-branch+st-ow3-e6+st-nofeat",)),
                   ("st-ow3-e6 (± st-nofeat) + fragments joined by the dictionary", FRAGMENTS,
                    ("st-ow3-e6", "st-ow3-e6+st-nofeat")),
                   ("five students: st-ow3-e6, st-ow3-e3, st-ow6-e3, st-nofeat, st-nofeat-ft (± join)", ENSEMBLES,
                    ("st-ow3-e6+st-ow3-e3+st-ow6-e3+st-nofeat+st-nofeat-ft",)),
                   ("eight students: st-branch, the five, st-ow3, st-ow6 (± join)", ENSEMBLES,
                    ("st-branch+st-ow3-e6+st-ow3-e3+st-ow6-e3+st-ow3+st-ow6+st-nofeat+st-nofeat-ft",))]


def round9_frontier(res: Results) -> str:
    """:func:`round7_frontier` with round 9's family beside those of rounds 7 and 8."""
    return round7_frontier(res, NEW_FAMILIES + ROUND8_FAMILIES + ROUND9_FAMILIES)


def round9_test(res: Results) -> str:
    """:func:`round7_test` with round 9's family beside those of rounds 7 and 8."""
    return round7_test(res, NEW_FAMILIES + ROUND8_FAMILIES + ROUND9_FAMILIES, ROUND9_FAMILIES)


PRECISION = "bc5cdr-knowledge-outside-precision.csv"  # decode_check rows with the predictions' split (round 9)
#: (label, the rows' arm, their setting) in the table's order
PRECISION_ROWS = [("none (argmax)", "none", "none"), ("features (argmax)", "features", "features"),
                  ("st-nofeat (Viterbi)", "st-nofeat", "st-nofeat-v"),
                  ("the recipe of record (mix6-v-o1)", "st-branch+st-nofeat", "mix6-v-o1"),
                  ("the unblind choice of 2g: st-ow3-e6 + st-nofeat 0.8 / 0.2 (mix8-v)", "st-ow3-e6+st-nofeat", "mix8-v"),
                  ("2h's two-model setting at no knowledge's recall outside: st-ow3-e6 + st-nofeat 0.6 / 0.4, fragments joined (mix6-v-f)",
                   "st-ow3-e6+st-nofeat|fragments", "mix6-v-f"),
                  ("2h's unblind choice: five students averaged, fragments joined (avg5-v-f)",
                   "st-ow3-e6+st-ow3-e3+st-ow6-e3+st-nofeat+st-nofeat-ft|ensembles", "avg5-v-f")]


def needed_precision(row: dict, recall_outside: float, f1: float = 80.0) -> float:
    """The precision x100 that a model's entities beyond the dictionary need so that, with ``row``'s
    entities that are dictionary entities kept as they are, recall outside reaches ``recall_outside``
    and F1 reaches ``f1`` (F1 = 2 TP / (predicted + gold); a gold entity the dictionary tags exactly
    is found only by a predicted dictionary entity, so the two parts add up)."""
    gold_in = int(row["gold_dict"])
    gold_out = int(row["gold_boundary"]) + int(row["gold_unseen"])
    gold = gold_in + gold_out
    right_in = float(row["recall_dict"]) / 100 * gold_in
    predicted = float(row["recall"]) / 100 * gold / (float(row["precision"]) / 100)
    pred_in = predicted - int(row["pred_other"])
    right_out = recall_outside / 100 * gold_out
    allowed = 2 * (right_in + right_out) / (f1 / 100) - gold - pred_in  # predictions beyond it F1 can pay for
    return 100.0 * right_out / allowed


def outside_precision(res: Results) -> str:
    """Per key setting (test, 5 seeds): recall and precision beyond the dictionary, and the
    precision the target needs there, from the recipe's own entities inside it."""
    rows: dict[str, list[dict]] = {}
    for file, tag in ((PRECISION, ""), (FRAGMENTS, "|fragments"), (ENSEMBLES, "|ensembles")):
        if (res.folder / file).exists():
            rows.update(_rows_by(res, file, lambda r, t=tag: f"{r['arm']}{t}|{decoding.setting(r)}"))
    head = ["setting (test, 5 seeds)", "F1", "precision", "recall inside", "recall outside",
            "its entities beyond the dictionary", "precision of those"]
    lines = [[label, f"{_mean(rs, 'f1'):.2f}", f"{_mean(rs, 'precision'):.2f}", f"{_mean(rs, 'recall_dict'):.1f}",
              f"{_mean(rs, 'recall_other'):.1f}", f"{_mean(rs, 'pred_other'):.0f}", f"{_mean(rs, 'precision_other'):.1f}"]
             for label, arm, name in PRECISION_ROWS if (rs := rows.get(f"{arm}|{name}"))]
    none, recipe = rows["none|none"], rows["st-branch+st-nofeat|mix6-v-o1"]
    floor = _mean(none, "recall_other")
    need = sorted(needed_precision(r, floor) for r in recipe)
    return (_table(head, lines) + f"\nAn entity predicted beyond the dictionary raises F1 only when such finds are "
            f"right more often than F1 / 2. Keeping the recipe's entities that are dictionary entities as they are "
            f"(recall inside {_mean(recipe, 'recall_dict'):.1f}), recall outside at no knowledge's {floor:.1f} with "
            f"F1 80 needs its entities beyond the dictionary to be right {need[0]:.1f}-{need[-1]:.1f}% of the time "
            f"(per seed); no knowledge's are right {_mean(none, 'precision_other'):.1f}%.\n")


JOIN_SCREENING = "bc5cdr-knowledge-join-screening.csv"  # decode_check --join rows, devel (round 9)
JOIN_ORDER = ("none", "fragments", "pieces", "fragments+type")


def join_screening(res: Results) -> str:
    """The join variants screened on devel (5 seeds): per setting, F1 / recall outside with no
    join, with the fragments joined, with single pieces joined too, and with the dictionary's type."""
    cells: dict[str, dict[str, list[dict]]] = {}
    for r in res.csv(JOIN_SCREENING):
        cells.setdefault(f"{r['arm']}: {decoding.setting(r)}", {}).setdefault(r["join"], []).append(r)
    head = ["setting (devel, 5 seeds): F1 / recall outside"] + [f"join: {j}" for j in JOIN_ORDER]
    lines = [[name] + [f"{_mean(by[j], 'f1'):.2f} / {_mean(by[j], 'recall_other'):.1f}" if j in by else "-"
                       for j in JOIN_ORDER] for name, by in cells.items()]
    return _table(head, lines)


def _recipe_with_document(fams: dict[str, mix.Family]) -> list[dict] | None:
    """The test rows of the recipe of record's setting with the document pass (2i), if measured."""
    return fams.get(ROUND9C_FAMILIES[0][0], {}).get(f"{mix.RECIPE}-d20", {}).get("test")


def blind_sentence(res: Results) -> str:
    """The README's sentence on blindness: the recipe of record's recall outside the dictionary
    against no knowledge's; the same recipe with the document pass (2i); and both against the
    document-level dictionary."""
    by_setting = decoding._runs(res, "test")
    recipe, none = by_setting[mix.RECIPE], by_setting["none"]
    text = (f"**What it costs:** knowledge makes the model lean on the dictionary. On BC5CDR at 10% the recipe "
            f"of record ({_mean(recipe, 'f1'):.2f}) finds {_mean(recipe, 'recall_other'):.1f}% of the test entities "
            f"the dictionary does not tag exactly, no knowledge {_mean(none, 'recall_other'):.1f}%")
    doc = _recipe_with_document(_families(res, ROUND9C_FAMILIES))
    if not doc or not (res.folder / DOCUMENT_REF).exists():
        return text + ".\n"
    ref_rows = _rows_by(res, DOCUMENT_REF, lambda r: r["arm"])
    scores: Scores = {(k, decoding.FRACTION): {int(r["seed"]): float(r["f1"]) for r in rows}
                      for k, rows in ((mix.RECIPE, recipe), ("doc", doc))}
    return text + (f". Read as whole documents, so that abbreviations carry across sentences, the dictionary "
                   f"lifts the same recipe after the fact to {_mean(doc, 'f1'):.2f} "
                   f"({_ci(scores, 'doc', mix.RECIPE, decoding.FRACTION, ahead=False)}) and "
                   f"{_mean(doc, 'recall_other'):.1f}%; counted against that document-level dictionary, the "
                   f"models still find fewer of the entities beyond it than no knowledge does "
                   f"({_mean(doc, 'recall_other_doc'):.1f}% against {_mean(ref_rows['none'], 'recall_other_doc'):.1f}%; "
                   "[issue 30, 2i](docs/archive/issue-30.md#2i-the-dictionary-read-as-a-document-abbreviations-"
                   "across-sentences-2026-12-05-ninth-round)).\n")


DOCUMENT = "bc5cdr-knowledge-document.csv"  # decode_check --document 20 rows of three families (round 9c)
DOCUMENT_REF = "bc5cdr-knowledge-document-reference.csv"  # none and the recipe, --document-columns-only
DICT_ALONE = "bc5cdr-dictionary-alone-test.json"  # dictionary_baseline.py --split test --sample 2000 --json
DICT_ALONE_DOC = "bc5cdr-dictionary-alone-document-test.json"  # the same with --document-window 20
#: round 9c's families: the document pass added to 2c's grid, to mix3 + join and to st-ow3-e6 (± st-nofeat) + join
ROUND9C_FAMILIES = [("2c's students + the document pass", DOCUMENT, ("st-branch", "st-branch+st-nofeat", "st-nofeat")),
                    ("mix3 + join + the document pass", DOCUMENT, ("st-branch+st-ow3-e6+st-nofeat",)),
                    ("st-ow3-e6 (± st-nofeat) + join + the document pass", DOCUMENT,
                     ("st-ow3-e6", "st-ow3-e6+st-nofeat"))]
ALL_ROUNDS = NEW_FAMILIES + ROUND8_FAMILIES + ROUND9_FAMILIES + ROUND9C_FAMILIES


def document_frontier(res: Results) -> str:
    """:func:`round7_frontier` with the document pass's families beside every other."""
    return round7_frontier(res, ALL_ROUNDS)


def document_test(res: Results) -> str:
    """:func:`round7_test` for the document pass's families."""
    return round7_test(res, ALL_ROUNDS, ROUND9C_FAMILIES)


def _strict_choice(res: Results, fams: dict[str, mix.Family]) -> tuple[str, str, float] | None:
    """(family, setting, floor): the blindness rule under the stricter definition, over the document
    pass's families (the only ones with columns against the document-level dictionary): the best
    devel F1 among the settings whose devel recall outside it reaches no knowledge's."""
    floor = _mean(_rows_by(res, DOCUMENT_REF, lambda r: r["arm"], "eval")["none"], "recall_other_doc")
    names = {name for name, _, _ in ROUND9C_FAMILIES}
    reach = [(n, k) for n, f in fams.items() if n in names for k, v in f.items()
             if "eval" in v and _mean(v["eval"], "recall_other_doc") >= floor]
    if not reach:
        return None
    n, k = max(reach, key=lambda nk: _mean(fams[nk[0]][nk[1]]["eval"], "f1"))
    return n, k, floor


def document_strict(res: Results) -> str:
    """Test, 5 seeds: no knowledge, the recipe of record with and without the document pass, and
    the rules' choice, with recall outside the dictionary as the issue defines it (the sentence-level
    matches) and under a stricter definition (the document-level matches), and whether the target
    holds under each."""
    fams = _families(res, ALL_ROUNDS)
    best, unblind = _choices(fams, mix.none_recall_outside(res, "eval"))
    ref = _rows_by(res, DOCUMENT_REF, lambda r: r["arm"])
    none, recipe = ref["none"], ref["st-branch+st-nofeat"]
    picks = [("none (argmax)", none), (f"{mix.RECIPE} (the recipe of record)", recipe)]
    with_doc = _recipe_with_document(fams)
    if with_doc:
        picks.append((f"{mix.RECIPE}-d20 (the recipe of record + the document pass)", with_doc))
    if best == unblind:
        picks.append((f"{best[1]} (both rules' choice)", fams[best[0]][best[1]]["test"]))
    else:
        for label, choice in (("best devel F1", best), ("best devel F1 at none's recall outside", unblind)):
            if choice is not None:
                picks.append((f"{choice[1]} (the rule's choice: {label})", fams[choice[0]][choice[1]]["test"]))
    alone = {k: 100 * res.json(f)["scores"]["f1"] for k, f in (("sentence", DICT_ALONE), ("document", DICT_ALONE_DOC))}
    strict = _strict_choice(res, fams)
    if strict is not None:
        picks.append((f"{strict[0]}: {strict[1]} (best devel F1 at none's devel recall outside the document-level "
                      f"dictionary, {strict[2]:.1f})", fams[strict[0]][strict[1]]["test"]))
    head = ["setting (test, 5 seeds)", "F1", f"− dictionary alone ({alone['sentence']:.2f} / {alone['document']:.2f})",
            "recall inside", "recall outside (sentence-level matches)", "recall outside (document-level matches)",
            "precision of its finds beyond the dictionary"]
    lines = [[label, _mean_sd([float(r["f1"]) for r in rows]),
              f"{_mean(rows, 'f1') - alone['sentence']:+.2f} / {_mean(rows, 'f1') - alone['document']:+.2f}",
              f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}",
              f"{_mean(rows, 'recall_other_doc'):.1f}", f"{_mean(rows, 'precision_other'):.1f}"] for label, rows in picks]
    gold = {k: int(none[0][k]) for k in ("gold_dict", "gold_boundary", "gold_unseen", "gold_other_doc")}
    out_sent = gold["gold_boundary"] + gold["gold_unseen"]
    text = _table(head, lines) + (
        f"\nGold entities of the test sample outside the dictionary: {out_sent} by the sentence-level matches "
        f"(the issue's definition, every report's), {gold['gold_other_doc']} by the document-level ones.")
    if unblind is not None:
        rows = fams[unblind[0]][unblind[1]]["test"]
        f1 = _mean(rows, "f1")
        for name, key, which in (("the issue's", "recall_other", "sentence"),
                                 ("the stricter", "recall_other_doc", "document")):
            ok = f1 >= 80 and f1 - alone[which] >= 7 and _mean(rows, key) >= _mean(none, key) \
                and _mean(rows, "recall_dict") >= 90
            text += (f" Under {name} definition the rules' choice {'meets' if ok else 'misses'} the targets "
                     f"(F1 {f1:.2f}, {f1 - alone[which]:+.2f} over that dictionary alone, recall outside "
                     f"{_mean(rows, key):.1f} against no knowledge's {_mean(none, key):.1f}).")
    return text + "\n"


WEAK_DOCUMENT = "bc5cdr-weak-document.csv"  # 3a's kept models (weak regime), the recipe's mix ± the document pass


def document_weak(res: Results) -> str:
    """The document pass in the weak-dictionary regime (test, 5 seeds): no knowledge, the recipe's
    mix as in 3a, and the same with the pass, paired by seed; recall outside by both definitions."""
    runs = _rows_by(res, WEAK_DOCUMENT, lambda r: "none (argmax)" if r["arm"] == "none" else (
        "the recipe's mix + the document pass" if r["document"] == "20" else "the recipe's mix (3a)"))
    scores: Scores = {(k, decoding.FRACTION): {int(r["seed"]): float(r["f1"]) for r in rows} for k, rows in runs.items()}
    base, mixed = "none (argmax)", "the recipe's mix (3a)"
    head = ["setting (test, 5 seeds)", "F1", "− none [95% CI], ahead", "− the mix [95% CI], ahead", "recall inside",
            "recall outside (sentence-level matches)", "recall outside (document-level matches)"]
    lines = [[k, _mean_sd([float(r["f1"]) for r in rows]),
              "-" if k == base else _ci(scores, k, base, decoding.FRACTION),
              _ci(scores, k, mixed, decoding.FRACTION) if k not in (base, mixed) else "-",
              f"{_mean(rows, 'recall_dict'):.1f}", f"{_mean(rows, 'recall_other'):.1f}",
              f"{_mean(rows, 'recall_other_doc'):.1f}"] for k, rows in runs.items()]
    return _table(head, lines)

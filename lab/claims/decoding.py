"""Claims blocks of issue 30's decoding round: Viterbi decoding, the O bias and the mix of the
features student with the student trained without token features, all scored on the same kept
models (``benchmarks/decode_check.py``, one row per model, split, mix weight, O bias and
decoding); registered in :data:`lab.claims.BLOCKS`.

A setting's short name: ``st-branch`` / ``st-nofeat`` (one model) or ``mix8`` (0.8 of
st-branch's log-probabilities and 0.2 of st-nofeat's; ``mix226`` for three models, 0.2 / 0.2 / 0.6
in the order of the row's ``weights``; ``avg5`` for five equal shares), then ``-v`` for Viterbi decoding and
``-o0.5`` for an O bias of 0.5, and ``-f`` when the dictionary joined the entities the model split
(``decode_check.py --join fragments``), ``-d20`` when the document pass added its entities
(``--document 20``).  Each family chooses the setting with the highest devel mean:
the recipe (st-branch, st-nofeat and their mixes), and none and token features (their own kept
models, retrained with the settings and seeds of the curve), so that every arm is compared
under the decoding its own devel choice gives it.
"""
from __future__ import annotations

import statistics as st
from typing import Any

from .knowledge import KNOW_BRANCH, KNOW_BRANCH_GAIN
from .tables import Results, Scores, _by_arm, _mean_sd, _table, deltas_markdown, gain_markdown
from priorkit.evaluation.dictionary_report import DICTIONARY_ROW

DECODE = "bc5cdr-knowledge-decode.csv"
FRACTION = 0.1
MODELS = ["st-branch", "mix8", "mix6", "st-nofeat", "none", "features"]
RECIPE, NONE, FEATURES = "recipe", "none", "features"
BIASES = [0.0, 0.5, 1.0]


def setting(row: dict[str, str]) -> str:
    """The short name of a row's setting (see the module doc)."""
    w = float(row["weight"])
    if row.get("weights"):  # a mix of three or more models
        ws = [float(x) for x in row["weights"].split("/")]
        if len(set(ws)) == 1:
            base = f"avg{len(ws)}"  # equal shares
        elif all(abs(x * 10 - round(x * 10)) < 1e-9 for x in ws):
            base = "mix" + "".join(str(round(x * 10)) for x in ws)  # in tenths: "mix226"
        else:
            base = "mix" + "-".join(str(round(x * 100)) for x in ws)  # in hundredths
    else:
        base = row["arm"] if w == 1.0 else f"mix{round(w * 10)}"
    parts = [base] + (["v"] if row["decode"] == "viterbi" else []) + (
        [f"o{float(row['o_bias']):g}"] if float(row["o_bias"]) else [])
    join = row.get("join")
    if join and join != "none":  # decode_check --join
        parts.append("f" if join == "fragments" else f"j{join}")
    document = row.get("document")
    if document and document != "columns":  # decode_check --document N: the document pass added
        parts.append(f"d{document}")
    return "-".join(parts)


def family(row: dict[str, str]) -> str:
    """``recipe`` for the self-training students and their mixes, else the arm (none, features)."""
    return RECIPE if row["arm"].startswith("st-") else row["arm"]


def _runs(res: Results, split: str, of: str | None = None) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in res.csv(DECODE):
        if r["split"] == split and (of is None or family(r) == of):
            out.setdefault(setting(r), []).append(r)
    return out


def _scores(res: Results, split: str, of: str | None = None) -> Scores:
    return {(name, FRACTION): {int(r["seed"]): float(r["f1"]) for r in rows}
            for name, rows in _runs(res, split, of).items()}


def chosen(res: Results, of: str = RECIPE) -> str | None:
    """The setting of family ``of`` with the highest devel (eval) mean F1 (the first on a tie;
    None when the file has no such rows)."""
    s = _scores(res, "eval", of)
    return max(s, key=lambda k: st.mean(s[k].values()))[0] if s else None


def decode_devel(res: Results) -> str:
    """Devel F1 (means over the seeds) of every model and decoding at each O bias, and recall
    outside the dictionary at O bias 0; each family's choice in bold."""
    runs = _runs(res, "eval")
    best = {chosen(res, of) for of in (RECIPE, NONE, FEATURES)}
    rows = []
    for model in MODELS:
        for v in ("", "-v"):
            cells = []
            for b in BIASES:
                name = model + v + (f"-o{b:g}" if b else "")
                f1 = f"{st.mean(float(r['f1']) for r in runs[name]):.2f}" if name in runs else "-"
                cells.append(f"**{f1}**" if name in best else f1)
            plain = runs.get(model + v, [])
            outside = f"{st.mean(float(r['recall_other']) for r in plain):.1f}" if plain else "-"
            seeds = str(len(plain)) if plain else "-"
            rows.append([model, "viterbi" if v else "argmax", *cells, outside, seeds])
    return _table(["model", "decoding", *(f"O bias {b:g}" for b in BIASES), "recall outside (O bias 0)", "seeds"],
                  rows)


def _test_settings(res: Results) -> list[str]:
    names = ["none", chosen(res, NONE), "features", chosen(res, FEATURES), "st-branch", "st-branch-v", chosen(res),
             "st-nofeat", "st-nofeat-v"]
    return [n for n in dict.fromkeys(names) if n is not None]


def decode_test_gain(res: Results) -> str:
    """On the test sample: F1, precision, recall inside and outside the dictionary of the
    references and the devel choice (means over the seeds)."""
    runs = _runs(res, "test")
    dictionary = [g for g in _by_arm(res.csv(KNOW_BRANCH_GAIN)) if g[0] == DICTIONARY_ROW]
    return gain_markdown([(name, runs[name]) for name in _test_settings(res) if name in runs] + dictionary)


def decode_test_scores(res: Results) -> str:
    """Test F1 mean (sd, seeds) of the same settings."""
    s = _scores(res, "test")
    return _table(["setting", "test F1"], [[n, _mean_sd(list(s[(n, FRACTION)].values()))]
                                          for n in _test_settings(res) if (n, FRACTION) in s])


def decode_test_deltas(res: Results) -> str:
    """Paired by seed on the test sample: the recipe's choice against st-branch as the pipeline
    scores it (argmax, the same models), against none and token features each decoded by its own
    devel choice, and against the random-spans control (the pipeline's runs, argmax)."""
    s = {k: v for k, v in res.scores(KNOW_BRANCH).items() if k[0] == "self-train-control" and k[1] == FRACTION}
    s.update(_scores(res, "test"))
    best, none, features = chosen(res), chosen(res, NONE), chosen(res, FEATURES)
    pairs = [(best, "st-branch"), ("st-branch-v", "st-branch"), (best, none), (best, features),
             (best, "self-train-control"), (none, "none"), (features, "features")]
    return deltas_markdown(s, list(dict.fromkeys(p for p in pairs if None not in p and p[0] != p[1])))


# the mix weight as a dial between precision and recall outside the dictionary: the grid widened
# after the first test look (weights 0.5-0.2, O bias 0, 1, 1.5), a file of its own so that the
# first grid's choice stays the one made before the test scores were read
DECODE_WIDE = "bc5cdr-knowledge-decode-wide.csv"


def _all_recipe_rows(res: Results) -> list[dict[str, Any]]:
    return [r for r in res.csv(DECODE) + res.csv(DECODE_WIDE) if family(r) == RECIPE]


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return st.mean(float(r[key]) for r in rows)


def not_blind(res: Results) -> str | None:
    """The recipe setting (both grids) with the highest devel F1 among those whose devel recall
    outside the dictionary is at least no knowledge's (none as the pipeline scores it)."""
    floor = _mean(_runs(res, "eval", NONE)["none"], "recall_other")
    dev: dict[str, list[dict[str, Any]]] = {}
    for r in _all_recipe_rows(res):
        if r["split"] == "eval":
            dev.setdefault(setting(r), []).append(r)
    ok = {k: v for k, v in dev.items() if _mean(v, "recall_other") >= floor}
    return max(ok, key=lambda k: _mean(ok[k], "f1")) if ok else None


def decode_dial(res: Results) -> str:
    """Viterbi, per st-branch share of the mix (1: st-branch alone, 0: st-nofeat alone) and O
    bias: devel F1 and recall outside, test F1 and recall outside (means over the seeds)."""
    groups: dict[tuple[float, float], dict[str, list[dict[str, Any]]]] = {}
    for r in _all_recipe_rows(res):
        if r["decode"] != "viterbi":
            continue
        w = float(r["weight"]) if r["arm"] != "st-nofeat" else 0.0
        groups.setdefault((w, float(r["o_bias"])), {}).setdefault(r["split"], []).append(r)
    rows = []
    for (w, b), by in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        if "eval" not in by or "test" not in by:
            continue
        rows.append([f"{w:g}", f"{b:g}", f"{_mean(by['eval'], 'f1'):.2f}", f"{_mean(by['eval'], 'recall_other'):.1f}",
                     f"{_mean(by['test'], 'f1'):.2f}", f"{_mean(by['test'], 'recall_other'):.1f}"])
    none = _runs(res, "eval", NONE)["none"], _runs(res, "test", NONE)["none"]
    rows.append(["none (argmax)", "0", f"{_mean(none[0], 'f1'):.2f}", f"{_mean(none[0], 'recall_other'):.1f}",
                 f"{_mean(none[1], 'f1'):.2f}", f"{_mean(none[1], 'recall_other'):.1f}"])
    return _table(["st-branch share", "O bias", "devel F1", "devel recall outside", "test F1", "test recall outside"],
                  rows)


def decode_not_blind(res: Results) -> str:
    """The devel choice under the constraint 'recall outside at least no knowledge's', on test,
    paired against none and features each decoded by its own devel choice."""
    name = not_blind(res)
    if name is None:
        return "No setting reaches no knowledge's recall outside the dictionary on devel.\n"
    test = [r for r in _all_recipe_rows(res) if r["split"] == "test" and setting(r) == name]
    s = _scores(res, "test")
    s[(name, FRACTION)] = {int(r["seed"]): float(r["f1"]) for r in test}
    none, features = chosen(res, NONE), chosen(res, FEATURES)
    table = deltas_markdown(s, [(name, "none"), (name, none), (name, features), (name, "features")])
    return (f"Chosen: `{name}`; test F1 {_mean(test, 'f1'):.2f}, precision {_mean(test, 'precision'):.1f}, "
            f"recall inside / outside {_mean(test, 'recall_dict'):.1f} / {_mean(test, 'recall_other'):.1f}.\n\n" + table)

"""Claims blocks of issue 30's decoding round: Viterbi decoding, the O bias and the mix of the
features student with the student trained without token features, all scored on the same kept
models (``benchmarks/decode_check.py``, one row per model, split, mix weight, O bias and
decoding); registered in :data:`priorkit.pipeline.claims.BLOCKS`.

A setting's short name: ``st-branch`` / ``st-nofeat`` (one model) or ``mix8`` (0.8 of
st-branch's log-probabilities and 0.2 of st-nofeat's), then ``-v`` for Viterbi decoding and
``-o0.5`` for an O bias of 0.5.  Each family chooses the setting with the highest devel mean:
the recipe (st-branch, st-nofeat and their mixes), and none and token features (their own kept
models, retrained with the settings and seeds of the curve), so that every arm is compared
under the decoding its own devel choice gives it.
"""
from __future__ import annotations

import statistics as st
from typing import Any

from .claims_knowledge import KNOW_BRANCH, KNOW_BRANCH_GAIN
from .claims_tables import Results, Scores, _by_arm, _mean_sd, _table, deltas_markdown, gain_markdown
from .dictionary_report import DICTIONARY_ROW

DECODE = "bc5cdr-knowledge-decode.csv"
FRACTION = 0.1
MODELS = ["st-branch", "mix8", "mix6", "st-nofeat", "none", "features"]
RECIPE, NONE, FEATURES = "recipe", "none", "features"
BIASES = [0.0, 0.5, 1.0]


def setting(row: dict[str, str]) -> str:
    """The short name of a row's setting (see the module doc)."""
    w = float(row["weight"])
    base = row["arm"] if w == 1.0 else f"mix{round(w * 10)}"
    parts = [base] + (["v"] if row["decode"] == "viterbi" else []) + (
        [f"o{float(row['o_bias']):g}"] if float(row["o_bias"]) else [])
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

"""Claims blocks of issue 30's decoding round: Viterbi decoding, the O bias and the mix of the
features student with the student trained without token features, all scored on the same kept
models (``benchmarks/decode_check.py``, one row per model, split, mix weight, O bias and
decoding); registered in :data:`priorkit.pipeline.claims.BLOCKS`.

A setting's short name: ``st-branch`` / ``st-nofeat`` (one model) or ``mix8`` (0.8 of
st-branch's log-probabilities and 0.2 of st-nofeat's), then ``-v`` for Viterbi decoding and
``-o0.5`` for an O bias of 0.5.  The choice is the setting with the highest devel mean.
"""
from __future__ import annotations

import statistics as st
from typing import Any

from .claims_knowledge import KNOW_BRANCH
from .claims_tables import Results, Scores, _mean_sd, _table, deltas_markdown, gain_markdown

DECODE = "bc5cdr-knowledge-decode.csv"
FRACTION = 0.1
MODELS = ["st-branch", "mix8", "mix6", "st-nofeat"]
BIASES = [0.0, 0.5, 1.0]


def setting(row: dict[str, str]) -> str:
    """The short name of a row's setting (see the module doc)."""
    w = float(row["weight"])
    base = row["arm"] if w == 1.0 else f"mix{round(w * 10)}"
    parts = [base] + (["v"] if row["decode"] == "viterbi" else []) + (
        [f"o{float(row['o_bias']):g}"] if float(row["o_bias"]) else [])
    return "-".join(parts)


def _runs(res: Results, split: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in res.csv(DECODE):
        if r["split"] == split:
            out.setdefault(setting(r), []).append(r)
    return out


def _scores(res: Results, split: str) -> Scores:
    return {(name, FRACTION): {int(r["seed"]): float(r["f1"]) for r in rows}
            for name, rows in _runs(res, split).items()}


def chosen(res: Results) -> str:
    """The setting with the highest devel (eval) mean F1, the first in the file on a tie."""
    s = _scores(res, "eval")
    return max(s, key=lambda k: st.mean(s[k].values()))[0]


def decode_devel(res: Results) -> str:
    """Devel F1 (means over the seeds) of every model and decoding at each O bias, and recall
    outside the dictionary at O bias 0; the chosen setting in bold."""
    runs, best = _runs(res, "eval"), chosen(res)
    rows = []
    for model in MODELS:
        for v in ("", "-v"):
            cells = []
            for b in BIASES:
                name = model + v + (f"-o{b:g}" if b else "")
                f1 = f"{st.mean(float(r['f1']) for r in runs[name]):.2f}" if name in runs else "-"
                cells.append(f"**{f1}**" if name == best else f1)
            plain = runs.get(model + v, [])
            outside = f"{st.mean(float(r['recall_other']) for r in plain):.1f}" if plain else "-"
            seeds = str(len(plain)) if plain else "-"
            rows.append([model, "viterbi" if v else "argmax", *cells, outside, seeds])
    return _table(["model", "decoding", *(f"O bias {b:g}" for b in BIASES), "recall outside (O bias 0)", "seeds"],
                  rows)


def _test_settings(res: Results) -> list[str]:
    best = chosen(res)
    names = ["st-branch", "st-branch-v", best, "st-nofeat", "st-nofeat-v"]
    return list(dict.fromkeys(names))


def decode_test_gain(res: Results) -> str:
    """On the test sample: F1, precision, recall inside and outside the dictionary of the
    references and the devel choice (means over the seeds)."""
    runs = _runs(res, "test")
    return gain_markdown([(name, runs[name]) for name in _test_settings(res) if name in runs])


def decode_test_scores(res: Results) -> str:
    """Test F1 mean (sd, seeds) of the same settings."""
    s = _scores(res, "test")
    return _table(["setting", "test F1"], [[n, _mean_sd(list(s[(n, FRACTION)].values()))]
                                          for n in _test_settings(res) if (n, FRACTION) in s])


def decode_test_deltas(res: Results) -> str:
    """Paired by seed on the test sample: the choice against st-branch as scored (argmax, the
    same models) and against no knowledge, token features and the random-spans control (the
    pipeline's runs of the same seeds)."""
    s = dict(res.scores(KNOW_BRANCH))
    pipeline_runs = {k: v for k, v in s.items()
                     if k[0] in ("none", "features", "self-train-control") and k[1] == FRACTION}
    s = {**pipeline_runs, **_scores(res, "test")}
    best = chosen(res)
    pairs = [(best, "st-branch"), ("st-branch-v", "st-branch"), (best, "none"), (best, "features"),
             (best, "self-train-control")]
    return deltas_markdown(s, list(dict.fromkeys(pairs)))

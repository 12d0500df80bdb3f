"""Claims generated from files: the measured tables of README.md, docs/benchmarks.md
and docs/archive/.

Every block between ``<!-- claims:begin NAME -->`` and ``<!-- claims:end -->`` is rewritten
from the result files under ``docs/results/`` (a sweep's ``results.csv`` or a runs CSV:
one row per run with its arm, fraction, seed and scores) by the renderer :data:`BLOCKS`
names; ``benchmarks/claims.py`` rewrites them and ``tests/test_claims.py`` fails when a
document differs from what the files give.  The paired comparisons are those of the sweep
reports (:func:`priorkit.evaluation.curve.compare`, :func:`priorkit.stats.paired`: mean Δ
over the seeds both arms share, its 95% CI, seeds ahead).

Blocks: ``readme`` (the README's measured table: rows from final reads of the sealed test split,
:mod:`.sealed`), ``sealed-table`` / ``sealed-table-1pct`` (those reads beside devel), ``teacher-table``
(the MPNet teacher against the MiniLM one, devel and its read), ``earlier-readme`` (the README's table before the ledger, with its two sentences, now in
docs/benchmarks.md), ``curve-scores`` /
``curve-deltas`` (the BC5CDR learning curve), ``arms-scores`` / ``arms-deltas`` (the fair
arms at 10%), ``silver-scores`` / ``silver-deltas`` (silver labels and the post-hoc merges);
issue 30: ``knowledge-scores`` / ``knowledge-deltas`` (self-training at 10%), ``weak-scores`` /
``weak-deltas`` (the weak-dictionary regime), ``knowledge-devel-gain`` / ``knowledge-gain`` /
``weak-gain`` (where the gain comes from: recall inside and outside the dictionary) and
``knowledge-calibration`` (the dictionary's quality per run, as it is and calibrated),
``knowledge-recipes`` (every recipe of both regimes in one table, for silver.md and features.md),
``calibration-thresholds`` (the dictionary's calibrated quality at each threshold),
``branch-devel-gain`` (this round's devel variants), ``branch-scores`` / ``branch-deltas`` /
``branch-gain`` / ``branch-1pct-gain`` / ``branch-100pct-gain`` (calibration by branch on the test sample),
``devel-round3-gain`` (the third devel round beside it), ``w5-deltas`` (its choice on test);
``decode-devel`` / ``decode-test-scores`` / ``decode-test-gain`` / ``decode-test-deltas`` (Viterbi
decoding, the O bias and the two-student mix on kept models, :mod:`.decoding`), ``decode-dial`` /
``decode-not-blind`` (the mix weight between precision and recall outside the dictionary);
``mix-gate`` (the mix gated by the dictionary), ``obias-per-run`` (the O bias chosen per run on
devel), ``mix-curve-scores`` / ``mix-curve-deltas`` (the recipe at 1%, 10% and 100%; :mod:`.mix`),
``blind-frontier`` (every post-hoc family's F1 against recall outside the dictionary),
``mix-weak-scores`` / ``mix-weak-deltas`` / ``mix-weak-gain`` (the recipe's file in the weak regime);
``outside-weight-devel`` / ``round7-frontier`` / ``round7-test`` (two training changes against
blindness: ``features.outside_weight``, and the student without features taught by the features
teacher), ``outside-split`` (recall outside the dictionary: other bounds / no match) and
``edge-noise-devel`` / ``round8-frontier`` / ``round8-test`` (``features.edge_noise``),
``outside-precision`` (the precision of the finds beyond the dictionary), ``round9-frontier`` /
``round9-test`` / ``join-screening`` (three students; the dictionary joining split entities) and
``document-frontier`` / ``document-test`` / ``document-strict`` / ``document-weak`` (the dictionary
read as a document;
:mod:`.outside`), and ``retrain-check`` / ``carry-devel`` / ``carry-test`` (the recipe
retrained; the model's own finds carried across the split; :mod:`.carry`), ``gate-devel`` /
``gate-test`` (the same, where the mix half agrees) and ``doc-curve`` / ``doc-curve-deltas`` (the recipe
with the document pass at 1%, 10% and 100%; :mod:`.carry`); ``tagging-table`` / ``tagging-scaling``
(tagging a corpus, issue 46: throughput, memory, kill -9, Dask, a bad record, GPU; :mod:`.tagging`);
``demo-readme`` / ``demo-run`` / ``demo-table`` (the demo's paragraph in the README, its cost and its
table in docs/benchmarks.md, from ``demo-bc5cdr.json``; :mod:`.demo`).
"""
from __future__ import annotations

import re
import statistics as st
from pathlib import Path
from typing import Callable, Sequence

from . import carry
from . import decoding
from . import demo
from . import knowledge
from . import mix
from . import outside
from . import tagging
from .sealed import recipe_check, sealed_readme, sealed_table, teacher_table
from .knowledge import DECODE_RESULTS, KNOW_BRANCH, WEAK
from .tables import (ARMS, CURVE, MPNET, SILVER, STSB, Results, Scores, _by_arm, _ci,  # noqa: F401
                            _fraction, _mean_sd, _pct, _table, compare, deltas_markdown, gain_markdown, read_runs,
                            score_table, scores_markdown)

MARKER = re.compile(r"<!-- claims:begin (?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- claims:end -->", re.DOTALL)


# ---- the learning curve (also benchmarks/curve_tables.py's output) -----------------------------
CURVE_ARMS = ["none", "features", "attention", "both", "random-spans", "shuffled", "dict-union", "dict-override"]
CURVE_PAIRS = [("features", "none"), ("attention", "none"), ("both", "none"), ("both", "features"),
               ("features", "random-spans"), ("attention", "shuffled"), ("features", "dict-override"),
               ("dict-override", "none")]


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


# ---- the README's measured section --------------------------------------------------------------
BC5 = "BC5CDR NER (entity F1)"
README_ROWS = [  # task, file, fraction, arm, label
    (BC5, ARMS, 0.1, "features", "HPO+MeSH token features (fair arms)"),
    (BC5, ARMS, 0.1, "attention", "concept attention prior (fair arms)"),
    (BC5, SILVER, 0.1, "silver", "silver labels + token features"),
    (BC5, KNOW_BRANCH, 0.1, "st-branch", "self-training, dictionary calibrated by branch"),
    (BC5, DECODE_RESULTS, 0.1, "st-branch-decoded", "the same, mixed with its twin without features, Viterbi "
     "decoding, O bias 1 (chosen on devel; none decoded the same way)"),
    (BC5, mix.CURVE_RESULTS, 1.0, "st-mix", "the mix of the two students, the 10% devel choice unchanged (none "
     "scored by the pipeline, argmax)"),
    ("BC5CDR Disease, HPO alone (the dictionary alone beats no knowledge)", WEAK, 0.1, "features", "token features, calibrated"),
    ("BC5CDR Disease, HPO alone (the dictionary alone beats no knowledge)", WEAK, 0.1, "silver", "silver labels, default (auto) weights"),
    ("BC5CDR Disease, HPO alone (the dictionary alone beats no knowledge)", WEAK, 0.1, "self-train", "self-training"),
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
    return first + "\n\n" + second + "\n\n" + outside.blind_sentence(res)


BLOCKS: dict[str, Callable[[Results], str]] = {
    "readme": lambda res: sealed_readme(res.folder.parent.parent),
    "sealed-table": lambda res: sealed_table(res.folder),
    "sealed-table-1pct": lambda res: sealed_table(res.folder, "bc5cdr-mix-read3-results.csv",
                                                  "bc5cdr-mix-1pct-devel-results.csv", read=3, nok="st-nok-t05"),
    "teacher-table": lambda res: teacher_table(res.folder),
    "recipe-check": lambda res: recipe_check(res.folder), "earlier-readme": lambda res: readme(res).replace("](docs/", "]("),  # links from docs/
    "curve-scores": curve_scores, "curve-deltas": curve_deltas,
    "arms-scores": arms_scores, "arms-deltas": arms_deltas,
    "silver-scores": silver_scores, "silver-deltas": silver_deltas,
    "knowledge-scores": knowledge.knowledge_scores, "knowledge-deltas": knowledge.knowledge_deltas,
    "weak-scores": knowledge.weak_scores, "weak-deltas": knowledge.weak_deltas,
    "knowledge-devel-gain": knowledge.knowledge_devel_gain, "knowledge-gain": knowledge.knowledge_gain,
    "weak-gain": knowledge.weak_gain,
    "knowledge-calibration": knowledge.knowledge_calibration, "knowledge-recipes": knowledge.knowledge_recipes,
    "calibration-thresholds": knowledge.calibration_thresholds,
    "mpnet-scores": knowledge.mpnet_scores, "mpnet-deltas": knowledge.mpnet_deltas,
    "branch-scores": knowledge.branch_scores, "branch-deltas": knowledge.branch_deltas,
    "branch-gain": knowledge.branch_gain, "branch-devel-gain": knowledge.branch_devel_gain,
    "branch-1pct-gain": knowledge.branch_1pct_gain, "branch-100pct-gain": knowledge.branch_100pct_gain,
    "devel-round3-gain": knowledge.devel_round3_gain, "w5-deltas": knowledge.w5_deltas,
    "decode-devel": decoding.decode_devel, "decode-test-scores": decoding.decode_test_scores,
    "decode-test-gain": decoding.decode_test_gain, "decode-test-deltas": decoding.decode_test_deltas,
    "decode-dial": decoding.decode_dial, "decode-not-blind": decoding.decode_not_blind,
    "mix-gate": mix.mix_gate, "obias-per-run": mix.obias_per_run,
    "mix-curve-scores": mix.mix_curve_scores, "mix-curve-deltas": mix.mix_curve_deltas,
    "blind-frontier": mix.blind_frontier, "mix-weak-scores": mix.mix_weak_scores,
    "mix-weak-deltas": mix.mix_weak_deltas, "mix-weak-gain": mix.mix_weak_gain,
    "outside-weight-devel": outside.outside_weight_devel, "round7-frontier": outside.round7_frontier,
    "round7-test": outside.round7_test, "outside-split": outside.outside_split,
    "edge-noise-devel": outside.edge_noise_devel, "round8-frontier": outside.round8_frontier,
    "round8-test": outside.round8_test, "outside-precision": outside.outside_precision,
    "round9-frontier": outside.round9_frontier, "round9-test": outside.round9_test,
    "join-screening": outside.join_screening, "document-frontier": outside.document_frontier,
    "document-test": outside.document_test, "document-strict": outside.document_strict,
    "document-weak": outside.document_weak,
    "retrain-check": carry.retrain_check, "carry-devel": carry.carry_devel, "carry-test": carry.carry_test,
    "gate-devel": carry.gate_devel, "gate-test": carry.gate_test,
    "doc-curve": carry.doc_curve, "doc-curve-deltas": carry.doc_curve_deltas,
    "tagging-table": tagging.tagging_table, "tagging-scaling": tagging.tagging_scaling,
    "demo-readme": demo.demo_readme, "demo-run": demo.demo_run, "demo-table": demo.demo_table,
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

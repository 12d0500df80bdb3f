"""The README's measured table: rows rendered from final reads of the sealed test split
(issue 48; ``docs/results/test-reads.csv``, :func:`priorkit.evaluation.ledger.render_row`).

Only a setting read through ``priorkit sweep --final`` (or ``benchmarks/recipe_check.py``'s
recorded read) may have a README row: each row names its read and links the ledger line, and
``tests/test_ledger.py`` checks every row against the read's result file.  Results read before
the ledger existed are in docs/benchmarks.md (block ``earlier-readme``)."""
from __future__ import annotations

from pathlib import Path

from priorkit.evaluation import ledger as lg

BC5 = "BC5CDR NER (entity F1)"
RECIPE = "**the recipe**: two self-trained students (with and without HPO+MeSH token features) mixed, Viterbi, then the dictionary read as a document"
NAMES = {"none": "no knowledge", "st-nok": "self-training without knowledge",
         "dictionary-calibrated-doc": "the calibrated dictionary read as a document",
         "dictionary-calibrated": "the calibrated dictionary", "dictionary-alone": "the dictionary alone"}
#: (read, setting, task, train, label, baseline): one README row each, in this order
SEALED_ROWS: list[tuple[int, str, str, str, str, str | None]] = [
    (1, "st-mix-doc", BC5, "10%", RECIPE, "none"),
    (1, "st-mix-doc", BC5, "10%", "the recipe", "dictionary-calibrated-doc"),
    (1, "st-mix-doc", BC5, "10%", "the recipe", "dictionary-calibrated"),
    (1, "st-mix-doc", BC5, "10%", "the recipe", "st-nok"),
    (1, "st-mix", BC5, "10%", "the recipe before the document pass", "none"),
    (1, "st-nok", BC5, "10%", "self-training without knowledge (the same loop; no dictionary, no features)", "none"),
    (1, "dictionary-calibrated-doc", BC5, "10%", "the dictionary alone, calibrated on the seed's gold, read as a "
     "document (no model)", "none"),
    (1, "dictionary-calibrated", BC5, "10%", "the dictionary alone, calibrated, by sentence", "none"),
    (1, "dictionary-alone", BC5, "10%", "the dictionary alone (HPO+MeSH matches as they are)", "none"),
    (1, "none", BC5, "10%", "no knowledge (MiniLM on the 10% gold alone)", None),
]
HEAD = ["task", "train", "arm (Δ against)", "score", "Δ [95% CI]", "seeds", "file"]


def sealed_readme(root: Path) -> str:
    rows = []
    for read, setting, task, train, label, baseline in SEALED_ROWS:
        arm = label if baseline is None else f"{label} (Δ against {NAMES[baseline]})"
        rows.append(_render(root, read, setting, [task, train, arm], baseline))
    head = "| " + " | ".join(HEAD) + " |\n|" + "---|" * len(HEAD) + "\n"
    return head + "\n".join(rows) + "\n\n" + verdict(root)


def _render(root: Path, read: int, setting: str, cells: list[str], baseline: str | None) -> str:
    """render_row with the ledger's relative paths read from the repository's root."""
    import os

    here = os.getcwd()
    os.chdir(root)
    try:
        return lg.render_row(lg.LEDGER, read, setting, cells, baseline=baseline)
    finally:
        os.chdir(here)


def verdict(root: Path, read: int = 1) -> str:
    """The sentence under the table: does the recipe beat the strongest baseline (the calibrated
    dictionary read as a document) by a 95% CI above 0?  From the read's result file."""
    from priorkit.stats import paired

    line = lg.read_line(root / lg.LEDGER, read)
    result = root / line["result"]
    got = lg._result_scores(result, "st-mix-doc", None, "test_f1")
    parts = []
    for base in ("dictionary-calibrated-doc", "st-nok", "none"):
        ref = lg._result_scores(result, base, None, "test_f1")
        seeds = sorted(set(got) & set(ref))
        p = paired([100 * (got[s] - ref[s]) for s in seeds])
        parts.append((base, p))
    (dname, d), (sname, s), (nname, n) = parts
    beats = d.ci_low > 0
    first = (f"**The recipe {'beats' if beats else 'does not beat'} the strongest baseline** on the sealed test "
             f"sample: against {NAMES[dname]} its Δ is {d.mean:+.2f} [{d.ci_low:+.2f}, {d.ci_high:+.2f}] over "
             f"{d.n} seeds{'' if beats else ' (a CI that does not lie above 0)'}. Against {NAMES[sname]} it gains "
             f"{s.mean:+.2f} [{s.ci_low:+.2f}, {s.ci_high:+.2f}], against {NAMES[nname]} {n.mean:+.2f} "
             f"[{n.ci_low:+.2f}, {n.ci_high:+.2f}]: the knowledge pays over a model, not (yet) over the dictionary "
             "it was given." if not beats else
             f"**The recipe beats the strongest baseline** on the sealed test sample: against {NAMES[dname]} its Δ "
             f"is {d.mean:+.2f} [{d.ci_low:+.2f}, {d.ci_high:+.2f}] over {d.n} seeds; against {NAMES[sname]} "
             f"{s.mean:+.2f} [{s.ci_low:+.2f}, {s.ci_high:+.2f}], against {NAMES[nname]} {n.mean:+.2f} "
             f"[{n.ci_low:+.2f}, {n.ci_high:+.2f}].")
    return first + "\n"

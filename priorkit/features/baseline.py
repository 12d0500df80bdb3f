"""The dictionary-only baseline: how well the matcher alone tags entities.

Each match becomes an entity of the type its group maps to (``mesh:C`` -> Disease);
scored with seqeval at entity level against the gold BIO tags of the same split, as
the trained models are.  A mention in several groups takes the type of the first of
its groups in ``group_to_label`` order; groups not in the mapping are ignored.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..provider import Match, PriorProvider

#: BC5CDR: MeSH diseases (tree C) and HPO phenotypes are Disease, MeSH tree D Chemical
BC5CDR_TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}


def group_entities(matches: Sequence[Match], n_words: int, group_to_label: Mapping[str, str]) -> list[str]:
    """BIO tags of ``n_words`` words from the matches (one entity per span)."""
    rank = {g: i for i, g in enumerate(group_to_label)}
    best: dict[tuple[int, int], str] = {}
    for m in matches:
        if m.group not in rank:
            continue
        span = (m.start, m.end)
        if span not in best or rank[m.group] < rank[best[span]]:
            best[span] = m.group
    tags = ["O"] * n_words
    for (s, e), g in best.items():
        label = group_to_label[g]
        tags[s] = f"B-{label}"
        for i in range(s + 1, e):
            tags[i] = f"I-{label}"
    return tags


def dictionary_scores(provider: PriorProvider, examples: Sequence[Mapping[str, Any]],
                      group_to_label: Mapping[str, str] = BC5CDR_TYPES) -> dict[str, float]:
    """Entity-level precision, recall, F1 (overall and ``f1_<type>``, ``precision_<type>``,
    ``recall_<type>``) of ``provider``'s matches on ``examples`` (dicts with ``words`` and ``tags``)."""
    from seqeval.metrics import classification_report

    from ..metrics import ner_metrics

    y_true, y_pred = [], []
    for e in examples:
        words = list(e["words"])
        y_true.append(list(e["tags"]))
        y_pred.append(group_entities(provider.matches(words), len(words), group_to_label))
    out = ner_metrics(y_true, y_pred)
    report = classification_report(y_true, y_pred, output_dict=True, zero_division=0)
    for name, row in report.items():
        if not name.endswith(" avg"):
            out[f"precision_{name}"] = float(row["precision"])
            out[f"recall_{name}"] = float(row["recall"])
    out["sentences"] = float(len(examples))
    return out

"""The dictionary-only baseline: how well the matcher alone tags entities.

Each match becomes an entity of the type its group maps to (``mesh:C`` -> Disease);
scored with seqeval at entity level against the gold BIO tags of the same split, as
the trained models are.  A mention in several groups takes the type of the first of
its groups in ``group_to_label`` order; groups not in the mapping are ignored.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..providers.base import Match, PriorProvider
from ..decode.dictionary import group_entities


def dictionary_scores(provider: PriorProvider | None, examples: Sequence[Mapping[str, Any]],
                      group_to_label: Mapping[str, str],
                      matches: Sequence[Sequence[Match]] | None = None) -> dict[str, float]:
    """Entity-level precision, recall, F1 (overall and ``f1_<type>``, ``precision_<type>``,
    ``recall_<type>``) of ``provider``'s matches on ``examples`` (dicts with ``words`` and ``tags``),
    or of ``matches`` already made (one list per example, e.g. a document-level matcher's)."""
    from seqeval.metrics import classification_report

    from ..metrics import ner_metrics

    y_true, y_pred = [], []
    for i, e in enumerate(examples):
        words = list(e["words"])
        y_true.append(list(e["tags"]))
        found = provider.matches(words) if matches is None else matches[i]
        y_pred.append(group_entities(found, len(words), group_to_label))
    out = ner_metrics(y_true, y_pred)
    report = classification_report(y_true, y_pred, output_dict=True, zero_division=0)
    for name, row in report.items():
        if not name.endswith(" avg"):
            out[f"precision_{name}"] = float(row["precision"])
            out[f"recall_{name}"] = float(row["recall"])
    out["sentences"] = float(len(examples))
    return out

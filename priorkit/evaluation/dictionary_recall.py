"""Recall inside and outside the dictionary: does a model find the entities the dictionary
already knows, or also the others?

The gold entities of a split are cut in two by the dictionary's tags (its concept matches,
each an entity of its group's type, as :func:`priorkit.evaluation.posthoc.dictionary_tags`
renders them): those the dictionary tags *exactly* (same type, same first and last word)
and the rest.  A model's recall on each part says where its gain comes from: a channel
that only teaches the model to trust the matches raises the first and leaves (or lowers)
the second.  The rest is cut once more: the entities a match overlaps with other bounds or
another type (``boundary``: "essential hypertension" matched where the gold has
"hypertension") and those no match touches (``unseen``).  A model that copies the
dictionary's bounds loses the first; one that ignores what the dictionary lacks, the second.

The predictions are cut the same way: those that *are* a dictionary entity (``pred_dict``) and
the rest (``pred_other``), each with how many are right.  The precision of the rest says what
the model's finds beyond the dictionary are worth: a predicted entity raises F1 only when
predictions of its kind are right more often than F1 / 2, so a model that reaches further
outside the dictionary at a precision below that line loses F1 for it.
``benchmarks/error_profile.py`` and the demo's summary (``scripts/demo_summary.py``) read it
from here; the sweep's reports can too.

Only BIO tags in, counts and percentages out: no model, no provider, no pipeline config.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from ..decode.spans import seqeval_entities

Entity = tuple[str, int, int]  # type, first word, last word (inclusive, seqeval's form)


#: the entities of one sentence's BIO tags as (type, first word, last word), the one span reader's
#: seqeval form (:func:`priorkit.decode.spans.seqeval_entities`)
entities = seqeval_entities


@dataclasses.dataclass(frozen=True)
class DictionaryRecall:
    """Gold entities the dictionary tags exactly (``gold_dict``) and the rest (``gold_other``),
    and how many of each the predictions found exactly."""

    gold_dict: int = 0
    found_dict: int = 0
    gold_other: int = 0
    found_other: int = 0
    #: of ``gold_other``: the entities a dictionary entity overlaps (other bounds or type)
    gold_boundary: int = 0
    found_boundary: int = 0
    #: predicted entities that are a dictionary entity (same type and bounds), and of them the right ones
    pred_dict: int = 0
    right_dict: int = 0
    #: the other predicted entities, and of them the right ones
    pred_other: int = 0
    right_other: int = 0

    @property
    def gold(self) -> int:
        return self.gold_dict + self.gold_other

    @property
    def recall(self) -> float:
        """Overall recall x100 (exact entities)."""
        return 100.0 * (self.found_dict + self.found_other) / self.gold if self.gold else 0.0

    @property
    def recall_dict(self) -> float:
        """Recall x100 on the gold entities the dictionary tags exactly (0 when there are none)."""
        return 100.0 * self.found_dict / self.gold_dict if self.gold_dict else 0.0

    @property
    def recall_other(self) -> float:
        """Recall x100 on the other gold entities (0 when there are none)."""
        return 100.0 * self.found_other / self.gold_other if self.gold_other else 0.0

    @property
    def gold_unseen(self) -> int:
        """The other gold entities no dictionary entity touches."""
        return self.gold_other - self.gold_boundary

    @property
    def recall_boundary(self) -> float:
        """Recall x100 on the other gold entities that a dictionary entity overlaps with other
        bounds or another type (0 when there are none)."""
        return 100.0 * self.found_boundary / self.gold_boundary if self.gold_boundary else 0.0

    @property
    def recall_unseen(self) -> float:
        """Recall x100 on the gold entities no dictionary entity touches (0 when there are none)."""
        n = self.gold_unseen
        return 100.0 * (self.found_other - self.found_boundary) / n if n else 0.0

    @property
    def precision_dict(self) -> float:
        """Precision x100 of the predicted entities that are a dictionary entity (0 when there are none)."""
        return 100.0 * self.right_dict / self.pred_dict if self.pred_dict else 0.0

    @property
    def precision_other(self) -> float:
        """Precision x100 of the other predicted entities: the model's finds beyond the
        dictionary (0 when there are none)."""
        return 100.0 * self.right_other / self.pred_other if self.pred_other else 0.0

    @property
    def coverage(self) -> float:
        """Share x100 of the gold entities the dictionary tags exactly."""
        return 100.0 * self.gold_dict / self.gold if self.gold else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"gold_dict": self.gold_dict, "found_dict": self.found_dict, "gold_other": self.gold_other,
                "found_other": self.found_other, "gold_boundary": self.gold_boundary,
                "found_boundary": self.found_boundary, "recall": self.recall, "recall_dict": self.recall_dict,
                "recall_other": self.recall_other, "recall_boundary": self.recall_boundary,
                "recall_unseen": self.recall_unseen, "pred_dict": self.pred_dict, "right_dict": self.right_dict,
                "pred_other": self.pred_other, "right_other": self.right_other,
                "precision_dict": self.precision_dict, "precision_other": self.precision_other,
                "coverage": self.coverage}


def dictionary_recall(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]],
                      dictionary: Sequence[Sequence[str]]) -> DictionaryRecall:
    """Recall of ``predicted`` on the gold entities ``dictionary`` tags exactly and on the rest,
    and the precision of the predicted entities that are a dictionary entity and of the rest.

    All three are BIO tags, one list per sentence and one tag per word, in the same order.
    """
    if not len(predicted) == len(gold) == len(dictionary):
        raise ValueError(f"{len(predicted)} predicted, {len(gold)} gold and {len(dictionary)} dictionary "
                         "sentences: they must be the same sentences")
    counts = dict.fromkeys(("gold_dict", "found_dict", "gold_other", "found_other", "gold_boundary",
                            "found_boundary", "pred_dict", "right_dict", "pred_other", "right_other"), 0)
    for i, (p_tags, g_tags, d_tags) in enumerate(zip(predicted, gold, dictionary)):
        if not len(p_tags) == len(g_tags) == len(d_tags):
            raise ValueError(f"sentence {i}: {len(p_tags)} predicted, {len(g_tags)} gold and {len(d_tags)} "
                             "dictionary tags")
        p, d, g = set(entities(p_tags)), set(entities(d_tags)), set(entities(g_tags))
        for e in p:
            part = "dict" if e in d else "other"
            counts[f"pred_{part}"] += 1
            counts[f"right_{part}"] += e in g
        for e in g:
            part = "dict" if e in d else "other"
            counts[f"gold_{part}"] += 1
            counts[f"found_{part}"] += e in p
            if part == "other" and any(s <= e[2] and e[1] <= t for _, s, t in d):  # a match overlaps it
                counts["gold_boundary"] += 1
                counts["found_boundary"] += e in p
    return DictionaryRecall(**counts)


def recall_table(per_arm: Mapping[str, Sequence[DictionaryRecall]]) -> str:
    """A Markdown table: per arm, the mean over its runs (seeds) of the recall on the
    dictionary's entities, on the others (and on their two parts) and overall, and the precision
    of the entities it predicts beyond the dictionary ("-" for an arm that predicts none)."""
    lines = ["| arm | runs | recall, entities the dictionary tags | recall, the others | the others: a match with "
             "other bounds | the others: no match | recall | precision, its entities beyond the dictionary |",
             "|---|---|---|---|---|---|---|---|"]
    for arm, runs in per_arm.items():
        if not runs:
            continue
        n = len(runs)
        cells = [sum(getattr(r, k) for r in runs) / n
                 for k in ("recall_dict", "recall_other", "recall_boundary", "recall_unseen", "recall")]
        beyond = [r.precision_other for r in runs if r.pred_other]
        lines.append(f"| {arm} | {n} | " + " | ".join(f"{c:.1f}" for c in cells)
                     + (f" | {sum(beyond) / len(beyond):.1f} |" if beyond else " | - |"))
    return "\n".join(lines) + "\n"

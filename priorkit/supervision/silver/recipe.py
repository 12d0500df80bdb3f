"""Silver rows and the two recipes' training lists.

A silver row is a task row (``{"words", "labels"}``) with ``"silver": True``; under
``unmatched: ignore`` its ``O`` words get label -100, so the loss skips them (partial
labels).  A row whose words weigh other than 1 carries ``weights`` (one per word); the
collator turns them into the batch's ``label_weights`` like the labels, and the trainer's
loss weighs each token by them (``priorkit.training.loss``, with the channels' weights).
``mix`` puts gold and silver rows into one list that the Trainer passes over once: the gold
rows ``epochs`` times and the silver rows ``silver_epochs`` times (or ``ratio`` silver rows
per gold row), shuffled by the Trainer's sampler (length-grouped
with ``group_by_length``).  A fractional count takes a seeded share of the rows.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ...errors import PriorkitError

IGNORE = -100


#: a word the labeller does not know (a teacher below its threshold): out of the loss
UNKNOWN = "?"


def silver_rows(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]],
                index: Mapping[str, int], unmatched: str = "O", weight: float = 1.0,
                unmatched_weight: float | None = None) -> list[dict[str, Any]]:
    """Rows of silver-labelled sentences: tags -> label ids (``O`` -> -100 under ``ignore``;
    ``?``, an unknown word, always -100) and, when a word weighs other than 1, ``weights``
    (one per word): ``weight``, times ``unmatched_weight`` for the O words under ``O``."""
    outside = index["O"]
    out = []
    for words, row in zip(sentences, tags):
        ids = [IGNORE if t == UNKNOWN else index[t] for t in row]
        if unmatched == "ignore":
            ids = [IGNORE if i == outside else i for i in ids]
        item: dict[str, Any] = {"words": list(words), "labels": ids, "silver": True}
        if weight != 1.0 or unmatched_weight is not None:
            low = weight * (1.0 if unmatched_weight is None else unmatched_weight)
            item["weights"] = [low if i == outside else weight for i in ids]
        out.append(item)
    return out


def repeat(rows: Sequence[dict], times: float, rng: np.random.Generator) -> list[dict]:
    """``rows`` ``floor(times)`` times plus a seeded share of ``times % 1`` of them."""
    whole = int(math.floor(times))
    out = [r for _ in range(whole) for r in rows]
    extra = int(round((times - whole) * len(rows)))
    if extra:
        out += [rows[i] for i in np.sort(rng.choice(len(rows), size=extra, replace=False))]
    return out


def mix_rows(gold: Sequence[dict], silver: Sequence[dict], *, epochs: float, silver_epochs: float,
             ratio: float | None, seed: int) -> list[dict]:
    """The ``mix`` recipe's training list (one pass of the Trainer; see the module doc)."""
    if not silver:
        raise PriorkitError("silver labels: the unlabelled text holds no sentences")
    rng = np.random.default_rng([int(seed), 23])
    rows = repeat(gold, epochs, rng)
    passes = silver_epochs if ratio is None else ratio * len(rows) / len(silver)
    return rows + repeat(silver, passes, rng)

"""Silver rows and the two recipes' training lists, the collator's silver flag and the loss
that weighs silver tokens.

A silver row is a task row (``{"words", "labels"}``) with ``"silver": True``; under
``unmatched: ignore`` its ``O`` words get label -100, so the loss skips them (partial
labels).  ``mix`` puts gold and silver rows into one list that the Trainer passes over
once: the gold rows ``epochs`` times and the silver rows ``silver_epochs`` times (or
``ratio`` silver rows per gold row), shuffled by the Trainer's sampler (length-grouped
with ``group_by_length``).  A fractional count takes a seeded share of the rows.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ..errors import PriorkitError

IGNORE = -100


def silver_rows(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]],
                index: Mapping[str, int], unmatched: str = "O") -> list[dict[str, Any]]:
    """Rows of silver-labelled sentences (tags -> label ids; ``O`` -> -100 under ``ignore``)."""
    outside = index["O"]
    out = []
    for words, row in zip(sentences, tags):
        ids = [index[t] for t in row]
        if unmatched == "ignore":
            ids = [IGNORE if i == outside else i for i in ids]
        out.append({"words": list(words), "labels": ids, "silver": True})
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


class SilverCollator:
    """The inner collator's batch, plus ``label_weights`` (B,) when silver rows weigh other
    than gold ones (``weight`` != 1): 1 for gold rows, ``weight`` for silver rows."""

    def __init__(self, inner: Any, weight: float = 1.0) -> None:
        self.inner, self.weight = inner, float(weight)

    def __getattr__(self, name: str) -> Any:  # tokenizer, builder, store, close ... of the inner one
        if name in ("inner", "weight"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.inner(examples)
        flags = [bool(e.get("silver")) for e in examples]
        if self.weight != 1.0 and any(flags):
            batch["label_weights"] = torch.tensor([self.weight if f else 1.0 for f in flags], dtype=torch.float32)
        return batch


def weighted_token_loss(model: Any, inputs: dict[str, torch.Tensor], weights: torch.Tensor,
                        num_items: Any = None) -> tuple[torch.Tensor, Any]:
    """Token cross-entropy with each example's tokens weighted by ``weights`` (B,): the sum of
    weighted token losses over the number of labelled tokens (a batch of gold rows gives the
    usual mean).  ``num_items``: the labelled tokens of all accumulated batches, when the
    Trainer counts them (it then does not divide by the accumulation steps itself)."""
    labels = inputs.pop("labels")
    outputs = model(**inputs)
    logits = outputs.logits
    per_token = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                                  ignore_index=IGNORE, reduction="none").view_as(labels)
    mask = labels != IGNORE
    w = weights.to(per_token.device)[:, None].expand_as(per_token)
    count = mask.sum().clamp(min=1) if num_items is None else num_items
    loss = (per_token * w * mask).sum() / count
    inputs["labels"] = labels
    return loss, outputs

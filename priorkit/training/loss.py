"""The training loss of a run, through one hook of the channels (docs/channels.md, "A channel
that weighs the loss").

The task loss is weighed by the product of the data's own ``label_weights`` (silver rows'
per-word weights, made by the collator) and each channel's
:meth:`~priorkit.channels.Channel.token_loss_weights`; then each channel's
:meth:`~priorkit.channels.Channel.extra_loss` is added (the attention channel's ``supervise``
term).  Without any weights it is the model's own loss, computed as before (a gold-only run's
numbers do not change).  The keys only the loss reads (:data:`priorkit.batch_keys.LOSS_ONLY`)
are taken out of the batch before the forward pass.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from ..batch_keys import LOSS_ONLY
from ..errors import PriorkitError

IGNORE = -100


def take_loss_tensors(inputs: dict[str, Any]) -> dict[str, Any]:
    """Pop the tensors only the loss reads (``label_weights``, the channels' ``loss_keys``)."""
    return {k: inputs.pop(k) for k in [k for k in inputs if k in LOSS_ONLY]}


def _times(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Two weight tensors, (B,) or (B, L) each, multiplied (a (B,) one spread over the tokens)."""
    if a.dim() < b.dim():
        a = a[:, None]
    elif b.dim() < a.dim():
        b = b[:, None]
    return a * b.to(a.device)


def loss_weights(model: Any, batch: Mapping[str, Any], channels: Sequence[Any]) -> torch.Tensor | None:
    """The weights of a batch's task loss: ``label_weights`` times every channel's
    ``token_loss_weights`` ((B,) or (B, L)); None when nothing weighs it."""
    weights = batch.get("label_weights")
    size = batch["input_ids"].shape[0] if "input_ids" in batch else None
    for channel in channels:
        w = channel.token_loss_weights(model, batch)
        if w is None:
            continue
        w = torch.as_tensor(w, dtype=torch.float32)
        if w.dim() not in (1, 2) or (size is not None and w.shape[0] != size) or \
                (w.dim() == 2 and "labels" in batch and w.shape != batch["labels"].shape):
            raise PriorkitError(f"the {channel.name} channel's token_loss_weights gave a tensor of shape "
                                f"{tuple(w.shape)}; it must be (B,) per example or (B, L) per token, like the "
                                f"labels ({tuple(batch['labels'].shape) if 'labels' in batch else '?'})")
        weights = w if weights is None else _times(weights, w)
    return weights


def weighted_loss(model: Any, inputs: dict[str, torch.Tensor], weights: torch.Tensor,
                  num_items: Any = None) -> tuple[torch.Tensor, Any]:
    """The task loss with each labelled item weighted: the sum of weight x loss over the
    labelled tokens (labels -100 left out) over their number, so weights of 1 give the mean,
    the model's own loss.  Token classification: ``weights`` (B,) per example or (B, L) per
    token, token cross-entropy.  One label per example: ``weights`` (B,), cross-entropy, or the
    squared error of a one-output (regression) model.  ``num_items``: the labelled items of all
    accumulated batches, when the Trainer counts them (it then does not divide by the
    accumulation steps itself).  ``inputs`` must hold no loss-only key; its ``labels`` stay."""
    labels = inputs.pop("labels")
    try:
        outputs = model(**inputs)
    finally:
        inputs["labels"] = labels
    logits = outputs.logits
    if labels.dim() == 2:  # one label per token
        per_item = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                                     ignore_index=IGNORE, reduction="none").view_as(labels)
        mask = labels != IGNORE
    else:
        if weights.dim() != 1:
            raise PriorkitError(f"per-token loss weights {tuple(weights.shape)} on a task with one label per "
                                "example; weigh each example instead ((B,))")
        problem = getattr(getattr(model, "config", None), "problem_type", None)
        if logits.shape[-1] == 1 or problem == "regression":
            per_item = (logits.reshape(-1).float() - labels.reshape(-1).float()) ** 2
            mask = torch.ones_like(per_item, dtype=torch.bool)
        elif problem == "multi_label_classification" or labels.is_floating_point():
            raise PriorkitError("loss weights on a multi-label model are not supported")
        else:
            per_item = torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=IGNORE, reduction="none")
            mask = labels != IGNORE
    w = weights.to(per_item.device)
    w = (w[:, None] if w.dim() < per_item.dim() else w).expand_as(per_item)
    count = mask.sum().clamp(min=1) if num_items is None else num_items
    return (per_item * w * mask).sum() / count, outputs


def task_loss(model: Any, inputs: dict[str, Any], channels: Sequence[Any],
              stock: Callable[[Any, dict[str, Any]], tuple[torch.Tensor, Any]],
              num_items: Any = None, scale: float = 1) -> tuple[torch.Tensor, Any]:
    """(the loss, the model's outputs) of one batch: the loss-only tensors taken out of
    ``inputs``; :func:`weighted_loss` (times ``scale``, what the Trainer multiplies its own
    loss by under several processes) when the data or a channel weighs it, else
    ``stock(model, inputs)`` (the Trainer's own loss); plus the channels' extra losses."""
    taken = take_loss_tensors(inputs)
    weights = loss_weights(model, {**inputs, **taken}, channels)
    if weights is None:
        loss, outputs = stock(model, inputs)
    else:
        loss, outputs = weighted_loss(model, inputs, weights, num_items)
        if scale != 1:
            loss = loss * scale
    for channel in channels:
        extra = channel.extra_loss(model)
        if extra is not None:
            loss = loss + extra.to(loss.dtype)
    return loss, outputs

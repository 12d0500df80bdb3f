"""``supervise``: the stock forward pass; in training an auxiliary loss ``weight * KL(T || A)``
pulls the chosen heads' attention towards the row-normalised prior ``T ~ P ** power``
(linguistically-informed self-attention, Strubell et al. 2018).  Inference costs nothing
extra, and the kernel does not matter to it."""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from ..errors import PriorAttentionConfigError
from ..maths import additive_mask
from ..mode import SUPERVISION_ATTR, AttentionMode, Call, register_mode


@register_mode
class Supervise(AttentionMode):
    name = "supervise"
    options = {"weight": 0.1, "power": 1.0}

    def check_options(self, options):
        if options["weight"] < 0 or options["power"] <= 0:
            raise PriorAttentionConfigError(
                f"supervise options weight={options['weight']} must be >= 0 and power={options['power']} > 0.")

    def attend(self, layer, call: Call):
        if call.module.training and torch.is_grad_enabled():
            power = layer.options["power"]
            parts = call.once(("supervise", layer.heads, power),
                              lambda: supervision_parts(call.mask, call.prior4, layer.heads, power))
            kl = supervision_kl(call.query, call.key, call.mask, call.prior4, call.scaling, layer.heads,
                                power, parts)
            call.module.__dict__[SUPERVISION_ATTR] = kl * layer.options["weight"]
        return call.base(call.module, call.query, call.key, call.value, call.mask, **call.kwargs)


def supervision_target(prior4: Tensor, power: float, keys: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Row-normalised ``P ** power`` (B, 1|H, L, L) and the rows that count (B, 1|H, L).

    ``keys`` (bool, broadcastable, True = may be attended to) zeroes the target on
    masked keys.  A row counts when what is left sums to more than 0: padded query
    rows hold 0 in a collated prior, so they drop out here.
    """
    p = prior4.float().clamp_min(0.0)
    if power != 1.0:
        p = p.pow(power)
    if keys is not None:
        p = p * keys
    total = p.sum(-1, keepdim=True)  # (B, 1|H, L, 1)
    valid = total.squeeze(-1) > 0
    return p / total.clamp_min(1e-12), valid


def supervision_parts(
    mask: Tensor | None, prior4: Tensor, heads: tuple[int, ...] | None, power: float
) -> tuple[Tensor | None, Tensor, Tensor, Tensor]:
    """What :func:`supervision_kl` needs besides Q and K, the same in every supervised layer
    of a forward pass: the float32 additive mask, the target ``T`` (B, 1|h, L, L), the
    rows that count (B, 1|h, L) and ``sum_k T log T`` per row (B, 1|h, L)."""
    if heads is not None and prior4.shape[1] > 1:
        prior4 = prior4.index_select(1, torch.tensor(heads, device=prior4.device))
    keys = None
    if mask is not None:
        keys = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
    target, valid = supervision_target(prior4, power, keys)
    return additive_mask(mask, torch.float32), target, valid, torch.xlogy(target, target).sum(-1)


def supervision_kl(
    query: Tensor, key: Tensor, mask: Tensor | None, prior4: Tensor, scaling: float,
    heads: tuple[int, ...] | None, power: float,
    parts: tuple[Tensor | None, Tensor, Tensor, Tensor] | None = None,
) -> Tensor:
    """Mean ``KL(T || A)`` over the chosen heads and the rows that count (a scalar).

    ``A = softmax(s Q K^T + mask)`` is recomputed here for the chosen heads only, so the
    stock kernel keeps producing the layer's output; padded keys get zero weight
    (the mask) and zero target (the prior's padding), padded queries drop out.
    ``KL = sum T log T - sum T log A`` row by row; the first term and the target come
    from ``parts`` (:func:`supervision_parts`, shared by the layers of a forward pass).
    """
    if key.shape[1] != query.shape[1]:  # grouped-query attention (EuroBERT)
        key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
    if heads is not None:
        index = torch.tensor(heads, device=query.device)
        query, key = query.index_select(1, index), key.index_select(1, index)
    additive, target, valid, neg_entropy = parts if parts is not None else supervision_parts(
        mask, prior4, heads, power)
    logits = torch.matmul(query.float() * scaling, key.float().transpose(2, 3))  # (B, h, L, L)
    if additive is not None:
        logits.add_(additive)
    log_a = F.log_softmax(logits, dim=-1)
    kl_rows = neg_entropy - (target * log_a).sum(-1)  # (B, h, L)
    valid = valid.expand_as(kl_rows)
    count = valid.sum().clamp_min(1)
    return (kl_rows * valid).sum() / count

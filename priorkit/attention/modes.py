"""The maths of the three ways a prior P enters attention (pure torch, no transformers).

Notation: ``raw = Q K^T`` (B, H, L, L), ``s`` the model's scaling (1/sqrt(d) for
BERT), ``A`` the additive padding mask (0 where allowed, dtype-min elsewhere),
``P`` the prior (B, 1, L, L) or (B, H, L, L).

* ``multiply`` (Xia et al. 2021): ``softmax(raw * s * P + A)``.
* ``gate``: ``softmax(raw * s * (1 + g_h (P - 1)) + A)``, one learnable ``g_h``
  per head; ``g = 1`` is ``multiply``, ``g = 0`` is the stock model.
* ``bias``: ``softmax(raw * s + A + lam * log(max(P, eps)))``: the prior is
  folded into the float mask, so the model's own SDPA kernel does all the work.

``multiply`` and ``gate`` need the logits themselves, so they run eager maths in
the layers that get the prior.  To keep that cheap the scaling is folded into the
multiplier and the mask addition into the same ``addcmul`` kernel: one pass over
the (B, H, L, L) scores instead of three, and P stays broadcast over heads
unless the caller restricts ``heads`` or passes a per-head prior.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from .errors import PriorShapeError

#: mode name -> its options and their defaults
MODE_OPTIONS: dict[str, dict[str, float]] = {
    "multiply": {},
    "bias": {"lam": 1.0, "eps": 1e-2},
    "gate": {"init": 1.0},
}

_HALF = (torch.float16, torch.bfloat16)


def prior_as_4d(prior: Tensor, query: Tensor, key: Tensor) -> Tensor:
    """Check ``prior`` against the attention inputs and view it as (B, 1|H, L, L).

    ``query`` is (B, H, Lq, d) and ``key`` (B, Hkv, Lk, d); an encoder's self-attention
    has ``Lq == Lk``.  The prior is moved to the query's device (a no-op when the
    collator already put it there) but keeps its dtype: each mode casts it once.
    """
    if not isinstance(prior, Tensor):
        raise PriorShapeError(f"prior= must be a torch.Tensor, got {type(prior).__name__}.")
    batch, heads, q_len, _ = query.shape
    k_len = key.shape[2]
    if prior.ndim == 3 and tuple(prior.shape) == (batch, q_len, k_len):
        prior = prior.unsqueeze(1)  # (B, 1, L, L): one matrix shared by all heads
    elif prior.ndim == 4 and tuple(prior.shape) in ((batch, heads, q_len, k_len), (batch, 1, q_len, k_len)):
        pass
    else:
        raise PriorShapeError(
            f"prior= has shape {tuple(prior.shape)}, but this attention layer expects "
            f"(batch, L, L) = ({batch}, {q_len}, {k_len}) or (batch, heads, L, L) = "
            f"({batch}, {heads}, {q_len}, {k_len}); L is the padded length of input_ids. "
            "Pad every matrix of the batch to that length (PriorCollator does) and, for "
            "multiple-choice heads, flatten the choices into the batch like input_ids."
        )
    if not prior.is_floating_point():
        prior = prior.float()
    return prior.to(query.device, non_blocking=True)


def additive_mask(mask: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """The padding mask as an additive float tensor (0 = keep, dtype-min = drop).

    transformers hands SDPA a boolean mask (True = keep) and eager attention a float
    one; both broadcast against the (B, H, L, L) scores.  ``None`` means no padding.
    """
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
            ~mask, torch.finfo(dtype).min
        )
    return mask.to(dtype)


def head_selector(n_heads: int, heads: tuple[int, ...] | None, device: torch.device) -> Tensor | None:
    """(1, H, 1, 1) boolean, True for the heads that get the prior; None = all heads."""
    if heads is None:
        return None
    sel = torch.zeros(n_heads, dtype=torch.bool, device=device)
    sel[list(heads)] = True
    return sel.view(1, n_heads, 1, 1)


def multiply_multiplier(prior4: Tensor, scaling: float, sel: Tensor | None, dtype: torch.dtype) -> Tensor:
    """``s * P`` (B, 1|H, L, L); heads outside ``sel`` get plain ``s``."""
    mult = prior4.to(dtype) * scaling
    if sel is not None:
        mult = torch.where(sel, mult, torch.tensor(scaling, dtype=dtype, device=mult.device))
    return mult


def gate_multiplier(prior4: Tensor, scaling: float, gate: Tensor, dtype: torch.dtype) -> Tensor:
    """``s * (1 + g_h (P - 1))`` (B, H, L, L); ``gate`` is (H,) with 0 for ungated heads."""
    scaled_gate = (gate.to(dtype) * scaling).view(1, -1, 1, 1)  # (1, H, 1, 1)
    return torch.addcmul(
        torch.tensor(scaling, dtype=dtype, device=prior4.device), prior4.to(dtype) - 1, scaled_gate
    )


def bias_mask(
    prior4: Tensor, mask: Tensor | None, lam: float, eps: float, sel: Tensor | None, dtype: torch.dtype
) -> Tensor:
    """The float mask ``A + lam * log(max(P, eps))`` (B, 1|H, L, L) for the model's own kernel.

    Computed in float32 and clamped to the dtype's range before the cast, so a
    float16 mask cannot overflow to -inf (a fully -inf row would give NaN).
    """
    bias = torch.log(prior4.float().clamp_min(eps)).mul_(lam)  # (B, 1|H, L, L)
    if sel is not None:
        bias = bias * sel
    lowest = torch.finfo(dtype).min
    if mask is None:
        out = bias
    elif mask.dtype == torch.bool:
        out = bias.masked_fill(~mask, lowest) if mask.shape == bias.shape else torch.where(mask, bias, lowest)
    else:
        out = bias + mask.float()
    return out.clamp_min_(lowest).to(dtype)


def eager_attention(
    module: torch.nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    multiplier: Tensor,
    additive: Tensor | None,
    dropout: float,
) -> tuple[Tensor, Tensor]:
    """``softmax(raw * multiplier + additive)``, dropout, ``@ V``; returns (B, L, H, d) and the weights.

    Mirrors transformers' ``eager_attention_forward`` step for step (so with P = 1
    it reproduces eager attention and its dropout draws exactly), except that the
    scaling sits inside ``multiplier`` and the mask addition is fused into ``addcmul``.
    Half-precision softmax runs in float32, as ModernBERT's and EuroBERT's eager code do.
    """
    if key.shape[1] != query.shape[1]:  # grouped-query attention (EuroBERT)
        n_rep = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(n_rep, dim=1)
        value = value.repeat_interleave(n_rep, dim=1)
    raw = torch.matmul(query, key.transpose(2, 3))  # (B, H, L, L)
    if additive is None:
        logits = raw * multiplier
    else:
        logits = torch.addcmul(additive, raw, multiplier)
    if logits.dtype in _HALF:
        weights = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    else:
        weights = F.softmax(logits, dim=-1)
    if dropout > 0.0 and module.training:
        weights = F.dropout(weights, p=dropout, training=True)
    out = torch.matmul(weights, value)  # (B, H, L, d)
    return out.transpose(1, 2).contiguous(), weights

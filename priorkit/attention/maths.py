"""The maths every prior layer shares (pure torch, no transformers): the prior checked and
viewed as (B, 1|H, L, L), the padding mask in additive form, the head selector, and the
eager attention ``softmax(raw * m + a) @ V`` the multiplicative modes and the ``eager``
kernel run.  Each mode's own maths (its multiplier, float mask, FlexAttention
``score_mod``, supervision loss) lives in that mode's file under ``builtin_modes/``.

Notation: ``raw = Q K^T`` (B, H, L, L), ``s`` the model's scaling (1/sqrt(d) for
BERT), ``A`` the additive padding mask (0 where allowed, dtype-min elsewhere),
``P`` the prior (B, 1, L, L) or (B, H, L, L).  What depends on P and the mask alone is
computed once per forward pass by the dispatcher (``shared.py``) and passed in.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from .errors import PriorShapeError

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

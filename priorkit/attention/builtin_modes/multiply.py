"""``multiply`` (Xia et al. 2021): ``softmax(raw * s * P + A)``.

It needs the logits themselves, so it runs eager maths in the layers that get the
prior; the scaling is folded into the multiplier and the mask addition into the same
``addcmul`` kernel (one pass over the (B, H, L, L) scores instead of three), and P stays
broadcast over heads unless ``heads`` is restricted or the prior is per head.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .. import kernels
from ..maths import additive_mask, eager_attention, head_selector
from ..mode import AttentionMode, Call, register_mode


@register_mode
class Multiply(AttentionMode):
    name = "multiply"

    def attend(self, layer, call: Call):
        q = call.query
        additive = call.once(("additive",), lambda: additive_mask(call.mask, call.dtype))
        if call.kernel == "flex":
            factor = call.once(("P",), lambda: call.prior4.to(call.dtype))
            heads = None if layer.heads is None else call.once(
                ("selected", layer.heads, q.shape[1]), lambda: layer.selected(q))
            return kernels.flex_forward(q, call.key, call.value, score_mod(factor, heads, additive), call.scaling)
        multiplier = call.once(("s*P", call.scaling, layer.heads), lambda: multiply_multiplier(
            call.prior4, call.scaling, head_selector(q.shape[1], layer.heads, call.device), call.dtype))
        return eager_attention(call.module, q, call.key, call.value, multiplier, additive, call.dropout)


def multiply_multiplier(prior4: Tensor, scaling: float, sel: Tensor | None, dtype: torch.dtype) -> Tensor:
    """``s * P`` (B, 1|H, L, L); heads outside ``sel`` get plain ``s``."""
    mult = prior4.to(dtype) * scaling
    if sel is not None:
        mult = torch.where(sel, mult, torch.tensor(scaling, dtype=dtype, device=mult.device))
    return mult


def score_mod(factor: Tensor, factor_heads: Tensor | None = None, additive: Tensor | None = None
              ) -> Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]:
    """FlexAttention ``score_mod``: ``score * F + A`` cell by cell, ``F = P[b, h, q, k]``, or
    ``1 + f_h (P - 1)`` with a per-head vector ``factor_heads`` (H,) (0/1: the chosen heads;
    ``gate`` passes its gates).  ``score`` is already ``s * q.k``."""
    p_at, a_at = kernels.cells(factor), kernels.cells(additive)

    def mod(score: Tensor, b: Tensor, h: Tensor, q: Tensor, k: Tensor) -> Tensor:
        p = p_at(b, h, q, k)
        if factor_heads is not None:
            p = 1 + factor_heads[h] * (p - 1)
        score = score * p
        return score if a_at is None else score + a_at(b, h, q, k)

    return mod

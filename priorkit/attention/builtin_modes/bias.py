"""``bias``: ``softmax(raw * s + A + lam * log(max(P, eps)))``: the prior folded into the
float mask, so the model's own kernel does all the work."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .. import kernels
from ..errors import PriorAttentionConfigError
from ..maths import head_selector
from ..mode import AttentionMode, Call, register_mode


@register_mode
class Bias(AttentionMode):
    name = "bias"
    options = {"lam": 1.0, "eps": 1e-2}

    def check_options(self, options):
        if options["eps"] <= 0:
            raise PriorAttentionConfigError(f"{self.name} option eps={options['eps']} must be > 0 (it bounds log(P)).")

    def attend(self, layer, call: Call):
        lam, eps = layer.options["lam"], layer.options["eps"]
        float_mask = call.once(("bias", lam, eps, layer.heads), lambda: bias_mask(
            call.prior4, call.mask, lam, eps, head_selector(call.query.shape[1], layer.heads, call.device),
            call.dtype))
        if call.kernel == "flex":
            return kernels.flex_forward(call.query, call.key, call.value, score_mod(float_mask), call.scaling)
        return call.stock(float_mask)


def bias_mask(
    prior4: Tensor, mask: Tensor | None, lam: float, eps: float, sel: Tensor | None, dtype: torch.dtype
) -> Tensor:
    """The float mask ``A + lam * log(max(P, eps))`` (B, 1|H, L, L) for the model's own kernel.

    Computed in float32 (in place after the first pass: clamp, log, scale, mask) and,
    for half dtypes, clamped to the dtype's range before the cast, so a float16 mask
    cannot overflow to -inf (a fully -inf row would give NaN).  A boolean mask is
    applied with ``masked_fill_`` (dtype-min where a key is padding), a float mask added.
    """
    bias = torch.clamp_min(prior4.float(), eps).log_()  # (B, 1|H, L, L), a fresh float32 tensor
    if lam != 1.0:
        bias.mul_(lam)
    if sel is not None:
        bias = bias * sel  # heads outside ``sel``: 0
    lowest = torch.finfo(dtype).min
    if mask is not None:
        if mask.dtype == torch.bool:
            if torch.broadcast_shapes(mask.shape, bias.shape) == bias.shape:
                bias.masked_fill_(mask.logical_not(), lowest)
            else:
                bias = torch.where(mask, bias, lowest)
        elif torch.broadcast_shapes(mask.shape, bias.shape) == bias.shape:
            bias.add_(mask)
            bias.clamp_min_(lowest)
        else:
            bias = (bias + mask.float()).clamp_min_(lowest)
    if dtype != torch.float32:
        bias.clamp_min_(lowest)
    return bias.to(dtype)


def score_mod(float_mask: Tensor) -> Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]:
    """FlexAttention ``score_mod``: ``score + M[b, h, q, k]``, ``M`` the fused float mask."""
    m_at = kernels.cells(float_mask)

    def mod(score: Tensor, b: Tensor, h: Tensor, q: Tensor, k: Tensor) -> Tensor:
        return score + m_at(b, h, q, k)

    return mod

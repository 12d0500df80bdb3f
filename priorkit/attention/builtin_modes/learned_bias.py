"""``learned_bias``: ``bias`` with one learnable strength ``lam_h`` per head, starting at
``init`` (0: the stock model), so the data decides how much prior each head takes, and
in which direction."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .. import kernels
from ..maths import additive_mask
from ..mode import AttentionMode, Call, register_mode
from .bias import Bias


@register_mode
class LearnedBias(AttentionMode):
    name = "learned_bias"
    options = {"init": 0.0, "eps": 1e-2}
    learnable = "prior_strength"
    learnable_label = "strength"
    check_options = Bias.check_options

    def attend(self, layer, call: Call):
        eps = layer.options["eps"]
        strength = layer.head_vector(call.module, call.query, self.learnable)
        log_p = call.once(("log P", eps), lambda: log_prior(call.prior4, eps))
        additive32 = call.once(("additive32",), lambda: additive_mask(call.mask, torch.float32))
        if call.kernel == "flex":
            return kernels.flex_forward(call.query, call.key, call.value, score_mod(log_p, strength, additive32),
                                        call.scaling)
        float_mask = learned_bias_mask(call.prior4, call.mask, strength, eps, call.dtype, log_p, additive32)
        return call.stock(float_mask)


def log_prior(prior4: Tensor, eps: float) -> Tensor:
    """``log(max(P, eps))`` in float32 (B, 1|H, L, L): the additive form of a prior."""
    return torch.clamp_min(prior4.float(), eps).log_()


def learned_bias_mask(
    prior4: Tensor, mask: Tensor | None, strength: Tensor, eps: float, dtype: torch.dtype,
    log_p: Tensor | None = None, additive: Tensor | None = None,
) -> Tensor:
    """The float mask ``A + lam_h * log(max(P, eps))`` (B, H, L, L); ``strength`` is (H,).

    Differentiable in ``strength`` (SDPA passes gradients to a float ``attn_mask``).
    Heads outside ``heads=`` have strength 0.  ``log_p`` (:func:`log_prior`) and
    ``additive`` (the padding mask as float32, :func:`additive_mask`) are the same in
    every layer of a forward pass; given them, the (B, H, L, L) mask is one ``addcmul``.
    """
    if log_p is None:
        log_p = log_prior(prior4, eps)
    if additive is None and mask is not None:
        additive = additive_mask(mask, torch.float32)
    weights = strength.float().view(1, -1, 1, 1)
    out = log_p * weights if additive is None else torch.addcmul(additive, log_p, weights)  # (B, H, L, L)
    if dtype == torch.float32 and additive is None:
        return out  # finite: log_p >= log(eps)
    return out.clamp_min_(torch.finfo(dtype).min).to(dtype)  # in place: no extra (B, H, L, L) copy


def score_mod(log_p: Tensor, strength: Tensor, additive: Tensor | None = None
              ) -> Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]:
    """FlexAttention ``score_mod``: ``score + lam_h * LP[b, h, q, k] + A`` (``strength`` (H,))."""
    lp_at, a_at = kernels.cells(log_p), kernels.cells(additive)

    def mod(score: Tensor, b: Tensor, h: Tensor, q: Tensor, k: Tensor) -> Tensor:
        score = score + strength[h] * lp_at(b, h, q, k)
        return score if a_at is None else score + a_at(b, h, q, k)

    return mod

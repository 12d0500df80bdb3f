"""``gate``: ``softmax(raw * s * (1 + g_h (P - 1)) + A)``, one learnable ``g_h`` per head
(``g = 1`` is ``multiply``, ``g = 0`` the stock model)."""
from __future__ import annotations

import torch
from torch import Tensor

from .. import kernels
from ..maths import additive_mask, eager_attention
from ..mode import AttentionMode, Call, register_mode
from .multiply import score_mod as multiply_score_mod


@register_mode
class Gate(AttentionMode):
    name = "gate"
    options = {"init": 1.0}
    learnable = "prior_gate"
    learnable_label = "gate"

    def attend(self, layer, call: Call):
        q = call.query
        additive = call.once(("additive",), lambda: additive_mask(call.mask, call.dtype))
        gate = layer.head_vector(call.module, q, self.learnable)
        if call.kernel == "flex":
            factor = call.once(("P",), lambda: call.prior4.to(call.dtype))
            return kernels.flex_forward(q, call.key, call.value, score_mod(factor, gate, additive), call.scaling)
        centred = call.once(("P-1",), lambda: call.prior4.to(call.dtype) - 1)
        multiplier = gate_multiplier(call.prior4, call.scaling, gate, call.dtype, centred)
        return eager_attention(call.module, q, call.key, call.value, multiplier, additive, call.dropout)


def gate_multiplier(prior4: Tensor, scaling: float, gate: Tensor, dtype: torch.dtype,
                    centred: Tensor | None = None) -> Tensor:
    """``s * (1 + g_h (P - 1))`` (B, H, L, L); ``gate`` is (H,) with 0 for ungated heads.

    ``centred`` is ``P - 1`` in ``dtype`` when the caller already has it (it is the same in
    every gated layer of a forward pass); then this is one ``addcmul`` pass.
    """
    scaled_gate = (gate.to(dtype) * scaling).view(1, -1, 1, 1)  # (1, H, 1, 1)
    if centred is None:
        centred = prior4.to(dtype) - 1
    return torch.addcmul(torch.tensor(scaling, dtype=dtype, device=prior4.device), centred, scaled_gate)


def score_mod(factor: Tensor, gate: Tensor, additive: Tensor | None = None):
    """FlexAttention ``score_mod``: ``score * (1 + g_h (P - 1)) + A`` (``gate`` (H,))."""
    return multiply_score_mod(factor, gate, additive)

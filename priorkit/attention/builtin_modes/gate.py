"""``gate``: ``softmax(raw * s * (1 + g_h (P - 1)) + A)``, one learnable ``g_h`` per head
(``g = 1`` is ``multiply``, ``g = 0`` the stock model)."""
from __future__ import annotations

from .. import kernels, modes
from ..mode import AttentionMode, Call, register_mode


@register_mode
class Gate(AttentionMode):
    name = "gate"
    options = {"init": 1.0}
    learnable = "prior_gate"

    def attend(self, layer, call: Call):
        q = call.query
        additive = call.once(("additive",), lambda: modes.additive_mask(call.mask, call.dtype))
        gate = layer.head_vector(call.module, q, self.learnable)
        if call.kernel == "flex":
            factor = call.once(("P",), lambda: call.prior4.to(call.dtype))
            return kernels.flex_forward(q, call.key, call.value, kernels.make_score_mod(
                factor=factor, factor_heads=gate, additive=additive), call.scaling)
        centred = call.once(("P-1",), lambda: call.prior4.to(call.dtype) - 1)
        multiplier = modes.gate_multiplier(call.prior4, call.scaling, gate, call.dtype, centred)
        return modes.eager_attention(call.module, q, call.key, call.value, multiplier, additive, call.dropout)

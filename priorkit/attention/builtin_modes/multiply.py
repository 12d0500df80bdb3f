"""``multiply`` (Xia et al. 2021): ``softmax(raw * s * P + A)``."""
from __future__ import annotations

from .. import kernels, modes
from ..mode import AttentionMode, Call, register_mode


@register_mode
class Multiply(AttentionMode):
    name = "multiply"

    def attend(self, layer, call: Call):
        q = call.query
        additive = call.once(("additive",), lambda: modes.additive_mask(call.mask, call.dtype))
        if call.kernel == "flex":
            factor = call.once(("P",), lambda: call.prior4.to(call.dtype))
            heads = None if layer.heads is None else call.once(
                ("selected", layer.heads, q.shape[1]), lambda: layer.selected(q))
            return kernels.flex_forward(q, call.key, call.value, kernels.make_score_mod(
                factor=factor, factor_heads=heads, additive=additive), call.scaling)
        multiplier = call.once(("s*P", call.scaling, layer.heads), lambda: modes.multiply_multiplier(
            call.prior4, call.scaling, modes.head_selector(q.shape[1], layer.heads, call.device), call.dtype))
        return modes.eager_attention(call.module, q, call.key, call.value, multiplier, additive, call.dropout)

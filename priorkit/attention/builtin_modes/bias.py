"""``bias``: ``softmax(raw * s + A + lam * log(max(P, eps)))``: the prior folded into the
float mask, so the model's own kernel does all the work."""
from __future__ import annotations

from .. import kernels, modes
from ..errors import PriorAttentionConfigError
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
        float_mask = call.once(("bias", lam, eps, layer.heads), lambda: modes.bias_mask(
            call.prior4, call.mask, lam, eps, modes.head_selector(call.query.shape[1], layer.heads, call.device),
            call.dtype))
        if call.kernel == "flex":
            return kernels.flex_forward(call.query, call.key, call.value,
                                        kernels.make_score_mod(additive=float_mask), call.scaling)
        return call.stock(float_mask)

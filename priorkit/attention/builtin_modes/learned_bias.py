"""``learned_bias``: ``bias`` with one learnable strength ``lam_h`` per head, starting at
``init`` (0: the stock model), so the data decides how much prior each head takes."""
from __future__ import annotations

import torch

from .. import kernels, modes
from ..mode import AttentionMode, Call, register_mode
from .bias import Bias


@register_mode
class LearnedBias(AttentionMode):
    name = "learned_bias"
    options = {"init": 0.0, "eps": 1e-2}
    learnable = "prior_strength"
    check_options = Bias.check_options

    def attend(self, layer, call: Call):
        eps = layer.options["eps"]
        strength = layer.head_vector(call.module, call.query, self.learnable)
        log_p = call.once(("log P", eps), lambda: modes.log_prior(call.prior4, eps))
        additive32 = call.once(("additive32",), lambda: modes.additive_mask(call.mask, torch.float32))
        if call.kernel == "flex":
            return kernels.flex_forward(call.query, call.key, call.value, kernels.make_score_mod(
                log_p=log_p, log_heads=strength, additive=additive32), call.scaling)
        float_mask = modes.learned_bias_mask(call.prior4, call.mask, strength, eps, call.dtype, log_p, additive32)
        return call.stock(float_mask)

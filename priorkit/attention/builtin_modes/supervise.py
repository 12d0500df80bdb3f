"""``supervise``: the stock forward pass; in training an auxiliary loss ``weight * KL(T || A)``
pulls the chosen heads' attention towards the row-normalised prior ``T ~ P ** power``
(Strubell et al. 2018).  Inference costs nothing extra."""
from __future__ import annotations

import torch

from .. import modes
from ..errors import PriorAttentionConfigError
from ..mode import SUPERVISION_ATTR, AttentionMode, Call, register_mode


@register_mode
class Supervise(AttentionMode):
    name = "supervise"
    options = {"weight": 0.1, "power": 1.0}

    def check_options(self, options):
        if options["weight"] < 0 or options["power"] <= 0:
            raise PriorAttentionConfigError(
                f"supervise options weight={options['weight']} must be >= 0 and power={options['power']} > 0.")

    def attend(self, layer, call: Call):
        if call.module.training and torch.is_grad_enabled():
            power = layer.options["power"]
            parts = call.once(("supervise", layer.heads, power),
                              lambda: modes.supervision_parts(call.mask, call.prior4, layer.heads, power))
            kl = modes.supervision_kl(call.query, call.key, call.mask, call.prior4, call.scaling, layer.heads,
                                      power, parts)
            call.module.__dict__[SUPERVISION_ATTR] = kl * layer.options["weight"]
        return call.base(call.module, call.query, call.key, call.value, call.mask, **call.kwargs)

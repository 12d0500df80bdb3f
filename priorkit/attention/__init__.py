"""Prior-guided attention for Hugging Face transformers 5 encoders, without forking them.

    from priorkit.attention import enable_prior_attention, disable_prior_attention
    enable_prior_attention(model, layers=(0,), mode="multiply")   # in place, returns model
    out = model(**batch, prior=P)                                  # P: (B, L, L) or (B, H, L, L)
    disable_prior_attention(model)                                 # exactly the stock model again

Modules: ``mode`` (a mode as an object, the registry of modes; ``builtin_modes/``: one file
per built-in mode, each with all its maths), ``maths`` (what the modes share), ``dispatch`` (what is registered in transformers'
AttentionInterface / AttentionMaskInterface), ``kernels`` (SDPA / FlexAttention / eager,
``PRIORKIT_ATTENTION_KERNEL``), ``shared`` (tensors computed once per forward pass),
``architectures`` (supported encoders), ``checkpoint`` (gates after from_pretrained),
``api`` (enable/disable), ``guard`` (``prior=`` on a model that was never enabled raises).
See docs/attention.md.
"""
from __future__ import annotations

from .api import PriorSettings, disable_prior_attention, enable_prior_attention, prior_parameters, supervision_loss
from .architectures import supported_architectures
from .errors import PriorAttentionConfigError, PriorShapeError, UnsupportedModelError
from .guard import PriorNotEnabledError  # importing it guards models that were never enabled
from .mode import MODES, AttentionMode, Call, register_mode

__all__ = [
    "enable_prior_attention",
    "disable_prior_attention",
    "supervision_loss",
    "prior_parameters",
    "supported_architectures",
    "PriorSettings",
    "MODES",
    "AttentionMode",
    "Call",
    "register_mode",
    "PriorShapeError",
    "PriorAttentionConfigError",
    "UnsupportedModelError",
    "PriorNotEnabledError",
]

"""The attention function priorkit registers in transformers, and its per-layer dispatch.

transformers 5 looks attention up by name at every call
(``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager)``) and
builds the padding mask with the function registered under the same name in
``ALL_MASK_ATTENTION_FUNCTIONS`` -- a name without a mask function silently gets
``mask=None``.  priorkit therefore registers one dispatcher per base implementation,
``priorkit_sdpa`` and ``priorkit_eager``, each with the base's own mask function, and
``enable_prior_attention`` switches ``config._attn_implementation`` to it.

At every call the dispatcher looks at the module it was called for:

* no ``prior=`` keyword, or a layer without a :class:`LayerPrior`: the base
  implementation runs with exactly the arguments it would have had (bit-identical);
* a layer with a :class:`LayerPrior`: the mode's maths run with the prior.
"""
from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from . import modes
from .architectures import BASE_IMPLEMENTATIONS
from .errors import UnsupportedModelError

PREFIX = "priorkit_"
#: attribute holding a layer's LayerPrior on its attention module (removed by disable)
LAYER_ATTR = "_priorkit_layer"
#: name of the learnable per-head gate parameter on a gated attention module
GATE_PARAM = modes.LEARNABLE["gate"]
#: attribute holding the last training forward's supervision loss (``supervise`` mode)
SUPERVISION_ATTR = "_priorkit_supervision"


@dataclasses.dataclass(frozen=True)
class LayerPrior:
    """What one attention layer does with the prior; lives on the module as ``_priorkit_layer``."""

    layer: int
    mode: str
    heads: tuple[int, ...] | None  # None = all heads
    options: dict[str, float]

    def attend(
        self,
        module: nn.Module,
        base: Callable[..., tuple[Tensor, Tensor | None]],
        query: Tensor,  # (B, H, L, d)
        key: Tensor,  # (B, Hkv, L, d)
        value: Tensor,  # (B, Hkv, L, d)
        mask: Tensor | None,  # (B, 1, L, L) bool / float, or None without padding
        prior: Tensor,  # (B, L, L) or (B, H, L, L)
        kwargs: dict[str, Any],
    ) -> tuple[Tensor, Tensor | None]:
        prior4 = modes.prior_as_4d(prior, query, key)  # (B, 1|H, L, L)
        dtype = query.dtype
        scaling = kwargs.get("scaling")
        if scaling is None:
            scaling = query.shape[-1] ** -0.5
        if self.mode == "supervise":
            # the stock computation; the prior only shapes the training loss
            if module.training and torch.is_grad_enabled():
                kl = modes.supervision_kl(query, key, mask, prior4, scaling, self.heads, self.options["power"])
                module.__dict__[SUPERVISION_ATTR] = kl * self.options["weight"]
            return base(module, query, key, value, mask, **kwargs)
        if self.mode == "learned_bias":
            strength = self.head_vector(module, query, modes.LEARNABLE["learned_bias"])
            float_mask = modes.learned_bias_mask(prior4, mask, strength, self.options["eps"], dtype)
            return base(module, query, key, value, float_mask, **kwargs)
        sel = modes.head_selector(query.shape[1], self.heads, query.device)
        if self.mode == "bias":
            float_mask = modes.bias_mask(prior4, mask, self.options["lam"], self.options["eps"], sel, dtype)
            return base(module, query, key, value, float_mask, **kwargs)
        if self.mode == "multiply":
            multiplier = modes.multiply_multiplier(prior4, scaling, sel, dtype)
        else:  # gate
            multiplier = modes.gate_multiplier(prior4, scaling, self.head_vector(module, query, GATE_PARAM), dtype)
        return modes.eager_attention(
            module, query, key, value, multiplier, modes.additive_mask(mask, dtype), kwargs.get("dropout", 0.0)
        )

    def head_vector(self, module: nn.Module, query: Tensor, name: str) -> Tensor:
        """The (H,) vector of a learnable per-head parameter: its entries for the chosen
        heads, 0 (= stock) elsewhere."""
        param = getattr(module, name)  # (n_chosen,)
        if self.heads is None:
            return param
        index = torch.tensor(self.heads, device=param.device)
        return torch.zeros(query.shape[1], dtype=param.dtype, device=param.device).index_put((index,), param)


@functools.cache
def _model_eager(cls: type) -> Callable[..., tuple[Tensor, Tensor | None]]:
    """The model file's own ``eager_attention_forward`` (what ``get_interface`` defaults to)."""
    fn = getattr(sys.modules[cls.__module__], "eager_attention_forward", None)
    if fn is None:
        raise UnsupportedModelError(
            f"{cls.__module__} defines no eager_attention_forward; load the model with "
            "attn_implementation='sdpa' before enable_prior_attention."
        )
    return fn


def _make_dispatcher(base: str) -> Callable[..., tuple[Tensor, Tensor | None]]:
    def prior_attention(
        module: nn.Module,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attention_mask: Tensor | None,
        prior: Tensor | None = None,
        **kwargs: Any,
    ) -> tuple[Tensor, Tensor | None]:
        fn = _model_eager(type(module)) if base == "eager" else ALL_ATTENTION_FUNCTIONS[base]
        spec: LayerPrior | None = module.__dict__.get(LAYER_ATTR)
        if prior is None or spec is None:
            return fn(module, query, key, value, attention_mask, **kwargs)
        return spec.attend(module, fn, query, key, value, attention_mask, prior, kwargs)

    prior_attention.__name__ = prior_attention.__qualname__ = f"{PREFIX}{base}_attention"
    prior_attention.__doc__ = (
        f"priorkit's dispatcher over '{base}': layers enabled for a prior run its maths when "
        "model(..., prior=P) is called; all other calls go to the base implementation unchanged."
    )
    return prior_attention


def _make_mask(base: str) -> Callable[..., Any]:
    def prior_mask(*args: Any, **kwargs: Any) -> Any:
        # the base's own mask, so layers without a prior get exactly what they expect
        return ALL_MASK_ATTENTION_FUNCTIONS[base](*args, **kwargs)

    prior_mask.__name__ = prior_mask.__qualname__ = f"{PREFIX}{base}_mask"
    return prior_mask


def implementation_name(base: str) -> str:
    """``sdpa`` -> ``priorkit_sdpa``: the name registered in both interfaces."""
    return PREFIX + base


def base_of(name: str | None) -> str | None:
    """``priorkit_sdpa`` -> ``sdpa``; None when ``name`` is not one of priorkit's."""
    if name and name.startswith(PREFIX) and name[len(PREFIX):] in BASE_IMPLEMENTATIONS:
        return name[len(PREFIX):]
    return None


def register() -> None:
    """Register the dispatchers and their masks (idempotent; done on import)."""
    for base in BASE_IMPLEMENTATIONS:
        name = implementation_name(base)
        if name not in AttentionInterface._global_mapping:
            AttentionInterface.register(name, _make_dispatcher(base))
        if name not in AttentionMaskInterface._global_mapping:
            AttentionMaskInterface.register(name, _make_mask(base))


register()

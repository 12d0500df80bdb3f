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

from . import kernels, modes, shared
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
        dtype, device, opts = query.dtype, query.device, self.options
        scaling = kwargs.get("scaling")
        if scaling is None:
            scaling = query.shape[-1] ** -0.5

        def once(key_: tuple, make: Callable[[], Any]) -> Any:
            """Derived from the prior and the mask alone: computed by the first prior layer of
            this forward pass, reused by the others (see shared.py)."""
            return shared.per_forward(prior, mask, (*key_, dtype, device), make)

        if self.mode == "supervise":
            # the stock computation; the prior only shapes the training loss
            if module.training and torch.is_grad_enabled():
                power = opts["power"]
                parts = once(("supervise", self.heads, power),
                             lambda: modes.supervision_parts(mask, prior4, self.heads, power))
                kl = modes.supervision_kl(query, key, mask, prior4, scaling, self.heads, power, parts)
                module.__dict__[SUPERVISION_ATTR] = kl * opts["weight"]
            return base(module, query, key, value, mask, **kwargs)

        dropout = kwargs.get("dropout", 0.0)
        kernel = kernels.choose(query, module.training, dropout)
        if self.mode in ("multiply", "gate"):
            additive = once(("additive",), lambda: modes.additive_mask(mask, dtype))
            if kernel == "flex":
                factor = once(("P",), lambda: prior4.to(dtype))
                if self.mode == "gate":
                    heads_vec = self.head_vector(module, query, GATE_PARAM)
                else:
                    heads_vec = None if self.heads is None else once(
                        ("selected", self.heads, query.shape[1]), lambda: self.selected(query))
                return kernels.flex_forward(query, key, value, kernels.make_score_mod(
                    factor=factor, factor_heads=heads_vec, additive=additive), scaling)
            if self.mode == "multiply":
                multiplier = once(("s*P", scaling, self.heads), lambda: modes.multiply_multiplier(
                    prior4, scaling, modes.head_selector(query.shape[1], self.heads, device), dtype))
            else:
                centred = once(("P-1",), lambda: prior4.to(dtype) - 1)
                multiplier = modes.gate_multiplier(prior4, scaling, self.head_vector(module, query, GATE_PARAM),
                                                   dtype, centred)
            return modes.eager_attention(module, query, key, value, multiplier, additive, dropout)

        if self.mode == "bias":
            lam, eps = opts["lam"], opts["eps"]
            float_mask = once(("bias", lam, eps, self.heads), lambda: modes.bias_mask(
                prior4, mask, lam, eps, modes.head_selector(query.shape[1], self.heads, device), dtype))
            if kernel == "flex":
                return kernels.flex_forward(query, key, value, kernels.make_score_mod(additive=float_mask), scaling)
        else:  # learned_bias
            eps = opts["eps"]
            strength = self.head_vector(module, query, modes.LEARNABLE["learned_bias"])
            log_p = once(("log P", eps), lambda: modes.log_prior(prior4, eps))
            additive32 = once(("additive32",), lambda: modes.additive_mask(mask, torch.float32))
            if kernel == "flex":
                return kernels.flex_forward(query, key, value, kernels.make_score_mod(
                    log_p=log_p, log_heads=strength, additive=additive32), scaling)
            float_mask = modes.learned_bias_mask(prior4, mask, strength, eps, dtype, log_p, additive32)
        if kernel == "eager":
            one = once(("scaling", scaling), lambda: torch.tensor(scaling, dtype=dtype, device=device))
            return modes.eager_attention(module, query, key, value, one, float_mask, dropout)
        return base(module, query, key, value, float_mask, **kwargs)

    def selected(self, query: Tensor) -> Tensor:
        """(H,) 1 for the heads in ``heads=``, 0 elsewhere, in the query's dtype."""
        out = torch.zeros(query.shape[1], dtype=query.dtype, device=query.device)
        out[list(self.heads)] = 1
        return out

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

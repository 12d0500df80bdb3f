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
* a layer with a :class:`LayerPrior`: its mode's maths run with the prior (the mode
  objects of :mod:`priorkit.attention.mode`'s registry).
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

from . import builtin_modes, maths  # noqa: F401 - builtin_modes: importing it registers the built-in modes
from .architectures import BASE_IMPLEMENTATIONS
from .errors import UnsupportedModelError
from .mode import Call, get_mode

PREFIX = "priorkit_"
#: attribute holding a layer's LayerPrior on its attention module (removed by disable)
LAYER_ATTR = "_priorkit_layer"


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
        """The layer's mode (from the registry) runs its maths on this call."""
        scaling = kwargs.get("scaling")
        if scaling is None:
            scaling = query.shape[-1] ** -0.5
        call = Call(module, base, query, key, value, mask, prior, maths.prior_as_4d(prior, query, key), kwargs,
                    scaling)
        return get_mode(self.mode).attend(self, call)

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
        layer_prior: LayerPrior | None = module.__dict__.get(LAYER_ATTR)
        if prior is None or layer_prior is None:
            return fn(module, query, key, value, attention_mask, **kwargs)
        return layer_prior.attend(module, fn, query, key, value, attention_mask, prior, kwargs)

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

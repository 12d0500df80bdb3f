"""Prior attention for encoders whose self-attention does not go through transformers'
``AttentionInterface`` (MPNet, DeBERTa-v2/v3): one small adapter per architecture.

Two things are missing in such a model, and an adapter supplies both:

* **the prior does not reach the attention module.**  MPNet's and DeBERTa-v2's model,
  encoder, layer and attention modules do not pass ``**kwargs`` down.  A forward pre-hook
  on the model (and on its base model, when that is another module) takes ``prior`` out
  of the call's keywords and pushes it on a small stack the model's attention modules
  share (:class:`Routing`); a forward hook registered with ``always_call=True`` pops it,
  so a forward pass that raised leaves nothing behind.  A nested call without ``prior=``
  (the head calling its base model) sees the enclosing call's prior.
* **there is no attention function to swap.**  Each primed layer's self-attention module
  gets an instance-level ``forward`` (the architecture's file, e.g. ``mpnet.py``): it
  computes the query, key, value and the model's own additive terms (MPNet's relative
  position bias, DeBERTa's disentangled c2p/p2c scores, the padding mask) exactly as the
  stock module does, then hands them to the layer's mode as a :class:`Call` -- the same
  mode objects, the same maths, the same kernels as for AttentionInterface models (except
  that a training forward, whose position terms need gradients, keeps to the eager maths
  rather than FlexAttention on CUDA).  The
  model's own additive terms travel as the call's ``mask`` (a float tensor), so every
  mode treats them as it treats the padding mask: ``multiply`` and ``gate`` scale the
  content scores ``s * Q K^T`` and leave the position terms as they are; ``bias`` and
  ``learned_bias`` add ``lam * log P`` next to them; ``supervise`` compares the prior
  with the attention the layer really computes.  Without ``prior=``, or in a layer that
  is not primed, the class's own ``forward`` runs, unchanged.

Removing an adapter deletes the instance ``forward``, the routing reference and the
hooks: the modules are the stock modules again (their ``__dict__`` as before).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from .. import kernels
from ..dispatch import LAYER_ATTR, LayerPrior
from ..errors import PriorAttentionConfigError
from ..maths import eager_attention, prior_as_4d
from ..mode import Call, get_mode

#: attribute on a model holding its Routing (removed by uninstall)
ROUTING_ATTR = "_priorkit_routing"
#: attribute on an adapted attention module pointing at the model's Routing
MODULE_ROUTING_ATTR = "_priorkit_route"


@dataclasses.dataclass(frozen=True)
class Adapter:
    """How one architecture's self-attention module takes a prior."""

    model_type: str
    #: the self-attention class the adapter was written against (checked at install)
    module_class: str
    #: ``forward(module, *args, **kwargs)`` installed on each primed module; it calls
    #: :func:`current_prior` and falls back to the class's own forward without one
    forward: Callable[..., Any]
    #: supports activation (gradient) checkpointing with a prior (recomputation would lose it)
    checkpointing: bool = False


#: model_type -> Adapter
ADAPTERS: dict[str, Adapter] = {}


def register_adapter(adapter: Adapter) -> Adapter:
    ADAPTERS[adapter.model_type] = adapter
    return adapter


class Frame:
    """One forward pass of the model: its prior and what its layers share."""

    __slots__ = ("prior", "memo")

    def __init__(self, prior: Tensor | None) -> None:
        self.prior = prior
        #: architecture-specific tensors computed by the first primed layer (see ``shared``)
        self.memo: dict[Any, tuple[tuple[Any, ...], Any]] = {}

    def shared(self, key: str, sources: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()`` once per forward pass for the same ``sources`` objects (compared by identity)."""
        hit = self.memo.get(key)
        if hit is not None and len(hit[0]) == len(sources) and all(a is b for a, b in zip(hit[0], sources)):
            return hit[1]
        value = make()
        self.memo[key] = (sources, value)
        return value


class Routing:
    """The prior of the forward passes under way (a stack: a head calls its base model)."""

    def __init__(self, model: nn.Module, adapter: Adapter) -> None:
        self.model_type = adapter.model_type
        self.checkpointing = adapter.checkpointing
        self.model_name = type(model).__name__
        self.frames: list[Frame] = []

    def enter(self, module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        prior = kwargs.pop("prior", None)
        if prior is None and self.frames:
            prior = self.frames[-1].prior  # the head's call, seen by its base model
        elif prior is not None and not self.checkpointing and module.training and torch.is_grad_enabled() \
                and getattr(module, "is_activation_checkpointing", False):
            raise PriorAttentionConfigError(
                f"{self.model_name} (model_type={self.model_type!r}) recomputes its layers in the backward "
                "pass (activation checkpointing), where prior= is no longer at hand: call "
                "model.gradient_checkpointing_disable() to train it with prior attention.")
        self.frames.append(Frame(prior))
        return args, kwargs

    def leave(self, module: nn.Module, args: tuple, output: Any) -> None:
        if self.frames:
            self.frames.pop()

    @property
    def frame(self) -> Frame | None:
        return self.frames[-1] if self.frames else None


def current(module: nn.Module) -> tuple[LayerPrior, Frame] | None:
    """The module's LayerPrior and the forward pass's frame when this call gets the prior; else None."""
    layer = module.__dict__.get(LAYER_ATTR)
    routing: Routing | None = module.__dict__.get(MODULE_ROUTING_ATTR)
    if layer is None or routing is None:
        return None
    frame = routing.frame
    if frame is None or frame.prior is None:
        return None
    return layer, frame


def eager_base(module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None,
               scaling: float, dropout: float = 0.0, **_: Any) -> tuple[Tensor, Tensor]:
    """The stock maths of these models, ``softmax(s Q K^T + M) V`` with dropout on the weights,
    where ``M`` holds the model's additive terms; what the modes call ``stock(mask)``."""
    s = torch.tensor(scaling, dtype=query.dtype, device=query.device)
    return eager_attention(module, query, key, value, s, attention_mask, dropout)


def attend(module: nn.Module, layer: LayerPrior, frame: Frame, query: Tensor, key: Tensor, value: Tensor,
           additive: Tensor | None, scaling: float, dropout: float) -> tuple[Tensor, Tensor | None]:
    """The layer's mode on (B, H, L, d) inputs with the model's additive terms ``additive``
    (B, 1|H, L, L, float); returns (B, L, H, d) and the weights (or None)."""
    kwargs = {"dropout": dropout if module.training else 0.0, "scaling": scaling}
    call = Call(module, eager_base, query, key, value, additive, frame.prior,
                prior_as_4d(frame.prior, query, key), kwargs, scaling)
    if additive is not None and additive.requires_grad:
        # the position terms are learnt: keep them out of FlexAttention's captured tensors, whose
        # gradients have not been checked here (no GPU was lent); the eager maths carry them
        call.__dict__["kernel"] = "eager" if kernels.requested() == "eager" else "sdpa"
    return get_mode(layer.mode).attend(layer, call)


def adapter_for(model: nn.Module) -> Adapter | None:
    return ADAPTERS.get(getattr(getattr(model, "config", None), "model_type", None))


def install(model: nn.Module, modules: list[nn.Module], layers: tuple[int, ...]) -> None:
    """Route ``prior=`` to ``modules[i]`` for ``i`` in ``layers`` (a no-op for AttentionInterface models)."""
    adapter = adapter_for(model)
    if adapter is None:
        return
    for i in layers:
        if type(modules[i]).__name__ != adapter.module_class:
            raise PriorAttentionConfigError(
                f"layer {i}'s attention module is a {type(modules[i]).__name__}, the {adapter.model_type} "
                f"adapter was written for {adapter.module_class}")
    routing = Routing(model, adapter)
    targets = [model]
    base = getattr(model, "base_model", model)
    if base is not model:
        targets.append(base)
    for target in targets:
        target.register_forward_pre_hook(routing.enter, with_kwargs=True)
        target.register_forward_hook(routing.leave, always_call=True)
    model.__dict__[ROUTING_ATTR] = routing
    for i in layers:
        module = modules[i]
        module.__dict__[MODULE_ROUTING_ATTR] = routing
        module.__dict__["forward"] = adapter.forward.__get__(module, type(module))


def uninstall(model: nn.Module, modules: list[nn.Module]) -> None:
    """Undo :func:`install`: hooks, routing references and instance forwards removed."""
    routing: Routing | None = model.__dict__.pop(ROUTING_ATTR, None)
    if routing is not None:
        base = getattr(model, "base_model", model)
        for target in {id(model): model, id(base): base}.values():
            _remove_hooks(target, routing)
        routing.frames.clear()
    for module in modules:
        if module.__dict__.pop(MODULE_ROUTING_ATTR, None) is not None:
            module.__dict__.pop("forward", None)


def _remove_hooks(module: nn.Module, routing: Routing) -> None:
    """Remove the routing's hooks from ``module``, found by owner rather than by handle, so a
    deep copy of an enabled model (whose handles would point at the original) disables alone."""
    for hooks, extras in ((module._forward_pre_hooks, (module._forward_pre_hooks_with_kwargs,)),
                          (module._forward_hooks, (module._forward_hooks_with_kwargs,
                                                   module._forward_hooks_always_called))):
        for key in [k for k, fn in hooks.items() if getattr(fn, "__self__", None) is routing]:
            del hooks[key]
            for extra in extras:
                extra.pop(key, None)

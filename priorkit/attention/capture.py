"""Attention weights captured from a model's real forward pass: :func:`capture_attention`.

SDPA and FlexAttention never materialise the (B, H, L, L) weights, so for the
duration of the ``with`` block the model runs its eager path: its attention
implementation is switched to the eager variant (``priorkit_sdpa`` ->
``priorkit_eager``, ``sdpa`` -> ``eager``) and priorkit's prior layers use their
eager kernel (``PRIORKIT_ATTENTION_KERNEL=eager``).  Every attention module then
returns ``(output, weights)``; a forward hook on the chosen layers' modules keeps
the weights.  The values are those of the model's own forward (eager and SDPA
agree to float rounding); nothing is recomputed here.

Whether the prior takes part is the caller's choice, and does not depend on
the attention mode: ``model(**batch, prior=P)`` applies it, a forward without
``prior=`` is exactly the stock model, which is what every mode gives with the
prior switched off (P = 1 for ``multiply``, gate or strength 0 for the others).
Everything is put back on leaving the block, also after an exception.

The adapted architectures (MPNet, DeBERTa-v2; ``architectures.ADAPTED``) return their
weights only when their caller asks (``output_attentions``): a forward pre-hook on the
recorded modules asks for them, whatever the model was called with.
"""
from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from .architectures import ADAPTED, attention_modules
from .errors import PriorAttentionConfigError
from .kernels import ENV as KERNEL_ENV

#: implementation name -> the one that returns attention weights
_EAGER = {"sdpa": "eager", "priorkit_sdpa": "priorkit_eager"}


class AttentionRecorder:
    """The weights of the recorded layers of the forward passes run inside the block."""

    def __init__(self, layers: Sequence[int]) -> None:
        self.layers = tuple(layers)
        self.weights: dict[int, list[Tensor]] = {i: [] for i in self.layers}

    def take(self) -> dict[int, Tensor]:
        """Layer -> the last forward's weights (B, H, L, L) float32 on the CPU, and forget them."""
        out = {}
        for i in self.layers:
            if not self.weights[i]:
                raise PriorAttentionConfigError(f"layer {i} recorded no attention weights: run a forward "
                                                "pass inside capture_attention(...)")
            out[i] = self.weights[i][-1]
            self.weights[i].clear()
        return out


@contextlib.contextmanager
def capture_attention(model: nn.Module, layers: Sequence[int]) -> Iterator[AttentionRecorder]:
    """Record the attention weights of ``layers`` (indices into the model's layers) during the block."""
    modules = attention_modules(model)
    for i in layers:
        if not 0 <= i < len(modules):
            raise PriorAttentionConfigError(f"layer {i} is out of range: the model has layers 0-{len(modules) - 1}")
    recorder = AttentionRecorder(layers)
    config = model.config
    before_impl = config._attn_implementation
    before_kernel = os.environ.get(KERNEL_ENV)

    def hook_for(i: int):
        def keep(module: nn.Module, args: tuple, output: object) -> None:
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if not isinstance(weights, Tensor):
                raise PriorAttentionConfigError(
                    f"layer {i}'s {type(module).__name__} returned no attention weights; this architecture "
                    "does not return them from its eager path")
            recorder.weights[i].append(weights.detach().float().cpu())
        return keep

    handles = [modules[i].register_forward_hook(hook_for(i)) for i in layers]
    if config.model_type in ADAPTED:
        handles += [modules[i].register_forward_pre_hook(_ask_for_weights, with_kwargs=True) for i in layers]
    try:
        config._attn_implementation = _EAGER.get(before_impl, before_impl)
        os.environ[KERNEL_ENV] = "eager"
        with torch.no_grad():
            yield recorder
    finally:
        for h in handles:
            h.remove()
        config._attn_implementation = before_impl
        if before_kernel is None:
            os.environ.pop(KERNEL_ENV, None)
        else:
            os.environ[KERNEL_ENV] = before_kernel


def _ask_for_weights(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Set the module's ``output_attentions`` argument, passed by position or by name, to True."""
    names = list(inspect.signature(type(module).forward).parameters)[1:]  # without self
    at = names.index("output_attentions")
    if len(args) > at:
        args = (*args[:at], True, *args[at + 1:])
    else:
        kwargs["output_attentions"] = True
    return args, kwargs

"""Which kernel runs a prior layer: SDPA with a fused float mask, FlexAttention, or eager maths.

``PRIORKIT_ATTENTION_KERNEL`` (read at every call, so a test or a notebook can switch it):

* unset or ``auto``: ``flex`` on CUDA when FlexAttention can run the call, ``sdpa`` elsewhere;
* ``sdpa``: ``bias`` / ``learned_bias`` hand one fused float mask (padding + prior) to the
  model's own kernel; ``multiply`` / ``gate`` run priorkit's eager maths with the scaling,
  the prior and the padding mask fused into one ``addcmul`` pass;
* ``flex``: ``torch.nn.attention.flex_attention`` with a ``score_mod`` (each mode's file
  writes its own) that applies the prior (and the padding mask) inside the kernel, so no (B, H, L, L) tensor is built
  outside it.  Compiled on CUDA; on other devices it runs unfused (PyTorch's reference
  implementation), which is only useful to check values;
* ``eager``: every mode through priorkit's eager maths, ``softmax(raw * m + a)``: the
  reference the fast paths are tested against.

FlexAttention has no attention dropout and, on CPU, no backward pass: a call that needs
either (a training forward with attention dropout, or a CPU forward with gradients) falls
back to the ``sdpa`` choice.  ``supervise`` never changes the forward pass, so the kernel
does not matter to it.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable

import torch
from torch import Tensor

from .errors import PriorAttentionConfigError

ENV = "PRIORKIT_ATTENTION_KERNEL"
KERNELS = ("sdpa", "flex", "eager")


def requested() -> str | None:
    """The kernel ``PRIORKIT_ATTENTION_KERNEL`` asks for; None for automatic."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in KERNELS:
        raise PriorAttentionConfigError(
            f"{ENV}={os.environ[ENV]!r} is not one of auto, {', '.join(KERNELS)}; unset it to let priorkit "
            "choose (flex on CUDA, sdpa elsewhere)."
        )
    return value


@functools.cache
def flex_available() -> bool:
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:  # pragma: no cover - torch < 2.5
        return False
    return True


def flex_can_run(query: Tensor, training: bool, dropout: float) -> bool:
    """FlexAttention can run this call: no attention dropout, and a backward only on CUDA."""
    if not flex_available() or (training and dropout > 0.0):
        return False
    return query.device.type == "cuda" or not torch.is_grad_enabled()


def choose(query: Tensor, training: bool, dropout: float) -> str:
    """``sdpa``, ``flex`` or ``eager`` for one layer call (see the module doc)."""
    want = requested()
    if want == "eager":
        return "eager"
    if want == "flex" or (want is None and query.device.type == "cuda"):
        return "flex" if flex_can_run(query, training, dropout) else "sdpa"
    return "sdpa"


def cells(t: Tensor | None) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor] | None:
    """``(b, h, q, k) -> t[b, h, q, k]`` for a (B, 1|H, L, L) tensor, broadcast over heads when
    it has one; None for None.  The building block of the modes' FlexAttention ``score_mod``
    functions (each mode's file has its own)."""
    if t is None:
        return None
    if t.shape[1] > 1:
        return lambda b, h, q, k: t[b, h, q, k]
    return lambda b, h, q, k: t[b, 0, q, k]


@functools.cache
def _flex(compiled: bool) -> Callable[..., Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention) if compiled else flex_attention


def flex_forward(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable, scaling: float
                 ) -> tuple[Tensor, None]:
    """FlexAttention over (B, H, L, d) inputs; returns (B, L, H, d) like transformers' kernels."""
    import warnings

    gqa = key.shape[1] != query.shape[1]
    with warnings.catch_warnings():  # the unfused (non-CUDA) run warns at every call
        warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
        out = _flex(query.device.type == "cuda")(query, key, value, score_mod=score_mod, scale=scaling,
                                                  enable_gqa=gqa)
    return out.transpose(1, 2).contiguous(), None

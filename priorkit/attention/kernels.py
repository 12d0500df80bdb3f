"""Which kernel runs a prior layer: SDPA with a fused float mask, FlexAttention, or eager maths.

``PRIORKIT_ATTENTION_KERNEL`` (read at every call, so a test or a notebook can switch it):

* unset or ``auto``: ``flex`` on CUDA when FlexAttention can run the call, ``sdpa`` elsewhere;
* ``sdpa``: ``bias`` / ``learned_bias`` hand one fused float mask (padding + prior) to the
  model's own kernel; ``multiply`` / ``gate`` run priorkit's eager maths with the scaling,
  the prior and the padding mask fused into one ``addcmul`` pass;
* ``flex``: ``torch.nn.attention.flex_attention`` with a ``score_mod`` that applies the
  prior (and the padding mask) inside the kernel, so no (B, H, L, L) tensor is built
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


def make_score_mod(
    factor: Tensor | None = None,
    factor_heads: Tensor | None = None,
    log_p: Tensor | None = None,
    log_heads: Tensor | None = None,
    additive: Tensor | None = None,
) -> Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]:
    """A FlexAttention ``score_mod``: ``score * F + lam_h * LP + A`` cell by cell.

    ``score`` is already ``s * q.k``.  All tensors are (B, 1|H, L, L) except the per-head
    vectors (H,):

    * ``F = factor[b, h, q, k]`` (multiply), or ``1 + factor_heads[h] * (factor - 1)``
      (gate; multiply restricted to some heads uses a 0/1 vector);
    * ``lam_h * LP = log_heads[h] * log_p[b, h, q, k]`` (learned_bias);
    * ``A = additive[b, h, q, k]``: the padding mask, or bias mode's fused float mask.
    """
    fh = factor is not None and factor.shape[1] > 1
    lh = log_p is not None and log_p.shape[1] > 1
    ah = additive is not None and additive.shape[1] > 1

    def score_mod(score: Tensor, b: Tensor, h: Tensor, q: Tensor, k: Tensor) -> Tensor:
        if factor is not None:
            p = factor[b, h, q, k] if fh else factor[b, 0, q, k]
            if factor_heads is not None:
                p = 1 + factor_heads[h] * (p - 1)
            score = score * p
        if log_p is not None:
            score = score + log_heads[h] * (log_p[b, h, q, k] if lh else log_p[b, 0, q, k])
        if additive is not None:
            score = score + (additive[b, h, q, k] if ah else additive[b, 0, q, k])
        return score

    return score_mod


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

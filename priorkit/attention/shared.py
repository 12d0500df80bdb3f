"""Tensors derived from the prior once per forward pass, shared by every prior layer.

``model(..., prior=P)`` hands the same ``P`` object (and the same padding-mask object)
to every attention layer.  What a mode derives from them alone -- ``P`` in the layer's
dtype, ``log(max(P, eps))``, the fused float mask of ``bias`` mode, the additive
padding mask, the ``supervise`` target -- is the same in every layer, so it is computed
in the first prior layer of a forward pass and reused by the others.  Per-layer
parameters (gates, strengths) are applied on top, so their gradients are untouched.

The memo holds one forward's entries: it is keyed on the identity and version counter
of ``P`` and of the mask (an in-place change of either starts afresh), and on the
dtype, device, grad mode and inference mode; a new prior replaces it, and it is dropped
as soon as ``P`` itself is freed.  The whole state is one tuple replaced atomically, so
concurrent forward passes on other threads can only miss, never read another pass's
entries.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import Tensor

# (weakref to P, P._version, weakref to the mask or None, mask._version, entries)
_slot: tuple[Any, int, Any, int, dict] | None = None


def _forget(ref: Any) -> None:
    """P was freed: drop its entries (unless a newer forward already replaced them)."""
    global _slot
    slot = _slot
    if slot is not None and slot[0] is ref:
        _slot = None


def _entries(prior: Tensor, mask: Tensor | None) -> dict:
    global _slot
    slot = _slot
    mask_version = -1 if mask is None else mask._version
    if (
        slot is None
        or slot[0]() is not prior
        or slot[1] != prior._version
        or (None if slot[2] is None else slot[2]()) is not mask
        or slot[3] != mask_version
    ):
        slot = (weakref.ref(prior, _forget), prior._version,
                None if mask is None else weakref.ref(mask), mask_version, {})
        _slot = slot
    return slot[4]


def per_forward(prior: Tensor, mask: Tensor | None, key: Hashable, make: Callable[[], Tensor]) -> Any:
    """``make()`` computed once per (prior, mask, key, dtype context) and reused by later layers.

    ``key`` must name everything ``make`` depends on besides ``prior`` and ``mask``
    (the mode's options, dtype, device, heads).  Nothing that requires grad may go
    into ``make``'s result unless it is the same in every layer.
    """
    entries = _entries(prior, mask)
    full_key = (key, torch.is_grad_enabled(), torch.is_inference_mode_enabled())
    value = entries.get(full_key)
    if value is None:
        value = make()
        entries[full_key] = value
    return value


def clear() -> None:
    """Forget everything (tests use it to compare a cold and a warm memo)."""
    global _slot
    _slot = None

"""``model(**batch, prior=P)`` on a model without prior attention raises instead of ignoring P.

transformers hands every extra keyword of ``model(...)`` down to the attention
function, and its own functions swallow what they do not know: without this
guard a model that was never enabled (or a prior-trained model loaded with a
plain ``from_pretrained``) computes the stock output and the prior silently does
nothing.  :func:`install` wraps the ``sdpa`` entry of transformers'
``AttentionInterface`` (the default implementation of every supported encoder)
in a check for ``prior``; priorkit's own dispatcher takes ``prior`` out before it
calls ``sdpa``, so enabled models never reach the check with it.  Models loaded
with ``attn_implementation="eager"`` call the model file's function directly and
are not covered.  The keywords of the other channels (``token_features``, ...; see
:mod:`priorkit.batch_keys`) are refused the same way, and so are the loss's own
(``label_weights``, a channel's ``loss_keys``), which the model never reads.  Installed
when :mod:`priorkit.attention` is imported (and when ``priorkit.PriorBuilder`` /
``priorkit.PriorCollator`` are first used).
"""
from __future__ import annotations

import functools
import os
from typing import Any, Callable

from transformers import AttentionInterface

from ..batch_keys import DATA, LOSS_ONLY, OWNED
from .errors import PriorAttentionConfigError

GUARDED = ("sdpa",)
_WRAPPED = "__priorkit_wrapped__"


class PriorNotEnabledError(PriorAttentionConfigError):
    """``prior=`` was passed to a model whose attention does not take a prior."""


def message(module: Any) -> str:
    config = getattr(module, "config", None)
    saved = getattr(config, "priorkit", None) if config is not None else None
    if saved:
        return (
            f"this model was saved with prior attention (config.priorkit: mode {saved.get('mode')!r}, layers "
            f"{saved.get('layers')}) but loaded without it, so `prior` would be ignored. Load it with "
            "priorkit.load_model(folder), or call priorkit.enable_prior_attention(model) after from_pretrained"
        )
    folder = getattr(config, "_name_or_path", "") if config is not None else ""
    if folder and os.path.isfile(os.path.join(folder, "priorkit.json")):  # a priorkit model folder
        return (
            f"this model was saved by priorkit with its channels ({os.path.join(folder, 'priorkit.json')}) but "
            "loaded without prior attention, so `prior` would be ignored. Load it with priorkit.load_model(folder)"
        )
    return (
        f"model(..., prior=P) on a model without prior attention ({type(module).__name__} uses "
        f"{getattr(config, '_attn_implementation', '?')!r}): the prior would be ignored. Call "
        "priorkit.enable_prior_attention(model, layers=(0,), mode='multiply') first, or leave `prior` out "
        "of the batch for the stock model"
    )


def _guard(base: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(base)
    def guarded(module, query, key, value, attention_mask, *args, prior=None, **kwargs):
        if prior is not None:
            raise PriorNotEnabledError(message(module))
        for keyword, channel in OWNED.items():  # an attached channel takes its keywords out first
            if keyword != "prior" and kwargs.get(keyword) is not None:
                if keyword in LOSS_ONLY:  # the loss's, never the model's: the trainer takes it out first
                    raise PriorNotEnabledError(
                        f"model(..., {keyword}=...): {keyword} weighs the loss (" +
                        ("the data's own weights" if channel == DATA else f"of the {channel} channel") +
                        "); the model would ignore it. Leave it out of the model's inputs (priorkit's trainer "
                        "takes it out before the forward pass, priorkit.training.loss)")
                raise PriorNotEnabledError(
                    f"model(..., {keyword}=...) on a model without the {channel} channel: it would be ignored. "
                    f"Attach the channel first (channel.attach(model); for token features "
                    "priorkit.channels.features.attach_features), or load the model with priorkit.load_model, or "
                    f"leave {keyword} out of the batch")
        return base(module, query, key, value, attention_mask, *args, **kwargs)

    setattr(guarded, _WRAPPED, base)
    return guarded


def install() -> None:
    """Wrap the guarded implementations once (idempotent)."""
    for name in GUARDED:
        fn = AttentionInterface._global_mapping.get(name)
        if fn is None or hasattr(fn, _WRAPPED):
            continue
        AttentionInterface.register(name, _guard(fn))


def uninstall() -> None:
    """Put the original functions back (tests)."""
    for name in GUARDED:
        fn = AttentionInterface._global_mapping.get(name)
        if fn is not None and hasattr(fn, _WRAPPED):
            AttentionInterface.register(name, getattr(fn, _WRAPPED))


install()

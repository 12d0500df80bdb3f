"""priorkit: knowledge priors between words, fed into a pretrained transformer's attention.

Public API (see docs/architecture.md)::

    priorkit.list_providers()                      # what plug-ins registered
    provider = priorkit.get_provider("wordnet", measure="wup")
    provider.similarity(["cat"], ["feline", "car"])   # (1, 2) float32 in [0, 1], NaN = unknown

    builder = priorkit.PriorBuilder.paper(tokenizer)  # the paper's preset
    P = builder.build("A man plays.", "A woman plays.")  # (L, L) torch tensor

    priorkit.enable_prior_attention(model, layers=(0,), mode="multiply")
    model(**batch, prior=P_batch)

Heavy modules (torch, transformers, duckdb) load on first attribute access.
"""
from __future__ import annotations

import importlib
from typing import Any

from .errors import (
    CacheError,
    DataFormatError,
    PluginError,
    PriorkitError,
    ProviderOutputError,
    ResourceError,
    TokenizerError,
    UnknownProviderError,
)
from .hookspecs import hookimpl
from .plugins import get_plugin_manager, get_provider, list_plugins, list_providers
from .provider import PriorProvider

__version__ = "0.1.0"

_LAZY = {
    "PriorBuilder": "priorkit.align",
    "PriorSpec": "priorkit.spec",
    "PriorCache": "priorkit.cache",
    "CachedProvider": "priorkit.cache",
    "enable_prior_attention": "priorkit.attention",
    "disable_prior_attention": "priorkit.attention",
    "PriorCollator": "priorkit.collator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'priorkit' has no attribute {name!r}")


__all__ = [
    "PriorProvider", "hookimpl", "get_provider", "list_providers", "list_plugins",
    "get_plugin_manager", *_LAZY, "PriorkitError", "PluginError", "UnknownProviderError",
    "ProviderOutputError", "ResourceError", "DataFormatError", "CacheError", "TokenizerError",
]

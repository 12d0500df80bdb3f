"""priorkit: knowledge priors between words, fed into a pretrained transformer's attention.

Public API (see docs/architecture.md)::

    priorkit.list_providers()                      # what plug-ins registered
    provider = priorkit.get_provider("wordnet", measure="wup")
    provider.similarity(["cat"], ["feline", "car"])   # (1, 2) float32 in [0, 1], NaN = unknown

    builder = priorkit.PriorBuilder.paper(tokenizer)  # the paper's preset
    P = builder.build("A man plays.", "A woman plays.")  # (L, L) torch tensor

    priorkit.enable_prior_attention(model, layers=(0,), mode="multiply")
    model(**batch, prior=P_batch)

    trained = priorkit.load_model("runs/demo/paper/frac1/seed0")   # a trained run, prior on
    trained.predict([("A man plays.", "A woman plays.")])          # [{"score": ...}]

Heavy modules (torch, transformers, duckdb) load on first attribute access.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

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
from .providers.hookspecs import hookimpl
from .providers.plugins import get_plugin_manager, get_provider, list_plugins, list_providers
from .providers.base import Match, PriorProvider

__version__ = "0.1.0"

_LAZY = {
    "PriorBuilder": "priorkit.align",
    "PriorSpec": "priorkit.providers.spec",
    "PriorCache": "priorkit.cache",
    "CachedProvider": "priorkit.cache",
    "enable_prior_attention": "priorkit.attention",
    "disable_prior_attention": "priorkit.attention",
    "PriorCollator": "priorkit.collator",
    "load_model": "priorkit.inference",
    "load_ensemble": "priorkit.inference",
    "Predictor": "priorkit.inference",
}

_GUARDED = ("PriorBuilder", "PriorCollator")


def _lazy_attributes(module: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that imports ``table[name]`` on first access."""

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


_lazy = _lazy_attributes("priorkit", _LAZY)


def __getattr__(name: str) -> Any:
    if name in _GUARDED:  # a batch with `prior` must not go silently to a model never enabled
        importlib.import_module("priorkit.attention.guard")
    return _lazy(name)


__all__ = [
    "PriorProvider", "Match", "hookimpl", "get_provider", "list_providers", "list_plugins",
    "get_plugin_manager", *_LAZY, "PriorkitError", "PluginError", "UnknownProviderError",
    "ProviderOutputError", "ResourceError", "DataFormatError", "CacheError", "TokenizerError",
]

"""Knowledge as token features: a provider's concept matches as B/I tags per group (and
optionally hashed concept ids), added to the input embeddings through a
zero-initialised, gated projection (docs/features.md).  The features channel
(priorkit/channels/features.py) puts them into batches, models and model folders.

Names load on first use (PEP 562), so ``FeatureConfig`` (plain data, used by the
pipeline schema) comes without torch.
"""
from __future__ import annotations

import importlib
from typing import Any

from .config import FeatureConfig

_LAZY = {
    "FeatureBuilder": "builder", "concept_bucket": "builder", "check_provider": "builder",
    "TokenFeatureInput": "model", "attach_features": "model", "attach_for": "model", "detach_features": "model",
    "feature_module": "model", "feature_parameters": "model",
    "FeatureChannel": "channel",
}

__all__ = ["FeatureConfig", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

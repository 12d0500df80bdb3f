"""Per-architecture adapters for encoders whose attention does not go through transformers'
``AttentionInterface``: ``base.py`` (the routing of ``prior=`` and the shared machinery),
one file per architecture (``mpnet.py``, ``deberta_v2.py``); importing this package
registers them.  See docs/attention.md, "Supported architectures"."""
from __future__ import annotations

from . import deberta_v2, mpnet  # noqa: F401 - importing them registers the adapters
from .base import ADAPTERS, Adapter, install, register_adapter, uninstall

__all__ = ["ADAPTERS", "Adapter", "install", "uninstall", "register_adapter"]

"""The attention channel: a prior (B, L, L) multiplied or added into a model's attention scores
(:mod:`.channel`), its token-aligned store (:mod:`.store`).  The attention maths themselves are
:mod:`priorkit.attention`, usable without a channel."""
from __future__ import annotations

from .channel import AttentionChannel, builder_from_info, setting_builder
from .config import AttentionConfig

__all__ = ["AttentionChannel", "AttentionConfig", "setting_builder", "builder_from_info"]

"""The ways knowledge enters a model, one interface (docs/channels.md): :class:`Channel`,
its registry (:func:`register_channel`, :data:`CHANNELS`) and the two built-in channels,
``attention`` (:mod:`.attention`) and ``features`` (:mod:`.features`)."""
from __future__ import annotations

from .attention import channel as _attention
from .features import channel as _features  # noqa: F401 - registers the built-in channels, attention first
from .base import (CHANNELS, CardText, Channel, ChannelSetting, Context, PredictionWarning, channels_for,
                   register_channel, restore_channels, TokenView)

__all__ = ["Channel", "ChannelSetting", "Context", "CardText", "CHANNELS", "register_channel", "channels_for", "restore_channels",
           "PredictionWarning", "TokenView"]

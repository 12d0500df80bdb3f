"""The batch keywords the channels own, for the guard that refuses them on a model without
the channel (``attention/guard.py``).  Torch-free and below both: a channel's registration
writes here (``priorkit.channels.register_channel``), the guard reads."""
from __future__ import annotations

#: keyword of ``model(**batch)`` -> the channel that owns it; the built-in channels' from the
#: start (the guard works before priorkit.channels is imported), others when registered
OWNED: dict[str, str] = {"prior": "attention", "token_features": "features", "token_concepts": "features"}


def own(keys: tuple[str, ...], channel: str) -> None:
    for key in keys:
        OWNED.setdefault(key, channel)

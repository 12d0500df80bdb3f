"""The batch keywords and who owns each, for the guard that refuses them on a model without
their owner (``attention/guard.py``) and for the loss (``training/loss.py``).  Torch-free and
below both: a channel's registration writes here (``priorkit.channels.register_channel``), the
guard and the loss read."""
from __future__ import annotations

#: the owner of the keywords that come with the data rather than a channel: ``label_weights``,
#: the per-word loss weights of the rows (silver rows weighing other than gold ones)
DATA = "data"

#: keyword of a collated batch -> its owner: a channel's name, or :data:`DATA`; the built-in
#: channels' from the start (the guard works before priorkit.channels is imported), others when
#: registered.  A model without the owner attached refuses the keyword instead of ignoring it.
OWNED: dict[str, str] = {"prior": "attention", "token_features": "features", "token_concepts": "features",
                         "label_weights": DATA}

#: the keywords only the loss reads, never the model (a channel's ``loss_keys``, the data's
#: ``label_weights``): the trainer takes them out of the batch before the forward pass, and
#: the collator makes none for a batch without labels (predict, show)
LOSS_ONLY: set[str] = {"label_weights"}


def own(keys: tuple[str, ...], owner: str, *, loss_only: bool = False) -> None:
    for key in keys:
        OWNED.setdefault(key, owner)
        if loss_only:
            LOSS_ONLY.add(key)

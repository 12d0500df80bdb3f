"""Knowledge as silver labels: a provider's concept matches label unlabelled text, and a
model trains on gold and silver together (``mix``) or on silver first, then gold
(``then-gold``) -- distant supervision in the style of AutoNER and skweak (docs/silver.md).

- :mod:`.config`: the ``prior.silver`` section (plain data, torch-free);
- :mod:`.label`: matches -> BIO tags through a group -> entity-type map;
- :mod:`.store`: labels written to disk in chunks (JSONL shards keyed by sentence digest
  and labeller fingerprint), resumable after a kill;
- :mod:`.recipe`: silver rows (with per-word loss weights) and the mixed training list (the
  weighted loss is the trainer's, ``priorkit.training.loss``);
- :mod:`.teacher`: a trained model as a labeller (self-training), merged with a dictionary;
- :mod:`.checks`: the pipeline's checks of the section and of the unlabelled text.

Names load on first use (PEP 562), so the schema gets :class:`SilverConfig` without torch.
"""
from __future__ import annotations

import importlib
from typing import Any

from .config import SilverConfig

_LAZY = {
    "Labeller": "label", "sentence_digest": "label",
    "SilverStore": "store", "label_sentences": "store",
    "silver_rows": "recipe", "mix_rows": "recipe",
    "TeacherLabeller": "teacher", "merge_labels": "teacher", "confident_tags": "teacher",
}

__all__ = ["SilverConfig", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Getting trained gates back after ``save_pretrained`` / ``from_pretrained``.

``save_pretrained`` writes every parameter, the ``prior_gate`` vectors included, and
``config.priorkit`` (a plain dict) lands in config.json.  ``from_pretrained`` however
builds the stock architecture, finds no ``prior_gate`` parameter to fill and drops
those tensors as "unexpected keys" (with a warning).  ``enable_prior_attention(model)``
therefore re-creates the gates and reads their values straight from the checkpoint
the model was loaded from (``config._name_or_path``), touching only those tensors.
"""
from __future__ import annotations

from pathlib import Path

from torch import Tensor


def _locate(name_or_path: str, filename: str) -> Path | None:
    local = Path(name_or_path) / filename
    if local.is_file():
        return local
    if not name_or_path or Path(name_or_path).exists():
        return None
    try:  # a Hub id: only what is already in the local cache, never a download
        from transformers.utils.hub import cached_file

        found = cached_file(
            name_or_path, filename, local_files_only=True,
            _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False,
        )
    except (OSError, ValueError):
        return None
    return Path(found) if found else None


def read_tensors(name_or_path: str, suffix: str) -> dict[str, Tensor]:
    """All tensors whose key ends with ``suffix`` in the checkpoint at ``name_or_path`` (a local
    folder, or a Hub id already in the local cache), through :func:`priorkit.weights.read_weights`.

    Sharded checkpoints are read through their index, opening only the shards that
    hold such keys.  Returns {} when there is no checkpoint (a model built from a config).
    """
    if not name_or_path:
        return {}
    from ..weights import LAYOUTS, read_weights

    for index_name, single in LAYOUTS:
        for name in (index_name, single):
            found = _locate(name_or_path, name)
            if found is not None:
                return read_weights(found.parent, suffix=suffix, file=None if name == index_name else found.name)
    return {}


def match_key(param_name: str, available: dict[str, Tensor], base_prefix: str) -> Tensor | None:
    """The checkpoint tensor for ``param_name``, allowing for a head added or removed.

    A gate saved from ``BertForSequenceClassification`` is ``bert.encoder...prior_gate``;
    loaded into ``BertModel`` it is ``encoder...prior_gate`` (and the other way round).
    """
    bare = param_name.removeprefix(base_prefix + ".") if base_prefix else param_name
    for candidate in (param_name, bare, f"{base_prefix}.{bare}" if base_prefix else bare):
        if candidate in available:
            return available[candidate]
    return None

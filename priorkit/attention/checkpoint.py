"""Getting trained gates back after ``save_pretrained`` / ``from_pretrained``.

``save_pretrained`` writes every parameter, the ``prior_gate`` vectors included, and
``config.priorkit`` (a plain dict) lands in config.json.  ``from_pretrained`` however
builds the stock architecture, finds no ``prior_gate`` parameter to fill and drops
those tensors as "unexpected keys" (with a warning).  ``enable_prior_attention(model)``
therefore re-creates the gates and reads their values straight from the checkpoint
the model was loaded from (``config._name_or_path``), touching only those tensors.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import Tensor

_SAFE, _SAFE_INDEX = "model.safetensors", "model.safetensors.index.json"
_BIN, _BIN_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"


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
    """All tensors whose key ends with ``suffix`` in the checkpoint at ``name_or_path``.

    Sharded checkpoints are read through their index, opening only the shards that
    hold such keys.  Returns {} when there is no checkpoint (a model built from a config).
    """
    if not name_or_path:
        return {}
    for index_name, single in ((_SAFE_INDEX, _SAFE), (_BIN_INDEX, _BIN)):
        index = _locate(name_or_path, index_name)
        if index is not None:
            weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
            shards = sorted({f for k, f in weight_map.items() if k.endswith(suffix)})
            out: dict[str, Tensor] = {}
            for shard in shards:
                out.update(_read_file(index.parent / shard, suffix))
            return out
        file = _locate(name_or_path, single)
        if file is not None:
            return _read_file(file, suffix)
    return {}


def _read_file(file: Path, suffix: str) -> dict[str, Tensor]:
    if file.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as fh:
            return {k: fh.get_tensor(k) for k in fh.keys() if k.endswith(suffix)}
    state = torch.load(file, map_location="cpu", weights_only=True)
    return {k: v for k, v in state.items() if k.endswith(suffix)}


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

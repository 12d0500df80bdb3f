"""The one reader of a model folder's weights: the tensors a channel (or the attention prior's
gates) needs, by name or by name suffix, from ``model.safetensors`` (one file or shards
through their index), ``pytorch_model.bin`` (one file or shards), or a named file.  Only the
files that hold a wanted tensor are opened.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

#: (index file, single file), in the order they are looked for
LAYOUTS = (("model.safetensors.index.json", "model.safetensors"),
           ("pytorch_model.bin.index.json", "pytorch_model.bin"))


def read_weights(folder: str | Path, names: Iterable[str] | None = None, *, suffix: str | None = None,
                 file: str | None = None, prefix: str = "") -> dict[str, Any]:
    """The tensors of ``folder``'s weights named ``names`` (or whose name ends with ``suffix``),
    as {name: tensor}; names not there are left out; {} when the folder has no weights.

    ``file``: read this file of the folder instead (e.g. an older folder's side file);
    ``prefix``: the file's names lack it (the requested names have it; it is added back).
    """
    folder = Path(folder)
    wanted = None if names is None else list(names)

    def keep(key: str) -> bool:
        return (wanted is None or key in wanted) and (suffix is None or key.endswith(suffix))

    if file is not None:
        files = [folder / file]
    else:
        files = []
        for index_name, single in LAYOUTS:
            index = folder / index_name
            if index.exists():
                weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
                files = [folder / f for f in sorted({f for k, f in weight_map.items() if keep(k)})]
                break
            if (folder / single).exists():
                files = [folder / single]
                break
    out: dict[str, Any] = {}
    for path in files:
        for key, tensor in _read_file(path, lambda k: keep(prefix + k)).items():
            out[prefix + key] = tensor
    return out


def _read_file(path: Path, keep: Any) -> dict[str, Any]:
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as fh:
            return {k: fh.get_tensor(k) for k in fh.keys() if keep(k)}
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True)
    return {k: v for k, v in state.items() if keep(k)}

"""Token features in a model folder: ``priorkit-features.json`` (the config, the groups, the
provider) and ``priorkit-features.safetensors`` (the gated projection's weights).

:func:`save_features` writes both next to the model's own files; :func:`restore_features`
attaches the same module to a freshly loaded model, fills in its weights and rebuilds
the :class:`~priorkit.features.FeatureBuilder`, so predictions match training bit for bit.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ..errors import PriorkitError
from .builder import FeatureBuilder
from .config import FeatureConfig
from .model import attach_features, feature_module

CONFIG_FILE = "priorkit-features.json"
WEIGHTS_FILE = "priorkit-features.safetensors"
FORMAT = 1


def attach_for(model: Any, builder: FeatureBuilder):
    """Attach the feature input ``builder``'s config describes to ``model``."""
    s = builder.config
    return attach_features(model, builder.n_features, concept_buckets=s.concept_buckets, dropout=s.dropout,
                           gate=s.gate, gate_init=s.gate_init)


def save_features(model: Any, builder: FeatureBuilder | None, folder: str | Path) -> bool:
    """Write the two files into ``folder`` (False, nothing written, without features)."""
    module = feature_module(model)
    if module is None or builder is None:
        return False
    from safetensors.torch import save_file

    folder = Path(folder)
    state = {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}
    save_file(state, str(folder / WEIGHTS_FILE))
    config = builder.config.to_dict()
    config["groups"] = list(builder.groups)
    info = {"format": FORMAT, "config": config, "n_features": builder.n_features,
            "hidden": module.hidden, "provider": builder.provider.describe()}
    (folder / CONFIG_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return True


def read_config(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / CONFIG_FILE
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PriorkitError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); "
                            "restore it from the run folder or train again") from None
    if info.get("format") != FORMAT:
        raise PriorkitError(f"{path} has format {info.get('format')!r}; this priorkit reads format {FORMAT}")
    return info


def restore_features(model: Any, folder: str | Path, tokenizer: Any = None,
                     max_length: int | None = None) -> FeatureBuilder | None:
    """Attach the saved token features to ``model`` (loaded from ``folder``) and return their
    builder; None when the folder has none."""
    from safetensors.torch import load_file

    from ..plugins import get_provider

    folder = Path(folder)
    info = read_config(folder)
    if info is None:
        return None
    weights = folder / WEIGHTS_FILE
    if not weights.exists():
        raise PriorkitError(f"{weights} is missing next to {CONFIG_FILE}; copy the whole model folder")
    config = FeatureConfig.from_dict(info["config"])
    provider = get_provider(config.provider, **(config.params or {}))
    saved_fp = (info.get("provider") or {}).get("fingerprint")
    if saved_fp and provider.fingerprint != saved_fp:
        warnings.warn(f"{folder}: the {config.provider} provider's fingerprint is now {provider.fingerprint}, "
                      f"the model was trained with {saved_fp}: its matches, and so the token features, "
                      "may differ from training", UserWarning, stacklevel=2)
    builder = FeatureBuilder(provider, config, tokenizer, max_length)
    if builder.n_features != info["n_features"]:
        raise PriorkitError(f"{folder / CONFIG_FILE}: {info['n_features']} features saved, the config gives "
                            f"{builder.n_features}")
    module = attach_for(model, builder)
    module.load_state_dict(load_file(str(weights)))  # copied into the attached parameters (their device)
    return builder

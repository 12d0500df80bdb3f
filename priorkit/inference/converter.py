"""The one converter of model folders written by older priorkit versions: their priorkit.json
(and the files beside it) becomes today's format (:data:`~priorkit.inference.manifest.FORMAT`)
in memory; nothing on disk changes.

- format 1 (before the spec was stored whole): the prior's fields one by one; they were
  all there was (no ``within``, stop words only through the preset), so the spec built
  from them builds what the model was trained with;
- format 2: ``prior.attention`` (the attention settings) and, for token features, the side
  files ``priorkit-features.json`` (the features channel's description) and
  ``priorkit-features.safetensors`` (its weights, which the channel then reads instead of
  its copy in ``model.safetensors``: the side file is what was loaded then);
- format 3: the channels under ``channels``, with the pipeline's record beside it in
  ``priorkit-run.json`` (and ``priorkit-pipeline.yaml``) and the attention settings also in
  ``config.json["priorkit"]`` (where format 1 folders kept them only).

Today's folders hold the run's record under ``run`` and no priorkit section in config.json.
Tested in tests/test_features_card.py (format 2), tests/test_model_folder.py (format 3, a
folder written by that code) and tests/test_inference.py (format 1).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..errors import PriorkitError
from ..providers.spec import PriorSpec

#: the pipeline's record beside priorkit.json before format 4
RUN_FILE_V3 = "priorkit-run.json"
#: the token features' side files of format 2
FEATURES_CONFIG_V2 = "priorkit-features.json"
FEATURES_WEIGHTS_V2 = "priorkit-features.safetensors"


def upgrade(info: dict[str, Any], folder: Path, fmt: int) -> dict[str, Any]:
    """``info`` (priorkit.json of format ``fmt`` < ``fmt``) as format ``fmt`` describes it."""
    version = info["format"]
    if version == 1 and info.get("prior") is not None:
        info = {**info, "prior": _prior_from_format_1(info["prior"])}
    if version in (1, 2):
        info = _from_format_2(info, folder)
    return _from_format_3(info, folder, fmt)


def _from_format_3(info: dict[str, Any], folder: Path, fmt: int) -> dict[str, Any]:
    """Format 3 (and upgraded 1, 2) to today's: the run's record from ``priorkit-run.json``
    (None without one: a folder copied without it), the attention settings that format 1
    kept only in config.json filled in from there."""
    run = _read_json(folder / RUN_FILE_V3)
    if run is not None:
        run = {k: v for k, v in run.items() if k != "format"}
    channels = dict(info.get("channels") or {})
    attention = channels.get("attention")
    if attention is not None and not attention.get("mode"):
        saved = (_read_json(folder / "config.json") or {}).get("priorkit") or {}
        channels["attention"] = {k: v for k, v in saved.items() if k != "format"}
    return {**info, "format": fmt, "channels": channels, "run": run}


def _from_format_2(info: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Format 2 (and upgraded 1) to 3: ``prior.attention`` becomes the attention channel's
    description, ``priorkit-features.json`` the features channel's (with ``weights``: its
    weights are in ``priorkit-features.safetensors`` while that file is there).  A prior with
    neither on record counts as attention, as format 1 folders all were."""
    prior = dict(info["prior"]) if info.get("prior") is not None else None
    channels: dict[str, Any] = {}
    features = _features_v2(folder)
    if prior is not None:
        attention = prior.pop("attention", None)
        prior.pop("features", None)
        if attention is not None or features is None:
            channels["attention"] = {k: v for k, v in (attention or {}).items() if k != "format"}
    if features is not None:
        channels["features"] = features
    return {**info, "format": 3, "prior": prior, "channels": channels}


def _features_v2(folder: Path) -> dict[str, Any] | None:
    """The features channel's description from ``priorkit-features.json`` (None: none)."""
    path = folder / FEATURES_CONFIG_V2
    if not path.exists():
        return None
    info = _read_json(path)
    if info.get("format") != 1:
        raise PriorkitError(f"{path} has format {info.get('format')!r}; this priorkit reads format 1")
    out = {"config": info["config"], "n_features": info["n_features"], "provider": info.get("provider") or {}}
    if (folder / FEATURES_WEIGHTS_V2).exists():
        # the module's own state dict, keys without the model's "priorkit_features." prefix
        out["weights"] = {"file": FEATURES_WEIGHTS_V2, "prefix": "priorkit_features."}
    return out


def _prior_from_format_1(prior: Mapping[str, Any]) -> dict[str, Any]:
    spec = PriorSpec(provider=prior["provider"], params=dict(prior.get("params") or {}),
                     preset=prior.get("preset"), layout=prior.get("layout", "full"),
                     keys=prior.get("keys", "strip"), neutral=float(prior.get("neutral", 1.0)))
    keep = ("name", "provider", "params", "provider_version", "plugin", "fingerprint", "attention", "cache")
    return {"spec": spec.to_dict(), **{k: prior.get(k) for k in keep}}


def _read_json(path: Path) -> Any:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PriorkitError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); "
                            "restore it from the run folder or train again") from None

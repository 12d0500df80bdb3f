"""What a saved model folder carries besides the Hugging Face files: ``priorkit.json``, the
one priorkit file (the model card, README.md, is written by :mod:`.card`).

``priorkit.json`` (format 4) holds everything needed to rebuild the model's channels
(docs/channels.md) at inference: the task (type, labels, label scale), the input kind
(sentence pairs, single texts or words), the tokenizer's max length, the prior (its
:class:`~priorkit.providers.spec.PriorSpec` as ``spec.to_dict()``, the provider's name, parameters,
version and fingerprint, and the cache the run read), ``channels`` (each channel's own
description, written from the live channel objects: the attention settings; the token
features' config, groups and provider), ``training`` (what the card shows), ``scores`` and
``run``: the pipeline's own record of the run (the resolved config, the prior setting,
the labels, the training summary with its train key).  Every channel's weights are in
``model.safetensors``, once; config.json holds no priorkit section.  :func:`read_info` reads
it; older folders (formats 1-3) go through :mod:`.converter` first.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Mapping

from ..errors import PriorkitError
from ..providers.spec import FIELDS, PriorSpec

PRIORKIT_JSON = "priorkit.json"
CARD = "README.md"
#: 4: the run's record under ``run``, no priorkit section in config.json; 3: the channels under
#: ``channels``; 2: the prior's PriorSpec stored whole (``prior.spec``) with ``prior.attention`` /
#: ``prior.features``; 1: hand-picked prior fields (older formats: :mod:`.converter`)
FORMAT = 4
READABLE_FORMATS = (1, 2, 3, 4)
#: a loadable model folder holds config.json, one of WEIGHTS and TOKENIZER
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
           "pytorch_model.bin.index.json")
TOKENIZER = ("tokenizer.json",)


def command_line(argv: list[str] | None = None) -> str:
    """The command this process runs, as a user would type it (``priorkit run ...``)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    head = os.path.basename(argv[0])
    if head in ("priorkit", "__main__.py") or argv[0].endswith(os.path.join("priorkit", "__main__.py")):
        return shlex.join(["priorkit", *argv[1:]])
    return shlex.join(["python", *argv])


def input_kind(example: Mapping[str, Any] | None, task_type: str) -> str:
    """``words`` (NER), ``pairs`` or ``single``: what one input of the model is."""
    if task_type == "token-classification":
        return "words"
    if example is None:
        return "pairs"
    return "pairs" if example.get("text_b") is not None else "single"


def prior_description(spec: PriorSpec | None, name: str | None, cache: str | None) -> dict | None:
    """The prior part of priorkit.json (None: no prior): the spec whole, what its provider
    says about itself (name, parameters with defaults, version, fingerprint) and the cache."""
    if spec is None:
        return None
    provider = spec.build_provider()
    d = provider.describe()
    return {
        "spec": spec.to_dict(),
        "name": name,
        "provider": d["name"],
        "params": d["params"],
        "provider_version": str(d["version"]),
        "plugin": d.get("plugin"),
        "fingerprint": provider.fingerprint,
        "cache": cache,
    }


def describe_run(meta: Mapping[str, Any], channels: Mapping[str, Mapping[str, Any]], inputs: str,
                 command: str | None = None) -> dict[str, Any]:
    """priorkit.json's content from a run's metadata (``priorkit.training.train.run_metadata``,
    whose ``prior`` is the run's prior setting: a PriorSpec's fields plus the pipeline's own)
    and ``channels``: each channel's ``describe()`` by name."""
    from .. import __version__

    task = meta["task"]
    setting = meta.get("prior")
    spec = PriorSpec.from_dict({k: setting[k] for k in FIELDS if k in setting}) if setting else None
    data = (meta.get("config") or {}).get("data") or {}
    prior = prior_description(spec, setting.get("name") if setting else None, meta.get("cache"))
    from .plugins_needed import plugins_used

    return {
        "format": FORMAT,
        "priorkit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "task": {"type": task["type"], "labels": meta.get("labels"), "label_scale": task.get("label_scale", 1.0),
                 "metric": task.get("metric"),
                 **({"decode": task.get("decode", "argmax"), "o_bias": task.get("o_bias", 0.0)}
                    if task["type"] == "token-classification" else {})},
        "inputs": inputs,
        "max_length": meta.get("max_length"),
        "prior": prior,
        "channels": {name: dict(d) for name, d in channels.items()},
        "plugins": plugins_used(prior, channels),  # checked when the folder loads
        "training": {
            "pipeline": meta.get("pipeline"),
            "prior_setting": meta.get("prior_name"),
            "base_model": meta.get("model_source"),
            "fraction": meta.get("fraction"),
            "seed": meta.get("seed"),
            "data": {split: ({k: v for k, v in src.items() if v not in (None, {}, [], "auto")}
                             if isinstance(src, dict) else src)  # entity_types, transductive: plain values
                     for split, src in data.items() if src},
            "summary": meta.get("train"),
            "command": command if command is not None else command_line(),
        },
        "scores": None,
        "run": {k: v for k, v in meta.items() if k != "format"},
    }


def write_model_files(folder: str | os.PathLike, meta: Mapping[str, Any], inputs: str,
                      channels: Any = (), command: str | None = None) -> dict[str, Any]:
    """Write priorkit.json and README.md into a model folder that holds config.json, from the
    run's metadata and its live channel objects (each describes itself)."""
    from .card import model_card

    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    if config.pop("priorkit", None) is not None:  # enable_prior_attention's copy: priorkit.json describes it
        _write(folder / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    info = describe_run(meta, {c.name: c.describe() for c in channels}, inputs, command)
    _write(folder / PRIORKIT_JSON, json.dumps(info, indent=2) + "\n")
    _write(folder / CARD, model_card(info, config))
    return info


def add_scores(folder: str | os.PathLike, scores: Mapping[str, Mapping[str, float]]) -> bool:
    """Record the evaluate step's scores in priorkit.json and the card; False without priorkit.json."""
    from .card import model_card

    folder = Path(folder)
    path = folder / PRIORKIT_JSON
    if not path.exists():
        return False
    info = read_info(folder)  # an older folder is described in today's format from now on
    info["scores"] = {split: {k: float(v) for k, v in s.items() if isinstance(v, (int, float))}
                      for split, s in scores.items()}
    config = json.loads((folder / "config.json").read_text())
    _write(path, json.dumps(info, indent=2) + "\n")
    _write(folder / CARD, model_card(info, config))
    return True


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def read_info(folder: str | os.PathLike) -> dict[str, Any] | None:
    """priorkit.json of a model folder, in today's format (older ones through the converter);
    None without one."""
    path = Path(folder) / PRIORKIT_JSON
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PriorkitError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); "
                            "restore it from the run folder or train again") from None
    if info.get("format") not in READABLE_FORMATS:
        raise PriorkitError(f"{path} has format {info.get('format')!r}; this priorkit reads formats "
                            f"{', '.join(map(str, READABLE_FORMATS))}: install the priorkit that wrote it")
    if info["format"] != FORMAT:
        from .converter import upgrade

        info = upgrade(info, Path(folder), FORMAT)
    return info


def trained_with(folder: str | os.PathLike, key: str) -> bool:
    """Whether the model in ``folder`` was trained by the pipeline with train key ``key`` (its
    run record says so: the same settings, data and seed give the same weights)."""
    meta = read_run(folder)
    return bool(meta) and (meta.get("train") or {}).get("train_key") == key


def read_run(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The pipeline's record of the run that wrote a model folder (priorkit.json's ``run``:
    config, prior setting, labels, training summary with its train key); None without one."""
    try:
        info = read_info(folder)
    except PriorkitError:
        return None
    return None if info is None else info.get("run")

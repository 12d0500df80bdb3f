"""What a saved model folder carries besides the weights: ``priorkit.json`` and a model card.

A pipeline's train step writes both into ``model/`` (next to config.json, the
weights and the tokenizer files):

``priorkit.json`` (format 3)
    everything needed to rebuild the model's channels (docs/channels.md) at inference:
    the task (type, labels, label scale), the input kind (sentence pairs, single texts
    or words), the tokenizer's max length, the prior (its :class:`~priorkit.spec.PriorSpec`
    as ``spec.to_dict()``, the provider's name, parameters, version and fingerprint, and
    the cache the run read) and ``channels``: each channel's own description, written from
    the live channel objects (the attention settings; the token features' config, groups
    and provider).  The channels' weights are in ``model.safetensors``, once.
    :func:`priorkit.load_model` restores every channel named there.  :func:`read_info` is
    the one converter of older folders: format 1 (before the spec was stored whole) and
    format 2 (``prior.attention``, ``prior.features`` and the side files
    ``priorkit-features.json`` / ``.safetensors``) become format 3 in memory.

``README.md``
    a Hugging Face style model card: YAML front matter, the prior and each channel, the
    data, the scores (filled in by the evaluate step) and the command that trained it.
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
from ..spec import FIELDS, PriorSpec

PRIORKIT_JSON = "priorkit.json"
CARD = "README.md"
#: 3: the channels described under ``channels``; 2: the prior's PriorSpec stored whole
#: (``prior.spec``) with ``prior.attention`` / ``prior.features``; 1: hand-picked prior fields
FORMAT = 3
READABLE_FORMATS = (1, 2, 3)
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


def spec_from_info(prior: Mapping[str, Any]) -> PriorSpec:
    """The PriorSpec of priorkit.json's ``prior`` (read_info has upgraded older formats)."""
    return PriorSpec.from_dict(prior["spec"])


def describe_run(meta: Mapping[str, Any], channels: Mapping[str, Mapping[str, Any]], inputs: str,
                 command: str | None = None) -> dict[str, Any]:
    """priorkit.json's content from a run's metadata (``priorkit.pipeline.train.run_metadata``,
    whose ``prior`` is the run's prior setting: a PriorSpec's fields plus the pipeline's own)
    and ``channels``: each channel's ``describe()`` by name."""
    from .. import __version__

    task = meta["task"]
    setting = meta.get("prior")
    spec = PriorSpec.from_dict({k: setting[k] for k in FIELDS if k in setting}) if setting else None
    data = (meta.get("config") or {}).get("data") or {}
    return {
        "format": FORMAT,
        "priorkit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "task": {"type": task["type"], "labels": meta.get("labels"), "label_scale": task.get("label_scale", 1.0),
                 "metric": task.get("metric")},
        "inputs": inputs,
        "max_length": meta.get("max_length"),
        "prior": prior_description(spec, setting.get("name") if setting else None, meta.get("cache")),
        "channels": {name: dict(d) for name, d in channels.items()},
        "training": {
            "pipeline": meta.get("pipeline"),
            "prior_setting": meta.get("prior_name"),
            "base_model": meta.get("model_source"),
            "fraction": meta.get("fraction"),
            "seed": meta.get("seed"),
            "data": {split: {k: v for k, v in src.items() if v not in (None, {}, [], "auto")}
                     for split, src in data.items() if src},
            "summary": meta.get("train"),
            "command": command if command is not None else command_line(),
        },
        "scores": None,
    }


def write_model_files(folder: str | os.PathLike, meta: Mapping[str, Any], inputs: str,
                      channels: Any = (), command: str | None = None) -> dict[str, Any]:
    """Write priorkit.json and README.md into a model folder that holds config.json, from the
    run's metadata and its live channel objects (each describes itself)."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    info = describe_run(meta, {c.name: c.describe() for c in channels}, inputs, command)
    _write(folder / PRIORKIT_JSON, json.dumps(info, indent=2) + "\n")
    _write(folder / CARD, model_card(info, config))
    return info


def add_scores(folder: str | os.PathLike, scores: Mapping[str, Mapping[str, float]]) -> bool:
    """Record the evaluate step's scores in priorkit.json and the card; False without priorkit.json."""
    folder = Path(folder)
    path = folder / PRIORKIT_JSON
    if not path.exists():
        return False
    info = read_info(folder)  # an older folder is described as format 3 from now on
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
    """priorkit.json of a model folder (format 1 upgraded to 2 in memory); None without one."""
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
    if info["format"] == 1 and info.get("prior") is not None:
        info["prior"] = _prior_from_format_1(info["prior"])
    if info["format"] in (1, 2):
        info = _from_format_2(info, Path(folder))
    return info


def _from_format_2(info: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Format 2 (and upgraded 1) to 3: ``prior.attention`` becomes the attention channel's
    description, ``priorkit-features.json`` the features channel's (its weights come from
    ``priorkit-features.safetensors`` while that file is there).  A prior with neither on
    record counts as attention, as format 1 folders all were."""
    from ..channels.features import legacy_description

    prior = dict(info["prior"]) if info.get("prior") is not None else None
    channels: dict[str, Any] = {}
    features = legacy_description(folder)
    if prior is not None:
        attention = prior.pop("attention", None)
        prior.pop("features", None)
        if attention is not None or features is None:
            channels["attention"] = {k: v for k, v in (attention or {}).items() if k != "format"}
    if features is not None:
        channels["features"] = features
    return {**info, "format": FORMAT, "prior": prior, "channels": channels}


def _prior_from_format_1(prior: Mapping[str, Any]) -> dict[str, Any]:
    """Format 1 named the prior's fields one by one; they were all there was (no ``within``,
    stop words only through the preset), so this spec builds what the model was trained with."""
    spec = PriorSpec(provider=prior["provider"], params=dict(prior.get("params") or {}),
                     preset=prior.get("preset"), layout=prior.get("layout", "full"),
                     keys=prior.get("keys", "strip"), neutral=float(prior.get("neutral", 1.0)))
    keep = ("name", "provider", "params", "provider_version", "plugin", "fingerprint", "attention", "cache")
    return {"spec": spec.to_dict(), **{k: prior.get(k) for k in keep}}


# ---------------------------------------------------------------------------
# the model card
# ---------------------------------------------------------------------------
_PIPELINE_TAG = {"regression": "sentence-similarity", "pair-classification": "text-classification",
                 "token-classification": "token-classification"}


def model_card(info: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The README.md of a model folder (Hugging Face model card layout); each channel writes
    its own rows and sentences (``Channel.card``)."""
    task, prior, training = info["task"], info.get("prior"), info.get("training") or {}
    parts = _channel_cards(info)
    base = training.get("base_model") or "sentence-transformers/all-MiniLM-L6-v2"
    front = ["---", "library_name: transformers", f"pipeline_tag: {_PIPELINE_TAG[task['type']]}",
             "tags:", "- priorkit"]
    tags = [t for part in parts.values() for t in part.tags]
    front += [f"- {t}" for i, t in enumerate(tags) if t not in tags[:i]]
    if not os.path.isabs(base):
        front.append(f"base_model: {base}")
    if task.get("metric"):
        front += ["metrics:", f"- {task['metric']}"]
    front.append("---")
    title = training.get("pipeline") or "priorkit model"
    summary = (" with " + " and ".join(p.summary for p in parts.values()) + ".") if parts else " without a prior."
    lines = front + ["", f"# {title}: {training.get('prior_setting') or 'no prior'}", "",
                     f"A `{config.get('model_type', '?')}` encoder fine-tuned by "
                     f"priorkit for {task['type']}{summary}", ""]
    lines += ["## Prior", ""]
    if prior:
        rows = [row for part in parts.values() for row in part.rows]
        if parts and "attention" not in parts:
            rows.append(("attention", f"none: the prior feeds {' and '.join(p.lost for p in parts.values())} only"))
        lines += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows] + [""]
    else:
        lines += ["None: this is the baseline without a prior.", ""]
    lines += ["## Data", ""]
    data = training.get("data") or {}
    for split, src in data.items():
        lines.append(f"- {split}: `{json.dumps(src, sort_keys=True)}`")
    summary = training.get("summary") or {}
    lines += [f"- training fraction {training.get('fraction')}, seed {training.get('seed')}"
              + (f", {summary.get('examples')} examples, {summary.get('steps')} steps" if summary else ""), ""]
    lines += [f"Labels: {task['labels']}" if task.get("labels") else
              f"Scores are predicted on the labels' own scale (the model learnt label / {task['label_scale']:g}).", ""]
    lines += ["## Scores", ""]
    scores = info.get("scores")
    if scores:
        names = sorted({k for s in scores.values() for k in s if k not in ("examples", "seconds")})
        lines += ["| metric | " + " | ".join(scores) + " |", "|---|" + "---|" * len(scores)]
        for name in names:
            lines.append(f"| {name} | " + " | ".join(
                f"{scores[s][name]:.4f}" if name in scores[s] else "-" for s in scores) + " |")
        lines.append("")
    else:
        lines += ["Not evaluated yet (the pipeline's evaluate step fills this in).", ""]
    if parts:
        use = "The prior is part of the model: load it through priorkit, which " + "; it also ".join(
            p.use for p in parts.values()) + "."
    else:
        use = "Load it through priorkit, which reads the labels, their scale and the input kind from `priorkit.json`."
    lines += ["## Use", "", use, "",
              "```python", "import priorkit", "", 'model = priorkit.load_model("PATH/TO/THIS/FOLDER")',
              _example_call(info["inputs"]), "```", "",
              "```bash", "priorkit predict PATH/TO/THIS/FOLDER input.tsv --out predictions.jsonl", "```", ""]
    if prior:
        lost = " and ".join(p.lost for p in parts.values()) or "the prior"
        lines += [f"A plain `AutoModel...from_pretrained` gives the stock model without {lost}.", ""]
    lines += ["## Training", "", "```bash", training.get("command") or "(unknown)", "```", "",
              f"priorkit {info.get('priorkit_version')}, {info.get('created')}.", ""]
    return "\n".join(lines)


def _channel_cards(info: Mapping[str, Any]) -> dict[str, Any]:
    """name -> the channel's CardText, for every channel priorkit.json names (a channel this
    process has not registered is shown by its description)."""
    from ..channels import CHANNELS, Channel

    out = {}
    for name, description in (info.get("channels") or {}).items():
        cls = CHANNELS.get(name) or type(name, (Channel,), {"name": name})
        out[name] = cls.card(description, info.get("prior"))
    return out


def _example_call(inputs: str) -> str:
    if inputs == "words":
        return 'model.predict([["Aspirin", "causes", "nausea", "."]])   # [{"tags": [...], "entities": [...]}]'
    if inputs == "single":
        return 'model.predict(["A man plays guitar."])'
    return 'model.predict([("A man plays guitar.", "A woman plays the guitar.")])'

"""What a saved model folder carries besides the weights: ``priorkit.json`` and a model card.

A pipeline's train step writes both into ``model/`` (next to config.json, the
weights and the tokenizer files):

``priorkit.json``
    everything needed to build the same priors at inference and to put the
    prior back into attention: the task (type, labels, label scale), the input
    kind (sentence pairs, single texts or words), the tokenizer's max length,
    the prior (its :class:`~priorkit.spec.PriorSpec` as ``spec.to_dict()``, and
    the provider's name, parameters, version and fingerprint), the attention
    settings (mode, layers, heads, options; null when the prior only feeds token
    features), the token features (``prior.features``: their provider, groups and
    width, from ``priorkit-features.json``; null without) and the cache the run read.
    :func:`priorkit.load_model` rebuilds the builder from the spec.  Format 1
    (before the spec was stored whole: no ``within``, no stop words) still loads.

``README.md``
    a Hugging Face style model card: YAML front matter, the prior, the data,
    the scores (filled in by the evaluate step) and the command that trained it.
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
#: 2: the prior's PriorSpec stored whole (``prior.spec``); 1: hand-picked prior fields
FORMAT = 2
READABLE_FORMATS = (1, 2)
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


def prior_description(spec: PriorSpec | None, name: str | None, cache: str | None,
                      attention: Mapping[str, Any] | None,
                      features: Mapping[str, Any] | None = None) -> dict | None:
    """The prior part of priorkit.json (None: no prior): the spec whole, what its provider
    says about itself (name, parameters with defaults, version, fingerprint), the attention
    settings (None: the prior is not in attention) and the token features (None: none)."""
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
        "attention": dict(attention) if attention else None,
        "features": dict(features) if features else None,
        "cache": cache,
    }


def features_description(folder: str | os.PathLike) -> dict | None:
    """The token features of a model folder, for priorkit.json and the card (None: none):
    what ``priorkit-features.json`` says of their provider, groups and width."""
    from ..features.folder import read_config

    saved = read_config(folder)
    if saved is None:
        return None
    config, provider = saved["config"], saved.get("provider") or {}
    return {
        "provider": provider.get("name", config.get("provider")),
        "params": provider.get("params", config.get("params")),
        "provider_version": str(provider.get("version")),
        "fingerprint": provider.get("fingerprint"),
        "groups": list(config["groups"]),
        "n_features": saved["n_features"],
        "concept_buckets": config.get("concept_buckets", 0),
        "gate": config.get("gate"),
        # the control provider moves the matches to random spans (older folders: features.control)
        "control": "random-spans" if provider.get("name") == "random-spans" else config.get("control"),
    }


def spec_from_info(prior: Mapping[str, Any]) -> PriorSpec:
    """The PriorSpec of priorkit.json's ``prior`` (read_info has upgraded format 1)."""
    return PriorSpec.from_dict(prior["spec"])


def describe_run(meta: Mapping[str, Any], attention: Mapping[str, Any] | None, inputs: str,
                 command: str | None = None, features: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """priorkit.json's content from a run's metadata (``priorkit.pipeline.train.run_metadata``,
    whose ``prior`` is the run's prior setting: a PriorSpec's fields plus the pipeline's own);
    ``features``: :func:`features_description` of the model folder."""
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
        "prior": prior_description(spec, setting.get("name") if setting else None, meta.get("cache"), attention,
                                   features),
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
                      command: str | None = None) -> dict[str, Any]:
    """Write priorkit.json and README.md into a model folder that holds config.json (and
    priorkit-features.json when the model has token features: write that first)."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    info = describe_run(meta, config.get("priorkit"), inputs, command, features_description(folder))
    _write(folder / PRIORKIT_JSON, json.dumps(info, indent=2) + "\n")
    _write(folder / CARD, model_card(info, config))
    return info


def add_scores(folder: str | os.PathLike, scores: Mapping[str, Mapping[str, float]]) -> bool:
    """Record the evaluate step's scores in priorkit.json and the card; False without priorkit.json."""
    folder = Path(folder)
    path = folder / PRIORKIT_JSON
    if not path.exists():
        return False
    info = json.loads(path.read_text())
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
    return info


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
    """The README.md of a model folder (Hugging Face model card layout)."""
    task, prior, training = info["task"], info.get("prior"), info.get("training") or {}
    att, feats = _uses(prior)
    base = training.get("base_model") or "sentence-transformers/all-MiniLM-L6-v2"
    front = ["---", "library_name: transformers", f"pipeline_tag: {_PIPELINE_TAG[task['type']]}",
             "tags:", "- priorkit"]
    if att:
        front += ["- prior-guided-attention", f"- prior-{prior['provider']}"]
    if feats:
        front += ["- token-features"] + ([f"- prior-{feats['provider']}"]
                                         if att is None or feats["provider"] != prior["provider"] else [])
    if not os.path.isabs(base):
        front.append(f"base_model: {base}")
    if task.get("metric"):
        front += ["metrics:", f"- {task['metric']}"]
    front.append("---")
    title = training.get("pipeline") or "priorkit model"
    lines = front + ["", f"# {title}: {training.get('prior_setting') or 'no prior'}", "",
                     f"A `{config.get('model_type', '?')}` encoder fine-tuned by "
                     f"priorkit for {task['type']}{_prior_summary(prior)}", ""]
    lines += ["## Prior", ""]
    if prior:
        rows = _attention_rows(prior) if att is not None else []
        if feats:
            rows += _feature_rows(feats)
            if att is None:
                rows.append(("attention", "none: the prior feeds the token features only"))
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
    lines += ["## Use", "", _use_text(att, feats), "",
              "```python", "import priorkit", "", 'model = priorkit.load_model("PATH/TO/THIS/FOLDER")',
              _example_call(info["inputs"]), "```", "",
              "```bash", "priorkit predict PATH/TO/THIS/FOLDER input.tsv --out predictions.jsonl", "```", ""]
    if prior:
        lost = " and ".join(w for w, on in (("the prior attention", att is not None),
                                             ("the token features", bool(feats))) if on) or "the prior"
        lines += [f"A plain `AutoModel...from_pretrained` gives the stock model without {lost}.", ""]
    lines += ["## Training", "", "```bash", training.get("command") or "(unknown)", "```", "",
              f"priorkit {info.get('priorkit_version')}, {info.get('created')}.", ""]
    return "\n".join(lines)


def _uses(prior: Mapping[str, Any] | None) -> tuple[dict | None, dict | None]:
    """(attention settings, token features) of priorkit.json's prior; None for what the model
    does not have.  A prior with neither on record (not written by this priorkit) counts as
    attention, as format 1 folders all were."""
    if not prior:
        return None, None
    att, feats = prior.get("attention"), prior.get("features")
    if att is None and not feats:
        att = {}
    return (dict(att) if att is not None else None), (dict(feats) if feats else None)


def _prior_summary(prior: Mapping[str, Any] | None) -> str:
    """How the model uses its prior, in words, for the card's first sentence."""
    att, feats = _uses(prior)
    parts = []
    if att is not None:
        parts.append(f"a prior from the {prior['provider']} provider in its attention")
    if feats:
        parts.append(f"token features from the {feats['provider']} provider's concept matches (B/I tags of "
                     f"{', '.join(feats['groups'])}) added to its input embeddings")
    return " with " + " and ".join(parts) + "." if parts else " without a prior."


def _attention_rows(prior: Mapping[str, Any]) -> list[tuple[str, str]]:
    att = prior.get("attention") or {}
    spec = spec_from_info(prior)
    built = spec.resolved()
    return [("provider", f"{prior['provider']} v{prior['provider_version']}"),
            ("parameters", json.dumps(prior["params"], sort_keys=True)),
            ("fingerprint", f"`{prior['fingerprint']}`"),
            ("preset", spec.preset or "-"), ("layout", built.layout), ("keys", built.keys),
            ("neutral", f"{built.neutral:g}"), ("within", built.within),
            ("attention", f"mode {att.get('mode')}, layers {att.get('layers')}, heads {att.get('heads') or 'all'}"
                          + (f", options {att.get('options')}" if att.get("options") else ""))]


def _feature_rows(feats: Mapping[str, Any]) -> list[tuple[str, str]]:
    width = f"{feats['n_features']} (B/I tags of {', '.join(feats['groups'])})"
    if feats.get("concept_buckets"):
        width += f", hashed concept ids in {feats['concept_buckets']} buckets"
    rows = [("token features", width),
            ("feature provider", f"{feats['provider']} v{feats['provider_version']}"),
            ("feature parameters", json.dumps(feats["params"], sort_keys=True)),
            ("feature fingerprint", f"`{feats['fingerprint']}`"),
            ("feature gate", feats.get("gate") or "-")]
    if feats.get("control"):
        rows.append(("control", f"{feats['control']}: matches moved to random spans (no knowledge)"))
    return rows


def _use_text(att: Mapping[str, Any] | None, feats: Mapping[str, Any] | None) -> str:
    does = []
    if att is not None:
        does.append("rebuilds the same priors from `priorkit.json` and switches prior attention back on")
    if feats:
        does.append("attaches the token-feature input again (`priorkit-features.safetensors`) and rebuilds "
                    "the features from the provider (`priorkit-features.json`)")
    if not does:
        return ("Load it through priorkit, which reads the labels, their scale and the input kind from "
                "`priorkit.json`.")
    return "The prior is part of the model: load it through priorkit, which " + "; it also ".join(does) + "."


def _example_call(inputs: str) -> str:
    if inputs == "words":
        return 'model.predict([["Aspirin", "causes", "nausea", "."]])   # [{"tags": [...], "entities": [...]}]'
    if inputs == "single":
        return 'model.predict(["A man plays guitar."])'
    return 'model.predict([("A man plays guitar.", "A woman plays the guitar.")])'

"""The model card: a model folder's README.md in the Hugging Face layout (YAML front matter,
the prior and each channel's rows, the data, the scores, how to load it, the command that
trained it), written from priorkit.json's content; each channel writes its own part
(``Channel.card``)."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

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

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


def recipe_card(info: Mapping[str, Any]) -> str:
    """The README.md of a recipe folder: its chain of steps, members, dictionary, the scores with
    the files they were measured in, how to load it and the command that made it."""
    from ..decode.steps import describe, from_data

    run, dictionary = info.get("run") or {}, info.get("dictionary")
    labels = (info.get("task") or {}).get("labels") or []
    types = sorted({label[2:] for label in labels if label[1:2] == "-"})
    front = ["---", "library_name: transformers", "pipeline_tag: token-classification", "tags:", "- priorkit",
             "- priorkit-recipe", "---"]
    title = f"{run.get('pipeline') or 'priorkit'}: {run.get('arm') or 'recipe'}"
    lines = front + ["", f"# {title}", "",
                     f"A priorkit recipe: {len(info['members'])} NER model(s) and the steps after them, tagging "
                     f"{', '.join(types) or 'entities'}.", "", "## Chain", "",
                     describe(from_data(info["steps"])), "", "| step | settings |", "|---|---|"]
    for step in info["steps"]:
        lines.append(f"| {step['kind']} | " + ", ".join(f"{k}: {v}" for k, v in step.items() if k != "kind") + " |")
    lines += ["", "## Members", "", "| name | folder | share | SHA-256 of the weights |", "|---|---|---|---|"]
    for m in info["members"]:
        lines.append(f"| {m['name']} | `{m['folder']}` | {m.get('share') if m.get('share') is not None else '-'} | "
                     f"`{m.get('sha256', '')[:16]}` |")
    lines += ["", "## Dictionary", ""]
    if dictionary:
        cal = dictionary.get("calibration") or {}
        lines += [f"- provider `{dictionary['provider']}`, parameters `{json.dumps(dictionary['params'], sort_keys=True)}`",
                  f"- fingerprint `{dictionary.get('fingerprint')}`",
                  f"- type map `{json.dumps(dictionary['types'])}`",
                  f"- calibration: " + (f"threshold {cal.get('threshold')}, {len(cal.get('drop') or [])} forms dropped, "
                                        f"{len(cal.get('keep') or [])} kept" if cal else "none")]
    else:
        lines.append("None: the steps read no dictionary.")
    files = (info.get("data") or {}).get("files") or []
    if files:
        lines += ["", "Ontology files carried in `dictionary/`: " + ", ".join(
            f"`{f['name']}` ({f['bytes'] / 1e6:.1f} MB)" for f in files) + "."]
    lines += ["", "## Scores", ""]
    scores = info.get("scores") or {}
    if scores:
        lines += ["| split | precision | recall | f1 | sentences |", "|---|---|---|---|---|"]
        for split, s in scores.items():
            lines.append(f"| {split} | {s.get('precision', float('nan')):.4f} | {s.get('recall', float('nan')):.4f} | "
                         f"{s.get('f1', float('nan')):.4f} | {int(s.get('examples', 0))} |")
        lines += ["", "Measured by the sweep arm this recipe was exported from, in:"]
        lines += [f"- {what}: `{path}`" for what, path in (info.get("result_files") or {}).items()]
    else:
        lines.append("Not measured.")
    lines += ["", "## Use", "", "```python", "import priorkit", "",
              'tagger = priorkit.load_model("PATH/TO/THIS/FOLDER")',
              'tagger("Haloperidol-induced tremor was treated with biperiden.")   # entities with character offsets',
              'tagger.predict([["Aspirin", "causes", "nausea", "."]])              # tags of pre-split sentences',
              "```", "", "```bash", "priorkit predict PATH/TO/THIS/FOLDER input.conll --out tagged.jsonl", "```", "",
              "## Made by", "", "```bash", run.get("command") or "(unknown)", "```", "",
              f"priorkit {info.get('priorkit_version')}, {info.get('created')}"
              + (f"; {info['bytes'] / 1e6:.0f} MB" if info.get("bytes") else "") + ".", ""]
    return "\n".join(lines)

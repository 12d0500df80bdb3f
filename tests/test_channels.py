"""A third channel from outside the package is one file plus its registration: a plug-in
file in a plug-in folder registers a toy channel (each token's word length, times one learnt
vector, added to the input embeddings) through ``register_channels``; a tiny pipeline run
trains with it, the model folder describes it in priorkit.json and keeps its weights in
model.safetensors, and ``priorkit.load_model`` (and ``priorkit predict`` in a fresh process)
restores it and predicts what the trained model predicts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import priorkit

ROOT = Path(__file__).resolve().parent.parent

PLUGIN = '''
import torch
from torch import nn

import priorkit
from priorkit.channels import Channel


class WordLength(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(hidden))
        self.pending = None


def _pre_hook(model, args, kwargs):
    model.priorkit_length.pending = kwargs.pop("word_length", None)
    return args, kwargs


def _embedding_hook(module, args, output):
    owner = module.__dict__.get("_length_owner")
    if owner is None or owner.pending is None:
        return output
    lengths, owner.pending = owner.pending.to(output.device, output.dtype), None
    return output + lengths.unsqueeze(-1) * owner.weight


class Length(Channel):
    """Each token's word length / 10, times one learnt vector, added to the embeddings."""

    name = "length"
    batch_keys = ("word_length",)

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    @classmethod
    def from_setting(cls, prior, context):
        section = cls.section(prior)
        return None if section is None else cls(section.get("learning_rate"))

    @classmethod
    def restore(cls, description, context):
        return cls(None)

    def batch_tensors(self, examples, encoding):
        B, L = encoding["input_ids"].shape
        out = torch.zeros(B, L)
        for b, e in enumerate(examples):
            for t, w in enumerate(encoding.word_ids(b)):
                if w is not None:
                    out[b, t] = len(e["words"][w]) / 10
        return {"word_length": out}

    def attach(self, model):
        embeddings = model.get_input_embeddings()
        module = WordLength(embeddings.weight.shape[1])
        model.add_module("priorkit_length", module)
        embeddings.__dict__["_length_owner"] = module
        module.__dict__["_handles"] = (model.register_forward_pre_hook(_pre_hook, with_kwargs=True),
                                       embeddings.register_forward_hook(_embedding_hook))

    def detach(self, model):
        for handle in model.priorkit_length.__dict__.pop("_handles"):
            handle.remove()
        model.get_input_embeddings().__dict__.pop("_length_owner", None)
        delattr(model, "priorkit_length")

    def parameters(self, model):
        return [model.priorkit_length.weight]

    def describe(self):
        return {"scale": 0.1}


@priorkit.hookimpl
def register_channels(register):
    register(Length)
'''

CONLL = "Aspirin\tB-Chemical\ncauses\tO\nsevere\tO\nnausea\tB-Disease\n.\tO\n\n" \
        "Patients\tO\ngiven\tO\nlithium\tB-Chemical\ncarbonate\tI-Chemical\ndeveloped\tO\n" \
        "renal\tB-Disease\nfailure\tI-Disease\n.\tO\n\n"


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("channel-plugins")
    folder.chmod(0o755)
    (folder / "length_channel.py").write_text(PLUGIN)
    return folder


def test_a_plugin_channel_trains_saves_reloads_and_predicts(plugin_dir, tmp_path, tiny_bert_dir, monkeypatch,
                                                            one_torch_thread):
    import torch
    from safetensors.torch import load_file

    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    (tmp_path / "train.conll").write_text(CONLL * 4)
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: t
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 24}}
        task: {{type: token-classification, metric: f1}}
        data:
          train: {{path: {tmp_path / 'train.conll'}}}
          eval: {{path: {tmp_path / 'train.conll'}, limit: 2}}
        prior: {{name: len, provider: wordnet, cache: null, attention: null,
                 channels: {{length: {{learning_rate: 0.05}}}}}}
        train: {{epochs: 1, learning_rate: 1.0e-3, batch_size: 4, progress: false, threads: 1, save: 'no'}}
        """))
    with pytest.raises(priorkit.PriorkitError, match=r"p.yaml:\d+.*prior.channels.length: is not a registered"):
        load_config(str(path))
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugin_dir))
    result = run_pipeline(load_config(str(path)), log=lambda m: None)
    folder = result.plan.run_dir / "model"

    info = json.loads((folder / "priorkit.json").read_text())
    assert info["format"] == 4 and info["channels"] == {"length": {"scale": 0.1}}
    weights = load_file(str(folder / "model.safetensors"))
    trained = weights["priorkit_length.weight"]
    assert trained.shape == (32,) and trained.abs().sum() > 0  # learnt from zero, in the model's own weights
    card = (folder / "README.md").read_text()
    assert "the length channel" in card

    examples = [{"words": ["Aspirin", "causes", "nausea", "."], "tags": ["B-Chemical", "O", "B-Disease", "O"]},
                {"words": ["lithium", "failure"], "tags": ["B-Chemical", "O"]}]
    model = priorkit.load_model(folder)
    assert [c.name for c in model.channels] == ["length"] and model.builder is None
    assert torch.equal(model.model.priorkit_length.weight.detach(), trained)  # restored from model.safetensors
    got = model.logits([e["words"] for e in examples])
    alone = [model.logits([e["words"]])[0] for e in examples]  # one at a time: padding changes nothing
    for g, a in zip(got, alone):
        np.testing.assert_allclose(g, a, atol=1e-6)
    # show: the attention with the channel on and off (its batch key left out), nothing per token
    from priorkit.inference.attention_view import compare

    shown = compare(model, examples[0]["words"], layers=[0, 1])
    assert shown.channels == ("length",) and shown.without_prior.channels_on == () and not shown.token_views
    assert all(s.moved > 0 for s in shown.summary) and shown.with_prior.prior is None
    # the channel matters: without its tensors the same weights compute something else
    model.channels[0].detach(model.model)
    model.channels = []
    assert not np.array_equal(model.logits([examples[0]["words"]])[0], got[0])

    # a fresh process learns of the channel from the plug-in folder only
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("PRIORKIT_PLUGINS_DIR", None)
    words = tmp_path / "in.conll"
    words.write_text("Aspirin\ncauses\nnausea\n.\n\n")
    run = [sys.executable, "-m", "priorkit", "predict", str(folder), str(words), "--input-format", "conll"]
    lost = subprocess.run([*run, "--out", str(tmp_path / "a.jsonl")], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert lost.returncode != 0 and "plug-in 'length_channel' (its channel 'length'), which is not loaded" in lost.stderr
    assert f"loaded from {plugin_dir / 'length_channel.py'}" in lost.stderr  # where it came from at training time
    ran = subprocess.run([sys.executable, "-m", "priorkit", "--plugins-dir", str(plugin_dir), *run[3:],
                          "--out", str(tmp_path / "b.jsonl"), "--no-progress"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])
    assert record["tags"] == priorkit.load_model(folder).predict([examples[0]["words"]])[0]["tags"]


def test_a_channel_is_registered_once():
    from priorkit.channels import Channel, register_channel

    class Other(Channel):
        name = "features"

    with pytest.raises(priorkit.PriorkitError, match="'features' is registered already"):
        register_channel(Other)
    with pytest.raises(priorkit.PriorkitError, match="not a Channel subclass"):
        register_channel(dict)

"""A mode from a plug-in folder, registered only through the ``register_attention_modes`` hook,
is usable from the command line: ``priorkit run`` trains with it, ``priorkit predict`` loads
the model (a fresh process: nothing but the hook tells it the mode), and ``priorkit show``
labels its learned parameter with the mode's own label."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PLUGIN = '''
import torch

import priorkit
from priorkit.attention import AttentionMode, Call
from priorkit.attention.maths import additive_mask


class TiltedBias(AttentionMode):
    """softmax(raw * s + A + w_h * (P - 0.5)), w_h learnt per head."""

    name = "tilted_bias"
    options = {"init": 0.25}
    learnable = "prior_w"
    learnable_label = "tilt"

    def attend(self, layer, call: Call):
        weight = layer.head_vector(call.module, call.query, self.learnable).view(1, -1, 1, 1)
        bias = (call.prior4.float() - 0.5) * weight.float()
        additive = additive_mask(call.mask, torch.float32)
        mask = bias if additive is None else bias + additive
        return call.stock(mask.clamp_min(torch.finfo(call.dtype).min).to(call.dtype))


@priorkit.hookimpl
def register_attention_modes(register):
    register(TiltedBias)
'''


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mode-plugins")
    folder.chmod(0o755)
    (folder / "tilted.py").write_text(PLUGIN)
    return folder


def test_the_manager_collects_a_plugin_mode_and_the_registry_finds_it(plugin_dir):
    from priorkit.attention import MODES
    from priorkit.attention.mode import find_mode
    from priorkit.providers.plugins import PriorkitPluginManager

    pm = PriorkitPluginManager(plugin_dir, load_entry_points=False)
    assert list(pm.attention_modes) == ["tilted_bias"]
    info = {p.name: p for p in pm.plugins()}["tilted"]
    assert info.hooks == ["register_attention_modes"] and info.modes == ["tilted_bias"]
    assert "tilted_bias" not in MODES  # the plug-in file itself registers nothing
    assert find_mode("tilted_bias") is None  # not on the plug-in path of this process


def test_a_plugin_mode_that_is_not_a_mode_makes_the_plugin_broken(tmp_path):
    from priorkit.providers.plugins import PriorkitPluginManager

    (tmp_path / "bad.py").write_text("import priorkit\n\n@priorkit.hookimpl\n"
                                     "def register_attention_modes(register):\n    register('tilt')\n")
    tmp_path.chmod(0o755)
    pm = PriorkitPluginManager(tmp_path, load_entry_points=False)
    assert pm.attention_modes == {}
    (bad,) = pm.broken()
    assert "registered 'tilt' as an attention mode" in bad.error


def test_a_plugin_mode_trains_predicts_and_shows_from_the_cli(plugin_dir, tmp_path, tiny_bert_dir):
    out = tmp_path / "runs"
    (tmp_path / "p.yaml").write_text(textwrap.dedent(f"""\
        name: t
        output_dir: {out}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 24}}
        task: {{type: regression, label_scale: 5.0}}
        data:
          train: {{source: stsb, split: train, sample: 16, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 8}}
        prior: {{name: tilt, preset: paper, attention: {{layers: [0], mode: tilted_bias, learning_rate: 0.05}}}}
        train: {{epochs: 1, learning_rate: 1.0e-3, batch_size: 8, progress: false, threads: 1, save: 'no'}}
        """))
    without = cli("run", str(tmp_path / "p.yaml"))
    assert without.returncode != 0 and "unknown attention mode 'tilted_bias'" in without.stderr
    ran = cli("--plugins-dir", str(plugin_dir), "run", str(tmp_path / "p.yaml"))
    assert ran.returncode == 0, ran.stderr[-3000:]
    run = out / "tilt" / "frac1" / "seed0"
    info = json.loads((run / "model" / "priorkit.json").read_text())
    assert info["channels"]["attention"]["mode"] == "tilted_bias"
    from safetensors.torch import load_file

    weights = load_file(str(run / "model" / "model.safetensors"))
    (trained,) = [v for k, v in weights.items() if k.endswith("prior_w")]
    assert trained.shape == (4,) and not bool((trained == 0.25).all())  # learnt from 0.25

    source = tmp_path / "in.tsv"
    source.write_text("sentence1\tsentence2\nA cat sits.\tA dog sits.\nIt rains.\tIt is wet.\n")
    pred = cli("--plugins-dir", str(plugin_dir), "predict", str(run), str(source), "--out", str(tmp_path / "o.jsonl"),
               "--no-progress")
    assert pred.returncode == 0, pred.stderr[-3000:]
    scores = [json.loads(line)["score"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    lost = cli("predict", str(run), str(source), "--out", str(tmp_path / "o2.jsonl"))
    assert lost.returncode != 0 and "tilted_bias" in lost.stderr

    shown = cli("--plugins-dir", str(plugin_dir), "show", str(run), "A cat sits.", "A dog sits.", "--json", "-")
    assert shown.returncode == 0, shown.stderr[-3000:]
    heads = json.loads(shown.stdout)["attention"]
    layer0 = [h for h in heads if h["layer"] == 0]
    assert layer0 and {h["learned_name"] for h in layer0} == {"tilt"}
    assert [h["learned"] for h in sorted(layer0, key=lambda h: h["head"])] == trained.float().tolist()

"""A pipeline run on MPNet with prior attention, its model folder reloaded by
priorkit.load_model: the adapter's gates come back from the weights and the prior is applied.

A tiny random MPNet (2 layers, width 32) beside the real all-mpnet-base-v2 tokenizer,
trained for one epoch on a few real STS-B pairs with the paper's WordNet prior.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch

import priorkit

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_mpnet_dir(tmp_path_factory):
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel

    from priorkit.resources import mpnet_path

    out = tmp_path_factory.mktemp("tiny-mpnet")
    tok = AutoTokenizer.from_pretrained(str(mpnet_path()))
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, max_position_embeddings=130)
    MPNetModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def mpnet_run(tmp_path_factory, tiny_mpnet_dir):
    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    tmp = tmp_path_factory.mktemp("mpnet-run")
    path = tmp / "p.yaml"
    path.write_text(f"name: t\noutput_dir: {tmp / 'runs'}\nmodel: {{name_or_path: {tiny_mpnet_dir}, max_length: 24}}\n"
                    + textwrap.dedent("""\
        task: {type: regression, label_scale: 5.0}
        data:
          train: {source: stsb, split: train, sample: 16, sample_seed: 1}
          eval: {source: stsb, split: dev, sample: 8}
        prior: {name: paper, preset: paper, attention: {layers: [0, 1], mode: gate, options: {init: 0.5}}}
        """) + "train: {epochs: 1, learning_rate: 1.0e-2, batch_size: 8, progress: false, threads: 1, "
               "logging_steps: 100, save: 'no'}\n")
    return run_pipeline(load_config(str(path), ()), log=lambda m: None).plan.run_dir


def test_mpnet_model_folder_restores_the_prior(mpnet_run, stsb_dev_pairs, tmp_path):
    import shutil

    from safetensors import safe_open

    pairs = stsb_dev_pairs[:6]
    model = priorkit.load_model(mpnet_run)
    assert model.model.config.model_type == "mpnet"
    assert model.model.config._attn_implementation == "priorkit_eager"  # prior attention is back on
    with safe_open(str(mpnet_run / "model" / "model.safetensors"), framework="pt") as fh:
        saved = {k: fh.get_tensor(k) for k in fh.keys() if k.endswith(".prior_gate")}
    assert sorted(saved) == [f"mpnet.encoder.layer.{i}.attention.attn.prior_gate" for i in (0, 1)]
    for i in (0, 1):
        gate = model.model.mpnet.encoder.layer[i].attention.attn.prior_gate
        assert not torch.allclose(gate, torch.full_like(gate, 0.5))  # the learnt gates, not their init
        torch.testing.assert_close(gate, saved[f"mpnet.encoder.layer.{i}.attention.attn.prior_gate"], atol=0, rtol=0)
    logits = np.stack(model.logits(pairs))

    shared = tmp_path / "shared-model"  # the folder alone, somewhere else, without its run
    shutil.copytree(mpnet_run / "model", shared)
    (shared / "priorkit-run.json").unlink(missing_ok=True)
    np.testing.assert_array_equal(np.stack(priorkit.load_model(shared).logits(pairs)), logits)

    priorkit.disable_prior_attention(model.model)  # without its prior the same weights predict otherwise
    model.builder = None
    stock = np.stack(model.logits(pairs))
    assert np.abs(stock - logits).max() > 1e-7, "the prior changed nothing"

"""Attention modes as objects: a mode defined and registered outside the package (this file)
is enabled, trained for a few steps with a learnable parameter, saved and restored, and
accepted by the pipeline's checks -- the one registry serves all of them."""
from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSequenceClassification, BertConfig

from priorkit.attention import (MODES, AttentionMode, Call, PriorAttentionConfigError, disable_prior_attention,
                                enable_prior_attention, prior_parameters, register_mode)
from priorkit.attention import maths

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class ShiftedBias(AttentionMode):
    """``softmax(raw * s + A + w_h * (P - shift))``: a learnable per-head weight on the
    centred prior, added to the mask (the model's own kernel does the rest)."""

    name = "shifted_bias"
    options = {"init": 0.5, "shift": 0.5}
    learnable = "prior_shift_weight"

    def check_options(self, options):
        if not 0 <= options["shift"] <= 1:
            raise PriorAttentionConfigError(f"shifted_bias option shift={options['shift']} must lie in [0, 1].")

    def attend(self, layer, call: Call):
        weight = layer.head_vector(call.module, call.query, self.learnable).view(1, -1, 1, 1)
        bias = (call.prior4.float() - layer.options["shift"]) * weight.float()
        additive = maths.additive_mask(call.mask, torch.float32)
        mask = bias if additive is None else bias + additive
        return call.stock(mask.clamp_min(torch.finfo(call.dtype).min).to(call.dtype))


register_mode(ShiftedBias)

_CFG = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=37, vocab_size=99,
            pad_token_id=0, max_position_embeddings=64, initializer_range=0.2, num_labels=1)


def bert(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return AutoModelForSequenceClassification.from_config(BertConfig(**_CFG), attn_implementation="sdpa")


def data(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 90, (8, 10), generator=g)
    mask = torch.ones(8, 10, dtype=torch.long)
    mask[-2:, 7:] = 0
    m = mask.float()
    prior = torch.rand(8, 10, 10, generator=g) * m[:, :, None] * m[:, None, :]
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.rand(8, generator=g)}, prior


def test_an_outside_mode_trains_saves_and_restores(tmp_path):
    assert "shifted_bias" in MODES
    batch, prior = data()
    model = enable_prior_attention(bert(), layers=[0, 1], mode="shifted_bias", heads=[0, 2], shift=0.25)
    assert model.config.priorkit["options"] == {"init": 0.5, "shift": 0.25}
    params = dict(prior_parameters(model))
    assert sorted(params) == ["bert.encoder.layer.0.attention.self.prior_shift_weight",
                              "bert.encoder.layer.1.attention.self.prior_shift_weight"]
    stock = bert().train()
    torch.manual_seed(1)
    with torch.no_grad():
        model.eval(), stock.eval()
        assert not torch.allclose(model(**batch, prior=prior).logits, stock(**batch).logits)
        assert torch.equal(model(**batch).logits, stock(**batch).logits)  # no prior=: the stock model
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2)
    before = {n: p.detach().clone() for n, p in params.items()}
    losses = []
    for _ in range(5):
        loss = model(**batch, prior=prior).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]
    assert all(not torch.equal(before[n], p) for n, p in params.items())  # the mode's parameter learnt
    model.save_pretrained(tmp_path)
    restored = AutoModelForSequenceClassification.from_pretrained(tmp_path, attn_implementation="sdpa")
    enable_prior_attention(restored)  # the saved settings and the learnt weights come back
    for name, p in prior_parameters(restored):
        assert torch.equal(p, params[name].detach())
    disable_prior_attention(model)
    assert prior_parameters(model) == []


def test_an_outside_modes_option_checks_run():
    with pytest.raises(PriorAttentionConfigError, match=r"shift=2.0 must lie in \[0, 1\]"):
        enable_prior_attention(bert(), mode="shifted_bias", shift=2.0)
    with pytest.raises(PriorAttentionConfigError, match=r"takes no option\(s\) \['lam'\]"):
        enable_prior_attention(bert(), mode="shifted_bias", lam=1.0)


def test_the_pipeline_checks_read_the_registry():
    from priorkit.config import ConfigError, config_from_dict

    raw = {"name": "x", "data": {"train": {"source": "stsb"}, "eval": {"source": "stsb"}},
           "prior": {"attention": {"mode": "shifted_bias", "options": {"shift": 0.1}, "learning_rate": 0.01}}}
    assert config_from_dict(raw).prior.attention.mode == "shifted_bias"
    raw["prior"]["attention"]["options"] = {"shift": 3}
    with pytest.raises(ConfigError, match=r"prior.attention.options: shifted_bias option shift=3.0"):
        config_from_dict(raw)
    raw["prior"]["attention"] = {"mode": "shifted"}
    with pytest.raises(ConfigError, match=r"prior.attention.mode: unknown attention mode 'shifted'; choose one of "
                                          r"bias, .*multiply, .*shifted_bias"):
        config_from_dict(raw)


def test_a_name_is_registered_once():
    class Other(AttentionMode):
        name = "bias"

    with pytest.raises(PriorAttentionConfigError, match="'bias' is registered already"):
        register_mode(Other)

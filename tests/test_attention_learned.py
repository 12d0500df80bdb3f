"""The two modes whose prior strength is learned from data: ``learned_bias`` (a per-head
strength on the additive prior, starting at the stock model) and ``supervise`` (an
auxiliary KL loss on the attention weights; the forward pass is the stock one).

References are independent of the code under test: the stock model, the ``bias`` mode
at a fixed lambda, and the attention weights the stock *eager* model returns with
``output_attentions=True``.
"""
from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModelForSequenceClassification, BertConfig

from priorkit.attention import (
    PriorAttentionConfigError,
    disable_prior_attention,
    enable_prior_attention,
    prior_parameters,
    supervision_loss,
)
from priorkit.attention.architectures import attention_modules

_CFG = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=37, vocab_size=99,
            pad_token_id=0, max_position_embeddings=64, initializer_range=0.2, num_labels=1)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def bert(seed: int = 0, attn: str = "sdpa", **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = BertConfig(**{**_CFG, **overrides})
    return AutoModelForSequenceClassification.from_config(config, attn_implementation=attn).eval()


def batch(b: int = 3, length: int = 10, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 90, (b, length), generator=g)
    mask = torch.ones(b, length, dtype=torch.long)
    mask[-1, length - 4:] = 0  # the last example is padded
    return {"input_ids": ids, "attention_mask": mask}


def prior_for(inputs: dict[str, torch.Tensor], seed: int = 1) -> torch.Tensor:
    """A random prior in [0, 1] with 0 on padding rows and columns (as PriorCollator pads)."""
    g = torch.Generator().manual_seed(seed)
    b, length = inputs["input_ids"].shape
    p = torch.rand(b, length, length, generator=g)
    m = inputs["attention_mask"].float()
    return p * m[:, :, None] * m[:, None, :]


# ------------------------------------------------------------------ learned_bias

def test_learned_bias_starts_as_the_stock_model_and_learns():
    stock = bert()
    model = enable_prior_attention(bert(), layers=[0, 1], mode="learned_bias")
    inputs = batch()
    p = prior_for(inputs)
    with torch.no_grad():
        ref = stock(**inputs).logits
        out = model(**inputs, prior=p).logits
    assert torch.allclose(out, ref, atol=1e-6), (out - ref).abs().max()
    names = [n for n, _ in prior_parameters(model)]
    assert names == ["bert.encoder.layer.0.attention.self.prior_strength",
                     "bert.encoder.layer.1.attention.self.prior_strength"]
    model.train()
    model(**inputs, prior=p).logits.sum().backward()
    grads = [prm.grad for _, prm in prior_parameters(model)]
    assert all(g is not None and g.shape == (4,) and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("heads", [None, (1, 3)])
def test_learned_bias_at_a_fixed_strength_equals_bias_mode(heads):
    lam = 0.7
    model = enable_prior_attention(bert(), layers=[0], mode="learned_bias", heads=heads)
    with torch.no_grad():
        for _, prm in prior_parameters(model):
            prm.fill_(lam)
    ref_model = enable_prior_attention(bert(), layers=[0], mode="bias", lam=lam, heads=heads)
    inputs = batch()
    p = prior_for(inputs)
    with torch.no_grad():
        out, ref = model(**inputs, prior=p).logits, ref_model(**inputs, prior=p).logits
    assert torch.allclose(out, ref, atol=1e-6), (out - ref).abs().max()
    # and it is not a no-op at that strength
    with torch.no_grad():
        assert (out - bert()(**inputs).logits).abs().max() > 1e-4


def test_learned_bias_save_load_restores_strengths(tmp_path):
    model = enable_prior_attention(bert(), layers=[2], mode="learned_bias", heads=[0, 2], eps=0.05)
    with torch.no_grad():
        prior_parameters(model)[0][1].copy_(torch.tensor([0.25, -1.5]))
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path)
    enable_prior_attention(loaded)  # settings and strengths from the folder
    (_, saved), = prior_parameters(loaded)
    assert saved.tolist() == [0.25, -1.5]
    inputs = batch()
    p = prior_for(inputs)
    with torch.no_grad():
        assert torch.allclose(loaded.eval()(**inputs, prior=p).logits, model(**inputs, prior=p).logits, atol=1e-6)


# ------------------------------------------------------------------ supervise

def reference_kl(model_eager: torch.nn.Module, inputs, p: torch.Tensor, layer: int, heads, power: float) -> torch.Tensor:
    """KL(T || A) from the stock eager model's own attention weights."""
    with torch.no_grad():
        attn = model_eager(**inputs, output_attentions=True).attentions[layer]  # (B, H, L, L)
    if heads is not None:
        attn = attn[:, list(heads)]
    keys = inputs["attention_mask"].bool()[:, None, None, :]
    t = p.clamp_min(0).pow(power)[:, None] * keys
    total = t.sum(-1, keepdim=True)
    t = t / total.clamp_min(1e-12)
    rows = (torch.xlogy(t, t) - t * torch.log(attn.clamp_min(1e-30))).sum(-1)
    valid = (total.squeeze(-1) > 0).expand_as(rows)
    return (rows * valid).sum() / valid.sum()


@pytest.mark.parametrize("heads,power", [(None, 1.0), ((0, 2), 2.0)])
def test_supervise_keeps_the_stock_forward_and_its_loss_is_the_kl(heads, power):
    inputs = batch()
    p = prior_for(inputs)
    stock = bert(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
    model = enable_prior_attention(bert(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0),
                                   layers=[1], mode="supervise", heads=heads, weight=0.5, power=power)
    with torch.no_grad():
        assert torch.equal(model(**inputs, prior=p).logits, stock(**inputs).logits)
    assert supervision_loss(model) is None  # eval mode: nothing computed, inference costs nothing extra
    model.train()
    out = model(**inputs, prior=p)
    assert torch.equal(out.logits.detach(), stock(**inputs).logits.detach())
    loss = supervision_loss(model)
    eager = bert(attn="eager", attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
    ref = 0.5 * reference_kl(eager, inputs, p, 1, heads, power)
    assert loss is not None and torch.allclose(loss, ref, atol=1e-5), (loss, ref)
    assert supervision_loss(model) is None  # taken once


def test_supervise_training_pulls_attention_towards_the_prior():
    inputs = batch(b=4, length=12, seed=3)
    p = prior_for(inputs, seed=4) ** 3  # a peaked target
    model = enable_prior_attention(bert(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0),
                                   layers=[0], mode="supervise", weight=1.0)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        model(**inputs, prior=p)
        loss = supervision_loss(model)
        losses.append(float(loss.detach()))
        loss.backward()
        opt.step()
    assert losses[-1] < 0.5 * losses[0], losses


def test_supervise_gradients_reach_only_layers_up_to_the_supervised_one():
    inputs = batch()
    model = enable_prior_attention(bert(), layers=[0], mode="supervise")
    model.train()
    model(**inputs, prior=prior_for(inputs))
    supervision_loss(model).backward()
    layers = attention_modules(model)
    assert layers[0].query.weight.grad.abs().sum() > 0
    assert layers[2].query.weight.grad is None  # above the supervised layer: untouched by the loss


def test_new_modes_bad_options_and_disable():
    with pytest.raises(PriorAttentionConfigError, match="weight"):
        enable_prior_attention(bert(), mode="supervise", weight=-1.0)
    with pytest.raises(PriorAttentionConfigError, match="eps"):
        enable_prior_attention(bert(), mode="learned_bias", eps=0.0)
    with pytest.raises(PriorAttentionConfigError, match="takes no option"):
        enable_prior_attention(bert(), mode="learned_bias", lam=1.0)
    model = bert()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    enable_prior_attention(model, mode="learned_bias", layers="all")
    disable_prior_attention(model)
    assert set(model.state_dict()) == set(before)
    assert prior_parameters(model) == []
    inputs = batch()
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits, bert()(**inputs).logits)


def test_supervise_grouped_kl_matches_log_softmax_reference():
    """The KL helper on hand-made tensors: A from log_softmax, T from P."""
    from priorkit.attention.builtin_modes.supervise import supervision_kl

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 8, generator=g), torch.randn(2, 4, 5, 8, generator=g)
    p = torch.rand(2, 1, 5, 5, generator=g)
    got = supervision_kl(q, k, None, p, 8 ** -0.5, None, 1.0)
    log_a = F.log_softmax(q @ k.transpose(2, 3) * 8 ** -0.5, -1)
    t = p / p.sum(-1, keepdim=True)
    want = (t * (t.log() - log_a)).sum(-1).mean()
    assert torch.allclose(got, want, atol=1e-6)

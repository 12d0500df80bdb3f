"""The fast attention paths against the reference: SDPA with a fused mask vs priorkit's eager
maths (PRIORKIT_ATTENTION_KERNEL=eager), FlexAttention's score_mod vs the formula and vs SDPA,
and the per-forward memo (shared tensors computed once, never stale).

Each comparison prints its max abs difference (run with -s to see them).
"""
from __future__ import annotations

import gc

import pytest
import torch
from transformers import AutoModelForSequenceClassification, BertConfig

from priorkit.attention import PriorAttentionConfigError, enable_prior_attention, supervision_loss
from priorkit.attention import kernels, shared
from priorkit.attention.architectures import attention_modules

_CFG = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=37, vocab_size=99,
            pad_token_id=0, max_position_embeddings=64, initializer_range=0.2, num_labels=2)
MODES = [("multiply", {}, None), ("multiply", {}, (0, 2)), ("gate", {"init": 0.7}, None), ("gate", {}, (1,)),
         ("bias", {"lam": 0.8, "eps": 0.05}, None), ("bias", {}, (0, 3)), ("learned_bias", {"init": 0.6}, None),
         ("learned_bias", {"init": -0.4}, (2,))]
IDS = [f"{m}-{'all' if h is None else 'heads'}" for m, _, h in MODES]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def bert(dropout: float = 0.0, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    cfg = BertConfig(**_CFG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=dropout)
    return AutoModelForSequenceClassification.from_config(cfg, attn_implementation="sdpa")


def batch(b: int = 3, length: int = 11, seed: int = 0, heads: int | None = None) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 90, (b, length), generator=g)
    mask = torch.ones(b, length, dtype=torch.long)
    mask[-1, length - 4:] = 0  # the last example is padded
    shape = (b, length, length) if heads is None else (b, heads, length, length)
    return {"input_ids": ids, "attention_mask": mask, "prior": torch.rand(*shape, generator=g)}


def _run(model, inputs, kernel, monkeypatch, train: bool):
    monkeypatch.setenv(kernels.ENV, kernel)
    shared.clear()
    model.train(train)
    model.zero_grad(set_to_none=True)
    if train:
        out = model(**inputs, labels=torch.tensor([0, 1, 1]))
        extra = supervision_loss(model)
        (out.loss if extra is None else out.loss + extra).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        return out.logits.detach(), grads
    with torch.no_grad():
        return model(**inputs).logits, {}


def _max_diff(a, b) -> float:
    worst = float((a[0] - b[0]).abs().max())
    assert a[1].keys() == b[1].keys()
    for name in a[1]:
        worst = max(worst, float((a[1][name] - b[1][name]).abs().max()))
    return worst


@pytest.mark.parametrize("mode,options,heads", MODES, ids=IDS)
def test_sdpa_path_equals_eager_reference(mode, options, heads, monkeypatch):
    """Forward and every gradient (train mode, no attention dropout), all layers primed, padded batch."""
    model = enable_prior_attention(bert(), layers="all", mode=mode, heads=heads, **options)
    inputs = batch()
    for train in (False, True):
        fast = _run(model, inputs, "sdpa", monkeypatch, train)
        ref = _run(model, inputs, "eager", monkeypatch, train)
        diff = _max_diff(fast, ref)
        print(f"\n{mode} heads={heads} train={train}: sdpa vs eager max abs diff {diff:.2e}")
        assert diff < 2e-5, diff
        if train and mode in ("gate", "learned_bias"):
            assert any(n.endswith(("prior_gate", "prior_strength")) for n in fast[1])


@pytest.mark.parametrize("mode,options,heads", MODES, ids=IDS)
def test_flex_path_equals_sdpa_on_cpu(mode, options, heads, monkeypatch):
    """FlexAttention (unfused on CPU, forward only) gives the SDPA path's values."""
    model = enable_prior_attention(bert(), layers="all", mode=mode, heads=heads, **options)
    for inputs in (batch(), batch(seed=1, heads=4)):  # shared and per-head priors
        ref = _run(model, inputs, "sdpa", monkeypatch, False)
        got = _run(model, inputs, "flex", monkeypatch, False)
        diff = _max_diff(got, ref)
        print(f"\n{mode} heads={heads} prior {tuple(inputs['prior'].shape)}: flex vs sdpa max abs diff {diff:.2e}")
        assert diff < 2e-5, diff


def test_score_mod_is_the_reference_formula():
    """score * (1 + g_h (P - 1)) + lam_h log P + A, cell by cell, on broadcast index tensors."""
    g = torch.Generator().manual_seed(0)
    B, H, L = 2, 3, 5
    score = torch.randn(B, H, L, L, generator=g)
    P = torch.rand(B, 1, L, L, generator=g)
    P_heads = torch.rand(B, H, L, L, generator=g)
    A = torch.where(torch.rand(B, 1, L, L, generator=g) > 0.2, 0.0, torch.finfo(torch.float32).min)
    gate, lam = torch.tensor([0.0, 0.5, 2.0]), torch.tensor([1.0, -0.3, 0.0])
    b, h = torch.arange(B).view(B, 1, 1, 1), torch.arange(H).view(1, H, 1, 1)
    q, k = torch.arange(L).view(1, 1, L, 1), torch.arange(L).view(1, 1, 1, L)
    from priorkit.attention.builtin_modes import bias, gate as gate_mode, learned_bias, multiply

    sel = torch.tensor([1.0, 0.0, 1.0])
    cases = [
        (multiply.score_mod(P, None, A), score * P + A),
        (multiply.score_mod(P_heads, sel), score * (1 + sel.view(1, H, 1, 1) * (P_heads - 1))),
        (gate_mode.score_mod(P_heads, gate), score * (1 + gate.view(1, H, 1, 1) * (P_heads - 1))),
        (learned_bias.score_mod(P.log(), lam, A), score + lam.view(1, H, 1, 1) * P.log() + A),
        (bias.score_mod(P_heads), score + P_heads),
    ]
    for mod, want in cases:
        got = mod(score, b, h, q, k)
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_kernel_choice_and_bad_value(monkeypatch):
    q = torch.zeros(1, 1, 2, 2)
    monkeypatch.delenv(kernels.ENV, raising=False)
    assert kernels.choose(q, training=True, dropout=0.1) == "sdpa"  # CPU: sdpa automatically
    monkeypatch.setenv(kernels.ENV, "flex")
    with torch.no_grad():
        assert kernels.choose(q, training=False, dropout=0.0) == "flex"
    assert kernels.choose(q, training=False, dropout=0.0) == "sdpa"  # CPU flex has no backward
    monkeypatch.setenv(kernels.ENV, "eager")
    assert kernels.choose(q, training=True, dropout=0.1) == "eager"
    monkeypatch.setenv(kernels.ENV, "triton")
    with pytest.raises(PriorAttentionConfigError, match="PRIORKIT_ATTENTION_KERNEL='triton' is not one of"):
        kernels.choose(q, training=False, dropout=0.0)
    model = enable_prior_attention(bert(), layers=0, mode="bias")
    with pytest.raises(PriorAttentionConfigError, match="PRIORKIT_ATTENTION_KERNEL"), torch.no_grad():
        model(**batch())


def test_memo_is_per_forward_and_never_stale(monkeypatch):
    """Shared tensors: a warm memo gives the cold result, an in-place change of P or a new P is
    seen, dropout draws are unchanged, and nothing outlives the prior."""
    monkeypatch.delenv(kernels.ENV, raising=False)
    model = enable_prior_attention(bert(dropout=0.2), layers="all", mode="bias", lam=0.9)
    inputs = batch()
    model.train()
    shared.clear()
    torch.manual_seed(0)
    cold = model(**inputs).logits.detach()
    torch.manual_seed(0)
    warm = model(**inputs).logits.detach()  # same P object: every layer reads the memo
    torch.testing.assert_close(warm, cold, atol=0, rtol=0)
    model.eval()
    with torch.no_grad():
        before = model(**inputs).logits
        inputs["prior"].mul_(0.5).add_(0.3)  # in place: the version counter moves
        changed = model(**inputs).logits
        fresh = model(**{**inputs, "prior": inputs["prior"].clone()}).logits
    assert not torch.allclose(before, changed)
    torch.testing.assert_close(changed, fresh, atol=0, rtol=0)
    prior = inputs.pop("prior")
    with torch.no_grad():
        model(**inputs, prior=prior)
    assert shared._slot is not None
    del prior
    gc.collect()
    assert shared._slot is None  # freed with the prior


def test_shared_layers_compute_once(monkeypatch):
    """bias@all builds its float mask once per forward, not once per layer."""
    from priorkit.attention.builtin_modes import bias

    monkeypatch.delenv(kernels.ENV, raising=False)
    calls = []
    original = bias.bias_mask
    monkeypatch.setattr(bias, "bias_mask", lambda *a, **k: calls.append(1) or original(*a, **k))
    model = enable_prior_attention(bert(), layers="all", mode="bias")
    assert len(attention_modules(model)) == 3
    with torch.no_grad():
        model.eval()(**batch())
        model(**batch(seed=2))
    assert len(calls) == 2


def test_supervise_loss_unchanged_by_the_memo(monkeypatch):
    """The supervise KL with the shared target equals the one computed layer by layer."""
    model = enable_prior_attention(bert(), layers="all", mode="supervise", weight=0.5)
    inputs = batch()
    model.train()
    shared.clear()
    model(**inputs)
    warm = supervision_loss(model)
    shared.clear()
    monkeypatch.setattr(shared, "per_forward", lambda prior, mask, key, make: make())
    model(**inputs)
    cold = supervision_loss(model)
    print(f"\nsupervise: memo vs per-layer max abs diff {float((warm - cold).detach().abs()):.2e}")
    torch.testing.assert_close(warm, cold, atol=1e-6, rtol=1e-6)

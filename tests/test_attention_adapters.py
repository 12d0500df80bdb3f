"""Prior attention on encoders whose attention does not go through AttentionInterface:
MPNet (tiny random and the real all-mpnet-base-v2) and DeBERTa-v2/v3 (tiny random),
through the adapters of priorkit/attention/adapters/.

References are independent of the code under test: the stock model itself (no prior,
P = 1, neutral gates and strengths), a hand-written softmax of the layer's own
projections, position bias and padding, and the stock module's own forward.
"""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoModelForTokenClassification
from transformers.utils import logging as hf_logging

from priorkit.attention import (
    PriorAttentionConfigError,
    PriorShapeError,
    UnsupportedModelError,
    disable_prior_attention,
    enable_prior_attention,
    prior_parameters,
    supervision_loss,
    supported_architectures,
)
from priorkit.attention.adapters import ADAPTERS
from priorkit.attention.architectures import ADAPTED, attention_modules

hf_logging.set_verbosity_error()
pytestmark = pytest.mark.usefixtures("one_torch_thread")

_SMALL = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=37, vocab_size=99,
              max_position_embeddings=64, initializer_range=0.2)
#: DeBERTa-v3's attention: shared position keys, c2p and p2c, log buckets, normalised embeddings
_DEBERTA_V3 = dict(relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=8,
                   max_relative_positions=16, share_att_key=True, norm_rel_ebd="layer_norm")
CONFIGS = {"mpnet": {}, "deberta-v2": _DEBERTA_V3,
           "deberta-v2-c2p": dict(relative_attention=True, pos_att_type=["c2p"], max_relative_positions=16),
           "deberta-v2-plain": dict(relative_attention=False, pos_att_type=None)}
MODES = [("multiply", {}), ("bias", {"lam": 0.7}), ("gate", {"init": 0.6}), ("learned_bias", {"init": 0.8}),
         ("supervise", {})]


def tiny(name: str, seed: int = 0, head=AutoModelForSequenceClassification, **overrides) -> torch.nn.Module:
    model_type = name.split("-c2p")[0].split("-plain")[0]
    config = AutoConfig.for_model(model_type, **{**_SMALL, **CONFIGS[name], **overrides})
    torch.manual_seed(seed)
    return head.from_config(config).eval()


def batch(b: int = 3, length: int = 10, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 90, (b, length), generator=g)
    mask = torch.ones(b, length, dtype=torch.long)
    mask[-1, length - 4:] = 0  # the last example is padded
    return {"input_ids": ids, "attention_mask": mask}


def rand_prior(b: int, n: int, seed: int = 1) -> torch.Tensor:
    return torch.rand((b, n, n), generator=torch.Generator().manual_seed(seed))


def hidden(model, **kw) -> torch.Tensor:
    return model.base_model(**kw).last_hidden_state


def real_rows(t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The hidden states of real tokens (DeBERTa's padded query rows are arbitrary by design)."""
    return t[mask.bool()]


# ---------------------------------------------------------------- off = stock


def test_adapted_types_are_supported_and_registered():
    assert set(ADAPTED) == set(ADAPTERS) <= set(supported_architectures())


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("mode,options", MODES)
def test_prior_off_or_neutral_equals_stock(name, mode, options):
    """No prior=: bit-identical. A neutral prior (P = 1 for multiply/gate/bias; strength 0;
    supervise never changes the forward): max abs diff <= 1e-5 in fp32, padded batch."""
    model = tiny(name)
    b = batch()
    B, L = b["input_ids"].shape
    with torch.no_grad():
        stock = hidden(model, **b)
        neutral = dict(options, init=0.0) if mode == "learned_bias" else options
        enable_prior_attention(model, layers="all", mode=mode, **neutral)
        assert torch.equal(hidden(model, **b), stock)
        ones = hidden(model, **b, prior=torch.ones(B, L, L))
        assert (real_rows(ones, b["attention_mask"]) - real_rows(stock, b["attention_mask"])).abs().max() <= 1e-5
        if mode != "supervise":
            moved = hidden(model, **b, prior=rand_prior(B, L))
            if mode == "learned_bias":
                assert (moved - stock).abs().max() <= 1e-5  # strength 0: the prior has no weight yet
            else:
                assert (moved - stock).abs().max() > 1e-3, "the prior never reached attention"
        disable_prior_attention(model)
        assert torch.equal(hidden(model, **b), stock)


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
def test_only_the_primed_layer_changes(name):
    """A prior in layer 1 leaves layer 0's output equal to stock, and layer 2 runs its stock
    forward on the inputs it received (checked by calling the stock module again)."""
    model = tiny(name)
    b = batch()
    B, L = b["input_ids"].shape
    modules = attention_modules(model)
    seen: dict[int, tuple] = {}

    def keep(i):
        return lambda m, a, k, o: seen.__setitem__(i, (a, dict(k), o[0].detach().clone()))

    with torch.no_grad():
        handles = [m.register_forward_hook(keep(i), with_kwargs=True) for i, m in enumerate(modules)]
        model(**b)
        stock0 = seen[0][2]
        enable_prior_attention(model, layers=(1,))
        model(**b, prior=rand_prior(B, L))
        for h in handles:
            h.remove()
        assert torch.equal(seen[0][2], stock0)
        for i in (1, 2):
            args, kwargs, out = seen[i]
            again = type(modules[i]).forward(modules[i], *args, **kwargs)[0]  # the class's own forward
            assert torch.allclose(again, out, atol=1e-4) == (i == 2)


# ------------------------------------------------------- on: the maths by hand


def mpnet_reference(module, h, mask_2d, position_bias, P, mode, lam=1.0, eps=1e-2, gate=None):
    """softmax(f(QK^T/sqrt(d), P) + B_rel + padding) for MPNetSelfAttention, written out naively."""
    B, L, _ = h.shape
    H, d = module.num_attention_heads, module.attention_head_size

    def heads(x):
        return x.view(B, L, H, d).transpose(1, 2)

    q, k = heads(module.q(h)), heads(module.k(h))
    content = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    P4 = P[:, None]
    if mode == "multiply":
        content = content * P4
    elif mode == "gate":
        content = content * (1 + gate.view(1, H, 1, 1) * (P4 - 1))
    elif mode == "bias":
        content = content + lam * torch.log(torch.clamp(P4, min=eps))
    scores = (content + position_bias).masked_fill(mask_2d[:, None, None, :] == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)


@pytest.mark.parametrize("mode,options", [("multiply", {}), ("bias", {"lam": 0.7, "eps": 0.05}),
                                          ("gate", {"init": 0.5})])
def test_mpnet_layer0_probabilities_match_handwritten_formula(mode, options):
    model = tiny("mpnet")
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    base = model.base_model
    module = attention_modules(model)[0]
    with torch.no_grad():
        h0 = base.embeddings(input_ids=b["input_ids"])
        position_bias = base.encoder.compute_position_bias(h0)
        enable_prior_attention(model, layers=(0,), mode=mode, **options)
        gate = None
        if mode == "gate":
            module.prior_gate.copy_(torch.tensor([0.5, -0.4, 1.3, 0.0]))
            gate = module.prior_gate
        out = base(**b, prior=P, output_attentions=True)
        ref = mpnet_reference(module, h0, b["attention_mask"], position_bias, P, mode,
                              lam=options.get("lam", 1.0), eps=options.get("eps", 1e-2), gate=gate)
        stock = mpnet_reference(module, h0, b["attention_mask"], position_bias, torch.ones(B, L, L), "multiply")
    got = out.attentions[0]
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-5)
    assert (got - stock).abs().max() > 1e-2  # a known change, not the stock probabilities
    if mode in ("multiply", "bias"):  # the favoured pair gains: P = 1 vs P = 0 at the same key
        P2 = torch.full((B, L, L), 0.01)
        P2[:, :, 2] = 1.0
        with torch.no_grad():
            favoured = base(**b, prior=P2, output_attentions=True).attentions[0]
        if mode == "bias":  # log(1) - log(0.01) added to key 2 in every row: its weight grows
            assert (favoured[..., 2] > stock[..., 2]).all()


def deberta_reference(module, h, mask_2d, P, mode):
    """softmax(QK^T / c * P + R, masked) for DisentangledSelfAttention, with the module's own R."""
    B, L, _ = h.shape
    H = module.num_attention_heads
    q = module.transpose_for_scores(module.query_proj(h), H)
    k = module.transpose_for_scores(module.key_proj(h), H)
    factor = 1 + len(module.pos_att_type)
    c = math.sqrt(q.size(-1) * factor)
    rel = module.disentangled_attention_bias(q, k, None, module._rel_for_test, factor).view(B, H, L, L)
    content = (q @ k.transpose(-1, -2)).view(B, H, L, L) / c
    if mode == "multiply":
        content = content * P[:, None]
    elif mode == "bias":
        content = content + torch.log(torch.clamp(P[:, None], min=1e-2))
    keep = (mask_2d[:, None, :, None] * mask_2d[:, None, None, :]).bool()
    return torch.softmax((content + rel).masked_fill(~keep, torch.finfo(h.dtype).min), dim=-1)


@pytest.mark.parametrize("mode", ["multiply", "bias"])
def test_deberta_layer0_probabilities_match_handwritten_formula(mode):
    model = tiny("deberta-v2")
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    base = model.base_model
    module = attention_modules(model)[0]
    with torch.no_grad():
        h0 = base.embeddings(input_ids=b["input_ids"], mask=b["attention_mask"])
        module._rel_for_test = base.encoder.get_rel_embedding()
        enable_prior_attention(model, layers=(0,), mode=mode)
        out = base(**b, prior=P, output_attentions=True)
        ref = deberta_reference(module, h0, b["attention_mask"], P, mode)
        del module._rel_for_test
    real = b["attention_mask"].bool()
    torch.testing.assert_close(out.attentions[0].permute(0, 2, 1, 3)[real], ref.permute(0, 2, 1, 3)[real],
                               atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------- it trains


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
@pytest.mark.parametrize("mode,options", MODES)
def test_trains_with_the_prior(name, mode, options):
    """Three AdamW steps with the prior on, dropout on: finite gradients everywhere (the
    mode's own parameter included), the loss and the weights move."""
    model = tiny(name, head=AutoModelForTokenClassification, num_labels=3).train()
    enable_prior_attention(model, layers=(0, 2), mode=mode, **options)
    b = batch()
    B, L = b["input_ids"].shape
    labels = torch.randint(0, 3, (B, L), generator=torch.Generator().manual_seed(3))
    P = rand_prior(B, L)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        out = model(**b, labels=labels, prior=P)
        loss = out.loss + (supervision_loss(model) if mode == "supervise" else 0)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads)
        for name_, p in prior_parameters(model):
            assert p.grad is not None and p.grad.abs().sum() > 0, name_
        optimizer.step()
        losses.append(loss.item())
    assert len(set(losses)) == 3 and all(math.isfinite(x) for x in losses)
    q = "attention.attn.q.weight" if name == "mpnet" else "attention.self.query_proj.weight"
    moved = [n for n, p in model.named_parameters() if n in before and not torch.equal(p, before[n])]
    assert any(q in n for n in moved)


def test_deberta_refuses_activation_checkpointing_with_a_prior():
    model = tiny("deberta-v2").train()
    model.activation_checkpointing_enable()
    enable_prior_attention(model)
    b = batch()
    B, L = b["input_ids"].shape
    with pytest.raises(PriorAttentionConfigError, match="activation checkpointing"):
        model(**b, prior=rand_prior(B, L))
    model(**b)  # without a prior it trains as before


# ------------------------------------------------- enable, disable, errors


def _snapshot(model):
    return ([sorted(vars(m)) for m in model.modules()],
            [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._forward_hooks_always_called))
             for m in model.modules()],
            {k: v.clone() for k, v in model.state_dict().items()}, model.config.to_dict())


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
def test_disable_restores_the_stock_modules_exactly(name):
    model = tiny(name)
    before = _snapshot(model)
    for mode, options in MODES:
        enable_prior_attention(model, layers="all", mode=mode, heads=(0, 2), **options)
        assert all("forward" in vars(m) for m in attention_modules(model))
        disable_prior_attention(model)
        after = _snapshot(model)
        assert after[0] == before[0] and after[1] == before[1] and after[3] == before[3]
        assert after[2].keys() == before[2].keys() and all(torch.equal(after[2][k], before[2][k]) for k in after[2])
    assert all(type(m).forward is m.forward.__func__ for m in attention_modules(model))


def test_errors_leave_no_prior_behind_and_shapes_name_the_expected_shape():
    model = tiny("mpnet")
    enable_prior_attention(model, layers="all")
    b = batch()
    B, L = b["input_ids"].shape
    with torch.no_grad():
        stock_like = hidden(model, **b)
        with pytest.raises(PriorShapeError, match=rf"\({B}, {L}, {L}\)"):
            model(**b, prior=torch.ones(B, L - 1, L))
        assert model._priorkit_routing.frames == []  # the failed pass left nothing on the stack
        assert torch.equal(hidden(model, **b), stock_like)
        # the head's call reaches the base model: logits differ from the prior-free ones
        P = rand_prior(B, L)
        assert not torch.allclose(model(**b, prior=P).logits, model(**b).logits, atol=1e-6)


def test_unsupported_architecture_names_its_type_and_the_supported_ones():
    from transformers import FunnelConfig, FunnelModel

    funnel = FunnelModel(FunnelConfig(d_model=32, n_head=4, d_head=8, d_inner=37, block_sizes=[1, 1], vocab_size=99))
    with pytest.raises(UnsupportedModelError, match="model_type='funnel'") as err:
        enable_prior_attention(funnel)
    assert "mpnet" in str(err.value) and "deberta-v2" in str(err.value) and "bert" in str(err.value)


# ------------------------------------------------------------- save and load


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
def test_save_load_round_trip(tmp_path, name):
    model = tiny(name)
    enable_prior_attention(model, layers=(0, 2), mode="gate", heads=(1, 2), init=0.5)
    with torch.no_grad():
        for i in (0, 2):
            attention_modules(model)[i].prior_gate.copy_(torch.tensor([-0.3 - i, 1.7 + i]))
    model.save_pretrained(tmp_path)
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert "forward" not in vars(attention_modules(loaded)[0])  # the stock model until enabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the gates must be found, not re-initialised
        enable_prior_attention(loaded)
    assert loaded.config.priorkit == model.config.priorkit
    with torch.no_grad():
        torch.testing.assert_close(loaded(**b, prior=P).logits, model(**b, prior=P).logits)
        assert not torch.allclose(loaded(**b, prior=P).logits, loaded(**b).logits, atol=1e-7)
    torch.testing.assert_close(attention_modules(loaded)[2].prior_gate, attention_modules(model)[2].prior_gate)


# ------------------------------------------------------------- the real MPNet


@pytest.fixture(scope="module")
def real_mpnet():
    from transformers import AutoTokenizer

    from priorkit.resources import mpnet_path

    path = mpnet_path()
    return AutoTokenizer.from_pretrained(str(path)), AutoModel.from_pretrained(str(path)).eval()


def test_real_mpnet_prior_off_and_p_one_equal_stock(real_mpnet, stsb_dev_pairs):
    tok, model = real_mpnet
    pairs = stsb_dev_pairs[:4]
    b = tok([a for a, _ in pairs], [c for _, c in pairs], padding=True, return_tensors="pt")
    B, L = b["input_ids"].shape
    try:
        with torch.no_grad():
            stock = model(**b).last_hidden_state
            enable_prior_attention(model, layers="all", mode="multiply")
            assert torch.equal(model(**b).last_hidden_state, stock)
            ones = model(**b, prior=torch.ones(B, L, L)).last_hidden_state
            moved = model(**b, prior=rand_prior(B, L)).last_hidden_state
            diff = (real_rows(ones, b["attention_mask"]) - real_rows(stock, b["attention_mask"])).abs().max()
            assert diff <= 1e-5, diff
            assert (moved - stock).abs().max() > 1e-2
            disable_prior_attention(model)
            enable_prior_attention(model, layers=(0,), mode="bias")
            torch.testing.assert_close(model(**b, prior=torch.ones(B, L, L)).last_hidden_state, stock,
                                       atol=1e-5, rtol=0)
    finally:
        disable_prior_attention(model)
    with torch.no_grad():
        assert torch.equal(model(**b).last_hidden_state, stock)


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
def test_capture_attention_records_the_adapted_layers(name):
    """priorkit show's recorder gets the weights the layer really used, with and without the prior."""
    from priorkit.attention.capture import capture_attention

    model = tiny(name)
    enable_prior_attention(model, layers=(0,), mode="bias")
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    with torch.no_grad():
        want_on = model.base_model(**b, prior=P, output_attentions=True).attentions
        want_off = model.base_model(**b, output_attentions=True).attentions
    with capture_attention(model, [0, 2]) as rec:
        model(**b, prior=P)
        on = rec.take()
        model(**b)
        off = rec.take()
    for i in (0, 2):
        torch.testing.assert_close(on[i], want_on[i], atol=1e-6, rtol=0)
        torch.testing.assert_close(off[i], want_off[i], atol=1e-6, rtol=0)
    assert (on[0] - off[0]).abs().max() > 1e-3
    assert all("forward" in vars(m) for m in attention_modules(model)[:1]) and not _hooks_left(model)


def _hooks_left(model) -> bool:
    return any(len(m._forward_pre_hooks) for m in attention_modules(model))


@pytest.mark.parametrize("name", ["mpnet", "deberta-v2"])
def test_every_kernel_gives_the_same_values(name, monkeypatch):
    """PRIORKIT_ATTENTION_KERNEL=eager and =flex (unfused on CPU, inference) equal the default path."""
    model = tiny(name)
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    for mode, options in MODES[:4]:
        enable_prior_attention(model, layers="all", mode=mode, heads=(1, 3), **options)
        outs = {}
        for kernel in ("sdpa", "eager", "flex"):
            monkeypatch.setenv("PRIORKIT_ATTENTION_KERNEL", kernel)
            with torch.no_grad():
                outs[kernel] = real_rows(hidden(model, **b, prior=P), b["attention_mask"])
        disable_prior_attention(model)
        for kernel in ("eager", "flex"):
            torch.testing.assert_close(outs[kernel], outs["sdpa"], atol=2e-5, rtol=0, msg=f"{mode} {kernel}")


def test_a_deep_copy_of_an_enabled_model_is_independent():
    import copy

    model = tiny("mpnet")
    b = batch()
    B, L = b["input_ids"].shape
    P = rand_prior(B, L)
    with torch.no_grad():
        stock = model(**b).logits
        enable_prior_attention(model, layers="all", mode="bias")
        primed = model(**b, prior=P).logits
        twin = copy.deepcopy(model)
        torch.testing.assert_close(twin(**b, prior=P).logits, primed, atol=0, rtol=0)
        disable_prior_attention(twin)
        assert torch.equal(twin(**b, prior=P).logits, stock)  # the copy is stock again ...
        torch.testing.assert_close(model(**b, prior=P).logits, primed, atol=0, rtol=0)  # ... the original is not
        disable_prior_attention(model)
        assert torch.equal(model(**b).logits, stock)
        assert not any(len(m._forward_pre_hooks) or len(m._forward_hooks) for m in (model, model.base_model))

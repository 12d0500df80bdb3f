"""Prior-guided attention: equivalences with the stock model, a naive reference for the
maths, every supported architecture on a tiny random config, the real MiniLM, dtypes,
save/load, errors.

References are independent of the code under test: the stock model itself (P = 1,
lambda = 0, a constant bias), a hand-written softmax(QK^T/sqrt(d) ...)V from the layer's
own weights, and recomputation of unprimed layers through their stock path.
"""
from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, BertConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES
from transformers.utils import logging as hf_logging

from priorkit.attention import (
    PriorAttentionConfigError,
    PriorNotEnabledError,
    PriorShapeError,
    UnsupportedModelError,
    disable_prior_attention,
    enable_prior_attention,
    supported_architectures,
)
from priorkit.attention.architectures import ADAPTED, attention_modules
from priorkit.errors import PriorkitError

hf_logging.set_verbosity_error()


pytestmark = pytest.mark.usefixtures("one_torch_thread")

# ---------------------------------------------------------------- tiny models

_SMALL = dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=3, intermediate_size=37,
              vocab_size=99, pad_token_id=0, max_position_embeddings=64, initializer_range=0.2)
_EXTRA: dict[str, dict] = {
    "distilbert": dict(dim=32, n_heads=4, n_layers=3, hidden_dim=37, vocab_size=99, pad_token_id=0,
                       max_position_embeddings=64, initializer_range=0.2),
    "mobilebert": dict(embedding_size=16, intra_bottleneck_size=32, true_hidden_size=32),
    "esm": dict(pad_token_id=1, mask_token_id=2),
    "modernbert": dict(bos_token_id=1, eos_token_id=2, sep_token_id=2, cls_token_id=1, mask_token_id=3,
                       global_attn_every_n_layers=2, local_attention=4),  # layer 1 is sliding-window
    "nomic_bert": dict(bos_token_id=1, eos_token_id=2, sep_token_id=2, cls_token_id=1, mask_token_id=3),
    "eurobert": dict(bos_token_id=1, eos_token_id=2, sep_token_id=2, cls_token_id=1, mask_token_id=3,
                     num_key_value_heads=2),  # grouped-query attention
    "deberta-v2": dict(relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=8,
                       max_relative_positions=16, share_att_key=True, norm_rel_ebd="layer_norm"),  # as v3
}


def tiny(model_type: str, seed: int = 0, **overrides) -> torch.nn.Module:
    """A 3-layer random model with a classification head when the architecture has one."""
    kwargs = dict(_EXTRA[model_type]) if model_type == "distilbert" else {**_SMALL, **_EXTRA.get(model_type, {})}
    kwargs.update(overrides)
    config = AutoConfig.for_model(model_type, **kwargs)
    has_head = model_type in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES
    auto = AutoModelForSequenceClassification if has_head else AutoModel
    torch.manual_seed(seed)
    model = auto.from_config(config)
    if model_type == "xmod":
        model.set_default_language("en_XX")
    return model.eval()


def batch_for(model_type: str, batch: int = 2, length: int = 9, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 90, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[-1, length - 3:] = 0  # the last example is padded
    out = {"input_ids": ids, "attention_mask": mask}
    if model_type == "layoutlm":
        out["bbox"] = torch.zeros(batch, length, 4, dtype=torch.long)
    return out


def rand_prior(b: int, n: int, seed: int = 1, heads: int | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = (b, n, n) if heads is None else (b, heads, n, n)
    return torch.rand(shape, generator=g)


def main_output(out) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out.last_hidden_state


class Capture:
    """Forward hooks on every attention module: (args, kwargs, output) per layer."""

    def __init__(self, model: torch.nn.Module):
        self.modules = attention_modules(model)
        self.calls: list[tuple] = [None] * len(self.modules)
        self.handles = [m.register_forward_hook(self._hook(i), with_kwargs=True) for i, m in enumerate(self.modules)]

    def _hook(self, i):
        def hook(module, args, kwargs, output):
            self.calls[i] = (args, dict(kwargs), output[0].detach().clone())
        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


# ------------------------------------------------- every supported architecture


@pytest.mark.parametrize("model_type", supported_architectures())
def test_architecture(model_type):
    """P = 1 is the stock model; a random P changes exactly the configured layer; disable restores."""
    model = tiny(model_type)
    batch = batch_for(model_type)
    B, L = batch["input_ids"].shape
    with torch.no_grad():
        stock_cap = Capture(model)
        stock = main_output(model(**batch))
        stock_cap.remove()

        enable_prior_attention(model, layers=(1,))
        assert torch.equal(main_output(model(**batch)), stock)  # no prior= -> bit-identical
        ones = main_output(model(**batch, prior=torch.ones(B, L, L)))
        torch.testing.assert_close(ones, stock, atol=1e-5, rtol=0)

        cap = Capture(model)
        primed = main_output(model(**batch, prior=rand_prior(B, L)))
        cap.remove()
        assert not torch.allclose(primed, stock, atol=1e-4), "the prior never reached attention"
        # layer 0 runs before the prior layer: identical to the stock run
        assert torch.equal(cap.calls[0][2], stock_cap.calls[0][2])
        # layers 1 and 2, recomputed through the stock path on the inputs they received
        for i, module in enumerate(cap.modules[1:], start=1):
            args, kwargs, out = cap.calls[i]
            if model_type not in ADAPTED:  # adapters route prior= around the modules' calls
                assert kwargs.get("prior") is not None  # the head and encoder forwarded prior=
            kwargs = {k: v for k, v in kwargs.items() if k != "prior"}
            recomputed = module(*args, **kwargs)[0]
            if i == 1:
                assert not torch.allclose(recomputed, out, atol=1e-4)
            else:
                assert torch.equal(recomputed, out)

        disable_prior_attention(model)
        assert torch.equal(main_output(model(**batch)), stock)
        if model.config._attn_implementation == "sdpa":  # the guard covers sdpa (attention/guard.py)
            with pytest.raises(PriorNotEnabledError, match="without prior attention"):
                model(**batch, prior=rand_prior(B, L))
        else:  # eager models call their own function directly: prior= is not seen
            assert torch.equal(main_output(model(**batch, prior=rand_prior(B, L))), stock)


# ------------------------------------------------------- the maths, by hand


def reference_attention(module, hidden, mask_2d, P, mode, gate=None, lam=1.0, eps=1e-2):
    """softmax(f(QK^T/sqrt(d), P) + padding) V for BertSelfAttention, written out naively."""
    B, L, _ = hidden.shape
    H, d = module.num_attention_heads, module.attention_head_size

    def heads(x):
        return x.view(B, L, H, d).transpose(1, 2)

    q, k, v = heads(module.query(hidden)), heads(module.key(hidden)), heads(module.value(hidden))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)  # (B, H, L, L)
    P4 = P if P.ndim == 4 else P[:, None]
    if mode == "multiply":
        scores = scores * P4
    elif mode == "gate":
        scores = scores * (1 + gate.view(1, H, 1, 1) * (P4 - 1))
    elif mode == "bias":
        scores = scores + lam * torch.log(torch.clamp(P4, min=eps))
    scores = scores.masked_fill(mask_2d[:, None, None, :] == 0, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(1, 2).reshape(B, L, H * d)


def _layer0_input(model, batch):
    seen = {}
    module = model.encoder.layer[0].attention.self
    h = module.register_forward_hook(lambda m, a, k, o: seen.update(hidden=a[0]), with_kwargs=True)
    model(**batch)
    h.remove()
    return seen["hidden"]


@pytest.mark.parametrize("mode,options", [("multiply", {}), ("gate", {}), ("bias", {"lam": 0.7, "eps": 0.05}),
                                          ("multiply-heads", {}), ("multiply-per-head", {})])
def test_layer0_matches_handwritten_formula(mode, options):
    model = AutoModel.from_config(BertConfig(**_SMALL)).eval()
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    H = model.config.num_attention_heads
    P = rand_prior(B, L)
    heads = None
    if mode == "multiply-heads":
        heads, mode = (0, 2), "multiply"
        P_ref = torch.where(torch.tensor([1, 0, 1, 0], dtype=torch.bool)[None, :, None, None], P[:, None], 1.0)
    elif mode == "multiply-per-head":
        mode, P = "multiply", rand_prior(B, L, heads=H)
        P_ref = P
    else:
        P_ref = P
    enable_prior_attention(model, layers=0, mode=mode, heads=heads, **options)
    module = model.encoder.layer[0].attention.self
    gate = None
    if mode == "gate":
        with torch.no_grad():
            module.prior_gate.copy_(torch.tensor([0.0, 0.5, 1.0, 2.0]))
        gate = module.prior_gate.detach()
    with torch.no_grad():
        hidden = _layer0_input(model, batch)
        got = module(hidden, attention_mask=_bool_mask(batch["attention_mask"]), prior=P)[0]
        want = reference_attention(module, hidden, batch["attention_mask"], P_ref, mode, gate, **options)
    valid = batch["attention_mask"].bool()  # padded query rows are never read
    torch.testing.assert_close(got[valid], want[valid], atol=1e-5, rtol=1e-5)


def _bool_mask(mask_2d: torch.Tensor) -> torch.Tensor:
    """transformers' SDPA mask: (B, 1, L, L), True where a query may look at a key."""
    B, L = mask_2d.shape
    return mask_2d.bool()[:, None, None, :].expand(B, 1, L, L)


def test_constant_bias_is_a_no_op_and_gate_one_is_multiply():
    """Softmax ignores a constant shift; the gate at g = 1 is the paper's multiply."""
    model = AutoModel.from_config(BertConfig(**_SMALL)).eval()
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    P = rand_prior(B, L)
    with torch.no_grad():
        stock = model(**batch).last_hidden_state
        enable_prior_attention(model, layers="all", mode="bias", lam=2.0)
        shifted = model(**batch, prior=torch.full((B, L, L), 0.3)).last_hidden_state
        disable_prior_attention(model)
        torch.testing.assert_close(shifted, stock, atol=1e-5, rtol=0)

        enable_prior_attention(model, layers=(0, 2), mode="multiply")
        mult = model(**batch, prior=P).last_hidden_state
        disable_prior_attention(model)
        enable_prior_attention(model, layers=(0, 2), mode="gate")
        gated = model(**batch, prior=P).last_hidden_state
        torch.testing.assert_close(gated, mult, atol=1e-6, rtol=0)


# ---------------------------------------------------- train mode and gradients


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _train_run(model, batch, seed, **extra):
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    out = model(**batch, labels=torch.tensor([0, 1]), **extra)
    out.loss.backward()
    return out.logits.detach(), _grads(model)


def _assert_same_run(a, b, atol=1e-5):
    torch.testing.assert_close(a[0], b[0], atol=atol, rtol=0)
    assert a[1].keys() == b[1].keys()
    for name in a[1]:
        torch.testing.assert_close(a[1][name], b[1][name], atol=atol, rtol=1e-4, msg=name)


def test_train_mode_forward_backward_equal_stock():
    """Hidden dropout on, same seed.  multiply (eager maths) draws no random numbers when the
    attention dropout is 0, so P = 1 must reproduce stock SDPA exactly up to rounding; bias keeps
    SDPA's own dropout, so lambda = 0 matches even with attention dropout on."""
    cfg = BertConfig(**_SMALL, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0, num_labels=2)
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    stock = AutoModelForSequenceClassification.from_config(cfg)
    ref = _train_run(stock, batch, seed=3)
    model = enable_prior_attention(copy.deepcopy(stock), layers=(0, 1))
    _assert_same_run(_train_run(model, batch, seed=3, prior=torch.ones(B, L, L)), ref)

    cfg.attention_probs_dropout_prob = 0.2
    stock = AutoModelForSequenceClassification.from_config(cfg)
    ref = _train_run(stock, batch, seed=4)
    model = enable_prior_attention(copy.deepcopy(stock), layers="all", mode="bias", lam=0.0)
    _assert_same_run(_train_run(model, batch, seed=4, prior=rand_prior(B, L)), ref)


def test_attention_dropout_placement_matches_eager():
    """With attention dropout on, multiply in every layer at P = 1 equals the stock *eager* model
    draw for draw: same softmax -> dropout -> @V order, same random numbers."""
    cfg = BertConfig(**_SMALL, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.3, num_labels=2)
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    eager = AutoModelForSequenceClassification.from_config(cfg, attn_implementation="eager")
    ref = _train_run(eager, batch, seed=5)
    model = copy.deepcopy(eager)
    model.set_attn_implementation("sdpa")
    enable_prior_attention(model, layers="all")
    _assert_same_run(_train_run(model, batch, seed=5, prior=torch.ones(B, L, L)), ref)


def test_gradients_reach_the_gate_and_gate_only_where_configured():
    model = tiny("bert")
    enable_prior_attention(model, layers=(0, 2), mode="gate", heads=(1, 3))
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    _, grads = _train_run(model, batch, seed=0, prior=rand_prior(B, L))
    gate_grads = {n: g for n, g in grads.items() if n.endswith("prior_gate")}
    assert sorted(gate_grads) == ["bert.encoder.layer.0.attention.self.prior_gate",
                                  "bert.encoder.layer.2.attention.self.prior_gate"]
    for g in gate_grads.values():
        assert g.shape == (2,) and torch.isfinite(g).all() and g.abs().min() > 0
    # activation checkpointing re-runs the layers with the same keyword arguments
    (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
    _, again = _train_run(model, batch, seed=0, prior=rand_prior(B, L))
    for name, g in gate_grads.items():
        torch.testing.assert_close(again[name], g)


# ------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", ["multiply", "bias", "gate"])
def test_half_precision(dtype, mode):
    model32 = tiny("bert")
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    P = rand_prior(B, L)
    enable_prior_attention(model32, layers="all", mode=mode)
    with torch.no_grad():
        want = model32(**batch, prior=P).logits
    model = copy.deepcopy(model32).to(dtype)
    out = model(**batch, prior=P)  # a float32 prior is cast by each layer
    assert out.logits.dtype == dtype and torch.isfinite(out.logits).all()
    torch.testing.assert_close(out.logits.float(), want, atol=0.05, rtol=0.05)
    if mode == "gate":
        out.logits.float().sum().backward()
        gate = model.bert.encoder.layer[0].attention.self.prior_gate
        assert gate.dtype == dtype and torch.isfinite(gate.grad).all()


# ------------------------------------------------ disable, save / load, errors


def _snapshot(model):
    return (
        model.config.to_dict(),
        model.config._attn_implementation,
        {k: v.clone() for k, v in model.state_dict().items()},
        [sorted(vars(m)) for m in model.modules()],
    )


def test_disable_restores_exactly():
    model = tiny("bert")
    before = _snapshot(model)
    for mode in ("multiply", "bias", "gate"):
        enable_prior_attention(model, layers="all", mode=mode, heads=(0,))
        assert model.config._attn_implementation == "priorkit_sdpa"
        assert model.config.priorkit["mode"] == mode
        disable_prior_attention(model)
        after = _snapshot(model)
        assert after[0] == before[0] and after[1] == before[1] and after[3] == before[3]
        assert after[2].keys() == before[2].keys()
        assert all(torch.equal(after[2][k], before[2][k]) for k in before[2])
    assert disable_prior_attention(model) is model  # idempotent


@pytest.mark.parametrize("target", ["same", "base"])
@pytest.mark.parametrize("shard", [False, True])
def test_save_load_round_trip(tmp_path, target, shard):
    """save_pretrained -> from_pretrained -> enable_prior_attention(model) gives the same model,
    trained gates included, also into the bare encoder and from a sharded checkpoint."""
    model = tiny("bert")
    enable_prior_attention(model, layers=(0, 2), mode="gate", heads=(1, 2), init=0.5)
    with torch.no_grad():
        for i in (0, 2):
            model.bert.encoder.layer[i].attention.self.prior_gate.copy_(torch.tensor([-0.3 - i, 1.7 + i]))
    model.save_pretrained(tmp_path, **({"max_shard_size": "20KB"} if shard else {}))
    assert (tmp_path / "model.safetensors.index.json").exists() == shard
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    P = rand_prior(B, L)

    cls = AutoModelForSequenceClassification if target == "same" else AutoModel
    loaded = cls.from_pretrained(tmp_path).eval()
    assert loaded.config._attn_implementation == "sdpa"  # the stock model until enabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the gates must be found, not re-initialised
        assert enable_prior_attention(loaded) is loaded
    assert loaded.config.priorkit == model.config.priorkit
    with torch.no_grad():
        if target == "same":
            torch.testing.assert_close(loaded(**batch, prior=P).logits, model(**batch, prior=P).logits)
        else:
            torch.testing.assert_close(loaded(**batch, prior=P).last_hidden_state,
                                       model.bert(**batch, prior=P).last_hidden_state)
    src = model.base_model.encoder.layer[2].attention.self.prior_gate
    torch.testing.assert_close(loaded.base_model.encoder.layer[2].attention.self.prior_gate, src)


def test_gates_missing_or_mismatched_in_checkpoint(tmp_path):
    model = tiny("bert")
    model.save_pretrained(tmp_path / "plain")
    loaded = AutoModel.from_pretrained(tmp_path / "plain")
    loaded.config.priorkit = {"format": 1, "layers": [0], "mode": "gate", "heads": None, "options": {"init": 1.0}}
    with pytest.warns(UserWarning, match="holds no"):
        enable_prior_attention(loaded)

    enable_prior_attention(model, mode="gate", heads=(1, 2))  # gates of shape (2,)
    model.save_pretrained(tmp_path / "gated")
    loaded = AutoModel.from_pretrained(tmp_path / "gated")
    loaded.config.priorkit["heads"] = None  # now the settings imply shape (4,)
    with pytest.raises(PriorAttentionConfigError, match=r"shape \(2,\)"):
        enable_prior_attention(loaded)
    assert loaded.config._attn_implementation == "sdpa"  # the failed enable left nothing behind
    assert not [n for n, _ in loaded.named_parameters() if "prior" in n]
    assert not any("_priorkit_layer" in vars(m) for m in loaded.modules())


def test_bad_prior_shapes_name_the_expected_shape():
    model = tiny("bert")
    enable_prior_attention(model)
    batch = batch_for("bert")
    B, L = batch["input_ids"].shape
    for bad in (torch.ones(B, L - 1, L), torch.ones(B + 1, L, L), torch.ones(B, 3, L, L), torch.ones(L, L)):
        with pytest.raises(PriorShapeError, match=rf"\({B}, {L}, {L}\)") as err:
            model(**batch, prior=bad)
        assert str(tuple(bad.shape)) in str(err.value)
    with pytest.raises(PriorShapeError, match="torch.Tensor"):
        model(**batch, prior=[[1.0]])


def test_unsupported_models_and_bad_settings():
    albert = AutoModel.from_config(AutoConfig.for_model("albert", **{**_SMALL, "embedding_size": 16}))
    with pytest.raises(UnsupportedModelError, match="bert, .*roberta") as err:
        enable_prior_attention(albert)
    assert "ALBERT" in str(err.value) and isinstance(err.value, PriorkitError)
    with pytest.raises(UnsupportedModelError, match="decoder"):
        enable_prior_attention(AutoModel.from_config(BertConfig(**_SMALL, is_decoder=True)))
    model = tiny("bert")
    model.config._attn_implementation = "flex_attention"
    with pytest.raises(UnsupportedModelError, match="attn_implementation='sdpa'"):
        enable_prior_attention(model)

    model = tiny("bert")
    for kwargs, match in [
        (dict(layers=(3,)), "not a layer index"),
        (dict(layers=()), "empty"),
        (dict(heads=(4,)), "not a head index"),
        (dict(mode="add"), "not one of"),
        (dict(mode="multiply", lam=1.0), "takes no option"),
        (dict(mode="bias", eps=0.0), "eps"),
        (dict(mode="bias", lam=float("nan")), "finite"),
    ]:
        with pytest.raises(PriorAttentionConfigError, match=match):
            enable_prior_attention(model, **kwargs)
        assert model.config._attn_implementation == "sdpa"  # a failed enable changes nothing
    enable_prior_attention(model, layers=-1)
    assert model.config.priorkit["layers"] == [2]
    with pytest.raises(PriorAttentionConfigError, match="already enabled"):
        enable_prior_attention(model)


# ------------------------------------------------------------ the real MiniLM


@pytest.fixture(scope="module")
def minilm_cls(minilm_path):
    torch.manual_seed(0)
    return AutoModelForSequenceClassification.from_pretrained(str(minilm_path), num_labels=2).eval()


def test_minilm_p_one_is_stock_eval_and_train(minilm_cls, minilm_tokenizer, stsb_dev_pairs):
    enc = minilm_tokenizer([a for a, _ in stsb_dev_pairs[:2]], [b for _, b in stsb_dev_pairs[:2]],
                           padding=True, return_tensors="pt")
    B, L = enc["input_ids"].shape
    with torch.no_grad():
        stock = minilm_cls(**enc).logits
        model = enable_prior_attention(copy.deepcopy(minilm_cls))
        assert torch.equal(model(**enc).logits, stock)
        torch.testing.assert_close(model(**enc, prior=torch.ones(B, L, L)).logits, stock, atol=1e-5, rtol=0)
    # train mode: MiniLM's hidden dropout (0.1) stays on; the attention dropout of the eager layer
    # is set to 0 in both models, since SDPA and eager maths draw different random numbers
    stock_t = copy.deepcopy(minilm_cls)
    for m in (stock_t, model):
        m.bert.encoder.layer[0].attention.self.dropout.p = 0.0
    batch = dict(enc)
    _assert_same_run(_train_run(model, batch, seed=7, prior=torch.ones(B, L, L)), _train_run(stock_t, batch, seed=7))


@pytest.mark.parametrize("mode,layers", [("multiply", (0,)), ("bias", "all"), ("gate", (0,))])
def test_minilm_padded_example_equals_alone(minilm_cls, minilm_tokenizer, stsb_dev_pairs, mode, layers):
    """An example padded inside a batch gets the logits it gets alone (the mask is applied in every
    layer, and the prior's zero padding never leaks into real tokens)."""
    pairs = sorted(stsb_dev_pairs[:8], key=lambda p: len(p[0]) + len(p[1]))
    short, long = pairs[0], pairs[-1]
    model = enable_prior_attention(copy.deepcopy(minilm_cls), layers=layers, mode=mode)
    with torch.no_grad():
        if mode == "gate":
            model.bert.encoder.layer[0].attention.self.prior_gate.copy_(torch.linspace(-1, 2, 12))
        both = minilm_tokenizer([long[0], short[0]], [long[1], short[1]], padding=True, return_tensors="pt")
        alone = minilm_tokenizer([short[0]], [short[1]], return_tensors="pt")
        n, L = alone["input_ids"].shape[1], both["input_ids"].shape[1]
        assert n < L
        p_long, p_short = rand_prior(1, L, seed=2)[0], rand_prior(1, n, seed=3)[0]
        P = torch.zeros(2, L, L)  # padded with 0, as PriorCollator pads
        P[0], P[1, :n, :n] = p_long, p_short
        in_batch = model(**both, prior=P).logits[1]
        by_itself = model(**alone, prior=p_short[None]).logits[0]
    torch.testing.assert_close(in_batch, by_itself, atol=1e-5, rtol=0)


def test_docs_list_every_supported_architecture():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "attention.md").read_text(encoding="utf-8")
    missing = [t for t in supported_architectures() if f"`{t}`" not in doc]
    assert not missing, f"docs/attention.md does not list {missing}"

"""The maths of the ways a prior P enters attention (pure torch, no transformers); the mode
objects (priorkit/attention/mode.py, builtin_modes/) put them together.

Notation: ``raw = Q K^T`` (B, H, L, L), ``s`` the model's scaling (1/sqrt(d) for
BERT), ``A`` the additive padding mask (0 where allowed, dtype-min elsewhere),
``P`` the prior (B, 1, L, L) or (B, H, L, L).

* ``multiply`` (Xia et al. 2021): ``softmax(raw * s * P + A)``.
* ``gate``: ``softmax(raw * s * (1 + g_h (P - 1)) + A)``, one learnable ``g_h``
  per head; ``g = 1`` is ``multiply``, ``g = 0`` is the stock model.
* ``bias``: ``softmax(raw * s + A + lam * log(max(P, eps)))``: the prior is
  folded into the float mask, so the model's own SDPA kernel does all the work.
* ``learned_bias``: ``bias`` with one learnable strength ``lam_h`` per head that
  starts at ``init`` (0: the stock model), so the data decides how much prior
  each head takes, and in which direction.
* ``supervise``: the forward pass is the stock one; in training an auxiliary
  loss ``weight * KL(T || A)`` pulls the chosen heads' attention ``A`` towards
  the row-normalised prior ``T ~ P ** power`` (linguistically-informed
  self-attention, Strubell et al. 2018).  Inference costs nothing extra.

``multiply`` and ``gate`` need the logits themselves, so they run eager maths in
the layers that get the prior.  To keep that cheap the scaling is folded into the
multiplier and the mask addition into the same ``addcmul`` kernel: one pass over
the (B, H, L, L) scores instead of three, and P stays broadcast over heads
unless the caller restricts ``heads`` or passes a per-head prior.  What depends on P
and the mask alone is computed once per forward pass by the dispatcher (``shared.py``)
and passed in (``centred``, ``log_p``, ``additive``, ``parts``).
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from .errors import PriorShapeError

_HALF = (torch.float16, torch.bfloat16)


def prior_as_4d(prior: Tensor, query: Tensor, key: Tensor) -> Tensor:
    """Check ``prior`` against the attention inputs and view it as (B, 1|H, L, L).

    ``query`` is (B, H, Lq, d) and ``key`` (B, Hkv, Lk, d); an encoder's self-attention
    has ``Lq == Lk``.  The prior is moved to the query's device (a no-op when the
    collator already put it there) but keeps its dtype: each mode casts it once.
    """
    if not isinstance(prior, Tensor):
        raise PriorShapeError(f"prior= must be a torch.Tensor, got {type(prior).__name__}.")
    batch, heads, q_len, _ = query.shape
    k_len = key.shape[2]
    if prior.ndim == 3 and tuple(prior.shape) == (batch, q_len, k_len):
        prior = prior.unsqueeze(1)  # (B, 1, L, L): one matrix shared by all heads
    elif prior.ndim == 4 and tuple(prior.shape) in ((batch, heads, q_len, k_len), (batch, 1, q_len, k_len)):
        pass
    else:
        raise PriorShapeError(
            f"prior= has shape {tuple(prior.shape)}, but this attention layer expects "
            f"(batch, L, L) = ({batch}, {q_len}, {k_len}) or (batch, heads, L, L) = "
            f"({batch}, {heads}, {q_len}, {k_len}); L is the padded length of input_ids. "
            "Pad every matrix of the batch to that length (PriorCollator does) and, for "
            "multiple-choice heads, flatten the choices into the batch like input_ids."
        )
    if not prior.is_floating_point():
        prior = prior.float()
    return prior.to(query.device, non_blocking=True)


def additive_mask(mask: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """The padding mask as an additive float tensor (0 = keep, dtype-min = drop).

    transformers hands SDPA a boolean mask (True = keep) and eager attention a float
    one; both broadcast against the (B, H, L, L) scores.  ``None`` means no padding.
    """
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
            ~mask, torch.finfo(dtype).min
        )
    return mask.to(dtype)


def head_selector(n_heads: int, heads: tuple[int, ...] | None, device: torch.device) -> Tensor | None:
    """(1, H, 1, 1) boolean, True for the heads that get the prior; None = all heads."""
    if heads is None:
        return None
    sel = torch.zeros(n_heads, dtype=torch.bool, device=device)
    sel[list(heads)] = True
    return sel.view(1, n_heads, 1, 1)


def multiply_multiplier(prior4: Tensor, scaling: float, sel: Tensor | None, dtype: torch.dtype) -> Tensor:
    """``s * P`` (B, 1|H, L, L); heads outside ``sel`` get plain ``s``."""
    mult = prior4.to(dtype) * scaling
    if sel is not None:
        mult = torch.where(sel, mult, torch.tensor(scaling, dtype=dtype, device=mult.device))
    return mult


def gate_multiplier(prior4: Tensor, scaling: float, gate: Tensor, dtype: torch.dtype,
                    centred: Tensor | None = None) -> Tensor:
    """``s * (1 + g_h (P - 1))`` (B, H, L, L); ``gate`` is (H,) with 0 for ungated heads.

    ``centred`` is ``P - 1`` in ``dtype`` when the caller already has it (it is the same in
    every gated layer of a forward pass); then this is one ``addcmul`` pass.
    """
    scaled_gate = (gate.to(dtype) * scaling).view(1, -1, 1, 1)  # (1, H, 1, 1)
    if centred is None:
        centred = prior4.to(dtype) - 1
    return torch.addcmul(torch.tensor(scaling, dtype=dtype, device=prior4.device), centred, scaled_gate)


def bias_mask(
    prior4: Tensor, mask: Tensor | None, lam: float, eps: float, sel: Tensor | None, dtype: torch.dtype
) -> Tensor:
    """The float mask ``A + lam * log(max(P, eps))`` (B, 1|H, L, L) for the model's own kernel.

    Computed in float32 (in place after the first pass: clamp, log, scale, mask) and,
    for half dtypes, clamped to the dtype's range before the cast, so a float16 mask
    cannot overflow to -inf (a fully -inf row would give NaN).  A boolean mask is
    applied with ``masked_fill_`` (dtype-min where a key is padding), a float mask added.
    """
    bias = torch.clamp_min(prior4.float(), eps).log_()  # (B, 1|H, L, L), a fresh float32 tensor
    if lam != 1.0:
        bias.mul_(lam)
    if sel is not None:
        bias = bias * sel  # heads outside ``sel``: 0
    lowest = torch.finfo(dtype).min
    if mask is not None:
        if mask.dtype == torch.bool:
            if torch.broadcast_shapes(mask.shape, bias.shape) == bias.shape:
                bias.masked_fill_(mask.logical_not(), lowest)
            else:
                bias = torch.where(mask, bias, lowest)
        elif torch.broadcast_shapes(mask.shape, bias.shape) == bias.shape:
            bias.add_(mask)
            bias.clamp_min_(lowest)
        else:
            bias = (bias + mask.float()).clamp_min_(lowest)
    if dtype != torch.float32:
        bias.clamp_min_(lowest)
    return bias.to(dtype)


def log_prior(prior4: Tensor, eps: float) -> Tensor:
    """``log(max(P, eps))`` in float32 (B, 1|H, L, L): the additive form of a prior."""
    return torch.clamp_min(prior4.float(), eps).log_()


def learned_bias_mask(
    prior4: Tensor, mask: Tensor | None, strength: Tensor, eps: float, dtype: torch.dtype,
    log_p: Tensor | None = None, additive: Tensor | None = None,
) -> Tensor:
    """The float mask ``A + lam_h * log(max(P, eps))`` (B, H, L, L); ``strength`` is (H,).

    Differentiable in ``strength`` (SDPA passes gradients to a float ``attn_mask``).
    Heads outside ``heads=`` have strength 0.  ``log_p`` (:func:`log_prior`) and
    ``additive`` (the padding mask as float32, :func:`additive_mask`) are the same in
    every layer of a forward pass; given them, the (B, H, L, L) mask is one ``addcmul``.
    """
    if log_p is None:
        log_p = log_prior(prior4, eps)
    if additive is None and mask is not None:
        additive = additive_mask(mask, torch.float32)
    weights = strength.float().view(1, -1, 1, 1)
    out = log_p * weights if additive is None else torch.addcmul(additive, log_p, weights)  # (B, H, L, L)
    if dtype == torch.float32 and additive is None:
        return out  # finite: log_p >= log(eps)
    return out.clamp_min_(torch.finfo(dtype).min).to(dtype)  # in place: no extra (B, H, L, L) copy


def supervision_target(prior4: Tensor, power: float, keys: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Row-normalised ``P ** power`` (B, 1|H, L, L) and the rows that count (B, 1|H, L).

    ``keys`` (bool, broadcastable, True = may be attended to) zeroes the target on
    masked keys.  A row counts when what is left sums to more than 0: padded query
    rows hold 0 in a collated prior, so they drop out here.
    """
    p = prior4.float().clamp_min(0.0)
    if power != 1.0:
        p = p.pow(power)
    if keys is not None:
        p = p * keys
    total = p.sum(-1, keepdim=True)  # (B, 1|H, L, 1)
    valid = total.squeeze(-1) > 0
    return p / total.clamp_min(1e-12), valid


def supervision_parts(
    mask: Tensor | None, prior4: Tensor, heads: tuple[int, ...] | None, power: float
) -> tuple[Tensor | None, Tensor, Tensor, Tensor]:
    """What :func:`supervision_kl` needs besides Q and K, the same in every supervised layer
    of a forward pass: the float32 additive mask, the target ``T`` (B, 1|h, L, L), the
    rows that count (B, 1|h, L) and ``sum_k T log T`` per row (B, 1|h, L)."""
    if heads is not None and prior4.shape[1] > 1:
        prior4 = prior4.index_select(1, torch.tensor(heads, device=prior4.device))
    keys = None
    if mask is not None:
        keys = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
    target, valid = supervision_target(prior4, power, keys)
    return additive_mask(mask, torch.float32), target, valid, torch.xlogy(target, target).sum(-1)


def supervision_kl(
    query: Tensor, key: Tensor, mask: Tensor | None, prior4: Tensor, scaling: float,
    heads: tuple[int, ...] | None, power: float,
    parts: tuple[Tensor | None, Tensor, Tensor, Tensor] | None = None,
) -> Tensor:
    """Mean ``KL(T || A)`` over the chosen heads and the rows that count (a scalar).

    ``A = softmax(s Q K^T + mask)`` is recomputed here for the chosen heads only, so the
    stock kernel keeps producing the layer's output; padded keys get zero weight
    (the mask) and zero target (the prior's padding), padded queries drop out.
    ``KL = sum T log T - sum T log A`` row by row; the first term and the target come
    from ``parts`` (:func:`supervision_parts`, shared by the layers of a forward pass).
    """
    if key.shape[1] != query.shape[1]:  # grouped-query attention (EuroBERT)
        key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
    if heads is not None:
        index = torch.tensor(heads, device=query.device)
        query, key = query.index_select(1, index), key.index_select(1, index)
    additive, target, valid, neg_entropy = parts if parts is not None else supervision_parts(
        mask, prior4, heads, power)
    logits = torch.matmul(query.float() * scaling, key.float().transpose(2, 3))  # (B, h, L, L)
    if additive is not None:
        logits.add_(additive)
    log_a = F.log_softmax(logits, dim=-1)
    kl_rows = neg_entropy - (target * log_a).sum(-1)  # (B, h, L)
    valid = valid.expand_as(kl_rows)
    count = valid.sum().clamp_min(1)
    return (kl_rows * valid).sum() / count


def eager_attention(
    module: torch.nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    multiplier: Tensor,
    additive: Tensor | None,
    dropout: float,
) -> tuple[Tensor, Tensor]:
    """``softmax(raw * multiplier + additive)``, dropout, ``@ V``; returns (B, L, H, d) and the weights.

    Mirrors transformers' ``eager_attention_forward`` step for step (so with P = 1
    it reproduces eager attention and its dropout draws exactly), except that the
    scaling sits inside ``multiplier`` and the mask addition is fused into ``addcmul``.
    Half-precision softmax runs in float32, as ModernBERT's and EuroBERT's eager code do.
    """
    if key.shape[1] != query.shape[1]:  # grouped-query attention (EuroBERT)
        n_rep = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(n_rep, dim=1)
        value = value.repeat_interleave(n_rep, dim=1)
    raw = torch.matmul(query, key.transpose(2, 3))  # (B, H, L, L)
    if additive is None:
        logits = raw * multiplier
    else:
        logits = torch.addcmul(additive, raw, multiplier)
    if logits.dtype in _HALF:
        weights = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    else:
        weights = F.softmax(logits, dim=-1)
    if dropout > 0.0 and module.training:
        weights = F.dropout(weights, p=dropout, training=True)
    out = torch.matmul(weights, value)  # (B, H, L, d)
    return out.transpose(1, 2).contiguous(), weights

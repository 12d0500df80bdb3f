"""DeBERTa-v2 and v3 (``model_type`` ``deberta-v2``): ``DisentangledSelfAttention`` with a prior.

The stock module computes ``softmax(Q K^T / c + R) V`` with ``c = sqrt(d * k)`` (``k`` is
1 plus one for each of ``c2p`` and ``p2c`` in ``config.pos_att_type``), ``R`` the
disentangled relative-position scores (content-to-position and position-to-content,
each divided by the same ``c``, with dropout on the relative embeddings), and the
positions the boolean (B, 1, L, L) mask forbids set to the dtype's minimum.  The adapter
computes ``R`` with the module's own ``disentangled_attention_bias`` and hands the modes
``R`` with the forbidden positions at the minimum as the additive term, and ``1 / c`` as
the scaling: ``multiply`` gives ``Q K^T / c * P + R``, the prior scaling the content
scores only.  (DeBERTa masks padded *queries* too; their rows stay uniform as in the
stock model.)  Activation checkpointing recomputes layers where the prior is not at hand,
so it is refused with a prior.  Transformers 5.24-5.25.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .base import Adapter, attend, current, register_adapter


def _forbidden(attention_mask: Tensor) -> Tensor:
    return ~attention_mask.bool()


def forward(self: nn.Module, hidden_states: Tensor, attention_mask: Tensor, output_attentions: bool = False,
            query_states: Tensor | None = None, relative_pos: Tensor | None = None,
            rel_embeddings: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """``DisentangledSelfAttention.forward`` with the prior of the forward pass under way."""
    here = current(self)
    if here is None:
        return type(self).forward(self, hidden_states, attention_mask, output_attentions, query_states=query_states,
                                  relative_pos=relative_pos, rel_embeddings=rel_embeddings)
    layer, frame = here
    if query_states is None:
        query_states = hidden_states
    heads = self.num_attention_heads
    q = self.transpose_for_scores(self.query_proj(query_states), heads)  # (B*H, L, d)
    k = self.transpose_for_scores(self.key_proj(hidden_states), heads)
    v = self.transpose_for_scores(self.value_proj(hidden_states), heads)
    scale_factor = 1 + ("c2p" in self.pos_att_type) + ("p2c" in self.pos_att_type)
    scaling = 1.0 / math.sqrt(q.size(-1) * scale_factor)
    batch, length = q.size(0) // heads, q.size(1)
    lowest = torch.finfo(q.dtype).min
    forbidden = frame.shared("deberta-forbidden", (attention_mask,), lambda: _forbidden(attention_mask))
    if self.relative_attention:
        rel_att = self.disentangled_attention_bias(q, k, relative_pos, self.pos_dropout(rel_embeddings),
                                                   scale_factor)
        additive = rel_att.view(batch, heads, length, -1).masked_fill(forbidden, lowest)
    else:
        additive = frame.shared("deberta-additive", (attention_mask, q.dtype), lambda: torch.zeros(
            forbidden.shape, dtype=q.dtype, device=q.device).masked_fill_(forbidden, lowest))
    q4, k4, v4 = (t.view(batch, heads, length, -1) for t in (q, k, v))
    out, weights = attend(self, layer, frame, q4, k4, v4, additive, scaling, self.dropout.p)
    context = out.reshape(batch, length, -1)
    return (context, weights) if output_attentions else (context, None)


ADAPTER = register_adapter(Adapter("deberta-v2", "DisentangledSelfAttention", forward))

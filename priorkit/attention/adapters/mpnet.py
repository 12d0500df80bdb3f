"""MPNet (``model_type`` ``mpnet``, e.g. all-mpnet-base-v2): ``MPNetSelfAttention`` with a prior.

The stock module computes ``softmax(Q K^T / sqrt(d) + B_rel + A) V`` and then its output
projection ``o``: ``B_rel`` (B, H, L, L) is the relative position bias the encoder
computes once per forward pass and hands to every layer, ``A`` the float padding mask
(B, 1, L, L), or None without padding.  The adapter keeps all of it: the same
projections, the scaling ``1 / sqrt(d)``, and ``B_rel + A`` as the additive term the
modes see (computed once per forward pass, shared by the primed layers).  So with
``multiply`` the logits are ``s * Q K^T * P + B_rel + A``: the prior scales the content
scores, the learnt position bias stays as trained.  Transformers 5.24-5.25.
"""
from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from .base import Adapter, attend, current, register_adapter


def _additive(position_bias: Tensor | None, attention_mask: Tensor | None) -> Tensor | None:
    if position_bias is None:
        return attention_mask
    if attention_mask is None:
        return position_bias
    return position_bias + attention_mask


def forward(self: nn.Module, hidden_states: Tensor, attention_mask: Tensor | None = None,
            position_bias: Tensor | None = None, output_attentions: bool = False, **kwargs: Any) -> tuple:
    """``MPNetSelfAttention.forward`` with the prior of the forward pass under way."""
    here = current(self)
    if here is None:
        return type(self).forward(self, hidden_states, attention_mask, position_bias, output_attentions, **kwargs)
    layer, frame = here
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.attention_head_size)
    q = self.q(hidden_states).view(hidden_shape).transpose(1, 2)
    k = self.k(hidden_states).view(hidden_shape).transpose(1, 2)
    v = self.v(hidden_states).view(hidden_shape).transpose(1, 2)
    additive = frame.shared("mpnet-additive", (position_bias, attention_mask),
                            lambda: _additive(position_bias, attention_mask))
    out, weights = attend(self, layer, frame, q, k, v, additive, self.attention_head_size ** -0.5, self.dropout.p)
    o = self.o(out.reshape(*input_shape, self.all_head_size))
    return (o, weights) if output_attentions else (o,)


ADAPTER = register_adapter(Adapter("mpnet", "MPNetSelfAttention", forward))

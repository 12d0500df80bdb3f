"""Token features into a Hugging Face encoder: a zero-initialised, gated projection added
to the word embeddings, switched on in place and reversible.

``attach_features(model, n_features, ...)`` adds a :class:`TokenFeatureInput` as the
submodule ``priorkit_features`` (its parameters train with the model and are in its
state dict), a forward pre-hook on the model that takes ``token_features`` /
``token_concepts`` out of the call's keywords, and a forward hook on
``model.get_input_embeddings()`` that adds ``gate * (W f + E c)`` to the embeddings.
W and E start at zero, so the model at attachment computes exactly what it computed
before; the gate starts at sigmoid(gate_init) > 0, so W gets gradients from the first
step.  ``model(**batch)`` without ``token_features`` also computes the stock output.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ...errors import PriorkitError

ATTR = "priorkit_features"


class TokenFeatureInput(nn.Module):
    """``e + gate(e) * (W f + sum_k E[c_k])`` with feature dropout in training."""

    def __init__(self, n_features: int, hidden: int, *, concept_buckets: int = 0, dropout: float = 0.1,
                 gate: str = "token", gate_init: float = 0.0) -> None:
        super().__init__()
        self.n_features, self.hidden, self.dropout, self.gate_kind = n_features, hidden, dropout, gate
        self.proj = nn.Linear(n_features, hidden, bias=False)
        nn.init.zeros_(self.proj.weight)
        self.concepts = nn.Embedding(concept_buckets + 1, hidden, padding_idx=0) if concept_buckets else None
        if self.concepts is not None:
            nn.init.zeros_(self.concepts.weight)
        if gate == "token":
            self.gate = nn.Linear(hidden, 1)
            nn.init.zeros_(self.gate.weight)
            nn.init.constant_(self.gate.bias, gate_init)
        elif gate == "scalar":
            self.gate_logit = nn.Parameter(torch.tensor([float(gate_init)]))
        else:
            raise PriorkitError(f"token features: gate {gate!r} is not one of token, scalar")
        self.pending: tuple[torch.Tensor, torch.Tensor | None] | None = None

    def forward(self, embeddings: torch.Tensor, features: torch.Tensor,
                concepts: torch.Tensor | None = None) -> torch.Tensor:
        if features.shape[:2] != embeddings.shape[:2] or features.shape[-1] != self.n_features:
            raise PriorkitError(
                f"token_features has shape {tuple(features.shape)} but the input is "
                f"{tuple(embeddings.shape[:2])} tokens and the model takes {self.n_features} features "
                "per token; build them with the FeatureBuilder of this model")
        weight = self.proj.weight
        f = features.to(device=weight.device, dtype=weight.dtype)
        keep = None
        if self.training and self.dropout > 0:  # whole tokens lose their features, as a missed match
            keep = (torch.rand(f.shape[:2], device=f.device) >= self.dropout).to(f.dtype)
        if keep is not None:
            f = f * keep.unsqueeze(-1)
        added = self.proj(f)
        if self.concepts is not None and concepts is not None:
            c = concepts.to(device=weight.device)
            if keep is not None:
                c = c * keep.unsqueeze(-1).long()
            added = added + self.concepts(c).sum(dim=2)
        if self.gate_kind == "token":
            gate = torch.sigmoid(self.gate(embeddings.to(weight.dtype)))
        else:
            gate = torch.sigmoid(self.gate_logit)
        return embeddings + (gate * added).to(embeddings.dtype)


def _pre_hook(model: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    module = getattr(model, ATTR)
    features = kwargs.pop("token_features", None)
    concepts = kwargs.pop("token_concepts", None)
    module.pending = (features, concepts) if features is not None else None
    return args, kwargs


def _embedding_hook(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
    features = module.__dict__.get("_priorkit_owner")
    if features is None or features.pending is None:
        return output
    f, c = features.pending
    features.pending = None  # one use per forward pass
    return features(output, f, c)


def attach_features(model: nn.Module, n_features: int, *, concept_buckets: int = 0, dropout: float = 0.1,
                    gate: str = "token", gate_init: float = 0.0) -> TokenFeatureInput:
    """Give ``model`` a token-feature input (see the module doc); returns the new module."""
    if hasattr(model, ATTR):
        raise PriorkitError(f"{type(model).__name__} already has token features; "
                            "call detach_features(model) first")
    embeddings = model.get_input_embeddings()
    ref = embeddings.weight
    module = TokenFeatureInput(n_features, ref.shape[1], concept_buckets=concept_buckets, dropout=dropout,
                               gate=gate, gate_init=gate_init).to(device=ref.device)
    model.add_module(ATTR, module)
    embeddings.__dict__["_priorkit_owner"] = module  # not a submodule: no second copy in the state dict
    module.__dict__["_handles"] = (model.register_forward_pre_hook(_pre_hook, with_kwargs=True),
                                   embeddings.register_forward_hook(_embedding_hook))
    module.train(model.training)
    return module


def attach_for(model: nn.Module, builder: Any) -> TokenFeatureInput:
    """Attach the feature input ``builder``'s config describes to ``model``."""
    s = builder.config
    return attach_features(model, builder.n_features, concept_buckets=s.concept_buckets, dropout=s.dropout,
                           gate=s.gate, gate_init=s.gate_init)


def feature_module(model: nn.Module) -> TokenFeatureInput | None:
    return getattr(model, ATTR, None)


def detach_features(model: nn.Module) -> nn.Module:
    """Undo :func:`attach_features` (a no-op without features)."""
    module = feature_module(model)
    if module is None:
        return model
    for handle in module.__dict__.pop("_handles", ()):
        handle.remove()
    model.get_input_embeddings().__dict__.pop("_priorkit_owner", None)
    delattr(model, ATTR)
    return model


def feature_parameters(model: nn.Module) -> list[nn.Parameter]:
    module = feature_module(model)
    return [] if module is None else [p for p in module.parameters() if p.requires_grad]

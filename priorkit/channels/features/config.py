"""What token features a model gets, as plain data (the ``prior.features`` section).

Torch-free, so the pipeline schema can use :class:`FeatureConfig` as a section type
and a model folder can store it as JSON.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

GATES = ("token", "scalar")
#: fields a model folder may still hold from before their removal (issue 47; config/removed.py):
#: training-only options and the old control's spelling, none of which changes a trained model's
#: predictions, with the values their train keys had (training/plan.py keeps the keys)
REMOVED = {"mention_dropout": 0.0, "outside_weight": 1.0, "edge_noise": 0.0, "control": None, "seed": 0}


@dataclasses.dataclass
class FeatureConfig:
    #: provider of the concept matches; null: the prior's own provider (and params).
    provider: str | None = None
    #: the provider's parameters; null: the prior's params when the provider is the prior's, else {}.
    params: dict[str, Any] | None = None
    #: groups that get B/I features, in this order; null: every group the provider emits.
    groups: list[str] | None = None
    #: > 0: a hashed concept-id embedding with this many buckets added to the features; 0: off.
    concept_buckets: int = 0
    #: training only: probability that a token's features are all dropped (word-level feature dropout).
    dropout: float = 0.1
    #: "token": a sigmoid gate per token computed from its embedding (GEMNET-style); "scalar": one
    #: learnable gate for all tokens.
    gate: Literal["token", "scalar"] = "token"
    #: the gate's initial logit (0: sigmoid 0.5); the projection starts at zero either way.
    gate_init: float = 0.0
    #: the feature parameters' own learning rate (null: train.learning_rate).
    learning_rate: float | None = None

    def resolved(self, provider: str, params: dict[str, Any] | None) -> "FeatureConfig":
        """This config with ``provider``/``params`` filled in from the prior's (when null)."""
        if self.provider is None:
            return dataclasses.replace(self, provider=provider,
                                       params=dict(params or {}) if self.params is None else self.params)
        return dataclasses.replace(self, params={} if self.params is None else self.params)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FeatureConfig":
        """A config as :meth:`to_dict` wrote it; the training-only fields a model folder made before
        their removal holds (:data:`REMOVED`) are dropped: a trained model predicts without them."""
        known = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in data.items() if k not in REMOVED}
        unknown = sorted(set(data) - known)
        if unknown:
            from ...errors import PriorkitError

            raise PriorkitError(f"token features: unknown field(s) {unknown}; known: {sorted(known)}")
        return cls(**data)

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for values out of range; empty when the config is usable."""
        out = []
        if isinstance(self.concept_buckets, bool) or self.concept_buckets < 0:
            out.append(("concept_buckets", f"must be a whole number >= 0 (0: off), got {self.concept_buckets!r}"))
        if not 0.0 <= self.dropout < 1.0:
            out.append(("dropout", f"must lie in [0, 1), got {self.dropout!r}"))
        if self.gate not in GATES:
            out.append(("gate", f"must be one of {', '.join(GATES)}, got {self.gate!r}"))
        if self.learning_rate is not None and self.learning_rate <= 0:
            out.append(("learning_rate", f"must be positive, got {self.learning_rate!r}"))
        if self.groups is not None and not self.groups:
            out.append(("groups", "is empty; list at least one group or leave it null (all)"))
        return out

"""What token features a model gets, as plain data (the ``prior.features`` section).

Torch-free, so the pipeline schema can use :class:`FeatureConfig` as a section type
and a model folder can store it as JSON.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

GATES = ("token", "scalar")


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
    #: training only: knowledge dropout -- probability that a whole matched mention loses its
    #: features (all its tokens together), so that the model must also read the context.
    mention_dropout: float = 0.0
    #: training only: the loss weight of the labelled entity words (any tag but ``O``) that carry no
    #: match, against 1 for every other word; above 1 tells the model that an entity without a
    #: dictionary match is still an entity (the shortcut "no match, no entity" costs more).
    outside_weight: float = 1.0
    #: training only: probability that a matched mention's bounds move by one token (its first or
    #: last token loses the features, or the token before or after gains them), so that the model
    #: reads an entity's bounds from the words rather than copying the dictionary's.
    edge_noise: float = 0.0
    #: "token": a sigmoid gate per token computed from its embedding (GEMNET-style); "scalar": one
    #: learnable gate for all tokens.
    gate: Literal["token", "scalar"] = "token"
    #: the gate's initial logit (0: sigmoid 0.5); the projection starts at zero either way.
    gate_init: float = 0.0
    #: removed: the control arm is the ``random-spans`` provider now (docs/providers/controls.md);
    #: kept only to name the new spelling when a file still sets it (and so that the train keys
    #: of feature runs made before stay the same, with ``seed``).
    control: str | None = None
    seed: int = 0
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
        known = {f.name for f in dataclasses.fields(cls)}
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
        if isinstance(self.mention_dropout, bool) or not 0.0 <= self.mention_dropout < 1.0:
            out.append(("mention_dropout", f"must lie in [0, 1), got {self.mention_dropout!r}"))
        if isinstance(self.edge_noise, bool) or not isinstance(self.edge_noise, (int, float)) \
                or not 0.0 <= self.edge_noise < 1.0:
            out.append(("edge_noise", f"must lie in [0, 1) (0: off), got {self.edge_noise!r}"))
        if isinstance(self.outside_weight, bool) or not isinstance(self.outside_weight, (int, float)) \
                or not 0.0 < self.outside_weight <= 100.0:
            out.append(("outside_weight", f"must lie in (0, 100] (1: off), got {self.outside_weight!r}"))
        if self.gate not in GATES:
            out.append(("gate", f"must be one of {', '.join(GATES)}, got {self.gate!r}"))
        if self.control is not None:
            out.append(("control", f"{self.control!r}: features.control was removed; controls are providers "
                        "now: write features: {provider: random-spans, params: {provider: ontology, "
                        "params: {...}, seed: 0}} (docs/providers/controls.md)"))
        if self.learning_rate is not None and self.learning_rate <= 0:
            out.append(("learning_rate", f"must be positive, got {self.learning_rate!r}"))
        if self.groups is not None and not self.groups:
            out.append(("groups", "is empty; list at least one group or leave it null (all)"))
        return out

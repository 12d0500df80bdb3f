"""A channel that weighs the loss, from outside the package (docs/channels.md, "A channel
that weighs the loss"): the tokens of words a provider matches count ``weight`` times in the
task loss, every other token once.  It puts nothing into the model: its batch tensor
``match_weights`` (B, L) is a loss key, read by :meth:`MatchWeight.token_loss_weights` and
taken out of the batch before the forward pass.

Pipeline setting (the provider defaults to the prior's own)::

    prior:
      provider: ontology
      params: {source: hpo+mesh}
      attention: null
      channels:
        match_weight: {weight: 3.0}

Load it like a user's plug-in: this file in a folder named by ``PRIORKIT_PLUGINS_DIR`` or
``priorkit --plugins-dir``.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import priorkit
from priorkit.channels import CardText, Channel


@dataclasses.dataclass
class MatchWeightConfig:
    """The ``prior.channels.match_weight`` section: a pipeline file is checked against these
    fields (types, defaults, unknown names) with file:line, like every section."""

    #: how many times a matched token's loss counts.
    weight: float = 2.0
    #: the provider whose matches are weighed (null: the prior's own, with its params).
    provider: str | None = None
    params: dict[str, Any] | None = None

    def problems(self) -> list[tuple[str, str]]:
        return [] if self.weight > 0 else [("weight", f"must be positive, got {self.weight!r}")]


class MatchWeight(Channel):
    """Up-weights the loss of the tokens whose word a provider matches."""

    name = "match_weight"
    loss_keys = ("match_weights",)
    config = MatchWeightConfig

    def __init__(self, weight: float, provider: str, params: dict) -> None:
        self.weight, self.provider_name, self.params = float(weight), provider, dict(params)
        self._provider = None

    @classmethod
    def from_setting(cls, prior, context):
        section = cls.section(prior)  # a MatchWeightConfig
        if section is None:
            return None
        if section.provider is None:
            return cls(section.weight, prior.provider, section.params if section.params is not None else prior.params or {})
        return cls(section.weight, section.provider, section.params or {})

    @classmethod
    def restore(cls, description, context):
        return cls(description["weight"], description["provider"], description["params"])

    @property
    def provider(self):
        if self._provider is None:  # on first use: a loaded model that only predicts never needs it
            self._provider = priorkit.get_provider(self.provider_name, **self.params)
        return self._provider

    def batch_tensors(self, examples, encoding):
        import torch

        if "labels" not in examples[0] or "words" not in examples[0]:
            return {}  # no labels, no loss to weigh (predict, show)
        B, L = encoding["input_ids"].shape
        out = torch.ones(B, L)
        for b, e in enumerate(examples):
            matched = {w for m in self.provider.matches(list(e["words"])) for w in range(m.start, m.end)}
            for t, w in enumerate(encoding.word_ids(b)):
                if w in matched:
                    out[b, t] = self.weight
        return {"match_weights": out}

    def token_loss_weights(self, model, batch):
        return batch.get("match_weights")

    def describe(self):
        return {"weight": self.weight, "provider": self.provider_name, "params": self.params}

    @classmethod
    def card(cls, description, prior):
        return CardText(rows=[("match weight", f"{description['weight']:g} x the loss of the tokens the "
                                               f"{description['provider']} provider matches")],
                        summary=f"a loss that weighs the {description['provider']} provider's matches "
                                f"{description['weight']:g} times", use="restores the match_weight channel "
                        "(nothing changes at prediction: it weighed the training loss)",
                        lost="nothing at prediction (the channel weighed the training loss only)")


@priorkit.hookimpl
def register_channels(register):
    register(MatchWeight)

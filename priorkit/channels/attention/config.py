"""What the attention channel does with a prior, as plain data (the ``prior.attention`` section).

Torch-free: the pipeline schema finds it as the attention channel's declared config
(:attr:`priorkit.channels.attention.AttentionChannel.config`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Union


@dataclasses.dataclass
class AttentionConfig:
    #: layer indices, or "all".
    layers: Union[list[int], Literal["all"]] = dataclasses.field(default_factory=lambda: [0])
    #: a registered attention mode (priorkit.attention.MODES): multiply, bias, gate,
    #: learned_bias, supervise, or one registered by your code.
    mode: str = "multiply"
    #: head indices that get the prior; null = all heads.
    heads: list[int] | None = None
    #: the mode's options (bias: lam, eps; gate: init; learned_bias: init, eps;
    #: supervise: weight, power), checked by the mode.
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: gate / learned_bias: the learnable prior parameters' own learning rate (null:
    #: train.learning_rate).  A gate next to pretrained weights tuned at 5e-5 barely
    #: moves at that rate.
    learning_rate: float | None = None

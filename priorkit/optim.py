"""Optimiser groups for parameters that learn at their own rate (attention gates and
strengths, the token-feature input), shared by the attention prior and the features."""
from __future__ import annotations

from typing import Any, Iterable


def own_param_group(optimizer: Any, params: Iterable[Any], lr: float) -> int:
    """Move ``params`` out of the optimiser's groups into one group of their own (learning
    rate ``lr``, no weight decay, which would pull gates towards 0).  Call before the first
    step and before the scheduler is made: the scheduler scales every group's rate by the
    same factor.  Returns how many tensors moved."""
    ids = {id(p) for p in params}
    moved = []
    for group in optimizer.param_groups:
        moved += [p for p in group["params"] if id(p) in ids]
        group["params"] = [p for p in group["params"] if id(p) not in ids]
    optimizer.add_param_group({"params": moved, "lr": lr, "weight_decay": 0.0})
    return len(moved)

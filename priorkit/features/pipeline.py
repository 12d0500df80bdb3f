"""The pipeline's side of token features: checks of ``prior.features`` and the wiring of a run.

Kept here (not in priorkit/pipeline/) so the pipeline modules only call three functions.
"""
from __future__ import annotations

from typing import Any

from ..errors import PriorkitError
from .config import FeatureConfig


def resolved_config(prior: Any) -> FeatureConfig | None:
    """A prior setting's feature config with the prior's provider filled in (None: no features)."""
    if prior is None or getattr(prior, "features", None) is None:
        return None
    return prior.features.resolved(prior.provider, prior.params)


def config_problems(prior: Any, task_type: str) -> list[tuple[tuple, str]]:
    """(field path below the prior, message) of what is wrong with a prior's features and
    attention; the pipeline check turns the first into a file:line error before any training."""
    out: list[tuple[tuple, str]] = []
    config = resolved_config(prior)
    if config is None:
        if prior.attention is None and getattr(prior, "silver", None) is None:
            out.append((("attention",), "is null and there are no features: this prior setting would do "
                        "nothing; give attention settings, or prior.features, or prior.silver, or use a "
                        "null sweep entry"))
        return out
    if task_type != "token-classification":
        out.append((("features",), f"token features need task.type token-classification, not {task_type}"))
        return out
    out += [(("features", field), msg) for field, msg in config.problems()]
    if out:
        return out
    from ..plugins import get_provider

    field = ("features", "provider") if prior.features.provider is not None else ("provider",)
    try:
        provider = get_provider(config.provider, **(config.params or {}))
    except (PriorkitError, ValueError) as exc:
        return [(field, str(exc))]
    if not provider.supports_matches:
        out.append((field, f"provider {config.provider!r} has no concept matches, so it cannot give token "
                           "features; use one that implements matches(), e.g. ontology "
                           "(features: {provider: ontology, params: {source: hpo+mesh}})"))
    return out


def features_for_run(prior: Any, model: Any, tokenizer: Any, max_length: int | None) -> Any:
    """The :class:`FeatureBuilder` a prior setting asks for (None: no features), its input
    attached to ``model``."""
    config = resolved_config(prior)
    if config is None:
        return None
    from ..plugins import get_provider
    from .builder import FeatureBuilder
    from .folder import attach_for

    builder = FeatureBuilder(get_provider(config.provider, **(config.params or {})), config, tokenizer, max_length)
    attach_for(model, builder)
    return builder


def wrap_collator(collator: Any, builder: Any) -> Any:
    if builder is None:
        return collator
    from .collate import FeatureCollator

    return FeatureCollator(collator, builder)


def param_group(optimizer: Any, model: Any, prior: Any) -> None:
    """The features' own learning rate, when ``prior.features.learning_rate`` is set."""
    config = resolved_config(prior)
    if config is not None and config.learning_rate is not None:
        from .model import feature_param_group

        feature_param_group(optimizer, model, config.learning_rate)

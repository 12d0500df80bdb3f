"""The checks of a prior setting's ``features`` section (the pipeline's config check calls
:func:`config_problems`); the features channel (priorkit/channels/features.py) reads the
resolved config."""
from __future__ import annotations

from typing import Any

from ...errors import PriorkitError
from .config import FeatureConfig


def resolved_config(prior: Any) -> FeatureConfig | None:
    """A prior setting's feature config with the prior's provider filled in (None: no features)."""
    if prior is None or getattr(prior, "features", None) is None:
        return None
    return prior.features.resolved(prior.provider, prior.params)


def gives_nothing(prior: Any) -> bool:
    """Whether a prior setting gives the model nothing: no features, attention, silver labels or
    channels (a model without knowledge)."""
    return (getattr(prior, "features", None) is None and prior.attention is None
            and getattr(prior, "silver", None) is None and not getattr(prior, "channels", None))


def config_problems(prior: Any, task_type: str) -> list[tuple[tuple, str]]:
    """(field path below the prior, message) of what is wrong with a prior's features and
    attention; the pipeline check turns the first into a file:line error before any training."""
    out: list[tuple[tuple, str]] = []
    config = resolved_config(prior)
    if config is None:
        if gives_nothing(prior):
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
    from ...providers.plugins import get_provider

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

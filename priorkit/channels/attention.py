"""The attention channel: the prior as a (B, L, L) matrix per batch, fed into attention
(``prior.attention``; docs/attention.md).

Its builder tokenises and aligns in one go (and its aligned store skips both in later
epochs), so it is the channel that makes the batch's tokenisation; its trainable
parameters are the mode's per-head gates or strengths, restored by
``enable_prior_attention`` from the model's own weights.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping

from ..errors import CacheError
from .base import CardText, Channel, Context, PredictionWarning, register_channel

#: seconds to wait for a lock another process holds on the run's cache before computing instead
CACHE_TIMEOUT = 3.0


@register_channel
class AttentionChannel(Channel):
    name = "attention"
    batch_keys = ("prior",)

    def __init__(self, builder: Any, settings: Mapping[str, Any] | None, learning_rate: float | None = None) -> None:
        #: the PriorBuilder (None: a restored model whose priors are passed by hand)
        self.builder = builder
        #: layers, mode, heads, options (None: restore the model's saved ones)
        self.settings = dict(settings) if settings is not None else None
        self.learning_rate = learning_rate

    # ---- making it -----------------------------------------------------------------
    @classmethod
    def from_setting(cls, prior: Any, context: Context) -> "AttentionChannel | None":
        a = cls.section(prior)
        if a is None:
            return None
        from ..align import PriorBuilder

        cache = context.cache if context.cache is not None and Path(context.cache).exists() else None
        builder = PriorBuilder.from_spec(prior.spec(), context.tokenizer, cache=cache, truncation=True,
                                         max_length=context.max_length)
        return cls(builder, {"layers": a.layers, "mode": a.mode, "heads": a.heads, "options": dict(a.options)},
                   a.learning_rate)

    @classmethod
    def restore(cls, description: Mapping[str, Any], context: Context) -> "AttentionChannel":
        builder = builder_from_info(context.prior, context.tokenizer, context.max_length,
                                    use_cache=context.use_cache, where=context.folder or "")
        return cls(builder, None)

    # ---- batches and the model ---------------------------------------------------------
    def encoder(self) -> Any:
        return self.builder

    def attach(self, model: Any) -> None:
        from ..attention import enable_prior_attention

        if self.settings is None:
            if not getattr(model.config, "priorkit", None):
                return  # a folder whose config.json holds no settings: the priors are built, nothing to switch on
            enable_prior_attention(model)  # the saved settings, and the learnt gates from the weights
        else:
            s = self.settings
            enable_prior_attention(model, layers=s["layers"], mode=s["mode"], heads=s["heads"], **s["options"])
        saved = dict(model.config.priorkit)
        saved.pop("format", None)
        self.settings = saved  # as applied: indices normalised, the mode's defaults filled in

    def detach(self, model: Any) -> None:
        from ..attention import disable_prior_attention

        disable_prior_attention(model)

    def parameters(self, model: Any) -> list[Any]:
        from ..attention import prior_parameters

        return [p for _, p in prior_parameters(model) if p.requires_grad]

    def load_state(self, model: Any, folder: str | Path) -> None:
        """Nothing to do: :meth:`attach` without settings restored the gates from the weights."""

    # ---- describing it ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return dict(self.settings or {})

    @classmethod
    def card(cls, description: Mapping[str, Any], prior: Mapping[str, Any] | None) -> CardText:
        from ..spec import PriorSpec

        att, prior = description, prior or {}
        spec = PriorSpec.from_dict(prior["spec"])
        built = spec.resolved()
        rows = [("provider", f"{prior['provider']} v{prior['provider_version']}"),
                ("parameters", json.dumps(prior["params"], sort_keys=True)),
                ("fingerprint", f"`{prior['fingerprint']}`"),
                ("preset", spec.preset or "-"), ("layout", built.layout), ("keys", built.keys),
                ("neutral", f"{built.neutral:g}"), ("within", built.within),
                ("attention", f"mode {att.get('mode')}, layers {att.get('layers')}, heads {att.get('heads') or 'all'}"
                              + (f", options {att.get('options')}" if att.get("options") else ""))]
        return CardText(rows=rows, summary=f"a prior from the {prior['provider']} provider in its attention",
                        use="rebuilds the same priors from `priorkit.json` and switches prior attention back on",
                        lost="the prior attention",
                        tags=["prior-guided-attention", f"prior-{prior['provider']}"])


def builder_from_info(prior: Mapping[str, Any] | None, tokenizer: Any, max_length: int | None, *,
                      use_cache: bool = True, where: Any = "") -> Any:
    """The PriorBuilder of priorkit.json's ``prior`` (None: no prior): its PriorSpec, built."""
    if prior is None:
        return None
    from ..align import PriorBuilder
    from ..spec import PriorSpec

    spec = PriorSpec.from_dict(prior["spec"])
    provider = spec.build_provider()
    if prior.get("fingerprint") and provider.fingerprint != prior["fingerprint"]:
        warnings.warn(
            f"{where}: the {prior['provider']} provider's fingerprint is now {provider.fingerprint}, the "
            f"model was trained with {prior['fingerprint']} (its version, parameters or data changed): "
            "priors may differ from those seen in training", PredictionWarning, stacklevel=3)
    if use_cache:
        provider = _cached(prior.get("cache"), provider)
    return PriorBuilder.from_spec(spec, tokenizer, provider=provider, truncation=True, max_length=max_length)


def _cached(path: str | None, provider: Any) -> Any:
    """``provider`` reading the run's cache: read-only, its pairs loaded into memory now (so
    a writer that takes the file later changes nothing), nothing ever written; words the
    cache lacks are computed.  The plain provider (with a warning) when the file cannot be read."""
    if not path or not Path(path).exists():
        return provider
    from ..cache import CachedProvider, PriorCache

    try:
        cached = CachedProvider(provider, PriorCache(path, read_only=True, timeout=CACHE_TIMEOUT))
        cached.ensure_loaded()  # a lock held by a writer fails here, not mid-prediction
    except CacheError as exc:
        warnings.warn(f"not reading the prior cache ({exc}); priors are computed instead",
                      PredictionWarning, stacklevel=4)
        return provider
    return cached

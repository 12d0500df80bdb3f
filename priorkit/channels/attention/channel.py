"""The attention channel: the prior as a (B, L, L) matrix per batch, fed into attention
(``prior.attention``; docs/attention.md).

It reads the batch's one tokenisation (the collator's) like every channel: its builder
aligns that encoding to the words and fills the (B, L, L) matrices, and its aligned store
(``store=``) keeps each example's matrix so later epochs skip the aligning and the look-ups.
Its trainable parameters are the mode's per-head gates or strengths; the ``supervise`` mode's
auxiliary loss reaches the trainer through :meth:`AttentionChannel.extra_loss`.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from ...errors import CacheError, PriorkitError
from ..base import CardText, Channel, Context, PredictionWarning, register_channel
from .config import AttentionConfig

#: seconds to wait for a lock another process holds on the run's cache before computing instead
CACHE_TIMEOUT = 3.0


@register_channel
class AttentionChannel(Channel):
    name = "attention"
    batch_keys = ("prior",)
    config = AttentionConfig

    def __init__(self, builder: Any, settings: Mapping[str, Any] | None = None, learning_rate: float | None = None,
                 *, store: Any = None, pad_value: float = 0.0) -> None:
        #: the PriorBuilder (None: no priors are built; pass them by hand)
        self.builder = builder
        #: layers, mode, heads, options (None: restore the model's saved ones)
        self.settings = dict(settings) if settings is not None else None
        self.learning_rate = learning_rate
        #: the value of padded cells
        self.pad_value = pad_value
        #: every example's aligned prior kept (:class:`priorkit.channels.attention.store.AlignedStore`): an
        #: ``AlignedStore``, a folder for one (shards written there, shared across runs and
        #: DataLoader workers), True for one in memory, None for none.  Same tensors either way.
        self.store = _make_store(builder, store)

    @property
    def tokenizer(self) -> Any:
        """The builder's tokenizer (the collator checks it is the model's)."""
        return None if self.builder is None else self.builder.tokenizer

    # ---- making it -----------------------------------------------------------------
    @classmethod
    def from_setting(cls, prior: Any, context: Context) -> "AttentionChannel | None":
        a = cls.section(prior)
        if a is None:
            return None
        builder = setting_builder(prior, context.tokenizer, context.max_length, context.cache)
        # store=True: every epoch after the first reads the priors from memory (same tensors, no
        # aligning or look-ups again; see priorkit/aligned_store.py)
        channel = cls(builder, {"layers": a.layers, "mode": a.mode, "heads": a.heads, "options": dict(a.options)},
                      a.learning_rate, store=True)
        return channel

    @classmethod
    def restore(cls, description: Mapping[str, Any], context: Context) -> "AttentionChannel":
        builder = builder_from_info(context.prior, context.tokenizer, context.max_length,
                                    use_cache=context.use_cache, where=context.folder or "")
        settings = {k: description[k] for k in ("layers", "mode", "heads", "options") if k in description}
        return cls(builder, settings if settings.get("mode") else None)

    # ---- batches and the model ---------------------------------------------------------
    def batch_tensors(self, examples: Sequence[Mapping[str, Any]], encoding: Any) -> dict[str, Any]:
        """``prior`` (B, L, L) aligned to the batch's tokenisation (none without a builder)."""
        if self.builder is None:
            return {}
        if "words" in examples[0]:
            texts_a, texts_b = [list(e["words"]) for e in examples], None
        else:
            texts_a = [e["text_a"] for e in examples]
            texts_b = [e["text_b"] for e in examples] if examples[0].get("text_b") is not None else None
        source = self.store if self.store is not None and self.store.builder is self.builder else self.builder
        return {"prior": source.priors(encoding, texts_a, texts_b, pad_value=self.pad_value)}

    def close(self) -> None:
        """Write the store's pending examples (no-op without a store on disk)."""
        if self.store is not None:
            self.store.flush()

    def attach(self, model: Any) -> None:
        from ...attention import enable_prior_attention

        if self.settings is None:
            return  # no settings on record: the priors are built, nothing to switch on
        # an older folder's config.json copy of the settings would make enable_prior_attention read
        # the gates itself; load_state reads them, from the channel's own description
        model.config.__dict__.pop("priorkit", None)
        s = self.settings
        enable_prior_attention(model, layers=s["layers"], mode=s["mode"], heads=s.get("heads"),
                               **dict(s.get("options") or {}))
        saved = dict(model.config.priorkit)
        saved.pop("format", None)
        self.settings = saved  # as applied: indices normalised, the mode's defaults filled in

    def detach(self, model: Any) -> None:
        from ...attention import disable_prior_attention

        disable_prior_attention(model)

    def parameters(self, model: Any) -> list[Any]:
        from ...attention import prior_parameters

        return [p for _, p in prior_parameters(model) if p.requires_grad]

    def extra_loss(self, model: Any) -> Any:
        """The ``supervise`` layers' weighted KL of the last training forward pass (None in
        other modes, and outside training: :func:`priorkit.attention.supervision_loss`)."""
        from ...attention import supervision_loss

        return supervision_loss(model)

    # ---- describing it ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return dict(self.settings or {})

    @classmethod
    def card(cls, description: Mapping[str, Any], prior: Mapping[str, Any] | None) -> CardText:
        from ...providers.spec import PriorSpec

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


def setting_builder(prior: Any, tokenizer: Any, max_length: int | None, cache: str | None = None) -> Any:
    """The PriorBuilder of a pipeline's prior setting (its PriorSpec), reading ``cache`` when
    that file exists: the one place a run's builder is made (training, precompute, evaluate)."""
    from ...align import PriorBuilder

    cache = cache if cache is not None and Path(cache).exists() else None
    return PriorBuilder.from_spec(prior.spec(), tokenizer, cache=cache, truncation=True, max_length=max_length)


def _make_store(builder: Any, store: Any) -> Any:
    if store is None or store is False:
        return None
    if builder is None:
        raise PriorkitError("AttentionChannel(store=...) needs a PriorBuilder: without one there is no prior to store.")
    from .store import AlignedStore

    if isinstance(store, AlignedStore):
        if store.builder is not builder:
            raise PriorkitError("the AlignedStore was made for another PriorBuilder; make the store with the "
                                "channel's builder.")
        return store
    if store is True:
        return AlignedStore(builder)
    return AlignedStore(builder, store)


def builder_from_info(prior: Mapping[str, Any] | None, tokenizer: Any, max_length: int | None, *,
                      use_cache: bool = True, where: Any = "") -> Any:
    """The PriorBuilder of priorkit.json's ``prior`` (None: no prior): its PriorSpec, built."""
    if prior is None:
        return None
    from ...align import PriorBuilder
    from ...providers.spec import PriorSpec

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
    from ...cache import CachedProvider, PriorCache

    try:
        cached = CachedProvider(provider, PriorCache(path, read_only=True, timeout=CACHE_TIMEOUT))
        cached.ensure_loaded()  # a lock held by a writer fails here, not mid-prediction
    except CacheError as exc:
        warnings.warn(f"not reading the prior cache ({exc}); priors are computed instead",
                      PredictionWarning, stacklevel=4)
        return provider
    return cached

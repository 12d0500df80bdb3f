"""The channel interface and the one registry of channels (docs/channels.md).

A channel is one way a prior's knowledge enters a model: the attention prior and the
token features are the built-in two.  Everything that trains, saves, loads or predicts
loops over a model's channels (:func:`channels_for`, :func:`restore_channels`) instead of
knowing them by name.  Torch-free at import.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from ..batch_keys import own
from ..errors import PriorkitError


class PredictionWarning(UserWarning):
    """Something about the input or the saved model the user should know (a text was truncated,
    a provider changed since training, the run's cache cannot be read)."""


@dataclasses.dataclass
class Context:
    """What a channel is made with besides its settings."""

    tokenizer: Any
    max_length: int | None
    #: the prior cache file a run reads (None: none)
    cache: str | None = None
    #: restoring: the model folder, priorkit.json's ``prior`` (the spec and its provider),
    #: and whether to read the run's cache
    folder: Path | None = None
    prior: Mapping[str, Any] | None = None
    use_cache: bool = True


@dataclasses.dataclass
class CardText:
    """A channel's part of the model card."""

    #: (key, value) rows of the card's prior table
    rows: list[tuple[str, str]]
    #: how the model uses the prior, as a phrase: "a prior from the wordnet provider in its attention"
    summary: str
    #: what loading does, as a phrase: "switches prior attention back on"
    use: str
    #: what a plain from_pretrained loses: "the prior attention"
    lost: str
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class TokenView:
    """What a channel put in at each token of one input, for ``priorkit show`` (rows follow
    the batch's tokens, padding included)."""

    #: per token, what the channel matched there ("" for nothing), and the column's name
    labels: list[str]
    label_name: str
    #: per token, a size of what the channel added there, and the column's name
    values: list[float]
    value_name: str


@dataclasses.dataclass
class ChannelSetting:
    """What a prior setting hands its channels, as plain data: its :class:`PriorSpec` (what is
    built: provider, parameters, layout, keys, ...) and each channel's section as a mapping,
    typed by the channel when it asks (:meth:`Channel.section`).  A run's own sections (silver
    labels, calibration, train fields) never reach a channel (training builds this:
    ``priorkit.training.wiring.channel_setting``)."""

    #: the prior's PriorSpec (``spec()`` gives it, as a pipeline's prior setting does)
    prior_spec: Any
    #: sections of their own (a prior setting's field named like the channel): name -> mapping or None
    own: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``prior.channels``: name -> mapping
    listed: dict[str, Any] = dataclasses.field(default_factory=dict)

    def spec(self) -> Any:
        return self.prior_spec

    @property
    def provider(self) -> str | None:
        return self.prior_spec.provider

    @property
    def params(self) -> dict[str, Any]:
        return self.prior_spec.params


class Channel:
    """Base class of the channels; subclass it, set ``name``, write the methods you need."""

    #: the channel's key in priorkit.json's ``channels`` and its section of a prior setting
    name: ClassVar[str] = ""
    #: the keywords its batch tensors go to the model under; a model without the channel
    #: attached refuses them instead of ignoring them (priorkit/attention/guard.py)
    batch_keys: ClassVar[tuple[str, ...]] = ()
    #: the keywords of its batch tensors that only its loss hook reads (:meth:`token_loss_weights`):
    #: the trainer takes them out of the batch before the forward pass, the collator drops them
    #: from a batch without labels (predict, show), and the model refuses them
    loss_keys: ClassVar[tuple[str, ...]] = ()
    #: the dataclass of the channel's section of a prior setting: its fields, types and defaults
    #: are what a pipeline file can set there, checked with file:line like every section (the
    #: attention channel's ``AttentionConfig``, the features channel's ``FeatureConfig``, each in
    #: the ``config.py`` next to it).  None: the section stays a plain, unchecked mapping.
    config: ClassVar[type | None] = None

    # ---- making it -----------------------------------------------------------------
    @classmethod
    def section(cls, prior: Any) -> Any:
        """The channel's own section of a prior setting (a :class:`ChannelSetting`, or a pipeline's
        prior setting), as its :attr:`config` (None when absent or null): the setting's section
        of its own named like the channel when it has one (older than ``prior.channels``), else
        ``prior.channels[<name>]``."""
        if prior is None:
            return None
        if isinstance(prior, ChannelSetting):
            value = prior.own[cls.name] if cls.name in prior.own else prior.listed.get(cls.name)
            return typed_section(cls, value)
        if has_own_section(prior, cls.name):
            return getattr(prior, cls.name)
        value = (getattr(prior, "channels", None) or {}).get(cls.name)
        return typed_section(cls, value)

    @classmethod
    def from_setting(cls, prior: Any, context: Context) -> "Channel | None":
        """The channel a pipeline's prior setting asks for; None when its section is null."""
        raise NotImplementedError

    @classmethod
    def restore(cls, description: Mapping[str, Any], context: Context) -> "Channel":
        """The channel again, from what :meth:`describe` wrote (not attached yet)."""
        raise NotImplementedError

    # ---- batches -------------------------------------------------------------------
    def batch_tensors(self, examples: Sequence[Mapping[str, Any]], encoding: Any) -> dict[str, Any]:
        """This channel's tensors of a padded batch, from the batch's one tokenisation (the
        collator's fast-tokenizer ``encoding``: ``input_ids``, ``word_ids(b)``, ``encodings``)."""
        return {}

    def close(self) -> None:
        """Write what is pending (the collator's ``close``)."""

    def token_view(self, model: Any, batch: Mapping[str, Any], index: int = 0) -> TokenView | None:
        """What the channel put in at each token of example ``index`` of a collated ``batch``,
        for ``priorkit show`` (None: nothing per token to show)."""
        return None

    # ---- the model -----------------------------------------------------------------
    def attach(self, model: Any) -> None:
        """Put the channel into ``model`` (in place)."""

    def detach(self, model: Any) -> None:
        """Undo :meth:`attach`."""

    def parameters(self, model: Any) -> list[Any]:
        """The channel's trainable parameters in ``model`` (an optimiser group of their own
        when :attr:`learning_rate` is set)."""
        return []

    #: the parameters' own learning rate (None: the run's)
    learning_rate: float | None = None
    #: where :meth:`load_state` reads the weights (None: the folder's own model weights; the
    #: converter names an older folder's side file here: ``{"file": ..., "prefix": ...}``)
    weights: Mapping[str, Any] | None = None

    def load_state(self, model: Any, folder: str | Path) -> None:
        """Fill the attached parameters from the model folder's own weights (model.safetensors):
        ``save_pretrained`` wrote them there, under their names in ``model.state_dict()``
        (:func:`priorkit.weights.read_weights`, the one weight reader)."""
        from ..weights import read_weights

        params = self.parameters(model)
        if not params:
            return
        ids = {id(p) for p in params}
        names = [n for n, p in model.named_parameters() if id(p) in ids]
        saved = read_weights(folder, names, **dict(self.weights or {}))
        missing = [n for n in names if n not in saved]
        if missing:
            raise PriorkitError(f"{folder}: the weights of the {self.name} channel ({', '.join(missing[:3])}"
                                f"{' ...' if len(missing) > 3 else ''}) are not in its model weights; copy the "
                                "whole model folder, or train again")
        import torch

        named = dict(model.named_parameters())
        with torch.no_grad():
            for n in names:
                named[n].copy_(saved[n])

    # ---- the loss (priorkit/training/loss.py) ---------------------------------------
    def token_loss_weights(self, model: Any, batch: Mapping[str, Any]) -> Any:
        """Weights of this batch's task loss, or None to leave it alone: a float tensor (B, L),
        one per token, or (B,), one per example, multiplied into the data's own
        ``label_weights`` (silver rows) and the other channels' weights.  The weighted loss is
        the sum of weight x token loss over the labelled tokens (-100 is never counted),
        divided by the number of labelled tokens, so weights of 1 give the stock loss.

        ``batch``: the collated batch before the forward pass, ``labels`` and every loss key
        (:attr:`loss_keys`) included; read your own tensors from it (made by
        :meth:`batch_tensors`, where the words and their tokens are known)."""
        return None

    def extra_loss(self, model: Any) -> Any:
        """An auxiliary term (a scalar tensor) added to the task loss after each forward pass,
        or None: the attention channel's ``supervise`` mode gives its weighted KL here."""
        return None

    # ---- describing it -------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """JSON-safe: what :meth:`restore` needs, and what the manifest and the card show."""
        return {}

    @classmethod
    def card(cls, description: Mapping[str, Any], prior: Mapping[str, Any] | None) -> CardText:
        """The channel's part of the model card (``prior``: priorkit.json's ``prior``)."""
        return CardText(rows=[(cls.name, json.dumps(dict(description), sort_keys=True))],
                        summary=f"the {cls.name} channel", use=f"restores the {cls.name} channel",
                        lost=f"the {cls.name} channel")


#: channel name -> class, in the order batches, models and manifests see them
CHANNELS: dict[str, type[Channel]] = {}


def register_channel(cls: type[Channel]) -> type[Channel]:
    """Make ``cls`` a channel (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Channel)) or not cls.name:
        raise PriorkitError(f"{cls!r} is not a Channel subclass with a name")
    known = CHANNELS.get(cls.name)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise PriorkitError(f"channel {cls.name!r} is registered already ({known.__module__})")
    CHANNELS[cls.name] = cls
    own(cls.batch_keys, cls.name)
    own(cls.loss_keys, cls.name, loss_only=True)
    return cls


def has_own_section(prior: Any, name: str) -> bool:
    """Whether a prior setting has a field of its own for channel ``name`` (a dataclass field,
    or a :class:`ChannelSetting`'s ``own``), rather than an entry of ``prior.channels``."""
    if isinstance(prior, ChannelSetting):
        return name in prior.own
    return dataclasses.is_dataclass(prior) and name in {f.name for f in dataclasses.fields(prior)}


def typed_section(cls: type[Channel], value: Any, where: str = "") -> Any:
    """``value`` (a channel's section) as the channel's declared :attr:`Channel.config`: a mapping
    becomes that dataclass (an unknown field is refused with the known ones); anything else, or a
    channel without a config, as it is.  The pipeline loader does the same with file:line."""
    if value is None or cls.config is None or not isinstance(value, Mapping):
        return value
    known = [f.name for f in dataclasses.fields(cls.config)]
    unknown = [k for k in value if k not in known]
    if unknown:
        raise PriorkitError(f"{where or 'prior.channels.' + cls.name}: unknown field(s) {unknown} of the {cls.name} "
                            f"channel (known: {', '.join(known)})")
    return cls.config(**value)


def listed_channels(prior: Any = None) -> list[str]:
    """The registered channels a prior setting names in ``prior.channels`` (every one without a
    section of its own)."""
    return [n for n in CHANNELS if not has_own_section(prior, n)]


def load_plugin_channels() -> None:
    """Register the channels the plug-ins offer through ``register_channels``."""
    from ..providers.plugins import get_plugin_manager

    for cls in get_plugin_manager().channel_classes.values():
        if CHANNELS.get(cls.name) is not cls:
            register_channel(cls)


def unknown_channels(prior: Any) -> list[str]:
    """The names in a prior setting's ``channels`` section that no channel answers to."""
    names = list(prior.listed if isinstance(prior, ChannelSetting) else (getattr(prior, "channels", None) or {}))
    if any(n not in CHANNELS for n in names):
        load_plugin_channels()
    return [n for n in names if n not in CHANNELS or has_own_section(prior, n)]


def channels_for(prior: Any, context: Context) -> list[Channel]:
    """The channels a prior setting (a :class:`ChannelSetting`: a run hands plain data down)
    asks for, in registry order."""
    unknown = unknown_channels(prior)
    if unknown:
        own = [n for n in CHANNELS if n not in listed_channels(prior)]
        raise PriorkitError(f"prior.channels names {unknown}, which are not registered channels (known: "
                            f"{', '.join(listed_channels(prior)) or 'none'}"
                            f"{'; ' + ' and '.join(own) + ' have sections of their own' if own else ''})")
    out = []
    for cls in CHANNELS.values():
        channel = cls.from_setting(prior, context)
        if channel is not None:
            out.append(channel)
    return out


def restore_channels(descriptions: Mapping[str, Any], context: Context, where: Any = "") -> list[Channel]:
    """The channels priorkit.json's ``channels`` names, in registry order (not attached)."""
    if any(n not in CHANNELS for n in descriptions):
        load_plugin_channels()
    unknown = [n for n in descriptions if n not in CHANNELS]
    if unknown:
        raise PriorkitError(f"{where}: the model uses the channel(s) {unknown}, which are not registered "
                            f"(known: {', '.join(CHANNELS)}); import the module that registers them "
                            "(priorkit.channels.register_channel) before loading the model, or load its plug-in "
                            "(--plugins-dir)")
    out = []
    for name in [n for n in CHANNELS if n in descriptions]:
        channel = CHANNELS[name].restore(descriptions[name], context)
        channel.weights = descriptions[name].get("weights")  # an older folder's side file (the converter's)
        out.append(channel)
    return out

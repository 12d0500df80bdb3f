"""``enable_prior_attention`` / ``disable_prior_attention``: switch a loaded encoder in place.

Nothing is forked or wrapped.  Enabling

* switches ``config._attn_implementation`` from ``sdpa``/``eager`` to priorkit's
  dispatcher over it (see :mod:`priorkit.attention.dispatch`);
* puts a small :class:`LayerPrior` record on the attention module of each chosen layer
  (and, in ``gate`` / ``learned_bias`` mode, a ``prior_gate`` / ``prior_strength``
  parameter, so it is in the state dict and in ``model.parameters()``: build the
  optimiser after enabling);
* writes the settings to ``config.priorkit`` (a JSON-safe dict saved in config.json).

For MPNet and DeBERTa-v2, whose attention is their own code, it also installs the
architecture's adapter (:mod:`priorkit.attention.adapters`: a hook routing ``prior=`` and
a replacement ``forward`` on the primed self-attention modules).

Disabling removes all of that and puts back the original implementation name and the
original ``config.priorkit`` (absent, usually).
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from . import adapters, checkpoint
from .architectures import BASE_IMPLEMENTATIONS, attention_modules
from .dispatch import LAYER_ATTR, LayerPrior, base_of, implementation_name
from .errors import PriorAttentionConfigError, UnsupportedModelError
from .mode import SUPERVISION_ATTR, get_mode, learnable_names

CONFIG_KEY = "priorkit"
_STATE_ATTR = "_priorkit_state"
_FORMAT = 1
_ABSENT = object()  # "config.priorkit did not exist before enabling"
_UNSET: Any = object()  # "argument not given": lets enable(model) restore config.priorkit


@dataclasses.dataclass(frozen=True)
class PriorSettings:
    """Validated settings; ``to_config()`` is what config.json stores."""

    layers: tuple[int, ...]
    mode: str
    heads: tuple[int, ...] | None
    options: dict[str, float]

    def to_config(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "layers": list(self.layers),
            "mode": self.mode,
            "heads": None if self.heads is None else list(self.heads),
            "options": dict(self.options),
        }


def _settings(
    layers: Any, mode: Any, heads: Any, options: dict[str, Any], n_layers: int, n_heads: int
) -> PriorSettings:
    opts = get_mode(mode).settle(options)  # the mode's defaults and checks
    return PriorSettings(
        layers=_indices("layers", layers, n_layers, "layer"),
        mode=mode,
        heads=None if heads is None else _indices("heads", heads, n_heads, "head"),
        options=opts,
    )


def _indices(arg: str, value: Any, count: int, what: str) -> tuple[int, ...]:
    """Normalise ``layers``/``heads``: ints (negative from the end) or "all"; sorted, unique."""
    if isinstance(value, str):
        if value != "all":
            raise PriorAttentionConfigError(f'{arg}={value!r}: pass integers or "all".')
        return tuple(range(count))
    if isinstance(value, int):
        value = (value,)
    if not isinstance(value, Iterable):
        raise PriorAttentionConfigError(f"{arg}={value!r}: pass a sequence of {what} indices.")
    out = set()
    for i in value:
        if isinstance(i, bool) or not isinstance(i, int) or not -count <= i < count:
            raise PriorAttentionConfigError(
                f"{arg}={value!r}: {i!r} is not a {what} index of this model (it has {count} {what}s)."
            )
        out.add(i % count)
    if not out:
        raise PriorAttentionConfigError(f"{arg}={value!r} is empty; give at least one {what}.")
    return tuple(sorted(out))


def _from_config(saved: Any, n_layers: int, n_heads: int) -> PriorSettings:
    if not isinstance(saved, dict) or saved.get("format") != _FORMAT:
        raise PriorAttentionConfigError(
            f"config.{CONFIG_KEY}={saved!r} was not written by this priorkit version (format {_FORMAT})."
        )
    return _settings(saved["layers"], saved["mode"], saved["heads"], saved["options"], n_layers, n_heads)


def enable_prior_attention(
    model: nn.Module,
    layers: Iterable[int] | int | str = _UNSET,
    mode: str = _UNSET,
    heads: Iterable[int] | None = _UNSET,
    **mode_options: float,
) -> nn.Module:
    """Let ``model(..., prior=P)`` feed the prior P into attention; returns ``model`` (changed in place).

    Args:
        model: a supported Hugging Face encoder (any head), using "sdpa" or "eager" attention.
        layers: layer indices (negative from the end) or "all"; default ``(0,)`` as in the paper.
        mode: "multiply" (the paper), "bias" (options ``lam``, ``eps``), "gate" (option ``init``),
            "learned_bias" (options ``init``, ``eps``) or "supervise" (options ``weight``, ``power``;
            add :func:`supervision_loss` to the training loss -- priorkit's Trainer does, through
            the attention channel's ``extra_loss``).
        heads: heads that get the prior (default all); the others keep stock attention.
        **mode_options: the mode's options, see docs/attention.md.

    Called with no settings on a model whose ``config.priorkit`` holds saved settings
    (a model saved with ``save_pretrained`` while enabled), it restores those settings
    and the trained gate values from the checkpoint the model was loaded from.
    P is (B, L, L) or (B, H, L, L); without ``prior=`` the model computes exactly what it
    computed before.  Undo with :func:`disable_prior_attention`.
    """
    modules = attention_modules(model)  # raises UnsupportedModelError, listing what is supported
    config = model.config
    current = config._attn_implementation
    if base_of(current) is not None:
        raise PriorAttentionConfigError(
            f"prior attention is already enabled on this {type(model).__name__} "
            f"({getattr(config, CONFIG_KEY, None)}); call disable_prior_attention(model) first."
        )
    if current not in BASE_IMPLEMENTATIONS:
        raise UnsupportedModelError(
            f"{type(model).__name__} uses attn_implementation={current!r}; prior attention builds on "
            f"{' or '.join(map(repr, BASE_IMPLEMENTATIONS))}. Load the model with "
            "attn_implementation='sdpa' (or call model.set_attn_implementation('sdpa')) first."
        )

    n_layers, n_heads = len(modules), int(config.num_attention_heads)
    saved = getattr(config, CONFIG_KEY, _ABSENT)
    explicit = not (layers is _UNSET and mode is _UNSET and heads is _UNSET and not mode_options)
    if explicit or saved is _ABSENT or saved is None:
        settings = _settings(
            (0,) if layers is _UNSET else layers,
            "multiply" if mode is _UNSET else mode,
            None if heads is _UNSET else heads,
            mode_options, n_layers, n_heads,
        )
    else:
        settings = _from_config(saved, n_layers, n_heads)
    restoring = saved is not _ABSENT and saved == settings.to_config()

    param_name = get_mode(settings.mode).learnable
    learnable = learnable_names()
    for i in settings.layers:
        module = modules[i]
        if any(name in module._parameters for name in learnable) or hasattr(module, LAYER_ATTR):
            raise PriorAttentionConfigError(
                f"layer {i}'s {type(module).__name__} already has one of {list(learnable)} or "
                f"'{LAYER_ATTR}'; remove them or reload the model."
            )
    try:
        for i in settings.layers:
            module = modules[i]
            setattr(module, LAYER_ATTR, LayerPrior(i, settings.mode, settings.heads, settings.options))
            if param_name is not None:
                ref = next(module.parameters())  # new parameters follow the layer's device and dtype
                size = n_heads if settings.heads is None else len(settings.heads)
                value = torch.full((size,), settings.options["init"], dtype=ref.dtype, device=ref.device)
                module.register_parameter(param_name, nn.Parameter(value))
        if param_name is not None and restoring:
            _load_learned(model, modules, settings, param_name)
        adapters.install(model, modules, settings.layers)  # MPNet, DeBERTa-v2: prior= routed by hooks
    except BaseException:
        _strip(model, modules)  # a failed enable leaves the model as it was
        raise

    setattr(model, _STATE_ATTR, {"base": current, "previous": saved})
    config._attn_implementation = implementation_name(current)
    setattr(config, CONFIG_KEY, settings.to_config())
    return model


def _load_learned(model: nn.Module, modules: list[nn.Module], settings: PriorSettings, param_name: str) -> None:
    """Fill the fresh gates / strengths with the values saved next to config.priorkit (see checkpoint.py)."""
    source = getattr(model.config, "_name_or_path", "") or ""
    available = checkpoint.read_tensors(source, "." + param_name)
    names = {id(m): n for n, m in model.named_modules()}
    prefix = getattr(model, "base_model_prefix", "") or ""
    missing = []
    for i in settings.layers:
        param = getattr(modules[i], param_name)
        name = f"{names[id(modules[i])]}.{param_name}"
        saved = checkpoint.match_key(name, available, prefix)
        if saved is None:
            missing.append(name)
        elif tuple(saved.shape) != tuple(param.shape):
            raise PriorAttentionConfigError(
                f"{source}: {name} has shape {tuple(saved.shape)}, config.priorkit implies {tuple(param.shape)}."
            )
        else:
            with torch.no_grad():
                param.copy_(saved)
    if missing:
        warnings.warn(
            f"config.priorkit asks for learned {param_name} values but the checkpoint {source!r} holds no "
            f"{missing}; they start at init={settings.options['init']} (load a state dict to set them).",
            stacklevel=3,
        )


def disable_prior_attention(model: nn.Module) -> nn.Module:
    """Undo :func:`enable_prior_attention`: same implementation, parameters and config as before.

    A no-op on a model that is not enabled (safe to call in ``finally``).
    """
    config = getattr(model, "config", None)
    base = base_of(getattr(config, "_attn_implementation", None))
    if base is None:
        return model
    state = model.__dict__.pop(_STATE_ATTR, {"base": base, "previous": _ABSENT})
    _strip(model, attention_modules(model))
    config._attn_implementation = state["base"]
    if state["previous"] is _ABSENT:
        config.__dict__.pop(CONFIG_KEY, None)
    else:
        setattr(config, CONFIG_KEY, state["previous"])
    return model


def _strip(model: nn.Module, modules: list[nn.Module]) -> None:
    adapters.uninstall(model, modules)
    for module in modules:
        module.__dict__.pop(LAYER_ATTR, None)
        module.__dict__.pop(SUPERVISION_ATTR, None)
        for name in learnable_names():
            module._parameters.pop(name, None)


def supervision_loss(model: nn.Module) -> torch.Tensor | None:
    """The ``supervise`` layers' auxiliary loss of the last training forward pass, weighted
    (``weight * KL``, summed over layers), and forget it; None when there is none.

    Add it to the task loss before ``backward``::

        out = model(**batch, prior=P)
        loss = out.loss + (priorkit.attention.supervision_loss(model) or 0)

    Only forward passes in training mode with gradients enabled compute it.
    """
    losses = []
    for module in model.modules():
        value = module.__dict__.pop(SUPERVISION_ATTR, None)
        if value is not None:
            losses.append(value)
    if not losses:
        return None
    return torch.stack([v.float() for v in losses]).sum()


def prior_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The learnable prior parameters (``prior_gate``, ``prior_strength``) as (name, parameter)."""
    names = learnable_names()
    return [(n, p) for n, p in model.named_parameters() if n.rsplit(".", 1)[-1] in names]

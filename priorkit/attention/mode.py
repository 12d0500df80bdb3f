"""An attention mode as an object, and the one registry of modes.

A mode says how a prior P enters one attention layer.  Its class holds

* ``name`` and ``options`` (option name -> default; every option is a finite number);
* ``learnable``: the name of its one learnable per-head parameter on the attention
  module (initialised from ``options["init"]``), or None; ``learnable_label`` what
  ``priorkit show`` calls its values (``gate``, ``strength``);
* :meth:`AttentionMode.check_options`: its rules beyond "a finite number";
* :meth:`AttentionMode.attend`: its maths, given a :class:`Call`.

:data:`MODES` is read by ``enable_prior_attention`` (settings, parameters), the
dispatcher (which mode runs) and the pipeline's checks (``attention.mode``,
``attention.options``).  A new mode is one file: a subclass and
``register_mode(MyMode)`` (docs/attention.md, "Your own mode"); a plug-in registers
it through the ``register_attention_modes`` hook, so the command line finds it too
(:func:`get_mode` and :func:`all_modes` load the plug-ins' modes on first need).
The built-in ones are in :mod:`priorkit.attention.builtin_modes`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from . import kernels, shared
from .maths import eager_attention
from .errors import PriorAttentionConfigError

#: attribute holding the last training forward's auxiliary loss of a layer (``supervise``)
SUPERVISION_ATTR = "_priorkit_supervision"


@dataclasses.dataclass
class Call:
    """One attention call of a layer that gets the prior: the inputs a mode's maths need."""

    module: nn.Module
    base: Callable[..., tuple[Tensor, Tensor | None]]  # the model's own sdpa / eager function
    query: Tensor  # (B, H, L, d)
    key: Tensor  # (B, Hkv, L, d)
    value: Tensor  # (B, Hkv, L, d)
    mask: Tensor | None  # (B, 1, L, L) bool / float, or None without padding
    prior: Tensor  # as passed: (B, L, L) or (B, H, L, L)
    prior4: Tensor  # (B, 1|H, L, L), checked
    kwargs: dict[str, Any]
    scaling: float

    @property
    def dtype(self) -> torch.dtype:
        return self.query.dtype

    @property
    def device(self) -> torch.device:
        return self.query.device

    @property
    def dropout(self) -> float:
        return self.kwargs.get("dropout", 0.0)

    @functools.cached_property
    def kernel(self) -> str:
        """``sdpa``, ``flex`` or ``eager`` (kernels.choose)."""
        return kernels.choose(self.query, self.module.training, self.dropout)

    def once(self, key: tuple, make: Callable[[], Any]) -> Any:
        """Derived from the prior and the mask alone: computed by the first prior layer of
        this forward pass, reused by the others (see shared.py)."""
        return shared.per_forward(self.prior, self.mask, (*key, self.dtype, self.device), make)

    def stock(self, mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """The model's own kernel with ``mask`` (default: the padding mask) -- or, on the eager
        kernel choice, the same maths in eager form."""
        mask = self.mask if mask is None else mask
        if self.kernel == "eager":
            one = self.once(("scaling", self.scaling),
                            lambda: torch.tensor(self.scaling, dtype=self.dtype, device=self.device))
            return eager_attention(self.module, self.query, self.key, self.value, one, mask, self.dropout)
        return self.base(self.module, self.query, self.key, self.value, mask, **self.kwargs)


class AttentionMode:
    """Base class of the modes; subclass it, set the class attributes, write :meth:`attend`."""

    name: ClassVar[str] = ""
    #: option -> default
    options: ClassVar[dict[str, float]] = {}
    #: a learnable per-head parameter on the attention module (initialised from option ``init``)
    learnable: ClassVar[str | None] = None
    #: what ``priorkit show`` calls the learnable parameter's values (default: ``learnable``)
    learnable_label: ClassVar[str | None] = None

    @classmethod
    def label(cls) -> str | None:
        """The learnable parameter's name for people (``gate``, ``strength``); None without one."""
        return cls.learnable_label or cls.learnable

    def check_options(self, options: dict[str, float]) -> None:
        """Raise :class:`PriorAttentionConfigError` for option values the maths cannot take."""

    def attend(self, layer: Any, call: Call) -> tuple[Tensor, Tensor | None]:
        """(B, L, H, d) output and the weights (or None), as the model's attention function returns.

        ``layer`` is the layer's :class:`~priorkit.attention.dispatch.LayerPrior` (``heads``,
        ``options``, ``head_vector``, ``selected``)."""
        raise NotImplementedError

    # ---- settings ------------------------------------------------------
    def settle(self, options: dict[str, Any]) -> dict[str, float]:
        """The options with defaults filled in, checked."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise PriorAttentionConfigError(
                f"mode={self.name!r} takes no option(s) {unknown}; its options are {sorted(self.options) or 'none'}."
            )
        opts: dict[str, float] = {}
        for name, default in self.options.items():
            value = options.get(name, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise PriorAttentionConfigError(f"{self.name} option {name}={value!r} must be a finite number.")
            opts[name] = float(value)
        self.check_options(opts)
        return opts


#: mode name -> the mode (an instance of its class)
MODES: dict[str, AttentionMode] = {}


def register_mode(cls: type[AttentionMode]) -> type[AttentionMode]:
    """Make ``cls`` usable as ``mode=cls.name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, AttentionMode)) or not cls.name:
        raise PriorAttentionConfigError(f"{cls!r} is not an AttentionMode subclass with a name")
    if cls.learnable is not None and "init" not in cls.options:
        raise PriorAttentionConfigError(f"mode {cls.name!r} has a learnable {cls.learnable!r} but no 'init' option")
    known = MODES.get(cls.name)
    if known is not None and type(known).__qualname__ != cls.__qualname__:
        raise PriorAttentionConfigError(f"attention mode {cls.name!r} is registered already ({type(known).__module__})")
    MODES[cls.name] = cls()
    return cls


def load_plugin_modes() -> None:
    """Register the modes the plug-ins offer through ``register_attention_modes`` (the
    plug-in manager collects them; importing a plug-in file does not reach this registry
    on its own).  Cheap after the first call: the manager is built once per environment."""
    from ..providers.plugins import get_plugin_manager

    for cls in get_plugin_manager().attention_modes.values():
        if MODES.get(cls.name) is None or type(MODES[cls.name]) is not cls:
            register_mode(cls)


def find_mode(name: Any) -> AttentionMode | None:
    """The registered mode ``name`` (the plug-ins' modes included), or None."""
    if not isinstance(name, str):
        return None
    if name not in MODES:
        load_plugin_modes()
    return MODES.get(name)


def get_mode(name: Any) -> AttentionMode:
    mode = find_mode(name)
    if mode is None:
        raise PriorAttentionConfigError(f"mode={name!r} is not one of {sorted(MODES)}.")
    return mode


def all_modes() -> dict[str, AttentionMode]:
    """Every mode, built-in and from plug-ins (name -> mode)."""
    load_plugin_modes()
    return dict(MODES)


def learnable_names() -> tuple[str, ...]:
    """The learnable parameter names of every registered mode (``prior_gate``, ``prior_strength``)."""
    return tuple(sorted({m.learnable for m in MODES.values() if m.learnable}))


__all__ = ["AttentionMode", "Call", "MODES", "register_mode", "get_mode", "find_mode", "all_modes",
           "load_plugin_modes", "learnable_names", "SUPERVISION_ATTR"]

"""The hooks a priorkit plug-in can implement.

A plug-in is any module (or object) with functions marked ``@priorkit.hookimpl``
whose names match a spec below.  Plug-ins are found through the ``priorkit``
entry-point group, or as ``.py`` files in a plug-in folder (``--plugins-dir`` or
``$PRIORKIT_PLUGINS_DIR``).  A marked function whose name matches no spec makes
the plug-in broken (listed with the error by ``priorkit plugins``), so a typo
is never silently ignored.
"""
from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("priorkit")
hookimpl = pluggy.HookimplMarker("priorkit")


@hookspec
def register_prior_providers(register: Callable[..., None]) -> None:
    """Add prior providers.

    :param register: call ``register(name, factory, description="")`` once per
        provider.  ``name`` is what users pass to ``priorkit.get_provider``;
        ``factory(**params)`` must return a :class:`priorkit.PriorProvider`
        (usually ``factory`` is the provider class itself).  Construction must
        be cheap: load heavy resources lazily in ``PriorProvider.load``.

    Called once per plug-in when the plug-in manager starts; the return value
    is ignored.  Two plug-ins registering the same name is an error.
    """


@hookspec
def register_attention_modes(register: Callable[[type], None]) -> None:
    """Add attention modes (how a prior enters an attention layer, docs/attention.md).

    :param register: call ``register(ModeClass)`` once per mode, with a subclass of
        :class:`priorkit.attention.AttentionMode` that has a ``name``.  The mode is then
        usable as ``enable_prior_attention(model, mode=name)``, as a pipeline's
        ``attention: {mode: name}`` under ``priorkit run`` / ``sweep`` / ``tune``, and by
        ``priorkit predict`` / ``show`` for a model trained with it.

    Called once per plug-in when the plug-in manager starts (the classes are put into
    the registry of modes when a mode is first looked up); two plug-ins registering the
    same name is an error.
    """


@hookspec
def register_channels(register: Callable[[type], None]) -> None:
    """Add channels: ways knowledge enters a model besides prior attention and token
    features (docs/channels.md).

    :param register: call ``register(ChannelClass)`` once per channel, with a subclass of
        :class:`priorkit.channels.Channel` that has a ``name``.  A pipeline's
        ``prior.channels.<name>`` section then asks for it under ``priorkit run``, and
        ``priorkit predict`` / ``priorkit.load_model`` restore it from a model folder.

    Called once per plug-in when the plug-in manager starts; two plug-ins registering the
    same name is an error.
    """


@hookspec
def register_commands(cli) -> None:
    """Add sub-commands to the ``priorkit`` command line.

    :param cli: the root :class:`click.Group`; call ``cli.add_command(cmd)`` or
        decorate functions with ``@cli.command()``.

    Called once when the command line starts; the return value is ignored.
    """

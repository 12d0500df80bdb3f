"""The plug-ins a model folder needs: recorded when the folder is written (priorkit.json's
``plugins``: each plug-in whose provider or channel the model uses, with where it was loaded
from and its version), checked when it loads.  A model trained with a folder plug-in and loaded
where that plug-in is not says which plug-in it needs, where it came from at training time and
what to do, instead of "unknown prior provider ... Did you mean ...".
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import PluginError


def provider_names(obj: Any) -> set[str]:
    """Every provider name in a prior or channel description: the value of each ``provider`` key
    (a name, or a provider's ``describe()`` with its ``name``), nested ones (a control's or a
    calibration's inner provider) included."""
    found: set[str] = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Mapping):
            p = x.get("provider")
            if isinstance(p, str):
                found.add(p)
            elif isinstance(p, Mapping) and isinstance(p.get("name"), str):
                found.add(p["name"])
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return found


def _settings_providers(prior: Mapping[str, Any], channels: Mapping[str, Any]) -> set[str]:
    """The provider names an older folder's settings give: the prior's provider and those its
    channels' ``config`` sections name.  A channel's description beside its config also holds
    its providers' ``describe()`` (fingerprints such as ``ontology-931856d4e9785ebf`` under a
    ``provider`` key), which name no registered provider and are left out."""
    names = {prior["provider"]} if isinstance(prior.get("provider"), str) else set()
    for ch in channels.values():
        if isinstance(ch, Mapping) and isinstance(ch.get("config"), Mapping):
            names |= provider_names(ch["config"])
    return names


def plugins_used(prior: Mapping[str, Any] | None, channels: Mapping[str, Any]) -> list[dict[str, Any]]:
    """priorkit.json's ``plugins``: for each plug-in a provider or a channel of the model comes
    from, its name, source (a plug-in file, or the installed distribution and entry point),
    version and the providers and channels of it the model uses."""
    from ..providers.plugins import get_plugin_manager

    pm = get_plugin_manager()
    used: dict[str, dict[str, list[str]]] = {}
    for name in sorted(provider_names({"prior": prior, "channels": channels})):
        entry = pm.providers.get(name)
        if entry is not None:
            used.setdefault(entry.plugin, {"providers": [], "channels": []})["providers"].append(name)
    for name in channels:
        entry = pm.channels.get(name)
        if entry is not None:
            used.setdefault(entry.plugin, {"providers": [], "channels": []})["channels"].append(name)
    info = {p.name: p for p in pm.plugins()}
    return [{"name": name, "source": info[name].source if name in info else None,
             "version": info[name].version if name in info else None, **what}
            for name, what in sorted(used.items())]


def _what_to_do(source: str | None) -> str:
    if source and source.endswith(".py"):
        return (f"put {Path(source).name} in a folder named by PRIORKIT_PLUGINS_DIR (or pass "
                "`priorkit --plugins-dir FOLDER`)")
    if source:
        return f"install it ({source})"
    return "load the plug-in that registers it (PRIORKIT_PLUGINS_DIR, `priorkit --plugins-dir`, or pip install)"


def check_plugins(info: Mapping[str, Any], where: Any) -> None:
    """Raise a :class:`PluginError` naming each plug-in the model folder needs that is not loaded
    here (its providers or channels unknown): where it was loaded from at training time and
    what to do.  ``info``: the folder's priorkit.json; ``where``: its path, for the message."""
    from ..providers.plugins import get_plugin_manager

    pm = get_plugin_manager()
    known = set(pm.providers)
    channels = set(pm.channels)
    from ..channels import CHANNELS

    channels |= set(CHANNELS)
    broken = {b.name: b.error for b in pm.broken()}
    lines = []
    recorded: Iterable[Mapping[str, Any]] = info.get("plugins") or []
    for r in recorded:
        lacking = [f"provider {p!r}" for p in r.get("providers", ()) if p not in known]
        lacking += [f"channel {c!r}" for c in r.get("channels", ()) if c not in channels]
        if lacking:
            why = f" (it is here but broken: {broken[r['name']]})" if r["name"] in broken else ""
            at = f"at training time it was loaded from {r['source']}" if r.get("source") else "its source is not recorded"
            version = f", version {r['version']}" if r.get("version") else ""
            lines.append(f"plug-in {r['name']!r}{version} (its {', '.join(lacking)}), which is not loaded "
                         f"here{why}; {at}: {_what_to_do(r.get('source'))}")
    if not recorded:  # a folder saved before the record: the providers it names, and the prior's plug-in
        prior = info.get("prior") or {}
        for name in sorted(_settings_providers(prior, info.get("channels") or {}) - known):
            plugin = prior.get("plugin") if prior.get("provider") == name else None
            lines.append(f"provider {name!r}{f' of plug-in {plugin!r}' if plugin else ''}, which is not loaded here "
                         "(the folder predates the record of where its plug-ins came from): " + _what_to_do(None))
    if lines:
        raise PluginError(f"{where}: the model needs " + "; ".join(lines)
                          + ". `priorkit plugins` lists the plug-ins loaded here")

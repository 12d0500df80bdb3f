"""Finding plug-ins and the providers they register (built on pluggy).

Plug-ins come from two places:

1. the ``priorkit`` entry-point group of every installed distribution -- the
   built-in providers in ``plugins/`` are found this way too;
2. ``.py`` files in plug-in folders: ``plugins_dir=`` / ``--plugins-dir`` or
   ``$PRIORKIT_PLUGINS_DIR`` (``os.pathsep``-separated).

``$PRIORKIT_LOAD_PLUGINS`` (comma-separated entry-point names) restricts which
installed plug-ins load; set it to an empty string to load none of them.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import pluggy

from . import hookspecs
from .errors import PluginError, UnknownProviderError
from .provider import PriorProvider

ENTRY_POINT_GROUP = "priorkit"


@dataclasses.dataclass
class PluginInfo:
    name: str
    version: str | None
    source: str
    hooks: list[str]
    providers: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ProviderEntry:
    name: str
    factory: Callable[..., PriorProvider]
    plugin: str
    description: str = ""


class PriorkitPluginManager:
    """A pluggy manager plus the provider registry its hooks fill."""

    def __init__(
        self,
        plugins_dir: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        load_entry_points: bool = True,
    ) -> None:
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self._info: dict[str, PluginInfo] = {}
        self.providers: dict[str, ProviderEntry] = {}
        if load_entry_points:
            self._load_entry_points()
        for folder in _plugin_dirs(plugins_dir):
            self._load_folder(folder)
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(
                f"plug-in {exc.plugin_name if hasattr(exc, 'plugin_name') else exc.plugin!r} "
                f"implements a hook that priorkit does not define: {exc}. "
                f"Known hooks: {', '.join(_spec_names())}"
            ) from exc
        self._collect_providers()

    # ---- loading ------------------------------------------------------
    def _register(self, plugin: Any, name: str, version: str | None, source: str) -> None:
        if self.pm.has_plugin(name):
            raise PluginError(
                f"two plug-ins are named {name!r}: {self._info[name].source} and {source}; rename one"
            )
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plug-in {name!r} ({source}) is invalid: {exc}") from exc
        hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        self._info[name] = PluginInfo(name, version, source, hooks)

    def _load_entry_points(self) -> None:
        allowed = os.environ.get("PRIORKIT_LOAD_PLUGINS")
        allow = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
        seen: set[tuple[str, str]] = set()
        for dist in importlib.metadata.distributions():
            for ep in dist.entry_points:
                if ep.group != ENTRY_POINT_GROUP or (allow is not None and ep.name not in allow):
                    continue
                key = (dist.metadata["Name"], ep.name)
                if key in seen:  # the same dist can be visible twice on sys.path
                    continue
                seen.add(key)
                try:
                    module = ep.load()
                except Exception as exc:  # noqa: BLE001 - re-raised with the culprit named
                    raise PluginError(
                        f"plug-in {ep.name!r} (entry point {ep.value!r} of {dist.metadata['Name']}) "
                        f"failed to import: {type(exc).__name__}: {exc}. Fix or uninstall it, or "
                        "exclude it with PRIORKIT_LOAD_PLUGINS"
                    ) from exc
                source = f"{dist.metadata['Name']} {dist.version} (entry point {ep.value})"
                self._register(module, ep.name, dist.version, source)

    def _load_folder(self, folder: Path) -> None:
        if not folder.is_dir():
            raise PluginError(f"plug-in folder {folder} does not exist or is not a folder")
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            mod_name = f"priorkit_local_plugins.{path.stem}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                sys.modules[mod_name] = module
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001
                sys.modules.pop(mod_name, None)
                raise PluginError(
                    f"plug-in file {path} failed to import: {type(exc).__name__}: {exc}"
                ) from exc
            self._register(module, path.stem, getattr(module, "__version__", None), str(path))

    # ---- providers ----------------------------------------------------
    def _collect_providers(self) -> None:
        for impl in self.pm.hook.register_prior_providers.get_hookimpls():
            plugin_name = impl.plugin_name

            def register(name: str, factory: Callable[..., PriorProvider], description: str = "",
                         _plugin: str = plugin_name) -> None:
                if not isinstance(name, str) or not name:
                    raise PluginError(f"plug-in {_plugin!r} registered a provider with name {name!r}")
                if not callable(factory):
                    raise PluginError(f"plug-in {_plugin!r} registered {name!r} with a non-callable factory")
                if name in self.providers:
                    raise PluginError(
                        f"provider {name!r} is registered twice: by plug-in "
                        f"{self.providers[name].plugin!r} and by {_plugin!r}"
                    )
                if not description:
                    description = (getattr(factory, "__doc__", "") or "").strip().split("\n")[0]
                self.providers[name] = ProviderEntry(name, factory, _plugin, description)
                self._info[_plugin].providers.append(name)

            try:
                impl.function(register=register)
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PluginError(
                    f"plug-in {plugin_name!r} failed in register_prior_providers: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def get_provider(self, name: str, **params: Any) -> PriorProvider:
        try:
            entry = self.providers[name]
        except KeyError:
            near = difflib.get_close_matches(name, list(self.providers), n=3)
            hint = f" Did you mean {', '.join(map(repr, near))}?" if near else ""
            raise UnknownProviderError(
                f"unknown prior provider {name!r}. Available: {', '.join(sorted(self.providers)) or 'none'}."
                f"{hint} `priorkit plugins` lists them with the plug-ins that add them."
            ) from None
        try:
            provider = entry.factory(**params)
        except TypeError as exc:
            raise PluginError(
                f"provider {name!r} (plug-in {entry.plugin!r}) rejected parameters {sorted(params)}: {exc}"
            ) from exc
        if not isinstance(provider, PriorProvider):
            raise PluginError(
                f"plug-in {entry.plugin!r}: factory of provider {name!r} returned "
                f"{type(provider).__name__}, not a priorkit.PriorProvider"
            )
        provider.plugin = entry.plugin
        return provider

    def plugins(self) -> list[PluginInfo]:
        return sorted(self._info.values(), key=lambda p: p.name)


def _plugin_dirs(explicit) -> list[Path]:
    dirs: list[Path] = []
    if explicit is not None:
        if isinstance(explicit, (str, os.PathLike)):
            explicit = [explicit]
        dirs.extend(Path(p) for p in explicit)
    env = os.environ.get("PRIORKIT_PLUGINS_DIR")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    return dirs


def _spec_names() -> list[str]:
    return sorted(n for n in dir(hookspecs) if n.startswith("register_"))


_MANAGER: PriorkitPluginManager | None = None
_MANAGER_KEY: tuple | None = None


def get_plugin_manager(plugins_dir=None, *, reload: bool = False) -> PriorkitPluginManager:
    """The process-wide manager; rebuilt when the environment or folders change."""
    global _MANAGER, _MANAGER_KEY
    key = (
        tuple(str(p) for p in _plugin_dirs(plugins_dir)),
        os.environ.get("PRIORKIT_LOAD_PLUGINS"),
    )
    if reload or _MANAGER is None or key != _MANAGER_KEY:
        _MANAGER = PriorkitPluginManager(plugins_dir)
        _MANAGER_KEY = key
    return _MANAGER


def list_providers(plugins_dir=None) -> list[ProviderEntry]:
    """Every registered provider, sorted by name."""
    pm = get_plugin_manager(plugins_dir)
    return [pm.providers[n] for n in sorted(pm.providers)]


def get_provider(name: str, *, plugins_dir=None, **params: Any) -> PriorProvider:
    """Instantiate provider ``name`` with ``params`` (cheap: data loads on first use)."""
    return get_plugin_manager(plugins_dir).get_provider(name, **params)


def list_plugins(plugins_dir=None) -> list[PluginInfo]:
    return get_plugin_manager(plugins_dir).plugins()

"""Finding plug-ins and the providers they register (built on pluggy).

Plug-ins come from two places:

1. the ``priorkit`` entry-point group of every installed distribution -- the
   built-in providers in ``plugins/`` are found this way too;
2. ``.py`` files in plug-in folders: ``plugins_dir=`` / ``--plugins-dir`` or
   ``$PRIORKIT_PLUGINS_DIR`` (``os.pathsep``-separated); both behave alike.

``$PRIORKIT_LOAD_PLUGINS`` (comma-separated entry-point names) restricts which
installed plug-ins load; set it to an empty string to load none of them.

A plug-in that cannot be used -- it fails to import, implements a hook
priorkit does not define, or fails while registering -- does not stop the
others: it is listed as *broken* (``PluginInfo.error``) by ``priorkit
plugins``, and asking for a provider it may have added raises a
:class:`~priorkit.errors.PluginError` that names it and its error.

A plug-in folder (or file) that other accounts can write to is refused: its
code is never imported, and the refusal names the ``chmod`` that fixes it
(``priorkit.resources.shared_write_problem`` has the rule).  A folder
plug-in's providers carry the SHA-256 of its source file in their
fingerprint, so editing the code gives new cache keys.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import pluggy

from . import hookspecs
from ..checksums import data_sha256
from ..errors import PluginError, PriorkitError, ProviderParameterError, UnknownProviderError
from .base import PriorProvider
from ..resources import SharedFolderWarning, fix_hint, shared_write_problem

ENTRY_POINT_GROUP = "priorkit"


@dataclasses.dataclass
class PluginInfo:
    name: str
    version: str | None
    source: str
    hooks: list[str]
    providers: list[str] = dataclasses.field(default_factory=list)
    #: the attention modes and the channels it registers
    modes: list[str] = dataclasses.field(default_factory=list)
    channels: list[str] = dataclasses.field(default_factory=list)
    #: why the plug-in is not in use (import error, refused folder, ...); None when it works
    error: str | None = None


@dataclasses.dataclass
class ModeEntry:
    """A class a plug-in registered (an attention mode or a channel)."""

    name: str
    mode: type
    plugin: str


@dataclasses.dataclass
class ProviderEntry:
    name: str
    factory: Callable[..., PriorProvider]
    plugin: str
    description: str = ""


class PriorkitPluginManager:
    """A pluggy manager plus the provider registry its hooks fill.

    :param strict: raise :class:`PluginError` at the first broken plug-in
        instead of listing it as broken and going on.
    """

    def __init__(
        self,
        plugins_dir: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        load_entry_points: bool = True,
        *,
        strict: bool = False,
    ) -> None:
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.strict = strict
        self._info: dict[str, PluginInfo] = {}
        self._code: dict[str, str] = {}  # folder plug-in name -> sha256 of its file
        self._conflicts: dict[str, str] = {}  # provider name -> why it cannot be used
        self.providers: dict[str, ProviderEntry] = {}
        self.modes: dict[str, ModeEntry] = {}
        self.channels: dict[str, ModeEntry] = {}
        if load_entry_points:
            self._load_entry_points()
        for folder in _plugin_dirs(plugins_dir):
            self._load_folder(folder)
        self._collect_providers()
        self._collect_modes()

    # ---- loading ------------------------------------------------------
    def _broken(self, name: str, version: str | None, source: str, error: str) -> None:
        if self.strict:
            raise PluginError(error)
        key = name
        while key in self._info:  # keep both entries of a name clash visible
            key += "'"
        self._info[key] = PluginInfo(name, version, source, [], error=error)

    def _register(self, plugin: Any, name: str, version: str | None, source: str) -> bool:
        if self.pm.has_plugin(name):
            self._broken(name, version, source,
                         f"two plug-ins are named {name!r}: {self._info[name].source} and {source}; rename one")
            return False
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            self._broken(name, version, source, f"plug-in {name!r} ({source}) is invalid: {exc}")
            return False
        callers = self.pm.get_hookcallers(plugin) or []
        unknown = sorted(h.name for h in callers if not h.has_spec())
        if unknown:
            self.pm.unregister(plugin)
            self._broken(name, version, source,
                         f"plug-in {name!r} ({source}) implements {', '.join(unknown)}, which priorkit "
                         f"does not define (a typo?). Known hooks: {', '.join(_hook_names())}")
            return False
        self._info[name] = PluginInfo(name, version, source, sorted(h.name for h in callers))
        return True

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
                source = f"{dist.metadata['Name']} {dist.version} (entry point {ep.value})"
                try:
                    module = ep.load()
                except Exception as exc:  # noqa: BLE001 - kept, with the culprit named
                    self._broken(
                        ep.name, dist.version, source,
                        f"plug-in {ep.name!r} (entry point {ep.value!r} of {dist.metadata['Name']}) "
                        f"failed to import: {type(exc).__name__}: {exc}. Fix or uninstall it, or "
                        "exclude it with PRIORKIT_LOAD_PLUGINS")
                    continue
                self._register(module, ep.name, dist.version, source)

    def _load_folder(self, folder: Path) -> None:
        if not folder.is_dir():
            self._broken(str(folder), None, str(folder),
                         f"plug-in folder {folder} does not exist or is not a folder "
                         "(check --plugins-dir / PRIORKIT_PLUGINS_DIR)")
            return
        problem = shared_write_problem(folder)
        files = [p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")]
        if problem is not None:
            msg = (f"refused: plug-in {problem}, so anyone could plant code that priorkit would run; "
                   f"none of its plug-ins was imported. {fix_hint(folder)}")
            warnings.warn(f"priorkit: {msg}", SharedFolderWarning, stacklevel=3)
            for path in files or [folder]:
                self._broken(path.stem if path is not folder else str(folder), None, str(path), msg)
            return
        for path in files:
            self._load_file(path)

    def _load_file(self, path: Path) -> None:
        problem = shared_write_problem(path)
        if problem is not None:
            msg = f"refused: plug-in {problem}; it was not imported. {fix_hint(path)}"
            warnings.warn(f"priorkit: {msg}", SharedFolderWarning, stacklevel=4)
            self._broken(path.stem, None, str(path), msg)
            return
        source = path.read_bytes()
        mod_name = f"priorkit_local_plugins.{path.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        try:
            sys.modules[mod_name] = module
            exec(compile(source, str(path), "exec"), module.__dict__)  # the bytes we hashed
        except BaseException as exc:  # noqa: BLE001 - a plug-in's sys.exit must not end priorkit
            sys.modules.pop(mod_name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._broken(path.stem, None, str(path),
                         f"plug-in file {path} failed to import: {type(exc).__name__}: {exc}")
            return
        if self._register(module, path.stem, getattr(module, "__version__", None), str(path)):
            self._code[path.stem] = data_sha256(source)

    # ---- providers ----------------------------------------------------
    def _collect_providers(self) -> None:
        for impl in self.pm.hook.register_prior_providers.get_hookimpls():
            plugin_name = impl.plugin_name
            added: dict[str, ProviderEntry] = {}

            def register(name: str, factory: Callable[..., PriorProvider], description: str = "",
                         _plugin: str = plugin_name, _added: dict = added) -> None:
                if not isinstance(name, str) or not name:
                    raise PluginError(f"plug-in {_plugin!r} registered a provider with name {name!r}")
                if not callable(factory):
                    raise PluginError(f"plug-in {_plugin!r} registered {name!r} with a non-callable factory")
                if not description:
                    description = (getattr(factory, "__doc__", "") or "").strip().split("\n")[0]
                _added[name] = ProviderEntry(name, factory, _plugin, description)

            try:
                impl.function(register=register)
            except Exception as exc:  # noqa: BLE001 - the plug-in is listed as broken
                info = self._info[plugin_name]
                msg = (str(exc) if isinstance(exc, PluginError) else
                       f"plug-in {plugin_name!r} failed in register_prior_providers: "
                       f"{type(exc).__name__}: {exc}")
                self.pm.unregister(name=plugin_name)
                del self._info[plugin_name]
                self._broken(plugin_name, info.version, info.source, msg)
                continue
            for name, entry in added.items():
                if name in self.providers or name in self._conflicts:
                    first = self.providers.pop(name).plugin if name in self.providers else None
                    msg = self._conflicts.get(name) or (
                        f"provider {name!r} is registered twice: by plug-in {first!r} and by "
                        f"{plugin_name!r}; uninstall or rename one of them")
                    if self.strict:
                        raise PluginError(msg)
                    self._conflicts[name] = msg
                    continue
                self.providers[name] = entry
                self._info[plugin_name].providers.append(name)

    # ---- attention modes and channels -------------------------------------
    def _collect_modes(self) -> None:
        self.modes = self._collect_classes("register_attention_modes", "attention mode",
                                           "an AttentionMode subclass with a name", "modes")
        self.channels = self._collect_classes("register_channels", "channel",
                                              "a priorkit.channels.Channel subclass with a name", "channels")

    def _collect_classes(self, hook: str, kind: str, wanted: str, field: str) -> dict[str, ModeEntry]:
        """The classes each plug-in's ``hook`` hands over, by name (torch-free here: the
        registry they belong to takes them when one is first looked up)."""
        out: dict[str, ModeEntry] = {}
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            plugin_name = impl.plugin_name
            added: dict[str, ModeEntry] = {}

            def register(cls: type, _plugin: str = plugin_name, _added: dict = added) -> None:
                name = getattr(cls, "name", None)
                if not isinstance(cls, type) or not isinstance(name, str) or not name:
                    raise PluginError(f"plug-in {_plugin!r} registered {cls!r} as "
                                      f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}; pass {wanted}")
                _added[name] = ModeEntry(name, cls, _plugin)

            try:
                impl.function(register=register)
            except Exception as exc:  # noqa: BLE001 - the plug-in is listed as broken
                info = self._info[plugin_name]
                msg = (str(exc) if isinstance(exc, PluginError) else
                       f"plug-in {plugin_name!r} failed in {hook}: {type(exc).__name__}: {exc}")
                self.pm.unregister(name=plugin_name)
                del self._info[plugin_name]
                for name in info.providers:  # its providers go with it
                    self.providers.pop(name, None)
                for entries in (self.modes, out):
                    for name in [n for n, e in entries.items() if e.plugin == plugin_name]:
                        del entries[name]
                self._broken(plugin_name, info.version, info.source, msg)
                continue
            for name, entry in added.items():
                if name in out:
                    msg = (f"{kind} {name!r} is registered twice: by plug-in {out[name].plugin!r} "
                           f"and by {plugin_name!r}; uninstall or rename one of them")
                    if self.strict:
                        raise PluginError(msg)
                    warnings.warn(f"priorkit: {msg}; the first one is used", RuntimeWarning, stacklevel=3)
                    continue
                out[name] = entry
                getattr(self._info[plugin_name], field).append(name)
        return out

    @property
    def attention_modes(self) -> dict[str, type]:
        """Mode name -> the class a plug-in registered."""
        return {name: e.mode for name, e in self.modes.items()}

    @property
    def channel_classes(self) -> dict[str, type]:
        """Channel name -> the class a plug-in registered."""
        return {name: e.mode for name, e in self.channels.items()}

    def broken(self) -> list[PluginInfo]:
        """The plug-ins that could not be used, with their errors."""
        return [p for p in self.plugins() if p.error is not None]

    def get_provider(self, name: str, **params: Any) -> PriorProvider:
        if name in self._conflicts:
            raise PluginError(self._conflicts[name])
        try:
            entry = self.providers[name]
        except KeyError:
            raise self._unknown(name) from None
        try:
            provider = entry.factory(**params)
        except ProviderParameterError:
            raise
        except (ValueError, TypeError) as exc:  # a plug-in's own check of its parameters
            raise ProviderParameterError(_parameter_message(name, entry.plugin, params, exc)) from exc
        if not isinstance(provider, PriorProvider):
            raise PluginError(
                f"plug-in {entry.plugin!r}: factory of provider {name!r} returned "
                f"{type(provider).__name__}, not a priorkit.PriorProvider"
            )
        provider.plugin = entry.plugin
        code = self._code.get(entry.plugin, "")
        if code and provider.code_checksum != code:
            provider.code_checksum = code
            provider._fingerprint = None  # computed again, with the code
        return provider

    def _unknown(self, name: str) -> PriorkitError:
        broken = self.broken()
        same = [b for b in broken if b.name == name]
        if same:
            return PluginError(f"provider {name!r} is not available: its plug-in {same[0].name!r} "
                               f"({same[0].source}) is broken: {same[0].error}")
        near = difflib.get_close_matches(name, list(self.providers), n=3)
        hint = f" Did you mean {', '.join(map(repr, near))}?" if near else ""
        if broken:
            hint += (" Plug-ins that failed to load (one of them may add it): "
                     + "; ".join(f"{b.name!r}: {b.error}" for b in broken))
        return UnknownProviderError(
            f"unknown prior provider {name!r}. Available: {', '.join(sorted(self.providers)) or 'none'}."
            f"{hint} `priorkit plugins` lists them with the plug-ins that add them."
        )

    def install_commands(self, cli: Any) -> None:
        """Let every plug-in add its sub-commands to ``cli``; one that fails is warned about and skipped."""
        for impl in self.pm.hook.register_commands.get_hookimpls():
            try:
                impl.function(cli=cli)
            except Exception as exc:  # noqa: BLE001 - other commands must keep working
                warnings.warn(f"priorkit: plug-in {impl.plugin_name!r} failed to add its commands: "
                              f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)

    def plugins(self) -> list[PluginInfo]:
        return sorted(self._info.values(), key=lambda p: p.name)


def _plugin_dirs(explicit) -> list[Path]:
    """Explicit folders, then $PRIORKIT_PLUGINS_DIR's; each folder once (by its real path)."""
    dirs: list[Path] = []
    if explicit is not None:
        if isinstance(explicit, (str, os.PathLike)):
            explicit = [explicit]
        dirs.extend(Path(p) for p in explicit)
    env = os.environ.get("PRIORKIT_PLUGINS_DIR")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    seen: set[str] = set()
    out = []
    for d in dirs:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def add_plugin_dirs(folders: Iterable[str | os.PathLike]) -> None:
    """Put ``folders`` in front of ``$PRIORKIT_PLUGINS_DIR`` (what ``--plugins-dir`` does), once each.

    Through the environment every later :func:`get_plugin_manager` call of
    this process, and every child process (precompute workers), sees them.
    """
    current = [p for p in os.environ.get("PRIORKIT_PLUGINS_DIR", "").split(os.pathsep) if p]
    known = {os.path.realpath(p) for p in current}
    new = [str(f) for f in folders if os.path.realpath(f) not in known]
    if new:
        os.environ["PRIORKIT_PLUGINS_DIR"] = os.pathsep.join([*new, *current])


def _hook_names() -> list[str]:
    return sorted(n for n in dir(hookspecs) if n.startswith("register_"))


_MANAGER: PriorkitPluginManager | None = None
_MANAGER_KEY: tuple | None = None


def get_plugin_manager(plugins_dir=None, *, reload: bool = False) -> PriorkitPluginManager:
    """The process-wide manager; rebuilt when the environment or folders change."""
    global _MANAGER, _MANAGER_KEY
    key = (
        tuple(os.path.realpath(p) for p in _plugin_dirs(plugins_dir)),
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


def _parameter_message(name: str, plugin: str, params: dict[str, Any], exc: BaseException) -> str:
    """One line naming the provider, the parameter at fault (those the message mentions, else
    all given) and the plug-in's own words about what it accepts."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    named = [p for p in params if p in text] or sorted(params)
    what = f"parameter {', '.join(named)}" if named else "its parameters"
    return (f"provider {name!r} (plug-in {plugin!r}) rejected {what}: {text} "
            "(`priorkit providers` lists each provider's parameters)")


def get_provider(name: str, *, plugins_dir=None, **params: Any) -> PriorProvider:
    """Instantiate provider ``name`` with ``params`` (cheap: data loads on first use)."""
    return get_plugin_manager(plugins_dir).get_provider(name, **params)


def list_plugins(plugins_dir=None) -> list[PluginInfo]:
    return get_plugin_manager(plugins_dir).plugins()

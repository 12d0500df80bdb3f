"""The ``priorkit`` command line: a Click group whose sub-commands live in
``priorkit/commands/`` (one module per topic) and in plug-ins
(``register_commands`` hook).  Heavy imports happen inside the commands, so
``priorkit plugins`` starts fast."""
from __future__ import annotations

import importlib
import os
import sys

import click

from .errors import PriorkitError

#: modules under priorkit.commands that define ``add_commands(cli)``
COMMAND_MODULES = ("core", "cache", "eval_prior", "pipeline")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--plugins-dir",
    type=click.Path(file_okay=False, exists=True),
    multiple=True,
    help="Also load plug-ins from the .py files in this folder (repeatable; "
    "env PRIORKIT_PLUGINS_DIR).",
)
@click.version_option(package_name="priorkit")
@click.pass_context
def cli(ctx: click.Context, plugins_dir: tuple[str, ...]) -> None:
    """Knowledge priors for transformer attention."""
    ctx.ensure_object(dict)
    if plugins_dir:
        # Make the folder visible to every later get_plugin_manager() call.
        existing = os.environ.get("PRIORKIT_PLUGINS_DIR")
        os.environ["PRIORKIT_PLUGINS_DIR"] = os.pathsep.join(
            [*plugins_dir, *([existing] if existing else [])]
        )


def _install_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"priorkit.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"priorkit.commands.{name}":
                continue  # topic not built yet
            raise
        module.add_commands(cli)


def _install_plugin_commands() -> None:
    from .plugins import get_plugin_manager

    get_plugin_manager().pm.hook.register_commands(cli=cli)


def main(argv: list[str] | None = None) -> None:
    try:
        _install_plugin_commands()
        cli.main(args=argv, prog_name="priorkit", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except PriorkitError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)


_install_commands()  # so `from priorkit.cli import cli` has every built-in command

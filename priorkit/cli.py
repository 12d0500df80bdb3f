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
        from .plugins import add_plugin_dirs

        add_plugin_dirs(plugins_dir)  # visible to every later get_plugin_manager() call


def _install_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"priorkit.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"priorkit.commands.{name}":
                continue  # topic not built yet
            raise
        module.add_commands(cli)


def _install_plugin_commands(argv: list[str]) -> None:
    """Before parsing: load plug-ins (those of ``--plugins-dir`` too) so their commands exist."""
    from .plugins import add_plugin_dirs, get_plugin_manager

    add_plugin_dirs(_plugins_dirs_in(argv))
    get_plugin_manager().install_commands(cli)


def _plugins_dirs_in(argv: list[str]) -> list[str]:
    """The ``--plugins-dir`` values given before the sub-command (as Click will parse them)."""
    out, k = [], 0
    while k < len(argv):
        arg = argv[k]
        if arg == "--plugins-dir" and k + 1 < len(argv):
            out.append(argv[k + 1])
            k += 2
            continue
        if arg.startswith("--plugins-dir="):
            out.append(arg.split("=", 1)[1])
        elif not arg.startswith("-"):
            break  # the sub-command: later options are its own
        k += 1
    return [d for d in out if os.path.isdir(d)]  # Click reports a missing folder itself


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _install_plugin_commands(argv)
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

"""The ``priorkit`` command line: a Click group whose sub-commands live in
``priorkit/commands/`` (one module per topic) and in plug-ins
(``register_commands`` hook).  Heavy imports happen inside the commands, so
``priorkit plugins`` starts fast."""
from __future__ import annotations

import importlib
import os
import sys

import click

from .errors import PriorkitError, ProviderParameterError

#: modules under priorkit.commands that define ``add_commands(cli)``
COMMAND_MODULES = ("registry", "show", "cache", "eval_prior", "pipeline", "predict", "recipe", "score")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--plugins-dir",
    type=click.Path(file_okay=False, exists=True),
    multiple=True,
    help="Also load plug-ins from the .py files in this folder (repeatable; "
    "env PRIORKIT_PLUGINS_DIR).",
)
@click.option("-v", "--verbose", count=True, help="More output: -v info logs, -vv debug; tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only results and errors (no progress bars, notices or warnings).")
@click.version_option(package_name="priorkit")
@click.pass_context
def cli(ctx: click.Context, plugins_dir: tuple[str, ...], verbose: int, quiet: bool) -> None:
    """Knowledge priors for transformer attention.

    Exit status: 0 done, 1 failed (the message says why), 2 bad usage, 130 interrupted.
    """
    if verbose and quiet:
        raise click.UsageError("-v/--verbose and -q/--quiet contradict each other; pass one")
    ctx.ensure_object(dict)
    ctx.obj.update(verbose=verbose, quiet=quiet)
    _configure_output(verbose, quiet)
    if plugins_dir:
        from .providers.plugins import add_plugin_dirs

        add_plugin_dirs(plugins_dir)  # visible to every later get_plugin_manager() call


def _install_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"priorkit.commands.{name}").add_commands(cli)


def _install_plugin_commands(argv: list[str]) -> None:
    """Before parsing: load plug-ins (those of ``--plugins-dir`` too) so their commands exist."""
    from .providers.plugins import add_plugin_dirs, get_plugin_manager

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


#: exit statuses (README: "Command line")
EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def _verbosity(argv: list[str]) -> int:
    """-v/--verbose count given before the sub-command (-1 for --quiet), for errors Click never saw."""
    level = 0
    for arg in argv:
        if not arg.startswith("-"):
            break
        if arg in ("-q", "--quiet"):
            return -1
        if arg == "--verbose":
            level += 1
        elif arg.startswith("-v") and set(arg[1:]) == {"v"}:
            level += len(arg) - 1
    return level


#: whether this process's own `-q` set PRIORKIT_QUIET (a user's own setting is left alone)
_SET_QUIET = False


def _configure_output(verbose: int, quiet: bool) -> None:
    """Logging level, warnings as one line each, progress bars off under --quiet."""
    import logging
    import warnings

    level = logging.WARNING if not verbose else (logging.INFO if verbose == 1 else logging.DEBUG)
    logging.basicConfig(level=logging.ERROR if quiet else level, format="%(levelname)s %(name)s: %(message)s")
    from .output import is_terminal

    if quiet or not is_terminal(sys.stderr):  # Hugging Face's own bars: none in a log (priorkit.output)
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    global _SET_QUIET
    if quiet:
        os.environ["PRIORKIT_QUIET"] = "1"  # read by progress bars and notices in sub-processes too
        _SET_QUIET = True
        warnings.simplefilter("ignore")
    elif _SET_QUIET:  # an earlier `-q` call in this process (a notebook, a test) set it; this one is not quiet
        os.environ.pop("PRIORKIT_QUIET", None)
        _SET_QUIET = False
    elif not verbose:
        def show(message, category, filename, lineno, file=None, line=None):
            click.echo(f"warning: {message}", err=True)

        warnings.showwarning = show


def _fail(message: str, verbose: int) -> None:
    """One red line (and the traceback with -v)."""
    if verbose > 0:
        import traceback

        traceback.print_exc()
    click.secho(f"error: {message}", fg="red", err=True)


def _keep_interrupts_from_finalisers() -> None:
    """A Ctrl-C that lands while a finaliser (``__del__``) runs is printed as
    "Exception ignored" and lost: the command would run on to the end.  Deliver
    it again to the main thread instead, where ``main`` turns it into exit 130.
    (From a timer thread: delivered inside the hook, it would be lost again.)"""
    previous = sys.unraisablehook
    if getattr(previous, "priorkit_reinterrupts", False):  # main() called again in one process
        return

    def hook(unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            import _thread
            import threading

            timer = threading.Timer(0.05, _thread.interrupt_main)  # after the hook has returned
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    hook.priorkit_reinterrupts = True
    sys.unraisablehook = hook


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = _verbosity(argv)
    _keep_interrupts_from_finalisers()
    try:
        _install_plugin_commands(argv)
        cli.main(args=argv, prog_name="priorkit", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.Exit as exc:  # --help, --version
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors (2) and click.FileError (1)
        exc.show()
        sys.exit(exc.exit_code)
    except ProviderParameterError as exc:  # a wrong --param / params: entry: a usage error
        _fail(_first_line(exc), verbose)
        sys.exit(EXIT_USAGE)
    except PriorkitError as exc:  # a user's mistake or a failed step, explained by its message
        _fail(str(exc), verbose)
        sys.exit(EXIT_ERROR)
    except OSError as exc:  # a missing path, a full disk, a model that cannot be loaded offline
        _fail(_first_line(exc), verbose)
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - a bug: one line unless --verbose
        hint = "" if verbose > 0 else " (run again with --verbose for the traceback)"
        _fail(f"{type(exc).__name__}: {_first_line(exc)}{hint}", verbose)
        sys.exit(EXIT_ERROR)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0] + (" ..." if len(lines) > 1 else "")


_install_commands()  # so `from priorkit.cli import cli` has every built-in command

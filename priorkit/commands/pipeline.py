"""Pipeline commands: ``priorkit run`` (one run) and ``priorkit sweep`` (fractions x seeds x priors)."""
from __future__ import annotations

import os

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(run_command)
    cli.add_command(sweep_command)


_set_option = click.option(
    "--set", "overrides", multiple=True, metavar="FIELD=VALUE",
    help="Override a field of the pipeline file (YAML value; repeatable), e.g. --set train.fraction=0.1 "
         "--set sweep.seeds=[0,1,2].",
)
_force_option = click.option("--force", is_flag=True, help="Redo every step even if its outputs are valid.")
_config_option = click.option("--print-config", is_flag=True,
                              help="Print the resolved config (defaults and overrides applied) and exit.")


def _quiet_transformers() -> None:
    """Keep the Trainer's progress bar, drop the model-loading chatter."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass


def _load(pipeline: str, overrides: tuple[str, ...]):
    from ..pipeline.config import load_config

    return load_config(pipeline, overrides)


@click.command("run")
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@click.option("--prior", "prior_name", default=None,
              help="Use this setting of sweep.priors (e.g. none) instead of the file's `prior`.")
@click.option("--steps", default="precompute,train,evaluate,report", show_default=True,
              help="Comma-separated subset of the steps to run.")
@_force_option
@_config_option
def run_command(pipeline, overrides, prior_name, steps, force, print_config) -> None:
    """Run one pipeline: precompute the prior cache, train, evaluate, report.

    Each step skips work whose outputs are valid for the current settings, and
    interrupted training resumes from its last checkpoint. Outputs go to
    runs/NAME/PRIOR/fracF/seedS/ (metrics.json, model/, config.yaml).
    """
    cfg = _load(pipeline, overrides)
    if print_config:
        click.echo(cfg.to_yaml())
        return
    _quiet_transformers()
    from ..pipeline.steps import run_pipeline

    result = run_pipeline(cfg, prior_name=prior_name, force=force,
                          steps=tuple(s.strip() for s in steps.split(",") if s.strip()), log=click.echo)
    from ..pipeline import dist

    if not result.metrics or not dist.is_main():  # under torchrun: one table, from the main process
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{cfg.name}: {result.spec.label}")
    scores = result.metrics["metrics"]
    table.add_column("metric")
    for split in scores:
        table.add_column(split, justify="right")
    names = [k for k in next(iter(scores.values())) if k not in ("examples", "seconds")]
    for name in names:
        table.add_row(name, *[f"{scores[s][name]:.4f}" if name in scores[s] else "-" for s in scores])
    Console().print(table)
    click.echo(f"metrics: {result.spec.run_dir / 'metrics.json'}")


@click.command("sweep")
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@_force_option
@_config_option
@click.option("--dry-run", is_flag=True, help="List the runs the sweep would do and exit.")
@click.option("--report-only", is_flag=True, help="Only rebuild the table and plot from finished runs.")
def sweep_command(pipeline, overrides, force, print_config, dry_run, report_only) -> None:
    """Training fractions x seeds x prior settings (incl. no prior) in one command.

    Writes runs/NAME/results.csv, results.md and results.png and prints the
    table: mean and std over seeds, and the difference to the baseline setting.
    Finished runs are skipped, so an interrupted sweep continues where it stopped.
    """
    cfg = _load(pipeline, overrides)
    if print_config:
        click.echo(cfg.to_yaml())
        return
    from ..pipeline import sweep as sw

    if dry_run:
        specs = sw.grid(cfg)
        for spec in specs:
            state = "scored" if (spec.run_dir / "metrics.json").exists() else "todo"
            click.echo(f"{state:7s} {spec.label:40s} {spec.run_dir}")
        click.echo(f"{len(specs)} runs")
        return
    _quiet_transformers()
    if report_only:
        result = sw.write_reports(cfg, sw.collect_rows(cfg, sw.grid(cfg)))
    else:
        result = sw.run_sweep(cfg, force=force, log=click.echo)
    from ..pipeline import dist

    if not dist.is_main():  # under torchrun: one table, from the main process
        return
    sw.print_table(cfg, result.cells)
    for kind, path in result.files.items():
        click.echo(f"{kind}: {path}")

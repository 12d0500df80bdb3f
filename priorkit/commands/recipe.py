"""``priorkit export`` (an arm of a finished sweep as a recipe folder) and ``priorkit recipe``
(train what an arm needs at one fraction and seed, then export it); docs/tagging.md."""
from __future__ import annotations

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(export_command)
    cli.add_command(recipe_command)


def _common(f):
    f = click.option("--force", is_flag=True, help="Replace an existing --out folder.")(f)
    f = click.option("--out", required=True, type=click.Path(file_okay=False),
                     help="The recipe folder to write (e.g. models/bc5cdr-recipe).")(f)
    f = click.option("--seed", type=int, default=None, help="The runs' seed [default: the sweep's only seed].")(f)
    f = click.option("--fraction", type=float, default=None,
                     help="The runs' training fraction [default: the sweep's only fraction].")(f)
    f = click.option("--arm", required=True, help="The post-hoc arm of sweep.posthoc (e.g. st-mix-doc).")(f)
    return f


@click.command("export")
@click.argument("source", metavar="RUNS_DIR_OR_PIPELINE", type=click.Path())
@_common
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a pipeline field (repeatable).")
@click.pass_context
def export_command(ctx, source, arm, fraction, seed, out, force, overrides) -> None:
    """Turn an arm of a finished sweep into a recipe folder: its members' kept models, its steps,
    its dictionary (with the ontology files) and its scores (docs/tagging.md).

    RUNS_DIR_OR_PIPELINE: the sweep's pipeline file, or its runs folder (runs/NAME; then
    --fraction and --seed are needed)."""
    from ..evaluation.export import export_arm, pipeline_config

    cfg, fraction, seed = pipeline_config(source, arm, fraction, seed, overrides)
    quiet = bool((ctx.obj or {}).get("quiet"))
    export_arm(cfg, arm, fraction, seed, out, force=force, log=(lambda _: None) if quiet else click.echo)


@click.command("recipe")
@click.argument("pipeline", type=click.Path(exists=True, dir_okay=False))
@_common
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a pipeline field (repeatable).")
@click.option("--retrain", is_flag=True, help="Train and score the members again even when their runs are valid.")
@click.pass_context
def recipe_command(ctx, pipeline, arm, fraction, seed, out, force, overrides, retrain) -> None:
    """Train the settings an arm of PIPELINE's sweep needs at one fraction and seed (valid runs
    are kept, as a sweep does), score the arm and write its recipe folder."""
    from ..evaluation.export import export_arm, pipeline_config, train_arm

    cfg, fraction, seed = pipeline_config(pipeline, arm, fraction, seed, overrides)
    quiet = bool((ctx.obj or {}).get("quiet"))
    log = (lambda _: None) if quiet else click.echo
    train_arm(cfg, arm, fraction, seed, force=retrain, log=log)
    export_arm(cfg, arm, fraction, seed, out, force=force, log=log)

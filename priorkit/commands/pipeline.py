"""Pipeline commands: ``priorkit run`` (one run), ``priorkit sweep`` (fractions x seeds x priors)
and ``priorkit tune`` (an Optuna study over the pipeline's ``tune.space``)."""
from __future__ import annotations

import os
from pathlib import Path

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(run_command)
    cli.add_command(sweep_command)
    cli.add_command(tune_command)


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
    from ..config import load_config

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
    from ..training.steps import run_pipeline

    result = run_pipeline(cfg, prior_name=prior_name, force=force,
                          steps=tuple(s.strip() for s in steps.split(",") if s.strip()), log=click.echo)
    from ..training import ranks

    if not result.metrics or not ranks.is_main():  # under torchrun: one table, from the main process
        return
    from ..output import print_table

    scores = result.metrics["metrics"]
    names = [k for k in next(iter(scores.values())) if k not in ("examples", "seconds")]
    print_table(f"{cfg.name}: {result.plan.label}", ["metric", *scores],
                [[name, *[f"{scores[s][name]:.4f}" if name in scores[s] else "-" for s in scores]] for name in names],
                justify={s: "right" for s in scores})
    from ..training.prior_usage import describe

    if "prior_usage" in result.metrics:
        click.echo(describe(result.metrics["prior_usage"]))
    else:
        click.echo("prior usage: not measured (this metrics.json predates it; `--steps evaluate --force` "
                   "measures it)")
    click.echo(f"metrics: {result.plan.run_dir / 'metrics.json'}")


@click.command("sweep")
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@_force_option
@_config_option
@click.option("--dry-run", is_flag=True, help="List the runs the sweep would do and exit.")
@click.option("--report-only", is_flag=True, help="Only rebuild the table and plot from finished runs.")
@click.option("--selection-csv", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="Also write the selection file here (e.g. docs/results/NAME-selection.csv); only for a "
                   "sweep reported on eval, never test. Such a sweep always writes selection.csv in its folder.")
@click.option("--final", "final", multiple=True, metavar="SETTING",
              help="The final read of the sealed test split: score the kept models (or post-hoc arms) of these "
                   "settings, chosen on devel, on data.test; trains nothing; appends the read to the ledger "
                   "(repeatable; docs/pipelines.md#the-sealed-test-split).")
@click.option("--decision", default=None, metavar="TEXT",
              help="With --final (required): what this read of test decides, in words; recorded in the ledger.")
@click.option("--ledger", type=click.Path(dir_okay=False), default="docs/results/test-reads.csv", show_default=True,
              help="With --final: the ledger the read is appended to; its results are copied next to it.")
def sweep_command(pipeline, overrides, force, print_config, dry_run, report_only, selection_csv, final, decision,
                  ledger) -> None:
    """Training fractions x seeds x prior settings (incl. no prior) in one command.

    Writes runs/NAME/results.csv, results.md and results.png and prints the
    table: mean and std over seeds, and the difference to the baseline setting.
    Finished runs are skipped, so an interrupted sweep continues where it stopped.
    With sweep.controls it also writes controls.md/.csv/.png and prints whether each
    prior pays off (beats the baseline and its control).

    Choose on devel (evaluate: [eval], sweep.split: eval); read test once with --final SETTING
    --decision "...", which scores the chosen settings' kept models on data.test and records
    the read in the ledger (docs/results/test-reads.csv). A sweep that scores test without
    --final warns: its test scores are in no ledger.
    """
    cfg = _load(pipeline, overrides)
    if print_config:
        click.echo(cfg.to_yaml())
        return
    if final:
        if report_only or selection_csv or force:
            raise click.UsageError("--final is a read of its own: not with --report-only, --selection-csv or --force")
        if not decision:
            raise click.UsageError("--final needs --decision \"...\": what this read of test decides (it goes "
                                   "into the ledger beside the read)")
        if dry_run:
            _final_dry_run(cfg, final, ledger)
        else:
            _final(cfg, pipeline, final, decision, ledger)
        return
    if decision:
        raise click.UsageError("--decision goes with --final SETTING (a final read of test)")
    if selection_csv and cfg.sweep.split == "test":
        raise click.UsageError(f"--selection-csv: {pipeline} reports sweep.split test; a selection is made on "
                               "eval (devel), never on test: add --set sweep.split=eval")
    from ..evaluation import sweep as sw

    if dry_run:
        plans = sw.all_plans(cfg)  # the post-hoc arms (sweep.posthoc) train nothing
        for plan in plans:
            state = "scored" if (plan.run_dir / "metrics.json").exists() else "todo"
            kind = " (post-hoc)" if plan.prior_name in cfg.sweep.posthoc else ""
            click.echo(f"{state:7s} {plan.label + kind:40s} {plan.run_dir}")
        click.echo(f"{len(plans)} runs")
        return
    _quiet_transformers()
    if report_only:
        result = sw.write_reports(cfg, sw.collect_rows(cfg, sw.grid(cfg)))
    else:
        result = sw.run_sweep(cfg, force=force, log=click.echo)
    from ..training import ranks

    if not ranks.is_main():  # under torchrun: one table, from the main process
        return
    if selection_csv:
        import shutil

        Path(selection_csv).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result.files["selection"], selection_csv)
        result.files["selection_copy"] = Path(selection_csv)
    sw.print_table(cfg, result.cells)
    for verdict in result.verdicts:  # sweep.controls: does each prior beat no prior and its control?
        click.echo(verdict.line)
    for line in result.blind:  # knowledge that costs recall where the dictionary is silent
        click.echo(f"warning: {line}")
    for line in result.warnings:  # runs that found (almost) nothing; test scored outside a final read
        click.echo(f"warning: {line}")
    for kind, path in result.files.items():
        click.echo(f"{kind}: {path}")


def _final_dry_run(cfg, settings: tuple[str, ...], ledger: str) -> None:
    """What a final read would score, and whether each kept model is there; reads nothing."""
    from ..evaluation import ledger as lg
    from ..evaluation.final import plan_read
    from ..evaluation.sweep import all_plans

    read = lg.next_read(ledger)
    final, trained = plan_read(cfg, list(dict.fromkeys(settings)), cfg.out_dir / lg.FINAL_DIR / f"read-{read}")
    for plan in all_plans(final):
        kept = cfg.out_dir / plan.prior_name / f"frac{plan.fraction:g}" / f"seed{plan.seed}" / "model"
        state = ("kept" if (kept / "config.json").exists() else "MISSING") if plan.prior_name in trained else "-"
        click.echo(f"{state:7s} {plan.label:40s} {plan.run_dir}")
    click.echo(f"final read {read} would score {', '.join(trained)} (kept models) on test; ledger {ledger}")


def _final(cfg, pipeline: str, settings: tuple[str, ...], decision: str, ledger: str) -> None:
    """``priorkit sweep PIPELINE --final SETTING ... --decision TEXT``: the final read of test."""
    _quiet_transformers()
    from ..evaluation import sweep as sw
    from ..evaluation.final import final_read

    read = final_read(cfg, list(dict.fromkeys(settings)), decision, ledger=ledger, pipeline=pipeline, log=click.echo)
    sw.print_table(read.result.cfg, read.result.cells)
    for line in [*read.result.blind, *read.result.warnings]:
        click.echo(f"warning: {line}")
    for kind, path in {**read.result.files, **{f"copied {k}": v for k, v in read.files.items()}}.items():
        click.echo(f"{kind}: {path}")
    click.echo(f"read {read.read} recorded in {ledger}: {read.line['settings']} for \"{read.line['decision']}\""
               + (f" (earlier reads of the same question: {read.line['earlier']})" if read.line["earlier"] else ""))


@click.command("tune")
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@click.option("--trials", type=click.IntRange(min=1), default=None,
              help="Finished trials the study should hold (default: tune.trials).")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Seconds this process may spend on trials (default: no limit).")
@click.option("--storage", default=None, metavar="URL",
              help="Optuna storage shared by several processes or machines, e.g. "
                   "postgresql://user@host/db (default: sqlite file runs/NAME/tune/study.db).")
@click.option("--study", "study_name", default=None, help="Study name (default: the pipeline's name).")
@click.option("--no-final", is_flag=True, help="Do not re-run the best setting on the reported split.")
@click.option("--report-only", is_flag=True, help="Only rewrite the tables, plots and best.yaml.")
@click.option("--dry-run", is_flag=True, help="Check the tune section and print the space; train nothing.")
def tune_command(pipeline, overrides, trials, timeout, storage, study_name, no_final, report_only, dry_run) -> None:
    """Search the pipeline's `tune.space` with Optuna for a prior setting that pays off.

    Trials train on tune.fraction of data.train minus a validation slice, are scored on
    that slice after every epoch (bad ones are pruned) and compared with a cached no-prior
    baseline of the same seeds. The study is stored in runs/NAME/tune/study.db: run the
    command again to resume it (also after kill -9), or in several shells at once.
    When the budget is reached, the best setting is written to runs/NAME/tune/best.yaml
    and re-run with tune.final.seeds against no prior on the reported split.
    """
    cfg = _load(pipeline, overrides)
    _quiet_transformers()
    if cfg.tune is not None and cfg.tune.arms is not None:  # one study per arm (docs/tune.md#arms)
        from ..tune.arms_final import tune_arms

        try:
            files = tune_arms(cfg, storage=storage, study_name=study_name, trials=trials, timeout=timeout,
                              final=not no_final, report_only=report_only, dry_run=dry_run, log=click.echo)
        except KeyboardInterrupt:
            click.echo("interrupted: finished trials and runs are kept; run the same command to resume", err=True)
            raise SystemExit(130) from None
        for kind, path in files.items():
            click.echo(f"{kind}: {path}")
        return
    from ..tune import prepare, report, study as st

    ctx = prepare(cfg, cfg.raw, log=click.echo)
    from ..training.trackers import study_store

    study_store(cfg, ctx.root)  # with train.report_to: mlflow, every trial logs into one store
    if dry_run:
        click.echo(f"tune {cfg.name}: {len(ctx.dims)} parameter(s); trials on {cfg.tune.fraction:g} of "
                   f"{len(ctx.splits['train'])} training examples, scored on a validation slice of "
                   f"{len(ctx.splits['eval'])}; seeds {cfg.tune.seeds}; pruner {cfg.tune.pruner.type}")
        for dim in ctx.dims:
            when = f"  when {dim.space.when}" if dim.space.when else ""
            what = (f"one of {list(dim.labels)}" if dim.categorical else
                    f"[{dim.space.low:g}, {dim.space.high:g}]" + (" log" if dim.space.log else ""))
            click.echo(f"  {dim.path}: {what}{when}")
        click.echo(f"study storage: {storage or ctx.root / st.STUDY_FILE}")
        return
    try:
        if report_only:
            study = st.open_study(cfg, ctx.root, storage, study_name, create=False)
        else:
            study = st.run_study(ctx, storage=storage, study_name=study_name, trials=trials, timeout=timeout)
    except KeyboardInterrupt:
        click.echo("interrupted: finished trials are kept in the study; run the same command to resume", err=True)
        raise SystemExit(130) from None
    files = {**report.write_trials(study, ctx.root, ctx.metric), **report.write_plots(study, ctx.root)}
    imp = report.importances(study)
    if imp:
        click.echo("parameter importances: " + ", ".join(f"{k} {v:.2f}" for k, v in imp.items()))
    done, target = st.finished_count(study), trials or cfg.tune.trials
    from optuna.trial import TrialState

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        click.echo("no complete trial yet: no best setting to write")
    else:
        best_path, raw = report.write_best(ctx, study)
        files["best"] = best_path
        best = study.best_trial
        click.echo(f"best: trial {best.number}, validation {ctx.metric} {best.value:.4f} "
                   f"({best.user_attrs.get('delta', float('nan')):+.4f} vs no prior): {best.params}")
        if not no_final and done >= target:
            with st.file_lock(ctx.root / "final.lock", wait=False) as mine:
                if not mine:
                    click.echo("another process is running the final comparison; not starting it twice")
                else:
                    try:
                        if report_only:
                            from ..config import config_from_dict

                            final_cfg, cells, ffiles = report.write_final(
                                ctx, config_from_dict(raw, source=str(best_path)), click.echo, train=False)
                        else:
                            final_cfg, cells, ffiles = report.run_final(ctx, raw, click.echo)
                    except KeyboardInterrupt:
                        click.echo("interrupted: finished final runs are kept; run again to resume", err=True)
                        raise SystemExit(130) from None
                    files.update(ffiles)
                    from ..evaluation import sweep as sw

                    sw.print_table(final_cfg, cells)
        elif done < target:
            click.echo(f"{done}/{target} trials finished: the final comparison runs once the budget is reached")
    for kind, path in files.items():
        click.echo(f"{kind}: {path}")

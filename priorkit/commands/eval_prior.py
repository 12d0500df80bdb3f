"""``priorkit eval-prior``: agreement of priors with human word-similarity ratings."""
from __future__ import annotations

import json
import sys

import click


def add_commands(cli: click.Group) -> None:
    cli.add_command(eval_prior_command)


def _neutral(value: str) -> float | str:
    if value == "median":
        return value
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither 'median' nor a number", param_hint="--neutral") from None


@click.command("eval-prior")
@click.option("--provider", "-p", "providers", multiple=True, required=True, metavar="NAME[:key=value,...]",
              help="A provider and its parameters, e.g. wordnet:measure=wup or "
                   "'combine:providers=[\"embedding\",\"conceptnet\"],how=mean' (repeatable).")
@click.option("--benchmark", "-b", "benchmarks", multiple=True, metavar="FILE|NAME",
              help="Word-pair file (word1, word2, score; tab, comma or space separated) or a known "
                   "name: wordsim353, simlex999 (repeatable; default: both).")
@click.option("--neutral", default="median", show_default=True,
              help="Value given to unknown pairs for the 'full' Spearman: 'median' (of the "
                   "provider's own values) or a number.")
@click.option("--json", "json_out", default=None, metavar="FILE",
              help="Also write the results as JSON to FILE ('-' for standard output, no table).")
def eval_prior_command(providers: tuple[str, ...], benchmarks: tuple[str, ...], neutral: str,
                       json_out: str | None) -> None:
    """Spearman, Pearson, coverage and pairs/s of priors on word-similarity benchmarks.

    Spearman and Pearson are over the pairs a provider knows (coverage is
    their share); 'full' is Spearman over all pairs with unknown ones set to
    the neutral value.
    """
    from ..providers.prior_eval import evaluate, provider_from_arg, read_word_pairs, results_table

    fill = _neutral(neutral)
    sets = [read_word_pairs(b) for b in (benchmarks or ("wordsim353", "simlex999"))]
    labels = list(dict.fromkeys(providers))
    built = {arg: provider_from_arg(arg) for arg in labels}   # fail fast on a bad --provider
    quiet = json_out == "-"
    results = []
    from rich.console import Console

    from ..output import print_table, progress

    silent = quiet or bool((click.get_current_context().obj or {}).get("quiet"))
    jobs = [(arg, provider, pairs) for arg, provider in built.items() for pairs in sets]
    bar = progress(jobs, desc="eval-prior", unit="benchmark", enabled=not silent)
    for arg, provider, pairs in bar:
        bar.set_postfix_str(f"{arg} on {pairs.name} ({len(pairs)} pairs)")
        results.append(evaluate(provider, pairs, label=arg, neutral=fill))
    if json_out:
        payload = json.dumps(
            {"benchmarks": {p.name: str(p.path) for p in sets}, "neutral": neutral,
             "results": [r.as_dict() for r in results]},
            indent=2,
        )
        if json_out == "-":
            click.echo(payload)
            return
        with open(json_out, "w", encoding="utf-8") as fh:
            fh.write(payload + "\n")
    columns, rows = results_table(results)
    print_table("prior vs human similarity", columns, rows, justify={c: "right" for c in columns[2:]},
                console=Console(file=sys.stdout, width=max(100, min(200, 60 + max(len(s) for s in labels)))))
    if json_out:
        click.echo(f"wrote {json_out}")

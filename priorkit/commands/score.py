"""``priorkit score GOLD PREDICTED``: entity precision, recall and F1 of tagged documents against
gold annotations, by character offsets (docs/tagging.md, "Scoring tagged documents")."""
from __future__ import annotations

import json

import click

from ..documents.readers import FORMATS


def add_commands(cli: click.Group) -> None:
    cli.add_command(score_command)


@click.command("score")
@click.argument("gold", type=click.Path(exists=True))
@click.argument("predicted", type=click.Path(exists=True))
@click.option("--gold-format", type=click.Choice(FORMATS), default=None,
              help="GOLD's format [default: from its extension].")
@click.option("--predicted-format", type=click.Choice(FORMATS), default=None,
              help="PREDICTED's format [default: from its extension].")
@click.option("--json", "as_json", is_flag=True, help="Print the scores as one JSON object.")
def score_command(gold, predicted, gold_format, predicted_format, as_json) -> None:
    """Score PREDICTED (a tagger's JSONL, PubTator or BioC output) against GOLD (the same
    documents with their gold entities): an entity counts when its document, start, end and
    type all equal a gold entity's.  The texts of documents with one id must be equal."""
    from ..evaluation.offsets import score_files

    scores = score_files(gold, predicted, gold_format, predicted_format)
    if as_json:
        click.echo(json.dumps(scores.as_dict(), indent=2))
        return
    rows = [("all", scores.overall), *sorted(scores.per_type.items())]
    click.echo(f"{'type':<16} {'precision':>9} {'recall':>7} {'f1':>7} {'gold':>6} {'predicted':>9}")
    for name, c in rows:
        click.echo(f"{name:<16} {c.precision:9.4f} {c.recall:7.4f} {c.f1:7.4f} {c.tp + c.fn:6d} {c.tp + c.fp:9d}")

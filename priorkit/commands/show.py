"""``priorkit show``: the token-aligned prior of a sentence or a pair, or, with a run or model
folder first, what a trained model did with its prior (:mod:`.show_trained`)."""
from __future__ import annotations

import json

import click

from .options import parse_params, provider_option, tokenizer_source


def add_commands(cli: click.Group) -> None:
    cli.add_command(show_command)


#: at most this many tokens get the full matrix by default (wider does not fit a terminal)
SHOW_MATRIX_TOKENS = 20


@click.command("show")
@click.argument("inputs", nargs=-1, required=True, metavar="[RUN_OR_MODEL] TEXT_A [TEXT_B]")
@click.option("--tokenizer", default=None, help="Tokenizer path or Hub id (default: the embedded MiniLM).")
@click.option("--provider", default="wordnet", help="Provider name.")
@click.option("--param", "params", multiple=True, help="Provider parameter key=value (repeatable).")
@click.option("--preset", type=click.Choice(["paper", "none"]), default=None,
              help="paper: the paper's preset (default for a pair with the wordnet provider).")
@click.option("--layout", type=click.Choice(["paper", "full"]), default=None)
@click.option("--cache", type=click.Path(dir_okay=False), default=None, help="Read word pairs from this cache.")
@click.option("--max-length", type=click.IntRange(min=4), default=None,
              help="Tokens to show [default: the tokenizer's model_max_length]; longer input is truncated.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Word pairs listed for input longer than 20 tokens (highest values first).")
@click.option("--all", "show_all", is_flag=True, help="Print the full token x token matrix, however long.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="Write tokens and matrix as JSON to this file ('-': standard output, no table).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write a heat-map PNG here.")
@click.option("--layers", default=None, metavar="0,1|all",
              help="Trained model: layers to show [default: those with the prior].")
@click.option("--heads", default=None, metavar="0,3|all", help="Trained model: heads to show [default: all].")
@click.pass_context
def show_command(ctx, inputs, tokenizer, provider, params, preset, layout, cache, max_length, top, show_all,
                 json_out, out, layers, heads) -> None:
    """Print (and plot) the token-aligned prior of a sentence or a pair.

    Up to 20 tokens the table is the whole matrix; longer input lists the
    --top highest word pairs (the full matrix with --all or --json).

    With a trained run or model folder first (priorkit show RUN_OR_MODEL TEXT_A
    [TEXT_B]): the attention of --layers/--heads with the prior as trained and
    switched off, a per-head summary, --out a PNG grid, --json the matrices
    (docs/show.md).  A recipe folder alone (priorkit show FOLDER): its card, the
    chain of steps and the scores with their files (docs/tagging.md).
    """
    from .show_trained import looks_like_folder, show_trained

    if len(inputs) > 3:
        raise click.UsageError(f"got {len(inputs)} arguments; give [RUN_OR_MODEL] TEXT_A [TEXT_B]")
    trained = len(inputs) == 3 or (len(inputs) == 2 and looks_like_folder(inputs[0]))
    prior_only = ("tokenizer", "provider", "params", "preset", "layout", "cache", "top", "show_all")
    given = [name for name in (prior_only if trained else ("layers", "heads"))
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if given:
        opts = ", ".join("--" + ("all" if g == "show_all" else "param" if g == "params" else g) for g in given)
        raise click.UsageError(f"{opts} only appl{'y' if len(given) > 1 else 'ies'} to "
                               + ("a prior without a model (the trained model's prior comes from its folder)"
                                  if trained else "a trained run or model folder given first"))
    if trained:
        show_trained(inputs[0], inputs[1], inputs[2] if len(inputs) == 3 else None, layers=layers, heads=heads,
                     max_length=max_length, json_out=json_out, out=out)
        return
    if len(inputs) == 1 and looks_like_folder(inputs[0]):
        from ..inference.recipe_folder import is_recipe

        if is_recipe(inputs[0]):  # a recipe: its card (the chain, members, dictionary, scores and their files)
            from ..inference.card import recipe_card
            from ..inference.recipe import read_recipe

            click.echo(recipe_card(read_recipe(inputs[0])))
            return
        raise click.UsageError(f"{inputs[0]} looks like a run or model folder; give the text to show after it")
    text_a, text_b = inputs[0], (inputs[1] if len(inputs) > 1 else None)
    from ..align import PriorBuilder, load_tokenizer
    from ..providers.spec import PriorSpec

    tok = load_tokenizer(tokenizer_source(tokenizer))
    limit = max_length or _model_max_length(tok)
    parsed = parse_params(params)
    if preset is None:
        preset = "paper" if (text_b is not None and provider == "wordnet" and not params and layout is None) else "none"
    if preset == "paper" and text_b is None:
        raise click.UsageError("the paper preset needs two sentences")
    spec = PriorSpec(provider=provider, params=parsed, preset=None if preset == "none" else preset,
                     layout=layout or "full")
    prov = provider_option(spec.build_provider)
    builder = PriorBuilder.from_spec(spec, tok, provider=prov, cache=cache, truncation=True, max_length=limit)
    full = len(tok(text_a, text_b, truncation=False, verbose=False)["input_ids"])
    if full > limit:
        why = "--max-length" if max_length else "the tokenizer's model_max_length; --max-length to change"
        click.echo(f"note: the input has {full} tokens; showing the first {limit} ({why})", err=True)
    P = builder.build(text_a, text_b)
    known = known_cells(P, spec, tok, prov, cache, limit, text_a, text_b)
    encoding = builder.encode(text_a, text_b)
    tokens = encoding.tokens()
    title = f"prior ({builder.layout} layout, {prov.name})"
    if json_out:
        doc = {"tokens": tokens, "matrix": [[round(v, 6) for v in row] for row in P.tolist()],
               "known": known.tolist(), "neutral": builder.neutral,
               "layout": builder.layout, "provider": prov.describe(), "tokens_in_input": full,
               "truncated": full > limit}
        text = json.dumps(doc)
        if json_out == "-":
            click.echo(text)
        else:
            from pathlib import Path

            Path(json_out).write_text(text + "\n")
            click.echo(f"wrote {json_out}", err=True)
    if json_out != "-":
        _print_prior(P.numpy(), known, tokens, builder, encoding, text_a, text_b, title, top, show_all)
    if out:
        from ..viz import plot_prior

        plot_prior(P.numpy(), tokens, out, title=f"{prov.name} prior, {builder.layout} layout")
        click.echo(f"wrote {out}")


def _model_max_length(tokenizer) -> int:
    n = getattr(tokenizer, "model_max_length", None)
    return int(n) if isinstance(n, int) and 0 < n < 100_000 else 512


#: how a cell without knowledge reads in the table (the model gets the builder's neutral there)
NO_KNOWLEDGE = "-"


def known_cells(P, spec, tokenizer, provider, cache, limit, text_a, text_b):
    """(L, L) bool: the cells whose value the provider (or a rule: stop words, the layout's
    constant blocks) gave; False where the builder filled in its ``neutral`` because there is no
    knowledge (the provider's NaN: it knows neither word, or not the pair; special tokens). Found
    by building again with another neutral: only the filled cells change."""
    import dataclasses

    from ..align import PriorBuilder

    other = 0.25 if spec.neutral != 0.25 else 0.75
    alt = PriorBuilder.from_spec(dataclasses.replace(spec, neutral=other), tokenizer, provider=provider, cache=cache,
                                 truncation=True, max_length=limit)
    return (P == alt.build(text_a, text_b)).numpy()


def _print_prior(P, known, tokens, builder, encoding, text_a, text_b, title, top, show_all) -> None:
    from rich.console import Console

    from ..output import print_table

    L = len(tokens)
    unknown = (f"{NO_KNOWLEDGE}: no knowledge (the provider knows neither word, or not the pair, or a special "
               f"token; the model gets the neutral {builder.neutral:g} there)")
    if show_all or L <= SHOW_MATRIX_TOKENS:
        rows = [[t, *[f"{v:.2f}" if k else NO_KNOWLEDGE for v, k in zip(P[i].tolist(), known[i].tolist())]]
                for i, t in enumerate(tokens)]
        print_table(title, ["", *tokens], rows, justify={t: "right" for t in tokens},
                    console=Console(width=max(120, 8 * (L + 2))))
        if not known.all():
            click.echo(unknown, err=True)
        return
    cells = top_cells(P, builder.align(encoding, text_a, text_b), pair=text_b is not None)
    blind = sum(1 for i, j, _ in cells if not known[i, j])
    cells = [c for c in cells if known[c[0], c[1]]]  # a filled-in neutral is no value to rank
    print_table(title, ["token i", "token j", "i", "j", "value"],
                [[tokens[i], tokens[j], str(i), str(j), f"{v:.3f}"] for i, j, v in cells[:top]],
                justify={"i": "right", "j": "right", "value": "right"})
    click.echo(f"the {min(top, len(cells))} highest of {len(cells):,} word pairs with knowledge ({L} tokens; "
               f"{blind:,} more without: {unknown}); --all prints the whole {L} x {L} matrix, --json FILE writes it",
               err=True)


def top_cells(P, alignment, pair: bool) -> list[tuple[int, int, float]]:
    """(i, j, value) of word pairs, highest first: each word by its first token, special
    tokens left out; for a pair only cells across the two sentences (within one sentence
    the paper layout is constant)."""
    import numpy as np

    word = alignment.token_word
    first = {}
    for t in np.flatnonzero(~alignment.special & (word >= 0)).tolist():
        first.setdefault(int(word[t]), t)
    idx = np.array(sorted(first.values()), dtype=np.int64)
    if len(idx) < 2:
        return []
    sub = P[np.ix_(idx, idx)]
    side = alignment.token_side[idx]
    mask = (side[:, None] != side[None, :]) if pair else ~np.eye(len(idx), dtype=bool)
    mask &= np.triu(np.ones_like(mask), 1).astype(bool)
    r, c = np.nonzero(mask)
    vals = sub[r, c]
    order = np.lexsort((c, r, -vals))  # highest first, then reading order
    return [(int(idx[r[k]]), int(idx[c[k]]), float(vals[k])) for k in order.tolist()]

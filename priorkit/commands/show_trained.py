"""``priorkit show RUN_OR_MODEL TEXT_A [TEXT_B]``: what a trained model did with its prior.

For the chosen layers and heads: the prior, the attention with the prior as trained,
the same model's attention with the prior switched off, their difference (one PNG
grid, ``--out``), the matrices as JSON (``--json``) and a table of the per-head
summary (favoured mass with and without the prior, the learned gate or strength).
The measure is defined in :mod:`priorkit.inference.attention_view` and docs/show.md.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import click

from ..errors import PriorkitError


def looks_like_folder(value: str) -> bool:
    """The first argument names a run or model folder: it is one, or it is written as a path."""
    if os.path.isdir(value):
        return True
    return (os.sep in value or value.startswith("~")) and not any(c.isspace() for c in value)


def parse_indices(value: str | None, what: str, count: int) -> list[int] | None:
    """``"0,2"`` -> [0, 2]; ``"all"`` -> every index below ``count``; None -> None (the default)."""
    if value is None:
        return None
    if value.strip() == "all":
        return list(range(count))
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: give {what} numbers separated by commas, or all",
                                 param_hint=f"--{what}s") from None


def _folder_contents(path: Path) -> str:
    if not path.is_dir():
        return ""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f" (it holds: {shown or 'nothing'})"


def load(folder: str, max_length: int | None) -> Any:
    """The model of a run or model folder; a folder that is neither says what it holds."""
    from ..inference import load_model

    try:
        return load_model(folder, max_length=max_length)
    except PriorkitError as exc:
        path = Path(folder).expanduser()
        if "is missing" in str(exc) and path.is_dir():
            raise PriorkitError(f"{exc}{_folder_contents(path)}") from None
        raise


def show_trained(folder: str, text_a: str, text_b: str | None, *, layers: str | None, heads: str | None,
                 max_length: int | None, json_out: str | None, out: str | None) -> None:
    from ..inference.attention_view import compare

    predictor = load(folder, max_length)
    n_layers = len(_modules(predictor.model))
    n_heads = int(predictor.model.config.num_attention_heads)
    layer_list = parse_indices(layers, "layer", n_layers)
    head_list = parse_indices(heads, "head", n_heads)
    if out:
        from ..viz import MAX_GRID_ROWS

        rows = len(layer_list or (getattr(predictor.model.config, "priorkit", None) or {}).get("layers") or [0]) \
            * len(head_list or range(n_heads))
        if rows > MAX_GRID_ROWS:
            raise click.UsageError(f"--out draws one row per layer and head: {rows} rows is more than "
                                   f"{MAX_GRID_ROWS}; choose fewer with --layers / --heads (--json takes all)")
    result = compare(predictor, text_a, text_b, layers=layer_list, heads=head_list)
    on = result.with_prior
    if on.truncated:
        why = "--max-length" if max_length else "the model's max length; --max-length to change"
        click.echo(f"note: the input has {on.tokens_in_input} tokens; showing the first {predictor.max_length} "
                   f"({why})", err=True)
    if not predictor.channels:
        click.echo(f"note: {predictor.folder} was trained without knowledge (no channel): both columns show "
                   "the same attention", err=True)
    elif on.prior is None:
        click.echo(f"note: {predictor.folder} has no attention prior, so no cells are favoured; the columns "
                   f"compare its {' and '.join(result.channels)} on and off (moved: the attention they moved)",
                   err=True)
    if json_out:
        text = json.dumps(to_json(result, predictor))
        if json_out == "-":
            click.echo(text)
        else:
            Path(json_out).write_text(text + "\n")
            click.echo(f"wrote {json_out}", err=True)
    if json_out != "-":
        print_summary(result, predictor)
        print_token_views(result)
    if out:
        from ..viz import plot_attention_grid

        run = predictor.folder.parent if predictor.folder.name == "model" else predictor.folder
        what = f"mode {result.mode}" if result.mode else " + ".join(result.channels) or "no knowledge"
        title = f"{'/'.join(run.parts[-3:])}: {what}"  # PRIOR/fracF/seedS
        plot_attention_grid(result, out, title=title)
        click.echo(f"wrote {out}")


def _modules(model: Any) -> list:
    from ..attention.architectures import attention_modules

    return attention_modules(model)


def _round(matrix: Any) -> list:
    return [[round(float(v), 6) for v in row] for row in matrix.tolist()]


def to_json(result: Any, predictor: Any) -> dict[str, Any]:
    """Tokens, the prior and, per (layer, head), the two matrices and the summary."""
    on, off = result.with_prior, result.without_prior
    heads = []
    for s in result.summary:
        k, h = on.layers.index(s.layer), on.heads.index(s.head)
        heads.append({**{key: (None if isinstance(v, float) and math.isnan(v) else v)
                         for key, v in s.to_dict().items()},
                      "with_prior": _round(on.weights[k, h]), "without_prior": _round(off.weights[k, h])})
    off = {name: [[_round(m) for m in layer] for layer in maps.weights]
           for name, maps in result.off.items() if len(result.off) > 1}
    views = {name: {"labels": v.labels, "label_name": v.label_name, "values": [round(x, 6) for x in v.values],
                    "value_name": v.value_name} for name, v in result.token_views.items()}
    return {"folder": str(predictor.folder), "tokens": on.tokens, "mode": result.mode,
            "channels": list(result.channels), "prior_layers": list(result.prior_layers), "layers": list(on.layers),
            "heads": list(on.heads), "prior": None if on.prior is None else _round(on.prior),
            "tokens_in_input": on.tokens_in_input, "truncated": on.truncated, "attention": heads,
            "channel_off": off, "token_views": views}


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def print_summary(result: Any, predictor: Any) -> None:
    from ..output import print_table

    columns = ["layer", "head", "with prior", "without", "shift", "uniform", "learned", "moved"]
    rows = []
    for s in result.summary:
        learned = "-" if s.learned is None else f"{s.learned_name} {s.learned:.3f}"
        rows.append([str(s.layer), str(s.head) + ("" if s.layer in result.prior_layers else " (no prior)"),
                     _fmt(s.mass_with), _fmt(s.mass_without), _fmt(s.shift, True), _fmt(s.favoured_share),
                     learned, _fmt(s.moved)])
    print_table(f"attention on the cells the prior favours ({predictor.folder})", columns, rows,
                justify={c: "right" for c in columns})
    click.echo("favoured cells: keys whose prior value is above its row's mean; mass: the attention a head "
               "puts on them per query token (uniform: what equal attention would put there); moved: the "
               f"attention per query token that {' and '.join(result.channels) or 'knowledge'} moved "
               "(every channel on against every one off)", err=True)


def print_token_views(result: Any) -> None:
    """One table per channel that shows what it put in at each token (the token features)."""
    from ..output import print_table

    tokens = result.with_prior.tokens
    for name, view in result.token_views.items():
        print_table(f"the {name} channel per token", ["token", view.label_name, view.value_name],
                    [[token, label or "-", f"{value:.4f}"] for token, label, value in zip(tokens, view.labels,
                                                                                         view.values)],
                    justify={view.value_name: "right"})

"""``priorkit predict``: a trained run's predictions for a dataset file; NER models and recipes tag
documents as a stream (:mod:`.predict_documents`, docs/tagging.md "Tagging a corpus")."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .predict_documents import document_options, predict_documents, tags_documents


def add_commands(cli: click.Group) -> None:
    cli.add_command(predict_command)


@click.command("predict")
@click.argument("model_dir", metavar="RUN_OR_MODEL_DIR", type=click.Path())
@click.argument("input_files", metavar="INPUT...", type=click.Path(), nargs=-1, required=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write here (default: standard output). The format follows the extension unless --format.")
@click.option("--format", "out_format", type=click.Choice(["jsonl", "csv", "tsv", "pubtator", "bioc", "records"]),
              default=None, help="Output format [default: from --out's extension, else jsonl]. NER: jsonl, pubtator "
                                 "or bioc documents, or records (one line per CoNLL sentence: words, tags, "
                                 "entities; the default for --input-format conll).")
@click.option("--force", is_flag=True, help="Overwrite an existing --out file.")
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--max-length", type=int, default=None,
              help="Tokens per input [default: the training max length]; longer inputs are truncated with a warning.")
@click.option("--input-format", "in_format", type=click.Choice(["stsb", "csv", "tsv", "jsonl", "conll", "txt", "lines",
                                                               "pubtator", "bioc"]),
              default=None, help="Input format (default: detected from the extension). NER documents: txt, lines, "
                                 "jsonl, pubtator, bioc, conll (docs/tagging.md).")
@click.option("--text-a", default=None, help="Input column (name or 0-based index) of the first text.")
@click.option("--text-b", default=None, help="Input column of the second text (sentence-pair models).")
@click.option("--no-header", is_flag=True, help="CSV/TSV input without a header row (columns are indices).")
@click.option("--limit", type=int, default=None, help="Only the first N inputs.")
@click.option("--no-cache", is_flag=True, help="Compute every prior value instead of reading the run's cache.")
@click.option("--device", default=None, help="torch device (default: cpu, or where the model loads).")
@click.option("--with", "others", multiple=True, type=click.Path(),
              help="NER: another run or model folder to mix in word by word (repeatable; docs/inference.md#ensembles).")
@click.option("--weight", type=click.FloatRange(0, 1), default=None,
              help="With --with: the first model's share of the mix; the others share the rest equally "
                   "[default: equal shares].")
@click.option("--decode", type=click.Choice(["argmax", "viterbi"]), default=None,
              help="NER: each word's most likely tag (argmax) or the most likely valid BIO sequence "
                   "(viterbi). Default: the run's task.decode.")
@click.option("--o-bias", type=float, default=None,
              help="NER: added to each word's log-probability of O before decoding (above 0: fewer entities). "
                   "Default: the run's task.o_bias.")
@click.option("--dictionary", default=None,
              help="NER: an ontology (a source such as hpo+mesh, or a file) for --fragments and --document.")
@click.option("--dictionary-types", default=None,
              help='NER: match group -> entity type as JSON, e.g. \'{"hpo": "Disease"}\' [default: the '
                   "model's entity types, when they are groups of the dictionary].")
@click.option("--fragments", is_flag=True,
              help="NER: the dictionary's entity replaces two or more pieces the model split it into.")
@click.option("--document", type=click.IntRange(min=-1), default=None,
              help="NER: read INPUT's sentences in order as one document; the dictionary's entities whose "
                   "abbreviations carry N sentences (-1: to the end) are added where the model found none.")
@click.option("--propagate", hidden=True, default=None, expose_value=False, callback=lambda c, p, v: _removed(p, v))
@click.option("--share", hidden=True, default=None, expose_value=False, callback=lambda c, p, v: _removed(p, v))
@click.option("--progress/--no-progress", default=True, help="A progress bar on standard error.")
@document_options
@click.pass_context
def predict_command(ctx, model_dir, input_files, out, out_format, force, batch_size, max_length, in_format,
                    text_a, text_b, no_header, limit, no_cache, device, others, weight, decode, o_bias,
                    dictionary, dictionary_types, fragments, document, progress, restart, chunk_size, engine,
                    scheduler, workers, skip_bad) -> None:
    """Predict INPUT with a trained run (its prior built as in training).

    RUN_OR_MODEL_DIR: a run folder (runs/NAME/PRIOR/fracF/seedS), its model/
    folder, or a pipeline's output folder (runs/NAME) when it holds one run.

    Sentence-pair regression gives `score` on the labels' own scale,
    classification `label` and `probs`, NER `tags` per word and `entities`
    (spans). One record per input, in input order.

    An NER model or a recipe tags documents (INPUT...: txt, lines, jsonl, pubtator, bioc; CoNLL with
    --format jsonl/pubtator/bioc) as a stream, written in committed chunks: the same command run
    again after a crash goes on where it stopped (--restart: from the start).
    """
    from ..inference import io as pio

    doc_options = [o for o, v in (("--restart", restart), ("--engine dask", engine != "local"),
                                  ("--skip-bad", skip_bad), ("--chunk-size", _given(ctx, "chunk_size")),
                                  ("--scheduler", scheduler is not None), ("--workers", workers is not None),
                                  ("several INPUTs", len(input_files) > 1)) if v]
    records_only = [o for o, v in (("--with", bool(others)), ("--dictionary", dictionary is not None),
                                   ("--fragments", fragments), ("--document", document is not None),
                                   ("--text-a", text_a is not None), ("--text-b", text_b is not None),
                                   ("--no-header", no_header), ("--limit", limit is not None)) if v]
    if tags_documents(model_dir) and _as_documents(input_files, in_format, out_format, doc_options, records_only):
        return predict_documents(ctx, model_dir, input_files, out=out, out_format=out_format, in_format=in_format,
                                 restart=restart or force, chunk_size=chunk_size, batch_size=batch_size,
                                 engine=engine, scheduler=scheduler, workers=workers, skip_bad=skip_bad,
                                 device=device, max_length=max_length, no_cache=no_cache, decode=decode,
                                 o_bias=o_bias, progress=progress)
    if doc_options:
        raise click.UsageError(f"{', '.join(doc_options)}: for tagging documents with an NER model "
                               "(--format jsonl, pubtator or bioc); these predictions are records")
    input_file = input_files[0]
    out_format = None if out_format == "records" else out_format
    if out_format in ("pubtator", "bioc"):
        raise click.UsageError(f"--format {out_format} is for documents tagged by an NER model or a recipe")

    fmt = pio.output_format(out, out_format)
    if out is not None and Path(out).exists() and not force:
        raise click.UsageError(f"{out} exists; pass --force to overwrite it (or another --out)")
    if not Path(input_file).exists():
        raise click.BadParameter(f"{input_file} does not exist", param_hint="INPUT")
    from ..inference import load_model

    quiet = bool((ctx.obj or {}).get("quiet"))
    if weight is not None and not others:
        raise click.UsageError("--weight is the first model's share of an ensemble; name the others with --with")
    predictor = load_model(model_dir, device=device, use_cache=not no_cache, max_length=max_length, decode=decode,
                           o_bias=o_bias)
    if getattr(predictor, "steps", None) is not None and hasattr(predictor, "members"):  # a recipe folder
        given = [o for o, v in (("--with", bool(others)), ("--dictionary", dictionary is not None),
                                ("--fragments", fragments), ("--document", document is not None)) if v]
        if given:
            raise click.UsageError(f"{model_dir} is a recipe: its steps ({predictor.describe()}) are in the folder; "
                                   f"leave out {', '.join(given)}")
    inputs = pio.read_inputs(input_file, predictor.inputs, predictor.task_type, fmt=in_format,
                             text_a=text_a, text_b=text_b, header=not no_header, limit=limit)
    if not inputs:
        raise click.UsageError(f"{input_file} holds no inputs")
    if others:
        from ..inference import Ensemble

        rest = [load_model(o, device=device, use_cache=not no_cache, max_length=max_length) for o in others]
        weights = None if weight is None else [weight] + [(1 - weight) / len(rest)] * len(rest)
        records = Ensemble([predictor, *rest], weights, predictor.decode, predictor.o_bias).predict(
            inputs, batch_size=batch_size)
    else:
        records = predictor.predict(inputs, batch_size=batch_size, progress=progress and not quiet)
    if fragments or document is not None:
        records = _with_dictionary(records, inputs, predictor, dictionary, dictionary_types, fragments, document)
    elif dictionary is not None or dictionary_types is not None:
        raise click.UsageError("--dictionary is for --fragments or --document; add one of them")
    text = pio.render(records, inputs, fmt)
    if out is None:
        sys.stdout.write(text)
        return
    pio.write_atomic(out, text)
    if not quiet:
        click.echo(f"wrote {len(records)} predictions to {out}", err=True)


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)


def _as_documents(inputs: tuple[str, ...], in_format: str | None, out_format: str | None, doc_options: list[str],
                  records_only: list[str]) -> bool:
    """An NER model's output: tagged documents, except records (one line per sentence: words, tags,
    entities) for --format records, csv or tsv, for the options only records have (an ensemble,
    the dictionary's steps, columns, a limit), and by default for CoNLL input (--input-format conll,
    or a .conll / .tsv / .iob file)."""
    if out_format in ("records", "csv", "tsv") or in_format in ("stsb", "csv", "tsv"):
        return False
    if records_only:
        if doc_options or out_format in ("pubtator", "bioc"):
            raise click.UsageError(f"{', '.join(records_only)} give per-sentence records, "
                                   f"{', '.join(doc_options) or '--format ' + str(out_format)} tagged documents: "
                                   "drop one or the other")
        return False
    if in_format is None and len(inputs) == 1:
        from ..documents.readers import input_format
        from ..errors import DataFormatError

        try:
            in_format = input_format(inputs[0])
        except DataFormatError:
            return True  # the document reader names the problem before the model loads
    if in_format == "conll":
        return out_format is not None or bool(doc_options)
    return True


def _removed(param: click.Parameter, value: object) -> None:
    """A removed option given: one line saying so, instead of "no such option"."""
    if value is not None:
        raise click.UsageError(f"{param.opts[0]} was removed: carrying the model's finds across the document "
                               "(with --share, its vote) was tried in one experiment and not adopted "
                               "(docs/benchmarks.md); leave it out")


def _with_dictionary(records: list[dict], inputs: list[dict], predictor, dictionary: str | None,
                     types: str | None, fragments: bool, document: int | None) -> list[dict]:
    """NER records after the post-hoc steps of a sweep's arm (docs/pipelines.md#post-hoc-arms-does-the-
    knowledge-need-a-learned-channel): the dictionary joining split entities, then its document pass."""
    import json

    from ..decode.dictionary import Dictionary
    from ..decode.steps import DocumentPass, Fragments, after_decode
    from ..inference import entities
    from ..errors import PriorkitError
    from ..supervision.type_map import entity_types_of, resolve_types
    import priorkit

    if predictor.task_type != "token-classification":
        raise click.UsageError("--fragments and --document are for NER models (token classification)")
    if dictionary is None:
        raise click.UsageError("--fragments and --document need --dictionary (an ontology source such as "
                               "hpo+mesh, or an ontology file)")
    try:
        type_map = None if types is None else json.loads(types)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON ({exc.msg}): {types}", param_hint="--dictionary-types") from None
    if type_map is not None and (not isinstance(type_map, dict) or not type_map):
        raise click.BadParameter(f"a non-empty JSON object of match group -> entity type, got {types}",
                                 param_hint="--dictionary-types")
    params = {"path": dictionary} if Path(dictionary).exists() else {"source": dictionary}
    try:
        type_map = resolve_types(type_map, lambda: priorkit.get_provider("ontology", **params).match_groups(),
                                 entity_types_of(predictor.labels or ()), field="--dictionary-types",
                                 who=f"--dictionary {dictionary}")
    except PriorkitError as exc:
        raise click.UsageError(str(exc)) from None
    d = Dictionary(priorkit.get_provider("ontology", **params), type_map)
    words = [list(i["words"]) for i in inputs]
    steps = ([Fragments()] if fragments else []) + ([DocumentPass(document)] if document is not None else [])
    sentence = d.tags(d.sentence_matches(words), words)
    doc = d.tags(d.document_matches(words, document), words) if document is not None else None
    tags = after_decode(steps, [r["tags"] for r in records], sentence, doc)  # the steps' one order
    return [{**r, "tags": t, "entities": entities(w, t)} for r, t, w in zip(records, tags, words)]


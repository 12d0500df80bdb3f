"""``priorkit predict`` for documents: an NER model (or recipe) tags a corpus as a stream,
resumably, on this process or a Dask cluster (docs/tagging.md, "Tagging a corpus").

:func:`tags_documents` says whether a model folder takes this path; :func:`predict_documents`
runs it: the input checked before the model loads (``check_inputs``), the run's fingerprint,
the job (the model loaded once per process), :func:`priorkit.tagging.tag_corpus`, and a summary
line with what ``--skip-bad`` skipped.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import click

#: how many skipped records are named one by one (the rest are counted)
SHOW_SKIPPED = 20


def tags_documents(model_dir: str) -> bool:
    """Whether the folder holds an NER model or a recipe (read from priorkit.json; nothing loads)."""
    from ..inference import resolve_folder
    from ..inference.recipe_folder import is_recipe

    if is_recipe(model_dir):
        return True
    try:
        folder = resolve_folder(model_dir)
        info = json.loads((folder / "priorkit.json").read_text())
    except Exception:  # noqa: BLE001 - the record path reports a bad folder in its own words
        return False
    return (info.get("task") or {}).get("type") == "token-classification"


def model_folder(model_dir: str) -> Path:
    from ..inference import resolve_folder
    from ..inference.recipe_folder import is_recipe

    return Path(model_dir).expanduser().resolve() if is_recipe(model_dir) else resolve_folder(model_dir).resolve()


def predict_documents(ctx: click.Context, model_dir: str, inputs: Sequence[str], *, out: str | None,
                      out_format: str | None, in_format: str | None, restart: bool, chunk_size: int,
                      batch_size: int, engine: str, scheduler: str | None, workers: int | None, skip_bad: bool,
                      device: str | None, max_length: int | None, no_cache: bool, decode: str | None,
                      o_bias: float | None, progress: bool) -> None:
    from ..documents.readers import check_inputs, read_documents
    from ..documents.writers import OUTPUT_FORMATS, format_of, writer_for
    from ..tagging import make_engine, tag_corpus
    from ..tagging.commit import run_fingerprint
    from ..tagging.dask_engine import local_threads
    from ..tagging.taggers import check_device, model_job

    quiet = bool((ctx.obj or {}).get("quiet"))
    if out_format is not None and out_format not in OUTPUT_FORMATS:
        raise click.UsageError(f"--format {out_format} is for sentence-pair and classification models; tagged "
                               f"documents are written as {', '.join(OUTPUT_FORMATS)}")
    fmt = out_format or (format_of(out) if out is not None else "jsonl")
    if engine != "dask" and (scheduler is not None or workers is not None):
        raise click.UsageError(f"{'--scheduler' if scheduler else '--workers'} is for --engine dask; add it")
    if scheduler is not None and workers is not None:
        raise click.UsageError("--workers starts a local Dask cluster; with --scheduler the cluster's workers "
                               "tag: drop one of them")
    # everything that can be checked before the model loads (about 12 s on a CPU) is checked here
    checked = check_inputs(list(inputs), in_format, skip_bad=skip_bad)
    check_device(device)
    folder = model_folder(model_dir)
    load = {"use_cache": not no_cache, "max_length": max_length, "decode": decode, "o_bias": o_bias}
    options = {"input_format": in_format, "formats": [f for _, f in checked], "format": fmt,
               "chunk_size": chunk_size, "batch_size": batch_size, **load}
    threads = local_threads(workers or 2) if engine == "dask" and scheduler is None else None
    job = model_job(str(folder), functools.partial(writer_for, fmt), batch_size=batch_size, device=device,
                    threads=threads, load=load)
    skipped = Skipped()
    docs = read_documents([p for p, _ in checked], in_format, skip_bad=skip_bad, on_skip=skipped.add)
    eng = make_engine(engine, workers=workers, scheduler=scheduler)
    try:
        with eng:
            if out is None:
                summary = tag_corpus(docs, job, writer_for(fmt), stream=sys.stdout, chunk_size=chunk_size,
                                     engine=eng, progress=progress and not quiet, inputs=[p for p, _ in checked])
            else:
                summary = tag_corpus(docs, job, writer_for(fmt), out=out, restart=restart,
                                     fingerprint=run_fingerprint(folder, [p for p, _ in checked], options),
                                     chunk_size=chunk_size, engine=eng, progress=progress and not quiet,
                                     inputs=[p for p, _ in checked])
    finally:
        if skipped.count and not quiet:
            skipped.show()
    if quiet or out is None:
        return
    if summary.already_done:
        click.echo(f"{out} is complete already ({summary.documents} documents); --restart tags it again", err=True)
        return
    where = f", {summary.engine.get('workers')} Dask workers" if summary.engine.get("engine") == "dask" else ""
    resumed = f" ({summary.resumed} committed before, resumed)" if summary.resumed else ""
    click.echo(f"tagged {summary.tagged} documents to {out} in {summary.seconds:.1f} s ({summary.rate:.1f} doc/s "
               f"once loaded{where}); {summary.documents} in the file{resumed}", err=True)


class Skipped:
    """What --skip-bad skipped: the first :data:`SHOW_SKIPPED` reasons kept, the rest counted (memory
    stays flat however many records are bad)."""

    def __init__(self) -> None:
        self.count, self.first = 0, []

    def add(self, reason: str) -> None:
        self.count += 1
        if len(self.first) < SHOW_SKIPPED:
            self.first.append(reason)

    def show(self) -> None:
        click.echo(f"skipped {self.count} bad record{'s' if self.count != 1 else ''} (--skip-bad):", err=True)
        for reason in self.first:
            click.echo(f"  {reason}", err=True)
        if self.count > len(self.first):
            click.echo(f"  ... and {self.count - len(self.first)} more", err=True)


def document_options(fn: Any) -> Any:
    """The options of the document path, added to ``priorkit predict``."""
    for option in reversed([
        click.option("--restart", is_flag=True,
                     help="Documents: tag from the start even where --out holds a run to resume (which it "
                          "replaces)."),
        click.option("--chunk-size", type=click.IntRange(min=1), default=256, show_default=True,
                     help="Documents: per committed chunk (a restart goes on after the last one), sorted by "
                          "length inside for small padding."),
        click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                     help="Documents: tag in this process, or on Dask workers (docs/scaling.md)."),
        click.option("--scheduler", default=None,
                     help="With --engine dask: a running scheduler's address (tcp://host:8786)."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="With --engine dask: worker processes of a local cluster [default: 2]."),
        click.option("--skip-bad", is_flag=True,
                     help="Documents: skip bad records (listed at the end) instead of stopping at the first."),
    ]):
        fn = option(fn)
    return fn


__all__ = ["tags_documents", "predict_documents", "document_options"]

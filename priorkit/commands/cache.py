"""Cache commands: ``priorkit precompute`` and ``priorkit cache info | delete | prune``."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ..cache import DEFAULT_TIMEOUT


def add_commands(cli: click.Group) -> None:
    cli.add_command(precompute_command)
    cli.add_command(cache_group)


def _quiet() -> bool:
    """``priorkit -q``: no progress bars."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and (ctx.find_root().obj or {}).get("quiet"))


def _parse_params(params: tuple[str, ...]) -> dict:
    from .options import parse_params

    return parse_params(params)


@click.command("precompute")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["stsb", "csv", "tsv", "jsonl", "conll"]), default=None,
              help="Dataset format (default: detected from the extension and first lines).")
@click.option("--text-a", default=None, help="Column (name or 0-based index) of the first text.")
@click.option("--text-b", default=None, help="Column of the second text (sentence pairs).")
@click.option("--label", default=None, help="Column of the label.")
@click.option("--no-header", is_flag=True, help="CSV/TSV without a header row (columns are indices).")
@click.option("--provider", default=None,
              help="Provider name (`priorkit providers` lists them); with --preset paper it replaces wordnet xia2021.")
@click.option("--param", "params", multiple=True, help="Provider parameter key=value (repeatable).")
@click.option("--preset", type=click.Choice(["paper"]), default=None,
              help="paper: the paper's preset (paper layout, keys and stop words; provider wordnet xia2021 "
                   "unless --provider is given).")
@click.option("--layout", type=click.Choice(["paper", "full"]), default=None,
              help="Layout without a preset (default: full, as `priorkit show`).")
@click.option("--tokenizer", default=None, help="Tokenizer path or Hub id (default: the embedded MiniLM).")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
              help="Cache file (default: $PRIORKIT_CACHE or PRIORKIT_HOME/cache.duckdb).")
@click.option("--batch-size", default=50_000, show_default=True,
              help="Pairs per committed transaction (a kill loses at most one batch); --engine local only.")
@click.option("--limit", type=int, default=None, help="Only the first N examples.")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds to wait for another process's lock on the cache.")
@click.option("--progress/--no-progress", default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              help="local: this process. dask: split the pairs into shards computed by Dask workers "
                   "(pip install 'priorkit[distributed]'; docs/scaling.md).")
@click.option("--workers", type=int, default=None,
              help="With --engine dask and no --scheduler: worker processes of a local cluster [default: 2].")
@click.option("--scheduler", default=None,
              help="With --engine dask: address of a running Dask scheduler (tcp://host:8786) instead of a "
                   "local cluster.")
@click.option("--shard-size", type=int, default=None,
              help="With --engine dask: pairs per shard (one task, one Parquet file) [default: 20000].")
@click.option("--shard-dir", type=click.Path(file_okay=False), default=None,
              help="With --engine dask: folder for the Parquet shards, shared with remote workers "
                   "[default: CACHE.shards next to the cache file].")
def precompute_command(dataset, fmt, text_a, text_b, label, no_header, provider, params, preset, layout,
                       tokenizer, cache_path, batch_size, limit, timeout, progress, as_json, engine, workers,
                       scheduler, shard_size, shard_dir) -> None:
    """Compute every word pair a DATASET needs and store it in the cache.

    Build the same way training will (same --preset/--layout, provider and
    parameters), so training finds every pair.  Interrupted runs resume:
    committed batches (and, with --engine dask, finished shards) are kept and
    not computed again.
    """
    from ..cache import PriorCache
    from ..datasets import TaggedSentence, detect_format, file_checksum, read_dataset

    if preset == "paper" and layout:
        raise click.UsageError("--preset paper fixes the layout (and keys, stop words); drop --layout or --preset")
    if params and not provider:
        raise click.UsageError("--param needs --provider")
    if preset is None and provider is None:
        raise click.UsageError("pass --provider NAME (see `priorkit providers`) or --preset paper")
    dask_only = {"--workers": workers, "--scheduler": scheduler, "--shard-size": shard_size, "--shard-dir": shard_dir}
    given = [name for name, value in dask_only.items() if value is not None]
    if engine != "dask" and given:
        raise click.UsageError(f"{', '.join(given)} only apply to --engine dask")
    if scheduler and workers is not None:
        raise click.UsageError("--workers starts a local cluster; with --scheduler the cluster's own workers are used")
    if workers is not None and workers < 1:
        raise click.UsageError(f"--workers must be at least 1, got {workers}")
    if shard_size is not None and shard_size < 1:
        raise click.UsageError(f"--shard-size must be positive, got {shard_size}")
    if engine == "dask":
        from ..precompute.dask_engine import import_distributed

        import_distributed()  # a missing install fails now, not after reading the dataset
    cache = PriorCache(cache_path, timeout=timeout)
    cache.check()  # a locked or foreign cache fails now, not after loading models
    examples = read_dataset(dataset, fmt, text_a=text_a, text_b=text_b, label=label,
                            header=not no_header, limit=limit)
    if not examples:
        raise click.UsageError(f"{dataset} holds no examples")
    from ..align import PriorBuilder, tokenizer_fingerprint
    from ..precompute import make_engine, run_precompute
    from ..providers.spec import PriorSpec, PriorSpecError
    from .options import provider_option, tokenizer_source

    single = isinstance(examples[0], TaggedSentence) or examples[0].text_b is None
    tok = tokenizer_source(tokenizer)
    # without --provider, --preset paper means its own provider (priorkit.providers.spec.PAPER_PROVIDER)
    spec = PriorSpec(provider=provider, params=_parse_params(params), preset=preset, layout=layout or "full")
    if single:
        try:
            spec.check_single_texts()
        except PriorSpecError as exc:
            raise click.UsageError(f"--{exc.field} paper: {exc} (this dataset has single sentences; "
                                   "use --provider NAME --layout full)") from None
    builder = PriorBuilder.from_spec(spec, tok, provider=provider_option(spec.build_provider))
    run_info = {
        "dataset": str(dataset),
        "dataset_checksum": file_checksum(dataset),
        "format": fmt or detect_format(dataset),
        "layout": builder.layout,
        "tokenizer": tokenizer_fingerprint(builder.tokenizer),
    }
    options = ({"batch_size": batch_size} if engine == "local" else
               {"scheduler": scheduler, "workers": workers, "shard_size": shard_size, "shard_dir": shard_dir})
    try:
        summary = run_precompute(examples, builder, cache, make_engine(engine, **options),
                                 progress=progress and not as_json and not _quiet(), run_info=run_info)
    except KeyboardInterrupt:
        kept = "committed batches are" if engine == "local" else "ingested shards and finished shard files are"
        click.echo(f"interrupted; {kept} kept in {cache.path}. Run the same command again to resume.", err=True)
        raise
    if as_json:
        click.echo(json.dumps({**summary.as_dict(), "cache": str(cache.path)}, indent=2))
        return
    from ..output import print_table

    rows = [
        ("examples", f"{summary.examples:,}"),
        ("provider", f"{summary.provider} ({summary.fingerprint})"),
        ("pairs", f"{summary.pairs:,}" + (f" (of {summary.requested:,} ordered)" if summary.requested != summary.pairs else "")),
        ("new", f"{summary.new:,}"),
        ("cached", f"{summary.cached:,}"),
        ("seconds", f"{summary.seconds:.2f}"),
        ("pairs/s (computed)", f"{summary.pairs_per_second:,.0f}" if summary.computed else "-"),
        ("cache", str(cache.path)),
    ]
    if engine == "dask":
        where = f"dask ({summary.scheduler}, {summary.workers} workers)" if summary.workers else "dask (nothing to do)"
        started = f" ({summary.startup_seconds:.1f} s to start the cluster)" if summary.shards else ""
        rows[-1:-1] = [("engine", where), ("shards", f"{summary.shards:,}{started}")]
        if summary.resumed:
            rows.insert(-1, ("resumed", f"{summary.resumed:,} pairs from shards of an earlier run"))
    print_table(f"precompute: {dataset}", ["", "value"], rows, justify={"value": "right"})


@click.group("cache")
def cache_group() -> None:
    """Inspect the DuckDB cache of word-pair priors, and remove entries (delete, prune)."""


@cache_group.command("info")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
              help="Cache file (default: $PRIORKIT_CACHE or PRIORKIT_HOME/cache.duckdb).")
@click.option("--runs", default=10, show_default=True, help="How many recent precompute runs to list.")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def cache_info(cache_path, runs, timeout, as_json) -> None:
    """Providers, pair counts, file size and recent runs of a cache (opened read-only)."""
    from ..cache import PriorCache

    info = PriorCache(cache_path, read_only=True, timeout=timeout).info(runs=runs)
    if as_json:
        click.echo(json.dumps(info, indent=2, default=str))
        return
    from ..output import print_table

    click.echo(f"{info['path']}: {info['size_bytes'] / 1e6:.1f} MB"
               + (f" (+{info['wal_bytes'] / 1e6:.1f} MB WAL)" if info["wal_bytes"] else "")
               + f", schema v{info['schema_version']}, {info['pairs']:,} pairs")
    rows = []
    for p in info["providers"]:
        params = " ".join(f"{k}={v}" for k, v in p["params"].items())
        what = f"{p['name']} v{p['version']} {params}".strip() + (" (symmetric)" if p["symmetric"] else "")
        rows.append([p["fingerprint"], what, f"{p['pairs']:,}", f"{p['nan']:,}",
                     "-" if p["mean"] is None else f"{p['mean']:.4f}"])
    right = {c: "right" for c in ("pairs", "NaN", "mean", "id", "new", "cached", "s")}
    print_table("providers", ["fingerprint", "provider", "pairs", "NaN", "mean"], rows, justify=right)
    if info["runs"]:
        rows = [[str(r["id"]), r["status"], (r["started"] or "")[:19].replace("T", " "),
                 Path(r["dataset"]).name if r["dataset"] else "-", _n(r["pairs"]), _n(r["new"]),
                 _n(r["cached"]), "-" if r["seconds"] is None else f"{r['seconds']:.1f}"] for r in info["runs"]]
        print_table("recent precompute runs", ["id", "status", "started (UTC)", "dataset", "pairs", "new",
                                               "cached", "s"], rows, justify=right)


def _n(v) -> str:
    return "-" if v is None else f"{v:,}"


_CACHE_OPTION = click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
                             help="Cache file (default: $PRIORKIT_CACHE or PRIORKIT_HOME/cache.duckdb).")


def _writable_cache(cache_path, timeout):
    """The existing cache file opened for writing; a missing or read-only file is refused."""
    import os

    from ..cache import PriorCache, default_cache_path
    from ..errors import CacheError

    path = Path(cache_path).expanduser() if cache_path else default_cache_path()
    if not path.exists():
        raise CacheError(f"no prior cache at {path}; nothing to remove")
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        raise CacheError(f"{path} is read-only (file or folder permissions); nothing was removed. "
                         "Remove entries where the cache is writable")
    return PriorCache(path, timeout=timeout)


def _report(removed: dict[str, int], names: dict[str, str], dry_run: bool, cache) -> None:
    verb = "would remove" if dry_run else "removed"
    for fp, n in removed.items():
        click.echo(f"{verb} {fp} ({names.get(fp, '?')}): {n:,} pairs")
    left = cache.count()
    click.echo(f"{verb} {len(removed)} provider(s), {sum(removed.values()):,} pairs; {cache.path} holds "
               f"{left:,} pairs")


@cache_group.command("delete")
@click.option("--provider", "provider_name", default=None,
              help="Remove every fingerprint of this provider (name as in `priorkit cache info`).")
@click.option("--fingerprint", "fingerprints", multiple=True, help="Remove this fingerprint (repeatable).")
@_CACHE_OPTION
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True)
def cache_delete(provider_name, fingerprints, cache_path, dry_run, timeout) -> None:
    """Remove a provider's cached values (all its fingerprints, or the ones named).

    Other providers' entries are never touched; the removal is one transaction.
    """
    from ..errors import CacheError

    if bool(provider_name) == bool(fingerprints):
        raise click.UsageError("pass --provider NAME or --fingerprint FP (one of them)")
    cache = _writable_cache(cache_path, timeout) if not dry_run else _read_cache(cache_path, timeout)
    known = {p["fingerprint"]: p for p in cache.providers()}
    names = {fp: p["name"] for fp, p in known.items()}
    if provider_name:
        chosen = [fp for fp, p in known.items() if p["name"] == provider_name]
        if not chosen:
            have = sorted(set(names.values()))
            raise CacheError(f"{cache.path} holds no entries of provider {provider_name!r}; "
                             f"it holds: {', '.join(have) or 'nothing'}")
    else:
        unknown = [fp for fp in fingerprints if fp not in known]
        if unknown:
            raise CacheError(f"{cache.path} holds no fingerprint {', '.join(unknown)}; "
                             f"`priorkit cache info --cache {cache.path}` lists them")
        chosen = list(fingerprints)
    removed = ({fp: int(known[fp]["pairs"]) for fp in chosen} if dry_run else cache.delete_many(chosen))
    _report(removed, names, dry_run, cache)


def _read_cache(cache_path, timeout):
    from ..cache import PriorCache

    return PriorCache(cache_path, read_only=True, timeout=timeout)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str):
    """'90m', '12h', '30d', '2w' (or a sum such as '1d12h') -> timedelta."""
    import datetime as dt
    import re

    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhdw])", text.strip().lower())
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([smhdw])", "", text.strip().lower()).strip():
        raise click.BadParameter(f"{text!r} is not a duration; write e.g. 90m, 12h, 30d or 2w",
                                 param_hint="--older-than")
    return dt.timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in parts))


@cache_group.command("prune")
@click.option("--older-than", "older_than", required=True, metavar="DURATION",
              help="Remove providers last written (registered or precomputed) longer ago than this: 90m, 12h, 30d, 2w.")
@_CACHE_OPTION
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True)
def cache_prune(older_than, cache_path, dry_run, timeout) -> None:
    """Remove the providers (and their pairs) not written for a while."""
    age = parse_duration(older_than)
    cache = _writable_cache(cache_path, timeout) if not dry_run else _read_cache(cache_path, timeout)
    names = {p["fingerprint"]: p["name"] for p in cache.providers()}
    removed = cache.prune(age, dry_run=dry_run)
    _report(removed, names, dry_run, cache)

"""The final read of a sealed test split (issue 48; docs/pipelines.md#the-sealed-test-split):
``priorkit sweep PIPELINE --final SETTING [--final SETTING ...] --decision "..."``.

The settings were chosen on devel; a final read scores their kept models (a post-hoc arm: its
merge or mix of kept models) on ``data.test`` and trains nothing.  It works in a folder of its own,
``runs/<name>/final/read-<N>/``, so the devel runs and their scores stay as they are: each trained
setting it needs (the named ones, the sweep's baseline, the settings a named post-hoc arm merges or
mixes) gets a run folder there whose ``model/`` links the kept model's weights (its
``priorkit.json`` and card are copies, so the kept model's own record keeps its devel scores); the
evaluate step, the post-hoc arms, the baselines (:mod:`priorkit.evaluation.baselines`) and the
reports then run there as in any sweep, on test.  The read is appended to the ledger
(:mod:`priorkit.evaluation.ledger`) and its results are copied next to it.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import PipelineConfig, for_fraction, prior_settings
from ..errors import PriorkitError
from ..jsonfile import read_json, write_json
from ..training.layout import MODEL_DIR, RUN_FILE
from ..training.plan import RunPlan
from . import ledger as lg

#: files of a kept model that the final read copies instead of linking (it writes its scores there)
_COPIED = ("priorkit.json", "README.md")


@dataclasses.dataclass
class FinalRead:
    read: int
    folder: Path
    line: dict[str, str]
    result: Any  # the SweepResult of the read
    files: dict[str, Path]
    earlier: list[dict[str, str]]


def _entries(cfg: PipelineConfig) -> dict[str, Any]:
    """``sweep.priors`` as written (the default: none and the file's prior)."""
    if cfg.sweep.priors is not None:
        return dict(cfg.sweep.priors)
    entries: dict[str, Any] = {"none": None}
    if cfg.prior is not None:
        entries[cfg.prior.name or "prior"] = {}
    return entries


def plan_read(cfg: PipelineConfig, settings: Sequence[str], folder: Path) -> tuple[PipelineConfig, list[str]]:
    """The read's configuration (``folder`` as its output folder, test the one evaluated and
    reported split, the sweep cut to what the read needs) and the trained settings it scores."""
    if cfg.task.type != "token-classification" and any(s in cfg.sweep.posthoc for s in settings):
        raise PriorkitError("post-hoc arms need token classification")  # pragma: no cover - the loader refuses
    if cfg.data.test is None:
        raise PriorkitError(f"{cfg.where('data')}: --final reads data.test, and {cfg.source} sets none; add "
                            "data.test (the sealed split) to the pipeline file")
    known = list(prior_settings(cfg))
    unknown = [s for s in settings if s not in known and s not in cfg.sweep.posthoc]
    if unknown:
        raise PriorkitError(f"--final {unknown[0]}: not a setting of {cfg.source} (sweep.priors: {', '.join(known)}; "
                            f"sweep.posthoc: {', '.join(cfg.sweep.posthoc) or 'none'})")
    if not settings:
        raise PriorkitError("--final: name at least one setting to read on test")
    posthoc = {n: a for n, a in cfg.sweep.posthoc.items() if n in settings}
    needed = [cfg.sweep.baseline, *(s for s in settings if s in known)]
    for arm in posthoc.values():
        needed += [arm.of, *arm.mix]
    trained = list(dict.fromkeys(needed))
    entries = _entries(cfg)
    sweep = dataclasses.replace(
        cfg.sweep, split="test", priors={n: entries[n] for n in trained}, posthoc=posthoc,
        controls={k: v for k, v in cfg.sweep.controls.items() if k in trained and v in trained})
    return dataclasses.replace(cfg, output_dir=str(folder), evaluate=["test"], sweep=sweep), trained


def _link_model(kept: Path, target: Path) -> None:
    """``target`` (a model folder) made of links to ``kept``'s files, its record and card copied."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in kept.iterdir():
        if f.name in _COPIED or f.is_dir():
            (shutil.copytree if f.is_dir() else shutil.copyfile)(f, target / f.name)
        else:
            (target / f.name).symlink_to(f.resolve())


def _prepare(cfg: PipelineConfig, final: PipelineConfig, name: str, fraction: float, seed: int,
             train: Any) -> None:
    """The read's run folder of a trained setting: its kept model linked, its run.json copied."""
    from ..inference.manifest import trained_with

    prior = prior_settings(cfg)[name]
    kept = RunPlan(for_fraction(cfg, fraction, prior), name, prior, fraction, seed)
    model = kept.run_dir / MODEL_DIR
    key = kept.train_key(train)
    if not (model / "config.json").exists():
        raise PriorkitError(f"{kept.run_dir} has no kept model, and a final read scores the models chosen on devel "
                            f"(it trains nothing): run the devel sweep with train.keep_model: true first "
                            f"(`priorkit sweep {cfg.source}`)")
    if not trained_with(model, key):
        raise PriorkitError(f"{model} was trained with other settings than {name} has now in {cfg.source} (train "
                            "key differs): a final read scores the very models chosen on devel; train them again "
                            "with the devel sweep, or restore the pipeline file they were chosen with")
    mine = RunPlan(for_fraction(final, fraction, prior), name, prior, fraction, seed).run_dir
    mine.mkdir(parents=True, exist_ok=True)
    _link_model(model, mine / MODEL_DIR)
    write_json(mine / RUN_FILE, {**(read_json(kept.run_dir / RUN_FILE) or {}), "final_read_of": str(kept.run_dir)})


def final_read(cfg: PipelineConfig, settings: Sequence[str], decision: str, *,
               ledger: str | Path = lg.LEDGER, pipeline: str | None = None,
               log: Callable[[str], None] = print) -> FinalRead:
    """Read ``settings`` of ``cfg`` on test once (module doc); appends the read to ``ledger``."""
    from ..training import ranks
    from ..training.data import load_data
    from ..training.steps import evaluate_step
    from .baselines import run_baselines
    from .posthoc import run_posthoc
    from .sweep import _pairs, collect_rows, grid, write_reports

    if not decision or not decision.strip():
        raise PriorkitError("--decision: say what this read of test decides (e.g. \"the recipe of record at 10% "
                            "gold: st-mix-doc or st-mix\"); it goes into the ledger beside the read")
    ledger = Path(ledger)
    read = lg.next_read(ledger)
    folder = cfg.out_dir / lg.FINAL_DIR / f"read-{read}"
    final, trained = plan_read(cfg, settings, folder)
    earlier = lg.earlier_reads(ledger, cfg.name, settings, final.sweep.fractions)
    for e in earlier:
        log(f"note: read {e['read']} ({e['date']}) already read {e['settings']} of {e['name']} on test for "
            f"\"{e['decision']}\"; this second read is recorded beside it")
    if folder.exists():
        shutil.rmtree(folder)  # a read stopped before its ledger line: nothing of it counts
    splits = load_data(final)
    plans = grid(final)
    log(f"final read {read} of {cfg.name}: {', '.join(settings)} on test ({len(splits['test'])} sentences), "
        f"{len(final.sweep.fractions)} fraction(s) x {len(final.sweep.seeds)} seed(s); scoring the kept models of "
        f"{', '.join(trained)} in {folder}")
    for plan in plans:
        _prepare(cfg, final, plan.prior_name, plan.fraction, plan.seed, splits["train"])
        outcome = evaluate_step(plan, splits)
        log(f"[{plan.label}] test: {outcome.detail}")
    pairs = _pairs(plans)
    if final.sweep.posthoc:
        ranks.on_main(run_posthoc, final, splits, pairs, log=log)
    run_baselines(final, splits, pairs, log=log)
    result = write_reports(final, collect_rows(final, plans))
    files = _copy_results(result.files, ledger.parent, f"{cfg.name}-read{read}")
    scored = [r for r in dict.fromkeys(row["prior"] for row in result.rows)]
    line = lg.append_read(ledger, {
        "read": read, "date": lg.today(), "commit": lg.current_commit(("priorkit", "plugins", *(
            [pipeline] if pipeline else []))),
        "pipeline": pipeline or cfg.source, "name": cfg.name, "settings": " ".join(settings),
        "scored": " ".join(scored), "fractions": " ".join(f"{f:g}" for f in final.sweep.fractions),
        "seeds": " ".join(str(s) for s in final.sweep.seeds), "decision": decision.strip(),
        "result": files["csv"].as_posix(), "earlier": " ".join(e["read"] for e in earlier)})
    log(f"ledger: read {read} appended to {ledger}")
    return FinalRead(read, folder, line, result, files, earlier)


def _copy_results(files: dict[str, Path], folder: Path, stem: str) -> dict[str, Path]:
    """The read's tables copied next to the ledger: ``<stem>-results.csv`` / ``.md``, and the
    dictionary and baseline tables when there are some."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for kind in ("csv", "md", "dictionary", "baselines"):
        if kind in files:
            source = Path(files[kind])
            target = folder / (f"{stem}-{source.name}" if kind in ("dictionary", "baselines")
                               else f"{stem}-results{source.suffix}")
            shutil.copyfile(source, target)
            out[kind] = target
    return out

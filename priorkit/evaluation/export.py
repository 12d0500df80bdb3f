"""An arm of a finished sweep as a recipe folder (``priorkit export``), and the one command that
trains what an arm needs and exports it (``priorkit recipe``); docs/tagging.md, "A recipe as one
folder".

The arm's settings come from the sweep's pipeline file (or, given a runs folder, from the arm's
own ``metrics.json`` and its base run's ``config.yaml``); its members are the kept models of
``of`` and ``mix`` at the fraction and seed; its steps are the arm's (:func:`~.posthoc.arm_steps`, the order
of :mod:`priorkit.decode.steps`); its dictionary is the arm's provider with the pipeline's type map
and, when the arm calibrates, the forms the run's gold subset drops and keeps, recomputed as the
sweep did.  The arm's scores must be those of these models and settings (its ``posthoc_key``);
they go into the folder with the files they were read from.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from ..config import PipelineConfig, PosthocConfig, for_fraction, load_config, prior_settings
from ..decode.steps import DICTIONARY_STEPS, normalised, to_data
from ..errors import PriorkitError
from ..jsonfile import read_json
from ..training.layout import METRICS_FILE, MODEL_DIR
from ..training.plan import RunPlan
from .posthoc import arm_steps


def config_from_runs(runs: Path, arm_name: str, fraction: float, seed: int) -> PipelineConfig:
    """The pipeline config of a runs folder's arm: its base run's ``config.yaml`` with the arm's
    settings (its ``metrics.json``) as the sweep's only post-hoc arm."""
    metrics = read_json(runs / arm_name / f"frac{fraction:g}" / f"seed{seed}" / METRICS_FILE)
    if metrics is None or not isinstance(metrics.get("posthoc"), dict):
        raise PriorkitError(f"{runs}: no scored post-hoc arm {arm_name!r} at fraction {fraction:g}, seed {seed} "
                            f"({runs / arm_name}/frac{fraction:g}/seed{seed}/{METRICS_FILE}); pass the pipeline file, "
                            "or run the sweep first")
    fields = {f.name for f in dataclasses.fields(PosthocConfig)}
    settings = {k: v for k, v in metrics["posthoc"].items() if k in fields}
    base = runs / settings.get("of", "none") / f"frac{fraction:g}" / f"seed{seed}" / "config.yaml"
    if not base.exists():
        raise PriorkitError(f"{base} is missing: the arm's base run is not in {runs}")
    from ..config.removed import upgrade_dump

    raw = upgrade_dump(yaml.safe_load(base.read_text()))  # written before a field was removed: today's spelling
    names = [settings.get("of", "none"), *settings.get("mix", [])]
    raw["output_dir"] = str(runs.resolve())
    raw["sweep"] = {"fractions": [fraction], "seeds": [seed], "priors": {n: None for n in names},
                    "baseline": names[0], "posthoc": {arm_name: settings}}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump(raw, fh)
    try:
        return load_config(fh.name)
    finally:
        Path(fh.name).unlink()


def pipeline_config(source: str | Path, arm: str, fraction: float | None, seed: int | None,
                    overrides: Sequence[str] = ()) -> tuple[PipelineConfig, float, int]:
    """The config of a pipeline file or a runs folder, and the fraction and seed (defaults: the
    sweep's only ones)."""
    source = Path(source).expanduser()
    if source.is_dir():
        if fraction is None or seed is None:
            raise PriorkitError(f"{source} is a runs folder: name the run with --fraction and --seed")
        return config_from_runs(source, arm, fraction, seed), fraction, seed
    cfg = load_config(source, list(overrides))
    if fraction is None:
        if len(cfg.sweep.fractions) != 1:
            raise PriorkitError(f"{source}: the sweep has fractions {cfg.sweep.fractions}; choose one with --fraction")
        fraction = cfg.sweep.fractions[0]
    if seed is None:
        if len(cfg.sweep.seeds) != 1:
            raise PriorkitError(f"{source}: the sweep has seeds {cfg.sweep.seeds}; choose one with --seed")
        seed = cfg.sweep.seeds[0]
    return cfg, float(fraction), int(seed)


def _arm(cfg: PipelineConfig, name: str) -> PosthocConfig:
    if cfg.task.type != "token-classification":
        raise PriorkitError(f"{cfg.where('task.type')}: a recipe tags entities; this pipeline is {cfg.task.type}")
    if name not in cfg.sweep.posthoc:
        raise PriorkitError(f"{cfg.where('sweep.posthoc')}: no post-hoc arm {name!r}; the arms are "
                            f"{', '.join(cfg.sweep.posthoc) or 'none'}")
    return cfg.sweep.posthoc[name]


def export_arm(cfg: PipelineConfig, arm_name: str, fraction: float, seed: int, out: str | Path, *,
               force: bool = False, command: str | None = None, log: Callable[[str], None] = print) -> dict:
    """Write the recipe folder of ``arm_name`` at (``fraction``, ``seed``) to ``out`` (module doc);
    returns its priorkit.json content."""
    from ..inference.manifest import command_line
    from ..inference.recipe_folder import write_recipe
    from ..training.data import load_data
    from . import posthoc

    arm = _arm(cfg, arm_name)
    members = [arm.of, *arm.mix]
    dirs = {n: RunPlan(cfg, n, None, fraction, seed).run_dir for n in members}
    for n, d in dirs.items():
        if not (d / MODEL_DIR / "config.json").exists():
            raise PriorkitError(f"{d} has no kept model ({MODEL_DIR}/), which arm {arm_name!r} needs as member {n}; "
                                "set train.keep_model: true and train it again (priorkit recipe ... --force)")
    arm_dir = RunPlan(cfg, arm_name, None, fraction, seed).run_dir
    metrics = read_json(arm_dir / METRICS_FILE)
    if metrics is None:
        raise PriorkitError(f"{arm_dir / METRICS_FILE} is missing: arm {arm_name!r} has not been scored at fraction "
                            f"{fraction:g}, seed {seed}; run `priorkit sweep` (or `priorkit recipe`) first")
    splits = load_data(cfg)
    steps = arm_steps(cfg, arm)
    needs_dictionary = any(s.kind in DICTIONARY_STEPS for s in steps)
    typed = posthoc.typed_arm(cfg, arm, f"sweep.posthoc.{arm_name}",
                              (t for s in splits.values() for e in s.examples for t in e.get("tags", ()))) \
        if needs_dictionary else None
    base = read_json(dirs[arm.of] / METRICS_FILE) or {}
    mixed = [read_json(dirs[n] / METRICS_FILE) or {} for n in arm.mix]
    key = posthoc._key(cfg, arm, base, splits, mixed, typed.types if typed is not None else None)
    scored = sorted((metrics.get("metrics") or {}))
    if scored != sorted(cfg.evaluate):
        raise PriorkitError(f"{arm_dir / METRICS_FILE}: the arm was scored on {', '.join(scored) or 'nothing'}, the "
                            f"pipeline evaluates {', '.join(cfg.evaluate)}; pass --set evaluate=[{','.join(scored)}] (and sweep.split) "
                            "to export those scores, or score the arm again (priorkit sweep ... --force)")
    if metrics.get("posthoc_key") != key:
        raise PriorkitError(f"{arm_dir / METRICS_FILE}: the arm's scores are not those of the kept models and "
                            f"settings now (another key); score it again: `priorkit sweep ... --force`")
    dictionary = None
    if needs_dictionary:
        calibration = None
        if arm.calibrate is not None:  # recomputed on the run's gold subset, as the sweep did
            plan = RunPlan(cfg, arm_name, None, fraction, seed)
            drop, keep = posthoc._drop(typed, plan, splits["train"])
            calibration = {**dataclasses.asdict(arm.calibrate), "drop": [list(d) for d in drop],
                           "keep": [list(k) for k in keep]}
        dictionary = {"provider": arm.provider, "params": dict(arm.params), "types": dict(typed.types),
                      "calibration": calibration}
    if dictionary is None:  # no dictionary step: the members' own dictionary, for the concept IDs only
        dictionary = _concepts_only(cfg, arm, arm_name, members, splits, log)
    shares = normalised(arm.weights if arm.weights is not None else [1.0] * len(members))
    first_info = read_json(dirs[arm.of] / MODEL_DIR / "priorkit.json") or {}
    labels = (first_info.get("task") or {}).get("labels")
    result_files = {"arm metrics": str(arm_dir / METRICS_FILE)}
    result_files.update({f"{split} predictions": str(arm_dir / f"predictions-{split}.jsonl")
                         for split in metrics.get("metrics", {}) if (arm_dir / f"predictions-{split}.jsonl").exists()})
    if (cfg.out_dir / "results.csv").exists():
        result_files["sweep results"] = str(cfg.out_dir / "results.csv")
    run = {"pipeline": cfg.name, "arm": arm_name, "fraction": fraction, "seed": seed,
           "settings": dataclasses.asdict(typed if typed is not None else arm), "posthoc_key": key,
           "members": {n: {"run_dir": str(d), "train_key": (read_json(d / "run.json") or {}).get("train_key"),
                           "eval_key": (read_json(d / METRICS_FILE) or {}).get("eval_key")} for n, d in dirs.items()},
           "task": {"decode": cfg.task.decode, "o_bias": cfg.task.o_bias, "max_length": cfg.model.max_length},
           "command": command if command is not None else command_line(),
           "exported": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    info = write_recipe(out, members=[{"name": n, "model_dir": dirs[n] / MODEL_DIR, "share": s}
                                      for n, s in zip(members, shares)],
                        steps=to_data(steps), labels=labels, dictionary=dictionary,
                        scores={k: v for k, v in metrics.get("metrics", {}).items()}, result_files=result_files,
                        run=run, force=force)
    log(f"recipe {arm_name} (fraction {fraction:g}, seed {seed}) -> {out} ({info['bytes'] / 1e6:.0f} MB)")
    return info


def _concepts_only(cfg: PipelineConfig, arm: PosthocConfig, arm_name: str, members: Sequence[str], splits: Any,
                   log: Callable[[str], None]) -> dict[str, Any] | None:
    """For an arm without dictionary steps: the dictionary of the first member whose prior's provider
    has concept matches (e.g. token features on an ontology), written with no step reading it, so that
    the folder's entities carry the concept IDs of the entries behind them; the tags are unchanged.
    None (and a note) when no member has one or its groups have no type map."""
    from . import posthoc

    priors = prior_settings(cfg)
    for name in members:
        prior = priors.get(name)
        if prior is None or not prior.provider:
            continue
        import priorkit

        try:
            if not getattr(priorkit.get_provider(prior.provider, **prior.params), "supports_matches", False):
                continue
            typed = posthoc.typed_arm(cfg, dataclasses.replace(arm, provider=prior.provider, params=dict(prior.params)),
                                      f"sweep.posthoc.{arm_name}",
                                      (t for s in splits.values() for e in s.examples for t in e.get("tags", ())))
        except PriorkitError as exc:
            log(f"note: no concept IDs in the recipe ({name}'s dictionary: {exc})")
            return None
        return {"provider": prior.provider, "params": dict(prior.params), "types": dict(typed.types),
                "calibration": None, "use": f"concept IDs only (the dictionary of member {name}; no step reads it)"}
    log(f"note: no member of {arm_name} reads a dictionary with concept matches: its entities carry no concept IDs")
    return None


def train_arm(cfg: PipelineConfig, arm_name: str, fraction: float, seed: int, *, force: bool = False,
              log: Callable[[str], None] = print) -> None:
    """Train (skip-if-valid, as a sweep does) the settings an arm needs at one fraction and seed,
    then score the arm."""
    from ..training.data import load_data
    from ..training.silver_stage import check_settings
    from ..training.steps import precompute_step, run_one
    from .posthoc import run_posthoc

    arm = _arm(cfg, arm_name)
    settings = prior_settings(cfg)
    needed = [arm.of, *arm.mix]
    unknown = [n for n in needed if n not in settings]
    if unknown:
        raise PriorkitError(f"{cfg.where(f'sweep.posthoc.{arm_name}')}: {', '.join(unknown)} is no setting of "
                            f"sweep.priors ({', '.join(settings)})")
    settings = {n: settings[n] for n in needed}
    splits = load_data(cfg)
    check_settings(cfg, settings, splits["train"])
    for name, prior in settings.items():
        outcome = precompute_step(cfg, name, prior, splits, force=force, log=log)
        if outcome.status != "n/a":
            log(f"[{name}] precompute: {outcome.status}")
    for name, prior in settings.items():
        plan = RunPlan(for_fraction(cfg, fraction, prior), name, prior, fraction, seed)
        log(f"run: {plan.label}")
        run_one(plan, splits, force=force, log=log)
    one = dataclasses.replace(cfg, sweep=dataclasses.replace(cfg.sweep, posthoc={arm_name: arm}))
    run_posthoc(one, splits, [(fraction, seed)], force=force, log=log)

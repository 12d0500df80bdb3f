"""``tune.arms``: every prior setting -- no prior included -- gets its own search.

A fair comparison gives no prior the same chance as the prior: with
``tune.arms`` each arm (``prior: null`` for no prior, a mapping merged over the
file's ``prior`` otherwise) gets its own Optuna study of ``tune.trials`` trials
over its own ``space`` (at least the encoder's learning rate), scored on the
same validation slice with the same seeds.  The final stage
(:mod:`priorkit.tune.arms_final`) trains each arm's best setting with
``tune.final.seeds`` and compares the best prior arms with the best no-prior arm
and with their controls (docs/tune.md#arms).

Studies live in one storage (``tune/study.db`` or ``--storage``) under the names
``<study>.<arm>``; every finished trial is committed, so a killed process loses
only the trial it was running.  Trial runs are in ``tune/arms/<arm>/``.
"""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..config import ConfigError, PipelineConfig, config_from_dict
from ..config.checks import _deep_merge
from ..training.data import load_data
from ..training.tasks import is_better
from . import space as sp
from . import study as st
from .failures import recorded_failures
from .sampler import apply_sampler, check_sampler, grid_size, uses_grid

Log = Callable[[str], None]
ARMS_DIR = "arms"


@dataclasses.dataclass
class Arm:
    """One arm, ready to search: its own pipeline (prior set, space as ``tune.space``)."""

    name: str
    ctx: st.TuneContext
    has_prior: bool
    control_of: str | None

    @property
    def dims(self) -> list[sp.Dimension]:
        return self.ctx.dims


def arm_raw(cfg: PipelineConfig, raw: dict, name: str) -> dict:
    """The pipeline dict of arm ``name``: its prior in place of the file's, its space as
    ``tune.space`` (and no ``tune.arms``), nothing of ``sweep``."""
    entry = (raw.get("tune") or {}).get("arms", {}).get(name) or {}
    out = {k: copy.deepcopy(v) for k, v in raw.items() if k not in ("tune", "sweep")}
    prior = entry.get("prior", {})
    if prior is None or prior == "none":
        out["prior"] = None
    else:
        merged = _deep_merge(raw.get("prior") or {}, prior)
        merged["name"] = prior.get("name") or name
        out["prior"] = merged
    tune = {k: copy.deepcopy(v) for k, v in (raw.get("tune") or {}).items() if k != "arms"}
    tune["space"] = copy.deepcopy(entry.get("space") or {})
    out["tune"] = tune
    return out


def _arm_locations(cfg: PipelineConfig, name: str) -> dict:
    """The file's line map with the arm's fields where a single-space study has them, so the
    space checks point at the arm's lines."""
    prefix = ("tune", "arms", name)
    out = {k: v for k, v in cfg.locations.items() if k[:2] != ("tune", "space")}
    for key, line in cfg.locations.items():
        if key[:3] == prefix:
            rest = key[3:]
            if rest[:1] == ("prior",):
                out[rest] = line  # the arm's prior fields, where the arm's pipeline has them
            else:
                out[("tune",) + rest] = line
    return out


def check_arms(cfg: PipelineConfig, raw: dict, provider_names: set[str] | None = None) -> dict[str, tuple[PipelineConfig, dict, list[sp.Dimension]]]:
    """Every arm checked before any training: {name: (arm config, arm raw, dimensions)}.

    Errors name the file and line: an empty space, an unknown ``control_of``, no
    ``prior: null`` arm, an invalid prior or space value.
    """
    arms = cfg.tune.arms or {}

    def fail(field: str, msg: str) -> ConfigError:
        return ConfigError(f"{cfg.where('tune.arms' + ('.' + field if field else ''))}: "
                           f"tune.arms{'.' + field if field else ''}: {msg}")

    if not arms:
        raise fail("", "is empty; name at least a no-prior arm and a prior arm")
    if cfg.tune.space:
        raise ConfigError(f"{cfg.where('tune.space')}: tune.space: give the space of each arm in "
                          "tune.arms.NAME.space instead (one study per arm)")
    if not any(a.prior is None or a.prior == "none" for a in arms.values()):
        raise fail("", "needs an arm with prior: null (no prior): every prior arm is compared with it")
    out = {}
    for name, arm in arms.items():
        if not arm.space:
            raise fail(f"{name}.space", f"arm {name!r} has an empty space; search at least one field (e.g. "
                       "train.learning_rate: {choice: [1.0e-4, 2.0e-4, 4.0e-4]}) so every arm is tuned alike")
        if arm.control_of is not None:
            target = arms.get(arm.control_of)
            if target is None:
                raise fail(f"{name}.control_of", f"{arm.control_of!r} is not an arm ({', '.join(arms)})")
            if target.prior is None or arm.control_of == name:
                raise fail(f"{name}.control_of", f"{arm.control_of!r} is not a prior arm; a control "
                           "belongs to an arm with a prior")
        if arm.prior is not None and arm.prior != "none" and not isinstance(arm.prior, dict):
            raise fail(f"{name}.prior", "expected null (no prior) or a mapping of prior fields")
        r = arm_raw(cfg, raw, name)
        try:  # with the arm's lines in place of the file's, an error points at the arm
            acfg = config_from_dict(r, source=cfg.source, locations=_arm_locations(cfg, name))
        except ConfigError as exc:
            raise ConfigError(_in_arm(str(exc), name)) from None
        try:
            dims = sp.check_space(acfg, r, provider_names)
        except ConfigError as exc:
            raise ConfigError(_in_arm(str(exc), name)) from None
        out[name] = (acfg, r, dims)
    return out


def _in_arm(message: str, arm: str) -> str:
    """'FILE:LINE: prior.params: ...' -> 'FILE:LINE: tune.arms.ARM.prior.params: ...' (and
    tune.space likewise): the field as the file spells it."""
    where, sep, rest = message.partition(": ")
    if not sep:
        return message
    for head in ("tune.space", "prior"):
        if rest.startswith(head + ".") or rest.startswith(head + ":"):
            field = "space" if head == "tune.space" else "prior"
            return f"{where}: tune.arms.{arm}.{field}{rest[len(head):]}"
    return f"{where}: tune.arms.{arm}: {rest}"


def prepare_arms(cfg: PipelineConfig, raw: dict, *, log: Log = print) -> dict[str, Arm]:
    """Check every arm (before any training) and carve the one validation slice they share."""
    from ..providers.plugins import list_providers

    st.check_tune_section(cfg)
    checked = check_arms(cfg, raw, {e.name for e in list_providers()})
    for name, (_, _, dims) in checked.items():
        check_sampler(cfg, name, dims)
    splits = load_data(st._train_only(cfg, raw))
    pool, val = st.carve_validation(cfg, splits["train"])
    root = cfg.out_dir / "tune"
    metric = cfg.task.metric
    out = {}
    for name, (acfg, r, dims) in checked.items():
        ctx = st.TuneContext(acfg, {k: v for k, v in r.items() if k != "tune"}, dims, root / ARMS_DIR / name,
                             {"train": pool, "eval": val}, metric, log)
        arm = cfg.tune.arms[name]
        out[name] = Arm(name, ctx, not (arm.prior is None or arm.prior == "none"), arm.control_of)
    return out


# ---------------------------------------------------------------------------
# one study per arm
# ---------------------------------------------------------------------------
def study_name(cfg: PipelineConfig, arm: str, base: str | None = None) -> str:
    return f"{base or cfg.name}.{arm}"


def open_arm_study(arm: Arm, storage: str | None, base_name: str | None, *, create: bool = True):
    root = arm.ctx.root.parent.parent  # one storage file for every arm: tune/study.db
    return st.open_study(arm.ctx.cfg, root, storage, study_name(arm.ctx.cfg, arm.name, base_name), create=create)


def objective_for(arm: Arm) -> Callable[[Any], float]:
    """The mean validation score of a sampled setting over the tune seeds (pruned on the first)."""
    import optuna

    ctx = arm.ctx

    def objective(trial: optuna.Trial) -> float:
        params = sp.suggest(trial, ctx.dims)
        trial.set_user_attr("setting", st.params_digest(params))
        scores, seconds = [], 0.0
        with recorded_failures(ctx, trial):
            for i, seed in enumerate(ctx.tune.seeds):
                cfg = st.trial_config(ctx, params, seed)

                def report(value: float, epoch: int, _first: bool = i == 0) -> bool:
                    if not _first:
                        return False
                    trial.report(value, epoch)
                    return trial.should_prune()

                res = st.scored_run(ctx, cfg, arm.name, seed, report)
                seconds += res.get("seconds", 0.0)
                if res["pruned"]:
                    trial.set_user_attr("epochs", res["scores"])
                    trial.set_user_attr("seconds", seconds)
                    raise optuna.TrialPruned(f"validation {ctx.metric} {res['scores'][-1]:.4f} after "
                                             f"epoch {len(res['scores'])}")
                scores.append(res["scores"][-1])
        trial.set_user_attr("scores", scores)
        trial.set_user_attr("seconds", seconds)
        return float(np.mean(scores))

    return objective


def run_arm(arm: Arm, *, storage: str | None = None, base_name: str | None = None,
            timeout: float | None = None):
    """Run arm's trials until its study holds its budget; a resumed study continues."""
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    ctx = arm.ctx
    study = open_arm_study(arm, storage, base_name)
    st._record_setup(study, ctx)
    target = apply_sampler(study, ctx.cfg, ctx.dims)
    done = st.finished_count(study)
    if done >= target:
        ctx.log(f"arm {arm.name}: {done} finished trial(s), the budget is {target}: nothing to run")
        return study
    st.requeue_interrupted(study, ctx.log)
    sampler = "grid" if isinstance(study.sampler, optuna.samplers.GridSampler) else ctx.tune.sampler
    ctx.log(f"arm {arm.name}: {done}/{target} trials finished ({sampler} sampler, "
            f"{len(ctx.dims)} field(s): {', '.join(d.path for d in ctx.dims)})")

    def on_trial(study: optuna.Study, t: optuna.trial.FrozenTrial) -> None:
        ctx.log(f"[{arm.name}] " + st.describe_trial(t, ctx.metric).replace(" (delta nan)", "")
                + f"  [{st.finished_count(study)}/{target}]")

    stop = optuna.study.MaxTrialsCallback(target, states=(TrialState.COMPLETE, TrialState.PRUNED))
    study.optimize(objective_for(arm), timeout=timeout, callbacks=[on_trial, stop],
                   catch=(Exception,), gc_after_trial=False)
    return study


def arm_budget(arm: Arm) -> int:
    size = grid_size(arm.dims)
    return min(arm.ctx.tune.trials, size) if uses_grid(arm.ctx.cfg, arm.dims) and size else arm.ctx.tune.trials


def best_value(arm: Arm, study) -> float | None:
    from optuna.trial import TrialState

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        return None
    return float(study.best_value)


def reference_arm(arms: dict[str, Arm], studies: dict[str, Any]) -> str:
    """The no-prior arm every prior arm is compared with: the best on validation when
    there are several."""
    nones = [n for n, a in arms.items() if not a.has_prior]
    scored = [(best_value(arms[n], studies[n]), n) for n in nones if n in studies]
    scored = [(v, n) for v, n in scored if v is not None]
    if not scored:
        return nones[0]
    metric = next(iter(arms.values())).ctx.metric
    best = scored[0]
    for v, n in scored[1:]:
        if is_better(metric, v, best[0]):
            best = (v, n)
    return best[1]


def best_arm_pipeline(arm: Arm, study, final) -> dict[str, Any]:
    """The pipeline of the arm's best setting, as a one-setting sweep over the final seeds
    and fractions on the reported split (``priorkit sweep`` reruns it)."""
    t = study.best_trial
    raw = sp.apply(copy.deepcopy(arm.ctx.raw), arm.dims, t.params)
    raw["sweep"] = {
        "fractions": list(final.fractions or [arm.ctx.tune.fraction]),
        "seeds": list(final.seeds),
        "priors": {arm.name: {} if arm.has_prior else None},
        "baseline": arm.name,
        "split": final.split,
    }
    if raw.get("prior") is not None:
        raw["prior"]["name"] = arm.name
    evaluate = raw.get("evaluate")
    if evaluate is not None and final.split not in evaluate:
        raw["evaluate"] = [*evaluate, final.split]
    return raw


def final_root(cfg: PipelineConfig) -> Path:
    return cfg.out_dir / "tune" / "final"

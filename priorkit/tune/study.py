"""``priorkit tune``: an Optuna study over a pipeline's ``tune.space``.

How a study runs (docs/tune.md):

* **Validation slice.** ``tune.validation`` holds examples out of ``data.train``
  (one draw, the same for every trial).  Trials train on ``tune.fraction`` of the
  rest and are scored on the slice -- never on the splits results are reported on.
* **Baseline.** For every seed of ``tune.seeds`` the no-prior model is trained once
  on the same examples with the file's own ``train`` section and cached in
  ``tune/baseline/``; every trial's delta is measured against it, seed by seed.
* **Trials.** A trial samples the space, applies it to the pipeline, trains one run
  per seed and reports the validation score after every epoch of its first seed, so
  the pruner (median or Hyperband) can stop a bad setting early.  A trial that
  raises is recorded as failed and the study goes on.
* **Storage.** The study lives in ``tune/study.db`` (SQLite) or in the database
  given with ``--storage`` (e.g. PostgreSQL, for several machines).  Every finished
  trial is committed there, so a killed process loses at most the trial it was
  running; trials left "running" by a dead process are failed after a heartbeat
  grace period and retried once, and trials interrupted with Ctrl-C are retried on
  the next start.  Several processes may run ``priorkit tune`` on one study at once.

The module is over 500 lines because the study's objective, its storage and its
retry rules for failed and abandoned trials work on the same Optuna objects
and are read together.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import PriorkitError
from ..jsonfile import read_json, write_json
from ..config import PipelineConfig, check_tune_section, config_from_dict, digest
from ..training.data import Split, load_data
from ..training.tasks import is_better
from . import space as sp
from .failures import recorded_failures
from .sampler import apply_sampler, check_sampler

Log = Callable[[str], None]

STUDY_FILE = "study.db"
RESULT_FILE = "tune-result.json"
#: seconds between a running trial's heartbeats, and how long a silent one counts as alive
#: (after that it is failed and retried once); env PRIORKIT_TUNE_HEARTBEAT overrides both as
#: "INTERVAL,GRACE" (the tests shorten them)
HEARTBEAT_S, GRACE_S = 20, 90


def _heartbeat() -> tuple[int, int]:
    value = os.environ.get("PRIORKIT_TUNE_HEARTBEAT")
    if not value:
        return HEARTBEAT_S, GRACE_S
    try:
        interval, grace = (int(x) for x in value.split(","))
    except ValueError:
        raise TuneError(f"PRIORKIT_TUNE_HEARTBEAT={value!r}: expected INTERVAL,GRACE in seconds, e.g. 20,90") from None
    return interval, grace


class TuneError(PriorkitError):
    """A study cannot run as asked (storage, names, budget); the message says what to do."""


@dataclasses.dataclass
class TuneContext:
    """What every trial of one study shares."""

    cfg: PipelineConfig
    raw: dict  # the pipeline as plain data (overrides applied), without `tune`
    dims: list[sp.Dimension]
    root: Path  # runs/<name>/tune
    splits: dict[str, Split]  # "train" (pool) and "eval" (the validation slice)
    metric: str
    log: Log

    @property
    def tune(self):
        return self.cfg.tune

    @property
    def maximize(self) -> bool:
        return is_better(self.metric, 1.0, 0.0)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def carve_validation(cfg: PipelineConfig, train: Split) -> tuple[Split, Split]:
    """(training pool, validation slice) of ``train``: one seeded draw, sorted indices."""
    v = cfg.tune.validation
    n = len(train)
    size = int(v.size) if v.size >= 1 else int(round(v.size * n))
    if not 1 <= size < n:
        raise TuneError(f"{cfg.where('tune.validation.size')}: tune.validation.size={v.size:g} holds out "
                        f"{size} of {n} training examples; keep at least one for each side")
    perm = np.random.default_rng(v.seed).permutation(n)
    val_idx, pool_idx = np.sort(perm[:size]), np.sort(perm[size:])
    pool = [train.examples[i] for i in pool_idx]
    val = [train.examples[i] for i in val_idx]
    return (Split("train", pool, f"{train.origin} minus the validation slice", digest(pool)),
            Split("eval", val, f"validation slice of {train.origin} ({size} examples, seed {v.seed})",
                  digest(val)))


def base_raw(cfg_raw: dict) -> dict:
    """The pipeline dict a trial starts from: no tune/sweep sections."""
    return {k: copy.deepcopy(v) for k, v in cfg_raw.items() if k not in ("tune", "sweep")}


def trial_config(ctx: TuneContext, params: dict[str, Any], seed: int, *, baseline: bool = False) -> PipelineConfig:
    """The pipeline of one trial run (or of the baseline): space applied, data and outputs redirected."""
    raw = base_raw(ctx.raw)
    if baseline:
        raw["prior"] = None
    else:
        raw = sp.apply(raw, ctx.dims, params)  # sampled train.* fields are this trial's own
    tag = "baseline" if baseline else "trials/" + params_digest(params)
    raw["output_dir"] = str(ctx.root / tag)
    data = raw.setdefault("data", {})
    data["eval"] = copy.deepcopy(data["train"])  # scored split = the validation slice (passed in)
    data.pop("test", None)
    raw["evaluate"] = ["eval"]
    train = raw.setdefault("train", {})
    train.update(fraction=ctx.tune.fraction, seed=seed, save="no", keep_checkpoints=False)
    prior = raw.get("prior")
    if isinstance(prior, dict) and prior.get("cache", "auto") == "auto":
        prior["cache"] = str(ctx.root / "cache" / "priors.duckdb")  # one cache for all trials
    return config_from_dict(raw, source=f"{ctx.cfg.source} (tune trial)")


def params_digest(params: dict[str, Any]) -> str:
    from ..checksums import data_sha256

    return data_sha256(json.dumps(params, sort_keys=True, default=str).encode())[:12]


# ---------------------------------------------------------------------------
# one run with per-epoch scores
# ---------------------------------------------------------------------------
class EpochScores:
    """A ``TrainerCallback`` collecting the validation score after each epoch and asking a
    reporter whether to stop (pruning)."""

    def __init__(self, metric: str, report: Callable[[float, int], bool] | None) -> None:
        from transformers import TrainerCallback

        outer = self
        self.metric, self.report, self.scores, self.stopped = metric, report, [], False

        class _Callback(TrainerCallback):
            def on_evaluate(self, args, state, control, metrics=None, **kwargs):
                value = (metrics or {}).get(f"eval_{outer.metric}")
                if value is None:
                    return
                outer.scores.append(float(value))
                if outer.report is not None and outer.report(float(value), len(outer.scores)):
                    outer.stopped = True
                    control.should_training_stop = True

        self.callback = _Callback()


def scored_run(ctx: TuneContext, cfg: PipelineConfig, name: str, seed: int,
               report: Callable[[float, int], bool] | None = None) -> dict[str, Any]:
    """Train one run, scoring the validation slice after each epoch; cached by train key.

    Returns {"scores": [per epoch], "pruned": bool, "seconds": float}.  A cached result
    replays its scores through ``report`` (so the pruner sees the same curve).
    """
    from ..training.steps import precompute_step
    from ..training.plan import RunPlan, plan_for_run
    from ..training.train import train_run

    plan: RunPlan = plan_for_run(cfg)
    plan = dataclasses.replace(plan, prior_name=name)
    key = plan.train_key(ctx.splits["train"])
    result_file = plan.run_dir / RESULT_FILE
    cached = _read(result_file)
    if cached and cached.get("train_key") == key and cached.get("eval") == ctx.splits["eval"].digest:
        for epoch, value in enumerate(cached["scores"], start=1):
            if report is not None and report(value, epoch):
                return {**cached, "pruned": True, "cached": True}
        if not cached.get("pruned"):
            return {**cached, "cached": True}
    if plan.prior is not None:
        precompute_step(cfg, name, plan.prior, ctx.splits, log=lambda m: None)
    collect = EpochScores(ctx.metric, report)
    t0 = time.perf_counter()
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    train_run(plan, ctx.splits, resume=False, callbacks=[collect.callback], eval_each_epoch="eval")
    out = {"train_key": key, "eval": ctx.splits["eval"].digest, "scores": collect.scores,
           "pruned": collect.stopped, "seconds": round(time.perf_counter() - t0, 1), "seed": seed}
    _write(result_file, out)
    _drop_model(plan.run_dir)
    return out


def _drop_model(run_dir: Path) -> None:
    """Trial models are not kept (the final runs retrain the best setting)."""
    import shutil

    shutil.rmtree(run_dir / "model", ignore_errors=True)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)


_read = read_json


def _write(path: Path, data: Any) -> None:
    write_json(path, data, indent=1)


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive ``fcntl`` lock on ``path`` (created); yields False when ``wait`` is off
    and another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield True
    finally:
        fh.close()


def baselines(ctx: TuneContext) -> dict[int, list[float]]:
    """Per-epoch validation scores of the no-prior model for every tune seed (trained once)."""
    out = {}
    with file_lock(ctx.root / "baseline.lock"):  # parallel processes train it once
        for seed in ctx.tune.seeds:
            cfg = trial_config(ctx, {}, seed, baseline=True)
            res = scored_run(ctx, cfg, "none", seed)
            out[seed] = res["scores"]
            if not res.get("cached"):
                ctx.log(f"baseline seed {seed}: {ctx.metric} {res['scores'][-1]:.4f} "
                        f"(epochs {', '.join(f'{x:.4f}' for x in res['scores'])}) in {res['seconds']:.0f}s")
    return out


# ---------------------------------------------------------------------------
# the study
# ---------------------------------------------------------------------------
def storage_url(ctx_root: Path, storage: str | None) -> str:
    if storage:
        return storage
    ctx_root.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(ctx_root / STUDY_FILE).resolve()}"


def open_study(cfg: PipelineConfig, root: Path, storage: str | None = None, study_name: str | None = None,
               *, create: bool = True):
    """The Optuna study of ``cfg`` (created on first use, loaded afterwards)."""
    import optuna

    url = storage_url(root, storage)
    name = study_name or cfg.name
    interval, grace = _heartbeat()
    import inspect
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # heartbeats are "experimental" in Optuna, and stable since 2.8
        # optuna 4.9 renamed the callback for trials whose heartbeat went stale
        if "heartbeat_stale_trial_callback" in inspect.signature(optuna.storages.RDBStorage).parameters:
            stale_kw, retry = "heartbeat_stale_trial_callback", optuna.storages.RetryHeartbeatStaleTrialCallback(1)
        else:
            stale_kw, retry = "failed_trial_callback", optuna.storages.RetryFailedTrialCallback(max_retry=1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rdb = optuna.storages.RDBStorage(
                url, heartbeat_interval=interval, grace_period=grace, **{stale_kw: retry},
                engine_kwargs={"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None,
            )
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises many kinds
        raise TuneError(f"cannot open the study storage {url}: {exc}") from None
    maximize = is_better(_metric(cfg), 1.0, 0.0)
    tc = cfg.tune
    sampler = (optuna.samplers.TPESampler(seed=tc.sampler_seed, n_startup_trials=min(8, max(2, tc.trials // 3)))
               if tc.sampler == "tpe" else optuna.samplers.RandomSampler(seed=tc.sampler_seed))
    if not create:
        try:
            return optuna.load_study(study_name=name, storage=rdb, sampler=sampler, pruner=make_pruner(cfg))
        except KeyError:
            raise TuneError(f"no study {name!r} in {url}; run `priorkit tune` first") from None
    return optuna.create_study(study_name=name, storage=rdb, sampler=sampler, pruner=make_pruner(cfg),
                               direction="maximize" if maximize else "minimize", load_if_exists=True)


def make_pruner(cfg: PipelineConfig):
    import optuna

    p = cfg.tune.pruner
    if p.type == "median":
        # steps are 1-based epochs; optuna prunes from step n_warmup_steps on
        return optuna.pruners.MedianPruner(n_startup_trials=p.startup_trials, n_warmup_steps=p.warmup_epochs + 1)
    if p.type == "threshold":
        lower, upper = p.bounds or (None, None)
        return optuna.pruners.ThresholdPruner(lower=lower, upper=upper, n_warmup_steps=p.warmup_epochs + 1)
    if p.type == "hyperband":
        epochs = max(1, int(round(cfg.train.epochs)))
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs, reduction_factor=3)
    return optuna.pruners.NopPruner()


def _metric(cfg: PipelineConfig) -> str:
    return cfg.task.metric


def finished_count(study) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def requeue_interrupted(study, log: Log) -> int:
    """Trials stopped with Ctrl-C are failed; put their settings back in the queue once."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials} | {t.system_attrs.get("failed_trial") for t in trials}
    n = 0
    for t in trials:
        if t.state == TrialState.FAIL and t.user_attrs.get("interrupted") and t.number not in retried:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number}, skip_if_exists=False)
            n += 1
    if n:
        log(f"re-queued {n} interrupted trial(s)")
    return n


def objective_for(ctx: TuneContext, base: dict[int, list[float]]) -> Callable[[Any], float]:
    import optuna

    def objective(trial: optuna.Trial) -> float:
        params = sp.suggest(trial, ctx.dims)
        trial.set_user_attr("setting", params_digest(params))
        scores, deltas, seconds = [], [], 0.0
        with recorded_failures(ctx, trial):
            for i, seed in enumerate(ctx.tune.seeds):
                cfg = trial_config(ctx, params, seed)

                def report(value: float, epoch: int, _first: bool = i == 0) -> bool:
                    if not _first:
                        return False
                    trial.report(value, epoch)
                    return trial.should_prune()

                res = scored_run(ctx, cfg, "trial", seed, report)
                seconds += res.get("seconds", 0.0)
                if res["pruned"]:
                    trial.set_user_attr("epochs", res["scores"])
                    trial.set_user_attr("seconds", seconds)
                    trial.set_user_attr("delta_at_prune", res["scores"][-1] - base[seed][len(res["scores"]) - 1])
                    raise optuna.TrialPruned(f"validation {ctx.metric} {res['scores'][-1]:.4f} after "
                                             f"epoch {len(res['scores'])}")
                scores.append(res["scores"][-1])
                deltas.append(res["scores"][-1] - base[seed][-1])
        trial.set_user_attr("scores", scores)
        trial.set_user_attr("deltas", deltas)
        trial.set_user_attr("delta", float(np.mean(deltas)))
        trial.set_user_attr("seconds", seconds)
        return float(np.mean(scores))

    return objective


def describe_trial(t, metric: str) -> str:
    from optuna.trial import TrialState

    params = ", ".join(f"{_name(k, t.params)}={_short(v)}" for k, v in t.params.items())
    if t.state == TrialState.COMPLETE:
        return (f"trial {t.number}: {metric} {t.value:.4f} (delta {t.user_attrs.get('delta', float('nan')):+.4f}) "
                f"[{params}]")
    if t.state == TrialState.PRUNED:
        epochs = t.user_attrs.get("epochs", [])
        return f"trial {t.number}: pruned after epoch {len(epochs)} [{params}]"
    if t.state == TrialState.FAIL:
        reason = t.user_attrs.get("error") or ("interrupted" if t.user_attrs.get("interrupted") else "")
        return f"trial {t.number}: FAILED ({reason or 'process stopped'}) [{params}]"
    return f"trial {t.number}: {t.state.name.lower()} [{params}]"


def _name(key: str, params: dict[str, Any]) -> str:
    """The last part of a dotted field, or more of it when that would be ambiguous
    (``prior.attention.learning_rate`` and ``train.learning_rate`` in one trial)."""
    parts = key.split(".")
    for n in range(1, len(parts) + 1):
        tail = ".".join(parts[-n:])
        if sum(other == tail or other.endswith("." + tail) for other in params) == 1:
            return tail
    return key


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def prepare(cfg: PipelineConfig, raw: dict, *, log: Log = print) -> TuneContext:
    """Check the space (before any training) and carve the validation slice."""
    from ..providers.plugins import list_providers

    check_tune_section(cfg)
    dims = sp.check_space(cfg, raw, {e.name for e in list_providers()})

    check_sampler(cfg, None, dims)
    splits = load_data(_train_only(cfg, raw))
    pool, val = carve_validation(cfg, splits["train"])
    root = cfg.out_dir / "tune"
    return TuneContext(cfg, {k: v for k, v in raw.items() if k != "tune"}, dims, root,
                       {"train": pool, "eval": val}, _metric(cfg), log)


def _train_only(cfg: PipelineConfig, raw: dict) -> PipelineConfig:
    """The pipeline reading only data.train (trials never touch eval/test)."""
    r = base_raw(raw)
    r["data"] = {"train": copy.deepcopy(raw["data"]["train"]), "eval": copy.deepcopy(raw["data"]["train"])}
    r["evaluate"] = ["eval"]
    return config_from_dict(r, source=cfg.source)


def run_study(ctx: TuneContext, *, storage: str | None = None, study_name: str | None = None,
              trials: int | None = None, timeout: float | None = None):
    """Run trials until the study holds ``trials`` finished ones (or ``timeout`` passes)."""
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # failed trials are reported by on_trial
    study = open_study(ctx.cfg, ctx.root, storage, study_name)
    _record_setup(study, ctx)

    target = trials or apply_sampler(study, ctx.cfg, ctx.dims, auto=False)
    done = finished_count(study)
    if done >= target:
        ctx.log(f"study {study.study_name}: {done} finished trial(s), the budget is {target}: nothing to run")
        return study
    requeue_interrupted(study, ctx.log)
    ctx.log(f"study {study.study_name} in {storage or ctx.root / STUDY_FILE}: {done}/{target} trials finished; "
            f"validation slice {len(ctx.splits['eval'])} examples, training pool {len(ctx.splits['train'])}, "
            f"fraction {ctx.tune.fraction:g}, seeds {ctx.tune.seeds}")
    base = baselines(ctx)
    ctx.log("baseline (no prior): " + ", ".join(f"seed {s} {v[-1]:.4f}" for s, v in base.items()))

    def on_trial(study: optuna.Study, t: optuna.trial.FrozenTrial) -> None:
        ctx.log(describe_trial(t, ctx.metric) + f"  [{finished_count(study)}/{target}]")

    stop = optuna.study.MaxTrialsCallback(target, states=(TrialState.COMPLETE, TrialState.PRUNED))
    study.optimize(objective_for(ctx, base), timeout=timeout, callbacks=[on_trial, stop],
                   catch=(Exception,), gc_after_trial=False)
    return study


def _record_setup(study, ctx: TuneContext) -> None:
    """The study remembers what it tunes; a changed pipeline is refused, not mixed in."""
    identity = digest({"space": [dataclasses.asdict(d.space) | {"path": d.path} for d in ctx.dims],
                       "fraction": ctx.tune.fraction, "seeds": ctx.tune.seeds,
                       "validation": dataclasses.asdict(ctx.tune.validation),
                       "base": base_raw(ctx.raw)})
    saved = study.user_attrs.get("setup")
    if saved is None:
        study.set_user_attr("setup", identity)
        study.set_user_attr("pipeline", ctx.cfg.source)
    elif saved != identity:
        raise TuneError(
            f"study {study.study_name!r} was started with another space, data or pipeline "
            f"(setup {saved}, now {identity}); use --study NEW_NAME (or another output_dir) for a new study, "
            "or restore the pipeline to resume this one"
        )

"""``train.report_to``: training curves in TensorBoard, MLflow or any tracker Hugging Face knows.

The names are Hugging Face's (``TrainingArguments.report_to``): ``none`` (the
default), ``all`` (every installed tracker), or one name or a list of them
(``tensorboard``, ``mlflow``, ``wandb`` ...).  The Trainer's own callbacks do the
logging; priorkit only decides where the files go, so that every run of a sweep
or a tune study can be found again:

* TensorBoard: event files in ``<run folder>/tensorboard/`` (``TENSORBOARD_LOGGING_DIR``);
* MLflow: unless ``MLFLOW_TRACKING_URI`` is set, a local store, the SQLite file
  ``<output_dir>/mlflow.db`` shared by the pipeline's runs, experiment = the
  pipeline's name (unless ``MLFLOW_EXPERIMENT_NAME`` is set), one MLflow run per
  priorkit run, named by its label; its id is kept in ``<run folder>/trackers.json``
  so a resumed training and the evaluate step log into the same MLflow run.

The evaluate step adds the task scores of every evaluated split (and the prior-usage
shift, see prior_usage.py) at the last training step: the Trainer itself only logs
the loss (and, in ``priorkit tune``, the per-epoch validation score).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..config.trackers import EXTRAS, installed, known, names, problem  # noqa: F401 (the names' checks)
from ..errors import PriorkitError

STATE_FILE = "trackers.json"
TENSORBOARD_DIR = "tensorboard"
def _state(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


#: MLflow's local store in the pipeline's output folder (MLflow 3 keeps its plain-folder
#: ``file:`` store in maintenance mode and refuses it by default; SQLite is its local default)
MLFLOW_DB = "mlflow.db"


def _mlflow_uri(cfg: Any) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{cfg.out_dir.resolve() / MLFLOW_DB}"


def study_store(cfg: Any, root: Path) -> None:
    """``priorkit tune``: every trial (each has its own output folder) logs into the study's
    MLflow store ``<study folder>/mlflow.db``, experiment ``<name>-tune``, unless the
    environment already names them."""
    if "mlflow" not in names(cfg.train.report_to):
        return
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{Path(root).resolve() / MLFLOW_DB}")
    os.environ.setdefault("MLFLOW_EXPERIMENT_NAME", f"{cfg.name}-tune")


def _mlflow_run(plan: Any) -> str:
    """The MLflow run of this priorkit run: created once, its id kept in trackers.json."""
    from mlflow.tracking import MlflowClient

    state = _state(plan.run_dir)
    uri = _mlflow_uri(plan.cfg)
    if state.get("mlflow_run_id") and state.get("mlflow_uri") == uri:
        return state["mlflow_run_id"]
    client = MlflowClient(tracking_uri=uri)
    experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or plan.cfg.name
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run = client.create_run(experiment_id, run_name=plan.label.replace(" ", "_"),
                            tags={"priorkit.run_dir": str(plan.run_dir), "priorkit.prior": plan.prior_name, "priorkit.fraction": str(plan.fraction),
                                  "priorkit.seed": str(plan.seed)})
    client.set_terminated(run.info.run_id)  # the Trainer's callback reopens it
    state.update(mlflow_run_id=run.info.run_id, mlflow_uri=uri, mlflow_experiment=experiment)
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    (plan.run_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
    return run.info.run_id


def prepare(plan: Any) -> list[str]:
    """The ``report_to`` list for this run's Trainer, with the trackers' places set (see the module doc).

    Sets the environment the Trainer's callbacks read (TensorBoard when the Trainer is
    made, MLflow when training begins); :class:`RestoreEnvironment` puts it back.
    """
    wanted = names(plan.cfg.train.report_to)
    if not wanted:
        return []
    why = problem(plan.cfg.train.report_to)
    if why:
        raise PriorkitError(f"{plan.cfg.where('train.report_to')}: {why}")
    from . import ranks

    _before.clear()
    _before.update({k: os.environ.get(k) for k in _OURS})
    if not ranks.is_main():
        return wanted  # the trackers' callbacks log from the main process only
    if "tensorboard" in wanted:
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(plan.run_dir / TENSORBOARD_DIR)
    if "mlflow" in wanted:
        os.environ["MLFLOW_TRACKING_URI"] = _mlflow_uri(plan.cfg)
        os.environ["MLFLOW_RUN_ID"] = _mlflow_run(plan)
    return wanted


_OURS = ("TENSORBOARD_LOGGING_DIR", "MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")
#: the variables as they were before the last :func:`prepare`
_before: dict[str, str | None] = {}


def restore_environment() -> Any:
    """A ``TrainerCallback`` that puts back, at the end of training, the variables :func:`prepare` set."""
    from transformers import TrainerCallback

    before = dict(_before)

    class RestoreEnvironment(TrainerCallback):
        def on_train_end(self, args, state, control, **kwargs):
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    return RestoreEnvironment()


def log_scores(plan: Any, scores: dict[str, dict[str, float]], usage: dict | None) -> list[str]:
    """Add the evaluate step's scores (``<split>/<metric>``) to the run's trackers; returns their names."""
    wanted = names(plan.cfg.train.report_to)
    if not wanted:
        return []
    values = {f"{split}/{k}": float(v) for split, s in scores.items() for k, v in s.items()
              if isinstance(v, (int, float)) and k not in ("examples", "seconds")}
    if usage and usage.get("shift") is not None:
        values["prior_usage/shift"] = float(usage["shift"])
    step = int(((_read_meta(plan) or {}).get("train") or {}).get("steps") or 0)
    done = []
    if "tensorboard" in wanted:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(log_dir=str(plan.run_dir / TENSORBOARD_DIR))
        for k, v in values.items():
            writer.add_scalar(k, v, step)
        writer.close()
        done.append("tensorboard")
    if "mlflow" in wanted:
        from mlflow.tracking import MlflowClient

        run_id = _mlflow_run(plan)
        client = MlflowClient(tracking_uri=_state(plan.run_dir).get("mlflow_uri") or _mlflow_uri(plan.cfg))
        for k, v in values.items():
            client.log_metric(run_id, k, v, step=step)
        done.append("mlflow")
    return done


def _read_meta(plan: Any) -> dict | None:
    """The run's record in its model folder (priorkit.json's ``run``)."""
    from ..inference.manifest import read_run
    from .layout import MODEL_DIR

    return read_run(plan.run_dir / MODEL_DIR)

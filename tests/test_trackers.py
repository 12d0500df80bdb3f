"""train.report_to: a tiny real run logs its loss and task metric to TensorBoard and MLflow (local file store)."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("mlflow")


def pipeline(tmp: Path, model: Path, report_to: str) -> Path:
    path = tmp / "p.yaml"
    path.write_text(f"name: tracked\noutput_dir: {tmp / 'runs'}\nmodel: {{name_or_path: {model}, max_length: 24}}\n"
                    + textwrap.dedent("""\
                        task: {type: regression, label_scale: 5.0}
                        data:
                          train: {source: stsb, split: train, sample: 16, sample_seed: 1}
                          eval: {source: stsb, split: dev, sample: 8}
                        prior: {name: paper, preset: paper, attention: {layers: [0], mode: learned_bias}}
                        """)
                    + "train: {epochs: 2, learning_rate: 1.0e-3, batch_size: 8, progress: false, threads: 1, "
                      f"logging_steps: 1, save: 'no', report_to: {report_to}}}\n")
    return path


def test_tensorboard_and_mlflow_hold_loss_and_task_metric(tmp_path, tiny_bert_dir, monkeypatch):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "TENSORBOARD_LOGGING_DIR"):
        monkeypatch.delenv(var, raising=False)
    cfg = load_config(str(pipeline(tmp_path, tiny_bert_dir, "[tensorboard, mlflow]")), ())
    result = run_pipeline(cfg, log=lambda m: None)
    run_dir = result.plan.run_dir
    spearman = result.metrics["metrics"]["eval"]["spearman"]
    steps = result.metrics["train"]["steps"]
    assert steps == 4

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert "train/loss" in tags and "eval/spearman" in tags
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3, 4]
    assert events.Scalars("eval/spearman")[-1].value == pytest.approx(spearman, abs=1e-6)
    assert events.Scalars("prior_usage/shift")[-1].value == pytest.approx(
        result.metrics["prior_usage"]["shift"], abs=1e-6)

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tracked")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "paper_fraction=1_seed=0" and run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [1, 2, 3, 4]
    assert run.data.metrics["eval/spearman"] == pytest.approx(spearman, abs=1e-6)
    assert run.data.params["learning_rate"] == "0.001"
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "TENSORBOARD_LOGGING_DIR"):
        assert var not in os.environ  # put back after training


def test_report_to_names_what_is_installed(tmp_path, tiny_bert_dir):
    from priorkit.config import ConfigError, load_config
    from priorkit.training.trackers import installed, known

    path = pipeline(tmp_path, tiny_bert_dir, "tensorbord")
    with pytest.raises(ConfigError) as err:
        load_config(str(path), ())
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("train:"))
    assert str(err.value).startswith(f"{path}:{line}: train.report_to: 'tensorbord' is not a tracker Hugging Face "
                                     "knows (did you mean 'tensorboard'?); installed: ")
    assert "mlflow, tensorboard" in str(err.value)
    absent = next((n for n in known() if n not in installed()), None)
    if absent is not None:
        with pytest.raises(ConfigError, match=rf"'{absent}' is not installed \(pip install .*\); "
                                              r"installed trackers: .*tensorboard"):
            load_config(str(path), (f"train.report_to={absent}",))
    assert load_config(str(path), ("train.report_to=none",)).train.report_to == "none"

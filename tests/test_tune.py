"""``priorkit tune``: the space is checked before training (file:line), a tiny study prunes,
survives kill -9 and resumes, records a failed trial and goes on, and ends with a best.yaml
that ``priorkit run`` accepts and a seeded final comparison.

The studies run a real (tiny, randomly initialised) BERT with the MiniLM's real tokenizer on
real STS-B pairs, the real WordNet prior and a real SQLite study file.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from priorkit.config import ConfigError, load_config, prior_settings
from priorkit.tune import space as sp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_model(tiny_bert_dir):
    return tiny_bert_dir


def pipeline(tmp_path: Path, model: Path, tune: str, *, epochs: int = 2, name: str = "t") -> Path:
    text = textwrap.dedent(f"""\
        name: {name}
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {model}, max_length: 40}}
        task: {{type: regression, label_scale: 5.0}}
        data:
          train: {{source: stsb, split: train, sample: 90, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 30}}
        prior:
          name: paper
          preset: paper
          attention: {{layers: [0], mode: multiply}}
        train: {{epochs: {epochs}, learning_rate: 1.0e-3, batch_size: 16, eval_batch_size: 64, progress: false,
                 threads: 1, logging_steps: 100}}
        """) + textwrap.dedent(tune)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def priorkit(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


def peek_trials(path: Path) -> list[tuple[int, str, float | None, int]]:
    """(number, state, value, has a heartbeat and all its parameters) of every trial, through a
    read-only connection.  The heartbeat can come before the last parameter is suggested; the
    objective records ``setting`` once every parameter is, so a trial killed after both is
    retried with exactly its parameters.

    ``optuna.load_study`` would create Optuna's tables itself when it meets a database that
    the tuning process is still creating, and then race it ("table ... already exists").
    """
    import sqlite3

    if not path.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(
                "SELECT t.number, t.state, v.value, h.trial_id IS NOT NULL AND EXISTS ("
                "  SELECT 1 FROM trial_user_attributes a WHERE a.trial_id = t.trial_id AND a.key = 'setting') "
                "FROM trials t "
                "LEFT JOIN trial_values v ON v.trial_id = t.trial_id AND v.objective = 0 "
                "LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:  # tables not created yet, or the file is locked
        return []


def load_study(path: Path, name: str):
    import optuna

    return optuna.load_study(study_name=name, storage=f"sqlite:///{path}")


# --------------------------------------------------------------------------- checks before training

BAD_SPACES = [
    ("prior.attention.mdoe: {choice: [bias]}", "unknown field; did you mean 'prior.attention.mode'"),
    ("train.learning_rate: {low: 1.0e-3, high: 1.0e-4}", "empty or inverted"),
    ("train.learning_rate: {low: 1.0e-3, high: 1.0e-3}", "empty or inverted"),
    ("prior.attention.mode: {choice: []}", "is empty"),
    ("prior.provider: {choice: [wordnet, wordnett]}", "unknown provider 'wordnett'"),
    ("prior.attention.mode: {choice: [multiply, sideways]}", "sideways"),
    ("prior.attention.options.lam: {low: 0.1, high: 1.0, when: {prior.attention.mode: bias}}", "not an earlier entry"),
    ("train.learning_rate: {low: 0.0, high: 1.0e-4, log: true}", "log range needs low > 0"),
    ("data.train.sample: {choice: [10, 20]}", "only fields under prior, train, model"),
]


@pytest.mark.parametrize("entry,message", BAD_SPACES)
def test_bad_space_stops_with_file_and_line(tmp_path, entry, message):
    path = pipeline(tmp_path, Path("unused"), f"""\
        tune:
          trials: 2
          space:
            train.epochs: {{choice: [1, 2]}}
            {entry}
        """)
    cfg = load_config(path)
    import priorkit

    with pytest.raises(ConfigError) as err:
        sp.check_space(cfg, cfg.raw, {e.name for e in priorkit.list_providers()})
    text = str(err.value)
    assert text.startswith(f"{path}:18:"), text  # the line of the bad entry
    assert message in text, text


def test_bad_tune_fields_stop_before_training(tmp_path):
    path = pipeline(tmp_path, Path("unused"), """\
        tune:
          trails: 3
          space: {train.epochs: {choice: [1, 2]}}
        """)
    with pytest.raises(ConfigError, match=r":15: tune.trails: unknown field; did you mean 'tune.trials'"):
        load_config(path)
    result = priorkit("tune", str(path), "--dry-run")
    assert result.returncode != 0 and "tune.trails" in result.stderr


def test_space_sampling_respects_conditions():
    import optuna

    from priorkit.config import ParamSpace

    dims = [sp.Dimension("prior.attention.mode", ParamSpace(choice=["bias", "gate"]), ("bias", "gate"),
                         ("bias", "gate")),
            sp.Dimension("prior.attention.options.lam", ParamSpace(low=0.1, high=1.0,
                                                                   when={"prior.attention.mode": "bias"})),
            sp.Dimension("prior.attention.layers", ParamSpace(choice={"a": [0], "b": [0, 1]}), ("a", "b"),
                         ([0], [0, 1]))]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    for _ in range(12):
        trial = study.ask()
        params = sp.suggest(trial, dims)
        assert ("prior.attention.options.lam" in params) == (params["prior.attention.mode"] == "bias")
        raw = sp.apply({"prior": {"attention": {"options": {}}}}, dims, params)
        assert raw["prior"]["attention"]["layers"] in ([0], [0, 1])
        seen.add(params["prior.attention.mode"])
        study.tell(trial, 0.0)
    assert seen == {"bias", "gate"}


# --------------------------------------------------------------------------- studies

PRUNING = """\
    tune:
      trials: 3
      fraction: 1.0
      seeds: [0]
      validation: {size: 30}
      sampler: random
      pruner: {type: threshold, bounds: [2.0, null], warmup_epochs: 1}   # Spearman never reaches 2: all pruned after epoch 2
      space:
        prior.attention.mode: {choice: [multiply, bias, learned_bias, supervise]}
        train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}
    """


def test_study_prunes_every_trial_below_the_threshold(tmp_path, tiny_model):
    path = pipeline(tmp_path, tiny_model, PRUNING, epochs=3)
    result = priorkit("tune", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    study = load_study(tmp_path / "runs" / "tune" / "study.db", "t")
    states = [t.state.name for t in study.trials]
    assert states == ["PRUNED"] * 3, states
    # pruned after the second of three epochs: the pruner stopped training
    assert all(len(t.user_attrs["epochs"]) == 2 for t in study.trials)
    assert all(sorted(t.intermediate_values) == [1, 2] for t in study.trials)
    assert "pruned after epoch 2" in result.stdout
    assert "no complete trial yet" in result.stdout
    trials_md = (tmp_path / "runs" / "tune" / "trials.md").read_text()
    assert "3 trials (3 pruned)" in trials_md
    # the baseline was trained once, with per-epoch validation scores, and is cached
    base = json.loads(next((tmp_path / "runs" / "tune" / "baseline").rglob("tune-result.json")).read_text())
    assert len(base["scores"]) == 3
    again = priorkit("tune", str(path), "--trials", "4")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "baseline seed" not in again.stdout  # not retrained
    assert len(load_study(tmp_path / "runs" / "tune" / "study.db", "t").trials) == 4


RESUMABLE = """\
    tune:
      trials: 4
      fraction: 1.0
      seeds: [0]
      validation: {size: 30}
      sampler: random
      pruner: {type: none}
      space:
        prior.attention.mode: {choice: [multiply, bias, learned_bias, supervise]}
        train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}
      final: {seeds: [0], split: eval}
    """


def test_study_resumes_after_kill_9_without_losing_finished_trials(tmp_path, tiny_model):
    path = pipeline(tmp_path, tiny_model, RESUMABLE, epochs=3)
    db = tmp_path / "runs" / "tune" / "study.db"
    env = {"PRIORKIT_TUNE_HEARTBEAT": "1,3"}
    proc = subprocess.Popen([sys.executable, "-m", "priorkit", "tune", str(path), "--no-final"], cwd=ROOT,
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    import optuna

    finished: dict[int, float] = {}
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            rows = peek_trials(db)
            complete = {n: v for n, state, v, _ in rows if state == "COMPLETE"}
            # a trial killed before its first heartbeat is never seen as dead by Optuna (it
            # cannot be told from one another process has just started): wait for the beat
            running = [n for n, state, _, beat in rows if state == "RUNNING" and beat]
            if complete and running:  # one trial done, the next one in flight
                finished = complete
                os.kill(proc.pid, signal.SIGKILL)
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert finished, "the study never had a finished and a running trial at once"
    killed = [t.number for t in load_study(db, "t").trials if t.state == optuna.trial.TrialState.RUNNING]
    assert len(killed) == 1
    time.sleep(4)  # past the heartbeat grace period: the killed trial counts as dead
    result = priorkit("tune", str(path), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    study = load_study(db, "t")
    by_number = {t.number: t for t in study.trials}
    for number, value in finished.items():  # nothing finished was lost or redone
        assert by_number[number].state == optuna.trial.TrialState.COMPLETE
        assert by_number[number].value == value
    assert by_number[killed[0]].state == optuna.trial.TrialState.FAIL
    retries = [t for t in study.trials if t.system_attrs.get("failed_trial") == killed[0]]
    assert len(retries) == 1 and retries[0].params == by_number[killed[0]].params
    assert sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials) == 4
    # the end of the study: best.yaml that `priorkit run` accepts, and the final comparison
    best = tmp_path / "runs" / "tune" / "best.yaml"
    assert best.exists()
    plan = priorkit("run", str(best), "--print-config")
    assert plan.returncode == 0, plan.stderr
    final = (tmp_path / "runs" / "tune" / "final.md").read_text()
    assert "| 1 | none |" in final and "| 1 | paper |" in final and "| 1 | tuned-" in final
    assert (tmp_path / "runs" / "tune" / "history.png").stat().st_size > 1000
    assert (tmp_path / "runs" / "tune" / "importance.png").exists() or \
        (tmp_path / "runs" / "tune" / "importance.txt").exists()


def test_a_failing_trial_is_recorded_and_the_study_goes_on(tmp_path, tiny_model):
    path = pipeline(tmp_path, tiny_model, """\
        tune:
          trials: 2
          fraction: 1.0
          validation: {size: 30}
          pruner: {type: none}
          space:
            prior.params: {choice: {xia: {}, broken: {measure: no-such-measure}}}
        """, epochs=1)
    import optuna

    from priorkit.tune import prepare, run_study
    from priorkit.tune.study import open_study

    cfg = load_config(path)
    ctx = prepare(cfg, cfg.raw, log=lambda m: None)
    study = open_study(cfg, ctx.root)
    study.enqueue_trial({"prior.params": "broken"})
    study.enqueue_trial({"prior.params": "xia"})
    study.enqueue_trial({"prior.params": "xia"})
    study = run_study(ctx)
    states = [t.state for t in study.trials]
    assert states[0] == optuna.trial.TrialState.FAIL
    assert "no-such-measure" in study.trials[0].user_attrs["error"]
    assert "no-such-measure" in (ctx.root / "errors" / "trial-0.txt").read_text()
    assert states[1:] == [optuna.trial.TrialState.COMPLETE] * 2
    # the same setting twice: the second reuses the first's cached run
    assert study.trials[1].value == study.trials[2].value


def test_trial_lines_keep_same_named_parameters_apart():
    """Two sampled fields with one last part (two learning rates) are printed distinguishably."""
    from priorkit.tune.study import _name

    params = {"prior.attention.learning_rate": 0.02, "train.learning_rate": 6e-5, "prior.attention.mode": "bias"}
    assert [_name(k, params) for k in params] == ["attention.learning_rate", "train.learning_rate", "mode"]


def test_best_yaml_names_the_training_control_when_train_fields_were_tuned(tmp_path):
    """A tuned learning rate can win without the prior: best.yaml gives the no-prior control
    sweep at the same training fields, and that command loads as a valid pipeline."""
    import shlex

    import yaml

    from priorkit.config import load_config
    from priorkit.tune.report import control_command

    raw = {"name": "job", "data": {"train": {"source": "stsb", "split": "train"}, "eval": {"source": "stsb", "split": "dev"},
                    "test": {"source": "stsb", "split": "test"}},
           "prior": {"name": "tuned-x", "preset": "paper", "train": {"learning_rate": 1.5e-4}},
           "sweep": {"fractions": [0.1], "seeds": [0, 1], "priors": {"none": None, "tuned-x": {}}, "split": "test"}}
    assert control_command({**raw, "prior": {**raw["prior"], "train": {}}}) is None
    command = control_command(raw)
    path = tmp_path / "best.yaml"
    path.write_text(yaml.safe_dump(raw))
    args = shlex.split(command.replace("THIS_FILE", str(path)))
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    cfg = load_config(path, overrides=overrides)
    assert cfg.name == "job-train-control" and cfg.train.learning_rate == 1.5e-4
    assert list(prior_settings(cfg)) == ["none"] and cfg.sweep.seeds == [0, 1] and cfg.sweep.split == "test"

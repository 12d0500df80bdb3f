"""``tune.arms``: bad arms stop at file:line before training; a tiny study tunes every arm
(no prior included) on its own grid, and the final table compares the best prior arm with
the best no-prior arm and with its shuffled control, with the power columns.

Real tiny BERT with the MiniLM tokenizer, real STS-B pairs, real WordNet, real SQLite."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from priorkit.config import ConfigError, load_config
from priorkit.tune import arms as am
from priorkit.tune import sampler as smp

ROOT = Path(__file__).resolve().parents[1]


def pipeline(tmp_path: Path, model: Path | str, tune: str, *, name: str = "a") -> Path:
    text = textwrap.dedent(f"""\
        name: {name}
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {model}, max_length: 40}}
        task: {{type: regression, label_scale: 5.0}}
        data:
          train: {{source: stsb, split: train, sample: 80, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 24}}
        prior:
          provider: wordnet
          params: {{measure: wup}}
          attention: {{layers: [0], mode: multiply}}
        train: {{epochs: 1, learning_rate: 1.0e-3, batch_size: 16, eval_batch_size: 64, progress: false,
                 threads: 1, logging_steps: 100}}
        """) + textwrap.dedent(tune)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


ARMS = """\
tune:
  trials: 2
  fraction: 1.0
  validation: {size: 20}
  pruner: {type: none}
  final: {seeds: [0, 1], split: eval}
  arms:
    none:
      prior: null
      space: {train.learning_rate: {choice: [1.0e-3, 3.0e-3]}}
    wordnet:
      prior: {}
      space: {train.learning_rate: {choice: [1.0e-3, 3.0e-3]}}
    shuffled:
      prior: {provider: shuffled, params: {provider: wordnet, params: {measure: wup}, seed: 0}}
      control_of: wordnet
      space: {train.learning_rate: {choice: [1.0e-3, 3.0e-3]}}
"""


def _check(path):
    import priorkit

    cfg = load_config(path)
    return am.check_arms(cfg, cfg.raw, {e.name for e in priorkit.list_providers()})


@pytest.mark.parametrize("tune, line, words", [
    ("tune:\n  arms:\n    none: {prior: null, space: {train.learning_rate: {choice: [1.0e-4]}}}\n"
     "    wn:\n      prior: {}\n      space: {}\n", 19, "arm 'wn' has an empty space"),
    ("tune:\n  arms:\n    wn: {prior: {}, space: {train.learning_rate: {choice: [1.0e-4]}}}\n", 15,
     "needs an arm with prior: null"),
    ("tune:\n  arms:\n    none: {prior: null, space: {train.learning_rate: {choice: [1.0e-4]}}}\n"
     "    ctl:\n      prior: {}\n      control_of: nobody\n      space: {train.epochs: {choice: [1]}}\n", 19,
     "'nobody' is not an arm"),
    ("tune:\n  arms:\n    none: {prior: null, space: {train.learning_rate: {choice: [1.0e-4]}}}\n"
     "    ctl:\n      prior: {provider: shuffled, params: {seed: 2}}\n"
     "      space: {train.epochs: {choice: [1]}}\n", 18, "tune.arms.ctl.prior.params: shuffled needs params.provider"),
    ("tune:\n  arms:\n    none: {prior: null, space: {train.learning_rate: {choice: [1.0e-4]}}}\n"
     "    wn:\n      prior: {}\n      space:\n        train.learning_rate: {low: 0.0, high: 1.0e-3, log: true}\n",
     20, "tune.arms.wn.space.train.learning_rate.low: a log range needs low > 0"),
])
def test_bad_arms_stop_with_file_and_line(tmp_path, tune, line, words):
    path = pipeline(tmp_path, "unused", tune)
    with pytest.raises(ConfigError) as err:
        _check(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}:"), msg
    assert words in msg, msg


def test_finite_spaces_get_a_grid_sized_budget(tmp_path):
    path = pipeline(tmp_path, "unused", ARMS.replace("trials: 2", "trials: 5"))
    cfg = load_config(path)
    checked = _check(path)
    dims = checked["none"][2]
    assert smp.grid_space(dims) == {"train.learning_rate": [1.0e-3, 3.0e-3]}
    assert smp.uses_grid(cfg, dims) and smp.grid_size(dims) == 2
    small = load_config(pipeline(tmp_path, "unused", ARMS.replace("trials: 2", "trials: 1"), name="b"))
    assert not smp.uses_grid(small, dims)  # a budget below the grid samples (tpe)
    assert smp.uses_grid(small, dims, auto=True) is False


def priorkit(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True, timeout=900,
                          env=env, cwd=ROOT)


def test_arms_study_and_final_table(tmp_path, tiny_bert_dir):
    path = pipeline(tmp_path, tiny_bert_dir, ARMS)
    res = priorkit("tune", str(path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    tune = tmp_path / "runs" / "tune"
    # every arm searched its own grid of two learning rates, in one storage file
    import optuna

    for arm in ("none", "wordnet", "shuffled"):
        study = optuna.load_study(study_name=f"a.{arm}", storage=f"sqlite:///{tune / 'study.db'}")
        tried = sorted(t.params["train.learning_rate"] for t in study.trials)
        assert tried == [1.0e-3, 3.0e-3], (arm, tried)
        assert (tune / "final" / f"{arm}.yaml").exists()
    text = (tune / "final.md").read_text()
    assert "MDE (80%)" in text and "| wordnet | none | 2 |" in text and "| wordnet | shuffled | 2 |" in text
    assert "| 1 | wordnet |" in text  # the verdict row
    with open(tune / "final-compare.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["setting"], r["vs"]) for r in rows} == {("wordnet", "none"), ("shuffled", "none"),
                                                      ("wordnet", "shuffled")}
    assert all(int(r["seeds"]) == 2 and float(r["mde"]) >= 0 for r in rows)
    assert (tune / "final.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a second start finds every trial and run done: nothing is trained again
    again = priorkit("tune", str(path))
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("nothing to run") == 3
    assert again.stdout.count("train: skipped (metrics.json is up to date)") == 6, again.stdout

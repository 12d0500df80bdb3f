"""kill -9 during `priorkit run` training and during a Dask ingest (issue 14): the same
command rerun with no step in between resumes and ends right.  The trials live in
tests/support/run_faults.py, shared with benchmarks/cache_faults.py (`--only training,dask`),
which runs more of them (counts in docs/reliability.md)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from support import run_faults as R  # shared with benchmarks/cache_faults.py


@pytest.fixture(scope="module")
def plugins(plugin_dir) -> Path:
    return plugin_dir


def test_kill_during_training_then_rerun_resumes_to_a_model_that_loads(tmp_path, plugins):
    """Killed just after its first checkpoint was written; the rerun resumes from it, trains
    every step, and its model reloads with the scores evaluate recorded.  (The benchmark also
    kills while a checkpoint or the final model is being written.)"""
    trial = R.training_kill_trial(tmp_path, R.tiny_model(tmp_path), plugins, random.Random(0),
                                  when="after-checkpoint")
    assert trial.failures == [], trial
    assert trial.resumed_from is not None and trial.resumed_from.startswith("checkpoint-")


def test_kill_during_the_dask_ingest_then_rerun_gives_the_single_process_values(tmp_path, plugins):
    pytest.importorskip("dask.distributed")
    trial = R.ingest_kill_trial(tmp_path, plugins, random.Random(0))
    assert trial.failures == [], trial
    assert 0 < trial.count_after

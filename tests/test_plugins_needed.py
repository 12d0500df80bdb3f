"""A model trained with a folder plug-in, loaded where that plug-in is not: the error names the
plug-in, where it was loaded from at training time and what to do (priorkit.json's ``plugins``,
priorkit/inference/plugins_needed.py), not "unknown prior provider ... Did you mean ...".  Real
training of a tiny model with the trigram test plug-in (tests/support/plugins/trigram_plugin.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trigram_model(tmp_path_factory, tiny_bert_dir, plugin_dir):
    from priorkit.config import config_from_dict
    from priorkit.training.steps import run_pipeline

    tmp = tmp_path_factory.mktemp("trigram-model")
    old = os.environ.get("PRIORKIT_PLUGINS_DIR")
    os.environ["PRIORKIT_PLUGINS_DIR"] = str(plugin_dir)
    try:
        cfg = config_from_dict({
            "name": "trigram", "output_dir": str(tmp / "runs"),
            "model": {"name_or_path": str(tiny_bert_dir), "max_length": 32},
            "task": {"type": "token-classification"},
            "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 16},
                     "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},
            "prior": {"name": "tri", "provider": "trigram", "layout": "full", "cache": None,
                      "attention": {"mode": "multiply"}},
            "train": {"epochs": 1, "batch_size": 8, "threads": 1, "save": "no", "progress": False},
        })
        result = run_pipeline(cfg, steps=("train",), log=lambda m: None)
    finally:
        if old is None:
            os.environ.pop("PRIORKIT_PLUGINS_DIR", None)
        else:
            os.environ["PRIORKIT_PLUGINS_DIR"] = old
    return result.plan.run_dir / "model"


def _load_elsewhere(folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("PRIORKIT_PLUGINS_DIR", None)
    return subprocess.run([sys.executable, "-c", "import sys, priorkit; priorkit.load_model(sys.argv[1])", str(folder)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_the_folder_records_the_plugins_it_needs_and_where_they_came_from(trigram_model, plugin_dir):
    info = json.loads((trigram_model / "priorkit.json").read_text())
    [record] = [r for r in info["plugins"] if r["name"] == "trigram_plugin"]
    assert record["providers"] == ["trigram"] and record["channels"] == []
    assert Path(record["source"]) == plugin_dir / "trigram_plugin.py"


def test_loaded_without_its_plugin_it_names_the_plugin_its_source_and_what_to_do(trigram_model, plugin_dir):
    got = _load_elsewhere(trigram_model)
    assert got.returncode != 0
    last = got.stderr.strip().splitlines()[-1]
    assert "the model needs plug-in 'trigram_plugin' (its provider 'trigram'), which is not loaded here" in last, last
    assert f"at training time it was loaded from {plugin_dir / 'trigram_plugin.py'}" in last, last
    assert "put trigram_plugin.py in a folder named by PRIORKIT_PLUGINS_DIR" in last, last
    assert "Did you mean" not in got.stderr and "unknown prior provider" not in got.stderr
    # with the plug-in folder named, the same folder loads
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PRIORKIT_PLUGINS_DIR": str(plugin_dir)}
    ok = subprocess.run([sys.executable, "-c", "import sys, priorkit; priorkit.load_model(sys.argv[1])",
                         str(trigram_model)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]


def test_a_folder_saved_before_the_record_names_the_provider_and_its_plugin(trigram_model, tmp_path):
    old = tmp_path / "model"
    shutil.copytree(trigram_model, old)
    info = json.loads((old / "priorkit.json").read_text())
    del info["plugins"]
    (old / "priorkit.json").write_text(json.dumps(info))
    last = _load_elsewhere(old).stderr.strip().splitlines()[-1]
    assert "the model needs provider 'trigram' of plug-in 'trigram_plugin', which is not loaded here" in last, last


def test_provider_names_are_found_nested_in_descriptions():
    from priorkit.inference.plugins_needed import provider_names

    described = {"prior": {"provider": "calibrated", "spec": {"params": {"provider": "meddict", "params": {}}}},
                 "channels": {"features": {"config": {"provider": None}, "provider": {"name": "random-spans",
                                                                                      "params": {"provider": "x"}}}}}
    assert provider_names(described) == {"calibrated", "meddict", "random-spans", "x"}


def test_a_folder_saved_before_the_record_with_a_calibrated_channel_loads_here():
    """A features channel's description holds its providers' describe() beside its config; there an
    inner ``provider`` key carries a fingerprint (``ontology-<hash>``), not a registered name. A
    folder saved before the plug-ins record (bc5cdr-mix's seed-0 model of this session) must load
    when every provider its settings name is here, and still fail on one that is not."""
    from priorkit.errors import PluginError
    from priorkit.inference.plugins_needed import check_plugins

    calibrated = {"provider": "ontology", "params": {"source": "hpo+mesh"}, "drop": [["acth", "mesh:D"]]}
    info = {"prior": {"provider": "ontology", "plugin": "ontology", "fingerprint": "ontology-931856d4e9785ebf"},
            "channels": {"features": {"config": {"provider": "calibrated", "params": calibrated},
                                      "provider": {"name": "calibrated", "params": {
                                          "provider": {"name": "ontology", "provider": "ontology-931856d4e9785ebf"}}}}}}
    check_plugins(info, "old-model/priorkit.json")  # no error: ontology and calibrated are loaded here
    info["channels"]["features"]["config"]["provider"] = "meddict"
    with pytest.raises(PluginError, match="provider 'meddict'"):
        check_plugins(info, "old-model/priorkit.json")

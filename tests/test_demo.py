"""The main job (scripts/demo.sh): its pipeline uses the measured runs' settings, and its
closing summary (scripts/demo_summary.py) computes what it prints."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from priorkit.config import load_config, prior_settings

ROOT = Path(__file__).resolve().parent.parent


def _summary():
    spec = importlib.util.spec_from_file_location("demo_summary", ROOT / "scripts" / "demo_summary.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_demo_pipeline_takes_the_measured_settings():
    demo = load_config(ROOT / "pipelines" / "demo-bc5cdr.yaml")
    curve = load_config(ROOT / "pipelines" / "bc5cdr-curve.yaml")
    assert demo.task.type == "token-classification" and demo.sweep.seeds == [0, 1]
    assert demo.data.train.source == "bc5cdr" and demo.data.train.sample == 160  # 3.5% of 4,560
    assert demo.data.test.split == "test" and demo.sweep.split == "test" and demo.evaluate == ["test"]
    assert list(demo.sweep.priors) == ["none", "features", "attention"] and demo.sweep.baseline == "none"
    mine, theirs = prior_settings(demo), prior_settings(curve)
    assert mine["none"] is None
    for arm in ("features", "attention"):
        assert mine[arm].to_dict() == {**theirs[arm].to_dict(), "cache": mine[arm].to_dict()["cache"]}, arm
    assert demo.train.learning_rate == curve.train.learning_rate == 4.0e-4
    assert demo.sweep.posthoc["dict-override"].merge == "override"
    text = (ROOT / "pipelines" / "demo-bc5cdr.yaml").read_text()
    assert "# 4th arm, knowledge as silver labels" in text  # the marked slot for the labels recipe


def test_f1_table_pairs_by_seed_and_adds_the_dictionary():
    m = _summary()
    scores = {("none", 1.0): {0: 40.0, 1: 50.0}, ("features", 1.0): {0: 55.0, 1: 61.0}}
    lines = m.f1_table(scores, ["none", "features", "attention"], 1.0, "none", 60.0).splitlines()
    assert lines[2] == "| no knowledge | 45.00 | 40.00 50.00 |  |  |  |  |"
    assert lines[3].startswith("| HPO+MeSH token features | 58.00 | 55.00 61.00 | +13.00 | +15.00 +11.00 | [")
    assert lines[3].endswith("| 2/2 |") and len(lines) == 5  # attention has no runs: no row
    assert lines[4].startswith("| dictionary alone (HPO+MeSH matches, no model) | 60.00 |  | +15.00 |")


def test_the_example_is_one_the_knowledge_arm_gets_right_and_no_knowledge_does_not():
    m = _summary()
    words = [["w"] * 8, ["w"] * 7, ["w"] * 9, ["w"] * 3]
    gold = [["B-Disease"] + ["O"] * 7, ["B-Chemical"] + ["O"] * 6, ["B-Disease"] + ["O"] * 8, ["B-Disease", "O", "O"]]
    none = [["O"] * 8, ["O"] * 7, ["O"] * 9, ["O"] * 3]
    best = [g[:] for g in gold]
    dictionary = [g[:] for g in gold]
    dictionary[2] = ["O"] * 9  # the dictionary misses sentence 2: the model beats the dictionary there
    assert m.pick_example(gold, dictionary, none, best, words) == 2
    dictionary[2] = gold[2]
    assert m.pick_example(gold, dictionary, none, best, words) == 1  # then the shortest (the 3-word one is too short)
    assert m.pick_example(gold, dictionary, gold, best, words) is None  # no knowledge got everything right
    table = m.example_table(["Torsade", "de"], {"gold": ["B-Disease", "I-Disease"], "none": ["O", "O"]})
    assert table.splitlines() == ["| word | gold | none |", "|---|---|---|", "| Torsade | B-Disease | O |",
                                  "| de | I-Disease | O |"]


@pytest.mark.parametrize("script", ["demo.sh"])
def test_demo_sh_keeps_the_stsb_setting(script):
    text = (ROOT / "scripts" / script).read_text()
    assert "pipelines/demo-bc5cdr.yaml" in text and 'if [ "${1:-}" = stsb ]' in text
    assert "sweep pipelines/demo.yaml" in text and "scripts/demo_summary.py" in text

"""No type map is the default: the map comes from the pipeline or the caller, or from the data's
entity types when the dictionary's groups already are those types; otherwise the error names
the field to set (priorkit/supervision/type_map.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from priorkit.errors import PriorkitError
from priorkit.supervision.type_map import MAP_BEFORE_47, entity_types_of, resolve_types

MINI = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"


def test_a_given_map_is_taken_as_it_is_in_its_order():
    asked = []
    given = {"mesh:C": "Disease", "hpo": "Disease", "mesh:D": "Chemical"}
    got = resolve_types(given, lambda: asked.append(1) or [], ["Disease"], field="task.dictionary_types", who="x")
    assert list(got.items()) == list(given.items()) and asked == []  # the provider is never asked
    with pytest.raises(PriorkitError, match="x: task.dictionary_types is empty"):
        resolve_types({}, [], ["Disease"], field="task.dictionary_types", who="x")


def test_groups_that_are_the_datas_entity_types_are_read_as_themselves():
    got = resolve_types(None, ["Disease", "Gene", "Chemical"], ["Chemical", "Disease"], field="f", who="w")
    assert list(got.items()) == [("Disease", "Disease"), ("Chemical", "Chemical")]  # the dictionary's order
    assert entity_types_of(["O", "B-Disease", "I-Disease", "B-Chemical"]) == ["Chemical", "Disease"]


def test_without_a_map_or_matching_groups_the_error_names_the_field():
    with pytest.raises(PriorkitError) as info:
        resolve_types(None, ["mesh:D", "mesh:C", "hpo"], ["Chemical", "Disease"],
                      field="task.dictionary_types or sweep.posthoc.dict.types", who="p.yaml:9: sweep.posthoc.dict")
    msg = str(info.value)
    assert msg.startswith("p.yaml:9: sweep.posthoc.dict: no type map") and "set task.dictionary_types or " \
        "sweep.posthoc.dict.types" in msg and "(mesh:D, mesh:C, hpo)" in msg and "(Chemical, Disease)" in msg
    with pytest.raises(PriorkitError, match="the data's entity types \\(none\\)"):
        resolve_types(None, ["Disease"], [], field="f", who="w")  # no entity types: nothing to read them as


def test_a_real_ontologys_groups_are_asked_only_without_a_map():
    import priorkit

    provider = priorkit.get_provider("ontology", path=str(MINI), cache=False)
    assert resolve_types(None, provider.match_groups, ["mini"], field="f", who="w") == {"mini": "mini"}
    with pytest.raises(PriorkitError, match="groups \\(mini\\) are not the data's entity types \\(Disease\\)"):
        resolve_types(None, provider.match_groups, ["Disease"], field="f", who="w")


def test_the_map_before_issue_47_is_bc5cdrs_and_only_keys_read_it():
    assert MAP_BEFORE_47 == {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}
    import subprocess

    root = Path(__file__).resolve().parents[1]
    users = subprocess.run(["grep", "-rln", "MAP_BEFORE_47", str(root / "priorkit")], capture_output=True,
                           text=True).stdout.split()
    assert users and all(Path(u).name in ("type_map.py", "posthoc.py", "plan.py") for u in users), users


# ---- the pipeline's map: silver labels, calibration, the dictionary report, the run keys -----------
def _cfg(tmp_path, types=None, silver=None, calibrate=None):
    from priorkit.config import config_from_dict

    task = {"type": "token-classification"}
    if types is not None:
        task["dictionary_types"] = types
    prior = {"name": "st", "provider": "ontology", "params": {"path": str(MINI), "cache": False}, "cache": None,
             "attention": None, "features": {}}
    if silver is not None:
        prior["silver"] = silver
    if calibrate is not None:
        prior["calibrate"] = calibrate
    return config_from_dict({"name": "t", "output_dir": str(tmp_path / "runs"), "task": task,
                             "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 20},
                                      "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},
                             "prior": prior})


def test_silver_labels_take_their_own_map_else_the_pipelines_else_the_datas(tmp_path):
    from priorkit.supervision.silver.config import SilverConfig

    groups = ["Disease", "Chemical", "Gene"]
    assert SilverConfig(types={"hpo": "Disease"}).type_map({"x": "Chemical"}, groups, ["Disease"]) == {"hpo": "Disease"}
    assert SilverConfig().type_map({"x": "Chemical"}, groups, ["Disease"]) == {"x": "Chemical"}
    assert SilverConfig().type_map(None, groups, ["Chemical", "Disease"]) == {"Disease": "Disease", "Chemical": "Chemical"}
    with pytest.raises(PriorkitError, match="p.yaml:9: prior.silver.types: no type map .* set prior.silver.types or "
                                            "task.dictionary_types"):
        SilverConfig().type_map(None, ["mesh:C"], ["Disease"], who="p.yaml:9: prior.silver.types")


def test_the_silver_check_reads_the_pipelines_map(tmp_path):
    from priorkit.supervision.silver.checks import type_problem

    labels = ["O", "B-Disease", "I-Disease"]
    assert type_problem(None, True, labels, "task.labels") is None  # no map: the data's types, which it has
    why = type_problem(None, True, labels, "task.labels", dict(MAP_BEFORE_47))
    assert why.startswith("maps mesh:D -> Chemical (task.dictionary_types), but the task has no such entity type")
    assert type_problem({"hpo": "Chemical"}, True, labels, "task.labels", dict(MAP_BEFORE_47)).startswith(
        "maps hpo -> Chemical, but")  # its own map first
    assert type_problem(None, False, labels, "task.labels", dict(MAP_BEFORE_47)) is None  # no dictionary: no map read


def test_the_calibration_and_the_report_stop_without_a_map(tmp_path):
    from priorkit.evaluation.dictionary_report import _types, dictionary_of
    from priorkit.training.calibrate_stage import calibration_of
    from priorkit.training.data import load_data
    from priorkit.training.plan import plan_for_run

    cfg = _cfg(tmp_path, calibrate={"threshold": 0.5})
    splits = load_data(cfg)
    with pytest.raises(PriorkitError, match=r"the calibration of 'st': no type map .* set task.dictionary_types"):
        calibration_of(plan_for_run(cfg), splits, ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"])
    cal = calibration_of(plan_for_run(_cfg(tmp_path, types={"mini": "Disease"}, calibrate={"threshold": 0.5})),
                         splits, ["O", "B-Disease", "I-Disease"])
    assert cal[-1] == {"mini": "Disease"}  # the pipeline's map, counted with
    gold = [["B-Disease", "O"]]
    with pytest.raises(PriorkitError, match="the report inside and outside the dictionary: no type map"):
        _types(dictionary_of(cfg), gold)
    assert _types(dictionary_of(_cfg(tmp_path, types={"mini": "Disease"})), gold) == {"mini": "Disease"}


def test_the_pipelines_map_enters_a_runs_key_unless_it_is_the_map_null_meant_before(tmp_path):
    from priorkit.training.data import load_data
    from priorkit.training.plan import pipeline_types_identity, plan_for_run

    silver = {"teacher": None}
    legacy, other, none = (_cfg(tmp_path, types=t, silver=silver) for t in (dict(MAP_BEFORE_47), {"mini": "Disease"}, None))
    train = load_data(legacy)["train"]
    keys = [plan_for_run(c).train_key(train) for c in (legacy, other, none)]
    assert len(set(keys)) == 3
    assert pipeline_types_identity(legacy, legacy.prior) is None  # runs made when null meant this map keep their keys
    assert pipeline_types_identity(other, other.prior) == {"mini": "Disease"}
    assert pipeline_types_identity(none, none.prior) == "the data's entity types"
    # a setting that reads no map of the pipeline's: the map stays out of its key
    own = _cfg(tmp_path, types={"mini": "Disease"}, silver={"types": {"mini": "Disease"}, "teacher": None})
    plain = _cfg(tmp_path, types={"mini": "Chemical"})
    assert pipeline_types_identity(own, own.prior) is None and pipeline_types_identity(plain, plain.prior) is None
    assert plan_for_run(plain).train_key(train) == plan_for_run(_cfg(tmp_path)).train_key(train)

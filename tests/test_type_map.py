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

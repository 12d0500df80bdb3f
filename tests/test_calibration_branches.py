"""Calibration by branch (``prior.calibrate.branches``; docs/calibration.md): a form the gold
never shows inherits its branch's precision (an ontology's level-2 concepts, e.g. MeSH's
"Enzymes and Coenzymes"), whole branches below the threshold are dropped, and the forms the
gold shows right inside them are kept.  Real ontology (HPO + MeSH), real BC5CDR sentences."""
from __future__ import annotations

import pytest

import priorkit
from priorkit.supervision.calibration import CalibrateConfig, calibrate
from priorkit.errors import PriorkitError

TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}
CONCEPT = {"source": "hpo+mesh", "measure": "concept", "within": 1.0, "related": 0.8, "unrelated": 0.5, "hops": 2}


@pytest.fixture(scope="module")
def ontology():
    return priorkit.get_provider("ontology", **CONCEPT)


@pytest.fixture(scope="module")
def gold():
    from priorkit.datasets import read_dataset
    from priorkit.resources import embedded

    rows = read_dataset(embedded("bc5cdr", "train.tsv"), "conll", limit=400)
    return [{"words": list(r.words), "tags": list(r.tags)} for r in rows]


def test_a_match_branch_is_the_level_2_concepts_above_its_concepts(ontology):
    graph, data = ontology.index.graph, ontology.index.data
    level = graph.depth - (1 if graph.virtual_root else 0)
    (enzyme,) = [m for m in ontology.matches("the enzyme was high".split()) if m.group == "mesh:D"]
    branch = ontology.match_branch(enzyme)
    assert branch and "+" not in branch
    b = data.index(branch)
    assert level[b] == 2  # a child of MeSH's tree D itself
    concept = data.index(enzyme.concept_ids[0])
    assert b in graph.ancestors(concept)  # above the matched concept
    # a concept's branch is itself when it is a level-2 concept; a provider without levels says ''
    assert priorkit.get_provider("constant", value=0.5).match_branch(enzyme) == ""
    # the calibrated provider answers with its inner provider's branch
    wrapped = priorkit.get_provider("calibrated", provider="ontology", params=CONCEPT, drop=[])
    assert wrapped.match_branch(enzyme) == branch


def test_branches_smooth_forms_towards_their_branch_and_the_branch_towards_its_group(ontology, gold):
    cal = calibrate(ontology, gold, TYPES, prior_strength=2.0, branches=True)
    assert cal.branches
    (g, b), (h, n) = max(cal.branches.items(), key=lambda kv: kv[1][1])
    p_group = cal.group_precision(g)
    assert cal.branch_precision(g, b) == pytest.approx((h + 2 * p_group) / (n + 2))
    assert cal.precision("a form never seen", g, b) == pytest.approx(cal.branch_precision(g, b))
    # the counts add up: every match is in its group's and (with a branch) its branch's cell
    for group, (gh, gn) in cal.groups.items():
        cells = [v for (gg, _), v in cal.branches.items() if gg == group]
        assert sum(c[1] for c in cells) <= gn and sum(c[0] for c in cells) <= gh
    off = calibrate(ontology, gold, TYPES, prior_strength=2.0)
    assert not off.branches and all(len(d) == 2 for d in off.dropped(0.5))
    # without branches a form's estimate is exactly the group-smoothed one of before
    form, group = next(iter(off.forms))
    fh, fn = off.forms[(form, group)]
    assert off.precision(form, group) == pytest.approx((fh + 2 * off.group_precision(group)) / (fn + 2))


def test_branch_calibration_raises_the_held_out_precision_of_the_real_dictionary(ontology, gold):
    by_form = calibrate(ontology, gold, TYPES, branches=False).quality(0.5)
    cal = calibrate(ontology, gold, TYPES, branches=True)
    by_branch = cal.quality(0.5)
    assert by_branch.precision > by_form.precision + 0.03  # held-out over 5 folds
    assert by_branch.f1 > by_form.f1
    assert by_branch.recall > by_form.recall - 0.04
    branches = [d for d in cal.dropped(0.5) if len(d) == 3]
    assert branches and all(d[0] == "*" and (d[1], d[2]) in cal.branches for d in branches)
    for form, group in cal.kept(0.5):  # kept: shown right at the threshold, inside a dropped branch
        assert cal.precision(form, group) >= 0.5
    assert cal.to_dict(0.5)["branches_dropped"] == [list(d[1:]) for d in branches]


def test_the_calibrated_provider_drops_a_branch_but_keeps_the_listed_forms(ontology):
    words = "the enzyme and the lipase and cocaine".split()
    full = ontology.matches(words)
    enzyme = [m for m in full if m.group == "mesh:D" and words[m.start] == "enzyme"][0]
    branch = ontology.match_branch(enzyme)
    in_branch = {words[m.start] for m in full if m.group == "mesh:D" and ontology.match_branch(m) == branch}
    assert "enzyme" in in_branch
    drop = [["*", "mesh:D", branch]]
    cut = priorkit.get_provider("calibrated", provider="ontology", params=CONCEPT, drop=drop)
    left = {words[m.start] for m in cut.matches(words) if m.group == "mesh:D"}
    assert not (left & in_branch) and "cocaine" in left
    kept = priorkit.get_provider("calibrated", provider="ontology", params=CONCEPT, drop=drop, keep=[["enzyme", "mesh:D"]])
    assert "enzyme" in {words[m.start] for m in kept.matches(words) if m.group == "mesh:D"}
    assert kept.fingerprint != cut.fingerprint  # silver labels of the two never mix
    with pytest.raises(PriorkitError, match="drop entry"):
        priorkit.get_provider("calibrated", provider="ontology", params=CONCEPT, drop=[["enzyme", "mesh:D", branch]])
    with pytest.raises(PriorkitError, match="keep entry"):
        priorkit.get_provider("calibrated", provider="ontology", params=CONCEPT, drop=drop, keep=[["enzyme"]])


def test_the_branches_setting_must_be_a_boolean():
    assert CalibrateConfig(branches="yes").problems() == [("branches", "must be true or false, got 'yes'")]
    assert CalibrateConfig(branches=True).problems() == []


def test_a_run_calibrated_by_branch_reads_the_dictionary_without_its_weak_branches(tmp_path, ontology):
    """calibrate_run: the features' provider becomes the calibrated one, with the branch entries
    and the kept forms; calibration.json names the branches dropped."""
    import json

    from priorkit.training.calibrate_stage import calibrate_run
    from priorkit.config import config_from_dict
    from priorkit.training.data import load_data
    from priorkit.training.plan import RunPlan

    raw = {"name": "branches", "output_dir": str(tmp_path / "runs"),
           "task": {"type": "token-classification",
                    "dictionary_types": {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}},
           "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 400},
                    "eval": {"source": "bc5cdr", "split": "devel", "limit": 10}},
           "prior": {"name": "fb", "provider": "ontology", "params": CONCEPT, "cache": None, "attention": None,
                     "features": {"learning_rate": 1e-2}, "calibrate": {"threshold": 0.5, "branches": True}},
           "train": {"epochs": 1, "fraction": 1.0, "threads": 1, "save": "no", "progress": False}}
    cfg = config_from_dict(raw)
    splits = load_data(cfg)
    plan = RunPlan(cfg, "fb", cfg.prior, 1.0, 0)
    plan.run_dir.mkdir(parents=True)
    lines: list[str] = []
    calibrated, record = calibrate_run(plan, splits, ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"],
                                       say=lines.append)
    features = calibrated.prior.features
    assert features.provider == "calibrated"
    branch_entries = [d for d in features.params["drop"] if len(d) == 3]
    assert branch_entries and record["branches_dropped"] == [d[1:] for d in branch_entries]
    assert features.params["keep"] and all(len(k) == 2 for k in features.params["keep"])
    assert json.loads((plan.run_dir / "calibration.json").read_text())["branches_dropped"] == record["branches_dropped"]
    # the wrapped provider drops a branch's unseen form: "enzyme" (Enzymes and Coenzymes) is gone
    wrapped = priorkit.get_provider(features.provider, **features.params)
    enzyme = [m for m in ontology.matches("the enzyme".split()) if m.group == "mesh:D"][0]
    assert ["mesh:D", ontology.match_branch(enzyme)] in record["branches_dropped"]
    assert not [m for m in wrapped.matches("the enzyme".split()) if m.group == "mesh:D"]
    assert any(line.startswith("[") and "calibrated (forms below precision 0.5" in line for line in lines)

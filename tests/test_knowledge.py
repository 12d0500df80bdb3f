"""Knowledge that does not blind (docs/calibration.md, docs/silver.md): the dictionary calibrated
on gold, knowledge dropout, a trained teacher's labels, the weak-dictionary data option and the
report of recall inside and outside the dictionary.  Real ontology, real BC5CDR sentences."""
from __future__ import annotations

import json

import pytest
import torch

import priorkit
from priorkit.supervision.calibration import CalibrateConfig, calibrate, form_of, gold_spans, typed_matches
from priorkit.errors import PriorkitError
from priorkit.config import ConfigError, config_from_dict, load_config

TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}


CONCEPT = {"source": "hpo+mesh", "measure": "concept", "within": 1.0, "related": 0.8, "unrelated": 0.5, "hops": 2}


@pytest.fixture(scope="module")
def ontology():
    """The BC5CDR pipelines' matcher and concept prior (HPO + MeSH)."""
    return priorkit.get_provider("ontology", **CONCEPT)


def _sentence(words: str, tags: str) -> dict:
    return {"words": words.split(), "tags": tags.split()}


# ---- calibration ---------------------------------------------------------------------
def test_gold_spans_read_bio_tags_with_their_types():
    assert gold_spans("B-Chemical I-Chemical O B-Disease B-Disease I-Chemical".split()) == {
        (0, 2, "Chemical"), (3, 4, "Disease"), (4, 5, "Disease"), (5, 6, "Chemical")}


def test_calibration_counts_each_form_against_the_gold_and_smooths_towards_its_group(ontology):
    # "cocaine" is a gold Chemical twice; "hypotension" is matched three times and gold only once
    examples = [
        _sentence("cocaine induced hypotension .", "B-Chemical O O O"),
        _sentence("cocaine and hypotension", "B-Chemical O B-Disease"),
        _sentence("severe hypotension was seen", "O O O O"),
    ]
    assert typed_matches(ontology.matches(examples[0]["words"]), TYPES)  # the real matcher finds them
    cal = calibrate(ontology, examples, TYPES, prior_strength=2.0)
    hits, n = cal.forms[("cocaine", "mesh:D")]
    assert (hits, n) == (2, 2)
    disease = [(f, g) for (f, g) in cal.forms if f == "hypotension"]
    assert disease, cal.forms
    h, m = cal.forms[disease[0]]
    assert (h, m) == (1, 3)
    group = disease[0][1]
    gh, gm = cal.groups[group]
    p_group = (gh + 1) / (gm + 2)
    assert cal.precision("hypotension", group) == pytest.approx((1 + 2 * p_group) / (3 + 2))
    assert cal.precision("never seen", group) == pytest.approx(p_group)  # unseen: its group's estimate
    assert ("hypotension", group) in cal.dropped(0.5) and ("cocaine", "mesh:D") not in cal.dropped(0.5)
    assert cal.sentences == 3 and cal.gold == {"Chemical": 2, "Disease": 1}
    before = cal.quality(None)
    assert before.predicted == sum(n for _, n in cal.forms.values()) and before.gold == 3


def test_calibration_improves_the_held_out_precision_of_the_real_dictionary_on_bc5cdr(ontology):
    from priorkit.datasets import read_dataset
    from priorkit.resources import embedded

    rows = read_dataset(embedded("bc5cdr", "train.tsv"), "conll", limit=400)
    gold = [{"words": list(r.words), "tags": list(r.tags)} for r in rows]
    cal = calibrate(ontology, gold, TYPES)
    before, after = cal.quality(None), cal.quality(0.5)
    assert after.precision > before.precision + 0.03  # held-out: the drop is judged on other sentences
    assert after.recall > before.recall - 0.03
    assert cal.silver_weight(0.5) == pytest.approx(after.f1, abs=1e-4)
    lines = cal.report(0.5)
    assert lines[0].startswith("dictionary on the 400 gold sentences: P ") and "dropped" in lines[1]


def test_calibration_refuses_an_empty_gold_subset_and_a_provider_without_matches(ontology):
    with pytest.raises(PriorkitError, match="gold subset is empty"):
        calibrate(ontology, [], TYPES)
    with pytest.raises(PriorkitError, match="no concept matches"):
        calibrate(priorkit.get_provider("constant", value=0.5), [_sentence("a", "O")], TYPES)
    assert CalibrateConfig(threshold=1.5).problems()[0][0] == "threshold"


def test_the_calibrated_provider_leaves_out_the_dropped_forms_and_whole_groups(ontology):
    words = "cocaine induced hypotension".split()
    full = ontology.matches(words)
    groups = {m.group for m in full}
    cocaine = [m for m in full if form_of(words, m.start, m.end) == "cocaine"][0]
    one = priorkit.get_provider("calibrated", provider="ontology", params={"source": "hpo+mesh"},
                                drop=[["cocaine", cocaine.group]])
    assert [m for m in one.matches(words)] == [m for m in full if m != cocaine]
    whole = priorkit.get_provider("calibrated", provider="ontology", params={"source": "hpo+mesh"},
                                  drop=[["*", g] for g in groups])
    assert whole.matches(words) == []
    assert one.fingerprint != whole.fingerprint != ontology.fingerprint
    with pytest.raises(PriorkitError, match=r"each drop entry is \[form, group\]"):
        priorkit.get_provider("calibrated", provider="ontology", params={"source": "hpo+mesh"}, drop=["cocaine"])


# ---- knowledge dropout -------------------------------------------------------------------
def test_confident_tags_keep_a_whole_entity_only_when_every_word_is_sure():
    from priorkit.supervision.silver.teacher import confident_tags

    tags = "B-Disease I-Disease O B-Chemical O".split()
    assert confident_tags(tags, [0.99, 0.95, 0.97, 0.99, 0.5], 0.9) == \
        ["B-Disease", "I-Disease", "O", "B-Chemical", "?"]
    assert confident_tags(tags, [0.99, 0.6, 0.97, 0.99, 0.99], 0.9) == ["?", "?", "O", "B-Chemical", "O"]
    # entity_threshold: an entity's words at 0.5, the O words still at 0.9
    assert confident_tags(tags, [0.99, 0.6, 0.7, 0.55, 0.99], 0.9, entity_threshold=0.5) == \
        ["B-Disease", "I-Disease", "?", "B-Chemical", "O"]
    assert confident_tags(tags, [0.99, 0.4, 0.97, 0.99, 0.99], 0.9, entity_threshold=0.5) == \
        ["?", "?", "O", "B-Chemical", "O"]


def test_merge_rules_of_teacher_and_dictionary():
    from priorkit.supervision.silver.teacher import merge_labels

    teacher = "B-Disease I-Disease ? O ? ?".split()
    dictionary = "B-Disease O B-Chemical I-Chemical O B-Chemical".split()
    # teacher first: its entity stays; dictionary entities that overlap no teacher entity come in
    assert merge_labels(teacher, dictionary, "teacher-first") == \
        "B-Disease I-Disease B-Chemical I-Chemical ? B-Chemical".split()
    # dictionary first: its entities stay (over the teacher's); the teacher's where they overlap none
    assert merge_labels(teacher, dictionary, "dictionary-first") == \
        "B-Disease ? B-Chemical I-Chemical ? B-Chemical".split()


# ---- data and config ----------------------------------------------------------------------
def _raw(tmp_path, **extra):
    raw = {
        "name": "knowledge", "output_dir": str(tmp_path / "runs"),
        "task": {"type": "token-classification",
                 "dictionary_types": {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 60},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 20}},
        "prior": {"name": "kd", "provider": "ontology", "params": {"source": "hpo+mesh"}, "cache": None,
                  "attention": None, "features": {"learning_rate": 1e-2}},
        "train": {"epochs": 1, "batch_size": 8, "fraction": 0.5, "threads": 1, "save": "no", "progress": False},
    }
    for key, value in extra.items():
        section, field = key.split("__")
        raw[section][field] = value
    return raw


def test_entity_types_keep_only_the_named_types_in_every_split(tmp_path):
    from priorkit.training.data import load_data

    splits = load_data(config_from_dict(_raw(tmp_path, data__entity_types=["Disease"])))
    for split in splits.values():
        tags = {t for e in split.examples for t in e["tags"]}
        assert tags <= {"O", "B-Disease", "I-Disease"} and "B-Disease" in tags
    with pytest.raises(Exception, match="no such entity type"):
        load_data(config_from_dict(_raw(tmp_path, data__entity_types=["Gene"])))


@pytest.mark.parametrize("field, value, message", [
    ("calibrate", {"threshold": 1.5}, "prior.calibrate.threshold: must lie in"),
    ("silver", {"teacher": {"threshold": 0}}, "prior.silver.teacher.threshold: must lie in"),
    ("silver", {"teacher": {"rounds": 4}}, "prior.silver.teacher.rounds: must be 1, 2 or 3"),
    ("silver", {"weight": -1}, "prior.silver.weight: must be positive or auto"),
    ("calibrate", {"branches": "yes"}, "prior.calibrate.branches: expected true or false, got 'yes'"),
    ("silver", {"teacher": {"merge": "veto"}}, "prior.silver.teacher.merge: expected one of 'teacher-first', 'dictionary-first', got 'veto'"),
    # removed in issue 47 (priorkit/config/removed.py): one line naming the field and that it was removed
    ("features", {"outside_weight": 3.0}, "prior.features.outside_weight: was removed: the loss weight"),
    ("features", {"edge_noise": 0.3}, "prior.features.edge_noise: was removed: moving a mention's bounds"),
    ("features", {"mention_dropout": 0.3}, "prior.features.mention_dropout: was removed: knowledge dropout"),
    ("attention", {"mention_dropout": 0.3}, "prior.attention.mention_dropout: was removed: knowledge dropout"),
    ("features", {"seed": 1}, "prior.features.seed: was removed: it was the seed of features.control"),
    ("silver", {"teacher": {"entity_threshold": 0.5}}, "prior.silver.teacher.entity_threshold: was removed"),
    ("silver", {"teacher": {"merge": "teacher-veto"}},
     "prior.silver.teacher.merge: 'teacher-veto' was removed: the teacher-veto merge was tried in one experiment"),
    ("silver", {"teacher": {"prior": {"features": {"learning_rate": -1}}}},
     "prior.silver.teacher.prior.features.learning_rate: must be positive"),
    ("silver", {"teacher": {"prior": {"silver": None}}}, "prior.silver.teacher.prior: must not set silver"),
])
def test_bad_knowledge_settings_stop_with_their_file_and_line(tmp_path, field, value, message):
    import yaml

    raw = _raw(tmp_path)
    raw["prior"][field] = value
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert text.startswith(f"{path}:") and message in text and "\n" not in text


def test_a_teacher_of_another_task_is_refused_with_its_folder(tmp_path, tiny_bert_dir):
    from priorkit.supervision.silver.teacher import TeacherLabeller

    class Predictor:  # the attributes TeacherLabeller reads of priorkit.load_model's result
        task_type, labels = "token-classification", ["O", "B-Gene", "I-Gene"]

    teacher = TeacherLabeller(Predictor(), tmp_path / "gene-model", 0.9)
    with pytest.raises(PriorkitError, match="gene-model predicts tags O, B-Gene, I-Gene, the task has"):
        teacher.check_labels(["O", "B-Disease", "I-Disease"], "p.yaml:3")
    with pytest.raises(PriorkitError, match=r"teacher threshold must lie in \(0, 1\]"):
        TeacherLabeller(Predictor(), tmp_path, 1.5)
    with pytest.raises(PriorkitError, match="teacher merge 'teacher-veto' is not one of teacher-first, dictionary-first"):
        TeacherLabeller(Predictor(), tmp_path, 0.9, merge="teacher-veto")


def test_the_teacher_setting_replaces_fields_of_the_run_setting(tmp_path):
    import dataclasses

    from priorkit.config.checks import teacher_prior

    raw = _raw(tmp_path)
    raw["prior"]["calibrate"] = {"threshold": 0.5}
    raw["prior"]["silver"] = {"teacher": {}}
    cfg = config_from_dict(raw)
    same = teacher_prior(cfg.prior, ("prior",), cfg)  # no teacher.prior: the run's setting, without silver
    assert same == dataclasses.replace(cfg.prior, silver=None) and same.calibrate is not None
    raw["prior"]["silver"] = {"teacher": {"prior": {"features": {"dropout": 0.5}}}}
    cfg = config_from_dict(raw)
    other = teacher_prior(cfg.prior, ("prior",), cfg)
    assert other.features.dropout == 0.5 and other.silver is None and other.calibrate == cfg.prior.calibrate
    assert cfg.prior.features.dropout != 0.5  # the student's setting is untouched
    raw["prior"]["silver"] = {"teacher": {"prior": {"features": None}}}
    cfg = config_from_dict(raw)  # calibration goes with the features: no channel left, no knowledge
    assert cfg.prior.calibrate is not None and teacher_prior(cfg.prior, ("prior",), cfg) is None


# ---- the pipeline -------------------------------------------------------------------------
def test_self_training_calibrates_trains_a_teacher_labels_and_trains_a_student(tmp_path, tiny_bert_dir,
                                                                                 one_torch_thread, capsys):
    import dataclasses

    from priorkit.training.steps import run_pipeline

    raw = _raw(tmp_path)
    raw["model"] = {"name_or_path": str(tiny_bert_dir), "max_length": 48}
    raw["prior"]["features"]["dropout"] = 0.3
    raw["prior"]["calibrate"] = {"threshold": 0.8}  # high enough that 30 sentences drop something
    raw["prior"]["silver"] = {"teacher": {"threshold": 0.3, "rounds": 2}, "unmatched_weight": 0.5,
                              "types": {"mesh:C": "Disease", "hpo": "Disease"}}
    raw["data"]["entity_types"] = ["Disease"]  # the weak-dictionary regime's data option, saved with the model
    cfg = config_from_dict(raw)
    result = run_pipeline(cfg, steps=("train", "evaluate"), log=lambda s: None)
    printed = capsys.readouterr().out
    assert "dictionary on the 30 gold sentences: P " in printed and "calibrated (forms below" in printed
    assert "Chemical" not in printed  # Disease alone: the calibration counts the task's types only
    run = tmp_path / "runs" / "kd" / "frac0.5" / "seed0"
    record = json.loads((run / "self_training.json").read_text())
    assert record["teacher"]["steps"] > 0 and 1 <= len(record["rounds"]) <= 2
    assert all("devel" in r for r in record["rounds"])  # two rounds: each judged on data.eval
    cal = json.loads((run / "calibration.json").read_text())
    assert cal["sentences"] == 30 and 0 <= cal["after"]["precision"] <= 1
    shards = list((tmp_path / "runs" / "silver").glob("teacher-*/shard-*.jsonl"))
    lines = [json.loads(line) for p in shards for line in p.read_text().splitlines()]
    assert len(lines) >= 30 and {t for row in lines for t in row["t"]} & {"O", "?"}
    train = result.metrics["train"]
    assert train["silver"]["teacher"]["rounds"] == 2 and train["silver"]["sentences"] == 30
    assert 0.0 <= result.metrics["metrics"]["eval"]["f1"] <= 1.0
    desc = json.loads((run / "model" / "priorkit.json").read_text())
    assert cal["dropped"] > 0 and "calibrated" in json.dumps(desc)  # the features read the calibrated
    # dictionary, at predict time too
    from priorkit.evaluation.dictionary_report import dictionary_rows

    rows = [{"prior": "kd", "fraction": 0.5, "seed": 0, "run_dir": str(run)}]
    table = dictionary_rows(dataclasses.replace(cfg, sweep=dataclasses.replace(cfg.sweep, split="eval")), rows)
    assert {r["prior"] for r in table} == {"kd", "dictionary alone"}
    alone = [r for r in table if r["prior"] == "dictionary alone"][0]
    assert alone["recall_dict"] == pytest.approx(100.0) and alone["recall_other"] == 0.0
    model = [r for r in table if r["prior"] == "kd"][0]
    assert model["f1"] == pytest.approx(100 * result.metrics["metrics"]["eval"]["f1"], abs=1e-6)


def test_a_teacher_without_token_features_labels_for_a_student_with_them(tmp_path, tiny_bert_dir, one_torch_thread):
    from priorkit.training.steps import run_pipeline

    raw = _raw(tmp_path)
    raw["model"] = {"name_or_path": str(tiny_bert_dir), "max_length": 48}
    raw["prior"]["calibrate"] = {"threshold": 0.5}
    raw["prior"]["silver"] = {"teacher": {"threshold": 0.3, "prior": {"features": None}}}
    run_pipeline(config_from_dict(raw), steps=("train",), log=lambda s: None)
    run = tmp_path / "runs" / "kd" / "frac0.5" / "seed0"
    teacher = json.loads((run / "teacher" / "model" / "priorkit.json").read_text())
    student = json.loads((run / "model" / "priorkit.json").read_text())
    assert "calibrated" in json.dumps(student) and "calibrated" not in json.dumps(teacher)
    assert teacher.get("prior") is None and student.get("prior") is not None
    record = json.loads((run / "self_training.json").read_text())
    assert record["teacher"]["steps"] > 0 and record["rounds"][0]["kept"]


def test_a_teacher_trained_before_in_the_pipeline_is_copied_not_trained_again(tmp_path, tiny_bert_dir,
                                                                              one_torch_thread):
    from safetensors.torch import load_file

    from priorkit.config.checks import teacher_prior
    from priorkit.training.steps import run_pipeline

    raw = _raw(tmp_path)
    raw["model"] = {"name_or_path": str(tiny_bert_dir), "max_length": 48}
    # st-nofeat: no token features, so its own teacher is the gold alone, which the none arm trains too
    raw["sweep"] = {"priors": {"none": None, "st-nofeat": {"features": None, "calibrate": {"threshold": 0.5},
                                                           "silver": {"teacher": {"threshold": 0.3}}}}}
    cfg = config_from_dict(raw)
    assert teacher_prior(cfg.prior, ("prior",), cfg) is not None  # the file's prior keeps its features
    root = tmp_path / "runs"
    run_pipeline(cfg, prior_name="none", steps=("train",), log=lambda s: None)
    run_pipeline(cfg, prior_name="st-nofeat", steps=("train",), log=lambda s: None)
    run = root / "st-nofeat" / "frac0.5" / "seed0"
    record = json.loads((run / "self_training.json").read_text())
    assert record["teacher"] == {"reused": "none/frac0.5/seed0/model", "seconds": 0.0, "steps": 0}
    none_w = load_file(root / "none" / "frac0.5" / "seed0" / "model" / "model.safetensors")
    teacher_w = load_file(run / "teacher" / "model" / "model.safetensors")
    assert none_w.keys() == teacher_w.keys() and all(torch.equal(none_w[k], teacher_w[k]) for k in none_w)
    assert not list(run.glob("teacher/*.copying"))
    shards = list((root / "silver").glob("teacher-*/shard-*.jsonl"))
    assert shards  # the copied teacher labelled the text
    # a teacher setting of its own is trained (no model in the folder has its key), as before
    raw["sweep"]["priors"]["st-other"] = {"features": None, "silver": {"teacher": {"threshold": 0.3}},
                                          "train": {"learning_rate": 1e-3}}
    run_pipeline(config_from_dict(raw), prior_name="st-other", steps=("train",), log=lambda s: None)
    other = json.loads((root / "st-other" / "frac0.5" / "seed0" / "self_training.json").read_text())
    assert "reused" not in other["teacher"] and other["teacher"]["steps"] > 0


def _recall_rows(arm: str, outside: list[float], fraction: float = 0.1) -> list[dict]:
    return [{"prior": arm, "fraction": fraction, "seed": s, "precision": 70.0, "recall": 70.0, "f1": 70.0,
             "recall_dict": 90.0, "recall_other": v, "coverage": 72.0} for s, v in enumerate(outside)]


def test_blind_spots_name_the_arms_below_the_baseline_outside_the_dictionary():
    from priorkit.evaluation.dictionary_report import DICTIONARY_ROW, blind_spots, markdown

    rows = (_recall_rows("none", [48.0, 46.0, 47.0]) + _recall_rows("st-branch", [35.0, 36.0, 47.5])
            + _recall_rows("features", [47.5, 45.5, 46.5]) + _recall_rows("late", [10.0], fraction=1.0)
            + [{**_recall_rows(DICTIONARY_ROW, [0.0])[0], "seed": "-"}])
    lines = blind_spots(rows, "none")
    # st-branch: (35-48 + 36-46 + 47.5-47) / 3 = -7.5, two seeds below; features -0.5 is within the margin;
    # "late" has no baseline run at its fraction, the dictionary row is not an arm
    assert len(lines) == 1 and "st-branch at fraction 0.1" in lines[0]
    # paired over 3 seeds: sd 7.09, t(0.975, 2) = 4.303, so the CI spans 0: the line says so
    assert "39.5%" in lines[0] and "none 47.0%" in lines[0]
    assert "(-7.5 points, 95% CI [-25.1, +10.1], 2/3 seeds below)" in lines[0]
    one = blind_spots(_recall_rows("none", [48.0]) + _recall_rows("kd", [40.0]), "none")
    assert len(one) == 1 and "(-8.0 points, 1/1 seeds below)" in one[0]  # one seed: no CI to give
    assert blind_spots(rows, None) == [] and blind_spots(rows, "features") != []
    assert blind_spots(rows, "none", margin=0.1)[0].startswith("blind outside the dictionary: features")
    section = markdown(rows, "test", lines)
    assert section.rstrip().endswith(f"- {lines[0]}") and "it relies on the dictionary's entities" in lines[0]
    assert "blind" not in markdown(rows, "test")  # no lines given: the table alone
    assert "| outside: other bounds | outside: no match | precision outside |" in section
    assert "| 90.00 | 10.00 | - | - | - |" in section  # rows written before the split: its columns empty
    split = [{**r, "recall_boundary": 20.0, "recall_unseen": 50.0, "precision_other": 40.0} for r in rows]
    table = markdown(split, "test")
    assert "| 90.00 | 10.00 | 20.00 | 50.00 | 40.00 |" in table
    # the dictionary predicts nothing beyond itself: no precision there to give
    assert f"| {DICTIONARY_ROW} | 0.1 | - | 70.00 | 70.00 | 70.00 | 90.00 | 0.00 | 20.00 | 50.00 | - |" in table
    # with the split, the line says which part is lost
    bounds = [{**r, "recall_boundary": 20.0 if r["prior"] == "st-branch" else 45.0, "recall_unseen": 48.0}
              for r in rows]
    line = blind_spots(bounds, "none")[0]
    assert "other bounds: 20.0% against 45.0%; entities no match touches: 48.0% against 48.0%" in line
    assert "the larger drop is the former: it copies the dictionary's bounds); see" in line, line
    unseen = [{**r, "recall_boundary": 45.0, "recall_unseen": 30.0 if r["prior"] == "st-branch" else 48.0}
              for r in rows]
    assert "the latter: it has learned 'no match, no entity'); see" in blind_spots(unseen, "none")[0]
    assert "larger drop" not in lines[0]  # rows written before the split: the line as before
    assert "are right" not in lines[0]
    # with the precision of the finds beyond the dictionary: the line gives both arms' and, when the
    # baseline's lie below half the arm's F1 (70 / 2 = 35), says that more of them would cost F1
    prec = [{**r, "precision_other": 26.5 if r["prior"] == "none" else 48.0} for r in rows]
    line = blind_spots(prec, "none")[0]
    assert "not a dictionary entity 48.0% are right, of none's 26.5%" in line
    assert "below half its F1, 35.0" in line and "more precise finds, not more of them" in line
    fine = [{**r, "precision_other": 40.0} for r in rows]
    line = blind_spots(fine, "none")[0]
    assert "of none's 40.0%" in line and "below half its F1" not in line

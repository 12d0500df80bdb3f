"""A self-training teacher with an encoder of its own (issue 48): ``prior.silver.teacher.encoder``
(with its own ``max_length`` and ``train`` fields) trains the teacher on another encoder than the
students', which learn from its labels alone (distillation through the silver labels).

Tiny real runs: the teacher is a random 2-layer MPNet with the real all-mpnet-base-v2 tokenizer
(``priorkit data fetch mpnet``; the full MPNet is too slow for a test), the student the random
2-layer BERT with MiniLM's tokenizer, both on 40 real BC5CDR sentences with the hand-made mini
ontology's token features."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from priorkit.config import ConfigError, config_from_dict

MINI = str(Path(__file__).parent / "fixtures" / "ontology" / "mini.obo")


@pytest.fixture(scope="module")
def tiny_mpnet_dir(tmp_path_factory):
    import torch
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel

    from priorkit.resources import mpnet_path

    tok = AutoTokenizer.from_pretrained(str(mpnet_path()))
    out = tmp_path_factory.mktemp("tiny-mpnet")
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, max_position_embeddings=130)
    MPNetModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _raw(tmp_path, student_dir, **teacher):
    return {
        "name": "tiny-teacher",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(student_dir), "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 40},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        "prior": {"name": "st", "provider": "ontology", "params": {"path": MINI, "cache": False}, "cache": None,
                  "attention": None, "features": {"learning_rate": 1e-2},
                  "silver": {"types": {"mini": "Disease"}, "teacher": {"threshold": 0.3, **teacher}}},
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no", "fraction": 0.25, "subset": "per-seed", "seed": 3},
    }


def _model_type(folder):
    return json.loads((folder / "config.json").read_text())["model_type"]


def test_an_mpnet_teacher_labels_for_a_bert_student(tmp_path, tiny_bert_dir, tiny_mpnet_dir, one_torch_thread):
    from priorkit.training.steps import run_pipeline

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir, encoder=str(tiny_mpnet_dir), max_length=40,
                                train={"epochs": 3, "learning_rate": 2e-3}))
    result = run_pipeline(cfg, steps=("train", "evaluate"), log=lambda s: None)
    run = result.plan.run_dir
    teacher, student = run / "teacher" / "model", run / "model"
    assert _model_type(teacher) == "mpnet" and _model_type(student) == "bert"
    t_info, s_info = (json.loads((f / "priorkit.json").read_text()) for f in (teacher, student))
    t_run, s_run = t_info["run"], s_info["run"]
    assert t_run["max_length"] == 40 and s_run["max_length"] == 48
    assert t_run["config"]["train"]["learning_rate"] == 2e-3 and t_run["config"]["train"]["epochs"] == 3
    assert s_run["config"]["train"]["learning_rate"] == 1e-3
    assert t_run["model_source"] == str(tiny_mpnet_dir) and s_run["model_source"] == str(tiny_bert_dir)
    # three epochs over the 10 gold sentences in batches of 8: 6 steps; the student: one pass, gold + silver
    assert t_run["train"]["steps"] == 6 and t_run["train"]["examples"] == 10
    assert s_run["train"]["silver"]["sentences"] == 30
    # the teacher has the features too (its setting without silver labels), on its own tokenizer
    assert "features" in t_info["channels"] and "features" in s_info["channels"]
    record = json.loads((run / "self_training.json").read_text())
    assert record["teacher_model"] == {"encoder": str(tiny_mpnet_dir), "max_length": 40,
                                       "train": {"epochs": 3, "learning_rate": 2e-3}}
    assert 0.0 <= record["teacher"]["devel"] <= 1.0  # a teacher of its own is scored on devel: it is chosen there
    # the labels are the MPNet teacher's (stored under its weights' fingerprint) merged with the dictionary's
    shards = list((tmp_path / "runs" / "silver").glob("teacher-*/shard-*.jsonl"))
    rows = [json.loads(line) for p in shards for line in p.read_text().splitlines()]
    assert len(rows) == 30
    from priorkit.training.plan import prior_identity

    # the student's key names the teacher's encoder; a teacher without one keeps the key it had before
    plain = config_from_dict(_raw(tmp_path, tiny_bert_dir))
    assert "encoder" not in prior_identity(plain.prior)["silver"]["teacher"]
    assert prior_identity(cfg.prior)["silver"]["teacher"]["encoder"] == str(tiny_mpnet_dir)


def test_the_names_mpnet_and_minilm_are_the_fetched_encoders(tmp_path, monkeypatch):
    from priorkit.resources import minilm_path, mpnet_path
    from priorkit.training.wiring import encoder_source

    monkeypatch.chdir(tmp_path)  # no folder called mpnet here
    assert encoder_source("mpnet") == str(mpnet_path()) and encoder_source("minilm") == str(minilm_path())
    assert encoder_source(None) == str(minilm_path()) and encoder_source("some/hub-id") == "some/hub-id"
    (tmp_path / "mpnet").mkdir()  # a folder of that name wins
    assert encoder_source("mpnet") == "mpnet"


def test_the_teacher_config_is_the_run_config_unless_it_has_its_own(tmp_path, tiny_bert_dir):
    from priorkit.training.plan import plan_for_run
    from priorkit.training.self_training import teacher_config

    plan = plan_for_run(config_from_dict(_raw(tmp_path, tiny_bert_dir)))
    assert teacher_config(plan) is plan.cfg
    plan = plan_for_run(config_from_dict(_raw(tmp_path, tiny_bert_dir, encoder="mpnet", train={"epochs": 10})))
    own = teacher_config(plan)
    assert own.model.name_or_path == "mpnet" and own.model.max_length == 48
    assert own.train.epochs == 10 and own.train.learning_rate == plan.cfg.train.learning_rate


@pytest.mark.parametrize("teacher, field, words", [
    ({"train": {"epochs": "ten"}}, "prior.silver.teacher.train.epochs", "ten"),
    ({"train": {"learning_rat": 1e-4}}, "prior.silver.teacher.train", "learning_rat"),
    ({"train": {"seed": 2}}, "prior.silver.teacher.train", "fraction and seed are the run's"),
    ({"max_length": 4}, "prior.silver.teacher.max_length", "at least 8"),
    ({"encoder": "mpnet", "model": "some/folder"}, "prior.silver.teacher.model", "drop one or the other"),
])
def test_bad_teacher_model_settings_stop_at_the_field(tmp_path, tiny_bert_dir, teacher, field, words):
    with pytest.raises(ConfigError) as info:
        config_from_dict(_raw(tmp_path, tiny_bert_dir, **teacher))
    assert field in str(info.value) and words in str(info.value), str(info.value)

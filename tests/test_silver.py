"""Silver labels: real HPO+MeSH matches label real BC5CDR sentences through the store (JSONL
shards, resumable after kill -9), the recipes (mix with a weight or a ratio, then-gold in two
stages) train a tiny random BERT through the pipeline, and bad input stops at file:line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import priorkit
from priorkit.errors import DataFormatError
from priorkit.config import ConfigError, config_from_dict, load_config
from support.ontologies import TREES

#: BC5CDR with the hpo+mesh ontology (the pipelines' task.dictionary_types)
BC5CDR_TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ontology():
    return priorkit.get_provider("ontology", source="hpo+mesh")


@pytest.fixture(scope="module")
def bc5cdr_train():
    from priorkit.datasets import read_dataset
    from priorkit.resources import embedded

    return [r.to_dict() for r in read_dataset(embedded("bc5cdr", "train.tsv"), "conll", limit=400)]


# ---- labelling and the store --------------------------------------------------
def test_real_matches_become_bio_tags_of_the_mapped_types(ontology, bc5cdr_train, tmp_path):
    from priorkit.evaluation.dictionary_baseline import group_entities
    from priorkit.supervision.silver import Labeller, SilverStore, label_sentences

    sentences = [e["words"] for e in bc5cdr_train[:30]]
    labeller = Labeller(ontology, BC5CDR_TYPES)
    tags = label_sentences(tmp_path, labeller, sentences, chunk_size=7)
    assert len(tags) == 30 and all(len(t) == len(w) for t, w in zip(tags, sentences))
    found = {t[2:] for row in tags for t in row if t != "O"}
    assert found == {"Chemical", "Disease"}  # real sentences hold both kinds of mention
    for words, row in zip(sentences, tags):
        assert row == group_entities(ontology.matches(words), len(words), BC5CDR_TYPES)
    store = SilverStore(tmp_path, labeller)
    assert len(store.shards()) == 5  # ceil(30 / 7), one file per chunk
    again = store.fill(sentences + [["Cocaine", "induced", "seizures", "."]], chunk_size=7)
    assert again == {"known": 30, "labelled": 1}  # only the new sentence is labelled
    assert store.tags_for([["Cocaine", "induced", "seizures", "."]]) == [["B-Chemical", "O", "B-Disease", "O"]]
    other = Labeller(ontology, {"mesh:D": "Chemical"})
    assert other.fingerprint != labeller.fingerprint  # another map, another folder


def test_ignore_turns_unmatched_words_into_minus_100_in_the_encoded_labels(minilm_tokenizer):
    from priorkit.collator import PriorCollator
    from priorkit.supervision.silver import silver_rows

    index = {"O": 0, "B-Chemical": 1, "I-Chemical": 2, "B-Disease": 3, "I-Disease": 4}
    words = [["Cocaine", "induced", "renal", "failure"]]
    tags = [["B-Chemical", "O", "B-Disease", "I-Disease"]]
    kept = silver_rows(words, tags, index, "O")[0]
    partial = silver_rows(words, tags, index, "ignore")[0]
    assert kept["labels"] == [1, 0, 3, 4] and partial["labels"] == [1, -100, 3, 4] and partial["silver"]
    batch = PriorCollator(minilm_tokenizer)([partial])
    ids = minilm_tokenizer(words, is_split_into_words=True).word_ids(0)
    firsts = [t for t, w in enumerate(ids) if w is not None and (t == 0 or ids[t - 1] != w)]
    assert batch["labels"][0, firsts].tolist() == [1, -100, 3, 4]
    assert "label_weights" not in batch  # weight 1: the plain loss
    soft = silver_rows(words, tags, index, "O", weight=0.5, unmatched_weight=0.2)[0]
    assert soft["weights"] == [0.5, 0.1, 0.5, 0.5]  # unmatched O words: weight x unmatched_weight
    batch = PriorCollator(minilm_tokenizer)([soft, {"words": ["aspirin"], "labels": [1]}])
    assert batch["label_weights"][0, firsts].tolist() == pytest.approx([0.5, 0.1, 0.5, 0.5])
    assert batch["label_weights"][1].tolist()[1] == 1.0  # a gold row's word weighs 1
    assert batch["label_weights"][0, 0] == 0.0  # special tokens weigh nothing (label -100 anyway)


def test_mix_counts_gold_epochs_and_silver_passes_or_ratio():
    from priorkit.supervision.silver import mix_rows

    gold = [{"words": [f"g{i}"], "labels": [0]} for i in range(10)]
    silver = [{"words": [f"s{i}"], "labels": [0], "silver": True} for i in range(40)]
    rows = mix_rows(gold, silver, epochs=5, silver_epochs=1, ratio=None, seed=0)
    assert sum(not r.get("silver") for r in rows) == 50 and sum(bool(r.get("silver")) for r in rows) == 40
    half = mix_rows(gold, silver, epochs=2.5, silver_epochs=0.5, ratio=None, seed=0)
    assert sum(not r.get("silver") for r in half) == 25 and sum(bool(r.get("silver")) for r in half) == 20
    assert half == mix_rows(gold, silver, epochs=2.5, silver_epochs=0.5, ratio=None, seed=0)  # seeded
    ratio = mix_rows(gold, silver, epochs=2, silver_epochs=1, ratio=0.5, seed=0)
    assert sum(bool(r.get("silver")) for r in ratio) == 10  # 0.5 silver rows per gold row (20)


def test_the_silver_weight_scales_silver_tokens_in_the_loss(minilm_tokenizer):
    from transformers import BertConfig, BertForTokenClassification

    from priorkit.collator import PriorCollator
    from priorkit.training.loss import weighted_loss
    from priorkit.supervision.silver import silver_rows

    torch.manual_seed(0)
    model = BertForTokenClassification(BertConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32,
                                                  num_hidden_layers=1, num_attention_heads=4,
                                                  intermediate_size=37, num_labels=3)).eval()
    gold = {"words": ["aspirin", "helps"], "labels": [1, 0]}
    index = {"O": 0, "B-X": 1, "B-Y": 2}
    silver = silver_rows([["renal", "failure", "here"]], [["B-Y", "B-Y", "O"]], index, weight=0.25)[0]
    batch = PriorCollator(minilm_tokenizer)([gold, silver])
    weights = batch.pop("label_weights")
    labelled = batch["labels"] != -100
    assert set(weights[0][labelled[0]].tolist()) == {1.0} and set(weights[1][labelled[1]].tolist()) == {0.25}
    plain = model(**batch).loss
    loss_1, _ = weighted_loss(model, dict(batch), torch.ones(2))
    assert torch.allclose(loss_1, plain, atol=1e-6)  # weight 1 everywhere: the model's own loss
    loss_w, _ = weighted_loss(model, dict(batch), weights)
    loss_g, _ = weighted_loss(model, dict(batch), torch.tensor([1.0, 0.0]))
    loss_s, _ = weighted_loss(model, dict(batch), torch.tensor([0.0, 1.0]))
    assert torch.allclose(loss_w, loss_g + 0.25 * loss_s, atol=1e-6)  # per-token weights == per-row here


# ---- the pipeline ----------------------------------------------------------------


@pytest.fixture(scope="module")
def obo(tmp_path_factory):
    """A two-concept ontology (loads in milliseconds; the pipeline tests check the mechanics)."""
    path = tmp_path_factory.mktemp("obo") / "trees.obo"
    path.write_text(TREES)
    return str(path)


def _raw(tmp_path, tiny_bert_dir, silver, obo=None, **prior):
    params = {"source": "hpo+mesh"} if obo is None else {"path": obo, "cache": False}
    return {
        "name": "tiny-silver",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification", "dictionary_types": BC5CDR_TYPES},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 40},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        "prior": {"name": "silver", "provider": "ontology", "params": params, "cache": None,
                  "attention": None, "silver": silver, **prior},
        "train": {"epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no", "fraction": 0.25, "subset": "per-seed", "seed": 3, "group_by_length": True},
    }


def test_the_default_unlabelled_text_is_exactly_the_rest_of_train(tmp_path, tiny_bert_dir):
    from priorkit.training.data import load_data
    from priorkit.training.plan import plan_for_run
    from priorkit.training.silver_stage import unlabeled_sentences

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir, {}))
    splits = load_data(cfg)
    plan = plan_for_run(cfg)
    gold = set(plan.train_indices(40).tolist())
    assert len(gold) == 10
    rest = unlabeled_sentences(plan, splits)
    assert rest == [splits["train"].examples[i]["words"] for i in range(40) if i not in gold]
    other = plan_for_run(config_from_dict(_raw(tmp_path, tiny_bert_dir, {}), overrides=["train.seed=4"]))
    assert unlabeled_sentences(other, splits) != rest  # per-seed subsets: another rest


@pytest.mark.parametrize("silver, features", [
    ({"recipe": "mix", "weight": 0.5, "unmatched": "ignore"}, {"learning_rate": 1e-2}),
    ({"recipe": "then-gold", "silver_epochs": 1}, None),
])
def test_the_recipes_train_through_the_pipeline(tmp_path, tiny_bert_dir, one_torch_thread, obo, silver, features):
    from priorkit.training.steps import run_pipeline

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir, silver, obo, features=features))
    result = run_pipeline(cfg, steps=("train", "evaluate"), log=lambda s: None)
    train = result.metrics["train"]
    assert 0.0 <= result.metrics["metrics"]["eval"]["f1"] <= 1.0
    assert train["examples"] == 10 and train["silver"]["sentences"] == 30
    if silver["recipe"] == "mix":  # one pass over gold x 2 epochs + silver x 1
        assert train["silver"]["rows"] == 50 and train["silver"]["first_stage"] is None
        assert train["steps"] == 7  # ceil(50 / 8)
    else:  # two stages: 30 silver rows (4 steps), then 2 epochs of 10 gold rows (2 x 2 steps)
        assert train["silver"]["first_stage"]["rows"] == 30 and train["silver"]["first_stage"]["steps"] == 4
        assert train["steps"] == 4 and train["silver"]["rows"] == 10
    shards = list((tmp_path / "runs" / "silver").glob("silver-*/shard-*.jsonl"))
    lines = [json.loads(line) for p in shards for line in p.read_text().splitlines()]
    assert len(lines) == 30 and any(t != "O" for row in lines for t in row["t"])  # real mentions labelled


# ---- kill -9 ---------------------------------------------------------------------
CHILD = textwrap.dedent("""
    import sys, time, priorkit
    from priorkit.datasets import read_dataset
    from priorkit.resources import embedded
    from priorkit.supervision.silver import Labeller, SilverStore

    BC5CDR_TYPES = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}

    class Slow(Labeller):
        def tags(self, words):
            time.sleep(0.01)
            return super().tags(words)

    rows = read_dataset(embedded("bc5cdr", "train.tsv"), "conll", limit=400)
    labeller = Slow(priorkit.get_provider("ontology", source="hpo+mesh"), BC5CDR_TYPES)
    SilverStore(sys.argv[1], labeller).fill([list(r.words) for r in rows], chunk_size=20)
""")


def test_labelling_resumes_after_kill_9_with_whole_shards_and_the_same_labels(tmp_path, ontology, bc5cdr_train):
    from priorkit.supervision.silver import Labeller, SilverStore

    sentences = [e["words"] for e in bc5cdr_train]
    labeller = Labeller(ontology, BC5CDR_TYPES)
    store = SilverStore(tmp_path / "killed", labeller)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "killed")], env=env)
    deadline = time.monotonic() + 180
    while len(store.shards()) < 3 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    written = store.shards()
    assert 3 <= len(written) < 20  # killed mid-run: some chunks of 20 written, not all
    for shard in written:  # every shard under a shard's name is whole
        assert len([json.loads(line) for line in shard.read_text().splitlines()]) == 20
    have = len(store.known())
    counts = store.fill(sentences, chunk_size=20)
    assert counts == {"known": have, "labelled": len(set(map(tuple, sentences))) - have}
    assert not list(store.dir.glob("*.tmp"))
    fresh = SilverStore(tmp_path / "fresh", labeller)
    fresh.fill(sentences, chunk_size=50)
    assert store.tags_for(sentences) == fresh.tags_for(sentences)


# ---- bad input -------------------------------------------------------------------------
def _file(tmp_path, body: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    return str(path)


NER = """\
name: s
task: {type: token-classification, dictionary_types: {mesh:D: Chemical, mesh:C: Disease, hpo: Disease}}
data:
  train: {source: bc5cdr, split: train, limit: 20}
  eval: {source: bc5cdr, split: devel, limit: 5}
"""
PRIOR = """\
prior:
  provider: ontology
  params: {source: hpo+mesh}
  attention: null
  silver: {}
"""


def test_an_empty_or_unreadable_unlabelled_file_stops_at_file_and_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n")
    cases = [(empty, "is empty"), (tmp_path / "missing.txt", "does not exist"), (tmp_path, "is not a file")]
    for target, words in cases:
        path = _file(tmp_path, NER + f"  unlabeled: {{path: {target}, format: text}}\n" + PRIOR)
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert str(err.value).startswith(f"{path}:6: data.unlabeled: ") and words in str(err.value)
        assert "\n" not in str(err.value)
    from priorkit.training.data import load_data

    path = _file(tmp_path, NER + f"  unlabeled: {{path: {blank}, format: text}}\n" + PRIOR)
    with pytest.raises(DataFormatError, match=rf"^{path}:6: data.unlabeled \({blank}\) holds no sentences"):
        load_data(load_config(path))


def test_a_type_the_task_does_not_have_stops_at_file_and_line_before_anything_is_written(tmp_path):
    from priorkit.training.steps import run_pipeline

    with_labels = _file(tmp_path, NER.replace("{type: token-classification, ",
                                              "{type: token-classification, labels: [O, B-Chemical, I-Chemical], ")
                        + PRIOR)
    with pytest.raises(ConfigError) as err:
        load_config(with_labels)
    assert str(err.value).startswith(f"{with_labels}:10: prior.silver.types: maps mesh:C -> Disease")
    bad_map = _file(tmp_path, NER + PRIOR.replace("silver: {}", "silver: {types: {mesh:C: Illness}}")
                    + f"output_dir: {tmp_path / 'runs'}\n")
    cfg = load_config(bad_map)  # the task's types come from the training tags: checked when they are read
    with pytest.raises(ConfigError) as err:
        run_pipeline(cfg, steps=("train",), log=lambda s: None)
    assert str(err.value).startswith(f"{bad_map}:10: prior.silver.types: maps mesh:C -> Illness")
    assert "Chemical, Disease" in str(err.value)
    assert not (tmp_path / "runs").exists()  # nothing half-written


def test_silver_on_a_task_other_than_token_classification_stops_at_file_and_line(tmp_path):
    path = _file(tmp_path, """\
        name: s
        data:
          train: {source: stsb, split: train}
          eval: {source: stsb, split: dev}
        prior:
          provider: ontology
          params: {source: hpo+mesh}
          attention: {mode: bias}
          silver: {recipe: mix}
        """)
    with pytest.raises(ConfigError, match=rf"^{path}:9: prior.silver: silver labels need task.type "
                                          "token-classification, not regression"):
        load_config(path)


def test_a_provider_without_matches_and_bad_values_stop_at_file_and_line(tmp_path, obo):
    path = _file(tmp_path, NER + PRIOR.replace("silver: {}", "silver: {provider: wordnet}"))
    with pytest.raises(ConfigError, match=rf"^{path}:10: prior.silver.provider: provider 'wordnet' has no concept"):
        load_config(path)
    path = _file(tmp_path, NER + PRIOR.replace("silver: {}", "silver: {recipe: then-gold, weight: 0.5}"))
    with pytest.raises(ConfigError, match=rf"^{path}:10: prior.silver.weight: applies to recipe: mix only"):
        load_config(path)
    path = _file(tmp_path, NER + PRIOR.replace("{source: hpo+mesh}", f"{{path: {obo}, cache: false}}")
                 .replace("silver: {}", "silver: {types: {mesh:Z: Disease}}"))
    with pytest.raises(ConfigError, match=rf"^{path}:10: prior.silver.types: groups \['mesh:Z'\] are not groups"):
        load_config(path)


def test_the_shipped_silver_pipeline_has_its_arms():
    from priorkit.config import prior_settings

    cfg = load_config(ROOT / "pipelines" / "bc5cdr-silver.yaml")
    s = prior_settings(cfg)
    assert s["none"] is None and s["features"].silver is None and s["features"].features is not None
    assert s["silver"].silver.recipe == "mix" and s["silver-then-gold"].silver.recipe == "then-gold"
    assert s["silver-control"].silver.provider == "random-spans" and s["silver-only"].features is None
    assert cfg.sweep.controls == {"silver": "silver-control"} and cfg.sweep.seeds == [0, 1, 2, 3, 4]
    assert cfg.train.subset == "per-seed" and cfg.data.test.sample == 2000

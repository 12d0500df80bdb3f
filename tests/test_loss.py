"""The training loss through the channels' one hook (priorkit/training/loss.py): the data's
``label_weights`` times each channel's ``token_loss_weights``, plus each channel's
``extra_loss`` (the ``supervise`` mode's KL), checked against a direct computation on a real
tiny model; and a channel from outside the package that weighs the loss -- one plug-in file,
tests/support/plugins/match_weight_channel.py -- trains through the pipeline on a BC5CDR slice,
changes the loss, saves, reloads, and ``priorkit show`` and ``priorkit predict`` run on it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import priorkit
from priorkit.channels import Channel
from priorkit.training.loss import task_loss, weighted_loss
from support.ontologies import TREES

PLUGIN = Path(__file__).resolve().parent / "support" / "plugins" / "match_weight_channel.py"


class PerExample(Channel):
    """Not registered: a loss hook alone (per-example weights and a constant extra term)."""

    name = "per_example"

    def __init__(self, weights, extra=None):
        self.weights, self.extra = weights, extra

    def token_loss_weights(self, model, batch):
        return self.weights

    def extra_loss(self, model):
        return self.extra


@pytest.fixture(scope="module")
def tagger(tiny_bert_dir):
    from transformers import BertForTokenClassification

    torch.manual_seed(0)
    return BertForTokenClassification.from_pretrained(str(tiny_bert_dir), num_labels=3).eval()


@pytest.fixture(scope="module")
def silver_batch(minilm_tokenizer):
    from priorkit.collator import PriorCollator
    from priorkit.supervision.silver import silver_rows

    gold = {"words": ["aspirin", "causes", "renal", "failure"], "labels": [1, 0, 2, 2]}
    silver = silver_rows([["lithium", "helps"]], [["B-X", "O"]], {"O": 0, "B-X": 1, "B-Y": 2}, weight=0.25,
                         unmatched_weight=0.5)[0]
    return PriorCollator(minilm_tokenizer)([gold, silver])


def direct(model, batch, weights):
    """Cross-entropy per token (reduction none) x weights, summed over labelled tokens / their number."""
    inputs = {k: v for k, v in batch.items() if k not in ("labels", "label_weights")}
    with torch.no_grad():
        logits = model(**inputs).logits
    labels = batch["labels"]
    per_token = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="none")
    mask = (labels != -100).float()
    return (per_token * weights * mask).sum() / mask.sum()


def stock(model, inputs):
    out = model(**inputs)
    return out.loss, out


def test_the_hook_weighs_the_loss_like_a_direct_computation(tagger, silver_batch):
    batch = silver_batch
    data = batch["label_weights"]
    labelled = batch["labels"] != -100
    assert sorted(set(data[1][labelled[1]].tolist())) == [0.125, 0.25]  # silver: weight x unmatched_weight on O
    with torch.no_grad():
        plain = tagger(**{k: v for k, v in batch.items() if k != "label_weights"}).loss
        # nothing weighs it: the stock loss itself, through ``stock``
        calls = []
        loss, _ = task_loss(tagger, {k: v for k, v in batch.items() if k != "label_weights"}, [],
                            lambda m, i: calls.append(1) or stock(m, i))
        assert calls == [1] and torch.equal(loss, plain)
        # weights of 1 everywhere: the model's own loss
        ones = PerExample(torch.ones(2))
        loss, _ = task_loss(tagger, {k: v for k, v in batch.items() if k != "label_weights"}, [ones], None)
        assert torch.allclose(loss, plain, atol=1e-6)
        # the data's weights alone: what the silver recipe trained with before the hook (same function)
        inputs = dict(batch)
        loss, _ = task_loss(tagger, inputs, [], None)
        assert "label_weights" not in inputs and "labels" in inputs  # taken out before the forward pass
        assert torch.allclose(loss, direct(tagger, batch, data), atol=1e-6)
        # data x a channel's per-example weights x another's per-token weights, plus an extra term
        per_token = torch.rand(batch["labels"].shape, generator=torch.Generator().manual_seed(1)) + 0.5
        token_channel = PerExample(per_token)
        loss, _ = task_loss(tagger, dict(batch), [PerExample(torch.tensor([2.0, 3.0]), torch.tensor(0.75)),
                                                  token_channel], None)
        expected = direct(tagger, batch, data * torch.tensor([2.0, 3.0])[:, None] * per_token) + 0.75
        assert torch.allclose(loss, expected, atol=1e-6)
        # the Trainer's count of labelled tokens over accumulated batches replaces this batch's own
        loss, _ = weighted_loss(tagger, {k: v for k, v in batch.items() if k != "label_weights"}, data,  # no loss-only key
                                num_items=torch.tensor(20))
        assert torch.allclose(loss, direct(tagger, batch, data) * labelled.sum() / 20, atol=1e-6)
    with pytest.raises(priorkit.PriorkitError, match=r"per_example channel's token_loss_weights.*\(3,\)"):
        task_loss(tagger, dict(batch), [PerExample(torch.ones(3))], None)


def test_per_example_weights_on_a_sequence_task_and_the_supervise_term_through_extra_loss(tiny_bert_dir,
                                                                                         minilm_tokenizer):
    from transformers import BertForSequenceClassification

    from priorkit.attention import enable_prior_attention, supervision_loss
    from priorkit.channels.attention.channel import AttentionChannel
    from priorkit.collator import PriorCollator

    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(str(tiny_bert_dir), num_labels=3, hidden_dropout_prob=0.0,
                                                          attention_probs_dropout_prob=0.0)
    batch = PriorCollator(minilm_tokenizer)([{"text_a": "aspirin causes nausea", "label": 2},
                                             {"text_a": "lithium", "text_b": None, "label": 0}])
    with torch.no_grad():
        logits = model.eval()(**{k: v for k, v in batch.items() if k != "labels"}).logits
        per = torch.nn.functional.cross_entropy(logits, batch["labels"], reduction="none")
        loss, _ = task_loss(model, dict(batch), [PerExample(torch.tensor([1.0, 4.0]))], None)
        assert torch.allclose(loss, (per[0] + 4 * per[1]) / 2, atol=1e-6)
        loss, _ = task_loss(model, dict(batch), [PerExample(torch.ones(2))], None)
        assert torch.allclose(loss, model(**batch).loss, atol=1e-6)
    with pytest.raises(priorkit.PriorkitError, match=r"shape \(2, \d+\); it must be \(B,\) per example"):
        task_loss(model, dict(batch), [PerExample(torch.ones(batch["input_ids"].shape))], None)
    with pytest.raises(priorkit.PriorkitError, match="one label per example"):
        weighted_loss(model, dict(batch), torch.ones(batch["input_ids"].shape))

    # supervise: the attention channel's extra_loss is the mode's KL, added to the task loss
    enable_prior_attention(model, layers=[0], mode="supervise", weight=0.5)
    channel = AttentionChannel(None, None)
    L = batch["input_ids"].shape[1]
    prior = torch.rand(2, L, L, generator=torch.Generator().manual_seed(2))
    model.train()
    out = model(**batch, prior=prior)
    kl = supervision_loss(model)
    assert kl is not None and kl > 0
    loss, _ = task_loss(model, {**batch, "prior": prior}, [channel], stock)
    assert torch.allclose(loss, out.loss + kl, atol=1e-6)
    assert channel.extra_loss(model) is None  # taken once, by the loss
    model.eval()
    with torch.no_grad():
        loss, _ = task_loss(model, {**batch, "prior": prior}, [channel], stock)
    assert torch.allclose(loss, model(**batch, prior=prior).loss)  # evaluation: no auxiliary term


def test_the_loss_keys_never_reach_the_model(tagger, silver_batch):
    from priorkit.attention.guard import PriorNotEnabledError
    from priorkit.batch_keys import DATA, LOSS_ONLY, OWNED

    assert OWNED["label_weights"] == DATA and "label_weights" in LOSS_ONLY  # no batch key without an owner
    with pytest.raises(PriorNotEnabledError, match="label_weights weighs the loss .the data's own weights"):
        tagger(**{k: v for k, v in silver_batch.items() if k != "labels"})


# ---- a channel that weighs the loss, from a plug-in file --------------------------


def _config(tmp_path, tiny_bert_dir, channels):
    from priorkit.config import config_from_dict

    obo = tmp_path / "trees.obo"
    obo.write_text(TREES)
    return config_from_dict({
        "name": "weighted",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 40},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},
        "prior": {"name": "match", "provider": "ontology", "params": {"path": str(obo), "cache": False},
                  "cache": None, "attention": None, "channels": channels} if channels else None,
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no", "seed": 3, "logging_steps": 1},
    })


def test_a_plugin_channel_that_weighs_the_loss_trains_saves_reloads_shows_and_predicts(
        tmp_path, tiny_bert_dir, monkeypatch, one_torch_thread):
    from click.testing import CliRunner

    from priorkit.cli import cli
    from priorkit.training.steps import run_pipeline

    plugins = tmp_path / "plugins"
    plugins.mkdir(mode=0o755)
    shutil.copyfile(PLUGIN, plugins / PLUGIN.name)
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugins))

    def losses(channels):
        result = run_pipeline(_config(tmp_path, tiny_bert_dir, channels), steps=("train",), log=lambda m: None)
        log = json.loads((result.plan.run_dir / "train_log.json").read_text())
        return [e["loss"] for e in log if "loss" in e], result.plan.run_dir / "model"

    plain, _ = losses({})
    weighted, folder = losses({"match_weight": {"weight": 5.0}})
    assert len(plain) == len(weighted) == 5  # 40 sentences, batches of 8
    first = next(i for i, (a, b) in enumerate(zip(plain, weighted)) if a != b)  # same start, same batches
    assert weighted[first] > plain[first]  # matched tokens count 5 times, never less than once

    info = json.loads((folder / "priorkit.json").read_text())
    assert info["channels"]["match_weight"]["weight"] == 5.0
    assert "5 x the loss of the tokens the ontology provider matches" in (folder / "README.md").read_text()
    model = priorkit.load_model(folder)
    assert [c.name for c in model.channels] == ["match_weight"]
    words = ["Cocaine", "induced", "hypotension", "."]
    predicted = model.predict([words])[0]
    assert len(predicted["tags"]) == 4
    assert model.channels[0]._provider is None  # predicting never needed the provider

    runner = CliRunner()
    shown = runner.invoke(cli, ["--plugins-dir", str(plugins), "show", str(folder), " ".join(words),
                                "--json", str(tmp_path / "show.json")])
    assert shown.exit_code == 0, shown.output
    assert "compare its match_weight on and off" in shown.output
    assert json.loads((tmp_path / "show.json").read_text())["channels"] == ["match_weight"]
    (tmp_path / "in.conll").write_text("\n".join(words) + "\n\n")
    ran = runner.invoke(cli, ["--plugins-dir", str(plugins), "predict", str(folder), str(tmp_path / "in.conll"),
                              "--input-format", "conll", "--out", str(tmp_path / "out.jsonl"), "--no-progress"])
    assert ran.exit_code == 0, ran.output
    record = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert record["tags"] == predicted["tags"]

"""priorkit show on models with other channels than the attention prior: a model trained with
token features only (a tiny random BERT beside the real MiniLM tokenizer, a few real BC5CDR
sentences, a hand-made OBO ontology) and the format-3 fixture with both channels.  The batch
is the model's own collator's, so the features reach the model: attention with them differs
from attention without them, and the features are shown per token."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import priorkit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "model-v3"
SENTENCE = "Cocaine and heparin toxicity caused a seizure ."


@pytest.fixture(scope="module")
def features_run(tmp_path_factory, tiny_bert_dir):
    from priorkit.config import config_from_dict
    from priorkit.training.steps import run_pipeline

    tmp = tmp_path_factory.mktemp("feats")
    raw = {
        "name": "show-features",
        "output_dir": str(tmp / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 24},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},
        "prior": {"name": "feats", "provider": "ontology", "cache": None, "attention": None,
                  "params": {"path": str(FIXTURE / "trees.obo"), "cache": False},
                  "features": {"concept_buckets": 8, "learning_rate": 3e-2}},
        "train": {"epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no"},
    }
    result = run_pipeline(config_from_dict(raw), steps=("train",), log=lambda s: None)
    return result.plan.run_dir


def in_process(capsys, *args: str) -> tuple[int, str, str]:
    from priorkit.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_attention_of_a_features_model_differs_with_and_without_its_features(features_run):
    model = priorkit.load_model(features_run)
    assert [c.name for c in model.channels] == ["features"]
    on = model.attention(SENTENCE, layers=[0, 1])
    off = model.attention(SENTENCE, layers=[0, 1], off="features")
    assert on.channels_on == ("features",) and off.channels_on == ()
    assert on.prior is None and not on.prior_on
    assert np.abs(on.weights - off.weights).max() > 1e-5  # the features reach the model
    stock = model.attention(SENTENCE, layers=[0, 1], off="all")
    assert np.array_equal(stock.weights, off.weights)
    with pytest.raises(priorkit.PriorkitError, match="no channel attention; its channels: features"):
        model.attention(SENTENCE, off="attention")


def test_the_feature_view_names_groups_and_sizes_per_token(features_run):
    from priorkit.inference.attention_view import compare

    model = priorkit.load_model(features_run)
    result = compare(model, SENTENCE)
    view = result.token_views["features"]
    tokens = result.with_prior.tokens
    assert len(view.labels) == len(view.values) == len(tokens)
    labelled = {t: l for t, l in zip(tokens, view.labels) if l}
    assert labelled["cocaine"] == "B-mesh:D" and labelled["seizure"] == "B-mesh:C"
    # B on the mention's first piece only; its other pieces and words get I, in both trees
    assert labelled["he"] == "B-mesh:C B-mesh:D" and labelled["##par"] == labelled["toxicity"] == "I-mesh:C I-mesh:D"
    for label, size in zip(view.labels, view.values):
        assert size >= 0 and (size == 0 or label)  # W and E start at zero: an unmatched token gets nothing
    assert max(view.values) > 0  # the columns of groups seen in training were learnt
    assert all(s.moved > 0 for s in result.summary)
    assert np.isnan(result.summary[0].shift)  # no attention prior: no favoured cells


def test_show_on_a_features_model_shows_the_features_and_no_no_prior_note(features_run, tmp_path, capsys):
    doc_path, png = tmp_path / "a.json", tmp_path / "a.png"
    code, out, err = in_process(capsys, "show", str(features_run), SENTENCE, "--heads", "0,1",
                                "--json", str(doc_path), "--out", str(png))
    assert code == 0, err
    assert "without a prior" not in err and "without knowledge" not in err
    assert "has no attention prior" in err
    assert "the features channel per token" in out and "B-mesh:D" in out and "added feature size" in out
    doc = json.loads(doc_path.read_text())
    assert doc["channels"] == ["features"] and doc["prior"] is None
    assert doc["token_views"]["features"]["labels"][1] == "B-mesh:D"  # [CLS] cocaine ...
    entry = doc["attention"][0]
    assert np.abs(np.array(entry["with_prior"]) - np.array(entry["without_prior"])).max() > 1e-5
    assert png.exists()


def test_show_on_both_channels_switches_each_off_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # the fixture's ontology path is relative to the repo root
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE / "model", folder)
    model = priorkit.load_model(folder)
    from priorkit.inference.attention_view import compare

    result = compare(model, SENTENCE)
    assert result.channels == ("attention", "features") and set(result.off) == {"attention", "features"}
    no_att, no_feat = result.off["attention"], result.off["features"]
    assert no_att.channels_on == ("features",) and no_feat.channels_on == ("attention",)
    assert not np.array_equal(no_att.weights, result.with_prior.weights)
    assert not np.array_equal(no_feat.weights, result.with_prior.weights)
    # the summary's shift is the attention prior's own: measured with the features still on
    s = result.summary[0]
    from priorkit.inference.attention_view import favoured_mass

    mass, _, rows = favoured_mass(no_att.weights[0], result.with_prior.prior)
    assert s.mass_without == pytest.approx(float(mass[0] / rows))
    code, out, err = in_process(capsys, "show", str(folder), SENTENCE, "--json", "-")
    doc = json.loads(out)
    assert code == 0 and set(doc["channel_off"]) == {"attention", "features"} and "note" not in err

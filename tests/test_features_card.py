"""What a model folder says about its prior when the prior feeds token features: priorkit.json
(``channels.features``, ``channels.attention``) and the model card, for a model with token
features only and one with both token features and prior attention; and a folder written
before the channels (format 2, with the features' side files) converted on reading.  Real
folders: a tiny random BERT saved by transformers, a hand-made OBO ontology."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import priorkit
from priorkit.channels.attention.channel import AttentionChannel
from priorkit.channels.features.channel import FeatureChannel, summary
from priorkit.channels.features import FeatureBuilder, FeatureConfig
from priorkit.inference import manifest as mf

TWO_TREES = """\
format-version: 1.2

[Term]
id: MESHCAT:C
name: Diseases

[Term]
id: MESHCAT:D
name: Chemicals

[Term]
id: MESH:D1
name: seizure
is_a: MESHCAT:C

[Term]
id: MESH:D2
name: cocaine
is_a: MESHCAT:D
"""


@pytest.fixture(scope="module")
def obo(tmp_path_factory):
    path = tmp_path_factory.mktemp("obo") / "trees.obo"
    path.write_text(TWO_TREES)
    return str(path)


def _saved_folder(folder, minilm_tokenizer, obo, *, attention: bool, config: FeatureConfig,
                  control: bool = False):
    """A token-classification model folder as the train step leaves it: weights and config.json
    (with prior attention settings when ``attention``), the feature files, then priorkit.json
    and the card."""
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    model = BertForTokenClassification(BertConfig(
        vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, num_labels=3))
    channels = [AttentionChannel(None, {"layers": [0], "mode": "bias", "heads": None, "options": {}})] if attention else []
    name, params = "ontology", {"path": obo, "cache": False}
    if control:  # the control provider: the ontology's matches moved to random spans
        name, params = "random-spans", {"provider": "ontology", "params": params, "seed": 0}
    provider = priorkit.get_provider(name, **params)
    builder = FeatureBuilder(provider, config.resolved(name, params), minilm_tokenizer, 32)
    channels.append(FeatureChannel(builder))
    for channel in channels:
        channel.attach(model)
    model.save_pretrained(folder)
    setting = {"name": "feats", "provider": name, "params": params,
               "attention": {"mode": "bias"} if attention else None, "features": config.to_dict()}
    meta = {"task": {"type": "token-classification", "label_scale": 1.0, "metric": "f1"},
            "labels": ["O", "B-Chemical", "B-Disease"], "prior": setting, "prior_name": "feats",
            "pipeline": "card-test", "max_length": 32, "config": {"data": {}}}
    info = mf.write_model_files(folder, meta, "words", channels, command="priorkit run card-test.yaml")
    return info, (folder / mf.CARD).read_text(), provider


def test_a_features_only_folder_describes_its_token_features_not_attention(tmp_path, minilm_tokenizer, obo):
    info, card, provider = _saved_folder(tmp_path, minilm_tokenizer, obo, attention=False,
                                         config=FeatureConfig(concept_buckets=16), control=True)
    assert list(info["channels"]) == ["features"]  # no attention
    feats = summary(info["channels"]["features"])
    assert feats["provider"] == "random-spans" and feats["groups"] == ["mesh:C", "mesh:D"]
    assert feats["n_features"] == 4 and feats["concept_buckets"] == 16 and feats["control"] == "random-spans"
    assert feats["fingerprint"] == provider.fingerprint
    assert json.loads((tmp_path / mf.PRIORKIT_JSON).read_text())["channels"] == info["channels"]

    assert "in its attention" not in card and "prior-guided-attention" not in card
    assert "switches prior attention back on" not in card
    assert "with token features from the random-spans provider's concept matches (B/I tags of mesh:C, mesh:D)" in card
    assert "- token-features" in card and "- prior-random-spans" in card
    assert "| token features | 4 (B/I tags of mesh:C, mesh:D), hashed concept ids in 16 buckets |" in card
    assert f"| feature fingerprint | `{provider.fingerprint}` |" in card
    assert "| attention | none: the prior feeds the token features only |" in card
    assert "| control | random-spans" in card
    assert "| layout |" not in card  # the attention prior's layout does not apply
    assert "model.safetensors" in card and "without the token features." in card

    # the evaluate step rewrites the card from priorkit.json: the features stay described
    assert mf.add_scores(tmp_path, {"eval": {"f1": 0.5}})
    again = (tmp_path / mf.CARD).read_text()
    assert "| f1 | 0.5000 |" in again and "| token features | 4 (B/I tags of mesh:C, mesh:D)" in again


def test_a_folder_with_features_and_attention_describes_both(tmp_path, minilm_tokenizer, obo):
    info, card, provider = _saved_folder(tmp_path, minilm_tokenizer, obo, attention=True,
                                         config=FeatureConfig(groups=["mesh:D"]))
    assert list(info["channels"]) == ["attention", "features"]
    assert info["channels"]["attention"]["mode"] == "bias"
    assert info["channels"]["features"]["config"]["groups"] == ["mesh:D"]
    assert ("with a prior from the ontology provider in its attention and token features from the ontology provider's "
            "concept matches (B/I tags of mesh:D)") in card
    assert "- prior-guided-attention" in card and "- token-features" in card
    assert card.count("- prior-ontology") == 1
    assert "mode bias, layers [0]" in card and "| token features | 2 (B/I tags of mesh:D) |" in card
    assert "switches prior attention back on" in card and "model.safetensors" in card
    assert "without the prior attention and the token features." in card


def test_a_format_2_folder_with_side_files_loads_through_the_converter(tmp_path, minilm_tokenizer, obo):
    """A folder as priorkit wrote it before the channels: priorkit.json format 2 (prior.attention,
    prior.features) and priorkit-features.json / .safetensors beside the weights.  read_info
    converts it; load_model predicts exactly what the saved model computed."""
    from safetensors.torch import save_file

    from priorkit.channels.features import feature_module

    info, _, provider = _saved_folder(tmp_path, minilm_tokenizer, obo, attention=True,
                                      config=FeatureConfig(concept_buckets=8))
    minilm_tokenizer.save_pretrained(tmp_path)
    model = priorkit.load_model(tmp_path)  # format 3, as written now
    module = feature_module(model.model)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_()
    words = [["cocaine", "and", "a", "seizure"], ["seizure"]]
    want = model.logits(words)
    # the same folder as format 2 wrote it: the features' weights in the side file (the copy in
    # model.safetensors is the untrained one here, so the side file must win, as it did)
    described = info["channels"]["features"]
    (tmp_path / "priorkit-features.json").write_text(json.dumps(
        {"format": 1, "config": described["config"], "n_features": described["n_features"], "hidden": 32,
         "provider": described["provider"]}))
    save_file({k: v.detach().contiguous() for k, v in module.state_dict().items()},
              str(tmp_path / "priorkit-features.safetensors"))
    old = {k: v for k, v in info.items() if k != "channels"}
    old["format"] = 2
    old["prior"] = {**info["prior"], "attention": {"format": 1, **info["channels"]["attention"]},
                    "features": summary(described)}
    (tmp_path / mf.PRIORKIT_JSON).write_text(json.dumps(old))
    converted = mf.read_info(tmp_path)
    assert converted["format"] == 4 and converted["channels"] == {
        "attention": info["channels"]["attention"],
        "features": {**{k: described[k] for k in ("config", "n_features", "provider")},
                     "weights": {"file": "priorkit-features.safetensors", "prefix": "priorkit_features."}}}
    assert converted["run"] is None  # no priorkit-run.json beside it
    assert "attention" not in converted["prior"] and "features" not in converted["prior"]
    again = priorkit.load_model(tmp_path)
    got = again.logits(words)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert again.builder is not None and again.features.groups == ["mesh:C", "mesh:D"]
    (tmp_path / mf.PRIORKIT_JSON).write_text(json.dumps({**old, "format": 9}))
    with pytest.raises(priorkit.PriorkitError, match="format 9"):
        mf.read_info(tmp_path)


def test_a_folder_without_features_has_no_features_channel(tmp_path):
    from priorkit.inference.converter import _features_v2

    assert _features_v2(tmp_path) is None

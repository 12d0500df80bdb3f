"""What a model folder says about its prior when the prior feeds token features: priorkit.json
(``prior.features``, ``prior.attention``) and the model card, for a model with token features
only and one with both token features and prior attention.  Real folders: a tiny random BERT
saved by transformers, the features saved by priorkit, a hand-made OBO ontology."""
from __future__ import annotations

import json

import pytest
import torch

import priorkit
from priorkit.features import FeatureBuilder, FeatureConfig, attach_for, save_features
from priorkit.inference import folder as mf

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
    if attention:
        priorkit.enable_prior_attention(model, layers=(0,), mode="bias")
    name, params = "ontology", {"path": obo, "cache": False}
    if control:  # the control provider: the ontology's matches moved to random spans
        name, params = "random-spans", {"provider": "ontology", "params": params, "seed": 0}
    provider = priorkit.get_provider(name, **params)
    builder = FeatureBuilder(provider, config.resolved(name, params), minilm_tokenizer, 32)
    attach_for(model, builder)
    model.save_pretrained(folder)
    assert save_features(model, builder, folder)
    setting = {"name": "feats", "provider": name, "params": params,
               "attention": {"mode": "bias"} if attention else None, "features": config.to_dict()}
    meta = {"task": {"type": "token-classification", "label_scale": 1.0, "metric": "f1"},
            "labels": ["O", "B-Chemical", "B-Disease"], "prior": setting, "prior_name": "feats",
            "pipeline": "card-test", "max_length": 32, "config": {"data": {}}}
    info = mf.write_model_files(folder, meta, "words", command="priorkit run card-test.yaml")
    return info, (folder / mf.CARD).read_text(), provider


def test_a_features_only_folder_describes_its_token_features_not_attention(tmp_path, minilm_tokenizer, obo):
    info, card, provider = _saved_folder(tmp_path, minilm_tokenizer, obo, attention=False,
                                         config=FeatureConfig(concept_buckets=16), control=True)
    prior = info["prior"]
    assert prior["attention"] is None
    feats = prior["features"]
    assert feats["provider"] == "random-spans" and feats["groups"] == ["mesh:C", "mesh:D"]
    assert feats["n_features"] == 4 and feats["concept_buckets"] == 16 and feats["control"] == "random-spans"
    assert feats["fingerprint"] == provider.fingerprint
    assert json.loads((tmp_path / mf.PRIORKIT_JSON).read_text())["prior"]["features"] == feats

    assert "in its attention" not in card and "prior-guided-attention" not in card
    assert "switches prior attention back on" not in card
    assert "with token features from the random-spans provider's concept matches (B/I tags of mesh:C, mesh:D)" in card
    assert "- token-features" in card and "- prior-random-spans" in card
    assert "| token features | 4 (B/I tags of mesh:C, mesh:D), hashed concept ids in 16 buckets |" in card
    assert f"| feature fingerprint | `{provider.fingerprint}` |" in card
    assert "| attention | none: the prior feeds the token features only |" in card
    assert "| control | random-spans" in card
    assert "| layout |" not in card  # the attention prior's layout does not apply
    assert "priorkit-features.json" in card and "without the token features." in card

    # the evaluate step rewrites the card from priorkit.json: the features stay described
    assert mf.add_scores(tmp_path, {"eval": {"f1": 0.5}})
    again = (tmp_path / mf.CARD).read_text()
    assert "| f1 | 0.5000 |" in again and "| token features | 4 (B/I tags of mesh:C, mesh:D)" in again


def test_a_folder_with_features_and_attention_describes_both(tmp_path, minilm_tokenizer, obo):
    info, card, provider = _saved_folder(tmp_path, minilm_tokenizer, obo, attention=True,
                                         config=FeatureConfig(groups=["mesh:D"]))
    prior = info["prior"]
    assert prior["attention"]["mode"] == "bias" and prior["features"]["groups"] == ["mesh:D"]
    assert ("with a prior from the ontology provider in its attention and token features from the ontology provider's "
            "concept matches (B/I tags of mesh:D)") in card
    assert "- prior-guided-attention" in card and "- token-features" in card
    assert card.count("- prior-ontology") == 1
    assert "mode bias, layers [0]" in card and "| token features | 2 (B/I tags of mesh:D) |" in card
    assert "switches prior attention back on" in card and "priorkit-features.safetensors" in card
    assert "without the prior attention and the token features." in card


def test_a_folder_without_features_has_none_on_record(tmp_path):
    assert mf.features_description(tmp_path) is None

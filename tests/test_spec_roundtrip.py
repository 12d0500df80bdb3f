"""A model folder gives back the prior it was trained with: for generated PriorSpecs (every
field varied), the builder load_model rebuilds from priorkit.json makes bit-identical
priors to the training builder on sample inputs.  Real WordNet and a real ontology (it
groups words into concept mentions, which ``within: known`` is about), a tiny random BERT
beside the real MiniLM tokenizer."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import priorkit
from priorkit.align import PriorBuilder
from priorkit.errors import PriorkitError
from priorkit.inference import manifest as mf
from priorkit.providers.spec import PriorSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PAIRS = [("Abnormality of the heart was seen, the dog barked.", "Heart abnormality and a cat!"),
         ("A man is playing a guitar.", "A woman plays the guitar, with an abnormality of the lung.")]
SINGLES = ["The lung abnormality of the patient.", "A man plays the guitar."]
MAX_LENGTH = 32


def providers() -> st.SearchStrategy:
    wordnet = st.tuples(st.just("wordnet"), st.sampled_from([{}, {"measure": "wup"}, {"measure": "path"}]))
    ontology = st.tuples(st.just("ontology"), st.sampled_from([
        {"path": str(FIXTURES / "ontology" / "mini.obo"), "cache": False},
        {"path": str(FIXTURES / "ontology" / "mini.obo"), "cache": False, "measure": "concept"}]))
    return st.one_of(wordnet, ontology)


@st.composite
def specs(draw) -> PriorSpec:
    preset = draw(st.sampled_from([None, "paper"]))
    provider, params = draw(providers())
    if preset == "paper" and draw(st.booleans()):
        provider, params = None, {}  # the preset's own provider
    fields = dict(
        provider=provider, params=params, preset=preset,
        layout=draw(st.sampled_from(["full", "paper"])), keys=draw(st.sampled_from(["strip", "paper"])),
        neutral=draw(st.sampled_from([1.0, 0.5, 0.0, 1.5])),
        stop_words=draw(st.sampled_from([None, ["the", "a"], ["heart"]])),
        stop_value=draw(st.sampled_from([0.0, 0.25])), within=draw(st.sampled_from(["all", "known"])))
    try:
        return PriorSpec(**fields)
    except PriorkitError:
        assume(False)  # a spec its own rules refuse (paper layout with within: known ...)


@pytest.fixture(scope="module")
def folder_tokenizer(model_folder):
    """The tokenizer the training builder had: the one saved beside the model."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_folder))


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory, tiny_bert_dir):
    """A saved (untrained) sequence-regression model with its tokenizer: only priorkit.json changes."""
    from transformers import AutoTokenizer, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("model")
    BertForSequenceClassification.from_pretrained(str(tiny_bert_dir), num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(tiny_bert_dir)).save_pretrained(folder)
    return folder


def write_info(folder: Path, spec: PriorSpec) -> None:
    """priorkit.json as the pipeline's train step writes it (describe_run on a run's metadata)."""
    setting = {**spec.to_dict(), "name": "p", "cache": None, "attention": {}, "train": {}}
    meta = {"task": {"type": "regression", "label_scale": 1.0, "metric": "spearman"}, "labels": None,
            "prior": setting, "cache": None, "max_length": MAX_LENGTH, "config": {}}
    attention = {"layers": [0], "mode": "multiply"}  # as config.json's priorkit section records it
    info = mf.describe_run(meta, {"attention": attention}, "pairs" if spec.resolved().layout == "paper" else "any",
                           command="test")
    (folder / mf.PRIORKIT_JSON).write_text(json.dumps(info))


def priors(builder: PriorBuilder, layout: str) -> list[list]:
    out = [builder.build(a, b).tolist() for a, b in PAIRS]
    if layout == "full":
        out += [builder.build(t).tolist() for t in SINGLES]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.filter_too_much])
@given(spec=specs())
def test_a_saved_model_folder_builds_the_training_priors(spec, model_folder, folder_tokenizer):
    write_info(model_folder, spec)
    stored = json.loads((model_folder / mf.PRIORKIT_JSON).read_text())["prior"]["spec"]
    assert PriorSpec.from_dict(stored) == spec  # every field kept
    trained = PriorBuilder.from_spec(spec, folder_tokenizer, truncation=True, max_length=MAX_LENGTH)
    loaded = priorkit.load_model(model_folder, use_cache=False).builder
    assert loaded.describe() == trained.describe()
    assert priors(loaded, trained.layout) == priors(trained, trained.layout)


def test_within_known_changes_the_prior_and_survives_the_folder(model_folder, minilm_tokenizer):
    """The issue's bug, shown: a concept prior with within: known differs from within: all on a
    split concept mention, and the loaded model keeps known."""
    spec = PriorSpec(provider="ontology", params={"path": str(FIXTURES / "ontology" / "mini.obo"),
                                                   "cache": False, "measure": "concept"},
                     within="known", neutral=0.5)
    write_info(model_folder, spec)
    loaded = priorkit.load_model(model_folder, use_cache=False).builder
    assert loaded.within == "known"
    text = SINGLES[0]
    known = loaded.build(text).tolist()
    everything = PriorBuilder.from_spec(PriorSpec(**{**spec.to_dict(), "within": "all"}), minilm_tokenizer,
                                        truncation=True, max_length=MAX_LENGTH).build(text).tolist()
    assert known != everything


def test_a_format_1_folder_still_loads(model_folder, xia2021):
    """Folders written before the spec was stored whole: their hand-picked fields become a spec."""
    info = {"format": 1, "task": {"type": "regression", "labels": None, "label_scale": 1.0, "metric": "spearman"},
            "inputs": "pairs", "max_length": MAX_LENGTH,
            "prior": {"name": "paper", "preset": "paper", "provider": "wordnet", "params": {"measure": "xia2021"},
                      "provider_version": "1", "plugin": "wordnet", "fingerprint": xia2021.fingerprint,
                      "layout": "paper", "keys": "paper", "neutral": 1.0, "stop_words": "paper",
                      "attention": None, "cache": None}}
    (model_folder / mf.PRIORKIT_JSON).write_text(json.dumps(info))
    loaded = priorkit.load_model(model_folder, use_cache=False)
    assert loaded.info["prior"]["spec"]["preset"] == "paper"
    reference = PriorBuilder.paper(loaded.tokenizer, provider=xia2021, truncation=True, max_length=MAX_LENGTH)
    assert loaded.builder.describe() == reference.describe()
    assert [loaded.builder.build(a, b).tolist() for a, b in PAIRS] == [reference.build(a, b).tolist()
                                                                      for a, b in PAIRS]


def test_an_output_folder_with_one_run_loads_and_with_several_names_them(model_folder, tmp_path):
    write_info(model_folder, PriorSpec(preset="paper"))
    out = tmp_path / "runs" / "demo"
    first = out / "paper" / "frac1" / "seed0"
    first.mkdir(parents=True)
    (first / "run.json").write_text("{}")
    shutil.copytree(model_folder, first / "model")
    assert priorkit.load_model(out, use_cache=False).folder == first / "model"
    second = out / "none" / "frac1" / "seed1"
    second.mkdir(parents=True)
    (second / "run.json").write_text("{}")
    shutil.copytree(model_folder, second / "model")
    with pytest.raises(PriorkitError, match=r"holds 2 runs \(none/frac1/seed1, paper/frac1/seed0\); pass one"):
        priorkit.load_model(out)

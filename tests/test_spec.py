"""PriorSpec: one description of a prior, what it builds, and its JSON/YAML form."""
from __future__ import annotations

import doctest

import pytest

import priorkit
from priorkit.align import PriorBuilder
from priorkit.align.words import PAPER_STOP_WORDS, WordKeys
from priorkit.errors import PriorkitError
from priorkit.providers.spec import PAPER_PROVIDER, PriorSpec

PAIRS = [("A man is playing a guitar.", "A woman plays the guitar!"),
         ("Selegiline-induced postural hypotension.", "Low blood pressure, again")]


def test_docstring_examples():
    import priorkit.providers.spec

    assert doctest.testmod(priorkit.providers.spec).failed == 0


def test_paper_preset_is_the_papers_builder(minilm_tokenizer, xia2021):
    spec = PriorSpec(preset="paper")
    resolved = spec.resolved()
    assert (resolved.provider, resolved.params) == PAPER_PROVIDER
    assert (resolved.layout, resolved.keys, resolved.neutral) == ("paper", "paper", 1.0)
    assert set(resolved.stop_words) == PAPER_STOP_WORDS
    assert spec.build_provider().fingerprint == xia2021.fingerprint
    built = PriorBuilder.from_spec(spec, minilm_tokenizer, provider=xia2021, truncation=True, max_length=64)
    reference = PriorBuilder.paper(minilm_tokenizer, provider=xia2021, truncation=True, max_length=64)
    assert built.describe() == reference.describe()
    words = WordKeys.from_spec(spec, xia2021)
    assert type(words) is WordKeys
    for a, b in PAIRS:
        assert words.word_pairs(a, b) == reference.word_pairs(a, b)
        assert built.build(a, b).tolist() == reference.build(a, b).tolist()


def test_a_named_provider_replaces_the_presets_own():
    spec = PriorSpec(provider="wordnet", params={"measure": "wup"}, preset="paper").resolved()
    assert (spec.provider, spec.params, spec.layout) == ("wordnet", {"measure": "wup"}, "paper")
    assert spec.build_provider().fingerprint == priorkit.get_provider("wordnet", measure="wup").fingerprint


def test_full_layout_spec_matches_a_hand_made_builder(minilm_tokenizer):
    provider = priorkit.get_provider("wordnet", measure="path")
    spec = PriorSpec(provider="wordnet", params={"measure": "path"}, layout="full", keys="paper", neutral=0.5)
    built = PriorBuilder.from_spec(spec, minilm_tokenizer)
    reference = PriorBuilder(minilm_tokenizer, provider, layout="full", keys="paper", neutral=0.5)
    assert built.describe() == reference.describe()
    a, b = PAIRS[0]
    assert built.build(a, b).tolist() == reference.build(a, b).tolist()


def test_json_and_yaml_round_trips():
    for spec in (PriorSpec(preset="paper"),
                 PriorSpec(provider="combine", params={"providers": [{"name": "wordnet", "measure": "wup"},
                                                                     "embedding"], "how": "max"},
                           layout="full", keys="paper", neutral=0.25, stop_words=["the", "a"], stop_value=0.1)):
        assert PriorSpec.from_json(spec.to_json()) == spec
        assert PriorSpec.from_yaml(spec.to_yaml()) == spec
        assert PriorSpec.from_dict(spec.to_dict()) == spec


def test_bad_specs_name_the_culprit():
    with pytest.raises(PriorkitError, match=r"unknown prior spec field\(s\) 'provder'"):
        PriorSpec.from_dict({"provder": "wordnet"})
    with pytest.raises(PriorkitError, match=r"needs a provider .* or preset 'paper'"):
        PriorSpec()
    with pytest.raises(PriorkitError, match=r"unknown prior preset 'xia'"):
        PriorSpec(preset="xia")
    with pytest.raises(PriorkitError, match=r"unknown layout 'diagonal'"):
        PriorSpec(provider="wordnet", layout="diagonal")
    with pytest.raises(PriorkitError, match=r"params must be a mapping"):
        PriorSpec(provider="wordnet", params=["measure", "wup"])
    with pytest.raises(PriorkitError, match=r"not valid JSON"):
        PriorSpec.from_json("{provider: wordnet")


def test_dask_workers_rebuild_the_provider_from_its_spec():
    from priorkit.precompute.dask_worker import build_provider, provider_recipe

    provider = priorkit.get_provider("wordnet", measure="wup")
    recipe = provider_recipe(provider)
    assert recipe.prior == PriorSpec(provider="wordnet", params=provider.params)
    assert build_provider(recipe).fingerprint == provider.fingerprint

"""Control providers: ``shuffled`` keeps the inner provider's values and moves them between
pairs (deterministic per seed, one value per pair through the cache), ``constant`` gives
one value; bad parameters stop a pipeline at file:line.  Real WordNet, real DuckDB."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import priorkit
from priorkit.errors import PriorkitError
from priorkit.config import ConfigError, load_config

WORDS_L = ["cat", "dog", "car", "bus", "tree", "house", "river", "king", "apple", "doctor", "ship", "bread"]
WORDS_R = ["feline", "puppy", "truck", "train", "plant", "home", "stream", "queen", "pear", "nurse", "boat",
           "cake"]


def pairs() -> tuple[list[str], list[str]]:
    """Every (left, right) combination: 144 pairs with many distinct WordNet values."""
    left = [a for a in WORDS_L for _ in WORDS_R]
    right = [b for _ in WORDS_L for b in WORDS_R]
    return left, right


def test_shuffled_keeps_the_inner_multiset_and_moves_the_values():
    left, right = pairs()
    inner = priorkit.get_provider("wordnet", measure="wup").pair_similarity(left, right)
    shuffled = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=0)
    got = shuffled.pair_similarity(left, right)
    assert np.array_equal(np.sort(got), np.sort(inner))  # same multiset (no NaN for these words)
    assert (got != inner).mean() > 0.5  # and the values moved


def test_shuffled_is_deterministic_per_seed_and_independent_of_the_order():
    left, right = pairs()
    a = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=3)
    b = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=3)
    c = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=4)
    first = a.pair_similarity(left, right)
    assert np.array_equal(first, b.pair_similarity(left, right))
    assert not np.array_equal(first, c.pair_similarity(left, right))
    perm = np.random.default_rng(0).permutation(len(left))
    again = a.pair_similarity([left[i] for i in perm], [right[i] for i in perm])
    assert np.array_equal(again, first[perm])
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.fingerprint != priorkit.get_provider("shuffled", provider="wordnet",
                                                  params={"measure": "path"}, seed=3).fingerprint


def test_shuffled_keeps_a_symmetric_inner_provider_symmetric():
    left, right = pairs()
    s = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "path"}, seed=1)
    assert s.symmetric
    both = s.pair_similarity(left + right, right + left)  # (a, b) and (b, a) asked together
    n = len(left)
    assert np.array_equal(both[:n], both[n:])
    block = s.similarity(WORDS_L[:4], WORDS_L[:4])
    assert np.array_equal(block, block.T)


def test_shuffled_passes_segment_through():
    inner = priorkit.get_provider("wordnet", measure="wup")
    s = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"})
    words = ["the", "hot", "dog", "stand"]
    assert s.segment(words) == inner.segment(words)


def test_shuffled_values_stay_put_through_the_cache(tmp_path):
    """Precompute in batches, then ask again in other groupings: one value per pair."""
    left, right = pairs()
    s = priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=0)
    cache = priorkit.PriorCache(tmp_path / "p.duckdb")
    cached = priorkit.CachedProvider(s, cache)
    for start in range(0, len(left), 50):  # three precompute-like batches
        cached.pair_similarity(left[start:start + 50], right[start:start + 50])
    stored = cached.pair_similarity(left, right)
    cached.close()  # writes the computed pairs
    inner = priorkit.get_provider("wordnet", measure="wup").pair_similarity(left, right)
    assert np.array_equal(np.sort(stored), np.sort(inner))
    reread = priorkit.CachedProvider(
        priorkit.get_provider("shuffled", provider="wordnet", params={"measure": "wup"}, seed=0),
        priorkit.PriorCache(tmp_path / "p.duckdb", read_only=True))
    assert np.array_equal(reread.pair_similarity(left[::-7], right[::-7]), stored[::-7])


def test_constant_gives_every_pair_its_value():
    c = priorkit.get_provider("constant", value=0.25)
    assert np.all(c.similarity(["a", "b"], ["c"]) == np.float32(0.25))
    assert np.all(c.pair_similarity(["a", "b"], ["c", "d"]) == np.float32(0.25))
    with pytest.raises(PriorkitError, match=r"params.value must be a number in \[0, 1\]"):
        priorkit.get_provider("constant", value=1.5)


def test_shuffled_without_provider_names_the_parameter():
    with pytest.raises(PriorkitError, match="shuffled needs params.provider"):
        priorkit.get_provider("shuffled", seed=0)


def _pipeline(tmp_path, prior: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent("""\
        name: c
        data:
          train: {source: stsb, split: train}
          eval: {source: stsb, split: dev}
        """) + textwrap.dedent(prior))
    return str(path)


@pytest.mark.parametrize("prior, line, words", [
    ("prior:\n  provider: shuffled\n  params: {seed: 1}\n", 7, "shuffled needs params.provider"),
    ("prior:\n  provider: constant\n  params:\n    value: 2\n", 7, "params.value must be a number"),
    ("prior:\n  provider: shuffled\n  params: {provider: wordnet}\n  cache: null\n", 8,
     "one value only through a cache"),
    ("prior: {provider: wordnet}\nsweep:\n  priors:\n    none: null\n    ctl: {provider: shuffled}\n", 9,
     "shuffled needs params.provider"),
])
def test_bad_control_parameters_stop_the_pipeline_at_file_and_line(tmp_path, prior, line, words):
    path = _pipeline(tmp_path, prior)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}"), msg
    assert words in msg


def _ner_pipeline(tmp_path, prior: str) -> str:
    path = tmp_path / "ner.yaml"
    path.write_text(textwrap.dedent("""\
        name: c
        task: {type: token-classification}
        data:
          train: {source: bc5cdr, split: train, limit: 10}
          eval: {source: bc5cdr, split: devel, limit: 10}
        """) + textwrap.dedent(prior))
    return str(path)


def test_the_removed_features_control_names_the_random_spans_provider_at_file_and_line(tmp_path):
    path = _ner_pipeline(tmp_path, """\
        prior:
          provider: ontology
          params: {source: hpo+mesh}
          attention: null
          features:
            control: random-spans
        """)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:11: prior.features.control"), msg
    assert "provider: random-spans, params: {provider: ontology" in msg


def test_random_spans_is_a_provider_of_features_in_a_pipeline(tmp_path):
    from priorkit.config import prior_settings

    path = _ner_pipeline(tmp_path, """\
        prior: {provider: ontology, params: {source: hpo+mesh}, attention: null, features: {}}
        sweep:
          priors:
            none: null
            features: {}
            ctl: {features: {provider: random-spans, params: {provider: ontology, params: {source: hpo+mesh}}}}
        """)
    ctl = prior_settings(load_config(path))["ctl"].features
    assert ctl.provider == "random-spans" and ctl.params["provider"] == "ontology"
    bad = _ner_pipeline(tmp_path, """\
        prior: {provider: ontology, params: {source: hpo+mesh}, attention: null,
                features: {provider: random-spans, params: {params: {source: hpo+mesh}}}}
        """)
    with pytest.raises(ConfigError, match=r"ner.yaml:7: prior.features.provider: random-spans needs params.provider"):
        load_config(bad)


def test_random_spans_moves_real_ontology_matches():
    words = "Cocaine induced seizures and renal failure in rats".split()
    inner = priorkit.get_provider("ontology", source="hpo+mesh")
    ctl = priorkit.get_provider("random-spans", provider="ontology", params={"source": "hpo+mesh"}, seed=1)
    real, moved = inner.matches(words), ctl.matches(words)
    assert real and sorted((m.end - m.start, m.group) for m in moved) == sorted((m.end - m.start, m.group) for m in real)
    assert moved == ctl.matches(words)
    with pytest.raises(PriorkitError, match="no concept matches"):
        priorkit.get_provider("random-spans", provider="wordnet")

"""priorkit cache delete / prune: only the chosen entries go, a read-only cache is refused."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from click.testing import CliRunner

import priorkit
from priorkit.cache import PriorCache
from priorkit.cli import cli

WORDS = (["cat", "car", "man", "dog"], ["feline", "bus", "woman", "puppy"])


@pytest.fixture()
def filled(tmp_path):
    """A real cache with three providers: wordnet wup, wordnet path, conceptnet."""
    cache = PriorCache(tmp_path / "c.duckdb")
    providers = [priorkit.get_provider("wordnet", measure="wup"), priorkit.get_provider("wordnet", measure="path"),
                 priorkit.get_provider("conceptnet")]
    pairs = list(zip(*WORDS))
    for p in providers:
        cache.put(p, pairs, p.pair_similarity(*WORDS))
    return cache, [p.fingerprint for p in providers]


def invoke(*args):
    return CliRunner().invoke(cli, ["cache", *args], catch_exceptions=False)


def stored(cache, fp):
    values, found = cache.get(fp, list(zip(*WORDS)))
    return values[found]


def test_delete_by_fingerprint_and_by_provider_keeps_the_rest(filled):
    cache, (wup, path, cn) = filled
    before = {fp: stored(cache, fp) for fp in (path, cn)}
    result = invoke("delete", "--fingerprint", wup, "--cache", str(cache.path))
    assert result.exit_code == 0, result.output
    assert f"removed {wup} (wordnet): 4 pairs" in result.output
    assert {p["fingerprint"] for p in cache.providers()} == {path, cn}
    for fp, values in before.items():  # the others are untouched, value for value
        np.testing.assert_array_equal(stored(cache, fp), values)
    result = invoke("delete", "--provider", "wordnet", "--cache", str(cache.path))
    assert result.exit_code == 0 and "removed 1 provider(s), 4 pairs" in result.output
    assert [p["fingerprint"] for p in cache.providers()] == [cn] and cache.count() == 4
    np.testing.assert_array_equal(stored(cache, cn), before[cn])


def test_delete_refuses_unknown_names_and_usage_errors(filled):
    cache, _ = filled
    with pytest.raises(priorkit.CacheError, match="no entries of provider 'glove'; it holds: conceptnet, wordnet"):
        invoke("delete", "--provider", "glove", "--cache", str(cache.path))
    assert invoke("delete", "--cache", str(cache.path)).exit_code == 2
    assert cache.count() == 12


def test_read_only_cache_is_refused_and_left_alone(filled):
    cache, (wup, _, _) = filled
    with pytest.raises(priorkit.CacheError, match="opened read-only"):
        PriorCache(cache.path, read_only=True).delete_many([wup])
    with pytest.raises(priorkit.CacheError, match="opened read-only"):
        PriorCache(cache.path, read_only=True).prune(dt.timedelta(0))
    assert cache.count() == 12
    dry = invoke("delete", "--fingerprint", wup, "--dry-run", "--cache", str(cache.path))  # reads only
    assert f"would remove {wup}" in dry.output and cache.count() == 12


def test_prune_removes_only_providers_older_than_the_cutoff(filled):
    cache, (wup, path, cn) = filled
    with cache.connect(write=True) as con:  # wup was written 40 days ago, path 10 days ago
        con.execute("UPDATE providers SET created = created - INTERVAL 40 DAY WHERE fingerprint = ?", [wup])
        con.execute("UPDATE providers SET created = created - INTERVAL 10 DAY WHERE fingerprint = ?", [path])
    dry = invoke("prune", "--older-than", "30d", "--dry-run", "--cache", str(cache.path))
    assert f"would remove {wup} (wordnet): 4 pairs" in dry.output and cache.count() == 12
    result = invoke("prune", "--older-than", "4w", "--cache", str(cache.path))
    assert result.exit_code == 0 and f"removed {wup}" in result.output
    assert {p["fingerprint"] for p in cache.providers()} == {path, cn}
    assert cache.prune(dt.timedelta(days=5)) == {path: 4}
    assert [p["fingerprint"] for p in cache.providers()] == [cn]
    bad = invoke("prune", "--older-than", "soon", "--cache", str(cache.path))
    assert bad.exit_code == 2 and "not a duration" in bad.output

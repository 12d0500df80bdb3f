"""The DuckDB prior cache on real files: round trips, concurrency, foreign files."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pytest

from priorkit.cache import CachedProvider, PairTable, PriorCache, canonical_pairs, nan_equal
from priorkit.errors import CacheError
from priorkit.providers.base import PriorProvider
from support.plugins import trigram_plugin


class Trigram(trigram_plugin.Trigram):
    """The test plug-in's character-trigram Jaccard, declared not symmetric (each order stored).

    Words without a letter get NaN ("no knowledge"), so NaN storage is exercised.
    """

    symmetric = False


class SymmetricTrigram(trigram_plugin.Trigram):
    name = "trigram-sym"
    symmetric = True


WORDS = ["cat", "cats", "hat", "chat", "dog", "dogs", "bird", "birds", "123", "4.5", "über", "naïve",
         "man", "woman", "plane", "airplane", "taking", "take", "off", "of"]


def _random_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    return list(dict.fromkeys((WORDS[i], WORDS[j]) for i, j in rng.integers(0, len(WORDS), (n, 2))))


def _direct(provider: PriorProvider, pairs) -> np.ndarray:
    """Reference values: one provider call per pair."""
    return np.array([provider.similarity([a], [b])[0, 0] for a, b in pairs], dtype=np.float32)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _holder(path: Path, mode: str, seconds: float) -> subprocess.Popen:
    """Another process that holds the cache open (write or read) for a while."""
    code = textwrap.dedent(f"""
        import sys, time
        from priorkit.cache import PriorCache
        cache = PriorCache({str(path)!r}, read_only={mode == 'read'})
        with cache.connect(write={mode == 'write'}):
            print("holding", flush=True)
            time.sleep({seconds})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


@pytest.fixture
def filled(tmp_path):
    cache = PriorCache(tmp_path / "c.duckdb")
    prov = Trigram()
    pairs = [(a, b) for a in WORDS for b in WORDS]
    cache.put(prov, pairs, _direct(prov, pairs))
    return cache, prov, pairs


# ---- round trips ----------------------------------------------------------
def test_round_trip_including_nan(tmp_path):
    cache = PriorCache(tmp_path / "c.duckdb")
    prov = Trigram()
    pairs = [(a, b) for a in WORDS for b in WORDS]
    values = _direct(prov, pairs)
    assert np.isnan(values).sum() > 0 and (values[~np.isnan(values)] > 0).sum() > 0
    assert cache.put(prov, pairs, values) == len(pairs)
    got, found = cache.get(prov.fingerprint, pairs)
    assert found.all() and got.dtype == np.float32
    assert nan_equal(got, values)
    assert cache.count(prov.fingerprint) == len(pairs)
    # a reopened file (new object, read-only) gives the same
    got2, _ = PriorCache(tmp_path / "c.duckdb", read_only=True).get(prov.fingerprint, pairs[::-1])
    assert nan_equal(got2, values[::-1])


def test_put_keeps_first_value_and_counts_new(filled):
    cache, prov, pairs = filled
    before, _ = cache.get(prov.fingerprint, pairs)
    extra = [("zebra", "cat"), ("cat", "zebra")]
    n = cache.put(prov, pairs[:10] + extra, np.full(12, 0.123, dtype=np.float32))
    assert n == 2  # only the two new pairs
    after, found = cache.get(prov.fingerprint, pairs)
    assert nan_equal(before, after)
    assert cache.count(prov.fingerprint) == len(pairs) + 2
    assert cache.put(prov, [("a", "b"), ("a", "b")], np.array([0.1, 0.9], np.float32)) == 1
    assert cache.get(prov.fingerprint, [("a", "b")])[0][0] == np.float32(0.1)


def test_missing_and_unknown_fingerprint(filled):
    cache, prov, pairs = filled
    assert cache.missing(prov.fingerprint, pairs) == []
    new = [("cat", "elephant"), ("elephant", "cat"), ("cat", "elephant")]
    assert cache.missing(prov.fingerprint, pairs[:5] + new) == new[:2]
    vals, found = cache.get("nobody-0000", pairs[:3])
    assert not found.any() and np.isnan(vals).all()


def test_put_rejects_bad_values(tmp_path):
    cache = PriorCache(tmp_path / "c.duckdb")
    with pytest.raises(ValueError, match="outside"):
        cache.put(Trigram(), [("a", "b")], np.array([1.5], np.float32))
    with pytest.raises(ValueError, match="shape"):
        cache.put(Trigram(), [("a", "b")], np.array([0.5, 0.5], np.float32))
    assert not (tmp_path / "c.duckdb").exists() or cache.count() == 0


def test_symmetric_provider_stores_each_pair_once(tmp_path):
    cache = PriorCache(tmp_path / "c.duckdb")
    prov = SymmetricTrigram()
    pairs = [(a, b) for a in WORDS for b in WORDS]
    values = _direct(prov, pairs)
    n = cache.put(prov, pairs, values)
    assert n == len(canonical_pairs(pairs)) == len(WORDS) * (len(WORDS) + 1) // 2
    got, found = cache.get(prov.fingerprint, pairs)
    assert found.all() and nan_equal(got, values)  # Jaccard is symmetric, so both orders agree
    table = cache.load(prov.fingerprint)
    assert table.symmetric and nan_equal(table.get_many(pairs)[0], values)


def test_load_gives_the_same_values_as_get(filled):
    cache, prov, pairs = filled
    table = cache.load(prov.fingerprint)
    assert len(table) == len(pairs)
    vals, found = table.get_many(pairs)
    ref, _ = cache.get(prov.fingerprint, pairs)
    assert found.all() and nan_equal(vals, ref)
    block, bfound = table.lookup(WORDS[:5] + ["unseen"], WORDS[3:9])
    assert block.shape == (6, 6) and bfound[:5].all() and not bfound[5].any()
    d = table.to_dict()
    assert set(d) == set(pairs)
    assert table[("cat", "hat")] == d[("cat", "hat")]
    assert ("cat", "unseen") not in table


def test_pair_table_matches_a_dict_reference():
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(60)]
    ref: dict[tuple[str, str], float] = {}
    table = PairTable()
    for step in range(30):  # many small additions: pending dict, then merges
        idx = rng.integers(0, len(vocab), (rng.integers(1, 400), 2))
        pairs = [(vocab[i], vocab[j]) for i, j in idx]
        vals = rng.random(len(pairs)).astype(np.float32)
        vals[rng.random(len(pairs)) < 0.1] = np.nan
        table.add([a for a, _ in pairs], [b for _, b in pairs], vals)
        for p, v in zip(pairs, vals.tolist()):
            ref.setdefault(p, v)
        left = [vocab[i] for i in rng.integers(0, len(vocab) + 5, 7) if i < len(vocab)] + ["zz"]
        right = [vocab[i] for i in rng.integers(0, len(vocab), 9)]
        got, found = table.lookup(left, right)
        for i, a in enumerate(left):
            for j, b in enumerate(right):
                assert found[i, j] == ((a, b) in ref)
                if found[i, j]:
                    assert nan_equal(got[i, j], np.float32(ref[(a, b)]))
    assert len(table) == len(ref)


def test_symmetric_pair_table_answers_both_orders():
    table = PairTable(["a", "c"], ["b", "a"], np.array([0.25, 0.5], np.float32), symmetric=True)
    vals, found = table.lookup(["b", "a", "c"], ["a", "c", "b"])
    assert found[0, 0] and vals[0, 0] == np.float32(0.25)  # (b, a) from (a, b)
    assert found[1, 1] and vals[1, 1] == np.float32(0.5)  # (a, c) from (c, a)
    assert not found[2, 2]


# ---- CachedProvider -------------------------------------------------------
def test_cached_provider_equals_the_provider_and_fills_the_cache(tmp_path):
    path = tmp_path / "c.duckdb"
    prov = Trigram()
    rng = np.random.default_rng(3)
    writer = CachedProvider(prov, PriorCache(path), flush_every=50)
    assert writer.fingerprint == prov.fingerprint and writer.name == prov.name
    calls = []
    for _ in range(20):
        left = [WORDS[i] for i in rng.integers(0, len(WORDS), 5)]
        right = [WORDS[i] for i in rng.integers(0, len(WORDS), 4)]
        calls.append((left, right))
        assert nan_equal(writer.similarity(left, right), prov.similarity(left, right))
    writer.close()
    assert writer.stats.misses > 0 and writer.stats.hits > 0
    stored = PriorCache(path, read_only=True).count(prov.fingerprint)
    assert stored == writer.stats.misses  # every computed pair written, once
    reader = CachedProvider(Trigram(), PriorCache(path, read_only=True))
    for left, right in calls:
        assert nan_equal(reader.similarity(left, right), prov.similarity(left, right))
    assert reader.stats.misses == 0


def test_cached_pair_similarity_equals_the_provider_and_fills_the_cache(tmp_path):
    """The element-wise path (one call per training batch) agrees with the block path."""
    path = tmp_path / "p.duckdb"
    prov = Trigram()
    rng = np.random.default_rng(7)
    left = [WORDS[i] for i in rng.integers(0, len(WORDS), 300)]
    right = [WORDS[i] for i in rng.integers(0, len(WORDS), 300)]
    writer = CachedProvider(prov, PriorCache(path), flush_every=40)
    first = writer.pair_similarity(left[:150], right[:150])
    both = writer.pair_similarity(left, right)  # half hits, half misses
    writer.close()
    want = np.array([prov.similarity([a], [b])[0, 0] for a, b in zip(left, right)], dtype=np.float32)
    assert nan_equal(both, want) and nan_equal(first, want[:150])
    assert writer.stats.hits > 0 and writer.stats.misses > 0
    reader = CachedProvider(Trigram(), PriorCache(path, read_only=True))
    assert nan_equal(reader.pair_similarity(left, right), want)
    assert reader.stats.misses == 0


def test_read_only_cached_provider_computes_but_never_writes(filled):
    cache, prov, pairs = filled
    ro = PriorCache(cache.path, read_only=True)
    before = _digest(cache.path)
    cp = CachedProvider(prov, ro)
    vals = cp.similarity(["cat", "giraffe"], ["dog", "giraffes"])
    assert nan_equal(vals, prov.similarity(["cat", "giraffe"], ["dog", "giraffes"]))
    assert cp.stats.misses == 3 and cp.stats.hits == 1
    cp.close()
    assert _digest(cache.path) == before
    with pytest.raises(CacheError, match="read-only"):
        ro.put(prov, [("x", "y")], np.array([0.5], np.float32))


def test_cached_provider_warns_about_other_versions(filled):
    cache, prov, _ = filled

    class Trigram2(Trigram):
        version = "2"

    cp = CachedProvider(Trigram2(), PriorCache(cache.path, read_only=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp.similarity(["cat"], ["hat"])
    assert any("other" in str(w.message) and prov.fingerprint in str(w.message) for w in caught)


# ---- files that are not (our) caches -----------------------------------------
@pytest.mark.parametrize("content", [b"hello, world\n" * 50, b"\x00" * 20000, b"\x00" * 4096])
def test_foreign_file_is_refused_and_untouched(tmp_path, content):
    """(An empty file is the leftover of a killed creation: tests/test_cache_creation.py.)"""
    path = tmp_path / "c.duckdb"
    path.write_bytes(content)
    for ro in (False, True):
        with pytest.raises(CacheError, match="not a DuckDB file|priorkit will not"):
            PriorCache(path, read_only=ro).count()
    assert path.read_bytes() == content
    assert not Path(str(path) + ".wal").exists()


def test_truncated_cache_is_refused_and_untouched(filled, tmp_path):
    cache, _, _ = filled
    data = cache.path.read_bytes()
    for cut in (100, 8192, len(data) // 2, len(data) - 4096):
        path = tmp_path / f"t{cut}.duckdb"
        path.write_bytes(data[:cut])
        with pytest.raises(CacheError, match="truncated|not a DuckDB|damaged"):
            PriorCache(path).put(Trigram(), [("a", "b")], np.array([0.5], np.float32))
        assert path.read_bytes() == data[:cut]


def test_other_duckdb_database_is_refused_and_untouched(tmp_path):
    path = tmp_path / "app.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE users (id INTEGER, name VARCHAR)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.close()
    before = _digest(path)
    with pytest.raises(CacheError, match="users"):
        PriorCache(path).put(Trigram(), [("a", "b")], np.array([0.5], np.float32))
    assert _digest(path) == before


def test_newer_schema_is_refused(filled):
    cache, _, _ = filled
    con = duckdb.connect(str(cache.path))
    con.execute("INSERT INTO schema_version VALUES (99, 'm099_future', now())")
    con.close()
    with pytest.raises(CacheError, match="newer"):
        cache.count()


def test_read_only_needs_an_existing_cache(tmp_path):
    with pytest.raises(CacheError, match="precompute"):
        PriorCache(tmp_path / "none.duckdb", read_only=True)
    assert not (tmp_path / "none.duckdb").exists()


# ---- concurrency ----------------------------------------------------------
def test_second_writer_gets_a_clear_error(filled):
    cache, prov, pairs = filled
    holder = _holder(cache.path, "write", 20)
    try:
        impatient = PriorCache(cache.path, timeout=0.3)
        t0 = time.monotonic()
        with pytest.raises(CacheError) as err:
            impatient.put(prov, [("new", "pair")], np.array([0.5], np.float32))
        assert time.monotonic() - t0 >= 0.3
        msg = str(err.value)
        assert f"PID {holder.pid}" in msg and "locked" in msg and "--timeout" in msg
        with pytest.raises(CacheError, match=f"PID {holder.pid}"):
            PriorCache(cache.path, read_only=True, timeout=0.2).count()
    finally:
        holder.kill()
        holder.wait()
    # nothing was damaged: the file opens and holds what it held
    assert PriorCache(cache.path, read_only=True).count() == len(pairs)


def test_writer_waits_for_a_lock_to_be_released(filled):
    cache, prov, pairs = filled
    holder = _holder(cache.path, "write", 1.0)
    try:
        t0 = time.monotonic()
        n = PriorCache(cache.path, timeout=60).put(prov, [("new", "pair")], np.array([0.5], np.float32))
        waited = time.monotonic() - t0
    finally:
        holder.wait()
    assert n == 1 and waited > 0.3


def test_many_readers_at_once(filled):
    cache, prov, pairs = filled
    holder = _holder(cache.path, "read", 20)
    try:
        vals, found = PriorCache(cache.path, read_only=True, timeout=0).get(prov.fingerprint, pairs)
        assert found.all()
        with pytest.raises(CacheError, match="locked"):  # readers keep writers out
            PriorCache(cache.path, timeout=0.2).put(prov, [("x", "y")], np.array([0.1], np.float32))
    finally:
        holder.kill()
        holder.wait()


# ---- info -----------------------------------------------------------------
def test_info_reports_providers_pairs_and_runs(filled):
    cache, prov, pairs = filled
    sym = SymmetricTrigram()
    cache.put(sym, [("a", "b"), ("b", "a")], np.array([0.5, 0.5], np.float32))
    run = cache.start_run(dataset="x.tsv", layout="paper")
    cache.finish_run(run, pairs=1, new=1, cached=0, seconds=0.5)
    info = PriorCache(cache.path, read_only=True).info()
    by_fp = {p["fingerprint"]: p for p in info["providers"]}
    assert by_fp[prov.fingerprint]["pairs"] == len(pairs)
    vals = _direct(prov, pairs)
    assert by_fp[prov.fingerprint]["nan"] == int(np.isnan(vals).sum())
    assert by_fp[prov.fingerprint]["mean"] == pytest.approx(float(np.nanmean(vals)), abs=1e-5)
    assert by_fp[sym.fingerprint]["pairs"] == 1 and by_fp[sym.fingerprint]["symmetric"] is True
    assert info["pairs"] == len(pairs) + 1 and info["schema_version"] == 1
    assert info["size_bytes"] == cache.path.stat().st_size
    assert info["runs"][0]["status"] == "finished" and info["runs"][0]["dataset"] == "x.tsv"


def test_cached_provider_keeps_unwritten_pairs_when_the_file_is_locked(tmp_path):
    path = tmp_path / "c.duckdb"
    prov = Trigram()
    cp = CachedProvider(prov, PriorCache(path, timeout=0.2), flush_every=10**9)
    PriorCache(path).check()
    cp.similarity(["cat", "dog"], ["hat", "fog", "log"])
    holder = _holder(path, "write", 20)
    try:
        with pytest.raises(CacheError, match="locked"):
            cp.flush()
    finally:
        holder.kill()
        holder.wait()
    assert cp.flush() == 6  # kept and written once the lock is gone
    assert PriorCache(path, read_only=True).count(prov.fingerprint) == 6
    cp.close()

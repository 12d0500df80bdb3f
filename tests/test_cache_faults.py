"""Faults the prior cache survives: kill -9, a full disk, a read-only folder, concurrent
writers and readers, leftover or foreign files, another tokenizer or provider version.

Real child processes run ``precompute`` on real STS-B pairs into real DuckDB files.
The trials live in tests/support/faults.py, shared with benchmarks/cache_faults.py,
which runs each many times (numbers in docs/reliability.md); here a few of each
keep the invariants under test.  A trial returns its ``failures``; each must be empty.
"""
from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from priorkit.align import PriorBuilder, tokenizer_fingerprint
from priorkit.cache import CachedProvider, PriorCache, nan_equal
from priorkit.datasets import read_dataset
from priorkit.precompute import precompute
from priorkit.resources import stsb_path

from support import faults as _faults  # shared with benchmarks/cache_faults.py


@pytest.fixture(scope="module")
def plugin_file(tmp_path_factory) -> Path:
    return _faults.write_plugin(tmp_path_factory.mktemp("plugins"))


@pytest.fixture(scope="module")
def plugin_module(plugin_file):
    return _faults.load_plugin(plugin_file, "trigram_plugin_for_fault_tests")


# ---- kill -9 ------------------------------------------------------------------
def test_sigkill_mid_run_keeps_whole_batches_and_resume_gives_identical_values(tmp_path, plugin_file):
    """Two kills on one file (the second hits the resumed run), each after 1-3 committed
    batches plus up to 50 ms: computing, inserting, committing or checkpointing."""
    work = _faults.Workload(plugin_file, limit=300, batch=300)
    trial = _faults.kill_trial(work, tmp_path, random.Random(1), kills=2)
    assert trial.failures == []
    assert len(trial.kills) == 2 and all(0 < k.count < len(work.keys) for k in trial.kills)
    assert trial.kills[1].count > trial.kills[0].count  # the resumed run kept going from the first
    assert trial.rerun_new == len(work.keys) - trial.kills[1].count


def test_sigkill_early_in_a_run_on_a_fresh_file(tmp_path, plugin_file):
    """A kill in the first 0.3 s of a run on a new file: while DuckDB creates the file,
    the schema is written, the run recorded or the first batches computed."""
    work = _faults.Workload(plugin_file, limit=300, batch=300)
    rng = random.Random(5)
    for _ in range(2):
        trial = _faults.kill_trial(work, tmp_path, rng, kills=1, run_seconds=0.3)
        assert trial.failures == []


def test_file_left_by_a_kill_during_creation_is_usable(tmp_path, plugin_module):
    """A kill between DuckDB creating the file and the schema's commit leaves a DuckDB
    file without tables.  A writable cache reads it as empty (applying the schema), as
    it would read no file; a read-only open says what it is and what to do.  Before the
    fix a writable cache's reads failed with "run priorkit precompute" (found by the
    benchmark: its plan() after such a kill)."""
    import duckdb

    from priorkit.errors import CacheError

    path = tmp_path / "c.duckdb"
    duckdb.connect(str(path)).close()
    with pytest.raises(CacheError, match="empty DuckDB file.*killed while creating.*priorkit precompute"):
        PriorCache(path, read_only=True).count()
    provider = plugin_module.Trigram()
    cache = PriorCache(path)
    assert cache.missing(provider.fingerprint, [("cat", "hat")]) == [("cat", "hat")]
    cp = CachedProvider(provider, cache)
    assert nan_equal(cp.similarity(["cat"], ["hat", "4.5"]), provider.similarity(["cat"], ["hat", "4.5"]))
    cp.close()
    assert PriorCache(path, read_only=True).count(provider.fingerprint) == 2


# ---- concurrent processes -----------------------------------------------------
def test_reader_during_a_write_sees_whole_batches_with_final_values(tmp_path, plugin_file):
    trial = _faults.reader_trial(_faults.Workload(plugin_file, limit=300), tmp_path)
    assert trial.failures == []
    assert trial.snapshots == sorted(trial.snapshots) and len(set(trial.snapshots)) > 2


def test_two_writers_at_once_lose_nothing(tmp_path, plugin_file):
    """Overlapping slices of STS-B dev, written by two processes at the same time."""
    W = _faults.Workload
    trial = _faults.writers_trial(W(plugin_file, limit=300, batch=200), W(plugin_file, limit=450, start=150, batch=200),
                                  W(plugin_file, limit=450), tmp_path)
    assert trial.failures == []
    assert trial.counts[0] == trial.counts[1] > 0


# ---- full disk ------------------------------------------------------------------
def test_file_size_limit_mid_run_then_rerun(tmp_path, plugin_file):
    """RLIMIT_FSIZE (unprivileged, unlike a tmpfs) makes DuckDB's writes fail with EFBIG
    once a file would grow 600 kB: the run stops with a CacheError naming the file, the
    file keeps whole batches, and a rerun without the limit gives the uninterrupted values.

    Without the explicit CHECKPOINT in PriorCache.connect this run "finished": DuckDB
    swallowed the failed checkpoint at close and kept everything in a growing WAL."""
    work = _faults.Workload(plugin_file, limit=700)
    trial = _faults.fsize_trial(work, _faults.Workload(plugin_file, limit=100), tmp_path, 600_000)
    assert trial.failures == []
    assert "disk full or file size limit" in trial.outcome and "free space" in trial.outcome
    assert trial.before < trial.count < len(work.keys), "the limit should hit mid-run; adjust the extra bytes"


# ---- permissions ------------------------------------------------------------------
def test_read_only_folder_refuses_writes_clearly_and_still_reads(plugin_file):
    trial = _faults.read_only_trial(_faults.Workload(plugin_file, limit=40))
    assert trial.failures == []
    assert set(trial.results) == {"new file", "new subfolder", "write existing", "precompute", "read existing"}
    assert trial.results["read existing"][0] == "ok" and trial.results["read existing"][1] > 0


# ---- files that are not whole caches ------------------------------------------------
def test_foreign_truncated_and_leftover_files(tmp_path, plugin_file):
    cases = _faults.foreign_cases(_faults.Workload(plugin_file, limit=40), tmp_path)
    assert [(c.name, c.failures) for c in cases if c.failures] == []
    by_name = {c.name: c for c in cases}
    assert "killed while creating" in by_name["empty file"].message
    assert "another database" in by_name["cache + WAL of another database"].message
    assert by_name["cache + WAL of another database"].unchanged


# ---- another tokenizer, another provider version ---------------------------------------
def test_cache_built_with_another_tokenizer_serves_every_pair_exactly(tmp_path, plugin_module, bpe_tokenizer,
                                                                       minilm_tokenizer):
    """Word pairs do not depend on the tokenizer, so a cache precomputed through a byte-level
    BPE tokenizer serves a WordPiece model completely, with the values it would compute."""
    examples = read_dataset(stsb_path("dev"), limit=40)
    path = tmp_path / "bpe.duckdb"
    bpe_builder = PriorBuilder.paper(bpe_tokenizer, provider=plugin_module.Trigram())
    precompute(examples, bpe_builder, PriorCache(path), progress=False,
               run_info={"tokenizer": tokenizer_fingerprint(bpe_tokenizer), "layout": "paper"})
    warm = PriorBuilder.paper(minilm_tokenizer, provider=plugin_module.Trigram(), cache=path)
    cold = PriorBuilder.paper(minilm_tokenizer, provider=plugin_module.Trigram())
    for e in examples:
        assert np.array_equal(warm.build(e.text_a, e.text_b).numpy(), cold.build(e.text_a, e.text_b).numpy())
    assert warm.provider.stats.misses == 0 and warm.provider.stats.hits > 0
    run = PriorCache(path, read_only=True).runs()[0]
    assert run["tokenizer"] == tokenizer_fingerprint(bpe_tokenizer) != tokenizer_fingerprint(minilm_tokenizer)


def test_other_provider_version_is_never_served_and_is_kept(tmp_path, plugin_module):
    """A new version is a new fingerprint: its values are computed (with a warning that
    names the versions in the file and how to keep or delete them), never read from the
    old version's rows, and the old rows stay as they were."""

    class TrigramV2(plugin_module.Trigram):
        version = "2"

        def compute(self, left, right):  # a changed measure: the square of v1
            return super().compute(left, right) ** 2

    v1, v2 = plugin_module.Trigram(), TrigramV2()
    words = ["cat", "cats", "chat", "hat", "dog", "4.5"]
    pairs = [(a, b) for a in words for b in words]
    path = tmp_path / "c.duckdb"
    cache = PriorCache(path)
    cache.put(v1, pairs, np.array([v1.similarity([a], [b])[0, 0] for a, b in pairs], np.float32))
    old = _faults.stored(path, v1.fingerprint)
    cp = CachedProvider(v2, cache)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cp.similarity(words, words)
    cp.close()
    msg = " ".join(str(w.message) for w in caught)
    assert v1.fingerprint in msg and v2.fingerprint in msg and "version 1" in msg and "version 2" in msg
    assert "kept" in msg and ".delete(" in msg and "priorkit cache info" in msg
    assert nan_equal(got, v2.similarity(words, words)) and not nan_equal(got, v1.similarity(words, words))
    assert _faults.same_values(_faults.stored(path, v1.fingerprint), old)
    assert PriorCache(path, read_only=True).count(v2.fingerprint) == len(words) * (len(words) + 1) // 2

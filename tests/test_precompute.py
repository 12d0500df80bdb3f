"""precompute on real STS-B pairs, a real tokenizer and real DuckDB files.

Runs that are killed, capped or raced are in tests/test_cache_faults.py.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from priorkit.align import PriorBuilder
from priorkit.cache import CachedProvider, PriorCache, canonical_pairs, nan_equal
from priorkit.datasets import read_dataset
from priorkit.precompute import collect_pairs, plan_batches, plan_blocks, precompute
from priorkit.resources import stsb_path

from support import workload as _faults  # the trigram plug-in and cache read-back helpers (tests/support)

_stored, _same_values = _faults.stored, _faults.same_values


@pytest.fixture(scope="module")
def plugin_module(plugin_dir):
    return _faults.load_plugin(plugin_dir / "trigram_plugin.py", "trigram_plugin_for_tests")


@pytest.fixture(scope="module")
def trigram(plugin_module):
    return plugin_module.Trigram


@pytest.fixture(scope="module")
def dev_examples():
    return read_dataset(stsb_path("dev"))


@pytest.fixture
def builder(minilm_tokenizer, trigram):
    """The paper preset (layout, keys, stop words) with the trigram provider."""
    return PriorBuilder.paper(minilm_tokenizer, provider=trigram())


# ---- planning -------------------------------------------------------------
@pytest.mark.parametrize("min_density", [1.0, 0.5, 0.2])
def test_blocks_cover_every_pair_exactly_once(min_density):
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)]
    pairs = list(dict.fromkeys((words[i], words[j]) for i, j in rng.zipf(1.5, (5000, 2)) % 300))
    blocks = plan_blocks(pairs, min_density=min_density, max_cells=4096)
    got = [p for b in blocks for p in b.pairs()]
    assert sorted(got) == sorted(pairs) and len(got) == len(pairs)
    for b in blocks:
        assert b.density >= min_density - 1e-9
        assert len(b.left) * len(b.right) <= 4096 or min(len(b.left), len(b.right)) == 1
    batches = plan_batches(pairs, batch_size=700, min_density=min_density)
    assert sum(len(b) for batch in batches for b in batch) == len(pairs)
    assert all(sum(len(b) for b in batch) >= 700 for batch in batches[:-1])


# ---- precompute -----------------------------------------------------------
def test_precompute_fills_the_cache_and_a_rerun_computes_nothing(tmp_path, builder, dev_examples):
    examples = dev_examples[:60]
    cache = PriorCache(tmp_path / "c.duckdb")
    first = precompute(examples, builder, cache, batch_size=500, progress=False)
    wanted = {p for e in examples for p in builder.word_pairs(e.text_a, e.text_b)}
    keys = canonical_pairs(wanted)
    assert first.examples == 60 and first.requested == len(wanted)
    assert first.pairs == first.new == len(keys) and first.cached == 0 and first.batches > 1
    stored = _stored(cache.path, builder.provider.fingerprint)
    for a, b in random.Random(0).sample(sorted(wanted), 300):  # both orders, as one pair at a time gives
        assert nan_equal(np.float32(stored[(a, b)]), builder.provider.similarity([a], [b])[0, 0])
    second = precompute(examples, builder, cache, batch_size=500, progress=False)
    assert second.new == 0 and second.cached == len(keys) and second.computed == 0
    runs = cache.runs()
    assert [r["status"] for r in runs] == ["finished", "finished"] and runs[1]["new"] == len(keys)


def test_warm_builder_equals_uncached_builder(tmp_path, builder, dev_examples, minilm_tokenizer, trigram):
    examples = dev_examples[100:140]
    path = tmp_path / "c.duckdb"
    precompute(examples, builder, PriorCache(path), progress=False)
    warm = PriorBuilder.paper(minilm_tokenizer, provider=trigram(), cache=path)
    assert isinstance(warm.provider, CachedProvider) and warm.cache.read_only
    for e in examples:
        assert np.array_equal(warm.build(e.text_a, e.text_b).numpy(), builder.build(e.text_a, e.text_b).numpy())
    assert warm.provider.stats.misses == 0 and warm.provider.stats.hits > 0


def test_block_shape_does_not_change_values(tmp_path, builder, dev_examples):
    examples = dev_examples[200:240]
    fp = builder.provider.fingerprint
    precompute(examples, builder, PriorCache(tmp_path / "exact.duckdb"), progress=False)
    precompute(examples, builder, PriorCache(tmp_path / "dense.duckdb"), progress=False, min_density=0.2)
    assert _same_values(_stored(tmp_path / "exact.duckdb", fp), _stored(tmp_path / "dense.duckdb", fp))


def test_torch_free_word_pairs_match_the_real_builder(builder, dev_examples):
    """WordKeys.paper (no tokenizer, no torch: what child processes use) asks for the builder's pairs."""
    from priorkit.align.words import WordKeys

    helper = WordKeys.paper(builder.provider)
    for e in dev_examples[:200]:
        assert helper.word_pairs(e.text_a, e.text_b) == builder.word_pairs(e.text_a, e.text_b)


# ---- command line ---------------------------------------------------------
def test_cli_precompute_and_cache_info(tmp_path, plugin_dir, monkeypatch, builder):
    from priorkit.cli import cli

    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugin_dir))
    path = tmp_path / "cli.duckdb"
    args = ["precompute", str(stsb_path("dev")), "--preset", "paper", "--provider", "trigram", "--limit", "25",
            "--cache", str(path), "--json", "--batch-size", "400"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    examples = read_dataset(stsb_path("dev"), limit=25)
    keys = canonical_pairs(collect_pairs(examples, builder)[0])
    assert summary["pairs"] == summary["new"] == len(keys) and summary["cache"] == str(path)
    info = CliRunner().invoke(cli, ["cache", "info", "--cache", str(path), "--json"], catch_exceptions=False)
    data = json.loads(info.output)
    assert data["providers"][0]["name"] == "trigram" and data["providers"][0]["pairs"] == len(keys)
    run = data["runs"][0]
    assert run["status"] == "finished" and run["format"] == "stsb" and run["layout"] == "paper"
    assert run["tokenizer"].startswith("model-") and len(run["dataset_checksum"]) == 64
    table = CliRunner().invoke(cli, ["cache", "info", "--cache", str(path)], catch_exceptions=False)
    assert "trigram" in table.output and f"{len(keys):,}" in table.output


def test_cli_second_writer_gets_a_clear_error(tmp_path, plugin_dir, builder, dev_examples):
    path = tmp_path / "locked.duckdb"
    precompute(dev_examples[:5], builder, PriorCache(path), progress=False)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from priorkit.cache import PriorCache
        with PriorCache({str(path)!r}).connect(write=True):
            print("holding", flush=True)
            time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        env = {**os.environ, "PRIORKIT_PLUGINS_DIR": str(plugin_dir)}
        proc = subprocess.run(
            [sys.executable, "-c", "from priorkit.cli import main; main()", "precompute", str(stsb_path("dev")),
             "--preset", "paper", "--provider", "trigram", "--limit", "10", "--cache", str(path), "--timeout",
             "0.5", "--no-progress"],
            capture_output=True, text=True, env=env, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2, proc.stderr
    assert f"PID {holder.pid}" in proc.stderr and "locked" in proc.stderr
    assert PriorCache(path, read_only=True).count() > 0  # the file is fine


def test_cli_paper_preset_with_wordnet(tmp_path, xia2021, dev_examples, minilm_tokenizer):
    from priorkit.cli import cli

    path = tmp_path / "paper.duckdb"
    result = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--preset", "paper", "--limit", "20",
                                      "--cache", str(path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    paper = PriorBuilder.paper(minilm_tokenizer)
    wanted, _ = collect_pairs(dev_examples[:20], paper)
    assert summary["requested"] == len(wanted) and summary["new"] == summary["pairs"]
    stored = _stored(path, xia2021.fingerprint)
    sample = random.Random(3).sample(wanted, 100)
    direct = xia2021.similarity([a for a, _ in sample], [b for _, b in sample]).diagonal()
    assert nan_equal(np.array([stored[p] for p in sample], np.float32), direct)


def test_cli_rejects_conflicting_options(tmp_path):
    from priorkit.cli import cli

    result = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--preset", "paper",
                                      "--layout", "full", "--cache", str(tmp_path / "x.duckdb")])
    assert result.exit_code != 0 and "--preset paper fixes" in result.output
    result = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--cache", str(tmp_path / "x.duckdb")])
    assert result.exit_code != 0 and "--provider" in result.output
    assert not (tmp_path / "x.duckdb").exists()

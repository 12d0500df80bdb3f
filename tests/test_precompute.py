"""precompute on real STS-B pairs, a real tokenizer and real DuckDB files,
including a run killed with SIGKILL and resumed."""
from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from priorkit.align import PriorBuilder
from priorkit.cache import CachedProvider, PriorCache, canonical_pairs, nan_equal
from priorkit.datasets import read_dataset
from priorkit.precompute import collect_pairs, plan_batches, plan_blocks, precompute
from priorkit.resources import stsb_path

#: A real plug-in file: character-trigram Jaccard, symmetric; NaN for words without letters.
PLUGIN = '''
import numpy as np
import priorkit
from priorkit.provider import PriorProvider


def grams(word):
    w = "##" + word + "##"
    return frozenset(w[i:i + 3] for i in range(len(w) - 2))


class Trigram(PriorProvider):
    """Character-trigram Jaccard similarity."""

    name = "trigram"
    version = "1"
    symmetric = True

    def compute(self, left, right):
        gl, gr = [grams(w) for w in left], [grams(w) for w in right]
        out = np.array([[len(a & b) / len(a | b) for b in gr] for a in gl], dtype=np.float32)
        out = out.reshape(len(left), len(right))
        out[[not any(c.isalpha() for c in w) for w in left], :] = np.nan
        out[:, [not any(c.isalpha() for c in w) for w in right]] = np.nan
        return out


class PaperWordPairs:
    """The word pairs of the paper preset (keys of cls + A + sep against B + sep,
    stop words dropped), without loading a tokenizer: lets a test process start
    in a second instead of importing torch."""

    def __init__(self, provider):
        self.provider = provider

    def word_pairs(self, text_a, text_b):
        from priorkit.words import is_stop_word, paper_key

        left = [k for k in dict.fromkeys(["cls", *map(paper_key, text_a.split()), "sep"]) if not is_stop_word(k)]
        right = [k for k in dict.fromkeys([*map(paper_key, text_b.split()), "sep"]) if not is_stop_word(k)]
        return [(a, b) for a in left for b in right]


@priorkit.hookimpl
def register_prior_providers(register):
    register("trigram", Trigram)
'''


def jaccard_reference(a: str, b: str) -> float:
    """Independent reference of the plug-in's measure (float32, NaN rule included)."""
    if not any(c.isalpha() for c in a) or not any(c.isalpha() for c in b):
        return float("nan")
    ga = {f"##{a}##"[i:i + 3] for i in range(len(a) + 2)}
    gb = {f"##{b}##"[i:i + 3] for i in range(len(b) + 2)}
    return float(np.float32(len(ga & gb) / len(ga | gb)))


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plugins")
    (folder / "trigram_plugin.py").write_text(PLUGIN)
    return folder


@pytest.fixture(scope="module")
def plugin_module(plugin_dir):
    spec = importlib.util.spec_from_file_location("trigram_plugin_for_tests", plugin_dir / "trigram_plugin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def _stored(path: Path, fingerprint: str) -> dict:
    return PriorCache(path, read_only=True).load(fingerprint).to_dict()


def _same_values(a: dict, b: dict) -> bool:
    keys = sorted(a)
    return keys == sorted(b) and nan_equal(np.array([a[k] for k in keys]), np.array([b[k] for k in keys]))


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
    for a, b in random.Random(0).sample(sorted(wanted), 300):  # both orders are answered
        assert nan_equal(np.float32(stored[(a, b)]), np.float32(jaccard_reference(a, b)))
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


KILLABLE = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("trigram_plugin", {plugin!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from priorkit.cache import PriorCache
from priorkit.datasets import read_dataset
from priorkit.precompute import precompute
examples = read_dataset({dataset!r}, limit={limit})[{start}:]
builder = mod.PaperWordPairs(mod.Trigram())
print("start", flush=True)
def report(r):
    print("batch", r.index, r.committed, flush=True)
    time.sleep({pause})  # a slower provider: leaves readers a window between batches
precompute(examples, builder, PriorCache({cache!r}), batch_size={batch}, progress=False, on_batch=report)
print("done", flush=True)
"""


def _script(plugin_dir: Path, path: Path, limit: int, batch: int, start: int = 0, pause: float = 0.0) -> str:
    """A precompute of STS-B dev[start:limit] (trigram provider) as a standalone program."""
    return KILLABLE.format(plugin=str(plugin_dir / "trigram_plugin.py"), dataset=str(stsb_path("dev")),
                           limit=limit, start=start, cache=str(path), batch=batch, pause=pause)


def _run_and_kill(script: str, after_batches: int, rng: random.Random) -> int:
    """Start a precompute process, SIGKILL it after some committed batches plus a random
    delay, so the kill lands anywhere: computing, inserting or committing."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    committed = 0
    try:
        for line in proc.stdout:
            parts = line.split()
            if parts[0] == "batch":
                committed = int(parts[2])
                if int(parts[1]) >= after_batches:
                    break
            assert parts[0] != "done", "the run finished before it could be killed; use more data"
        time.sleep(rng.uniform(0, 0.05))
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return committed


def test_paper_word_pairs_helper_matches_the_real_builder(plugin_module, builder, dev_examples):
    helper = plugin_module.PaperWordPairs(builder.provider)
    for e in dev_examples[:200]:
        assert helper.word_pairs(e.text_a, e.text_b) == builder.word_pairs(e.text_a, e.text_b)


def _kill_cycle(tmp_path, plugin_module, plugin_dir, trials: int, seed: int, limit: int) -> None:
    builder = plugin_module.PaperWordPairs(plugin_module.Trigram())
    batch = 300
    path = tmp_path / "killed.duckdb"
    examples = read_dataset(stsb_path("dev"), limit=limit)
    wanted, _ = collect_pairs(examples, builder)
    keys = canonical_pairs(wanted)
    fp = builder.provider.fingerprint
    script = _script(plugin_dir, path, limit, batch)
    rng = random.Random(seed)
    for _ in range(trials):
        todo = PriorCache(path).missing(fp, keys) if path.exists() else keys
        before = len(keys) - len(todo)
        sizes = [sum(len(b) for b in batch_) for batch_ in plan_batches(todo, batch_size=batch)]
        whole = {before + int(s) for s in np.cumsum([0, *sizes])}
        assert len(sizes) >= 3, "too little work left to kill a run in the middle; raise limit"
        reported = _run_and_kill(script, after_batches=rng.randint(1, min(4, len(sizes) - 2)), rng=rng)
        # the file opens, and holds exactly a whole number of this run's batches
        count = PriorCache(path, read_only=True).count(fp)
        assert count in whole, (count, sorted(whole)[:6])
        assert count >= before + reported
        assert count < len(keys)
    resumed = precompute(examples, builder, PriorCache(path), batch_size=10 * batch, progress=False)
    assert resumed.cached == count and resumed.new == len(keys) - count
    reference = tmp_path / "uninterrupted.duckdb"  # batch size does not change values
    precompute(examples, builder, PriorCache(reference), batch_size=len(keys), progress=False)
    assert _same_values(_stored(path, fp), _stored(reference, fp))
    statuses = [r["status"] for r in PriorCache(path, read_only=True).runs(limit=trials + 1)]
    assert statuses[0] == "finished" and statuses[1:] == ["killed"] * trials


def test_sigkill_mid_run_then_resume_gives_identical_values(tmp_path, plugin_module, plugin_dir):
    _kill_cycle(tmp_path, plugin_module, plugin_dir, trials=2, seed=1, limit=300)


@pytest.mark.slow
def test_repeated_sigkill_then_resume(tmp_path, plugin_module, plugin_dir):
    _kill_cycle(tmp_path, plugin_module, plugin_dir, trials=20, seed=2, limit=1000)


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


# ---- concurrent processes ---------------------------------------------------

def test_readers_during_a_write_see_whole_batches(tmp_path, plugin_module, plugin_dir):
    builder = plugin_module.PaperWordPairs(plugin_module.Trigram())
    path = tmp_path / "c.duckdb"
    examples = read_dataset(stsb_path("dev"), limit=300)
    keys = canonical_pairs(collect_pairs(examples, builder)[0])
    whole = {int(s) for s in np.cumsum([0, *[sum(len(b) for b in batch) for batch in plan_batches(keys, 300)]])}
    PriorCache(path).check()
    proc = subprocess.Popen([sys.executable, "-c", _script(plugin_dir, path, 300, 300, pause=0.1)],
                            stdout=subprocess.DEVNULL)
    seen = []
    reader = PriorCache(path, read_only=True, timeout=30)
    fp = builder.provider.fingerprint
    while proc.poll() is None:
        seen.append(reader.count(fp))
        time.sleep(0.01)
    proc.wait()
    seen.append(reader.count(fp))
    assert proc.returncode == 0
    assert len(set(seen)) > 2, "the reader never saw the writer in the middle of its run"
    assert set(seen) <= whole and seen == sorted(seen) and seen[-1] == len(keys)


def test_two_writers_at_once_lose_nothing(tmp_path, plugin_module, plugin_dir):
    builder = plugin_module.PaperWordPairs(plugin_module.Trigram())
    path = tmp_path / "c.duckdb"
    PriorCache(path).check()
    # overlapping slices of STS-B dev, written by two processes at the same time
    procs = [subprocess.Popen([sys.executable, "-c", _script(plugin_dir, path, limit, 200, start)],
                              stdout=subprocess.DEVNULL) for limit, start in ((300, 0), (450, 150))]
    for p in procs:
        assert p.wait(timeout=300) == 0
    examples = read_dataset(stsb_path("dev"), limit=450)
    reference = tmp_path / "one-writer.duckdb"
    summary = precompute(examples, builder, PriorCache(reference), progress=False)
    fp = builder.provider.fingerprint
    assert PriorCache(path, read_only=True).count(fp) == summary.pairs  # no pair lost, none twice
    assert _same_values(_stored(path, fp), _stored(reference, fp))

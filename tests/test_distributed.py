"""precompute on a real Dask LocalCluster (2 worker processes): the same values
as a single-process run, the provider built once per worker, shards left by an
interrupted run ingested by the next, clear errors."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from priorkit.align import PriorBuilder
from priorkit.cache import PriorCache, canonical_pairs
from priorkit.datasets import read_dataset
from priorkit.errors import PluginError, PriorkitError
from priorkit.precompute import collect_pairs, plan_batches, precompute
from priorkit.resources import stsb_path

from support import workload as _faults  # the trigram test plug-in and cache read-back helpers

_stored, _same_values = _faults.stored, _faults.same_values


def test_dask_is_installed():
    """The `test` extra installs Dask; without it every other test here would be meaningless."""
    import distributed  # noqa: F401


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of 2 worker processes (one thread each) for the module.

    Started without PRIORKIT_PLUGINS_DIR: its workers know only installed plug-ins."""
    from priorkit.precompute.dask_engine import start_client

    saved = os.environ.pop("PRIORKIT_PLUGINS_DIR", None)
    try:
        client, cluster = start_client(workers=2)
    finally:
        if saved is not None:
            os.environ["PRIORKIT_PLUGINS_DIR"] = saved
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def dev_examples():
    return read_dataset(stsb_path("dev"), limit=400)


def test_two_workers_store_exactly_what_one_process_stores(tmp_path, client, dev_examples, minilm_tokenizer,
                                                           xia2021):
    from priorkit.precompute.dask_engine import precompute_distributed

    single = tmp_path / "single.duckdb"
    reference = precompute(dev_examples, PriorBuilder.paper(minilm_tokenizer), PriorCache(single), progress=False)
    path = tmp_path / "dask.duckdb"
    shard_dir = tmp_path / "shards"
    summary = precompute_distributed(dev_examples, PriorBuilder.paper(minilm_tokenizer), PriorCache(path),
                                     client=client, shard_size=1_000, shard_dir=shard_dir, progress=False,
                                     run_info={"dataset": "sts-dev.csv"})
    fp = xia2021.fingerprint
    assert summary.fingerprint == reference.fingerprint == fp
    assert summary.pairs == reference.pairs == summary.new == summary.computed and summary.cached == 0
    keys = canonical_pairs(collect_pairs(dev_examples, PriorBuilder.paper(minilm_tokenizer))[0])
    assert summary.shards == summary.batches == len(plan_batches(keys, batch_size=1_000)) >= 5
    assert _same_values(_stored(path, fp), _stored(single, fp))  # exact, NaN included
    # split across both worker processes, each built (and loaded) the provider exactly once
    worker_pids = set(client.run(os.getpid).values())
    assert {int(k.rsplit(":", 1)[1]) for k in summary.builds} == worker_pids and os.getpid() not in worker_pids
    assert set(summary.builds.values()) == {1}
    assert summary.workers == 2 and summary.scheduler.startswith("tcp://")
    assert not shard_dir.exists()  # every shard ingested and removed
    run = PriorCache(path, read_only=True).runs()[0]
    assert run["status"] == "finished" and run["new"] == summary.pairs and run["dataset"] == "sts-dev.csv"
    assert run["message"].startswith("engine=dask") and f"shards={summary.shards}" in run["message"]
    # a rerun finds everything cached and needs no worker
    again = precompute_distributed(dev_examples, PriorBuilder.paper(minilm_tokenizer), PriorCache(path),
                                   client=client, shard_dir=shard_dir, progress=False)
    assert again.new == again.computed == again.shards == 0 and again.cached == summary.pairs


def test_shards_of_an_interrupted_run_are_ingested_by_the_next(tmp_path, client, dev_examples, minilm_tokenizer,
                                                               xia2021):
    from priorkit.precompute.dask_engine import default_shard_dir, precompute_distributed

    examples = dev_examples[:250]
    path = tmp_path / "c.duckdb"
    folder = default_shard_dir(PriorCache(path)) / xia2021.fingerprint
    n_shards = []

    def interrupt(report):
        """After the first ingest, wait until the workers wrote every other shard, then Ctrl-C."""
        deadline = time.monotonic() + 60
        while len(list(folder.glob("run*.parquet"))) < n_shards[0] - report.index:
            assert time.monotonic() < deadline, "the workers did not finish their shards"
            time.sleep(0.05)
        raise KeyboardInterrupt

    keys = canonical_pairs(collect_pairs(examples, PriorBuilder.paper(minilm_tokenizer))[0])
    n_shards.append(len(plan_batches(keys, batch_size=600)))
    assert n_shards[0] >= 3
    with pytest.raises(KeyboardInterrupt):
        precompute_distributed(examples, PriorBuilder.paper(minilm_tokenizer), PriorCache(path), client=client,
                               shard_size=600, progress=False, on_shard=interrupt)
    cache = PriorCache(path)
    first = cache.count(xia2021.fingerprint)
    left = list(folder.glob("run*.parquet"))
    assert 0 < first < len(keys) and len(left) >= 1
    assert cache.runs()[0]["status"] == "interrupted"
    resumed = precompute_distributed(examples, PriorBuilder.paper(minilm_tokenizer), cache, client=client,
                                     shard_size=600, progress=False)
    assert resumed.resumed == len(keys) - first - resumed.computed and resumed.resumed > 0
    assert resumed.new == len(keys) - first and not folder.exists()
    reference = tmp_path / "single.duckdb"
    precompute(examples, PriorBuilder.paper(minilm_tokenizer), PriorCache(reference), progress=False)
    assert _same_values(_stored(path, xia2021.fingerprint), _stored(reference, xia2021.fingerprint))


def test_provider_unknown_to_the_workers_fails_clearly(tmp_path, client, plugin_dir, monkeypatch, dev_examples,
                                                       minilm_tokenizer):
    """The driver loads the plug-in from PRIORKIT_PLUGINS_DIR; the running workers were started without it."""
    import priorkit
    from priorkit.precompute.dask_engine import precompute_distributed

    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugin_dir))
    builder = PriorBuilder.paper(minilm_tokenizer, provider=priorkit.get_provider("trigram"))
    path = tmp_path / "c.duckdb"
    with pytest.raises(PluginError) as err:
        precompute_distributed(dev_examples[:20], builder, PriorCache(path), client=client, progress=False)
    msg = str(err.value)
    assert "Dask worker" in msg and "PID" in msg and "'trigram'" in msg and "PRIORKIT_PLUGINS_DIR" in msg
    run = PriorCache(path, read_only=True).runs()[0]
    assert run["status"] == "failed" and "trigram" in run["message"]


def test_unregistered_provider_fails_before_any_work(tmp_path, plugin_dir, dev_examples, minilm_tokenizer):
    """A provider object that no plug-in registered cannot be rebuilt on a worker: said at once."""
    from priorkit.precompute.dask_engine import precompute_distributed

    module = _faults.load_plugin(plugin_dir / "trigram_plugin.py", "trigram_unregistered")
    builder = PriorBuilder.paper(minilm_tokenizer, provider=module.Trigram())
    path = tmp_path / "c.duckdb"
    with pytest.raises(PluginError, match=r"the driver\) cannot build 'trigram': unknown prior provider"):
        precompute_distributed(dev_examples[:20], builder, PriorCache(path), progress=False)
    assert not path.exists()  # nothing written, no cluster started


def test_missing_dask_names_the_extra(tmp_path, monkeypatch, dev_examples, minilm_tokenizer):
    from priorkit.precompute.dask_engine import precompute_distributed

    monkeypatch.setitem(sys.modules, "distributed", None)  # what `import distributed` sees when not installed
    with pytest.raises(PriorkitError, match=r"pip install 'priorkit\[distributed\]'"):
        precompute_distributed(dev_examples[:5], PriorBuilder.paper(minilm_tokenizer),
                               PriorCache(tmp_path / "c.duckdb"), progress=False)


def test_unreachable_scheduler(tmp_path, dev_examples, minilm_tokenizer):
    from priorkit.precompute.dask_engine import precompute_distributed

    path = tmp_path / "c.duckdb"
    with pytest.raises(PriorkitError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        precompute_distributed(dev_examples[:5], PriorBuilder.paper(minilm_tokenizer), PriorCache(path),
                               scheduler="tcp://127.0.0.1:9", connect_timeout=1, progress=False)
    assert PriorCache(path, read_only=True).runs()[0]["status"] == "failed"


def test_cli_engine_dask(tmp_path, plugin_dir, monkeypatch, minilm_tokenizer):
    """`priorkit precompute --engine dask`: its own LocalCluster, whose workers load the
    plug-in folder from the environment they inherit."""
    from priorkit.cli import cli

    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugin_dir))
    import priorkit

    path = tmp_path / "cli.duckdb"
    args = ["precompute", str(stsb_path("dev")), "--preset", "paper", "--provider", "trigram", "--limit", "100",
            "--cache", str(path), "--engine", "dask", "--workers", "2", "--shard-size", "300", "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["engine"] == "dask" and summary["workers"] == 2 and summary["scheduler"] == "LocalCluster"
    assert set(summary["builds"].values()) == {1} and len(summary["builds"]) == 2
    reference = tmp_path / "single.duckdb"
    builder = PriorBuilder.paper(minilm_tokenizer, provider=priorkit.get_provider("trigram"))
    single = precompute(read_dataset(stsb_path("dev"), limit=100), builder, PriorCache(reference), progress=False)
    assert summary["pairs"] == summary["new"] == single.pairs
    assert _same_values(_stored(path, single.fingerprint), _stored(reference, single.fingerprint))
    bad = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--preset", "paper", "--workers", "2",
                                   "--cache", str(tmp_path / "x.duckdb")])
    assert bad.exit_code != 0 and "--workers only apply to --engine dask" in bad.output
    bad = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--preset", "paper", "--engine", "dask",
                                   "--workers", "2", "--scheduler", "tcp://127.0.0.1:9",
                                   "--cache", str(tmp_path / "x.duckdb")])
    assert bad.exit_code != 0 and "with --scheduler" in bad.output
    assert not (tmp_path / "x.duckdb").exists()


def test_cli_scheduler_address(tmp_path, client, xia2021):
    """`--scheduler ADDRESS`: a running cluster's workers do the work (here the module's cluster)."""
    from priorkit.cli import cli

    path = tmp_path / "c.duckdb"
    address = client.scheduler.address
    result = CliRunner().invoke(cli, ["precompute", str(stsb_path("dev")), "--preset", "paper", "--limit", "30",
                                      "--cache", str(path), "--engine", "dask", "--scheduler", address,
                                      "--shard-size", "200", "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"dask ({address}, 2 workers)" in result.output
    run = PriorCache(path, read_only=True).runs()[0]
    assert run["status"] == "finished" and f"scheduler={address}" in run["message"] and run["new"] > 0
    assert PriorCache(path, read_only=True).count(xia2021.fingerprint) == run["new"]


def test_pipeline_precompute_section_chooses_the_engine(tmp_path, client, minilm_path, xia2021):
    """A pipeline's ``engine: {type: dask, scheduler: ...}`` fills its cache on Dask workers
    (here the module's cluster, by address) with exactly what the local engine stores."""
    from priorkit.config import config_from_dict
    from priorkit.training.steps import run_pipeline

    def run(name: str, precompute: dict) -> Path:
        cfg = config_from_dict({
            "name": name, "output_dir": str(tmp_path / name),
            "model": {"name_or_path": str(minilm_path), "max_length": 32},
            "data": {"train": {"source": "stsb", "split": "dev", "limit": 80},
                     "eval": {"source": "stsb", "split": "dev", "limit": 8}},
            "prior": {"name": "paper", "preset": "paper"}, "engine": precompute,
            "train": {"progress": False},
        })
        outcome = run_pipeline(cfg, steps=("precompute",), log=lambda s: None).outcomes[0]
        assert outcome.status == "done", outcome
        return tmp_path / name / "cache" / "priors.duckdb"

    dask = run("dask", {"type": "dask", "scheduler": client.scheduler.address, "batch_size": 500})
    local = run("local", {"type": "local", "batch_size": 900})
    fp = xia2021.fingerprint
    assert _same_values(_stored(dask, fp), _stored(local, fp)) and len(_stored(dask, fp)) > 1_000
    message = PriorCache(dask, read_only=True).runs()[0]["message"]
    assert message.startswith(f"engine=dask; scheduler={client.scheduler.address}; workers=2; shards=")
    assert int(message.split("shards=")[1].split()[0]) >= 2  # several shards of 500 pairs
    assert PriorCache(local, read_only=True).runs()[0]["message"] is None

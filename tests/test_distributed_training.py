"""A pipeline under ``torchrun --nproc_per_node 2`` (CPU, gloo): the Trainer's own DDP path.

One real launch of ``python -m priorkit run`` in two processes on a tiny random BERT
(MiniLM vocabulary), 32 real STS-B pairs, the paper's WordNet prior through a real
DuckDB cache, then checks from the outside: both processes trained on distinct
shards of every epoch (``PRIORKIT_TRACE_EXAMPLES``), the step count is that of a
2-process run, the main process alone precomputed and wrote the run folder, and the
saved model reloads with its prior settings and scores exactly as the distributed
evaluation did.  About 15-25 s on two busy cores (process start-up dominates).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

TRAIN, BATCH, EPOCHS, EVAL, EVAL_BATCH = 32, 4, 2, 24, 8


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, minilm_tokenizer):
    """A random 2-layer BERT with the MiniLM vocabulary, saved like a Hub model."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                        initializer_range=0.1)
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config).save_pretrained(folder)
    minilm_tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def launched(tmp_path_factory, tiny_model):
    """One 2-process run of the whole pipeline; returns (config path, out dir, trace dir, completed process)."""
    tmp = tmp_path_factory.mktemp("ddp")
    out, trace = tmp / "runs", tmp / "trace"
    config = tmp / "tiny-ddp.yaml"
    config.write_text(textwrap.dedent(f"""
        name: tiny-ddp
        output_dir: {out}
        model: {{name_or_path: {tiny_model}, max_length: 32}}
        task: {{type: regression, label_scale: 5.0}}
        data:
          train: {{source: stsb, split: train, sample: {TRAIN}, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: {EVAL}}}
        prior: {{name: paper, preset: paper}}
        train: {{epochs: {EPOCHS}, batch_size: {BATCH}, eval_batch_size: {EVAL_BATCH}, learning_rate: 1.0e-3,
                 group_by_length: true, logging_steps: 1, progress: false}}
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PRIORKIT_TRACE_EXAMPLES": str(trace)}
    # `python -m torch.distributed.run` is `torchrun`; --standalone picks a free port on localhost
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "priorkit", "run", str(config)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return config, out, trace, proc


def test_both_processes_train_distinct_shards_of_every_epoch(launched):
    _, out, trace, _ = launched
    run_dir = out / "paper" / "frac1" / "seed0"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    train = metrics["train"]
    assert train["world_size"] == 2 and train["examples"] == TRAIN
    assert train["steps"] == EPOCHS * TRAIN // (2 * BATCH)  # a 1-process run takes twice as many
    assert train["threads"] == max(1, len(os.sched_getaffinity(0)) // 2)  # each process its share of cores
    losses = [e for e in json.loads((run_dir / "train_log.json").read_text()) if "loss" in e]
    assert len(losses) == train["steps"]

    per_epoch = TRAIN // 2
    seen = [(trace / f"examples-rank{r}.txt").read_text().split() for r in (0, 1)]
    assert [len(s) for s in seen] == [EPOCHS * per_epoch] * 2
    orders = []
    for epoch in range(EPOCHS):
        a, b = (set(map(int, s[epoch * per_epoch:(epoch + 1) * per_epoch])) for s in seen)
        assert not a & b, f"epoch {epoch}: both processes trained on {sorted(a & b)}"
        assert a | b == set(range(TRAIN)), f"epoch {epoch}: examples never seen: {set(range(TRAIN)) - (a | b)}"
        orders.append(seen[0][epoch * per_epoch:(epoch + 1) * per_epoch])
    assert orders[0] != orders[1]  # a new shuffle each epoch


def test_main_process_alone_writes_the_run_folder_and_cache(launched):
    from priorkit.cache import PriorCache

    _, out, _, proc = launched
    assert [p.relative_to(out).as_posix() for p in out.rglob("metrics.json")] == ["paper/frac1/seed0/metrics.json"]
    assert not list(out.rglob("*.tmp")) and not list(out.rglob("*.partial"))
    assert not (out / "paper" / "frac1" / "seed0" / "checkpoints").exists()
    # one voice: the other process logs nothing, so each step is reported once
    for step in ("precompute", "train", "evaluate"):
        assert proc.stdout.count(f"] {step}: done") == 1, proc.stdout
    # the cache was filled by one precompute run (rank 0), the other process only read it
    runs = PriorCache(out / "cache" / "priors.duckdb", read_only=True).runs()
    assert len(runs) == 1 and runs[0]["status"] == "finished"


def test_saved_model_reloads_with_prior_and_scores_like_one_process(launched):
    from priorkit.config import load_config
    from priorkit.training.data import load_data
    from priorkit import load_model
    from priorkit.training.plan import plan_for_run
    from priorkit.training.train import evaluate_run

    config, out, _, _ = launched
    run_dir = out / "paper" / "frac1" / "seed0"
    trained = load_model(run_dir)
    assert trained.model.config.priorkit["layers"] == [0] and trained.model.config.priorkit["mode"] == "multiply"
    assert trained.builder is not None and trained.builder.layout == "paper"
    assert trained.info["run"]["train"]["world_size"] == 2

    cfg = load_config(config)
    distributed = json.loads((run_dir / "metrics.json").read_text())["metrics"]["eval"]
    # 24 examples in batches of 8: 3 batches on 2 processes, so the gather drops a padding batch
    single = evaluate_run(plan_for_run(cfg), load_data(cfg), model=trained)["eval"]
    assert single["examples"] == distributed["examples"] == EVAL
    for name in ("pearson", "spearman", "mse"):
        assert single[name] == pytest.approx(distributed[name], abs=1e-6), name

"""kill -9 during ``priorkit run`` training and during a Dask ingest, shared by
``benchmarks/cache_faults.py`` (``--only training,dask``) and ``tests/test_run_faults.py``.

Training: a real ``priorkit run`` (a random 2-layer BERT with the MiniLM
vocabulary, 32 STS-B pairs, the paper prior, checkpoints every 2 steps) is
killed when its first checkpoint folder appears (a checkpoint being written),
just after a checkpoint was written, at a random moment of training, or when
the final ``model.partial`` folder
appears (the model being saved); the same command is then rerun, with no
step in between, and must resume and end with a model that loads and
reproduces the scores its evaluate step recorded.

Dask ingest: ``precompute_distributed`` (a local cluster of two worker threads in
the killed process) is killed while it ingests its Parquet shards into the
cache; the same program rerun must ingest what the killed run left and end
with the values of a single-process run.  Both trials use the trigram plug-in
(``plugins/trigram_plugin.py``, registered through ``PRIORKIT_PLUGINS_DIR``) as the prior.

A trial never asserts; it returns its ``failures`` (see faults.py).
"""
from __future__ import annotations

import dataclasses
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

PIPELINE = """\
name: killed-run
output_dir: {out}
model: {{name_or_path: {model}, max_length: 32}}
task: {{type: regression, label_scale: 5.0}}
data:
  train: {{source: stsb, split: train, sample: 48, sample_seed: 1}}
  eval: {{source: stsb, split: dev, sample: 24}}
prior: {{name: paper, preset: paper, provider: trigram, cache: {cache}}}
train: {{epochs: 2, batch_size: 8, eval_batch_size: 32, learning_rate: 1.0e-3, progress: false,
         logging_steps: 1, threads: 1, save: 2}}
"""
STEPS = 12  # 48 examples / 8 per batch x 2 epochs


def tiny_model(folder: Path) -> Path:
    """A random 2-layer BERT with the MiniLM vocabulary, saved like a Hub model."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from priorkit.resources import minilm_path

    folder = Path(folder) / "tiny-bert"
    if not (folder / "config.json").exists():
        tok = AutoTokenizer.from_pretrained(str(minilm_path()))
        torch.manual_seed(0)
        config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=64, initializer_range=0.1)
        BertModel(config).save_pretrained(folder)
        tok.save_pretrained(folder)
    return folder


@dataclasses.dataclass
class TrainingKill:
    when: str  # "checkpoint" (appears) | "after-checkpoint" (written) | "random" | "model" (being saved)
    delay: float
    at_kill: str = ""  # what the run folder held when the kill landed
    rerun: str = ""  # the rerun's train line
    resumed_from: str | None = None
    failures: list[str] = dataclasses.field(default_factory=list)


def _run_dir(out: Path) -> Path:
    return out / "paper" / "frac1" / "seed0"


def _complete(run_dir: Path) -> list[str]:
    """Checkpoints whose trainer state was written (the last file the Trainer writes)."""
    return sorted(p.parent.name for p in (run_dir / "checkpoints").glob("checkpoint-*/trainer_state.json"))


def _held(run_dir: Path) -> str:
    ckpt = sorted(p.name for p in (run_dir / "checkpoints").glob("checkpoint-*")) if run_dir.exists() else []
    done = _complete(run_dir) if run_dir.exists() else []
    parts = [f"checkpoints {[c + ('' if c in done else ' (partial)') for c in ckpt]}" if ckpt else "no checkpoint"]
    for name in ("model.partial", "model", "metrics.json"):
        if (run_dir / name).exists():
            parts.append(name)
    return ", ".join(parts)


def training_kill_trial(folder: Path, model: Path, plugins: Path, rng: random.Random,
                        when: str = "checkpoint") -> TrainingKill:
    """SIGKILL ``priorkit run`` during training, rerun it, check the model it ends with.

    ``plugins``: a folder with the trigram plug-in (``workload.write_plugin``; the prior:
    cheap to compute, so the trial's time goes to training)."""
    folder = Path(folder) / f"train-kill-{rng.getrandbits(32):08x}"
    folder.mkdir(parents=True)
    out = folder / "runs"
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(PIPELINE.format(out=out, model=model, cache=folder / "cache.duckdb"))
    trial = TrainingKill(when, round(rng.uniform(0, 1.5), 3) if when == "random" else 0.0)
    run_dir = _run_dir(out)
    cmd = [sys.executable, "-m", "priorkit", "run", str(pipeline), "--steps", "precompute,train,evaluate"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PRIORKIT_PLUGINS_DIR": str(plugins)}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 600
    trigger = {"checkpoint": lambda: any((run_dir / "checkpoints").glob("checkpoint-*")),
               "after-checkpoint": lambda: bool(_complete(run_dir)),
               "random": lambda: (run_dir / "checkpoints").exists(),
               "model": lambda: (run_dir / "model.partial").exists()}[when]
    while time.monotonic() < deadline and proc.poll() is None and not trigger():
        time.sleep(0.002)
    time.sleep(trial.delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    err = proc.stderr.read()
    trial.at_kill = _held(run_dir)
    complete = _complete(run_dir)
    if proc.returncode != -signal.SIGKILL:
        trial.failures.append(f"the run ended before the kill (exit {proc.returncode}): {err[-300:]}")
        return trial
    rerun = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in (rerun.stdout + rerun.stderr).splitlines() if "train:" in ln]
    trial.rerun = lines[-1].strip() if lines else ""
    if rerun.returncode != 0:
        trial.failures.append(f"the rerun failed (exit {rerun.returncode}): {rerun.stderr[-500:]}")
        return trial
    try:
        metrics = json.loads((run_dir / "metrics.json").read_text())
    except (OSError, ValueError) as exc:
        trial.failures.append(f"no metrics.json after the rerun: {exc}")
        return trial
    train = metrics.get("train", {})
    trial.resumed_from = train.get("resumed_from")
    if train.get("steps") != STEPS:
        trial.failures.append(f"{train.get('steps')} steps, not {STEPS}")
    if complete and not (run_dir / "model").exists() and trial.resumed_from not in complete:
        trial.failures.append(f"resumed from {trial.resumed_from}, but the kill left {trial.at_kill}")
    if (run_dir / "checkpoints").exists() or (run_dir / "model.partial").exists():
        trial.failures.append(f"left behind: {_held(run_dir)}")
    trial.failures += _model_reproduces(run_dir, metrics, plugins)
    return trial


def _model_reproduces(run_dir: Path, metrics: dict, plugins: Path) -> list[str]:
    """The saved model loads and its predictions give the evaluate step's scores (the
    plug-in folder is on PRIORKIT_PLUGINS_DIR for this call only)."""
    before = os.environ.get("PRIORKIT_PLUGINS_DIR")
    os.environ["PRIORKIT_PLUGINS_DIR"] = str(plugins)
    try:
        return _reload_and_score(run_dir, metrics)
    finally:
        if before is None:
            os.environ.pop("PRIORKIT_PLUGINS_DIR", None)
        else:
            os.environ["PRIORKIT_PLUGINS_DIR"] = before


def _reload_and_score(run_dir: Path, metrics: dict) -> list[str]:
    import numpy as np

    from priorkit.config import load_config
    from priorkit.training.data import load_data
    from priorkit.metrics import regression_metrics
    from priorkit import load_model

    try:
        model = load_model(run_dir)
    except Exception as exc:  # noqa: BLE001 - any failure to load is the finding
        return [f"the model does not load: {type(exc).__name__}: {exc}"]
    examples = load_data(load_config(run_dir / "config.yaml"))["eval"].examples
    pred = np.stack(model.logits(examples))
    score = regression_metrics(pred[:, 0] * 5.0, np.array([e["label"] for e in examples]))
    want = metrics["metrics"]["eval"]["spearman"]
    if not abs(score["spearman"] - want) <= 1e-5:
        return [f"the reloaded model scores spearman {score['spearman']:.6f}, evaluate recorded {want:.6f}"]
    return []


# ---------------------------------------------------------------------------
# kill -9 during the Dask ingest
# ---------------------------------------------------------------------------
DASK_CHILD = """
import sys
import priorkit
from priorkit.align.words import WordKeys
from priorkit.cache import PriorCache
from priorkit.datasets import read_dataset
from priorkit.resources import stsb_path

builder = WordKeys.paper(priorkit.get_provider("trigram"))  # registered from PRIORKIT_PLUGINS_DIR
examples = read_dataset(stsb_path("dev"), limit={limit})
if {single!r}:
    from priorkit.precompute import precompute
    precompute(examples, builder, PriorCache({single!r}), progress=False)
    sys.exit(0)
from dask.distributed import Client, LocalCluster
from priorkit.precompute.dask_engine import precompute_distributed
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)

def report(r):
    print("ingested", r.index, flush=True)

precompute_distributed(examples, builder, PriorCache({cache!r}), client=client, shard_size={shard},
                       progress=False, on_shard=report)
print("done", flush=True)
"""


@dataclasses.dataclass
class IngestKill:
    after_shards: int  # shards ingested when the kill was sent
    delay: float
    count_after: int = 0  # pairs in the cache after the kill
    shards_left: int = 0  # Parquet shards the killed run left
    resumed: int = 0  # pairs the rerun ingested from those shards
    late: int = 0  # attempts whose run had finished before the kill landed (retried with no delay)
    failures: list[str] = dataclasses.field(default_factory=list)


def ingest_kill_trial(folder: Path, plugins: Path, rng: random.Random, *, limit: int = 250, shard: int = 300,
                      reference: Path | None = None) -> IngestKill:
    """SIGKILL a Dask precompute after its first ingested shard (+0-20 ms: the next ingests; the whole ingest takes about 50 ms),
    then rerun it in a new process and compare with a single-process run."""
    from priorkit.cache import PriorCache, nan_equal

    trial = IngestKill(1, round(rng.uniform(0, 0.02), 3))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PRIORKIT_PLUGINS_DIR": str(plugins)}
    for attempt in range(3):  # a kill that lands after the run ended tests nothing: try again at once
        path = Path(folder) / f"dask-kill-{rng.getrandbits(32):08x}" / "c.duckdb"
        path.parent.mkdir(parents=True)
        script = DASK_CHILD.format(limit=limit, cache=str(path), shard=shard, single="")
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        seen = 0
        for line in proc.stdout:
            if line.startswith("ingested"):
                seen += 1
                if seen >= trial.after_shards:
                    break
            if line.startswith("done"):
                break
        time.sleep(trial.delay if attempt == 0 else 0)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its local cluster: nothing survives
        except ProcessLookupError:
            pass
        proc.wait()
        if seen < trial.after_shards:
            trial.failures.append(f"the run ingested {seen} shards before it ended: {proc.stderr.read()[-500:]}")
            return trial
        first = [r["status"] for r in PriorCache(path, read_only=True, timeout=30).runs(limit=1)]
        if first != ["finished"]:
            break
        trial.late += 1  # every shard was in before the kill: no kill was tested
    else:
        trial.failures.append(f"the run finished before the kill in {trial.late} attempts: use smaller shards")
        return trial
    folder = path.parent
    from priorkit.precompute.dask_engine import default_shard_dir

    trial.count_after = PriorCache(path, read_only=True, timeout=30).count()
    trial.shards_left = len(list(default_shard_dir(PriorCache(path)).rglob("*.parquet")))
    rerun = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    if rerun.returncode != 0:
        trial.failures.append(f"the rerun failed (exit {rerun.returncode}): {rerun.stderr[-800:]}")
        return trial
    reference = Path(reference) if reference is not None else folder / "single.duckdb"
    if not reference.exists():  # values of a single-process run (shared by trials when given)
        single = DASK_CHILD.format(limit=limit, cache="", shard=shard, single=str(reference))
        done = subprocess.run([sys.executable, "-c", single], capture_output=True, text=True, env=env, timeout=900)
        if done.returncode != 0:
            trial.failures.append(f"the reference run failed: {done.stderr[-500:]}")
            return trial
    a, b = _all_values(path), _all_values(reference)
    if sorted(a) != sorted(b) or not nan_equal(*(np.array([d[k] for k in sorted(a)]) for d in (a, b))):
        trial.failures.append(f"{len(a)} values after the rerun vs {len(b)} from a single-process run, or values differ")
    if list(default_shard_dir(PriorCache(path)).rglob("*.parquet")):
        trial.failures.append("shards left after the rerun")
    status = [r["status"] for r in PriorCache(path, read_only=True).runs(limit=2)]
    if status != ["finished", "killed"]:
        trial.failures.append(f"run records {status}, expected the rerun finished and the first killed")
    return trial


def _all_values(path: Path) -> dict:
    from priorkit.cache import PriorCache

    with PriorCache(path, read_only=True).connect() as con:
        rows = con.execute('SELECT fingerprint, "left", "right", value FROM pairs').fetchall()
    return {(f, a, b): v for f, a, b, v in rows}


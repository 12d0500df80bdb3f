"""What the tagging benchmarks share (tag_throughput.py, tag_memory.py, kill_resume.py, tag_dask.py,
tag_bad_input.py): the models of benchmarks/tagging-models.yaml, BC5CDR sentences as JSON Lines
documents (repeated with unique ids for large corpora), the real ``priorkit predict`` as a child
process with its peak RSS, and the machine's load for the result files."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "tagging-bench"
FEATURES = RUNS / "features" / "frac1" / "seed0" / "model"
NONE = RUNS / "none" / "frac1" / "seed0" / "model"
RECIPE = RUNS / "recipe"
PRIORKIT = [sys.executable, "-m", "priorkit"]


def need_models() -> None:
    if not (FEATURES / "config.json").exists() or not (RECIPE / "priorkit.json").exists():
        sys.exit("the benchmark models are missing; make them first (a few CPU minutes):\n"
                 "  priorkit recipe benchmarks/tagging-models.yaml --arm mix-doc --out runs/tagging-bench/recipe")


def bc5cdr_texts() -> list[str]:
    """Every BC5CDR sentence (train, devel, test: 13,938) as running text, in file order."""
    from priorkit.datasets import read_dataset
    from priorkit.documents.conll import detokenize

    out = []
    for split in ("train", "devel", "test"):
        for s in read_dataset(ROOT / "data" / "bc5cdr" / f"{split}.tsv", "conll"):
            out.append(detokenize([list(s.words)])[0])
    return out


def write_corpus(path: Path, n: int, bad_at: int | None = None) -> Path:
    """``n`` BC5CDR sentences as JSON Lines documents (``{"id", "text"}``), the corpus repeated as
    often as needed with unique ids; ``bad_at``: that line (1-based) is a record without text."""
    texts = bc5cdr_texts()
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            if bad_at is not None and i + 1 == bad_at:
                fh.write(json.dumps({"id": f"s{i}", "txet": "a misspelt field"}) + "\n")
                continue
            fh.write(json.dumps({"id": f"s{i}", "text": texts[i % len(texts)]}) + "\n")
    return path


def predict(args: Sequence[str], env: dict[str, str] | None = None, trace: Path | None = None,
            every: float = 2.0) -> dict[str, Any]:
    """``priorkit predict ARGS`` as a child process: exit status, wall seconds, peak RSS (MiB, the
    child's own, from wait4) and its standard error.  ``trace``: the run's ``.progress`` file; then
    every ``every`` seconds the child's RSS and peak RSS so far (/proc) and the documents committed
    are sampled into ``"trace"`` (seconds, documents, rss_mib, peak_rss_mib)."""
    t0 = time.perf_counter()
    child = subprocess.Popen([*PRIORKIT, "predict", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                                  **(env or {})})
    samples: list[list[float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            try:
                status = Path(f"/proc/{child.pid}/status").read_text()
                kib = {k: int(v.split()[0]) for k, v in (ln.split(":", 1) for ln in status.splitlines())
                       if k in ("VmRSS", "VmHWM")}
                docs = json.loads(trace.read_text() or "{}").get("documents", 0) if trace.exists() else 0
            except (OSError, ValueError, KeyError):
                continue
            samples.append([round(time.perf_counter() - t0, 1), docs, round(kib["VmRSS"] / 1024, 1),
                            round(kib["VmHWM"] / 1024, 1)])

    sampler = threading.Thread(target=sample, daemon=True) if trace is not None else None
    if sampler:
        sampler.start()
    err = child.stderr.read()
    done.set()
    if sampler:
        sampler.join()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    out = {"rc": child.returncode, "seconds": time.perf_counter() - t0, "peak_rss_mib": usage.ru_maxrss / 1024,
           "stderr": err}
    if trace is not None:
        out["trace"] = samples
    return out


def machine() -> dict[str, Any]:
    import torch

    return {"machine": f"{platform.node()}: {os.cpu_count()}-core CPU VM, {platform.system()}",
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "date": time.strftime("%Y-%m-%d"), "load_before": os.getloadavg()}


def write_result(name: str, result: dict[str, Any]) -> Path:
    result = {**result, "load_after": os.getloadavg(), "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])}
    path = ROOT / "docs" / "results" / name
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return path

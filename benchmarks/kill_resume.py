"""kill -9 at random moments during a large ``priorkit predict`` run (the token-features MiniLM on
BC5CDR sentences): each trial starts the command from scratch (--restart), SIGKILLs it at a random
moment after it started tagging, runs the same command again to the end, and compares the file
with an uninterrupted run's, byte for byte.  The test suite's small version:
tests/test_predict_documents.py and tests/test_tagging.py (real kill -9 of a child process).

    .venv/bin/python benchmarks/kill_resume.py --sentences 6000 --trials 5
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=6000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--chunk-size", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="tagging-kill-resume.json")
    args = ap.parse_args()
    tc.need_models()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="kill-resume-"))
    corpus = tc.write_corpus(tmp / "corpus.jsonl", args.sentences)
    reference = tmp / "reference.jsonl"
    base = [str(tc.FEATURES), str(corpus), "--chunk-size", str(args.chunk_size), "--no-progress"]
    r = tc.predict([*base, "--out", str(reference)])
    assert r["rc"] == 0, r["stderr"][-2000:]
    full = r["seconds"]
    print(f"uninterrupted: {full:.0f} s", flush=True)
    result = {**tc.machine(), "sentences": args.sentences, "chunk_size": args.chunk_size,
              "uninterrupted_seconds": round(full, 1), "trials": []}
    out = tmp / "killed.jsonl"
    progress = Path(str(out) + ".progress")
    for trial in range(args.trials):
        # the previous trial's finished file and its .progress go first: else the wait below sees
        # their committed documents and the kill lands before the new run has loaded its model
        out.unlink(missing_ok=True)
        progress.unlink(missing_ok=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        child = subprocess.Popen([*tc.PRIORKIT, "predict", *base, "--out", str(out), "--restart"], cwd=tc.ROOT,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        t0 = time.perf_counter()
        while child.poll() is None:  # until the first chunk is committed (the model has loaded)
            if progress.exists() and json.loads(progress.read_text() or "{}").get("documents", 0) > 0:
                break
            time.sleep(0.05)
        startup = time.perf_counter() - t0
        delay = rng.uniform(0.0, 0.9 * max(full - startup, 1.0))  # a random moment of the tagging
        time.sleep(delay)
        killed = child.poll() is None
        if killed:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
        record = json.loads(progress.read_text())
        size = out.stat().st_size
        r = tc.predict([*base, "--out", str(out)])
        same = out.read_bytes() == reference.read_bytes()
        row = {"startup_seconds": round(startup, 1), "killed_after_seconds": round(delay, 1), "killed": killed, "committed_documents": record["documents"],
               "committed_bytes": record["bytes"], "file_bytes_at_kill": size,
               "uncommitted_tail_bytes": size - record["bytes"], "resume_rc": r["rc"],
               "resume_seconds": round(r["seconds"], 1), "equal_to_uninterrupted": same}
        result["trials"].append(row)
        print(f"trial {trial}: {row}", flush=True)
        assert r["rc"] == 0 and same, r["stderr"][-2000:]
    result["all_equal"] = all(t["equal_to_uninterrupted"] for t in result["trials"])
    result["killed_mid_run"] = sum(t["killed"] and t["committed_documents"] < args.sentences for t in result["trials"])
    result["killed_between_first_and_last_commit"] = sum(t["killed"] and 0 < t["committed_documents"] < args.sentences
                                                         for t in result["trials"])
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

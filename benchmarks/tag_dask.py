"""``priorkit predict --engine dask --workers 2`` against the local engine on the same corpus (the
token-features MiniLM, BC5CDR sentences): the two files must be equal byte for byte; the wall
times (cluster start and each worker's model load included) and the speed-up are recorded.
Local: one process with 2 torch threads; Dask: 2 worker processes with 1 thread each.

    .venv/bin/python benchmarks/tag_dask.py --sentences 4000
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=4000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="tagging-dask.json")
    args = ap.parse_args()
    tc.need_models()
    tmp = Path(tempfile.mkdtemp(prefix="tag-dask-"))
    corpus = tc.write_corpus(tmp / "corpus.jsonl", args.sentences)
    base = [str(tc.FEATURES), str(corpus), "--chunk-size", "128", "--no-progress"]
    result = {**tc.machine(), "sentences": args.sentences, "runs": {}}
    outs = {}
    for name, extra in (("local", []), ("dask", ["--engine", "dask", "--workers", str(args.workers)])):
        outs[name] = tmp / f"{name}.jsonl"
        r = tc.predict([*base, "--out", str(outs[name]), *extra])
        assert r["rc"] == 0, r["stderr"][-2000:]
        m = re.search(r"in ([\d.]+) s \(([\d.]+) doc/s once loaded", r["stderr"])
        result["runs"][name] = {"wall_seconds": round(r["seconds"], 1), "run_seconds": float(m[1]),
                                "documents_per_second_once_loaded": float(m[2]),
                                "summary": r["stderr"].strip().splitlines()[-1]}
        print(name, result["runs"][name], flush=True)
    result["equal_bytes"] = outs["local"].read_bytes() == outs["dask"].read_bytes()
    result["speedup_wall"] = round(result["runs"]["local"]["wall_seconds"] / result["runs"]["dask"]["wall_seconds"], 2)
    result["speedup_once_loaded"] = round(result["runs"]["dask"]["documents_per_second_once_loaded"]
                                          / result["runs"]["local"]["documents_per_second_once_loaded"], 2)
    print(f"equal bytes: {result['equal_bytes']}; speed-up {result['speedup_wall']}x wall, "
          f"{result['speedup_once_loaded']}x once loaded")
    assert result["equal_bytes"]
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

"""A bad record deep in a big JSON Lines file: ``priorkit predict`` (the token-features MiniLM) stops
at it with file:line, the chunks before it stay committed; the same command with --skip-bad goes on
from there, lists the record it skipped, and ends with the file a --skip-bad run from the start
writes (byte for byte).

The issue's example is line 150,000; tagging 150,000 sentences takes over 15 minutes on the 2-core
VM, so the default is line 15,000 of 20,000 (the reader, the check before loading and the commit
path do not depend on the position).

    .venv/bin/python benchmarks/tag_bad_input.py --lines 20000 --bad-at 15000
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--bad-at", type=int, default=15000)
    ap.add_argument("--chunk-size", type=int, default=256)
    ap.add_argument("--compare", action="store_true", help="also a --skip-bad run from the start, compared")
    ap.add_argument("--out", default="tagging-bad-input.json")
    args = ap.parse_args()
    tc.need_models()
    tmp = Path(tempfile.mkdtemp(prefix="tag-bad-"))
    corpus = tc.write_corpus(tmp / "big.jsonl", args.lines, bad_at=args.bad_at)
    out = tmp / "tagged.jsonl"
    base = [str(tc.FEATURES), str(corpus), "--out", str(out), "--chunk-size", str(args.chunk_size), "--no-progress"]
    stop = tc.predict(base)
    committed = json.loads(Path(str(out) + ".progress").read_text())["documents"]
    print(f"stopped: rc {stop['rc']} after {stop['seconds']:.0f} s; {stop['stderr'].strip()[-400:]}", flush=True)
    assert stop["rc"] == 1 and f"{corpus}:{args.bad_at}:" in stop["stderr"]
    go_on = tc.predict([*base, "--skip-bad"])
    print(f"--skip-bad: rc {go_on['rc']} after {go_on['seconds']:.0f} s; {go_on['stderr'].strip()[-600:]}", flush=True)
    assert go_on["rc"] == 0 and "skipped 1 bad record" in go_on["stderr"]
    ids = [json.loads(line)["id"] for line in out.open()]
    result = {**tc.machine(), "lines": args.lines, "bad_at": args.bad_at, "chunk_size": args.chunk_size,
              "stop": {"rc": stop["rc"], "seconds": round(stop["seconds"], 1), "committed_documents": committed,
                       "message": stop["stderr"].strip().splitlines()[-1]},
              "skip_bad": {"rc": go_on["rc"], "seconds": round(go_on["seconds"], 1),
                           "listed": [ln for ln in go_on["stderr"].splitlines() if ln.startswith("  ")],
                           "documents": len(ids), "the_bad_one_missing_only": ids == [f"s{i}" for i in range(args.lines)
                                                                                  if i != args.bad_at - 1]}}
    if args.compare:
        fresh = tmp / "fresh.jsonl"
        r = tc.predict([str(tc.FEATURES), str(corpus), "--out", str(fresh), "--chunk-size", str(args.chunk_size),
                        "--no-progress", "--skip-bad"])
        assert r["rc"] == 0, r["stderr"][-2000:]
        result["skip_bad"]["equal_to_a_skip_bad_run_from_the_start"] = fresh.read_bytes() == out.read_bytes()
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

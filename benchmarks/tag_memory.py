"""Peak memory of ``priorkit predict`` tagging a small and a 20 times larger corpus (BC5CDR
sentences repeated, unique ids) with the token-features MiniLM: the real command as a child
process, its peak RSS from wait4.  Target: the two differ by at most 15%.

The issue asks for 20k vs 400k sentences; on the 2-core VM 400k sentences take over half an hour,
so the default is 2k vs 40k (the same 20x; the 2k run already passes through eight 256-document
chunks, so it holds the model, a chunk in flight and the interpreter, as the large one does).

    .venv/bin/python benchmarks/tag_memory.py --small 2000 --large 40000
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=40000)
    ap.add_argument("--out", default="tagging-memory.json")
    args = ap.parse_args()
    tc.need_models()
    tmp = Path(tempfile.mkdtemp(prefix="tag-memory-"))
    result = {**tc.machine(), "model": str(tc.FEATURES.relative_to(tc.ROOT)), "runs": {}}
    for n in (args.small, args.large):
        corpus = tc.write_corpus(tmp / f"c{n}.jsonl", n)
        out = tmp / f"o{n}.jsonl"
        r = tc.predict([str(tc.FEATURES), str(corpus), "--out", str(out), "--no-progress"],
                       trace=Path(str(out) + ".progress"))
        assert r["rc"] == 0, r["stderr"][-2000:]
        lines = sum(1 for _ in out.open())
        assert lines == n, (lines, n)
        result["runs"][str(n)] = {"sentences": n, "seconds": round(r["seconds"], 1),
                                  "sentences_per_second": round(n / r["seconds"], 1),
                                  "peak_rss_mib": round(r["peak_rss_mib"], 1), "output_mib": round(out.stat().st_size / 2**20, 1),
                                  "trace_columns": ["seconds", "documents committed", "rss_mib", "peak_rss_mib"],
                                  "trace": r["trace"]}
        print(f"{n} sentences: {r['seconds']:.0f} s, peak RSS {r['peak_rss_mib']:.0f} MiB", flush=True)
    small, large = (result["runs"][str(k)]["peak_rss_mib"] for k in (args.small, args.large))
    result["rss_ratio_large_to_small"] = round(large / small, 3)
    result["target"] = "the large run's peak RSS at most 15% above the small one's"
    print(f"peak RSS {large:.0f} / {small:.0f} MiB = {large / small:.3f} (target <= 1.15)")
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

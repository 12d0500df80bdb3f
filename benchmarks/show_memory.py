"""Peak memory and time of ``priorkit show`` on a long sentence pair (issue 11).

    .venv/bin/python benchmarks/show_memory.py [--tokens 512] [--json out.json]

Builds a pair from real STS-B train sentences (side A and side B each about
``--tokens`` MiniLM tokens, so the pair is truncated to the tokenizer's
``model_max_length`` of 512) and runs ``priorkit show A B --out prior.png``
in this process through Click's test runner: the paper preset (WordNet
xia2021), the table of top cells and the capped heat-map.

Memory is Linux's resident set: the *baseline* is the process after importing
priorkit, loading the MiniLM tokenizer and WordNet (what any use of a prior
needs before the first matrix: WordNet's word look-up tables, about 80 MB of
Python lists, are built by the first similarity call of a process); the *peak* is the high-water mark while the
command runs (``VmHWM``, reset to the current RSS just before by writing 5 to
``/proc/self/clear_refs``).  The target is a peak under 200 MB above baseline.

With ``--trained RUN`` (a run or model folder of the MiniLM, e.g. from
``priorkit run pipelines/demo.yaml``) it measures ``priorkit show RUN A B --out
attention.png`` (docs/show.md, issue 19) instead: first on a 10-token pair, whose
peak is the reference, then on the long pair; the target is a peak under 300 MB
above the short one's and under 30 s.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MB
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def long_side(tokenizer, sentences: list[str], tokens: int) -> str:
    out: list[str] = []
    while sentences and len(tokenizer(" ".join(out), verbose=False)["input_ids"]) < tokens:
        out.append(sentences.pop(0))
    return " ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=512, help="tokens per side before truncation")
    ap.add_argument("--json", default=None)
    ap.add_argument("--max-length", type=int, default=512, help="--trained: tokens shown (the long pair is cut there)")
    ap.add_argument("--trained", default=None, metavar="RUN", help="a trained run or model folder: measure "
                    "`priorkit show RUN A B` against a 10-token pair")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.trained:
        trained(args)
        return

    bare = _status("VmRSS")
    from click.testing import CliRunner
    from transformers import AutoTokenizer

    import priorkit
    from priorkit.cli import cli
    from priorkit.resources import minilm_path, stsb_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    wordnet = priorkit.get_provider("wordnet", measure="xia2021")
    wordnet.pair_similarity(["cat"], ["dog"])  # loaded, with its word look-up tables (built on first use)
    rows = [line.rstrip("\n").split("\t") for line in open(stsb_path("train"), encoding="utf-8")]
    a = long_side(tok, [r[5] for r in rows[:400]], args.tokens)
    b = long_side(tok, [r[6] for r in rows[400:800]], args.tokens)
    n_tokens = len(tok(a, b, verbose=False)["input_ids"])
    baseline = _status("VmRSS")
    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "prior.png"
        _reset_peak()
        t0 = time.perf_counter()
        result = CliRunner().invoke(cli, ["show", a, b, "--out", str(png)], catch_exceptions=False)
        seconds = time.perf_counter() - t0
        peak = _status("VmHWM")
        if result.exit_code != 0:
            sys.exit(f"show failed: {result.output[-2000:]}")
        from PIL import Image

        with Image.open(png) as im:
            size = im.size
    report = {
        "date": _dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))})",
        "tokens_in_pair": n_tokens,
        "tokens_shown": min(n_tokens, tok.model_max_length),
        "rss_bare_mb": round(bare, 1),
        "rss_baseline_mb": round(baseline, 1),
        "peak_mb": round(peak, 1),
        "peak_above_baseline_mb": round(peak - baseline, 1),
        "seconds": round(seconds, 2),
        "png_pixels": list(size),
        "output_chars": len(result.output),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


def _timed_show(cli, argv: list[str]) -> tuple[float, float, str]:
    """(peak RSS MB, seconds, output) of one `priorkit show` in this process."""
    from click.testing import CliRunner

    _reset_peak()
    t0 = time.perf_counter()
    result = CliRunner().invoke(cli, ["show", *argv], catch_exceptions=False)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    if result.exit_code != 0:
        sys.exit(f"show failed: {result.output[-2000:]}")
    return peak, seconds, result.output


def trained(args: argparse.Namespace) -> None:
    """``priorkit show RUN A B --out attention.png``: a 10-token pair, then the long pair."""
    from transformers import AutoTokenizer

    from priorkit.cli import cli
    from priorkit.inference import resolve_folder
    from priorkit.resources import stsb_path

    folder = resolve_folder(args.trained)
    tok = AutoTokenizer.from_pretrained(str(folder))
    rows = [line.rstrip("\n").split("\t") for line in open(stsb_path("train"), encoding="utf-8")]
    a = long_side(tok, [r[5] for r in rows[:400]], args.tokens)
    b = long_side(tok, [r[6] for r in rows[400:800]], args.tokens)
    n_tokens = len(tok(a, b, verbose=False)["input_ids"])
    with tempfile.TemporaryDirectory() as tmp:
        short_peak, short_seconds, _ = _timed_show(cli, [args.trained, "A man sings.", "A dog.",
                                                         "--out", str(Path(tmp) / "short.png")])
        png = Path(tmp) / "attention.png"
        peak, seconds, output = _timed_show(cli, [args.trained, a, b, "--max-length", str(args.max_length), "--out", str(png)])
        from PIL import Image

        with Image.open(png) as im:
            size = im.size
    report = {
        "date": _dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))})",
        "run": str(folder),
        "tokens_in_pair": n_tokens,
        "short_peak_mb": round(short_peak, 1),
        "short_seconds": round(short_seconds, 2),
        "peak_mb": round(peak, 1),
        "peak_above_short_mb": round(peak - short_peak, 1),
        "seconds": round(seconds, 2),
        "png_pixels": list(size),
        "output_chars": len(output),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""priorkit's ``wordnet`` provider against a plain NLTK loop, on real STS-B word pairs.

    .venv/bin/python benchmarks/wordnet_speed.py [--sample 1000] [--measures xia2021,path]
                                                 [--full] [--cold] [--json out.json]

The word pairs are what the paper's prior needs: every (word of sentence A,
word of sentence B) of STS-B train+dev, words as the paper makes them
(lower-cased, punctuation removed, split on whitespace), unique pairs only.

1. Index: WordNet load time (from the persisted index, or built with --cold).
2. For each measure, a random sample of the unique pairs (``--sample``,
   seeded) goes through a fresh provider (nothing memoised for those pairs,
   not even the words) and through the NLTK loop (the authors' code for
   xia2021; max over synset pairs of ``path_similarity`` for path), which reads
   the same WordNet files.  The values must agree to 1e-9.  NLTK is warmed up
   first on a disjoint sample, so its lazy synset parsing does not count
   against it.  Reported: pairs/s (wall clock and CPU time) and the speed-up.
3. ``--full``: the whole unique pair set for xia2021 in a fresh Python process,
   timed from process start (imports, WordNet index, numba kernels, reading
   STS-B, computing); with ``--cold`` the index is rebuilt and the kernels
   recompiled (temporary index and numba cache folders).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.wordnet_reference import nltk_xia2021  # noqa: E402 - the reference the tests check against

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent


def stsb_word_pairs(splits=("train", "dev")) -> list[tuple[str, str]]:
    """Unique ordered cross-sentence word pairs of STS-B, as the paper forms words."""
    from priorkit.resources import stsb_path
    from priorkit.align.words import paper_words

    pairs: dict[tuple[str, str], None] = {}
    for split in splits:
        with open(stsb_path(split), encoding="utf-8") as fh:
            for line in fh:
                f = line.rstrip("\n").split("\t")
                if len(f) < 7:
                    continue
                right = paper_words(f[6])
                for a in paper_words(f[5]):
                    for b in right:
                        pairs.setdefault((a, b))
    return list(pairs)


# ---------------------------------------------------------------------------
# the NLTK reference loops
# ---------------------------------------------------------------------------
def nltk_reader():
    """NLTK's WordNet reader on the files the provider uses."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    import priorkit

    loc = priorkit.get_provider("wordnet").location().wordnet
    if loc.zip_path is not None:
        raise SystemExit("the benchmark needs WordNet as a folder, not a zip")
    folder = Path(loc.location)
    if str(folder.parent.parent) not in nltk.data.path:
        nltk.data.path.insert(0, str(folder.parent.parent))  # NLTK 3.10 reads only its data path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return WordNetCorpusReader(str(folder), None)


def nltk_path(wn, a: str, b: str) -> float:
    best = math.nan
    for x in wn.synsets(a):
        for y in wn.synsets(b):
            v = x.path_similarity(y)
            if v is not None and (best != best or v > best):
                best = v
    return best


NLTK = {"xia2021": nltk_xia2021, "path": nltk_path}


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


# ---------------------------------------------------------------------------
# the full-corpus run (in a fresh process)
# ---------------------------------------------------------------------------
def full_run() -> dict:
    """Everything from imports to values, for the whole unique pair set (xia2021)."""
    t = {"start": time.perf_counter()}
    import priorkit

    t["imported"] = time.perf_counter()
    pairs = stsb_word_pairs()
    t["read"] = time.perf_counter()
    p = priorkit.get_provider("wordnet", measure="xia2021")
    p.ensure_loaded()
    t["index"] = time.perf_counter()
    p.pair_similarity(["dog"], ["cat"])  # compiles the kernel or loads it from numba's cache
    t["kernels"] = time.perf_counter()
    out = p.pair_similarity([a for a, _ in pairs], [b for _, b in pairs])
    t["computed"] = time.perf_counter()
    return {
        "pairs": len(pairs),
        "index_source": p.index.source,
        "index_seconds": round(p.index.seconds, 2),
        "seconds": {k: round(t[k] - t["start"], 2) for k in ("imported", "read", "index", "kernels", "computed")},
        "compute_pairs_per_s": round(len(pairs) / (t["computed"] - t["kernels"])),
        "mean": float(np.mean(out)),
        "zero_fraction": float(np.mean(out == 0)),
    }


def run_full_in_subprocess(cold: bool) -> dict:
    env = dict(os.environ)
    tmp = None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="wordnet-speed-")
        env["PRIORKIT_WORDNET_INDEX_DIR"] = str(Path(tmp.name) / "index")
        env["NUMBA_CACHE_DIR"] = str(Path(tmp.name) / "numba")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE), "--full-child"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if tmp is not None:
        tmp.cleanup()
    if proc.returncode != 0:
        raise SystemExit(f"full run failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_seconds"] = round(wall, 2)
    result["cold"] = cold
    return result


# ---------------------------------------------------------------------------
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=1000, help="pairs timed with NLTK and priorkit")
    ap.add_argument("--warmup", type=int, default=300, help="NLTK warm-up pairs (disjoint from the sample)")
    ap.add_argument("--measures", default="xia2021,path")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="also time the whole unique pair set (xia2021)")
    ap.add_argument("--cold", action="store_true", help="with --full: rebuild the index, recompile")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--full-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.full_child:
        print(json.dumps(full_run()))
        return

    import priorkit

    results: dict = {
        "date": _dt.date.today().isoformat(),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs, {platform.python_implementation()} "
                   f"{platform.python_version()}",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    pairs = stsb_word_pairs()
    results["unique_pairs"] = len(pairs)
    rng = random.Random(args.seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    sample = [pairs[k] for k in order[: args.sample]]
    warm = [pairs[k] for k in order[args.sample: args.sample + args.warmup]]
    print(f"STS-B train+dev: {len(pairs):,} unique word pairs; sample {len(sample):,} (seed {args.seed})")

    # 1. the index, loaded (or built) once per process
    probe = priorkit.get_provider("wordnet", measure="path")
    (_, wall, _) = timed(probe.ensure_loaded)
    idx = probe.index
    results["index"] = {"source": idx.source, "seconds": round(idx.seconds, 3),
                        "load_total_seconds": round(wall, 3), "file": idx.path}
    print(f"WordNet index: {idx.source} in {idx.seconds:.2f} s ({idx.path}); provider load {wall:.2f} s")

    (wn, wall, _) = timed(nltk_reader)
    wn.synsets("dog")
    print(f"NLTK reader ready in {wall:.2f} s")

    rows = []
    for measure in [m.strip() for m in args.measures.split(",") if m.strip()]:
        ref = NLTK[measure]
        for a, b in warm:
            ref(wn, a, b)
        expected, n_wall, n_cpu = timed(lambda: np.array([ref(wn, a, b) for a, b in sample]))
        p = priorkit.get_provider("wordnet", measure=measure)
        p.ensure_loaded()
        p.pair_similarity(["dog"], ["cat"])  # kernel compiled or loaded from numba's cache
        p._words.clear()  # cold: nothing memoised, not even the words
        got, p_wall, p_cpu = timed(
            lambda: p.compute_pairs([a for a, _ in sample], [b for _, b in sample], dtype=np.float64)
        )
        same_nan = bool(np.array_equal(np.isnan(got), np.isnan(expected)))
        ok = ~np.isnan(expected)
        max_diff = float(np.max(np.abs(got[ok] - expected[ok]))) if ok.any() else 0.0
        if not same_nan or max_diff > 1e-9:
            raise SystemExit(f"{measure}: priorkit and NLTK disagree (max diff {max_diff}, NaN match {same_nan})")
        row = {
            "measure": measure, "pairs": len(sample),
            "nltk_pairs_per_s": round(len(sample) / n_wall, 1),
            "nltk_cpu_pairs_per_s": round(len(sample) / n_cpu, 1),
            "priorkit_pairs_per_s": round(len(sample) / p_wall),
            "priorkit_cpu_pairs_per_s": round(len(sample) / p_cpu),
            "speedup_wall": round(n_wall / p_wall, 1), "speedup_cpu": round(n_cpu / p_cpu, 1),
            "max_abs_diff": max_diff,
        }
        rows.append(row)
        print(f"{measure:8s} NLTK {row['nltk_pairs_per_s']:>9,.1f} pairs/s   priorkit "
              f"{row['priorkit_pairs_per_s']:>10,} pairs/s   speed-up {row['speedup_wall']:>7,.1f}x wall "
              f"({row['speedup_cpu']:,.1f}x CPU)   max |diff| {max_diff:.1e}")
    results["sample"] = rows

    if args.full:
        full = run_full_in_subprocess(args.cold)
        results["full"] = full
        s = full["seconds"]
        print(f"full set ({'cold' if args.cold else 'warm'}): {full['pairs']:,} pairs, xia2021, "
              f"{full['process_wall_seconds']:.1f} s from process start "
              f"(imports {s['imported']:.1f}, read STS-B {s['read'] - s['imported']:.1f}, "
              f"index {full['index_source']} {s['index'] - s['read']:.1f}, kernels {s['kernels'] - s['index']:.1f}, "
              f"compute {s['computed'] - s['kernels']:.1f} = {full['compute_pairs_per_s']:,} pairs/s); "
              f"mean {full['mean']:.4f}, zeros {full['zero_fraction']:.1%}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

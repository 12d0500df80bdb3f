"""Pairs per second of every built-in provider, cold and warm, and the ontology's
full-layout prior per BC5CDR sentence.

    .venv/bin/python benchmarks/provider_speed.py [--pairs 20000] [--sentences 300]
                                                  [--only ontology,embedding] [--json out.json]

Word pairs: the (word of sentence A, word of sentence B) pairs of STS-B dev in
file order, words as the paper makes them (``priorkit.align.words.paper_words``),
repeated pairs dropped -- what ``priorkit precompute`` asks a provider for.
Each provider runs in a fresh Python process (so nothing is memoised and the
load is really cold):

- **cold**: ``get_provider(...)`` plus the first ``pair_similarity`` call on
  the first ``--pairs`` pairs, timed together (loading the data or the model
  included; a saved index is read if one exists, as a user's second process
  would);
- **warm**: a second call on the next ``--pairs`` pairs with the provider
  loaded (words already seen in the first block may be memoised, as in a
  real run);
- **word lists**: WordSim-353 and SimLex-999 (the ``eval-prior`` benchmarks),
  all pairs in one ``pair_similarity`` call after the load: nearly every pair
  brings two words never seen before.

For ``embedding`` (MiniLM) the encoder's words per second bounds everything:
one forward pass per distinct word.  The table prints the distinct words per
block.  Before/after equality of the fast pair paths is tested in
``tests/test_embedding.py`` and ``tests/test_ontology.py``.

The ontology row also times the prior of the ``bc5cdr-ontology`` pipeline:
``PriorBuilder(MiniLM tokenizer, ontology, layout="full", keys="strip")``
on BC5CDR devel sentences (``data/bc5cdr/devel.tsv``), after 50 warm-up
sentences; reported per sentence for the whole ``build`` and for the
provider's pair call alone.  Torch runs on ``--threads`` intra-op threads
(default 1: on a 2-core machine shared with other jobs, 2 threads spin
against the other jobs and make each forward pass slower).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (label, provider name, params)
PROVIDERS = [
    ("wordnet (xia2021)", "wordnet", {}),
    ("wordnet (path)", "wordnet", {"measure": "path"}),
    ("conceptnet", "conceptnet", {}),
    ("ontology (HPO, lin)", "ontology", {}),
    ("embedding (MiniLM)", "embedding", {}),
    ("embedding (GloVe 50d)", "embedding", {"vectors": "glove"}),
    ("combine (wordnet + conceptnet, max)", "combine", {"providers": ["wordnet", "conceptnet"]}),
]


def stsb_pairs() -> list[tuple[str, str]]:
    """STS-B dev's cross-sentence word pairs in file order (wordnet_speed's reader)."""
    from wordnet_speed import stsb_word_pairs  # benchmarks/ is on sys.path when run as a script

    return stsb_word_pairs(("dev",))


def _one_provider(name: str, params: dict, n: int, threads: int) -> dict:
    """Run in a child process: cold and warm pairs/s of one provider."""
    import torch

    torch.set_num_threads(threads)
    pairs = stsb_pairs()
    cold_pairs, warm_pairs = pairs[:n], pairs[n:2 * n]
    import priorkit
    from priorkit.providers.prior_eval import read_word_pairs

    t0 = time.perf_counter()
    p = priorkit.get_provider(name, **params)
    p.pair_similarity([a for a, _ in cold_pairs], [b for _, b in cold_pairs])
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    p.pair_similarity([a for a, _ in warm_pairs], [b for _, b in warm_pairs])
    warm = time.perf_counter() - t0
    out = {"cold_pairs": len(cold_pairs), "cold_s": cold, "warm_pairs": len(warm_pairs), "warm_s": warm,
           "cold_pairs_per_s": len(cold_pairs) / cold, "warm_pairs_per_s": len(warm_pairs) / warm,
           "cold_words": len({w for p in cold_pairs for w in p}),
           "warm_words": len({w for p in warm_pairs for w in p})}
    for bench in ("wordsim353", "simlex999"):
        wp = read_word_pairs(bench)
        fresh = priorkit.get_provider(name, **params)
        fresh.ensure_loaded()
        t0 = time.perf_counter()
        fresh.pair_similarity(list(wp.left), list(wp.right))
        out[f"{bench}_pairs_per_s"] = len(wp.left) / (time.perf_counter() - t0)
    return out


def _bc5cdr(n_sentences: int, threads: int) -> dict:
    """Run in a child process: the ontology full-layout prior per BC5CDR sentence."""
    import torch

    torch.set_num_threads(threads)
    import priorkit
    from priorkit.datasets import read_conll
    from priorkit.resources import minilm_path

    sents = [s.words for s in read_conll(ROOT / "data" / "bc5cdr" / "devel.tsv")]
    warmup, timed = sents[:50], sents[50:50 + n_sentences]
    prov = priorkit.get_provider("ontology")
    builder = priorkit.PriorBuilder(str(minilm_path()), prov, layout="full", keys="strip", neutral=1.0,
                                    truncation=True, max_length=128)
    for words in warmup:
        builder.build(list(words))
    t0 = time.perf_counter()
    for words in timed:
        builder.build(list(words))
    build_s = time.perf_counter() - t0
    # the provider's pair path alone, on the same sentences' word pairs (fresh provider: no memo)
    prov2 = priorkit.get_provider("ontology")
    b2 = priorkit.PriorBuilder(str(minilm_path()), prov2, layout="full", keys="strip", neutral=1.0)
    for words in warmup:
        b2.build(list(words))
    jobs = []
    for words in timed:
        wp = b2.word_pairs(list(words))
        jobs.append(([a for a, _ in wp], [b for _, b in wp]))
    t0 = time.perf_counter()
    n_pairs = 0
    for left, right in jobs:
        if left:
            prov2.pair_similarity(left, right)
            n_pairs += len(left)
    pair_s = time.perf_counter() - t0
    return {"sentences": len(timed), "build_ms_per_sentence": 1000 * build_s / len(timed),
            "pairs_ms_per_sentence": 1000 * pair_s / len(timed), "pairs": n_pairs}


def _child(args: argparse.Namespace) -> None:
    job = json.loads(args.child)
    if job["kind"] == "bc5cdr":
        out = _bc5cdr(job["sentences"], job["threads"])
    else:
        out = _one_provider(job["name"], job["params"], job["pairs"], job["threads"])
    print("RESULT " + json.dumps(out))


def run_child(job: dict) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": str(job["threads"]), "MKL_NUM_THREADS": str(job["threads"])}
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)],
                          capture_output=True, text=True, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"child {job} failed:\n{proc.stderr[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--sentences", type=int, default=300)
    ap.add_argument("--only", default=None, help="comma-separated provider names")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    only = set(args.only.split(",")) if args.only else None
    rows = []
    for label, name, params in PROVIDERS:
        if only and name not in only:
            continue
        r = run_child({"kind": "provider", "name": name, "params": params, "pairs": args.pairs,
                       "threads": args.threads})
        rows.append({"provider": label, **r})
        print(f"{label:38s} cold {r['cold_pairs_per_s']:>9,.0f} pairs/s ({r['cold_s']:6.2f} s, "
              f"{r['cold_words']} words)  warm {r['warm_pairs_per_s']:>9,.0f} pairs/s "
              f"({r['warm_words']} words)  WordSim-353 {r['wordsim353_pairs_per_s']:>9,.0f}  "
              f"SimLex-999 {r['simlex999_pairs_per_s']:>9,.0f} pairs/s", flush=True)
    bc5 = None
    if not only or "ontology" in only:
        bc5 = run_child({"kind": "bc5cdr", "sentences": args.sentences, "threads": args.threads})
        print(f"ontology full-layout prior per BC5CDR devel sentence: build {bc5['build_ms_per_sentence']:.3f} ms, "
              f"provider pair call {bc5['pairs_ms_per_sentence']:.3f} ms "
              f"({bc5['sentences']} sentences, {bc5['pairs']} word pairs)")
    meta = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "machine": platform.platform(),
            "cpus": os.cpu_count(), "pairs": args.pairs, "threads": args.threads}
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "providers": rows, "bc5cdr": bc5}, indent=2))


if __name__ == "__main__":
    main()

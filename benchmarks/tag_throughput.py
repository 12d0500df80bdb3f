"""Tagging throughput: priorkit's streamed document tagging against
``transformers.pipeline("token-classification", aggregation_strategy="simple")`` on the same
fine-tuned MiniLM, side by side in one process (docs/scaling.md, "Tagging on a cluster").

Systems, each on the same BC5CDR sentences (running text, one document per sentence), with the
batch size that is fastest for it on a calibration slice (1, 8, 32, 64):

* ``hf``: the transformers pipeline on the token-features model's folder (it loads the encoder and
  the classifier and leaves the features' weights out: the bare model);
* ``features``: ``tag_corpus`` with that model as priorkit loads it (token features on), written to
  a JSON Lines file in committed chunks;
* ``recipe``: the two-member recipe with the dictionary steps (mix 0.6/0.4, Viterbi, fragments,
  document pass);
* ``plain``: ``tag_corpus`` with the model trained without knowledge (no channel: what priorkit's
  streaming, segmentation, decoding and writing cost over the pipeline);
* ``dictionary``: the HPO+MeSH matcher alone (its matches as tags), no model.

Times exclude loading (each system is warmed on the calibration slice first); the measured runs
are interleaved (hf, features, recipe, plain, dictionary, then again) and each system's faster round is
kept.  Targets: features <= 1.3x hf's time, recipe <= 2.4x.

    .venv/bin/python benchmarks/tag_throughput.py --sentences 2000
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402

BATCHES = (1, 8, 32, 64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--calibrate", type=int, default=200, help="sentences of the slice that picks the batch size")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="tagging-throughput.json")
    args = ap.parse_args()
    tc.need_models()
    import torch

    torch.set_num_threads(args.threads)
    from transformers import pipeline
    from transformers.utils import logging as hf_logging

    import priorkit
    from priorkit.decode.dictionary import Dictionary
    from priorkit.documents import Document
    from priorkit.documents.writers import writer_for
    from priorkit.inference.tagger import segment
    from priorkit.tagging import LocalEngine, tag_corpus
    from priorkit.tagging.jobs import ChunkTagger, Job
    from priorkit.tagging.taggers import ModelTagger

    hf_logging.set_verbosity_error()
    texts = tc.bc5cdr_texts()
    texts = [texts[i % len(texts)] for i in range(args.sentences)]
    docs = [Document(f"s{i}", t) for i, t in enumerate(texts)]
    calib = args.calibrate
    result = {"sentences": len(texts), **tc.machine(), "systems": {}}
    tmp = Path(tempfile.mkdtemp(prefix="tag-throughput-"))

    hf = pipeline("token-classification", model=str(tc.FEATURES), aggregation_strategy="simple", device=-1)

    def run_hf(items, batch):
        return list(hf(items, batch_size=batch))

    def priorkit_runner(model):
        def run(items, batch):
            tagger = ModelTagger(model, batch_size=batch)
            job = Job(f"bench-{id(model)}-{batch}", lambda: ChunkTagger(tagger, writer_for("jsonl")))
            d = [Document(f"s{i}", t) for i, t in enumerate(items)]
            out = tmp / "out.jsonl"
            return tag_corpus(d, job, writer_for("jsonl"), out=out, restart=True, chunk_size=256,
                              engine=LocalEngine(), progress=False)
        return run

    features = priorkit.load_model(tc.FEATURES)
    plain = priorkit.load_model(tc.NONE)
    recipe = priorkit.load_model(tc.RECIPE)
    dictionary = recipe.dictionary if getattr(recipe, "dictionary", None) is not None else None
    if dictionary is None:
        provider = priorkit.get_provider("ontology", source="hpo+mesh")
        dictionary = Dictionary(provider, {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"})
    words = [[s.words for s in segment(d)] for d in docs]

    def run_dictionary(items, batch):
        n = len(items)
        for sents in words[:n]:
            dictionary.tags(dictionary.sentence_matches(sents), sents)

    systems = {"hf": run_hf, "features": priorkit_runner(features), "recipe": priorkit_runner(recipe),
               "plain": priorkit_runner(plain), "dictionary": run_dictionary}
    chosen = {}
    for name, fn in systems.items():  # warm up, and choose each one's batch size on the slice
        if name == "dictionary":
            fn(texts[:calib], 0)
            chosen[name] = None
            continue
        times = {}
        for b in BATCHES:
            fn(texts[:calib], b)  # warm
            t0 = time.perf_counter()
            fn(texts[:calib], b)
            times[b] = time.perf_counter() - t0
        chosen[name] = min(times, key=times.get)
        result["systems"][name] = {"calibration_seconds": {str(k): round(v, 3) for k, v in times.items()}}
        print(f"{name}: batch sizes {times} -> {chosen[name]}", flush=True)
    best: dict[str, float] = {}
    for round_ in range(2):
        for name, fn in systems.items():
            t0 = time.perf_counter()
            fn(texts, chosen[name])
            seconds = time.perf_counter() - t0
            best[name] = min(best.get(name, float("inf")), seconds)
            print(f"round {round_}: {name} {seconds:.1f} s ({len(texts) / seconds:.1f} sentences/s)", flush=True)
    for name in systems:
        result["systems"].setdefault(name, {}).update(
            batch_size=chosen[name], seconds=round(best[name], 2), sentences_per_second=round(len(texts) / best[name], 1))
    result["ratio_features_to_hf"] = round(best["features"] / best["hf"], 3)
    result["ratio_recipe_to_hf"] = round(best["recipe"] / best["hf"], 3)
    result["ratio_plain_to_hf"] = round(best["plain"] / best["hf"], 3)
    result["targets"] = {"features": 1.3, "recipe": 2.4}
    print(f"features / hf = {result['ratio_features_to_hf']:.2f} (target 1.3); "
          f"recipe / hf = {result['ratio_recipe_to_hf']:.2f} (target 2.4)")
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

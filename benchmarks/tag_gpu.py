"""Tagging throughput on a GPU: ``priorkit predict --device cuda`` tags in bf16 autocast; this script
measures documents per second for a model folder on the CPU and, when torch sees a GPU, on the GPU in
float32 and in bf16 autocast (what ``--device cuda`` runs), and how far the bf16 entities agree with
the float32 ones.  Without a GPU it measures the CPU alone and says so.

Default model: the token-features MiniLM of benchmarks/tagging-models.yaml (make it with
``priorkit recipe benchmarks/tagging-models.yaml --arm mix-doc --out runs/tagging-bench/recipe``);
``--model`` names any NER model folder or recipe.  Corpus: BC5CDR sentences, one document each.

    .venv/bin/python benchmarks/tag_gpu.py --sentences 20000 --batch-sizes 32 128 256
    .venv/bin/python benchmarks/tag_gpu.py --model runs/tagging-bench/recipe --cpu-sentences 500
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tag_common as tc  # noqa: E402


def tag(model, docs, batch_size: int, autocast: str | None):
    from priorkit.tagging.jobs import tag_chunk
    from priorkit.tagging.taggers import Autocast, ModelTagger

    tagger = ModelTagger(model, batch_size=batch_size)
    if autocast:
        tagger = Autocast(tagger, autocast)
    out = []
    for start in range(0, len(docs), 256):  # the CLI's default chunk: sorted by length inside
        out += tag_chunk(tagger, docs[start:start + 256])
    return out


def timed(model, docs, batch_size: int, autocast: str | None, sync) -> tuple[float, list]:
    tag(model, docs[:64], batch_size, autocast)  # warm up (kernels, allocator)
    sync()
    t0 = time.perf_counter()
    out = tag(model, docs, batch_size, autocast)
    sync()
    return time.perf_counter() - t0, out


def agreement(a, b) -> float:
    """Share of the float32 entities (span and type) that the other run finds too."""
    found = total = 0
    for x, y in zip(a, b):
        theirs = {(e.start, e.end, e.type) for e in y.entities}
        total += len(x.entities)
        found += sum((e.start, e.end, e.type) in theirs for e in x.entities)
    return found / total if total else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(tc.FEATURES))
    ap.add_argument("--sentences", type=int, default=20000, help="documents tagged on the GPU")
    ap.add_argument("--cpu-sentences", type=int, default=1000, help="documents tagged on the CPU")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128, 256])
    ap.add_argument("--out", default="tagging-gpu.json")
    args = ap.parse_args()
    import torch

    import priorkit
    from priorkit.documents import Document

    if args.model == str(tc.FEATURES):
        tc.need_models()
    texts = tc.bc5cdr_texts()
    docs = [Document(f"s{i}", texts[i % len(texts)]) for i in range(max(args.sentences, args.cpu_sentences))]
    result = {**tc.machine(), "model": args.model, "cuda": torch.cuda.is_available(), "runs": []}
    cpu = priorkit.load_model(args.model)
    seconds, reference = timed(cpu, docs[:args.cpu_sentences], 32, None, lambda: None)
    result["runs"].append({"device": "cpu", "precision": "float32", "batch_size": 32, "documents": args.cpu_sentences,
                           "documents_per_second": round(args.cpu_sentences / seconds, 1)})
    print(f"cpu float32: {args.cpu_sentences / seconds:.1f} documents/s", flush=True)
    if not torch.cuda.is_available():
        note = ("no GPU: torch.cuda.is_available() is False on this machine; measured the CPU only. Run this "
                "script where a GPU is to measure --device cuda")
        print(note)
        result["note"] = note
        tc.write_result(args.out, result)
        return
    result["gpu"] = torch.cuda.get_device_name(0)
    gpu = priorkit.load_model(args.model, device="cuda")
    sync = torch.cuda.synchronize
    for batch in args.batch_sizes:
        runs = {}
        for precision, autocast in (("float32", None), ("bf16 autocast", "cuda")):
            torch.cuda.reset_peak_memory_stats()
            seconds, out = timed(gpu, docs[:args.sentences], batch, autocast, sync)
            runs[precision] = out
            row = {"device": result["gpu"], "precision": precision, "batch_size": batch, "documents": args.sentences,
                   "documents_per_second": round(args.sentences / seconds, 1),
                   "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}
            if precision != "float32":
                row["entities_as_float32"] = round(agreement(runs["float32"], out), 4)
            result["runs"].append(row)
            print(row, flush=True)
        result.setdefault("cpu_float32_vs_gpu_float32_agreement", round(agreement(reference, runs["float32"]), 4))
    tc.write_result(args.out, result)


if __name__ == "__main__":
    main()

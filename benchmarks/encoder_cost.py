"""What a BC5CDR run costs with each encoder on this machine: MiniLM-L6 against the stronger
all-mpnet-base-v2 (``priorkit data fetch mpnet``).

Batches of 32 BC5CDR train sentences (max length 128, as pipelines/bc5cdr-curve.yaml), one
optimiser step each (forward + backward + AdamW step) on a token-classification head, no
channel; then scoring batches of 64 under ``torch.no_grad``.  Prints the median step and
scoring times per encoder, and the training and test-scoring time they imply for one run
at each training fraction (5 epochs; steps = ceil(sentences / 32) x epochs; 2,000 test
sentences scored).

    .venv/bin/python benchmarks/encoder_cost.py [--batches 4] [--threads 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from priorkit.align import load_tokenizer  # noqa: E402
from priorkit.config import DataSource  # noqa: E402
from priorkit.training.data import read_source  # noqa: E402
from priorkit.resources import minilm_path, mpnet_path  # noqa: E402



def time_encoder(path: str, sentences: list[dict], n_tags: int, batches: int) -> dict[str, float]:
    from transformers import AutoModelForTokenClassification

    tokenizer = load_tokenizer(path)
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_pretrained(path, num_labels=n_tags).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def encode(batch):
        return tokenizer([s["words"] for s in batch], is_split_into_words=True, truncation=True,
                         max_length=128, padding=True, return_tensors="pt")

    train = [sentences[i:i + 32] for i in range(0, 32 * (batches + 1), 32)]
    steps = []
    for k, batch in enumerate(train):
        enc = encode(batch)
        labels = torch.zeros_like(enc["input_ids"])
        t0 = time.perf_counter()
        out = model(**enc, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        if k:  # the first step warms up the allocator
            steps.append(time.perf_counter() - t0)
    model.eval()
    score = []
    with torch.no_grad():
        for k in range(3):
            enc = encode(sentences[64 * k:64 * (k + 1)])
            t0 = time.perf_counter()
            model(**enc)
            score.append(time.perf_counter() - t0)
    return {"parameters_m": sum(p.numel() for p in model.parameters()) / 1e6,
            "step_s": statistics.median(steps), "score64_s": statistics.median(score[1:])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sentences = read_source(DataSource(source="bc5cdr", split="train"))[0]
    n_tags = len({t for s in sentences for t in s["tags"]})
    out = {"threads": args.threads, "load_before": os.getloadavg()[0], "encoders": {}}
    for name, path in (("MiniLM-L6", minilm_path()), ("all-mpnet-base-v2", mpnet_path())):
        r = time_encoder(str(path), sentences, n_tags, args.batches)
        r["runs"] = {}
        for frac in (0.01, 0.1, 0.2, 1.0):
            steps = math.ceil(len(sentences) * frac / 32) * 5
            r["runs"][str(frac)] = {"train_min": steps * r["step_s"] / 60,
                                    "score_test2000_min": 2000 / 64 * r["score64_s"] / 60}
        out["encoders"][name] = r
        print(f"{name}: {r['parameters_m']:.0f}M parameters, {r['step_s']:.2f} s/step (batch 32), "
              f"{r['score64_s']:.2f} s per 64 sentences scored; one 5-epoch run: "
              + ", ".join(f"{f}: {v['train_min']:.1f} min train + {v['score_test2000_min']:.1f} min scoring"
                          for f, v in r["runs"].items()))
    out["load_after"] = os.getloadavg()[0]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()

"""Prior-guided attention on a GPU, bf16: stock SDPA vs every mode, and FlexAttention vs SDPA.

Written for a session that is lent a CUDA device (none was when it was written: the
figures in docs/benchmarks.md say so).  Two encoder sizes, random weights of the real
shapes (no download needed on the device machine):

  bert-base   12 layers, hidden 768, 12 heads (BertConfig defaults)
  minilm      6 layers, hidden 384, 12 heads (all-MiniLM-L6-v2's shape)

For each size: a train step (forward + backward + AdamW, the model in bfloat16) of
stock SDPA and of every mode -- multiply@0, gate@0, bias@all, learned_bias@all,
supervise@0 -- once with PRIORKIT_ATTENTION_KERNEL=sdpa and once with =flex; variants
interleaved in rotating order, CUDA-event timing, medians and paired ratios to stock.
Attention dropout is 0 by default (FlexAttention has none; with --attn-dropout > 0 the
flex rows fall back to the sdpa path and measure the same thing).  Before timing, each
mode's eval forward through flex is compared with the sdpa path (max abs difference).

    python benchmarks/attention_gpu.py                      # both sizes, 20 repetitions
    python benchmarks/attention_gpu.py --sizes minilm --reps 5 --json out.json
    python benchmarks/attention_gpu.py --device cpu --tiny --reps 1   # smoke test of the script
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time

import torch

from priorkit.attention import enable_prior_attention, kernels, shared, supervision_loss

SIZES = {
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128),
}
MODES = {
    "multiply@0": dict(layers=(0,), mode="multiply"),
    "gate@0": dict(layers=(0,), mode="gate"),
    "bias@all": dict(layers="all", mode="bias"),
    "learned_bias@all": dict(layers="all", mode="learned_bias", init=0.5),
    "supervise@0": dict(layers=(0,), mode="supervise"),
}


def build(size: str, device: str, dtype: torch.dtype, dropout: float) -> dict[str, torch.nn.Module]:
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(**SIZES[size], num_labels=2, attention_probs_dropout_prob=dropout)
    torch.manual_seed(0)
    stock = BertForSequenceClassification(cfg).to(device=device, dtype=dtype)
    stock.set_attn_implementation("sdpa")
    models = {"stock": stock}
    for name, options in MODES.items():
        model = BertForSequenceClassification(cfg).to(device=device, dtype=dtype)
        model.load_state_dict(stock.state_dict())
        model.set_attn_implementation("sdpa")
        models[name] = enable_prior_attention(model, **options)
    return models


def make_batch(batch: int, length: int, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30000, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[::4, length * 3 // 4:] = 0  # a quarter of the examples padded
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device),
            "labels": torch.randint(0, 2, (batch,), generator=g).to(device),
            "prior": torch.rand(batch, length, length, generator=g).to(device=device, dtype=dtype)}


def check_values(models, batch) -> dict[str, float]:
    """Eval forward, flex vs sdpa kernel: max abs difference of the logits per mode."""
    out = {}
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    for name in MODES:
        model = models[name].eval()
        with torch.no_grad():
            os.environ[kernels.ENV] = "sdpa"
            ref = model(**inputs).logits.float()
            os.environ[kernels.ENV] = "flex"
            got = model(**inputs).logits.float()
        out[name] = float((got - ref).abs().max())
    return out


def train_times(models, batch, kernel: str, reps: int, warmup: int, device: str) -> dict[str, list[float]]:
    os.environ[kernels.ENV] = kernel
    opts = {n: torch.optim.AdamW(m.parameters(), lr=1e-5) for n, m in models.items()}
    names = list(models)
    samples: dict[str, list[float]] = {n: [] for n in names}
    cuda = device.startswith("cuda")

    def step(name: str) -> float:
        model, opt = models[name].train(), opts[name]
        data = dict(batch) if name != "stock" else {k: v for k, v in batch.items() if k != "prior"}
        if "prior" in data:
            data["prior"] = data["prior"].clone()  # a new batch's prior
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        loss = model(**data).loss
        extra = supervision_loss(model)
        (loss if extra is None else loss + extra).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1000
        return time.perf_counter() - t0

    for rep in range(warmup + reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            t = step(name)
            if rep >= warmup:
                samples[name].append(t)
    shared.clear()
    return samples


def summary(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    ref = samples["stock"]
    out = {}
    for name, s in samples.items():
        pairs = [a / b for a, b in zip(s, ref)]
        out[name] = {"median_ms": 1000 * statistics.median(s), "ratio": statistics.median(s) / statistics.median(ref),
                     "paired_ratio": statistics.median(pairs), "min_ms": 1000 * min(s), "max_ms": 1000 * max(s)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="bert-base,minilm")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--attn-dropout", type=float, default=0.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model only (smoke test)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    sizes = ["tiny"] if args.tiny else args.sizes.split(",")
    result = {"date": datetime.date.today().isoformat(), "torch": torch.__version__, "device": args.device,
              "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
              "dtype": args.dtype, "batch": args.batch, "seq_len": args.seq_len, "reps": args.reps,
              "attn_dropout": args.attn_dropout, "sizes": {}}
    for size in sizes:
        models = build(size, args.device, dtype, args.attn_dropout)
        batch = make_batch(args.batch, args.seq_len, args.device, dtype)
        entry = {"flex_vs_sdpa_max_abs_diff": check_values(models, batch)}
        for kernel in ("sdpa", "flex"):
            entry[kernel] = summary(train_times(models, batch, kernel, args.reps, args.warmup, args.device))
        result["sizes"][size] = entry
        print(f"\n{size}, {args.dtype}, batch {args.batch} x {args.seq_len}, {args.reps} reps (train step, ms)")
        print("| variant | sdpa ms | x stock | flex ms | x stock | flex vs sdpa max abs diff (eval logits) |")
        print("|---|---|---|---|---|---|")
        for name in ["stock", *MODES]:
            s, f = entry["sdpa"][name], entry["flex"][name]
            diff = entry["flex_vs_sdpa_max_abs_diff"].get(name)
            print(f"| {name} | {s['median_ms']:.1f} | {s['paired_ratio']:.3f} | {f['median_ms']:.1f} | "
                  f"{f['paired_ratio']:.3f} | {'' if diff is None else f'{diff:.2e}'} |", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()

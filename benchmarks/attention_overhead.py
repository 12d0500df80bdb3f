"""What prior-guided attention costs: training-step time and inference throughput.

Variants (all on the same MiniLM weights, BertForSequenceClassification, 2 labels):

  stock        stock SDPA, no prior
  multiply@0   mode="multiply" in layer 0 (the paper), SDPA elsewhere
  bias@all     mode="bias" in every layer (the prior folded into SDPA's float mask)
  gate@0       mode="gate" in layer 0
  paper-eager  the paper's set-up: eager attention in every layer, prior multiplied in layer 0

Each repetition runs one step of every variant in turn (the order rotates), so slow
drift of a shared machine hits all variants alike; the report gives medians (and
minima, the steadier figure on a machine shared with other jobs) and their ratios to
stock.  A second table times one attention module alone (forward + backward of layer
0's self-attention, same batch), which isolates the per-layer cost of each mode.

    .venv/bin/python benchmarks/attention_overhead.py            # full: 20 repetitions
    .venv/bin/python benchmarks/attention_overhead.py --quick    # 5 repetitions
    .venv/bin/python benchmarks/attention_overhead.py --json out.json --model PATH
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import platform
import statistics
import time
from collections.abc import Callable

import torch

from priorkit.attention import enable_prior_attention

VARIANTS = ("stock", "multiply@0", "bias@all", "gate@0", "paper-eager")
TARGETS = {"multiply@0": 1.10, "gate@0": 1.10, "bias@all": 1.05}


def build_models(path: str) -> dict[str, torch.nn.Module]:
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    logging.set_verbosity_error()  # the fresh classification head is expected
    torch.manual_seed(0)
    stock = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2, attn_implementation="sdpa")
    models = {"stock": stock}
    models["multiply@0"] = enable_prior_attention(copy.deepcopy(stock), layers=(0,), mode="multiply")
    models["bias@all"] = enable_prior_attention(copy.deepcopy(stock), layers="all", mode="bias")
    models["gate@0"] = enable_prior_attention(copy.deepcopy(stock), layers=(0,), mode="gate")
    eager = copy.deepcopy(stock)
    eager.set_attn_implementation("eager")
    models["paper-eager"] = enable_prior_attention(eager, layers=(0,), mode="multiply")
    return models


def make_batch(batch: int, length: int, vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Full-length sequences (no padding: stock SDPA then runs without any mask, its best case)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, vocab, (batch, length), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    return {
        "input_ids": ids,
        "attention_mask": torch.ones(batch, length, dtype=torch.long),
        "token_type_ids": torch.zeros(batch, length, dtype=torch.long),
        "labels": torch.randint(0, 2, (batch,), generator=g),
        "prior": torch.rand(batch, length, length, generator=g),  # (B, L, L)
    }


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    models = build_models(args.model)
    batch = make_batch(args.batch, args.seq_len, models["stock"].config.vocab_size)
    stock_batch = {k: v for k, v in batch.items() if k != "prior"}
    optims = {name: torch.optim.AdamW(m.parameters(), lr=1e-5) for name, m in models.items()}

    def inputs(name: str) -> dict[str, torch.Tensor]:
        return stock_batch if name == "stock" else batch

    def train_step(name: str) -> None:
        model, opt = models[name], optims[name]
        model.train()
        loss = model(**inputs(name)).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def infer(name: str) -> None:
        model = models[name]
        model.eval()
        with torch.inference_mode():
            model(**{k: v for k, v in inputs(name).items() if k != "labels"})

    train: dict[str, list[float]] = {n: [] for n in VARIANTS}
    infer_t: dict[str, list[float]] = {n: [] for n in VARIANTS}
    for rep in range(args.warmup + args.reps):
        order = VARIANTS[rep % len(VARIANTS):] + VARIANTS[: rep % len(VARIANTS)]
        for name in order:
            t_train = timed(lambda: train_step(name))
            t_infer = timed(lambda: infer(name))
            if rep >= args.warmup:
                train[name].append(t_train)
                infer_t[name].append(t_infer)
        print(f"repetition {rep + 1}/{args.warmup + args.reps} done", flush=True)

    kernel = attention_module_times(models, batch, args.warmup + 4 * args.reps)

    stock_train, stock_infer = statistics.median(train["stock"]), statistics.median(infer_t["stock"])
    stock_min = min(train["stock"])
    rows = []
    for name in VARIANTS:
        med_t, med_i = statistics.median(train[name]), statistics.median(infer_t[name])
        rows.append({
            "variant": name,
            "train_step_s_median": med_t,
            "train_step_s_min": min(train[name]),
            "train_ratio": med_t / stock_train,
            "train_min_ratio": min(train[name]) / stock_min,
            "infer_sent_per_s": args.batch / med_i,
            "infer_ratio": med_i / stock_infer,
            "target_train_ratio": TARGETS.get(name),
        })
    return {
        "command": args.command,
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "torch": torch.__version__,
        "threads": args.threads,
        "batch": args.batch,
        "seq_len": args.seq_len,
        "reps": args.reps,
        "warmup": args.warmup,
        "rows": rows,
        "attention_module": kernel,
    }


def attention_module_times(models: dict[str, torch.nn.Module], batch: dict[str, torch.Tensor], reps: int) -> list[dict]:
    """Forward + backward of one self-attention module (layer 0) per variant, interleaved.

    "eager (no prior)" is layer 1 of the paper-eager model: plain eager attention.
    """
    hidden_size = models["stock"].config.hidden_size
    B, L = batch["input_ids"].shape
    hidden = torch.randn(B, L, hidden_size, requires_grad=True)
    cases = {
        "stock SDPA": (models["stock"].base_model.encoder.layer[0].attention.self, {}),
        "eager (no prior)": (models["paper-eager"].base_model.encoder.layer[1].attention.self, {}),
        "multiply": (models["multiply@0"].base_model.encoder.layer[0].attention.self, {"prior": batch["prior"]}),
        "bias": (models["bias@all"].base_model.encoder.layer[0].attention.self, {"prior": batch["prior"]}),
        "gate": (models["gate@0"].base_model.encoder.layer[0].attention.self, {"prior": batch["prior"]}),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for rep in range(reps):
        for name, (module, extra) in cases.items():
            module.train()
            t = timed(lambda: module(hidden, attention_mask=None, **extra)[0].sum().backward())
            if rep > 0:
                times[name].append(t)
            hidden.grad = None
            module.zero_grad(set_to_none=True)
    base = statistics.median(times["stock SDPA"])
    return [{"case": n, "fwd_bwd_ms_median": 1000 * statistics.median(v), "ratio": statistics.median(v) / base}
            for n, v in times.items()]


def main(argv: list[str] | None = None) -> None:
    import sys

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model folder (default: priorkit.resources.minilm_path())")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="3 repetitions, 1 warm-up")
    p.add_argument("--json", default=None, help="also write the results to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.warmup = 3, 1
    if args.model is None:
        from priorkit.resources import minilm_path

        args.model = str(minilm_path())
    args.command = "python " + " ".join(["benchmarks/attention_overhead.py", *(argv if argv is not None else sys.argv[1:])])

    result = run(args)
    print(f"\n{result['command']}\n{result['date']}, torch {result['torch']}, {args.threads} threads, "
          f"batch {args.batch} x {args.seq_len} tokens, {args.reps} repetitions (median)")
    print(f"{'variant':<12} {'train step s':>12} {'x stock':>8} {'min s':>7} {'x stock':>8} {'target':>7} "
          f"{'infer sent/s':>13} {'time x stock':>13}")
    for r in result["rows"]:
        target = f"<={r['target_train_ratio']:.2f}" if r["target_train_ratio"] else ""
        print(f"{r['variant']:<12} {r['train_step_s_median']:>12.3f} {r['train_ratio']:>8.3f} "
              f"{r['train_step_s_min']:>7.3f} {r['train_min_ratio']:>8.3f} {target:>7} "
              f"{r['infer_sent_per_s']:>13.1f} {r['infer_ratio']:>13.3f}")
    print(f"\none attention module (layer 0), forward + backward, median:")
    for r in result["attention_module"]:
        print(f"  {r['case']:<18} {r['fwd_bwd_ms_median']:>8.1f} ms {r['ratio']:>7.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()

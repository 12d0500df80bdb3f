"""What prior-guided attention costs: training-step time and inference throughput.

Variants (all on the same MiniLM weights, BertForSequenceClassification, 2 labels):

  stock        stock SDPA, no prior
  multiply@0   mode="multiply" in layer 0 (the paper), SDPA elsewhere
  bias@all     mode="bias" in every layer (the prior folded into SDPA's float mask)
  gate@0       mode="gate" in layer 0
  paper-eager  the paper's set-up: eager attention in every layer, prior multiplied in layer 0

A training step is forward + backward + AdamW on a batch of full-length sequences
(no padding, so stock SDPA runs without any mask: its best case).  Each repetition
runs every variant once, in a rotating order, so drift on a shared machine hits all
variants alike.  Both wall-clock time and the process's CPU time are recorded: when
other jobs compete for the cores, wall time mostly measures the competition, while
CPU time (with --omp-passive, so idle OpenMP threads sleep instead of spinning)
still measures the work.  A second table times one attention module alone (layer 0,
forward + backward, same batch) to isolate each mode's per-layer cost.

    .venv/bin/python benchmarks/attention_overhead.py                 # 10 repetitions
    .venv/bin/python benchmarks/attention_overhead.py --quick         # 3 repetitions
    .venv/bin/python benchmarks/attention_overhead.py --quick --omp-passive --json out.json
"""
from __future__ import annotations

import os
import sys

if "--omp-passive" in sys.argv:  # must precede the OpenMP runtime's start, i.e. importing torch
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import argparse  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402

from priorkit.attention import enable_prior_attention  # noqa: E402

VARIANTS = ("stock", "multiply@0", "bias@all", "gate@0", "paper-eager")
TARGETS = {"multiply@0": 1.10, "gate@0": 1.10, "bias@all": 1.05}


def build_models(path: str) -> dict[str, torch.nn.Module]:
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    logging.set_verbosity_error()  # the fresh classification head is expected
    torch.manual_seed(0)
    stock = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2, attn_implementation="sdpa")
    eager = copy.deepcopy(stock)
    eager.set_attn_implementation("eager")
    return {
        "stock": stock,
        "multiply@0": enable_prior_attention(copy.deepcopy(stock), layers=(0,), mode="multiply"),
        "bias@all": enable_prior_attention(copy.deepcopy(stock), layers="all", mode="bias"),
        "gate@0": enable_prior_attention(copy.deepcopy(stock), layers=(0,), mode="gate"),
        "paper-eager": enable_prior_attention(eager, layers=(0,), mode="multiply"),
    }


def make_batch(batch: int, length: int, vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
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


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, all threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def summarise(samples: dict[str, list[tuple[float, float]]], reference: str) -> dict[str, dict[str, float]]:
    """Median wall/CPU per variant and their ratios to ``reference``."""
    med = {n: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s)) for n, s in samples.items()}
    ref_wall, ref_cpu = med[reference]
    return {
        n: {"wall_s": w, "cpu_s": c, "wall_ratio": w / ref_wall, "cpu_ratio": c / ref_cpu,
            "wall_min_s": min(x for x, _ in samples[n])}
        for n, (w, c) in med.items()
    }


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    models = build_models(args.model)
    batch = make_batch(args.batch, args.seq_len, models["stock"].config.vocab_size)
    no_prior = {k: v for k, v in batch.items() if k != "prior"}
    optims = {name: torch.optim.AdamW(m.parameters(), lr=1e-5) for name, m in models.items()}

    def inputs(name: str) -> dict[str, torch.Tensor]:
        return no_prior if name == "stock" else batch

    def train_step(name: str) -> None:
        model, opt = models[name], optims[name]
        model.train()
        model(**inputs(name)).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def infer(name: str) -> None:
        model = models[name]
        model.eval()
        with torch.inference_mode():
            model(**{k: v for k, v in inputs(name).items() if k != "labels"})

    train: dict[str, list[tuple[float, float]]] = {n: [] for n in VARIANTS}
    infer_t: dict[str, list[tuple[float, float]]] = {n: [] for n in VARIANTS}
    for rep in range(args.warmup + args.reps):
        shift = rep % len(VARIANTS)
        for name in VARIANTS[shift:] + VARIANTS[:shift]:
            t_train, t_infer = timed(lambda: train_step(name)), timed(lambda: infer(name))
            if rep >= args.warmup:
                train[name].append(t_train)
                infer_t[name].append(t_infer)
        print(f"repetition {rep + 1}/{args.warmup + args.reps} done", flush=True)

    train_s, infer_s = summarise(train, "stock"), summarise(infer_t, "stock")
    rows = [{"variant": n, "target_train_ratio": TARGETS.get(n), "train": train_s[n], "infer": infer_s[n],
             "infer_sent_per_s_wall": args.batch / infer_s[n]["wall_s"],
             "infer_sent_per_s_cpu": args.batch / infer_s[n]["cpu_s"]} for n in VARIANTS]
    return {
        "command": args.command,
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} logical CPUs",
        "torch": torch.__version__,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"),
        "threads": args.threads,
        "batch": args.batch,
        "seq_len": args.seq_len,
        "reps": args.reps,
        "warmup": args.warmup,
        "rows": rows,
        "attention_module": attention_module_times(models, batch, args.module_reps),
    }


def attention_module_times(models: dict[str, torch.nn.Module], batch: dict[str, torch.Tensor],
                           reps: int) -> dict[str, dict[str, float]]:
    """Forward + backward of one self-attention module (layer 0) per variant, train mode, interleaved.

    "eager (no prior)" is layer 1 of the paper-eager model: plain eager attention.
    """
    B, L = batch["input_ids"].shape
    hidden = torch.randn(B, L, models["stock"].config.hidden_size, requires_grad=True)

    def module(name: str, layer: int = 0) -> torch.nn.Module:
        return models[name].base_model.encoder.layer[layer].attention.self

    prior = {"prior": batch["prior"]}
    cases = {
        "stock SDPA": (module("stock"), {}),
        "eager (no prior)": (module("paper-eager", 1), {}),
        "multiply": (module("multiply@0"), prior),
        "bias": (module("bias@all"), prior),
        "gate": (module("gate@0"), prior),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for rep in range(reps + 1):
        for name, (mod, extra) in cases.items():
            mod.train()
            t = timed(lambda: mod(hidden, attention_mask=None, **extra)[0].sum().backward())
            if rep > 0:  # the first round warms up
                samples[name].append(t)
            hidden.grad = None
            mod.zero_grad(set_to_none=True)
    return summarise(samples, "stock SDPA")


def report(result: dict) -> str:
    lines = [
        f"{result['command']}",
        f"{result['date']}, {result['machine']}, torch {result['torch']}, {result['threads']} threads, "
        f"OMP_WAIT_POLICY={result['omp_wait_policy']}, batch {result['batch']} x {result['seq_len']} tokens, "
        f"{result['reps']} repetitions after {result['warmup']} warm-up (medians)",
        "",
        "| variant | train step wall s | x stock | train step CPU s | x stock | target | "
        "inference sent/s (wall) | inference sent/s (CPU) | CPU x stock |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        t, i = r["train"], r["infer"]
        target = f"<= {r['target_train_ratio']:.2f}" if r["target_train_ratio"] else ""
        lines.append(
            f"| {r['variant']} | {t['wall_s']:.2f} | {t['wall_ratio']:.3f} | {t['cpu_s']:.2f} | "
            f"{t['cpu_ratio']:.3f} | {target} | {r['infer_sent_per_s_wall']:.1f} | "
            f"{r['infer_sent_per_s_cpu']:.1f} | {i['cpu_ratio']:.3f} |"
        )
    lines += ["", "| one attention module (layer 0), fwd + bwd | wall ms | x stock | CPU ms | x stock |",
              "|---|---|---|---|---|"]
    for name, s in result["attention_module"].items():
        lines.append(f"| {name} | {1000 * s['wall_s']:.1f} | {s['wall_ratio']:.2f} | "
                     f"{1000 * s['cpu_s']:.1f} | {s['cpu_ratio']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model folder (default: priorkit.resources.minilm_path())")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--module-reps", type=int, default=15, help="repetitions of the one-module timing")
    p.add_argument("--quick", action="store_true", help="3 repetitions (8 for the module timing)")
    p.add_argument("--omp-passive", action="store_true",
                   help="OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep (fairer CPU time on a shared machine)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.module_reps = 3, 8
    if args.model is None:
        from priorkit.resources import minilm_path

        args.model = str(minilm_path())
    args.command = " ".join([".venv/bin/python benchmarks/attention_overhead.py", *argv])

    result = run(args)
    print("\n" + report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()

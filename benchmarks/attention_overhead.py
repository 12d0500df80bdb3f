"""What prior-guided attention costs: training-step time and inference throughput.

Variants (all on the same MiniLM weights, BertForSequenceClassification, 2 labels):

  stock        stock SDPA, no prior
  multiply@0   mode="multiply" in layer 0 (the paper), SDPA elsewhere
  bias@all     mode="bias" in every layer (the prior folded into SDPA's float mask)
  gate@0       mode="gate" in layer 0
  learned_bias@all  mode="learned_bias" in every layer (strength 0.5, a (B, H, L, L) mask per layer)
  supervise@0  mode="supervise" in layer 0 (stock forward + the KL loss, added to the task loss)
  paper-eager  the paper's set-up: eager attention in every layer, prior multiplied in layer 0

A training step is forward + backward + AdamW on a batch of full-length sequences
(no padding, so stock SDPA runs without any mask: its best case).  Each repetition
runs every variant once, in a rotating order, so drift on a shared machine hits all
variants alike; every step gets a fresh copy of the prior (made outside the timing), as a
new batch would, so nothing derived from one step's prior can be reused by the next.
Both wall-clock time and the process's CPU time are recorded: when other jobs
compete for the cores, wall time mostly measures the competition, while
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

from priorkit.attention import enable_prior_attention, supervision_loss  # noqa: E402

VARIANTS = ("stock", "multiply@0", "bias@all", "gate@0", "learned_bias@all", "supervise@0", "paper-eager")
TARGETS = {"multiply@0": 1.03, "gate@0": 1.05, "bias@all": 1.05}


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
        "learned_bias@all": enable_prior_attention(copy.deepcopy(stock), layers="all", mode="learned_bias", init=0.5),
        "supervise@0": enable_prior_attention(copy.deepcopy(stock), layers=(0,), mode="supervise"),
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


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def summarise(samples: dict[str, list[tuple[float, float]]], reference: str) -> dict[str, dict[str, float]]:
    """Median wall/CPU per variant, their ratios to ``reference``, and the spread.

    Besides the ratio of medians, ``*_pair_ratio`` is the median of the per-repetition
    ratios (variant / reference measured in the same repetition, so slow phases of a
    shared machine cancel) with its interquartile range ``*_pair_q1`` .. ``*_pair_q3``.
    """
    med = {n: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s)) for n, s in samples.items()}
    ref_wall, ref_cpu = med[reference]
    out = {}
    for n, (w, c) in med.items():
        row = {"wall_s": w, "cpu_s": c, "wall_ratio": w / ref_wall, "cpu_ratio": c / ref_cpu,
               "wall_min_s": min(x for x, _ in samples[n])}
        for i, kind in ((0, "wall"), (1, "cpu")):
            pairs = [a[i] / r[i] for a, r in zip(samples[n], samples[reference])]
            row[f"{kind}_pair_ratio"] = statistics.median(pairs)
            row[f"{kind}_pair_q1"], row[f"{kind}_pair_q3"] = _quartiles(pairs)
        out[n] = row
    return out


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    models = build_models(args.model)
    batch = make_batch(args.batch, args.seq_len, models["stock"].config.vocab_size)
    no_prior = {k: v for k, v in batch.items() if k != "prior"}
    optims = {name: torch.optim.AdamW(m.parameters(), lr=1e-5) for name, m in models.items()}

    def inputs(name: str) -> dict[str, torch.Tensor]:
        return no_prior if name == "stock" else batch

    def train_step(name: str, data: dict[str, torch.Tensor]) -> None:
        model, opt = models[name], optims[name]
        model.train()
        loss = model(**data).loss
        extra = supervision_loss(model)  # supervise@0 (as priorkit's Trainer adds it)
        (loss if extra is None else loss + extra).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def infer(name: str, data: dict[str, torch.Tensor]) -> None:
        model = models[name]
        model.eval()
        with torch.inference_mode():
            model(**{k: v for k, v in data.items() if k != "labels"})

    def fresh(name: str) -> dict[str, torch.Tensor]:
        data = dict(inputs(name))
        if "prior" in data:
            data["prior"] = data["prior"].clone()  # a new batch's prior: no memo carried over
        return data

    train: dict[str, list[tuple[float, float]]] = {n: [] for n in VARIANTS}
    infer_t: dict[str, list[tuple[float, float]]] = {n: [] for n in VARIANTS}
    for rep in range(args.warmup + args.reps):
        shift = rep % len(VARIANTS)
        for name in VARIANTS[shift:] + VARIANTS[:shift]:
            d_train, d_infer = fresh(name), fresh(name)
            t_train, t_infer = timed(lambda: train_step(name, d_train)), timed(lambda: infer(name, d_infer))
            if rep >= args.warmup:
                train[name].append(t_train)
                infer_t[name].append(t_infer)
        print(f"repetition {rep + 1}/{args.warmup + args.reps} done", flush=True)
        if args.json and rep >= args.warmup:  # partial results survive an interrupted run
            with open(args.json + ".partial", "w", encoding="utf-8") as fh:
                json.dump({"train": train, "infer": infer_t}, fh)

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
        "profile": profile_steps(models, optims, fresh, train_step) if args.profile else None,
    }


def profile_steps(models, optims, fresh, train_step, top: int = 12) -> dict[str, list[dict]]:
    """torch.profiler over one train step per variant: the ops with the most self CPU time
    (explains a ratio: which kernels a mode adds or makes slower)."""
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name in VARIANTS:
        data = fresh(name)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            train_step(name, data)
        rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        out[name] = [{"op": e.key, "calls": e.count, "self_cpu_ms": e.self_cpu_time_total / 1000} for e in rows[:top]]
        out[name].append({"op": "(all ops)", "calls": sum(e.count for e in rows),
                          "self_cpu_ms": sum(e.self_cpu_time_total for e in rows) / 1000})
    return out


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
        "learned_bias": (module("learned_bias@all"), prior),
        "supervise": (module("supervise@0"), prior),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for rep in range(reps + 1):
        for name, (mod, extra) in cases.items():
            mod.train()
            run_extra = {k: v.clone() for k, v in extra.items()}  # fresh prior: no memo between calls

            def step() -> None:
                loss = mod(hidden, attention_mask=None, **run_extra)[0].sum()
                kl = mod.__dict__.pop("_priorkit_supervision", None)
                (loss if kl is None else loss + kl).backward()

            t = timed(step)
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
        "| variant | train step wall s | x stock | paired wall ratio (IQR) | train step CPU s | x stock | "
        "paired CPU ratio (IQR) | target | inference sent/s (wall) | inference sent/s (CPU) | CPU x stock |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        t, i = r["train"], r["infer"]
        target = f"<= {r['target_train_ratio']:.2f}" if r["target_train_ratio"] else ""
        lines.append(
            f"| {r['variant']} | {t['wall_s']:.2f} | {t['wall_ratio']:.3f} | {t['wall_pair_ratio']:.3f} "
            f"({t['wall_pair_q1']:.3f}-{t['wall_pair_q3']:.3f}) | {t['cpu_s']:.2f} | {t['cpu_ratio']:.3f} | "
            f"{t['cpu_pair_ratio']:.3f} ({t['cpu_pair_q1']:.3f}-{t['cpu_pair_q3']:.3f}) | {target} | "
            f"{r['infer_sent_per_s_wall']:.1f} | {r['infer_sent_per_s_cpu']:.1f} | {i['cpu_ratio']:.3f} |"
        )
    lines += ["", "| one attention module (layer 0), fwd + bwd | wall ms | x stock | CPU ms | x stock |",
              "|---|---|---|---|---|"]
    for name, s in result["attention_module"].items():
        lines.append(f"| {name} | {1000 * s['wall_s']:.1f} | {s['wall_ratio']:.2f} | "
                     f"{1000 * s['cpu_s']:.1f} | {s['cpu_ratio']:.2f} |")
    for name, ops in (result.get("profile") or {}).items():
        lines += ["", f"profile, one train step, {name}: " + "; ".join(
            f"{o['op']} x{o['calls']} {o['self_cpu_ms']:.0f} ms" for o in ops)]
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
    p.add_argument("--profile", action="store_true", help="also profile one train step per variant (torch.profiler)")
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

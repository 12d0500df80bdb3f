"""What the attention prior costs on MPNet: one training step, stock against prior-on.

MPNet's attention is its own code (not transformers' AttentionInterface), so priorkit
reaches it through an adapter (priorkit/attention/adapters/mpnet.py): a hook routes
``prior=`` and the primed layers run a replacement forward.  This measures the training
step (forward + backward, dropout on, no optimiser step so nothing dilutes the
attention's share) of all-mpnet-base-v2 with a token-classification head (the BC5CDR
set-up, 5 labels) on a realistic batch (default 16 x 64 tokens, the last quarter of the
examples padded by a quarter), for

  stock        no prior (the adapter is not installed)
  bias@0       mode="bias" in layer 0 (the BC5CDR concept prior's setting)
  multiply@0   mode="multiply" in layer 0 (the paper's)
  bias@all     mode="bias" in every layer

Rounds are paired: each round runs every variant once, in a rotating order, so drift on
a shared machine hits all alike, and the ratio to stock is taken within each round.
Both wall time and the process's CPU time are recorded (with --omp-passive idle OpenMP
threads sleep instead of spinning, so CPU time measures the work when others share the
cores).  Every step gets a fresh prior, made outside the timing.

    .venv/bin/python benchmarks/mpnet_attention_step.py --rounds 6 --omp-passive
    .venv/bin/python benchmarks/mpnet_attention_step.py --small   # a 4-layer, 256-wide random MPNet
"""
from __future__ import annotations

import os
import sys

if "--omp-passive" in sys.argv:  # must precede the OpenMP runtime's start, i.e. importing torch
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from priorkit.attention import disable_prior_attention, enable_prior_attention  # noqa: E402

VARIANTS = {"stock": None, "bias@0": ("bias", (0,)), "multiply@0": ("multiply", (0,)), "bias@all": ("bias", "all")}
TARGET = 1.10


def build_model(small: bool) -> torch.nn.Module:
    from transformers import AutoModelForTokenClassification, MPNetConfig
    from transformers.utils import logging

    logging.set_verbosity_error()  # the fresh head is expected
    torch.manual_seed(0)
    if small:
        config = MPNetConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                             num_labels=5)
        return AutoModelForTokenClassification.from_config(config)
    from priorkit.resources import mpnet_path

    return AutoModelForTokenClassification.from_pretrained(str(mpnet_path()), num_labels=5)


def make_batch(batch: int, length: int, vocab: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[-(batch // 4):, -(length // 4):] = 0  # a quarter of the examples padded by a quarter
    ids[mask == 0] = 1  # MPNet's <pad>
    labels = torch.randint(0, 5, (batch, length), generator=g).masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def step(model: torch.nn.Module, batch: dict, prior: torch.Tensor | None) -> tuple[float, float]:
    """(wall s, CPU s) of one forward + backward."""
    model.zero_grad(set_to_none=True)
    kwargs = dict(batch) if prior is None else {**batch, "prior": prior}
    w0, c0 = time.perf_counter(), time.process_time()
    loss = model(**kwargs).loss
    loss.backward()
    return time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--small", action="store_true", help="a small random MPNet instead of all-mpnet-base-v2")
    ap.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE (set before torch loads)")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)

    model = build_model(args.small).train()
    batch = make_batch(args.batch, args.length, model.config.vocab_size)
    B, L = args.batch, args.length
    g = torch.Generator().manual_seed(1)
    names = list(VARIANTS)
    times: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(args.rounds + 1):  # round 0 warms up and is dropped
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            setting = VARIANTS[name]
            prior = None
            if setting is not None:
                enable_prior_attention(model, layers=setting[1], mode=setting[0])
                prior = torch.rand((B, L, L), generator=g) * batch["attention_mask"][:, None, :]
            t = step(model, batch, prior)
            disable_prior_attention(model)
            if r:
                times[name].append(t)
        if r:
            print(f"round {r}: " + ", ".join(f"{n} {times[n][-1][0]:.2f}s" for n in names), file=sys.stderr, flush=True)

    rows = []
    for name in names:
        wall = [t[0] for t in times[name]]
        cpu = [t[1] for t in times[name]]
        rw = [w / s[0] for w, s in zip(wall, times["stock"])]
        rc = [c / s[1] for c, s in zip(cpu, times["stock"])]
        rows.append({"variant": name, "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu),
                     "wall_ratio": statistics.median(rw), "wall_ratio_range": [min(rw), max(rw)],
                     "cpu_ratio": statistics.median(rc), "cpu_ratio_range": [min(rc), max(rc)]})
    what = "random MPNet 4 x 256" if args.small else "all-mpnet-base-v2"
    print(f"MPNet training step (forward + backward), {what} + token-classification head, batch {B} x {L}, "
          f"{args.rounds} paired rounds, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print("| variant | step wall s (median) | x stock wall (median [min, max] of rounds) | step CPU s | "
          "x stock CPU (median [min, max]) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['variant']} | {row['wall_s']:.3f} | {row['wall_ratio']:.3f} [{row['wall_ratio_range'][0]:.3f}, "
              f"{row['wall_ratio_range'][1]:.3f}] | {row['cpu_s']:.3f} | {row['cpu_ratio']:.3f} "
              f"[{row['cpu_ratio_range'][0]:.3f}, {row['cpu_ratio_range'][1]:.3f}] |")
    worst = max(r["cpu_ratio"] for r in rows if r["variant"] != "stock")
    print(f"worst prior-on CPU ratio {worst:.3f} (target <= {TARGET})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"date": datetime.date.today().isoformat(), "model": what, "batch": [B, L],
                       "rounds": args.rounds, "rows": rows, "loadavg": os.getloadavg()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

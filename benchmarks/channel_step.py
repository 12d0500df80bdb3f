"""What the features channel costs a BC5CDR training step, now that the batch is tokenised once.

MiniLM with a token-classification head, batches of 32 BC5CDR train sentences (max length
128), one optimiser step each (collate + forward + backward + step), timed in paired rounds:
each round times the same batches without a channel and with the features channel
(HPO+MeSH concept matches, as pipelines/bc5cdr-arms.yaml's ``features`` arm), in alternating
order.  The matches are memoised per sentence after their first use (as in every epoch after
the first); a warm-up pass fills the memo and the allocator.  Prints the median step time of
each and their ratio (the issue's target: at most 1.03).

    .venv/bin/python benchmarks/channel_step.py [--rounds 5] [--batches 6] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import priorkit  # noqa: E402
from priorkit.align import load_tokenizer  # noqa: E402
from priorkit.channels.features.channel import FeatureChannel  # noqa: E402
from priorkit.collator import PriorCollator  # noqa: E402
from priorkit.channels.features import FeatureBuilder, FeatureConfig  # noqa: E402
from priorkit.config import DataSource  # noqa: E402
from priorkit.training.data import read_source  # noqa: E402
from priorkit.resources import minilm_path  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import AutoModelForTokenClassification

    sentences = read_source(DataSource(source="bc5cdr", split="train"))[0][: 32 * args.batches]
    tags = sorted({t for s in sentences for t in s["tags"]})
    index = {t: i for i, t in enumerate(tags)}
    examples = [{"words": list(s["words"]), "labels": [index[t] for t in s["tags"]]} for s in sentences]
    batches = [examples[i:i + 32] for i in range(0, len(examples), 32)]
    tokenizer = load_tokenizer(str(minilm_path()))
    provider = priorkit.get_provider("ontology", source="hpo+mesh")
    builder = FeatureBuilder(provider, FeatureConfig(provider="ontology", params={"source": "hpo+mesh"}), tokenizer, 128)

    def setup(with_features: bool):
        torch.manual_seed(0)
        model = AutoModelForTokenClassification.from_pretrained(str(minilm_path()), num_labels=len(tags)).train()
        channels = [FeatureChannel(builder)] if with_features else []
        for c in channels:
            c.attach(model)
        collate = PriorCollator(tokenizer, channels=channels, truncation=True, max_length=128)
        return model, collate, torch.optim.AdamW(model.parameters(), lr=1e-5)

    arms = {"plain": setup(False), "features": setup(True)}

    def epoch(arm: str) -> list[float]:
        model, collate, optimizer = arms[arm]
        times = []
        for batch in batches:
            t0 = time.perf_counter()
            loss = model(**collate(batch)).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            times.append(time.perf_counter() - t0)
        return times

    for arm in arms:  # warm-up: the matches' memo, the allocator
        epoch(arm)
    steps: dict[str, list[float]] = {arm: [] for arm in arms}
    ratios = []
    for r in range(args.rounds):
        order = ["plain", "features"] if r % 2 == 0 else ["features", "plain"]
        got = {arm: statistics.median(epoch(arm)) for arm in order}
        for arm in arms:
            steps[arm].append(got[arm])
        ratios.append(got["features"] / got["plain"])
    plain, feats = statistics.median(steps["plain"]), statistics.median(steps["features"])
    print(f"{len(batches)} batches of 32, {args.rounds} paired rounds, {args.threads} threads")
    print(f"step without features: {plain * 1000:.1f} ms (median)")
    print(f"step with features:    {feats * 1000:.1f} ms (median)")
    print(f"ratio per round: {', '.join(f'{x:.3f}' for x in ratios)}; median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()

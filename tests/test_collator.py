"""PriorCollator: what the Trainer gets, with the real MiniLM tokenizer and WordNet."""
from __future__ import annotations

import pytest
import torch

from priorkit import PriorBuilder
from priorkit.channels.attention.channel import AttentionChannel
from priorkit.collator import PriorCollator
from priorkit.errors import PriorkitError


@pytest.fixture(scope="module")
def collator(minilm_tokenizer, xia2021):
    return PriorCollator(minilm_tokenizer, channels=[AttentionChannel(PriorBuilder.paper(minilm_tokenizer, xia2021))])


def test_pair_batch_prior_lines_up_with_each_example(collator, stsb_dev_pairs):
    examples = [{"text_a": a, "text_b": b, "label": 0.5 * i} for i, (a, b) in enumerate(stsb_dev_pairs[:6])]
    batch = collator(examples)
    B, L = batch["input_ids"].shape
    assert batch["prior"].shape == (B, L, L) and batch["labels"].dtype == torch.float32
    for i, e in enumerate(examples):  # each example's block is its own prior, padded with 0
        alone = collator.channels[0].builder.build(e["text_a"], e["text_b"])
        n = alone.shape[0]
        assert int(batch["attention_mask"][i].sum()) == n
        torch.testing.assert_close(batch["prior"][i, :n, :n], alone)
        assert float(batch["prior"][i, n:].abs().sum()) == 0.0


def test_word_batch_labels_go_to_the_first_sub_token(minilm_tokenizer, xia2021):
    col = PriorCollator(minilm_tokenizer, channels=[AttentionChannel(PriorBuilder(minilm_tokenizer, xia2021,
                                                                                 layout="full"))])
    batch = col([{"words": ["Selegiline", "induced", "hypotension"], "labels": [1, 0, 2]},
                 {"words": ["Aspirin"], "labels": [1]}])
    for b in range(2):
        firsts = {}
        enc = minilm_tokenizer(["Selegiline", "induced", "hypotension"] if b == 0 else ["Aspirin"],
                               is_split_into_words=True)
        for t, w in enumerate(enc.word_ids()):
            if w is not None and w not in firsts:
                firsts[w] = t
        expected = [1, 0, 2] if b == 0 else [1]
        assert [int(batch["labels"][b, firsts[w]]) for w in sorted(firsts)] == expected
        assert int((batch["labels"][b] != -100).sum()) == len(expected)


def test_mixed_pairs_and_single_sentences_are_refused(collator):
    with pytest.raises(PriorkitError, match="mixes sentence pairs and single sentences: example 1 lacks"):
        collator([{"text_a": "a cat", "text_b": "a dog", "label": 1.0}, {"text_a": "a cat", "label": 0.0}])
    with pytest.raises(PriorkitError, match="example 1 has a 'text_b'"):
        collator([{"text_a": "a cat", "label": 1.0}, {"text_a": "a cat", "text_b": "a dog", "label": 0.0}])


def test_one_tokenisation_per_batch_and_the_same_tensors_as_the_builders_own(minilm_tokenizer, xia2021,
                                                                            stsb_dev_pairs):
    """The collator is the tokenizer's one caller per batch; the attention channel aligns that
    encoding (its store skips the aligning in later epochs) and the batch equals
    PriorBuilder.build_batch on the same texts."""
    builder = PriorBuilder.paper(minilm_tokenizer, xia2021, truncation=True, max_length=24)
    channel = AttentionChannel(builder, store=True)
    collate = PriorCollator(minilm_tokenizer, channels=[channel], truncation=True, max_length=24)
    examples = [{"text_a": a, "text_b": b} for a, b in stsb_dev_pairs[:5]]
    want = builder.build_batch([e["text_a"] for e in examples], [e["text_b"] for e in examples])
    calls, aligned = [], []
    original, align = type(minilm_tokenizer).__call__, builder.align

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    builder.align = lambda *a, **k: aligned.append(1) or align(*a, **k)
    try:
        for epoch in range(2):
            type(minilm_tokenizer).__call__ = counting
            try:
                batch = collate(examples)
            finally:
                type(minilm_tokenizer).__call__ = original
            assert len(calls) == 1 and len(aligned) == (5 if epoch == 0 else 0)
            calls.clear(), aligned.clear()
            assert list(batch) == list(want) and all(torch.equal(batch[k], want[k]) for k in want)
    finally:
        builder.align = align
    assert channel.store.hits == 5 and channel.store.misses == 5
    with pytest.raises(PriorkitError, match="not the attention channel's"):
        PriorCollator(object(), channels=[channel])

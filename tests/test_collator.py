"""PriorCollator: what the Trainer gets, with the real MiniLM tokenizer and WordNet."""
from __future__ import annotations

import pytest
import torch

from priorkit import PriorBuilder
from priorkit.collator import PriorCollator
from priorkit.errors import PriorkitError


@pytest.fixture(scope="module")
def collator(minilm_tokenizer, xia2021):
    return PriorCollator(minilm_tokenizer, PriorBuilder.paper(minilm_tokenizer, xia2021))


def test_pair_batch_prior_lines_up_with_each_example(collator, stsb_dev_pairs):
    examples = [{"text_a": a, "text_b": b, "label": 0.5 * i} for i, (a, b) in enumerate(stsb_dev_pairs[:6])]
    batch = collator(examples)
    B, L = batch["input_ids"].shape
    assert batch["prior"].shape == (B, L, L) and batch["labels"].dtype == torch.float32
    for i, e in enumerate(examples):  # each example's block is its own prior, padded with 0
        alone = collator.builder.build(e["text_a"], e["text_b"])
        n = alone.shape[0]
        assert int(batch["attention_mask"][i].sum()) == n
        torch.testing.assert_close(batch["prior"][i, :n, :n], alone)
        assert float(batch["prior"][i, n:].abs().sum()) == 0.0


def test_word_batch_labels_go_to_the_first_sub_token(minilm_tokenizer, xia2021):
    col = PriorCollator(minilm_tokenizer, PriorBuilder(minilm_tokenizer, xia2021, layout="full"))
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

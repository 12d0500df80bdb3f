"""AlignedStore: stored token-aligned priors equal the builder's output exactly (real MiniLM
tokenizer, real WordNet, real STS-B pairs), survive a reload from disk, never go stale,
and fail clearly on a damaged shard."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from priorkit import PriorBuilder
from priorkit.channels.attention.store import AlignedStore, tokenizer_identity
from priorkit.channels.attention.channel import AttentionChannel
from priorkit.collator import PriorCollator
from priorkit.errors import CacheError, PriorkitError


@pytest.fixture(scope="module")
def paper(minilm_tokenizer, xia2021):
    return PriorBuilder.paper(minilm_tokenizer, xia2021)


def _same(got, want) -> float:
    """Exactly the same keys, dtypes, shapes and values; returns the max abs difference (0)."""
    assert set(got.keys()) == set(want.keys())
    worst = 0.0
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        assert torch.equal(got[k], want[k]), k
        worst = max(worst, float((got[k].double() - want[k].double()).abs().max()))
    return worst


def test_store_batches_equal_the_builder(paper, stsb_dev_pairs, tmp_path):
    a = [p[0] for p in stsb_dev_pairs[:60]]
    b = [p[1] for p in stsb_dev_pairs[:60]]
    store = AlignedStore(paper, tmp_path)
    store.build_batch(a[:30], b[:30], truncation=True, max_length=40)  # all new: stored
    mixed = store.build_batch(a[20:50], b[20:50], truncation=True, max_length=40)  # 10 stored, 20 new
    assert store.hits >= 10 and store.misses >= 50
    _same(mixed, paper.build_batch(a[20:50], b[20:50], truncation=True, max_length=40))
    assert store.flush() > 0 and store.flush() == 0

    # another process: a read-only store over the shards answers without the builder
    again = AlignedStore(paper, tmp_path, read_only=True)
    got = again.build_batch(a[:50], b[:50], truncation=True, max_length=40, pad_value=-1.0)
    assert again.misses == 0 and again.hits == 50
    want = paper.build_batch(a[:50], b[:50], truncation=True, max_length=40, pad_value=-1.0)
    print(f"\nstored vs built, 50 STS-B pairs: max abs diff {_same(got, want)}")
    assert [got.word_ids(i) for i in range(50)] == [want.word_ids(i) for i in range(50)]
    # other call arguments are another namespace: nothing stale is read
    other = again.build_batch(a[:5], b[:5])
    assert again.misses == 5
    _same(other, paper.build_batch(a[:5], b[:5]))
    assert again.flush() == 0 and len(list(tmp_path.rglob("*.npz"))) == 1  # read-only wrote nothing


def test_word_lists_and_collator_labels(minilm_tokenizer, xia2021, tmp_path):
    full = PriorBuilder(minilm_tokenizer, xia2021, layout="full")
    examples = [{"words": ["Selegiline", "induced", "hypotension", "."], "labels": [1, 0, 2, 0]},
                {"words": ["Aspirin"], "labels": [1]},
                {"words": ["naloxone", "reverses", "the", "antihypertensive", "effect"], "labels": [1, 0, 0, 0, 0]}]
    plain = PriorCollator(minilm_tokenizer, channels=[AttentionChannel(full)])
    with PriorCollator(minilm_tokenizer, channels=[AttentionChannel(full, store=tmp_path)]) as stored:
        stored(examples[:2])
        second = stored(examples)  # two stored, one new
    assert len(list(tmp_path.rglob("*.npz"))) == 1  # closing flushed
    _same(second, plain(examples))
    store = AlignedStore(full, tmp_path, read_only=True)
    reader = PriorCollator(minilm_tokenizer, channels=[AttentionChannel(full, store=store)])
    third = reader(examples[::-1])
    assert store.misses == 0 and store.hits == 3
    _same(third, plain(examples[::-1]))


def test_tokenizer_state_does_not_change_the_namespace(paper, minilm_tokenizer):
    before = tokenizer_identity(minilm_tokenizer)
    ns = AlignedStore(paper).namespace()
    minilm_tokenizer(["a b c"], ["d"], padding="max_length", truncation=True, max_length=7)
    assert tokenizer_identity(minilm_tokenizer) == before
    assert AlignedStore(paper).namespace() == ns
    assert AlignedStore(paper).namespace({"max_length": 7}) != ns


def test_calls_the_store_cannot_reproduce_go_to_the_builder(paper, stsb_dev_pairs):
    store = AlignedStore(paper)
    a, b = [p[0] for p in stsb_dev_pairs[:4]], [p[1] for p in stsb_dev_pairs[:4]]
    got = store.build_batch(a, b, padding="max_length", max_length=64, truncation=True)
    assert got["input_ids"].shape == (4, 64) and store.hits == store.misses == 0
    with pytest.raises(PriorkitError, match="texts_a has 4 items but texts_b has 3"):
        store.build_batch(a, b[:3])
    with pytest.raises(PriorkitError, match="must be a list of texts"):
        store.build_batch("one sentence", None)


def test_damaged_shard_is_named(paper, stsb_dev_pairs, tmp_path):
    store = AlignedStore(paper, tmp_path)
    store.build_batch([stsb_dev_pairs[0][0]], [stsb_dev_pairs[0][1]])
    store.flush()
    (shard,) = tmp_path.rglob("*.npz")
    good = shard.read_bytes()
    shard.write_bytes(good[: len(good) // 2])
    with pytest.raises(CacheError, match=f"{shard.name}.*delete the file"):
        AlignedStore(paper, tmp_path).build_batch(["a"], ["b"])
    # a shard holding a pickled object is refused, not loaded
    np.savez(shard, format=np.array([1]), keys=np.array([object()], dtype=object))
    with pytest.raises(CacheError, match="cannot be read"):
        AlignedStore(paper, tmp_path).build_batch(["a"], ["b"])
    with pytest.raises(PriorkitError, match="needs a PriorBuilder"):
        AttentionChannel(None, store=True)
    with pytest.raises(PriorkitError, match="made for another PriorBuilder"):
        AttentionChannel(PriorBuilder.paper(paper.tokenizer, paper.provider), store=AlignedStore(paper))

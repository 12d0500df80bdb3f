"""Token alignment: shapes, the paper preset by its written definition, layouts."""
from __future__ import annotations

import string

import numpy as np
import pytest
import torch

from priorkit import PriorProvider
from priorkit.align import PriorBuilder
from priorkit.errors import PriorkitError, TokenizerError
from priorkit.align.words import PAPER_STOP_WORDS
from support.plugins.trigram_plugin import jaccard_matrix


class Trigram(PriorProvider):
    """Character-trigram Jaccard: a real, deterministic similarity for structure tests."""

    name = "trigram-test"
    allows_nan = True

    def compute(self, left, right):
        out = jaccard_matrix(left, right, pad="#")
        out[[w.startswith("zz") for w in left], :] = np.nan  # "no knowledge" for words starting with zz
        out[:, [w.startswith("zz") for w in right]] = np.nan
        return out


PAIRS = [
    ("A man is playing a guitar.", "A woman plays the guitar!"),
    ("Selegiline-induced postural hypotension in Parkinson's disease.", "Low blood pressure"),
    ("  The cat   sat on the mat ", "A dog's bed -- empty."),
    ("Emoji 🙂 and 漢字 mixed", "ünïcödé wörds, café"),
    ("x", "y"),
]


@pytest.fixture(params=["wordpiece", "bpe", "sentencepiece"])
def tokenizer(request, minilm_tokenizer, bpe_tokenizer, sentencepiece_tokenizer):
    return {"wordpiece": minilm_tokenizer, "bpe": bpe_tokenizer,
            "sentencepiece": sentencepiece_tokenizer}[request.param]


@pytest.mark.parametrize("layout", ["paper", "full"])
@pytest.mark.parametrize("truncate", [None, 12])
def test_shape_matches_tokenizer_output(tokenizer, layout, truncate):
    kwargs = {"truncation": True, "max_length": truncate} if truncate else {}
    builder = PriorBuilder(tokenizer, Trigram(), layout=layout, **kwargs)
    for a, b in PAIRS:
        P = builder.build(a, b)
        L = len(tokenizer(a, b, **kwargs)["input_ids"])
        assert P.shape == (L, L) and P.dtype == torch.float32
        assert torch.isfinite(P).all() and P.min() >= 0 and P.max() <= 1
        if layout == "full":
            P1 = builder.build(a)
            L1 = len(tokenizer(a, **kwargs)["input_ids"])
            assert P1.shape == (L1, L1)


def _reference_paper(tokenizer, provider, a, b):
    """The preset exactly as written in the docstring, with plain loops."""
    enc = tokenizer(a, b, return_offsets_mapping=True)
    texts = [a, b]
    seq = enc.sequence_ids()
    L = len(seq)
    keys, sides = [], []
    seen_b = False
    first_special_done = False
    for t in range(L):
        if seq[t] is None:
            side = 1 if seen_b else 0
            keys.append("cls" if not first_special_done else "sep")
            first_special_done = True
            sides.append(side)
            continue
        seen_b = seen_b or seq[t] == 1
        text = texts[seq[t]]
        s, e = enc["offset_mapping"][t]
        while s < e and text[s].isspace():
            s += 1
        # the whitespace chunk holding character s (or the next chunk for a space-only token)
        chunk_start = s
        while chunk_start > 0 and not text[chunk_start - 1].isspace():
            chunk_start -= 1
        while chunk_start < len(text) and text[chunk_start].isspace():
            chunk_start += 1
        rest = text[chunk_start:].split()
        if not rest:  # trailing whitespace token: in no word, its entries stay 1
            keys.append(None)
            sides.append(-1)
            continue
        keys.append(rest[0].lower().translate(str.maketrans("", "", string.punctuation)))
        sides.append(seq[t])
    P = np.ones((L, L), dtype=np.float32)
    for i in range(L):
        for j in range(L):
            if sides[i] == 0 and sides[j] == 1:
                ki, kj = keys[i], keys[j]
                if not ki or not kj or ki in PAPER_STOP_WORDS or kj in PAPER_STOP_WORDS:
                    v = 0.0
                else:
                    v = float(provider.similarity([ki], [kj])[0, 0])
                P[i, j] = P[j, i] = v
    return P


def test_paper_preset_follows_its_definition(tokenizer, xia2021, stsb_dev_pairs):
    builder = PriorBuilder.paper(tokenizer, provider=xia2021)
    for a, b in stsb_dev_pairs[:40] + PAIRS[:3]:
        got = builder.build(a, b).numpy()
        want = _reference_paper(tokenizer, xia2021, a, b)
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"{a!r} / {b!r}")


def test_paper_first_sep_is_side_a(minilm_tokenizer, xia2021):
    """Documented deviation from the authors' code: the first [SEP] is on side A only,
    so its row is 1 within A and 0 (stop word) against B -- not all zeros."""
    a, b = "A cat sleeps.", "A kitten naps."
    P = PriorBuilder.paper(minilm_tokenizer, provider=xia2021).build(a, b).numpy()
    tokens = minilm_tokenizer(a, b).tokens()
    sep1 = tokens.index("[SEP]")
    assert (P[sep1, : sep1 + 1] == 1).all()
    assert (P[sep1, sep1 + 1:] == 0).all()
    cat, kitten = tokens.index("cat"), tokens.index("kitten")
    assert 0 < P[cat, kitten] == P[kitten, cat] <= 1


def test_word_pieces_copy_their_word(minilm_tokenizer):
    builder = PriorBuilder(minilm_tokenizer, Trigram(), layout="full")
    text = "Selegiline-induced hypotension"
    P = builder.build(text).numpy()
    tokens = minilm_tokenizer(text).tokens()
    first_word = [i for i, t in enumerate(tokens) if 0 < i < tokens.index("h")]
    for i in first_word[1:]:
        np.testing.assert_array_equal(P[i], P[first_word[0]])
    # pieces of one word are 1 with each other
    assert (P[np.ix_(first_word, first_word)] == 1).all()


def test_unknown_becomes_neutral(minilm_tokenizer):
    builder = PriorBuilder(minilm_tokenizer, Trigram(), layout="full", neutral=0.37)
    P = builder.build("zzunknown word", "word").numpy()
    tokens = minilm_tokenizer("zzunknown word", "word").tokens()
    zz = tokens.index("z") if "z" in tokens else 1
    word_b = len(tokens) - 2
    assert P[zz, word_b] == pytest.approx(0.37)
    assert P[0, 0] == pytest.approx(0.37)  # special tokens are neutral in the full layout


def test_batch_matches_single_and_pads_with_zero(minilm_tokenizer, xia2021, stsb_dev_pairs):
    builder = PriorBuilder.paper(minilm_tokenizer, provider=xia2021)
    pairs = stsb_dev_pairs[:8]
    batch = builder.build_batch([a for a, _ in pairs], [b for _, b in pairs])
    assert batch["prior"].shape[0] == 8
    for i, (a, b) in enumerate(pairs):
        single = builder.build(a, b)
        L = single.shape[0]
        assert int(batch["attention_mask"][i].sum()) == L
        torch.testing.assert_close(batch["prior"][i, :L, :L], single)
        assert (batch["prior"][i, L:, :] == 0).all() and (batch["prior"][i, :, L:] == 0).all()


def test_pre_split_words_for_token_classification(minilm_tokenizer):
    builder = PriorBuilder(minilm_tokenizer, Trigram(), layout="full")
    words = ["Selegiline", "-", "induced", "hypotension", "."]
    P = builder.build(words)
    enc = minilm_tokenizer(words, is_split_into_words=True)
    assert P.shape == (len(enc["input_ids"]),) * 2
    wid = enc.word_ids()
    for i, wi in enumerate(wid):
        for j, wj in enumerate(wid):
            if wi is not None and wi == wj:
                assert P[i, j] == 1


def test_word_pairs_cover_what_build_asks(minilm_tokenizer, xia2021):
    asked = []

    class Recording(Trigram):
        name = "recording"

        def compute(self, left, right):
            asked.extend((a, b) for a in left for b in right)
            return super().compute(left, right)

    builder = PriorBuilder.paper(minilm_tokenizer, provider=Recording())
    a, b = "Three men are playing chess.", "Two men are playing chess!"
    builder.build(a, b)
    assert set(asked) <= set(builder.word_pairs(a, b))
    assert ("three", "two") in asked and all(k not in PAPER_STOP_WORDS for pair in asked for k in pair)


def test_errors_are_clear(minilm_path, minilm_tokenizer):
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    slow = BertTokenizerLegacy.from_pretrained(str(minilm_path))
    with pytest.raises(TokenizerError, match="slow"):
        PriorBuilder(slow, Trigram())
    with pytest.raises(PriorkitError, match="layout"):
        PriorBuilder(minilm_tokenizer, Trigram(), layout="diagonal")
    with pytest.raises(PriorkitError, match="sentence pair"):
        PriorBuilder(minilm_tokenizer, Trigram(), layout="paper").build("only one")

    class BadSegments(Trigram):
        name = "bad-segments"

        def segment(self, words):
            return [(0, 1)]  # does not cover the sentence

    with pytest.raises(PriorkitError, match="bad-segments"):
        PriorBuilder(minilm_tokenizer, BadSegments(), layout="full").build("two words")


def test_loads_tokenizer_from_local_path(minilm_path):
    builder = PriorBuilder(str(minilm_path), Trigram(), layout="full")
    assert builder.build("hello world").shape[0] == 4

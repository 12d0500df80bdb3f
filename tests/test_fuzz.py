"""Bad input, fuzzed: the aligner and every built-in provider on nasty text (hypothesis).

Strategies produce empty strings, whitespace-only strings, very long texts
(beyond the truncation length), emoji and mixed scripts, control characters,
punctuation-only words, repeated words, raw text that spells special tokens
("[SEP]"), and pre-split word lists (the NER path) holding empty or
space-containing words.  Everything runs on real parts: the MiniLM tokenizer,
real WordNet, ConceptNet, GloVe, MiniLM, an OBO ontology.

Invariants (docs/alignment.md, "Odd input and errors"):

- the prior is (L, L) float32 with L = len(tokenizer(a, b, **same options)["input_ids"]),
  computed here by calling the tokenizer directly, not through the builder;
- every value is finite and lies in [0, 1] or equals ``neutral``;
- the matrix is symmetric (paper layout; full layout with a symmetric provider);
- ``build_batch`` equals ``build`` per example, padded with ``pad_value``;
- a provider's ``similarity`` has the asked shape, values in [0, 1] or NaN
  (only if ``allows_nan``), and agrees with ``pair_similarity``;
- mismatched calls raise :class:`PriorkitError`, nothing else.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import priorkit
from priorkit.align import PriorBuilder
from priorkit.errors import PriorkitError, UnknownProviderError

ONTOLOGY = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"
MAX_LENGTH = 24  # small, so long texts are truncated (and pairs lose words on both sides)

#: examples per property; each property runs once per provider (and layout).
#: PRIORKIT_FUZZ_SCALE=20 digs deeper (minutes); the default keeps the file under ~30 s on two busy cores.
SCALE = float(os.environ.get("PRIORKIT_FUZZ_SCALE", "1"))
FEW = settings(max_examples=max(1, int(8 * SCALE)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=max(1, int(15 * SCALE)), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- strategies -------------------------------------------------------------------
REAL = ["dog", "cat", "Dog!", "heart", "attack", "car", "the", "a", "of", "is", "running", "ran",
        "Irregular", "heart", "beat", "Fast", "rate", "Cor", "pulmonale", "Lobar", "pneumonia",
        "Ventricular", "tachycardia", "V-tach", "VT", "So-called", '"racing"', "Parkinson's",
        "Selegiline-induced,", "cls", "sep"]
PUNCT = ["!!!", "...", ",", "'", "--", "()", "?!", "¿¡", "«»", "…", "-", "_", "#$%", "'s"]
EMOJI = ["🙂", "👩‍👩‍👧", "🇫🇷", "❤️", "🐶dog", "dog🐶", "🙂🙂🙂"]
SCRIPTS = ["世界", "漢字mixed", "мир", "مرحبا", "שלום", "नमस्ते", "ñandú", "straße", "e\u0301",
           "ﬁne", "Ⅻ", "İstanbul", "ΣΊΣΥΦΟΣ", "ｆｕｌｌｗｉｄｔｈ"]
CONTROL = ["\x00", "\x01", "\x7f", "\x1b[31m", "\ufeff", "\u200b", "\u200d", "\ufffd", "a\x00b",
           "\x1c", "\x85"]
SPECIAL = ["[SEP]", "[CLS]", "[PAD]", "[MASK]", "[UNK]", "<s>", "</s>"]
LONG_WORD = ["a" * 120, "pneumonoultramicroscopicsilicovolcanoconiosis" * 3]
POOL = REAL + PUNCT + EMOJI + SCRIPTS + CONTROL + SPECIAL + LONG_WORD

#: any code point a Python str can carry into UTF-8 (no lone surrogates)
any_char = st.characters(exclude_categories=("Cs",))
word = st.one_of(st.sampled_from(POOL), st.text(any_char, min_size=1, max_size=10))
separator = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", " \u00a0 ", "\u3000", "\u2028", " \x00 "])
whitespace = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2028\u3000\x1c\x1f"), max_size=8)


@st.composite
def sentence(draw, min_words: int = 0, max_words: int = 10) -> str:
    words = draw(st.lists(word, min_size=min_words, max_size=max_words))
    sep = draw(separator)
    return draw(st.sampled_from(["", " ", "\n"])) + sep.join(words) + draw(st.sampled_from(["", " ", "\t"]))


long_text = st.lists(st.sampled_from(POOL), min_size=30, max_size=90).map(" ".join)
repeated = st.builds(lambda w, n, sep: sep.join([w] * n), word, st.integers(2, 40), separator)
text = st.one_of(st.just(""), whitespace, sentence(), sentence(), long_text, repeated)

#: pre-split words (NER): items may be empty, blank, or hold spaces themselves
split_word = st.one_of(word, st.sampled_from(["", " ", "\t", "heart attack", " dog ", "a\nb"]))
word_list = st.one_of(st.lists(split_word, max_size=12), st.lists(st.sampled_from(POOL), min_size=30, max_size=60))


# ---- providers --------------------------------------------------------------------
PROVIDERS = ["wordnet-xia2021", "wordnet-wup", "conceptnet", "ontology", "embedding-glove",
             "embedding-minilm", "combine"]


def _make(name: str, made: dict) -> priorkit.PriorProvider:
    if name == "wordnet-xia2021":
        return priorkit.get_provider("wordnet", measure="xia2021")
    if name == "wordnet-wup":  # asymmetric (NLTK's wup), IC-free
        return priorkit.get_provider("wordnet", measure="wup")
    if name == "conceptnet":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return priorkit.get_provider("conceptnet")
    if name == "ontology":  # segments words into multi-word concept mentions
        return priorkit.get_provider("ontology", path=str(ONTOLOGY), cache=False)
    if name == "embedding-glove":
        return priorkit.get_provider("embedding", vectors="glove")
    if name == "embedding-minilm":
        return priorkit.get_provider("embedding", device="cpu")
    if name == "combine":  # NaN-producing and NaN-free children, one that segments
        return priorkit.get_provider("combine", how="weighted", weights=[1.0, 2.0, 1.0],
                                     providers=[_get("conceptnet", made), _get("embedding-glove", made),
                                                _get("ontology", made)])
    raise AssertionError(name)


def _get(name: str, made: dict) -> priorkit.PriorProvider:
    if name not in made:
        made[name] = _make(name, made)
        made[name].ensure_loaded()
    return made[name]


@pytest.fixture(scope="module")
def made():
    """Providers built once for the module (a provider is built when a test first needs it)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # MiniLM on a handful of words: threads only contend on a busy box
    yield {}
    torch.set_num_threads(threads)


@pytest.fixture(scope="module", params=PROVIDERS)
def provider(request, made):
    return _get(request.param, made)


def _builder(tokenizer, provider, layout: str, neutral: float = 1.0) -> PriorBuilder:
    if layout == "paper-preset":
        return PriorBuilder.paper(tokenizer, provider, truncation=True, max_length=MAX_LENGTH)
    return PriorBuilder(tokenizer, provider, layout=layout, neutral=neutral, truncation=True,
                        max_length=MAX_LENGTH)


# ---- the invariants ---------------------------------------------------------------
def check_prior(builder: PriorBuilder, prior: torch.Tensor, a, b=None) -> None:
    """Shape from a direct tokenizer call with the builder's options, then the value rules."""
    split = not isinstance(a, str)
    enc = builder.tokenizer(a, b, is_split_into_words=split, truncation=True, max_length=MAX_LENGTH)
    L = len(enc["input_ids"])
    assert prior.dtype == torch.float32
    assert tuple(prior.shape) == (L, L), (a, b)
    check_values(builder, prior.numpy(), enc.sequence_ids())


def check_values(builder: PriorBuilder, P: np.ndarray, sequence_ids: list) -> None:
    assert np.isfinite(P).all()
    assert (((P >= 0) & (P <= 1)) | (P == np.float32(builder.neutral))).all(), P
    if builder.layout == "paper" or builder.base_provider.symmetric:
        np.testing.assert_allclose(P, P.T, atol=1e-6)
    if builder.layout == "full":  # special tokens neutral; a token with itself 1 (or neutral)
        special = np.array([s is None for s in sequence_ids], dtype=bool)
        assert (P[special] == np.float32(builder.neutral)).all()
        assert (P[:, special] == np.float32(builder.neutral)).all()
        assert np.isin(np.diag(P), [1.0, np.float32(builder.neutral)]).all()


def check_batch(builder: PriorBuilder, texts_a, texts_b=None, pad_value: float = 0.0) -> None:
    """``build_batch`` row by row against ``build`` (and the padding against ``pad_value``).

    One exception, transformers' own: a single call ``tokenizer(a, "")`` drops an
    empty ``text_pair`` (it is falsy) while a batch call keeps it, so for an empty
    side B the batch row has one [SEP] more than ``build``; that row is checked
    against the batch tokenisation instead.
    """
    enc = builder.build_batch(texts_a, texts_b, pad_value=pad_value)
    prior = enc["prior"]
    B, L = enc["input_ids"].shape
    assert tuple(prior.shape) == (len(texts_a), L, L)
    assert "offset_mapping" not in enc
    for i, a in enumerate(texts_a):
        b = None if texts_b is None else texts_b[i]
        n = int(enc["attention_mask"][i].sum())
        assert (prior[i, n:, :] == pad_value).all() and (prior[i, :, n:] == pad_value).all()
        if b is not None and len(b) == 0:
            check_values(builder, prior[i, :n, :n].numpy(), enc.sequence_ids(i)[:n])
            continue
        single = builder.build(a, b)
        assert single.shape[0] == n, (a, b)
        torch.testing.assert_close(prior[i, :n, :n], single, atol=1e-5, rtol=0)


# ---- properties: the aligner ------------------------------------------------------
@pytest.mark.parametrize("layout", ["paper-preset", "paper", "full"])
@SOME
@given(a=text, b=text, neutral=st.sampled_from([1.0, 0.5, 0.0]))
def test_pair_build_invariants(minilm_tokenizer, provider, layout, a, b, neutral):
    builder = _builder(minilm_tokenizer, provider, layout, neutral)
    check_prior(builder, builder.build(a, b), a, b)


@SOME
@given(a=text, neutral=st.sampled_from([1.0, 0.5]))
def test_single_build_invariants(minilm_tokenizer, provider, a, neutral):
    builder = _builder(minilm_tokenizer, provider, "full", neutral)
    check_prior(builder, builder.build(a), a)


@SOME
@given(words=word_list)
def test_pre_split_words_invariants(minilm_tokenizer, provider, words):
    builder = _builder(minilm_tokenizer, provider, "full")
    check_prior(builder, builder.build(words), words)


@pytest.mark.parametrize("layout", ["paper-preset", "full"])
@FEW
@given(pairs=st.lists(st.tuples(text, text), min_size=1, max_size=4), pad=st.sampled_from([0.0, -1.0]))
def test_pair_batch_equals_single_builds(minilm_tokenizer, provider, layout, pairs, pad):
    builder = _builder(minilm_tokenizer, provider, layout)
    check_batch(builder, [a for a, _ in pairs], [b for _, b in pairs], pad)


@FEW
@given(texts=st.lists(text, min_size=1, max_size=4), lists=st.lists(word_list, min_size=1, max_size=4))
def test_single_and_split_batches_equal_single_builds(minilm_tokenizer, provider, texts, lists):
    builder = _builder(minilm_tokenizer, provider, "full", 0.5)
    check_batch(builder, texts)
    check_batch(builder, lists)


@pytest.mark.parametrize("kind", ["bpe", "sentencepiece"])
@pytest.mark.parametrize("layout", ["paper-preset", "full"])
@FEW
@given(a=text, b=text, words=word_list)
def test_other_tokenizer_families(bpe_tokenizer, sentencepiece_tokenizer, made, kind, layout, a, b, words):
    """Byte-level BPE (space tokens) and SentencePiece (lone \u2581) keep the invariants too."""
    tokenizer = bpe_tokenizer if kind == "bpe" else sentencepiece_tokenizer
    builder = _builder(tokenizer, _get("ontology", made), layout)
    check_prior(builder, builder.build(a, b), a, b)
    if layout == "full":
        check_prior(builder, builder.build(words), words)


# ---- properties: the providers themselves -----------------------------------------
@SOME
@given(left=st.lists(split_word, max_size=6), right=st.lists(split_word, max_size=6))
def test_provider_similarity_invariants(provider, left, right):
    S = provider.similarity(left, right)
    assert S.shape == (len(left), len(right)) and S.dtype == np.float32
    nan = np.isnan(S)
    assert provider.allows_nan or not nan.any()
    assert ((S[~nan] >= 0) & (S[~nan] <= 1)).all()
    pairs = [(x, y) for x in left for y in right]
    if pairs:
        P = provider.pair_similarity([x for x, _ in pairs], [y for _, y in pairs])
        np.testing.assert_allclose(P.reshape(S.shape), S, atol=1e-5, equal_nan=True)
    if provider.symmetric:
        np.testing.assert_allclose(provider.similarity(right, left), S.T, atol=1e-5, equal_nan=True)
    spans = provider.segment(left)  # contiguous, in order, covering every word
    ends = [e for _, e in spans]
    assert [s for s, _ in spans] == [0, *ends[:-1]][:len(spans)] and all(e > s for s, e in spans)
    assert (ends[-1] if ends else 0) == len(left)


# ---- mismatched calls: PriorkitError and nothing else -----------------------------
PAIR_NEEDED = "needs a sentence pair"
SAME_KIND = "must both be strings or both be word lists"
#: case -> (call, what the message must say)
MISMATCHED = {
    "paper builder, one text": (lambda b: b.build("a dog"), PAIR_NEEDED),
    "paper builder, one word list": (lambda b: b.build(["a", "dog"]), PAIR_NEEDED),
    "paper builder, batch of single texts": (lambda b: b.build_batch(["a dog", "a cat"]), PAIR_NEEDED),
    "str with word list": (lambda b: b.build("a dog", ["a", "cat"]), "text_a and text_b " + SAME_KIND),
    "word list with str": (lambda b: b.build(["a", "dog"], "a cat"), "text_a and text_b " + SAME_KIND),
    "batch sides of different lengths": (lambda b: b.build_batch(["a", "b"], ["c"]),
                                         "texts_a has 2 items but texts_b has 1"),
    "empty batch": (lambda b: b.build_batch([]), "empty batch"),
    "batch given one str": (lambda b: b.build_batch("a dog barks"), "texts_a must be a list of texts"),
    "batch given one str as side b": (lambda b: b.build_batch(["abc"], "x"), "texts_b must be a list of texts"),
    "batch mixing str and word lists": (lambda b: b.build_batch(["a dog", ["a", "cat"]]),
                                        "texts_a[1] is a word list but texts_a[0] is a string"),
    "batch: str side a, word-list side b": (lambda b: b.build_batch(["a dog"], [["a", "cat"]]),
                                            "texts_a[0] and texts_b[0] " + SAME_KIND),
    "batch: word-list side a, str side b": (lambda b: b.build_batch([["a", "dog"]], ["a cat"]),
                                            "texts_a[0] and texts_b[0] " + SAME_KIND),
    "batch with a None text": (lambda b: b.build_batch(["a dog", None]), "texts_a[1] must be a string"),
    "batch with a None side b": (lambda b: b.build_batch(["a", "b"], ["c", None]), "texts_b[1] is None"),
    "build with a None text": (lambda b: b.build(None), "text_a must be a string (raw text) or a list"),
    "build with a number": (lambda b: b.build(3), "not int 3"),
    "word list holding a number": (lambda b: b.build(["a", 3]), "text_a is a word list holding int 3"),
    "word_pairs with a number": (lambda b: b.word_pairs(3), "text_a must be a string"),
    "word_pairs: str with word list": (lambda b: b.word_pairs("a dog", ["a", "cat"]), SAME_KIND),
}


@pytest.mark.parametrize("layout", ["paper", "full"])
@pytest.mark.parametrize("case", list(MISMATCHED))
def test_mismatched_calls_raise_priorkit_error(minilm_tokenizer, made, layout, case):
    builder = _builder(minilm_tokenizer, _get("wordnet-xia2021", made), layout)
    call, says = MISMATCHED[case]
    if case.startswith("paper builder") and layout == "full":
        call(builder)  # a single text is fine for the full layout
        return
    with pytest.raises(PriorkitError) as info:
        call(builder)
    assert says in str(info.value)


def test_bad_builder_settings_raise_priorkit_error(minilm_tokenizer, made):
    p = _get("wordnet-xia2021", made)
    with pytest.raises(UnknownProviderError, match="'wordnett'.*Available: calibrated, combine"):
        PriorBuilder(minilm_tokenizer, "wordnett")
    with pytest.raises(PriorkitError, match="neutral must lie in"):
        PriorBuilder(minilm_tokenizer, p, layout="paper", neutral=1.5)
    with pytest.raises(PriorkitError, match="unknown key normalisation"):
        PriorBuilder(minilm_tokenizer, p, keys="lower")
    with pytest.raises(TypeError, match="provider must be a PriorProvider"):
        PriorBuilder(minilm_tokenizer, 3)


@settings(max_examples=25, deadline=None)
@given(left=st.one_of(st.text(max_size=5), st.lists(st.one_of(st.integers(), st.none()), min_size=1, max_size=3)))
def test_provider_rejects_non_word_lists(made, left):
    """A str or a list holding non-str is refused with TypeError (docs/alignment.md, "Odd input and errors")."""
    p = _get("embedding-glove", made)
    with pytest.raises(TypeError):
        p.similarity(left, ["dog"])
    with pytest.raises(TypeError):
        p.pair_similarity(["dog"], left)


def test_pair_similarity_length_mismatch_is_value_error(made):
    with pytest.raises(ValueError, match="left has 2 words but right has 1"):
        _get("embedding-glove", made).pair_similarity(["a", "b"], ["c"])

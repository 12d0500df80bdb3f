"""Segmentation (priorkit/documents/segment.py): offsets into the document's text, passages never
crossed, a CoNLL document's own split reused, and BC5CDR's punctuation splits."""
from __future__ import annotations

from pathlib import Path

import pytest

from priorkit.documents import Document
from priorkit.documents.conll import detokenize
from priorkit.documents.readers import read_documents
from priorkit.documents.segment import segment, sentence_starts, split_text
from priorkit.evaluation.offsets import rebuilt_documents

ROOT = Path(__file__).resolve().parents[1]


def _check(doc: Document, sentences) -> None:
    for sentence in sentences:
        assert sentence.tokens, "no empty sentence"
        for t in sentence.tokens:
            assert doc.text[t.start:t.end] == t.text
            assert t.text.strip() == t.text and t.text
    tokens = [t for s in sentences for t in s.tokens]
    assert all(a.end <= b.start for a, b in zip(tokens, tokens[1:])), "tokens in order, no overlap"
    # every non-space character of the text is in exactly one token
    covered = sum(t.end - t.start for t in tokens)
    assert covered == sum(not c.isspace() for c in doc.text)


@pytest.mark.parametrize("raw, words", [
    ("a 56-year-old woman", ["a", "56", "-", "year", "-", "old", "woman"]),
    ("(2.5 mcg/kg per min)", ["(", "2", ".", "5", "mcg", "/", "kg", "per", "min", ")"]),
    ("K(+)-channels", ["K", "(", "+", ")", "-", "channels"]),
    ("5-FU and Parkinson's disease", ["5", "-", "FU", "and", "Parkinson", "'", "s", "disease"]),
    ("P<.05, 10%", ["P", "<", ".", "05", ",", "10", "%"]),
    ("α-tocopherol ±5 °C", ["α", "-", "tocopherol", "±", "5", "°", "C"]),
])
def test_bc5cdr_style_punctuation_splits(raw, words):
    doc = Document("d", raw)
    sentences = segment(doc)
    assert [w for s in sentences for w in s.words] == words
    _check(doc, sentences)


def test_sentences_never_cross_a_passage():
    doc = Document.from_passages("p", [("title", "Lithium toxicity in a 56-year-old man"),
                                        ("abstract", "he had tremor. Dr. Smith et al. stopped lithium. He improved.")])
    sentences = segment(doc)
    _check(doc, sentences)
    title = doc.passages[0]
    for s in sentences:
        assert any(p.offset <= s.start and s.end <= p.end for p in doc.passages)
    # without passages, "man he had tremor." would be one sentence: the title ends one
    assert sentences[0].end == title.end
    assert [" ".join(s.words) for s in sentences[1:]] == [
        "he had tremor .", "Dr . Smith et al . stopped lithium .", "He improved ."]


def test_blank_lines_end_sentences_and_offsets_hold_in_raw_text():
    text = "First paragraph without a stop\n\n  Second one.\r\nStill second.\n"
    doc = Document("t", text)
    sentences = segment(doc)
    _check(doc, sentences)
    assert [s.words[0] for s in sentences] == ["First", "Second", "Still"]


def test_conll_documents_keep_their_split(tmp_path):
    # the given split has a sentence the splitter would not make ("vs ." ends nothing here)
    path = tmp_path / "a.conll"
    path.write_text("Aspirin\tB-Chemical\nvs\tO\n.\tO\n\nplacebo\tO\nin\tO\nrats\tO\n.\tO\n")
    (doc,) = read_documents(path)
    sentences = segment(doc)
    assert [s.words for s in sentences] == [["Aspirin", "vs", "."], ["placebo", "in", "rats", "."]]
    _check(doc, sentences)
    assert [s.words for s in segment(Document("x", doc.text))] == [["Aspirin", "vs", ".", "placebo", "in", "rats", "."]]


def test_split_text_shifts_offsets():
    sentences = split_text("Dose was 2.5 mg. It helped.", offset=100)
    assert [(s.start, s.end) for s in sentences] == [(100, 116), (117, 127)]
    assert sentence_starts("Dose was 2.5 mg. It helped.") == [0, 17]


def test_rebuilt_bc5cdr_text_gives_back_the_corpus_words():
    """On the first 40 rebuilt test documents, segment() gives the corpus's words exactly, and
    no sentence boundary cuts a gold entity."""
    docs = rebuilt_documents(ROOT / "data" / "bc5cdr" / "test.tsv")[:40]
    for rebuilt in docs:
        doc = Document(rebuilt.id, rebuilt.text)
        sentences = segment(doc)
        _check(doc, sentences)
        assert [(t.start, t.end) for s in sentences for t in s.tokens] == \
            [span for sentence in rebuilt.offsets for span in sentence]
        bounds = {s.start for s in sentences[1:]}
        assert not any(s < b < e for s, e, _ in rebuilt.entities for b in bounds)


def test_detokenized_first_abstract_splits_as_the_corpus():
    words = [["Torsade", "de", "pointes", "."], ["The", "authors", "describe", "a", "56", "-", "year", "-", "old",
                                                  "woman", "(", "2", ".", "5", "mcg", "/", "kg", ")", "."]]
    text, offsets = detokenize(words)
    sentences = segment(Document("a", text))
    assert [s.words for s in sentences] == words
    assert [[(t.start, t.end) for t in s.tokens] for s in sentences] == offsets


def test_any_text_segments_into_its_own_characters():
    """Property: for any text in any passages, every token is the text at its offsets, tokens
    follow each other, every non-space character is in one token, and no sentence crosses a
    passage."""
    from hypothesis import given, settings, strategies as st

    alphabet = st.sampled_from(list("abcXYZ019 .,;:()[]-/+%'\"\n\t") + ["é", "α", "±", "°", "\u00a0", "\u2009", "…"])

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.text(alphabet, max_size=60), min_size=1, max_size=3))
    def check(parts):
        doc = Document.from_passages("h", [("p", p) for p in parts])
        sentences = segment(doc)
        _check(doc, sentences)
        for s in sentences:
            assert any(p.offset <= s.start and s.end <= p.end for p in doc.passages)

    check()


def test_detokenized_words_come_back_from_segment():
    """Property: words split as BC5CDR's (runs of word characters, single punctuation characters)
    detokenize to a text whose segment() words are the same words at the same offsets."""
    from hypothesis import given, settings, strategies as st

    word = st.one_of(st.text(st.sampled_from(list("abcXZ0129é_")), min_size=1, max_size=6),
                     st.sampled_from(list(".,;:()[]{}-/+%'\"<>=?!±°")))

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.lists(word, min_size=1, max_size=12), min_size=1, max_size=4))
    def check(sentences):
        text, offsets = detokenize(sentences)
        assert [[text[s:e] for s, e in sent] for sent in offsets] == sentences
        got = [(t.start, t.end) for s in segment(Document("d", text)) for t in s.tokens]
        assert got == [span for sent in offsets for span in sent]

    check()

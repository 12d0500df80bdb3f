"""The one span reader (priorkit/decode/spans.py) against the readers it replaced: seqeval's
get_entities (the post-hoc arms, the dictionary recall), the calibration's gold_spans and the
teacher's spans (BIO with the unknown tag ``?``), and predict's entities (BIO / BIOES)."""
from __future__ import annotations

import random

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from priorkit.decode.spans import Span, entity_dicts, overlaps, render, seqeval_entities, spans


def _old_gold_spans(tags):
    """supervision/calibration.py::gold_spans before the one reader (reference copy)."""
    out, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        inside = tag.startswith("I-") and start is not None and tag[2:] == kind
        if not inside:
            if start is not None:
                out.add((start, i, kind))
            start, kind = (i, tag[2:]) if tag != "O" and "-" in tag else (None, None)
    return out


def _old_predict_entities(words, tags):
    """inference/predictor.py::entities before the one reader (reference copy)."""
    out, start, kind = [], None, None

    def close(end):
        nonlocal start, kind
        if start is not None:
            out.append({"type": kind, "start": start, "end": end, "text": " ".join(words[start:end])})
        start, kind = None, None

    for i, tag in enumerate(tags):
        if tag == "O" or len(tag) < 3 or tag[1] != "-":
            close(i)
            continue
        prefix, t = tag[0], tag[2:]
        if prefix in "BS" or t != kind or start is None:
            close(i)
            start, kind = i, t
        if prefix in "SE":
            close(i + 1)
    close(len(tags))
    return out


BIO = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]
BIOES = BIO + ["E-Disease", "S-Disease", "E-Chemical", "S-Chemical"]


def _sequences(alphabet, n=3000, seed=0):
    rng = random.Random(seed)
    return [[rng.choice(alphabet) for _ in range(rng.randint(0, 9))] for _ in range(n)]


def test_spans_read_bio_and_bioes_as_seqeval_does():
    for tags in _sequences(BIOES):
        assert seqeval_entities(tags) == [(t, s, e) for t, s, e in get_entities(list(tags))], tags


def test_spans_read_bio_with_unknown_words_as_the_calibration_and_the_teacher_did():
    for tags in _sequences(BIO + ["?"], seed=1):
        got = [(s.start, s.end, s.type) for s in spans(tags)]
        assert got == sorted(_old_gold_spans(tags)), tags          # the teacher's: sorted gold_spans
        assert set(got) == _old_gold_spans(tags)                    # the calibration's: a set


def test_spans_give_predicts_entity_records():
    for tags in _sequences(BIOES + ["?"], seed=2):
        words = [f"w{i}" for i in range(len(tags))]
        assert entity_dicts(words, tags) == _old_predict_entities(words, tags), tags


def test_stray_inside_tags_open_an_entity_and_end_is_exclusive():
    tags = ["O", "I-Disease", "I-Disease", "B-Chemical", "I-Disease", "O", "S-Chemical", "E-Chemical"]
    assert spans(tags) == [Span("Disease", 1, 3), Span("Chemical", 3, 4), Span("Disease", 4, 5),
                           Span("Chemical", 6, 7), Span("Chemical", 7, 8)]
    assert render([s for s in spans(tags) if s.type == "Disease"], 5) == ["O", "B-Disease", "I-Disease", "O", "B-Disease"]
    assert overlaps(Span("X", 0, 2), Span("Y", 1, 3)) and not overlaps(Span("X", 0, 2), Span("Y", 2, 3))


@pytest.mark.parametrize("tags", [["B-Disease", "?", "I-Disease"], ["?", "I-Chemical"]])
def test_the_unknown_tag_closes_an_entity_where_seqeval_makes_one_of_type_underscore(tags):
    assert all(s.type != "_" for s in spans(tags))
    assert any(t == "_" for t, _, _ in get_entities(list(tags)))  # the one reading that differs, on purpose

"""The spaCy component (priorkit/spacy_component.py, extra priorkit[spacy]): found through
the ``spacy_factories`` entry point, ``doc.ents`` equal to the tagger's entities on real
``spacy.blank("en")`` pipelines with a tiny real NER model, concept IDs as ``kb_id_`` and span
extensions, overlapping spans resolved."""
from __future__ import annotations

import subprocess
import sys

import pytest

spacy = pytest.importorskip("spacy", reason="the spaCy component needs the priorkit[spacy] extra")

import priorkit  # noqa: E402
from priorkit.documents import Document, Entity, TaggedDocument  # noqa: E402
from priorkit.errors import PriorkitError  # noqa: E402

TEXTS = ["Aspirin causes severe nausea .",
         "Patients given lithium carbonate developed renal failure after the dose .",
         "Haloperidol-induced tremor was seen in two of them ."]


@pytest.fixture(scope="module")
def tiny_ner(tmp_path_factory, tiny_bert_dir):
    from support.tagging import train_tiny_ner

    return train_tiny_ner(tmp_path_factory.mktemp("spacy-ner"), tiny_bert_dir)


@pytest.fixture(scope="module")
def nlp(tiny_ner):
    import priorkit.spacy_component  # noqa: F401  (the entry point does this; see the next test)

    nlp = spacy.blank("en")
    nlp.add_pipe("priorkit_ner", config={"model": str(tiny_ner)})
    return nlp


def test_the_factory_is_found_through_the_entry_point(tmp_path):
    code = ("import spacy, sys; nlp = spacy.blank('en'); sys.exit(0 if nlp.has_factory('priorkit_ner') else 3); ")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, f"spaCy did not find priorkit_ner through spacy_factories: {done.stderr[-500:]}"


def _expected(tiny_ner, texts):
    tagger = priorkit.load_model(tiny_ner)
    return [t.entities for t in tagger.tag_documents([Document(str(i), x) for i, x in enumerate(texts)])]


def test_doc_ents_are_the_taggers_entities(nlp, tiny_ner):
    expected = [_expected(tiny_ner, [text])[0] for text in TEXTS]  # one at a time, as nlp(text) tags
    assert sum(len(e) for e in expected) >= 3, "the tiny model should tag something"
    for text, entities in zip(TEXTS, expected):
        doc = nlp(text)
        got = [(e.start_char, e.end_char, e.label_, e.kb_id_) for e in doc.ents]
        want = [(e.start, e.end, e.type, e.concept_ids[0] if e.concept_ids else "") for e in entities]
        assert got == want, text
        for span, e in zip(doc.ents, entities):
            assert span._.priorkit_score == pytest.approx(e.score)
            assert span._.priorkit_source == e.source
            assert tuple(span._.priorkit_concept_ids) == e.concept_ids


def test_pipe_tags_in_batches_like_tag_documents(nlp, tiny_ner):
    expected = _expected(tiny_ner, TEXTS)
    docs = list(nlp.pipe(TEXTS, batch_size=3))
    assert [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in docs] == \
        [[(e.start, e.end, e.type) for e in ents] for ents in expected]


def test_concept_ids_overlaps_and_expansion(nlp):
    component = nlp.get_pipe("priorkit_ner")
    text = "Lithium 2.5 mg caused renal failure and tremor ."
    doc = nlp.make_doc(text)
    ents = (Entity(0, 7, "Lithium", "Chemical", 0.9, ("MESH:D008094", "CHEBI:30145"), "model"),
            Entity(8, 9, "2", "Chemical", 0.4),                                  # inside the token "2.5"
            Entity(22, 27, "renal", "Disease", 0.3),                             # overlaps the longer one
            Entity(22, 35, "renal failure", "Disease", 0.8, ("MESH:D051437",), "dictionary"),
            Entity(40, 46, "tremor", "Disease", 0.7, ("HP:0001337",), "document"))
    component.set_entities(doc, TaggedDocument(Document("d", text), (), ents))
    got = [(e.text, e.label_, e.kb_id_, tuple(e._.priorkit_concept_ids), e._.priorkit_source) for e in doc.ents]
    assert got == [("Lithium", "Chemical", "MESH:D008094", ("MESH:D008094", "CHEBI:30145"), "model"),
                   ("2.5", "Chemical", "", (), "model"),
                   ("renal failure", "Disease", "MESH:D051437", ("MESH:D051437",), "dictionary"),
                   ("tremor", "Disease", "HP:0001337", ("HP:0001337",), "document")]


def test_overwrite_ents_false_keeps_other_entities(tiny_ner):
    import priorkit.spacy_component  # noqa: F401

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "DOSE", "pattern": "dose"}])
    nlp.add_pipe("priorkit_ner", config={"model": str(tiny_ner), "overwrite_ents": False})
    text = TEXTS[1]
    doc = nlp(text)
    (expected,) = _expected(tiny_ner, [text])
    dose = text.index("dose")
    covered = any(e.start <= dose < e.end for e in expected)
    labels = {(e.start_char, e.label_) for e in doc.ents}
    assert ((dose, "DOSE") in labels) == (not covered)
    assert {(e.start, e.type) for e in expected} <= labels


def test_a_missing_model_is_named():
    import priorkit.spacy_component  # noqa: F401

    with pytest.raises(PriorkitError, match=r"needs a model folder.*config=\{'model': FOLDER\}"):
        spacy.blank("en").add_pipe("priorkit_ner")

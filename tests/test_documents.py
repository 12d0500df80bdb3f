"""Documents in and out (priorkit/documents/): every input format, format detection, every kind
of bad input (one line naming file and line or document id), skip_bad, laziness, the writers
and round trips through PubTator, BioC (XML and JSON, written by the real ``bioc`` library) and
JSON Lines."""
from __future__ import annotations

import json
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from priorkit.documents import Document, TaggedDocument
from priorkit.documents.conll import bio_spans, detokenize
from priorkit.documents.readers import FORMATS, annotations_of, check_inputs, input_format, read_documents
from priorkit.documents.writers import format_of, write_documents, writer_for
from priorkit.errors import DataFormatError, DocumentError, PriorkitError

ROOT = Path(__file__).resolve().parents[1]
BC5CDR_TEST = ROOT / "data" / "bc5cdr" / "test.tsv"

PUBTATOR = """100|t|Haloperidol-induced tremor.
100|a|Tremor was treated with biperiden.
100\t0\t11\tHaloperidol\tChemical\tD006220
100\t20\t26\ttremor\tDisease\tD014202
100\t52\t61\tbiperiden\tChemical\tD001712|D000001
100\tCID\tD006220\tD014202

200|t|Second title
200|a|Second abstract.
"""


def _write(tmp_path, name, content, mode="w"):
    path = tmp_path / name
    if mode == "w":
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def _check_offsets(doc: Document) -> None:
    for p in doc.passages:
        assert doc.text[p.offset:p.end] == p.text
    for e in annotations_of(doc):
        assert doc.text[e.start:e.end] == e.text


# ---------------------------------------------------------------------------
# the formats
# ---------------------------------------------------------------------------
def test_txt_is_one_document_per_file(tmp_path):
    a = _write(tmp_path, "a.txt", "First line.\r\nSecond line.\n")
    b = _write(tmp_path, "b.txt", "Other file.")
    docs = list(read_documents([a, b]))
    assert [d.id for d in docs] == ["a.txt", "b.txt"]
    assert docs[0].text == "First line.\r\nSecond line.\n"  # the file's own characters: offsets hold
    assert docs[0].passages[0].text == docs[0].text


def test_lines_is_one_document_per_non_empty_line(tmp_path):
    path = _write(tmp_path, "a.txt", "one\n\n  \ntwo three\n")
    docs = list(read_documents(path, "lines"))
    assert [(d.id, d.text) for d in docs] == [("a.txt:1", "one"), ("a.txt:4", "two three")]
    assert docs[1].source.endswith("a.txt:4")


def test_jsonl_text_id_title_and_entities(tmp_path):
    rows = [{"id": "d1", "text": "Aspirin helps.", "entities": [{"start": 0, "end": 7, "type": "Chemical"}]},
            {"text": "No id here."},
            {"id": 7, "title": "A title", "text": "and a body."}]
    path = _write(tmp_path, "a.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    docs = list(read_documents(path))
    assert [d.id for d in docs] == ["d1", "a.jsonl:2", "7"]
    assert annotations_of(docs[0])[0].text == "Aspirin"
    third = docs[2]
    assert third.text == "A title and a body."
    assert [(p.kind, p.offset) for p in third.passages] == [("title", 0), ("text", 8)]
    for d in docs:
        _check_offsets(d)


def test_pubtator_blocks_passages_and_annotations(tmp_path):
    path = _write(tmp_path, "a.pubtator", PUBTATOR)
    first, second = read_documents(path)
    assert first.id == "100"
    assert first.text == "Haloperidol-induced tremor. Tremor was treated with biperiden."
    assert [(p.kind, p.offset) for p in first.passages] == [("title", 0), ("abstract", 28)]
    ents = annotations_of(first)
    assert [(e.text, e.type, e.concept_ids) for e in ents] == [
        ("Haloperidol", "Chemical", ("D006220",)), ("tremor", "Disease", ("D014202",)),
        ("biperiden", "Chemical", ("D001712", "D000001"))]
    assert first.meta["relations"] == ["100\tCID\tD006220\tD014202"]
    assert second.id == "200" and second.passages[1].offset == len("Second title") + 1
    assert input_format("x.pubtator.txt") == "pubtator"


def test_pubtator_without_blank_lines_between_blocks(tmp_path):
    path = _write(tmp_path, "a.pubtator", "1|t|One\n1|a|Uno.\n2|t|Two\n2|a|Dos.\n")
    assert [d.id for d in read_documents(path)] == ["1", "2"]


def _bioc_collection():
    import bioc

    collection = bioc.BioCCollection()
    collection.source = "test"
    for doc_id, title, abstract, mention in (("11", "Lithium toxicity.", "Lithium caused tremor.", "tremor"),
                                             ("12", "Second.", "No mention here.", None)):
        doc = bioc.BioCDocument()
        doc.id = doc_id
        for offset, kind, text in ((0, "title", title), (len(title) + 1, "abstract", abstract)):
            p = bioc.BioCPassage()
            p.offset, p.text = offset, text
            p.infons["type"] = kind
            if mention and kind == "abstract":
                ann = bioc.BioCAnnotation()
                ann.id = "1"
                ann.infons.update({"type": "Disease", "identifier": "MESH:D014202"})
                start = offset + text.index(mention)
                ann.add_location(bioc.BioCLocation(start, len(mention)))
                ann.text = mention
                p.add_annotation(ann)
            doc.add_passage(p)
        collection.add_document(doc)
    return collection


@pytest.mark.parametrize("suffix", [".xml", ".json"])
def test_bioc_xml_and_json(tmp_path, suffix):
    import bioc
    from bioc import biocjson

    collection = _bioc_collection()
    text = bioc.dumps(collection) if suffix == ".xml" else biocjson.dumps(collection)
    path = _write(tmp_path, "c" + suffix, text)
    first, second = read_documents(path)
    assert first.id == "11" and first.text == "Lithium toxicity. Lithium caused tremor."
    assert [(p.kind, p.offset) for p in first.passages] == [("title", 0), ("abstract", 18)]
    (e,) = annotations_of(first)
    assert (e.text, e.type, e.concept_ids) == ("tremor", "Disease", ("MESH:D014202",))
    assert second.id == "12" and annotations_of(second) == ()


def test_bioc_json_must_be_a_collection(tmp_path):
    path = _write(tmp_path, "a.json", json.dumps({"text": "not bioc"}))
    with pytest.raises(DataFormatError, match=r"a\.json.*BioC collection.*--input-format"):
        list(read_documents(path))


def test_conll_words_sentences_and_docstart(tmp_path):
    path = _write(tmp_path, "a.conll", "-DOCSTART-\tO\n\nA\tO\nb-c\tB-X\n.\tO\n\nD\tB-Y\n\n"
                                       "-DOCSTART-\tO\n\nE\tO\n")
    first, second = read_documents(path)
    assert first.text == "A b-c . D"
    assert first.meta["sentences"] == [[(0, 1), (2, 5), (6, 7)], [(8, 9)]]
    assert [(e.text, e.type) for e in annotations_of(first)] == [("b-c", "X"), ("D", "Y")]
    assert first.id == "a.conll:3" and second.id == "a.conll:11"


def test_bc5cdr_test_split_as_one_conll_document():
    (doc,) = read_documents(BC5CDR_TEST)
    assert doc.id == "test.tsv"
    assert len(doc.meta["sentences"]) == 4797
    words = [doc.text[s:e] for sentence in doc.meta["sentences"] for s, e in sentence]
    lines = [ln.split("\t")[0] for ln in BC5CDR_TEST.read_text().splitlines() if ln.strip()]
    assert words == lines
    tags = [ln.split("\t")[-1] for ln in BC5CDR_TEST.read_text().splitlines() if ln.strip()]
    assert len(annotations_of(doc)) == sum(t.startswith("B-") for t in tags)
    _check_offsets(doc)


@pytest.mark.parametrize("name, fmt", [("a.txt", "txt"), ("a.jsonl", "jsonl"), ("a.pubtator", "pubtator"),
                                       ("A.PubTator.txt", "pubtator"), ("a.xml", "bioc"), ("a.bioc", "bioc"),
                                       ("a.conll", "conll"), ("a.tsv", "conll"), ("a.iob", "conll")])
def test_format_from_extension(name, fmt):
    assert input_format(name) == fmt


def test_unknown_format_names_the_option_and_choices(tmp_path):
    path = _write(tmp_path, "a.docx", "text")
    with pytest.raises(DataFormatError, match=r"a\.docx.*--input-format.*txt, lines, jsonl, pubtator, bioc, conll"):
        list(read_documents(path))
    with pytest.raises(DataFormatError, match=r"unknown input format 'csv'.*--input-format"):
        list(read_documents(path, "csv"))


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
def test_not_utf8_names_line_and_byte(tmp_path):
    path = _write(tmp_path, "a.txt", b"good line\nbad \xe9 byte\n", mode="b")
    with pytest.raises(DocumentError, match=r"a\.txt:2: not UTF-8 .*byte 4 of the line, byte 14 of the file"):
        list(read_documents(path, "lines"))
    with pytest.raises(DocumentError, match=r"a\.txt:2: not UTF-8 .*byte 4 of the line"):
        list(read_documents(path, "txt"))


def test_binary_files_are_refused(tmp_path):
    nul = _write(tmp_path, "nul.txt", b"abc\x00def", mode="b")
    with pytest.raises(DataFormatError, match=r"nul\.txt: not a text document file: binary"):
        list(read_documents(nul))
    archive = tmp_path / "model.jsonl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x.txt", "hello")
    with pytest.raises(DataFormatError, match=r"model\.jsonl: not a text document file: a zip archive"):
        check_inputs([archive])
    from safetensors.numpy import save_file

    weights = tmp_path / "weights.txt"
    save_file({"w": np.ones((2, 2), dtype=np.float32)}, str(weights))
    with pytest.raises(DataFormatError, match=r"weights\.txt: not a text document file: a safetensors file"):
        check_inputs([weights])
    utf16 = _write(tmp_path, "u.txt", "hello".encode("utf-16"), mode="b")
    with pytest.raises(DataFormatError, match="UTF-16.*re-encode it as UTF-8"):
        check_inputs([utf16])


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DataFormatError, match="no such input file"):
        check_inputs([tmp_path / "nope.txt"])
    with pytest.raises(DataFormatError, match="is a folder"):
        check_inputs([tmp_path])


@pytest.mark.parametrize("content, fmt, message", [
    ("   \n", "txt", r"a\.x: document 'a\.x' is empty"),
    ('{"id": "z", "text": "  "}\n', "jsonl", r"a\.x:1: document 'z' is empty"),
    ('{"title": "t"}\n', "jsonl", r"a\.x:1: the record has no 'text'"),
    ('{"text": 3}\n', "jsonl", r"a\.x:1: the record has a 'text' that is a int"),
    ('["a list"]\n', "jsonl", r"a\.x:1: a JSON Lines record must be an object"),
    ('{"text": "x"\n', "jsonl", r"a\.x:1: not valid JSON"),
    ('{"text": "abc", "entities": [{"start": 0, "end": 2, "text": "ab"}, {"start": 1, "end": 9}]}\n', "jsonl",
     r"a\.x:1 \(document 'a\.x:1'\): annotation offsets 1-9 are outside the text"),
    ("1|t|Title\n1|a|Abstract here.\n1\t0\t5\tTitle\tX\t\n1\t6\t14\tAbstrac\tX\t\n", "pubtator",
     r"a\.x:4 \(document '1'\): annotation 6-14 says 'Abstrac' but the text there is 'Abstract'"),
    ("1|t|\n1|a|\n", "pubtator", r"a\.x:1: document '1' is empty"),
    ("1|t|T\nnot pubtator\n", "pubtator", r"a\.x:2: not a PubTator line"),
    ("", "conll", r"a\.x: document 'a\.x' is empty"),
])
def test_bad_documents_name_their_place(tmp_path, content, fmt, message):
    path = _write(tmp_path, "a.x", content)
    with pytest.raises(DocumentError, match=message):
        list(read_documents(path, fmt))


def test_skip_bad_reports_and_goes_on(tmp_path):
    path = _write(tmp_path, "a.jsonl", '{"text": "one"}\n{"title": "no text"}\nnot json\n{"text": "four"}\n')
    reasons = []
    docs = list(read_documents(path, skip_bad=True, on_skip=reasons.append))
    assert [d.text for d in docs] == ["one", "four"]
    assert len(reasons) == 2 and "a.jsonl:2" in reasons[0] and "a.jsonl:3" in reasons[1]
    bad_pubtator = _write(tmp_path, "b.pubtator", "1|t|T\n1\t0\t3\tTxx\tX\t\n\n" + PUBTATOR)
    reasons.clear()
    assert [d.id for d in read_documents(bad_pubtator, skip_bad=True, on_skip=reasons.append)] == ["100", "200"]
    assert "b.pubtator:2" in reasons[0]
    binary = _write(tmp_path, "c.jsonl", b"\x00\x01", mode="b")
    with pytest.raises(DataFormatError, match="not a text document file"):  # a whole file: still an error
        list(read_documents([path, binary], skip_bad=True, on_skip=reasons.append))


def test_check_inputs_fails_fast_on_the_first_records(tmp_path):
    path = _write(tmp_path, "a.jsonl", '{"no": "text"}\n' + '{"text": "x"}\n' * 10)
    start = time.perf_counter()
    with pytest.raises(DocumentError, match=r"a\.jsonl:1"):
        check_inputs([path])
    assert time.perf_counter() - start < 1.0
    assert check_inputs([path], skip_bad=True) == [(path, "jsonl")]
    late = _write(tmp_path, "b.jsonl", '{"text": "x"}\n' * 5 + "broken\n")
    assert check_inputs(late) == [(late, "jsonl")]  # only the first records are read


def test_reading_is_lazy_and_memory_stays_flat(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w") as fh:
        for i in range(30_000):
            fh.write(json.dumps({"id": f"d{i}", "text": f"Document number {i} mentions aspirin and tremor."}) + "\n")
        fh.write("not json\n")
    stream = read_documents(path)
    assert next(stream).id == "d0"  # the bad last line is not reached yet
    tracemalloc.start()
    count = 0
    try:
        for count, _ in enumerate(stream, start=2):
            if count == 30_000:
                break
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 30_000
    assert peak < 2_000_000, f"reading 30,000 documents one at a time peaked at {peak} bytes"


def test_bioc_xml_is_read_one_document_at_a_time(tmp_path):
    import bioc

    xml = bioc.dumps(_bioc_collection())
    body = xml[xml.index("<document>"):xml.rindex("</collection>")]
    path = tmp_path / "big.xml"
    with open(path, "w") as fh:
        fh.write(xml[:xml.index("<document>")])
        for _ in range(1500):
            fh.write(body)
        fh.write("</collection>\n")
    broken = tmp_path / "broken.xml"
    broken.write_text(path.read_text()[:-200] + "<document><id>x</oops>")
    stream = read_documents(broken)
    assert next(stream).id == "11"  # streamed: the broken end is not parsed yet
    with pytest.raises(DataFormatError, match=r"broken\.xml:\d+: not valid XML"):
        list(stream)
    tracemalloc.start()
    try:
        n = sum(1 for _ in read_documents(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 3000
    assert peak < 0.2 * path.stat().st_size, f"peak {peak} bytes for a {path.stat().st_size}-byte file"


# ---------------------------------------------------------------------------
# writers and round trips
# ---------------------------------------------------------------------------
def _tagged(doc: Document) -> TaggedDocument:
    return TaggedDocument(doc, (), annotations_of(doc))


def _same(a: Document, b: Document, kinds: bool = True) -> None:
    assert (a.id, a.text) == (b.id, b.text)
    assert [(p.offset, p.text) + ((p.kind,) if kinds else ()) for p in a.passages] == \
        [(p.offset, p.text) + ((p.kind,) if kinds else ()) for p in b.passages]
    assert [(e.start, e.end, e.text, e.type, e.concept_ids) for e in annotations_of(a)] == \
        [(e.start, e.end, e.text, e.type, e.concept_ids) for e in annotations_of(b)]


@pytest.mark.parametrize("out", ["back.pubtator", "back.jsonl", "back.bioc.xml"])
@pytest.mark.parametrize("source", ["pubtator", "bioc-xml", "bioc-json", "jsonl"])
def test_round_trip(tmp_path, source, out):
    import bioc
    from bioc import biocjson

    if source == "pubtator":
        path = _write(tmp_path, "in.pubtator", PUBTATOR)
    elif source == "bioc-xml":
        path = _write(tmp_path, "in.xml", bioc.dumps(_bioc_collection()))
    elif source == "bioc-json":
        path = _write(tmp_path, "in.json", biocjson.dumps(_bioc_collection()))
    else:
        rows = [{"id": "j1", "title": "Cocaine use.", "text": "Chest pain after cocaine.",
                 "entities": [{"start": 0, "end": 7, "type": "Chemical", "concept_ids": ["D003042"]},
                              {"start": 13, "end": 23, "type": "Disease"}]}]
        path = _write(tmp_path, "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    docs = list(read_documents(path))
    assert any(annotations_of(d) for d in docs)
    n = write_documents((_tagged(d) for d in docs), tmp_path / out)
    assert n == len(docs)
    back = list(read_documents(tmp_path / out))
    assert len(back) == len(docs)
    for a, b in zip(docs, back):
        _same(a, b, kinds=not (source == "jsonl" and out.endswith("pubtator")))  # PubTator: title, abstract


def test_jsonl_writer_keeps_score_and_source(tmp_path):
    from priorkit.documents import Entity

    doc = Document("d", "Aspirin and tremor.")
    ents = (Entity(0, 7, "Aspirin", "Chemical", 0.875, ("MESH:D001241",), "model"),
            Entity(12, 18, "tremor", "Disease", 0.5, (), "dictionary"))
    line = writer_for("jsonl").document(TaggedDocument(doc, (), ents))
    record = json.loads(line)
    assert record == {"id": "d", "text": doc.text, "entities": [e.as_dict() for e in ents]}
    path = tmp_path / "t.jsonl"
    path.write_text(line)
    assert annotations_of(next(read_documents(path))) == ents
    bioc_path = tmp_path / "t.bioc.xml"
    write_documents([TaggedDocument(doc, (), ents)], bioc_path)
    assert annotations_of(next(read_documents(bioc_path))) == ents


def test_pubtator_writer_flattens_line_breaks_and_refuses_bad_ids(tmp_path):
    doc = Document("x", "Line one.\nLine two has aspirin.")
    from priorkit.documents import Entity

    ent = Entity(23, 30, "aspirin", "Chemical", 0.9)
    path = tmp_path / "o.pubtator"
    write_documents([TaggedDocument(doc, (), (ent,))], path)
    (back,) = read_documents(path)
    assert back.text == doc.text.replace("\n", " ")
    assert [(e.start, e.end, e.text) for e in annotations_of(back)] == [(23, 30, "aspirin")]
    with pytest.raises(DocumentError, match=r"document 'a\|b'.*PubTator id"):
        writer_for("pubtator").document(TaggedDocument(Document("a|b", "t"), (), ()))


def test_bioc_output_is_one_collection_valid_for_the_bioc_library(tmp_path):
    import bioc

    path = _write(tmp_path, "in.pubtator", PUBTATOR)
    out = tmp_path / "o.xml"
    write_documents((_tagged(d) for d in read_documents(path)), out)
    collection = bioc.loads(out.read_text())
    assert [d.id for d in collection.documents] == ["100", "200"]
    ann = collection.documents[0].passages[0].annotations[0]
    assert (ann.infons["type"], ann.infons["identifier"], ann.locations[0].offset) == ("Chemical", "D006220", 0)


def test_output_format_and_failed_write_leaves_no_file(tmp_path):
    assert format_of("x.jsonl") == "jsonl" and format_of("x.PUBTATOR") == "pubtator"
    assert format_of("x.bioc.xml") == "bioc" and format_of("x.out", "bioc") == "bioc"
    with pytest.raises(DataFormatError, match=r"x\.csv.*--format \(one of jsonl, pubtator, bioc\)"):
        format_of("x.csv")

    def failing():
        yield _tagged(Document("a", "text"))
        raise RuntimeError("tagger died")

    with pytest.raises(RuntimeError):
        write_documents(failing(), tmp_path / "o.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_errors_are_priorkit_errors():
    assert issubclass(DocumentError, PriorkitError) and issubclass(DocumentError, DataFormatError)


# ---------------------------------------------------------------------------
# the CoNLL helpers
# ---------------------------------------------------------------------------
def test_detokenize_rebuilds_bc5cdr_spacing():
    words = "a 56 - year - old woman ( 2 . 5 mcg / kg per min ) , 10 % , P = . 03 , 5 - FU , " \
            "Parkinson ' s and Graves ' disease , K ( + ) - channels \" quoted \" .".split()
    text, (offsets,) = detokenize([words])
    assert text == ("a 56-year-old woman (2.5 mcg/kg per min), 10%, P = .03, 5-FU, Parkinson's and "
                    "Graves' disease, K (+)-channels \"quoted\".")
    assert [text[s:e] for s, e in offsets] == words
    two, spans = detokenize([["One", "."], ["Two", "."]])
    assert two == "One. Two." and spans[1] == [(5, 8), (8, 9)]


def test_bio_spans():
    assert bio_spans(["B-X", "I-X", "O", "I-Y", "B-Y", "B-Y", "I-X"]) == [
        (0, 2, "X"), (3, 4, "Y"), (4, 5, "Y"), (5, 6, "Y"), (6, 7, "X")]
    assert bio_spans(["S-X", "B-Y", "E-Y", "O"]) == [(0, 1, "X"), (1, 3, "Y")]


def test_example_abstract_is_the_first_test_abstract_rebuilt():
    from priorkit.datasets import read_conll

    path = ROOT / "data" / "examples" / "bc5cdr-abstract.txt"
    text, _ = detokenize([s.words for s in read_conll(BC5CDR_TEST, limit=4)])
    assert path.read_text() == text + "\n"
    assert text.startswith("Torsade de pointes") and text.endswith("Dubutamine are discussed.")
    (doc,) = read_documents(path)
    assert doc.id == "bc5cdr-abstract.txt" and doc.text == text + "\n"


def test_any_tagged_document_round_trips_through_every_writer(tmp_path):
    """Property: a document of one to three passages with any characters (XML's specials,
    control characters, line breaks, tabs) and entities anywhere comes back from every writer
    with its offsets; PubTator and BioC write what they cannot hold as spaces of the same length."""
    from hypothesis import given, settings, strategies as st

    from priorkit.documents import Entity

    chars = st.sampled_from(list("ab Z9.&<>\"'|\t\n\r\x0c") + ["é", "α", "\u2028"])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.text(chars, min_size=1, max_size=30), min_size=1, max_size=3), st.data())
    def check(parts, data):
        doc = Document.from_passages("d1", [(k, p) for k, p in zip(("title", "abstract", "body"), parts)])
        if not doc.text.strip():
            return
        n = len(doc.text)
        ents = []
        for _ in range(data.draw(st.integers(0, 3))):
            s = data.draw(st.integers(0, n - 1))
            e = data.draw(st.integers(s + 1, n))
            ents.append(Entity(s, e, doc.text[s:e], "T", 0.5, ("X:1",) if s % 2 else ()))
        ents.sort(key=lambda x: (x.start, x.end))
        for out, fmt in (("o.jsonl", "jsonl"), ("o.pubtator", "pubtator"), ("o.bioc.xml", "bioc")):
            path = tmp_path / out
            write_documents([TaggedDocument(doc, (), tuple(ents))], path)
            (back,) = read_documents(path)
            assert len(back.text) == n
            if fmt == "jsonl":
                assert back.text == doc.text and back.passages == doc.passages
            assert [(e.start, e.end, e.concept_ids) for e in annotations_of(back)] == \
                [(e.start, e.end, e.concept_ids) for e in ents]

    check()


def test_any_bytes_give_documents_or_a_priorkit_error(tmp_path):
    """Fuzz: files made of pieces of every format (and bad bytes) in every format either read
    into non-empty documents or stop with a PriorkitError, never another exception."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    pieces = st.sampled_from([
        b"1|t|Title", b"1|a|Abs", b"1\t0\t3\tTit\tX\tD1", b"\n", b"\t", b"{", b"}", b'"text"', b":", b'"id"', b"[",
        b"]", b'"documents"', b'"passages"', b"<collection>", b"<document>", b"<passage>", b"<offset>0</offset>",
        b"</passage>", b"</document>", b"</collection>", b"<text>", b"</text>", b"<annotation id='1'>",
        b"<location offset='0' length='2'/>", b"</annotation>", b"-DOCSTART-", b"B-X", b"I-X", b"O", b"\xe9",
        b"a", b" ", b"0"])

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(pieces, max_size=30), st.sampled_from(FORMATS), st.booleans())
    def check(parts, fmt, skip):
        path = tmp_path / "f.x"
        path.write_bytes(b"".join(parts))
        try:
            for doc in read_documents(path, fmt, skip_bad=skip, on_skip=lambda reason: None):
                assert doc.text.strip()
        except PriorkitError:
            pass

    check()

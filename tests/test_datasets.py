"""Dataset readers on the real STS-B and BC5CDR files, and on malformed input."""
from __future__ import annotations

import json

import pytest

from priorkit.datasets import (
    Example,
    TaggedSentence,
    detect_format,
    read_conll,
    read_dataset,
    read_jsonl,
    read_stsb,
    read_table,
)
from priorkit.errors import DataFormatError
from priorkit.resources import embedded, stsb_path


# ---- real data ------------------------------------------------------------
@pytest.mark.parametrize("split,count", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_counts_and_fields(split, count):
    path = stsb_path(split)
    assert detect_format(path) == "stsb"
    data = read_dataset(path)
    assert len(data) == count
    assert all(isinstance(e, Example) and isinstance(e.label, float) and 0 <= e.label <= 5 for e in data)
    # independent reference: the raw lines, split on tabs without any quote handling
    raw = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(e.text_a, e.text_b, e.label) for e in data] == [(f[5], f[6], float(f[4])) for f in raw]
    # the extra trailing source fields of some rows never leak into the texts
    assert sum(len(f) > 7 for f in raw) > 0
    assert not any("\t" in e.text_b or "Europe Media Monitor" in e.text_b for e in data)


def test_stsb_keeps_bare_quotes():
    path = stsb_path("train")
    data = read_stsb(path)
    raw_quotes = sum('"' in line for line in path.read_text(encoding="utf-8").splitlines())
    assert raw_quotes > 0
    assert sum('"' in e.text_a or '"' in e.text_b for e in data) == raw_quotes


def test_bc5cdr_sentences_tokens_and_tags():
    path = embedded("bc5cdr", "train.tsv")
    assert detect_format(path) == "conll"
    data = read_dataset(path)
    assert len(data) == 4560
    assert all(isinstance(s, TaggedSentence) and len(s.words) == len(s.tags) > 0 for s in data)
    lines = [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert sum(len(s.words) for s in data) == len(lines)
    assert data[0].words[0] == lines[0].split("\t")[0] and data[0].tags[0] == lines[0].split("\t")[1]
    tags = {t for s in data for t in s.tags}
    assert tags == {"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}
    words, none = data[0].inputs()
    assert words == list(data[0].words) and none is None
    assert len(read_dataset(embedded("bc5cdr", "devel.tsv"), limit=7)) == 7


# ---- generic tables and JSON lines ---------------------------------------
def test_csv_with_quotes_and_guessed_columns(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('sentence1,sentence2,label\n"A man, a plan","A canal",1\nHi,"He said ""yo""",0.5\n\n')
    data = read_dataset(path)
    assert detect_format(path) == "csv"
    assert data == [Example("A man, a plan", "A canal", 1), Example("Hi", 'He said "yo"', 0.5)]


def test_columns_by_name_and_index(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("id,q,a,gold\n1,what,that,yes\n2,who,him,no\n")
    by_name = read_dataset(path, text_a="q", text_b="a", label="gold")
    by_index = read_dataset(path, text_a=1, text_b="2", label=3)
    assert by_name == by_index == [Example("what", "that", "yes"), Example("who", "him", "no")]
    single = read_dataset(path, text_a="q")
    assert single[0] == Example("what", None, None)
    headless = tmp_path / "h.csv"
    headless.write_text("x,y\nz,w\n")
    assert read_table(headless, header=False, text_a=0, text_b=1) == [Example("x", "y"), Example("z", "w")]


def test_tsv_does_not_interpret_quotes(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text('text_a\ttext_b\tlabel\n"quoted start\tand "inner" quote\t3\n')
    assert detect_format(path) == "tsv"
    assert read_dataset(path) == [Example('"quoted start', 'and "inner" quote', 3)]


def test_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [{"premise": "a b", "hypothesis": "c", "label": "entailment"}, {"premise": "d", "hypothesis": "e", "label": 2}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert read_dataset(path) == [Example("a b", "c", "entailment"), Example("d", "e", 2)]
    assert read_jsonl(path, text_a="hypothesis") == [Example("c"), Example("e")]


def test_format_override(tmp_path):
    path = tmp_path / "stsb.txt"
    path.write_text("g\tf\t2012\t1\t4.5\tA b.\tC d.\n")
    assert detect_format(path) == "stsb"
    assert read_dataset(path, format="stsb") == [Example("A b.", "C d.", 4.5)]
    other = tmp_path / "other.txt"
    other.write_text("a\tb\n")
    with pytest.raises(DataFormatError, match="7 tab-separated"):
        read_dataset(other, format="stsb")


# ---- malformed input: errors name the file and the line -------------------
def test_stsb_short_row_names_file_and_line(tmp_path):
    path = tmp_path / "sts-bad.csv"
    good = "g\tf\t2012\t1\t4.5\tA b.\tC d."
    path.write_text(f"{good}\n{good}\ng\tf\t2012\t1\t4.5\tonly one sentence\n")
    with pytest.raises(DataFormatError, match=r"sts-bad\.csv:3: expected at least 7"):
        read_stsb(path)
    path.write_text(f"{good}\ng\tf\t2012\t1\tfive\tA\tB\n")
    with pytest.raises(DataFormatError, match=r"sts-bad\.csv:2: score .* 'five'"):
        read_stsb(path)
    path.write_text("g\tf\t2012\t1\t7.5\tA\tB\n")
    with pytest.raises(DataFormatError, match=r":1: score 7.5 is outside"):
        read_stsb(path)


def test_conll_errors_name_the_line(tmp_path):
    path = tmp_path / "ner.tsv"
    path.write_text("-DOCSTART-\tO\n\nAspirin\tB-Chemical\nworks\tO\n\nbad-line-without-tag\n")
    with pytest.raises(DataFormatError, match=r"ner\.tsv:6: expected 'token<TAB>tag'"):
        read_conll(path)
    path.write_text("Aspirin\tB-Chemical\nworks\tMAYBE\n")
    with pytest.raises(DataFormatError, match=r"ner\.tsv:2: tag 'MAYBE' is not a BIO tag"):
        read_conll(path)


def test_conll_space_separated_multi_column(tmp_path):
    path = tmp_path / "eng.conll"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n")
    assert read_dataset(path) == [TaggedSentence(("EU", "rejects"), ("B-ORG", "O")),
                                  TaggedSentence(("Peter",), ("B-PER",))]


def test_csv_wrong_field_count_and_missing_column(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text_a,label\nfine,1\nnot,fine,2\n")
    with pytest.raises(DataFormatError, match=r"d\.csv:3: 3 fields, but the header has 2"):
        read_dataset(path)
    with pytest.raises(DataFormatError, match=r"no column 'sentence' .*columns: text_a, label"):
        read_dataset(path, text_a="sentence")
    path.write_text("foo,bar\n1,2\n")
    with pytest.raises(DataFormatError, match="--text-a"):
        read_dataset(path)


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"\n')
    with pytest.raises(DataFormatError, match=r"d\.jsonl:2: invalid JSON"):
        read_dataset(path)
    path.write_text('{"text": "a"}\n{"txt": "b"}\n')
    with pytest.raises(DataFormatError, match=r"d\.jsonl:2: no key 'text'"):
        read_dataset(path)


def test_bad_encoding_names_the_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"text\nok\nbad \xff byte\n")
    with pytest.raises(DataFormatError, match=r"d\.csv:3: not UTF-8"):
        read_dataset(path)


def test_missing_file_and_column_options_on_fixed_formats(tmp_path):
    with pytest.raises(DataFormatError, match="does not exist"):
        read_dataset(tmp_path / "nope.csv")
    with pytest.raises(DataFormatError, match="do not apply"):
        read_dataset(stsb_path("dev"), text_a="x")

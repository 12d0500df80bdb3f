"""Malformed pipeline files and data files: every error names the file, the line and the field.

Each case writes a real malformed file to ``tmp_path`` and loads it the way
``priorkit run`` does (``load_config``, then ``load_data``); the message must
hold ``FILE:LINE`` (and ``:COLUMN`` where YAML or JSON knows it) and the
field or column at fault, so the user can go straight to the spot.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from priorkit.cli import main
from priorkit.errors import DataFormatError, PriorkitError
from priorkit.config import ConfigError, load_config
from priorkit.training.data import load_data

DATA = "data:\n  train: {source: stsb}\n  eval: {source: stsb, split: dev}\n"  # lines 1-3


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


# ---- pipeline YAML -----------------------------------------------------------------
@pytest.mark.parametrize("body, where, field, words", [
    # syntax: line and column from the YAML parser
    (DATA + "train:\n  epochs: [1, 2\n", r":6:1", None, "invalid YAML"),
    (DATA + "train:\n\tepochs: 2\n", r":5:1", None, "cannot start any token"),
    (DATA + "train: *base\n", r":4:8", None, "undefined alias 'base'"),
    # unknown keys, with the close match
    (DATA + "train:\n  epoch: 5\n", r":5", "train.epoch", "did you mean 'train.epochs'"),
    (DATA + "trian:\n  epochs: 5\n", r":4", "trian", "did you mean 'train'"),
    (DATA + "prior:\n  attention:\n    moed: bias\n", r":6", "prior.attention.moed",
     "did you mean 'prior.attention.mode'"),
    # wrong types
    (DATA + "train:\n  epochs: 'five'\n", r":5", "train.epochs", "expected a number, got 'five'"),
    (DATA + "train:\n  batch_size: 3.5\n", r":5", "train.batch_size", "expected an integer"),
    (DATA + "train:\n  progress: maybe\n", r":5", "train.progress", "expected true or false"),
    (DATA + "train: 5\n", r":4", "train", "expected a mapping (a section)"),
    (DATA + "sweep:\n  seeds: [0, 1, x]\n", r":5", "sweep.seeds.2", "expected an integer, got 'x'"),
    (DATA + "task:\n  type: regresion\n", r":5", "task.type", "did you mean 'regression'"),
    (DATA + "task:\n  decode: viterbi\n", r":5", "task.decode", "is for token classification, not regression"),
    (DATA + "task:\n  type: token-classification\n  labels: [O, PER]\n  decode: viterbi\n", r":7", "task.decode",
     "'PER' is none of them; decode with argmax"),
    (DATA + "task:\n  decode: beam\n", r":5", "task.decode", "viterbi"),
    (DATA + "task:\n  o_bias: 0.5\n", r":5", "task.o_bias", "shifts the tag O of token classification"),
    (DATA + "task:\n  type: token-classification\n  o_bias: .inf\n", r":6", "task.o_bias", "must be a finite number"),
    # missing required sections (reported at the parent's line)
    ("name: x\ndata:\n  eval: {source: stsb}\n", r":2", "data.train", "is required"),
    ("name: x\ndata:\n  train: {source: stsb}\n", r":2", "data", "give data.eval"),
    ("name: x\ndata:\n  train: {split: dev}\n  eval: {source: stsb}\n", r":3", "data.train",
     "give exactly one of source"),
    # what PyYAML would accept silently
    (DATA + "train:\n  epochs: 2\n  epochs: 3\n", r":6:3", "train.epochs", "given twice (first on line 5)"),
    (DATA + "sweep:\n  seeds: &s [1, {a: *s}]\n", r":5:\d+", "sweep.seeds.1.a", "cyclic"),
    (DATA.encode() + b"description: caf\xe9\n", r":4:17", None, "not UTF-8"),
    ("- a list\n- not sections\n", r":1", None, "must be a mapping of sections"),
])
def test_malformed_pipeline_yaml(tmp_path, body, where, field, words):
    path = _write(tmp_path / "bad.yaml", body)
    msg = _config_error(path)
    assert re.match(rf"{re.escape(str(path))}{where}: ", msg), msg
    if field is not None:
        assert f": {field}: " in msg, msg
    assert words in msg, msg


def test_unknown_key_lists_the_known_fields(tmp_path):
    msg = _config_error(_write(tmp_path / "p.yaml", DATA + "model:\n  max_len: 64\n"))
    assert msg.startswith(f"{tmp_path / 'p.yaml'}:5: model.max_len: unknown field")
    assert "did you mean 'model.max_length'" in msg and "(known: name_or_path, max_length)" in msg


def test_pipeline_file_that_is_a_folder_or_missing(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    assert "dir.yaml cannot be read" in _config_error(tmp_path / "dir.yaml")
    assert "missing.yaml does not exist" in _config_error(tmp_path / "missing.yaml")


def test_cli_prints_the_location_without_a_traceback(tmp_path, capsys):
    path = _write(tmp_path / "p.yaml", DATA + "train:\n  epochs: 'five'\n")
    with pytest.raises(SystemExit) as info:
        main(["run", str(path)])
    assert info.value.code == 1  # a runtime error (a bad file), not a usage error
    err = capsys.readouterr().err
    assert f"error: {path}:5: train.epochs: expected a number, got 'five'" in err
    assert "Traceback" not in err


# ---- data files, read as a pipeline reads them ---------------------------------------
def _pipeline(tmp_path: Path, data_file: Path, task: str = "regression", fmt: str | None = None) -> Path:
    """A valid pipeline whose splits are ``data_file`` (``data.train`` is on line 5)."""
    return _write(tmp_path / "pipe.yaml", f"""
        name: t
        task:
          type: {task}
        data:
          train:
            path: {data_file}
            format: {fmt or 'auto'}
          eval:
            path: {data_file}
    """)


def _data_error(tmp_path: Path, name: str, body: str | bytes, task: str = "regression",
                fmt: str | None = None) -> str:
    data_file = _write(tmp_path / name, body)
    cfg = load_config(_pipeline(tmp_path, data_file, task, fmt))
    with pytest.raises(DataFormatError) as info:
        load_data(cfg)
    msg = str(info.value)
    assert msg.endswith(f"(configured at {tmp_path / 'pipe.yaml'}:5)"), msg  # and the pipeline's spot
    return msg


@pytest.mark.parametrize("name, body, task, fmt, where, words", [
    # CSV / TSV: a wrong column count names the header's columns
    ("d.tsv", "sentence1\tsentence2\tscore\na\tb\t1.0\nc\td\n", "regression", None, ":3:",
     ["2 fields, but the header has 3 (sentence1, sentence2, score)"]),
    ("d.csv", "sentence1,sentence2,score\na,b,1.0\nc,d,2.0\ne,f,3.0,4.0\n", "regression", None, ":4:",
     ["4 fields, but the header has 3 (sentence1, sentence2, score)"]),
    # a non-numeric (or empty, or non-finite) label in a regression task
    ("d.csv", "sentence1,sentence2,score\na,b,1.0\nc,d,high\n", "regression", None, ":3:",
     ["label (column 'score') is 'high', not a number"]),
    ("d.tsv", "sentence1\tsentence2\tlabel\na\tb\t1\nc\td\t\n", "regression", None, ":3:",
     ["label (column 'label') is '', not a number"]),
    ("d.csv", "sentence1,sentence2,score\na,b,1.0\nc,d,nan\n", "regression", None, ":3:",
     ["label (column 'score') is 'nan'"]),
    # an unclosed quote: the line the row starts on
    ("d.csv", 'sentence1,sentence2,score\na,b,1\n"c,d,2\ne,f,3\n', "regression", None, ":3:",
     ["unexpected end of data", "runs to line 4: is a quote left open?"]),
    # JSONL: not JSON (with the column), not an object, a bad label
    ("d.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1}\n{"sentence1": "a", oops}\n',
     "regression", None, ":2:", ["invalid JSON", "at column 20"]),
    ("d.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1}\n\n["a", "b"]\n',
     "regression", None, ":3:", ["expected a JSON object, found list"]),
    ("d.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1}\n'
                '{"sentence1": "a", "sentence2": "b", "label": "x"}\n',
     "regression", None, ":2:", ["label (key 'label') is 'x', not a number"]),
    ("d.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1}\n{"sentence1": "a", "sentence2": "b"}\n',
     "regression", None, ":2:", ["label (key 'label') is missing"]),
    ("d.jsonl", '{"sentence1": "a", "sentence2": "b", "label": 1}\n{"sentence1": "a", "sentence2": 7, "label": 1}\n',
     "regression", None, ":2:", ["'sentence2' is int, not a string"]),
    # CoNLL: a bad tag, a line without a tag
    ("d.conll", "The\tO\ncat\tB-ANIMAL\n\nIt\tO\nsat\tMAYBE\n", "token-classification", None, ":5:",
     ["tag 'MAYBE' is not a BIO tag"]),
    ("d.conll", "The\tO\ncat\n", "token-classification", None, ":2:", ["expected 'token<TAB>tag'"]),
    # STS-B: a bad score, a score out of range, a short row
    ("sts.csv", "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane.\tAn air plane.\n"
                "main-captions\tMSRvid\t2012test\t0004\tfive\tA man.\tA man!\n", "regression", "stsb", ":2:",
     ["score (field 5) is 'five', not a number"]),
    ("sts.csv", "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane.\tAn air plane.\n"
                "main-captions\tMSRvid\t2012test\t0004\t7.5\tA man.\tA man!\n", "regression", "stsb", ":2:",
     ["score 7.5 is outside STS-B's 0-5 range"]),
    ("sts.csv", "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane.\tAn air plane.\n\n"
                "main-captions\tMSRvid\t2012test\t0004\t2.0\tA man.\n", "regression", "stsb", ":3:",
     ["expected at least 7 tab-separated fields", "found 6"]),
    # bytes that are not UTF-8
    ("d.csv", b"sentence1,sentence2,score\na,b,1\ncaf\xe9,d,2\n", "regression", None, ":3:", ["not UTF-8"]),
])
def test_malformed_data_files(tmp_path, name, body, task, fmt, where, words):
    msg = _data_error(tmp_path, name, body, task, fmt)
    assert f"{tmp_path / name}{where}" in msg, msg
    for w in words:
        assert w in msg, msg


def test_text_labels_are_fine_for_classification(tmp_path):
    """The numeric check is the regression task's: classification keeps text labels."""
    data_file = _write(tmp_path / "d.csv", "sentence1,sentence2,label\na,b,yes\nc,d,no\n")
    cfg = load_config(_pipeline(tmp_path, data_file, "pair-classification"))
    assert [e["label"] for e in load_data(cfg)["train"].examples] == ["yes", "no"]
    with pytest.raises(PriorkitError, match=r"d\.csv:2: label \(column 'label'\) is 'yes'"):
        load_data(load_config(_pipeline(tmp_path, data_file, "regression")))


def test_multi_line_quoted_rows_are_reported_where_they_start(tmp_path):
    data_file = _write(tmp_path / "d.csv",
                       'sentence1,sentence2,score\n"a\nstill a",b,1\n"c\nstill c",d,x\n')
    cfg = load_config(_pipeline(tmp_path, data_file))
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(data_file))}:4: label \(column 'score'\) is 'x'"):
        load_data(cfg)


# ---- data.unlabeled must not hold the scored sentences -------------------------------------------
NER_DATA = ("name: overlap\ntask: {type: token-classification}\ndata:\n"
            "  train: {source: bc5cdr, split: train, limit: 20}\n"
            "  eval: {source: bc5cdr, split: devel, sample: 50}\n"
            "  test: {source: bc5cdr, split: test, sample: 50}\n")  # data.unlabeled goes on line 7


def _overlap_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_data(load_config(path))
    (line,) = str(info.value).splitlines()
    return line


def test_unlabeled_devel_split_stops_at_its_line(tmp_path):
    path = _write(tmp_path / "p.yaml", NER_DATA + "  unlabeled: {source: bc5cdr, split: devel}\n")
    msg = _overlap_error(path)
    assert msg.startswith(f"{path}:7: data.unlabeled (") and "holds 50 of the 50 sentences of data.eval" in msg
    assert "data.transductive: true" in msg


def test_unlabeled_text_is_compared_by_its_words_not_its_name(tmp_path):
    """A file under any name holding two test sentences (re-joined, one a line) is caught;
    transductive: true lets it through on purpose."""
    from priorkit.config import DataSource
    from priorkit.training.data import read_source, slice_examples

    src = DataSource(source="bc5cdr", split="test", sample=50)
    test = [e["words"] for e in slice_examples(read_source(src)[0], src) if len(e["words"]) >= 5]
    text = tmp_path / "pubmed-abstracts.txt"
    text.write_text("Aspirin was given to all patients in the cohort .\n" + "\n".join(" ".join(w) for w in test[:2]))
    body = NER_DATA + f"  unlabeled: {{path: {text}, format: text}}\n"
    msg = _overlap_error(_write(tmp_path / "p.yaml", body))
    assert "holds 2 of the" in msg and "sentences of data.test" in msg and " ".join(test[0][:4]) in msg
    ok = load_data(load_config(_write(tmp_path / "q.yaml", body + "  transductive: true\n")))
    assert len(ok["unlabeled"]) == 3
    clean = tmp_path / "clean.txt"
    clean.write_text("Aspirin was given to all patients in the cohort .\nCase report .\n")
    ok = load_data(load_config(_write(tmp_path / "r.yaml", NER_DATA + f"  unlabeled: {{path: {clean}, format: text}}\n")))
    assert len(ok["unlabeled"]) == 2


def test_unlabeled_train_split_passes_although_it_shares_headings_with_test(tmp_path):
    # BC5CDR train and test share only headings of under 5 words ("Case report ."), not compared
    body = NER_DATA.replace("sample: 50}", "}") + "  unlabeled: {source: bc5cdr, split: train}\n"
    splits = load_data(load_config(_write(tmp_path / "p.yaml", body)))
    assert len(splits["unlabeled"]) == 4560 and len(splits["test"]) == 4797

"""Entity scores by character offsets (priorkit/evaluation/offsets.py) and BC5CDR's test split
rebuilt as raw-text documents."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from priorkit.documents import Entity
from priorkit.documents.readers import annotations_of, read_documents
from priorkit.errors import DataFormatError
from priorkit.evaluation.offsets import offset_scores, rebuilt_documents, score_files, write_rebuilt_documents
from priorkit.metrics import ner_metrics

ROOT = Path(__file__).resolve().parents[1]
TEST = ROOT / "data" / "bc5cdr" / "test.tsv"


def test_scores_by_exact_offsets_and_type():
    gold = {"a": [Entity(0, 7, "Aspirin", "Chemical", 1.0), Entity(12, 18, "tremor", "Disease", 1.0)],
            "b": [{"start": 3, "end": 9, "type": "Disease"}]}
    predicted = {"a": [Entity(0, 7, "Aspirin", "Chemical", 0.9),      # right
                       Entity(12, 17, "tremo", "Disease", 0.9),        # wrong end
                       Entity(12, 18, "tremor", "Chemical", 0.9)]}     # wrong type; b: nothing found
    scores = offset_scores(gold, predicted)
    assert (scores.overall.tp, scores.overall.fp, scores.overall.fn) == (1, 2, 2)
    assert scores.overall.precision == pytest.approx(1 / 3) and scores.overall.recall == pytest.approx(1 / 3)
    assert (scores.per_type["Disease"].tp, scores.per_type["Disease"].fp, scores.per_type["Disease"].fn) == (0, 1, 2)
    assert scores.per_type["Chemical"].f1 == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    with pytest.raises(DataFormatError, match="'z'"):
        offset_scores(gold, {"z": []})


def test_rebuilt_split_keeps_every_word_and_entity():
    docs = rebuilt_documents(TEST)
    lines = TEST.read_text().splitlines()
    assert sum(len(d.offsets) for d in docs) == 4797 and len(docs) == 480
    words = [ln.split("\t")[0] for ln in lines if ln.strip()]
    assert [d.text[s:e] for d in docs for sent in d.offsets for s, e in sent] == words
    assert sum(len(d.entities) for d in docs) == sum(ln.endswith("\tB-Chemical") or ln.endswith("\tB-Disease")
                                                     for ln in lines)
    (whole,) = rebuilt_documents(TEST, per_document=0)
    assert len(whole.offsets) == 4797


def test_offset_scores_equal_seqeval_on_words():
    """Scoring through offsets gives seqeval's numbers on the same entities: a prediction that
    drops every third gold entity and gives every fifth the other type."""
    docs = rebuilt_documents(TEST, per_document=25)[:20]
    other = {"Chemical": "Disease", "Disease": "Chemical"}
    gold, predicted, y_true, y_pred = {}, {}, [], []
    k = 0
    for d in docs:
        gold[d.id], predicted[d.id] = [], []
        where = {s: (si, wi) for si, sent in enumerate(d.offsets) for wi, (s, _) in enumerate(sent)}
        ends = {e: (si, wi) for si, sent in enumerate(d.offsets) for wi, (_, e) in enumerate(sent)}
        true = [["O"] * len(sent) for sent in d.offsets]
        pred = [["O"] * len(sent) for sent in d.offsets]
        for s, e, t in d.entities:
            k += 1
            gold[d.id].append({"start": s, "end": e, "type": t})
            guesses = [] if k % 3 == 0 else [other[t] if k % 5 == 0 else t]
            for kind, tags in [(t, true)] + [(g, pred) for g in guesses]:
                (si, a), (_, b) = where[s], ends[e]
                tags[si][a:b + 1] = ["B-" + kind] + ["I-" + kind] * (b - a)
            predicted[d.id] += [{"start": s, "end": e, "type": g} for g in guesses]
        y_true += true
        y_pred += pred
    scores = offset_scores(gold, predicted)
    reference = ner_metrics(y_true, y_pred)
    assert scores.overall.tp > 100 and scores.overall.fp > 10 and scores.overall.fn > 100
    for key in ("precision", "recall", "f1"):
        assert getattr(scores.overall, key) == pytest.approx(reference[key]), key


def test_written_split_scores_itself_perfectly(tmp_path):
    gold = write_rebuilt_documents(TEST, tmp_path / "test.jsonl", per_document=50)
    first = json.loads(gold.read_text().splitlines()[0])
    assert set(first) == {"id", "text", "sentences", "entities"} and first["sentences"] == [0, 50]
    docs = list(read_documents(gold))
    assert len(docs) == 96
    assert all(doc.text[e.start:e.end] == e.text for doc in docs for e in annotations_of(doc))
    scores = score_files(gold, gold)
    assert scores.overall.f1 == 1.0 and scores.overall.fn == 0
    # a prediction file with one entity dropped from the first document
    rows = [json.loads(x) for x in gold.read_text().splitlines()]
    dropped = rows[0]["entities"].pop()
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = score_files(gold, pred)
    assert scores.overall.fn == 1 and scores.per_type[dropped["type"]].fn == 1 and scores.overall.fp == 0
    rows[1]["text"], rows[1]["entities"] = rows[1]["text"].upper(), []
    pred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataFormatError, match="another text"):
        score_files(gold, pred)


def test_both_sides_of_the_comparison_with_a_real_tagger(tmp_path, tiny_bert_dir):
    """The lead's comparison end to end on the first 30 test sentences with a tiny real NER model:
    the CoNLL side and the raw-text side have the same documents, the tagger's outputs score
    against each gold, and one side's output is refused against the other side's gold (other documents)."""
    import priorkit
    from priorkit.documents import write_documents
    from priorkit.evaluation.offsets import write_chunked_conll
    from support.tagging import train_tiny_ner

    head = tmp_path / "head.tsv"
    blocks = TEST.read_text().split("\n\n")[:30]
    head.write_text("\n\n".join(blocks) + "\n\n")
    conll = write_chunked_conll(head, tmp_path / "docs.conll", per_document=10)
    raw = write_rebuilt_documents(head, tmp_path / "docs.jsonl", per_document=10)
    a, b = list(read_documents(conll)), list(read_documents(raw))
    assert len(a) == len(b) == 3
    assert [len(annotations_of(x)) for x in a] == [len(annotations_of(x)) for x in b]
    assert [[e.text.replace(" ", "") for e in annotations_of(x)] for x in a] == \
        [[e.text.replace(" ", "") for e in annotations_of(x)] for x in b]
    run_dir = tmp_path / "ner"
    run_dir.mkdir()
    tagger = priorkit.load_model(train_tiny_ner(run_dir, tiny_bert_dir))
    for gold, name in ((conll, "tagged-conll.jsonl"), (raw, "tagged-raw.jsonl")):
        write_documents(tagger.tag_documents(read_documents(gold)), tmp_path / name)
        scores = score_files(gold, tmp_path / name)
        n_gold = sum(len(annotations_of(x)) for x in read_documents(gold))
        assert scores.overall.tp + scores.overall.fn == n_gold
    with pytest.raises(DataFormatError):
        score_files(raw, tmp_path / "tagged-conll.jsonl")


def test_priorkit_score_prints_the_offset_scores_of_two_files(tmp_path):
    """The command line's ``priorkit score``: a copy of the gold with one entity dropped and one
    retyped scores as offset_scores says, in the table and as JSON."""
    from click.testing import CliRunner

    from priorkit.cli import cli

    gold = write_rebuilt_documents(TEST, tmp_path / "gold.jsonl", per_document=50)
    records = [json.loads(line) for line in gold.read_text().splitlines()][:3]
    (tmp_path / "gold3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    records[0]["entities"] = records[0]["entities"][1:]
    records[1]["entities"][0]["type"] = {"Chemical": "Disease", "Disease": "Chemical"}[records[1]["entities"][0]["type"]]
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    expected = score_files(tmp_path / "gold3.jsonl", tmp_path / "pred.jsonl")
    assert (expected.overall.fp, expected.overall.fn) == (1, 2)
    result = CliRunner().invoke(cli, ["score", str(tmp_path / "gold3.jsonl"), str(tmp_path / "pred.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(expected.as_dict()))
    table = CliRunner().invoke(cli, ["score", str(tmp_path / "gold3.jsonl"), str(tmp_path / "pred.jsonl")])
    assert table.exit_code == 0 and f"{expected.overall.f1:7.4f}" in table.output.splitlines()[1]

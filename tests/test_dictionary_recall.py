"""Recall inside and outside the dictionary (priorkit/evaluation/dictionary_recall.py): by hand on
tags made here, and on real BC5CDR test sentences tagged by the real HPO + MeSH dictionary."""
from __future__ import annotations

import pytest

from priorkit.evaluation.dictionary_recall import DictionaryRecall, dictionary_recall, recall_table


def test_gold_entities_split_by_exact_dictionary_tags():
    gold = [["B-Chemical", "O", "B-Disease", "I-Disease", "O", "B-Disease"]]
    # exact: the chemical; the first disease only in part (one word of two); the last with the wrong type
    dictionary = [["B-Chemical", "O", "B-Disease", "O", "O", "B-Chemical"]]
    predicted = [["O", "O", "B-Disease", "I-Disease", "O", "B-Disease"]]
    r = dictionary_recall(predicted, gold, dictionary)
    assert (r.gold_dict, r.found_dict, r.gold_other, r.found_other) == (1, 0, 2, 2)
    assert (r.recall_dict, r.recall_other, r.gold) == (0.0, 100.0, 3)
    assert r.recall == pytest.approx(200 / 3) and r.coverage == pytest.approx(100 / 3)
    # a boundary error is a miss, wherever the entity is
    r = dictionary_recall([["B-Chemical", "O", "B-Disease", "O", "O", "O"]], gold, dictionary)
    assert (r.found_dict, r.found_other) == (1, 0)
    assert r.as_dict()["recall_dict"] == 100.0


def test_predictions_split_into_dictionary_entities_and_the_others():
    gold = [["B-Chemical", "O", "B-Disease", "I-Disease", "O", "B-Disease", "O"]]
    dictionary = [["B-Chemical", "O", "B-Disease", "O", "O", "O", "B-Chemical"]]
    # predicted: the chemical (a dictionary entity, right), the last dictionary match (wrong), the
    # two-word disease (beyond the dictionary, right), a disease on word 4 (beyond it, wrong)
    predicted = [["B-Chemical", "O", "B-Disease", "I-Disease", "B-Disease", "O", "B-Chemical"]]
    r = dictionary_recall(predicted, gold, dictionary)
    assert (r.pred_dict, r.right_dict, r.pred_other, r.right_other) == (2, 1, 2, 1)
    assert (r.precision_dict, r.precision_other) == (50.0, 50.0)
    # the predicted part with other bounds than the dictionary's is "beyond the dictionary" too
    r = dictionary_recall([["B-Chemical", "I-Chemical", "O", "O", "O", "O", "O"]], gold, dictionary)
    assert (r.pred_dict, r.pred_other, r.right_other, r.precision_other) == (0, 1, 0, 0.0)
    assert {"precision_dict", "precision_other", "pred_other"} <= set(r.as_dict())
    # nothing predicted: 0, not a division by zero
    r = dictionary_recall([["O"] * 7], gold, dictionary)
    assert (r.precision_dict, r.precision_other) == (0.0, 0.0)


def test_the_others_split_into_other_bounds_and_no_match():
    gold = [["B-Disease", "I-Disease", "O", "B-Chemical", "O", "B-Disease", "O", "O"]]
    # "essential hypertension" matched where the gold has only the second word; the chemical matched as a
    # disease; the last disease touched by no match; a match on words the gold leaves O changes nothing
    dictionary = [["B-Disease", "I-Disease", "I-Disease", "B-Disease", "O", "O", "O", "B-Chemical"]]
    gold[0][:2] = ["O", "B-Disease"]
    predicted = [["O", "B-Disease", "O", "O", "O", "O", "O", "O"]]
    r = dictionary_recall(predicted, gold, dictionary)
    assert (r.gold_dict, r.gold_other, r.gold_boundary, r.found_boundary, r.gold_unseen) == (0, 3, 2, 1, 1)
    assert (r.recall_boundary, r.recall_unseen, r.recall_other) == (50.0, 0.0, pytest.approx(100 / 3))
    r = dictionary_recall([["O", "O", "O", "O", "O", "B-Disease", "O", "O"]], gold, dictionary)
    assert (r.recall_boundary, r.recall_unseen) == (0.0, 100.0)
    assert {"recall_boundary", "recall_unseen", "gold_boundary"} <= set(r.as_dict())


def test_empty_parts_and_mismatched_inputs():
    r = dictionary_recall([["O", "O"]], [["O", "O"]], [["B-Chemical", "O"]])
    assert r == DictionaryRecall() and (r.recall, r.recall_dict, r.recall_other, r.coverage) == (0, 0, 0, 0)
    with pytest.raises(ValueError, match="same sentences"):
        dictionary_recall([["O"]], [["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 0: 2 predicted, 1 gold"):
        dictionary_recall([["O", "O"]], [["O"]], [["O"]])


def test_recall_table_means_over_runs():
    a = DictionaryRecall(gold_dict=10, found_dict=9, gold_other=10, found_other=5, gold_boundary=4, found_boundary=1,
                         pred_other=10, right_other=5)
    b = DictionaryRecall(gold_dict=10, found_dict=7, gold_other=10, found_other=3, gold_boundary=5, found_boundary=3,
                         pred_other=4, right_other=3)
    alone = DictionaryRecall(gold_dict=10, found_dict=10, gold_other=10, pred_dict=12, right_dict=10)
    lines = recall_table({"features": [a, b], "empty": [], "dictionary": [alone]}).splitlines()
    # the others' parts: other bounds (1/4 and 3/5), no match (4/6 and 0/5); precision beyond: 5/10 and 3/4
    assert lines[2] == "| features | 2 | 80.0 | 40.0 | 42.5 | 33.3 | 60.0 | 62.5 |"
    assert lines[3] == "| dictionary | 1 | 100.0 | 0.0 | 0.0 | 0.0 | 50.0 | - |" and len(lines) == 4


@pytest.fixture(scope="module")
def bc5cdr_test_tagged():
    from priorkit.config import DataSource, PosthocConfig
    from priorkit.training.data import read_source, slice_examples
    from priorkit.evaluation.posthoc import dictionary_tags

    src = DataSource(source="bc5cdr", split="test", sample=300)
    examples = slice_examples(read_source(src)[0], src)
    bc5cdr = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}  # no map is the default (issue 47)
    return [list(e["tags"]) for e in examples], dictionary_tags(PosthocConfig(params={"source": "hpo+mesh"},
                                                                             types=bc5cdr), examples)


def test_on_real_sentences_and_the_real_dictionary(bc5cdr_test_tagged):
    from priorkit.metrics import ner_metrics
    from priorkit.evaluation.dictionary_recall import entities

    gold, dictionary = bc5cdr_test_tagged
    n_gold = sum(len(entities(g)) for g in gold)
    perfect = dictionary_recall(gold, gold, dictionary)
    assert perfect.gold == n_gold > 300 and (perfect.recall_dict, perfect.recall_other) == (100.0, 100.0)
    # the dictionary as the prediction finds exactly its own part and nothing else
    alone = dictionary_recall(dictionary, gold, dictionary)
    assert (alone.recall_dict, alone.recall_other) == (100.0, 0.0)
    # every entity it predicts is a dictionary entity, and their precision is seqeval's
    assert alone.pred_other == 0 and alone.precision_dict == pytest.approx(100 * ner_metrics(gold, dictionary)["precision"])
    assert perfect.precision_other == 100.0 and perfect.right_dict == perfect.found_dict
    # the others: some overlap a match (other bounds or type), more are touched by none
    assert 0 < alone.gold_boundary < alone.gold_other - alone.gold_boundary
    assert (perfect.recall_boundary, perfect.recall_unseen, alone.recall_boundary, alone.recall_unseen) == (
        100.0, 100.0, 0.0, 0.0)
    assert 50 < alone.coverage < 90  # HPO + MeSH tag most BC5CDR entities exactly, not all
    # and its overall recall is seqeval's exact-entity recall of the dictionary
    assert alone.recall == pytest.approx(100 * ner_metrics(gold, dictionary)["recall"])
    nothing = dictionary_recall([["O"] * len(g) for g in gold], gold, dictionary)
    assert (nothing.recall, nothing.gold_dict) == (0.0, alone.gold_dict)

"""Constrained (Viterbi) decoding of BIO / BIOES tags against a brute force over every
sequence, and the task's scores with it (priorkit.decode.decoding, task.decode)."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from priorkit.decode.decoding import decode_tags, log_softmax, tag_scheme
from priorkit.errors import PriorkitError

BIO = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
BIOES = ["O", "B-X", "I-X", "E-X", "S-X"]


def valid(tags: list[str]) -> bool:
    """BIO's rule written out plainly (independent of tag_scheme's matrix): an I-X continues
    a B-X or I-X."""
    previous = "O"
    for t in tags:
        if t[0] == "I" and not (previous[0] in "BI" and previous[2:] == t[2:]):
            return False
        previous = t
    return True


def brute_force(log_probs: np.ndarray, labels: list[str], bioes: bool) -> tuple[float, list[str]]:
    best = (-np.inf, None)
    for seq in itertools.product(range(len(labels)), repeat=len(log_probs)):
        tags = [labels[k] for k in seq]
        if (_valid_bioes(tags) if bioes else valid(tags)):
            score = float(sum(log_probs[i, k] for i, k in enumerate(seq)))
            if score > best[0]:
                best = (score, tags)
    return best


def _valid_bioes(tags: list[str]) -> bool:
    """BIOES: I-X and E-X continue a B-X or I-X, which must be continued."""
    previous = "O"
    for t in tags:
        inside = t[0] in "IE"
        if inside and not (previous[0] in "BI" and previous[2:] == t[2:]):
            return False
        if previous[0] in "BI" and not (inside and previous[2:] == t[2:]):
            return False
        previous = t
    return previous[0] not in "BI"


@pytest.mark.parametrize("labels, bioes", [(BIO, False), (BIOES, True)])
def test_viterbi_is_the_best_valid_sequence(labels, bioes):
    rng = np.random.default_rng(0)
    for n in range(1, 6):
        for _ in range(12):
            logits = rng.normal(scale=2.0, size=(n, len(labels)))
            tags = decode_tags(logits, labels, "viterbi")
            lp = log_softmax(logits)
            best_score, _ = brute_force(lp, labels, bioes)
            score = sum(lp[i, labels.index(t)] for i, t in enumerate(tags))
            assert score == pytest.approx(best_score), (logits, tags)
            assert (_valid_bioes(tags) if bioes else valid(tags)), tags


def test_viterbi_mends_what_argmax_leaves_invalid():
    p = np.array([[.6, .1, .2, .05, .05],   # O
                  [.1, .1, .6, .1, .1],     # I-Chemical after O: invalid
                  [.1, .1, .1, .1, .6]])    # I-Disease after I-Chemical: invalid
    logits = np.log(p)
    assert decode_tags(logits, BIO, "argmax") == ["O", "I-Chemical", "I-Disease"]
    # the best valid sequence: .6 x .1 x .6 for O B-Disease I-Disease beats every other
    assert decode_tags(logits, BIO, "viterbi") == ["O", "B-Disease", "I-Disease"]
    valid_already = np.log(np.array([[.1, .7, .1, .05, .05], [.1, .1, .7, .05, .05]]))
    assert decode_tags(valid_already, BIO, "viterbi") == decode_tags(valid_already, BIO, "argmax")


def test_argmax_and_empty_sentences():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(7, 5))
    assert decode_tags(logits, BIO, "argmax") == [BIO[k] for k in logits.argmax(-1)]
    assert decode_tags(np.zeros((0, 5)), BIO, "viterbi") == []
    assert decode_tags(np.zeros((0, 5)), BIO, "argmax") == []


def test_o_bias_shifts_the_log_probability_of_o():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=2.0, size=(9, 5))
    lp = log_softmax(logits)
    for bias in (-1.0, 0.7):
        shifted = lp + bias * (np.arange(5) == 0)
        assert decode_tags(logits, BIO, "argmax", bias) == [BIO[k] for k in shifted.argmax(-1)]
        assert decode_tags(logits, BIO, "viterbi", bias) == decode_tags(shifted, BIO, "viterbi")
    assert decode_tags(logits, BIO, "viterbi", 100.0) == ["O"] * 9  # O wins every word
    assert "O" not in decode_tags(logits, BIO, "argmax", -100.0)
    n = {b: sum(t != "O" for t in decode_tags(logits, BIO, "viterbi", b)) for b in (-1.0, 0.0, 1.0)}
    assert n[-1.0] >= n[0.0] >= n[1.0]
    with pytest.raises(PriorkitError, match="o_bias shifts the tag 'O', which the labels"):
        decode_tags(logits[:, :2], ["B-X", "I-X"], "argmax", 0.5)


def test_scheme_rules():
    s = tag_scheme(tuple(BIO))
    ok = np.isfinite(s.allowed)
    assert ok[BIO.index("B-Chemical"), BIO.index("I-Chemical")]
    assert not ok[BIO.index("O"), BIO.index("I-Chemical")]
    assert not ok[BIO.index("B-Disease"), BIO.index("I-Chemical")]
    assert list(np.isfinite(s.start)) == [True, True, False, True, False]
    assert np.isfinite(s.end).all()  # BIO may end inside a span
    e = tag_scheme(tuple(BIOES))
    assert not np.isfinite(e.end[BIOES.index("B-X")]) and np.isfinite(e.end[BIOES.index("E-X")])
    assert not np.isfinite(e.allowed[BIOES.index("B-X"), BIOES.index("O")])


def test_bad_labels_and_decodings_say_what_to_do():
    with pytest.raises(PriorkitError, match=r"'PER' is none of them; decode with argmax"):
        decode_tags(np.zeros((2, 2)), ["O", "PER"], "viterbi")
    with pytest.raises(PriorkitError, match="decode 'beam' is not one of argmax, viterbi"):
        decode_tags(np.zeros((2, 5)), BIO, "beam")
    with pytest.raises(PriorkitError, match=r"shape \(2, 3\) for 5 labels"):
        decode_tags(np.zeros((2, 3)), BIO, "viterbi")


def test_the_task_scores_with_its_decoding():
    from priorkit.config import TaskConfig
    from priorkit.training.tasks import TokenClassificationTask

    rng = np.random.default_rng(2)
    examples = [{"words": list("abcdef"), "tags": ["O", "B-Chemical", "I-Chemical", "O", "B-Disease", "O"]},
                {"words": list("abcd"), "tags": ["B-Disease", "I-Disease", "O", "O"]}]
    preds = rng.normal(scale=3.0, size=(2, 9, 5))
    label_ids = np.full((2, 9), -100)
    label_ids[0, [1, 2, 4, 5, 6, 7]] = 0  # first sub-tokens (one word split in two)
    label_ids[1, [1, 2, 3, 4]] = 0
    tasks = {d: TokenClassificationTask(TaskConfig(type="token-classification", decode=d), BIO)
             for d in ("argmax", "viterbi")}
    for task in tasks.values():
        task.fit_labels(examples)
    tags = {d: t.predicted_tags(preds, label_ids, examples)[0] for d, t in tasks.items()}
    for i in range(2):
        rows = preds[i][label_ids[i] != -100]
        assert tags["viterbi"][i] == decode_tags(rows, BIO, "viterbi")
        assert tags["argmax"][i] == [BIO[k] for k in rows.argmax(-1)]
        assert valid(tags["viterbi"][i])
    assert tags["viterbi"] != tags["argmax"]  # these scores hold invalid argmax sequences


def test_decode_changes_the_scores_key_not_the_training_key(tmp_path):
    from priorkit.config import load_config
    from priorkit.training.data import load_data
    from priorkit.training.plan import plan_for_run

    body = ("name: t\ntask: {type: token-classification}\n"
            "data:\n  train: {source: bc5cdr, split: train, limit: 20}\n  eval: {source: bc5cdr, split: devel, limit: 5}\n")
    (tmp_path / "p.yaml").write_text(body)
    cfg = load_config(tmp_path / "p.yaml")
    splits = load_data(cfg)
    plain = plan_for_run(cfg)
    viterbi = plan_for_run(dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, decode="viterbi")))
    biased = plan_for_run(dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, o_bias=0.5)))
    key = plain.train_key(splits["train"])
    assert viterbi.train_key(splits["train"]) == biased.train_key(splits["train"]) == key
    keys = {p.eval_key(key, splits) for p in (plain, viterbi, biased)}
    assert len(keys) == 3

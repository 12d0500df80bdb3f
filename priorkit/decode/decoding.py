"""Tags from a token classifier's per-word scores.

* ``argmax``: each word's most likely tag on its own.  The tags may not form valid
  spans (``O I-Chemical``, ``B-Disease I-Chemical``); the scorers read them as
  conlleval does (an ``I-`` after another type opens a span).
* ``viterbi``: the most likely sequence of tags that is valid in the tag scheme
  (BIO, or BIOES when the labels have ``E-``/``S-`` tags): the product of the
  words' probabilities, maximised over the sequences the scheme allows.  No weights
  are learnt: the scheme's rules are hard constraints on the model's own
  probabilities (constrained decoding, as a CRF layer would do with learnt
  transitions, at no training cost).

    tags = decode_tags(word_logits, ["O", "B-Chemical", "I-Chemical"], "viterbi")

``word_logits`` holds one row per word (its first sub-token's logits).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np

from ..errors import PriorkitError

#: the decodings ``task.decode`` and ``priorkit predict --decode`` take
DECODINGS = ("argmax", "viterbi")
_PREFIXES = "BIES"


@dataclasses.dataclass(frozen=True)
class TagScheme:
    """Which tag may follow which (``allowed[i, j]``: tag ``j`` after tag ``i``), open a
    sentence (``start``) and close it (``end``), as additive log-scores (0 or -inf)."""

    labels: tuple[str, ...]
    allowed: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _parse(label: str) -> tuple[str, str | None]:
    if label == "O":
        return "O", None
    if len(label) > 2 and label[1] == "-" and label[0] in _PREFIXES:
        return label[0], label[2:]
    raise PriorkitError(f"viterbi decoding needs BIO or BIOES tags (O, B-X, I-X, E-X, S-X); {label!r} is none of "
                        "them; decode with argmax (task.decode: argmax, or predict --decode argmax)")


@functools.lru_cache(maxsize=32)
def tag_scheme(labels: tuple[str, ...]) -> TagScheme:
    """The BIO (or BIOES) rules over ``labels``, in the model's label order."""
    parsed = [_parse(label) for label in labels]
    bioes = any(p in "ES" for p, _ in parsed)
    k = len(labels)
    allowed = np.ones((k, k), dtype=bool)
    for i, (p_prev, t_prev) in enumerate(parsed):
        open_span = p_prev in "BI" if bioes else False  # BIOES: a B- or I- must be continued
        for j, (p, t) in enumerate(parsed):
            continues = p in "IE"  # I-X (and E-X) only inside a span of the same type
            if continues and not (p_prev in "BI" and t_prev == t):
                allowed[i, j] = False
            if open_span and not (continues and t == t_prev):
                allowed[i, j] = False
    start = np.array([p not in "IE" for p, _ in parsed])
    end = np.array([not (bioes and p in "BI") for p, _ in parsed])
    as_log = lambda a: np.where(a, 0.0, -np.inf)  # noqa: E731
    return TagScheme(tuple(labels), as_log(allowed), as_log(start), as_log(end))


def check_decoding(decoding: str, labels: Sequence[str] | None) -> None:
    """Stop early (not mid-prediction) on an unknown decoding, or on Viterbi over labels
    outside BIO / BIOES."""
    if decoding not in DECODINGS:
        raise PriorkitError(f"decode {decoding!r} is not one of {', '.join(DECODINGS)}")
    if decoding == "viterbi" and labels is not None:
        tag_scheme(tuple(labels))


def check_o_bias(o_bias: float, labels: Sequence[str] | None) -> float:
    """``o_bias`` as a float, stopped early when it is not finite or shifts an ``O`` that
    ``labels`` lack (None: the labels are checked at decoding)."""
    o_bias = float(o_bias)
    if not np.isfinite(o_bias):
        raise PriorkitError(f"o_bias must be a finite number, got {o_bias}")
    if o_bias and labels is not None and "O" not in labels:
        raise PriorkitError(f"o_bias shifts the tag 'O', which the labels {list(labels)} lack; leave it at 0")
    return o_bias


def first_subtokens(word_ids: Sequence[int | None]) -> list[int]:
    """The position of each word's first sub-token, in word order (the words the tokenizer kept)."""
    out, previous = [], None
    for t, w in enumerate(word_ids):
        if w is not None and w != previous:
            out.append(t)
        previous = w
    return out


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def viterbi(log_probs: np.ndarray, scheme: TagScheme) -> np.ndarray:
    """The best valid tag indices for one sentence's ``(words, labels)`` log-probabilities."""
    n = len(log_probs)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    back = np.zeros((n, log_probs.shape[1]), dtype=np.int64)
    score = log_probs[0] + scheme.start
    for t in range(1, n):
        cand = score[:, None] + scheme.allowed  # (previous, next)
        back[t] = cand.argmax(0)
        score = cand.max(0) + log_probs[t]
    score = score + scheme.end
    path = np.zeros(n, dtype=np.int64)
    path[-1] = int(score.argmax())
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path


def decode_tags(word_logits: np.ndarray, labels: Sequence[str], decoding: str = "argmax",
                o_bias: float = 0.0) -> list[str]:
    """One tag per row of ``word_logits`` (words, labels), by ``decoding`` (:data:`DECODINGS`).

    ``o_bias``: added to every word's log-probability of ``O`` first (above 0: fewer entities,
    a word must be ``exp(o_bias)`` times likelier an entity than not; below 0: more).
    """
    word_logits = np.asarray(word_logits, dtype=np.float64)
    check_decoding(decoding, None)  # the labels' scheme is checked below, where Viterbi needs it
    if len(word_logits) == 0:
        return []
    if word_logits.ndim != 2 or word_logits.shape[1] != len(labels):
        raise PriorkitError(f"{decoding} decoding: scores of shape {word_logits.shape} for {len(labels)} labels")
    scores = log_softmax(word_logits)
    if check_o_bias(o_bias, labels):
        scores[:, list(labels).index("O")] += o_bias
    if decoding == "argmax":
        return [labels[int(k)] for k in scores.argmax(-1)]
    return [labels[int(k)] for k in viterbi(scores, tag_scheme(tuple(labels)))]

"""A trained model as a silver labeller (self-training; docs/silver.md, "Self-training").

:class:`TeacherLabeller` tags sentences with a trained token-classification model folder
(``priorkit.load_model``): a word keeps its predicted tag when the model gives that tag at
least ``threshold`` probability (an entity's word: ``entity_threshold`` when set), and an
entity only when every word of it does; the other
words are unknown (``?``: out of the student's loss).  With a dictionary labeller beside it,
the two sets of entities meet by a stated rule:

* ``teacher-first``: the teacher's confident entities stay; a dictionary entity is added where
  it overlaps none of them (its words were confident ``O`` or unknown);
* ``dictionary-first``: the dictionary's entities stay; a confident teacher entity is added
  where it overlaps none of them.

The labeller has the interface of :class:`~priorkit.supervision.silver.label.Labeller` (``fingerprint``,
``tags``, ``tags_many``), so the silver store keeps its labels like a dictionary's: keyed by
the model's weights digest, the threshold, the rule and the dictionary's fingerprint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...checksums import file_sha256, json_sha256
from ...decode.decoding import first_subtokens
from ...decode.spans import spans as entity_spans
from ...errors import PriorkitError
from .label import Labeller
from .recipe import UNKNOWN

Entity = tuple[int, int, str]  # first word, end word (exclusive), type


def spans(tags: Sequence[str]) -> list[Entity]:
    """Entities of BIO tags in order (``?`` and ``O`` end an entity; :func:`priorkit.decode.spans.spans`)."""
    return [(s.start, s.end, s.type) for s in entity_spans(tags)]


def confident_tags(tags: Sequence[str], confidence: Sequence[float], threshold: float,
                   entity_threshold: float | None = None) -> list[str]:
    """The teacher's tags with the unsure words (and every word of an unsure entity) as ``?``:
    an ``O`` counts at ``threshold`` or more, an entity's word at ``entity_threshold`` (None:
    ``threshold``)."""
    low = threshold if entity_threshold is None else entity_threshold
    out = [t if c >= (threshold if t == "O" else low) else UNKNOWN for t, c in zip(tags, confidence)]
    for s, e, _ in spans(tags):
        if min(confidence[s:e]) < low:
            out[s:e] = [UNKNOWN] * (e - s)
    return out


def merge_labels(teacher: Sequence[str], dictionary: Sequence[str], rule: str) -> list[str]:
    """One word list of tags from the teacher's (with ``?``) and the dictionary's (see the module
    doc).  A teacher entity that loses to a dictionary entity becomes unknown (``?``) whole."""
    t_ents, d_ents = spans(teacher), spans(dictionary)
    first, second = (d_ents, t_ents) if rule == "dictionary-first" else (t_ents, d_ents)
    taken = np.zeros(len(teacher) + 1, dtype=bool)
    for s, e, _ in first:
        taken[s:e] = True
    out = list(teacher)
    write = list(first) if rule == "dictionary-first" else []
    for s, e, t in second:
        if not taken[s:e].any():
            write.append((s, e, t))
        elif rule == "dictionary-first":  # a teacher entity the dictionary overrides: unknown
            out[s:e] = [UNKNOWN] * (e - s)
    for s, e, t in write:
        out[s:e] = [f"B-{t}"] + [f"I-{t}"] * (e - s - 1)
    return out


class TeacherLabeller:
    """Words -> confident tags of a trained model folder, merged with a dictionary's (module doc)."""

    def __init__(self, predictor: Any, folder: str | Path, threshold: float = 0.9,
                 dictionary: Labeller | None = None, merge: str = "teacher-first", batch_size: int = 64,
                 entity_threshold: float | None = None) -> None:
        """``predictor``: the model folder ``folder`` loaded by ``priorkit.load_model`` (the caller
        loads it, so this package needs nothing of :mod:`priorkit.inference`)."""
        self.folder = Path(folder)
        if not 0.0 < threshold <= 1.0:
            raise PriorkitError(f"teacher threshold must lie in (0, 1], got {threshold!r}")
        self.predictor = predictor
        if self.predictor.task_type != "token-classification":
            raise PriorkitError(f"{self.folder}: the teacher is a {self.predictor.task_type} model; a silver "
                                "teacher must be a token-classification model of the same task")
        from .config import MERGES

        if merge not in MERGES:
            raise PriorkitError(f"teacher merge {merge!r} is not one of {', '.join(MERGES)}")
        if entity_threshold is not None and not 0.0 < entity_threshold <= 1.0:
            raise PriorkitError(f"teacher entity_threshold must lie in (0, 1], got {entity_threshold!r}")
        self.threshold, self.dictionary, self.merge, self.batch_size = float(threshold), dictionary, merge, batch_size
        self.entity_threshold = None if entity_threshold is None else float(entity_threshold)
        weights = next((p for p in (self.folder / "model.safetensors", self.folder / "model" / "model.safetensors")
                        if p.exists()), None)
        self._weights = file_sha256(weights) if weights is not None else json_sha256(str(self.folder.resolve()))

    @property
    def labels(self) -> list[str]:
        return list(self.predictor.labels)

    def check_labels(self, task_labels: Sequence[str], where: str) -> None:
        """Stop when the teacher's tags are not the task's (another task's model)."""
        if sorted(self.labels) != sorted(task_labels):
            raise PriorkitError(f"{where}: the teacher {self.folder} predicts tags {', '.join(self.labels)}, the task "
                                f"has {', '.join(task_labels)}; name a teacher trained on this task")

    @property
    def fingerprint(self) -> str:
        key = {"weights": self._weights, "threshold": self.threshold, "merge": self.merge,
               "dictionary": self.dictionary.fingerprint if self.dictionary else None}
        if self.entity_threshold is not None:  # absent otherwise: the labels stored before it stay valid
            key["entity_threshold"] = self.entity_threshold
        return "teacher-" + json_sha256(key, 16)

    def describe(self) -> dict[str, Any]:
        return {"teacher": str(self.folder), "threshold": self.threshold, "entity_threshold": self.entity_threshold,
                "merge": self.merge,
                "dictionary": self.dictionary.provider.describe() if self.dictionary else None}

    def tags(self, words: Sequence[str]) -> list[str]:
        return self.tags_many([words])[0]

    def tags_many(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """The labels of many sentences: the model in batches, then the merge per sentence."""
        examples = [{"words": list(w)} for w in sentences]
        p = self.predictor
        out: list[list[str]] = []
        for start, enc, logits in p.batches(examples, self.batch_size):
            z = logits - logits.max(-1, keepdims=True)
            probs = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
            for j in range(len(logits)):
                words = examples[start + j]["words"]
                tags, conf = ["O"] * len(words), [0.0] * len(words)  # a word cut off by truncation: unknown
                for w, t in enumerate(first_subtokens(enc.word_ids(j))):
                    k = int(probs[j, t].argmax())
                    tags[w], conf[w] = p.labels[k], float(probs[j, t, k])
                row = confident_tags(tags, conf, self.threshold, self.entity_threshold)
                if self.dictionary is not None:
                    row = merge_labels(row, self.dictionary.tags(words), self.merge)
                out.append(row)
        return out

"""The three task kinds a pipeline trains: what head, what labels, what metrics.

Examples reach a task as plain dicts, the shape :class:`priorkit.PriorCollator`
reads: ``{"text_a", "text_b", "label"}`` for sentence pairs and
``{"words", "labels"}`` (string tags) for token classification.  A task turns
labels into what the model trains on (``encode``) and scores predictions
against the *original* labels (``score``), so a scaled regression target or a
truncated NER sentence never flatters a metric.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..decode.decoding import decode_tags
from ..errors import PriorkitError
from ..metrics import classification_metrics, ner_metrics, regression_metrics
from ..task_types import AUTO_CLASSES
from ..config import TaskConfig


class Task:
    """Base class: subclasses set ``type`` and implement the four methods."""

    type: str = ""
    #: higher is better for every metric except these
    lower_is_better: frozenset[str] = frozenset({"mse"})

    def __init__(self, cfg: TaskConfig, labels: list[str] | None = None) -> None:
        self.cfg = cfg
        self.labels = list(labels) if labels is not None else None

    # -- labels --------------------------------------------------------
    def fit_labels(self, examples: Sequence[dict]) -> None:
        """Fix the label set (from the config, else from the training examples)."""

    def encode(self, example: dict) -> dict:
        """A collator-ready copy of ``example`` (labels as the model's targets)."""
        raise NotImplementedError

    # -- model -----------------------------------------------------------
    def model_kwargs(self) -> dict[str, Any]:
        """Head configuration: one output per label, with the label names."""
        return {
            "num_labels": len(self.labels),
            "id2label": dict(enumerate(self.labels)),
            "label2id": {n: i for i, n in enumerate(self.labels)},
        }

    def load_model(self, name_or_path: str, **kwargs: Any):
        import transformers

        auto = getattr(transformers, AUTO_CLASSES[self.type])  # the head inference loads, too
        return auto.from_pretrained(name_or_path, **self.model_kwargs(), **kwargs)

    # -- metrics ---------------------------------------------------------
    def score(self, predictions: np.ndarray, label_ids: np.ndarray | None, examples: Sequence[dict]) -> dict[str, float]:
        raise NotImplementedError


class RegressionTask(Task):
    """Sentence-pair regression (STS-B): one output, MSE loss, Pearson and Spearman.

    The model is trained on ``label / label_scale`` (STS-B: 0-5 -> 0-1, so the
    randomly initialised head starts near the target range); predictions are
    scaled back before scoring.  Correlations do not depend on the scale; MSE
    is reported in the original units.
    """

    type = "regression"

    def encode(self, example: dict) -> dict:
        out = dict(example)
        label = example.get("label")
        if label is None:
            raise PriorkitError(f"a regression example has no label: {_short(example)}")
        try:
            out["label"] = float(label) / self.cfg.label_scale
        except (TypeError, ValueError):
            raise PriorkitError(f"regression label {label!r} is not a number (example {_short(example)})") from None
        return out

    def model_kwargs(self) -> dict[str, Any]:
        return {"num_labels": 1, "problem_type": "regression"}

    def score(self, predictions, label_ids, examples) -> dict[str, float]:
        pred = np.asarray(predictions, dtype=np.float64).reshape(len(examples), -1)[:, 0] * self.cfg.label_scale
        gold = np.array([float(e["label"]) for e in examples], dtype=np.float64)
        return regression_metrics(pred, gold)


class PairClassificationTask(Task):
    """Sentence-pair classification (MRPC/QQP layout): accuracy and F1.

    F1 is that of label id 1 (the positive class, "paraphrase"/"duplicate") when
    there are two labels, else the macro average over labels.
    """

    type = "pair-classification"

    def fit_labels(self, examples: Sequence[dict]) -> None:
        if self.labels is None:
            found = {str(e["label"]) for e in examples if e.get("label") is not None}
            if not found:
                raise PriorkitError("the training data holds no labels; set task.labels")
            self.labels = sorted(found, key=_natural)
        self._index = {name: i for i, name in enumerate(self.labels)}

    def encode(self, example: dict) -> dict:
        out = dict(example)
        name = str(example.get("label"))
        if name not in self._index:
            raise PriorkitError(
                f"label {example.get('label')!r} is not one of task.labels {self.labels} (example {_short(example)})"
            )
        out["label"] = self._index[name]
        return out

    def score(self, predictions, label_ids, examples) -> dict[str, float]:
        pred = np.asarray(predictions).reshape(len(examples), -1).argmax(-1)
        gold = np.array([self._index[str(e["label"])] for e in examples])
        return classification_metrics(pred, gold, len(self.labels))


class TokenClassificationTask(Task):
    """BIO named-entity recognition: entity-level precision, recall, F1 (seqeval).

    The first sub-token of each word carries the word's tag (the collator sets
    the rest to -100).  A word cut off by truncation is predicted ``O``, so it
    counts against recall instead of vanishing from the score.
    """

    type = "token-classification"

    def fit_labels(self, examples: Sequence[dict]) -> None:
        if self.labels is None:
            found = {t for e in examples for t in e["tags"]}
            if not found:
                raise PriorkitError("the training data holds no tags; set task.labels")
            self.labels = sorted(found, key=lambda t: (t != "O", t[2:], t[:2]))
        self._index = {name: i for i, name in enumerate(self.labels)}
        if "O" not in self._index:
            raise PriorkitError(f"token classification needs an 'O' tag; task.labels is {self.labels}")

    def encode(self, example: dict) -> dict:
        try:
            ids = [self._index[t] for t in example["tags"]]
        except KeyError as exc:
            raise PriorkitError(
                f"tag {exc.args[0]!r} is not one of task.labels {self.labels} (sentence {_short(example)})"
            ) from None
        return {"words": list(example["words"]), "labels": ids}

    def predicted_tags(self, predictions, label_ids, examples) -> tuple[list[list[str]], int]:
        """Each sentence's predicted tags, one per word (words cut off by truncation: ``O``),
        and the number of such words."""
        predictions = np.asarray(predictions)  # (N, L, labels)
        label_ids = np.asarray(label_ids)
        y_pred = []
        truncated = 0
        for i, e in enumerate(examples):
            words = predictions[i][label_ids[i] != -100][: len(e["tags"])]  # one row per surviving word, in order
            tags = decode_tags(words, self.labels, self.cfg.decode, self.cfg.o_bias)
            truncated += len(e["tags"]) - len(tags)
            tags += ["O"] * (len(e["tags"]) - len(tags))
            y_pred.append(tags)
        return y_pred, truncated

    def score(self, predictions, label_ids, examples) -> dict[str, float]:
        y_pred, truncated = self.predicted_tags(predictions, label_ids, examples)
        out = ner_metrics([list(e["tags"]) for e in examples], y_pred)
        out["truncated_words"] = float(truncated)
        return out


TASKS: dict[str, type[Task]] = {
    t.type: t for t in (RegressionTask, PairClassificationTask, TokenClassificationTask)
}


def make_task(cfg: TaskConfig) -> Task:
    return TASKS[cfg.type](cfg, cfg.labels)


def is_better(metric: str, a: float, b: float) -> bool:
    return a < b if metric in Task.lower_is_better else a > b


def _natural(s: str):
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, math.inf, s)


def _short(example: dict) -> str:
    text = str({k: example[k] for k in list(example)[:3]})
    return text if len(text) < 120 else text[:117] + "..."

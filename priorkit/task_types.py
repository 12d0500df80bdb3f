"""The task types a priorkit model is trained for, and the transformers head class of each.

Shared by the pipeline (which trains) and inference (which loads), so neither
imports the other for it.
"""
from __future__ import annotations

#: task type -> the ``transformers`` Auto class of its model head
AUTO_CLASSES: dict[str, str] = {
    "regression": "AutoModelForSequenceClassification",
    "pair-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
}
TASK_TYPES = tuple(AUTO_CLASSES)

__all__ = ["AUTO_CLASSES", "TASK_TYPES"]

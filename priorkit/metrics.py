"""Task metrics as plain functions (tested against scipy / scikit-learn / seqeval).

Below both the pipeline (its tasks score runs with them) and the token features
(the dictionary-only baseline scores the matcher with :func:`ner_metrics`), so
neither package imports the other for them.
"""
from __future__ import annotations

import numpy as np


def regression_metrics(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    from scipy.stats import pearsonr, spearmanr

    if len(pred) < 2 or np.std(pred) == 0 or np.std(gold) == 0:
        # a constant prediction has no correlation; report 0 rather than NaN
        pearson = spearman = 0.0
    else:
        pearson = float(pearsonr(pred, gold)[0])
        spearman = float(spearmanr(pred, gold)[0])
    return {"pearson": pearson, "spearman": spearman, "mse": float(np.mean((pred - gold) ** 2))}


def classification_metrics(pred: np.ndarray, gold: np.ndarray, n_labels: int) -> dict[str, float]:
    """Accuracy and F1 (positive class 1 for two labels, macro otherwise).

    Uses scikit-learn when it is installed; the fallback below computes the
    same numbers (tests compare the two).
    """
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    accuracy = float((pred == gold).mean()) if len(gold) else 0.0
    try:
        from sklearn.metrics import f1_score
    except ImportError:
        f1 = f1_binary_or_macro(pred, gold, n_labels)
    else:
        if n_labels == 2:
            f1 = float(f1_score(gold, pred, pos_label=1, average="binary", zero_division=0))
        else:
            f1 = float(f1_score(gold, pred, labels=list(range(n_labels)), average="macro", zero_division=0))
    return {"accuracy": accuracy, "f1": f1}


def f1_binary_or_macro(pred: np.ndarray, gold: np.ndarray, n_labels: int) -> float:
    """F1 without scikit-learn: class 1 for two labels, unweighted mean over labels otherwise."""

    def f1_of(c: int) -> float:
        tp = float(((pred == c) & (gold == c)).sum())
        fp = float(((pred == c) & (gold != c)).sum())
        fn = float(((pred != c) & (gold == c)).sum())
        return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)

    if n_labels == 2:
        return f1_of(1)
    return float(np.mean([f1_of(c) for c in range(n_labels)]))


def ner_metrics(y_true: list[list[str]], y_pred: list[list[str]]) -> dict[str, float]:
    """Entity-level micro precision/recall/F1 (seqeval, conlleval rules) + per-type F1."""
    from seqeval.metrics import accuracy_score, classification_report, f1_score, precision_score, recall_score

    out = {
        "precision": float(precision_score(y_true, y_pred, zero_division=0)),
        "recall": float(recall_score(y_true, y_pred, zero_division=0)),
        "f1": float(f1_score(y_true, y_pred, zero_division=0)),
        "accuracy": float(accuracy_score(y_true, y_pred)),
    }
    report = classification_report(y_true, y_pred, output_dict=True, zero_division=0)
    for name, row in report.items():
        if name.endswith(" avg"):
            continue
        out[f"f1_{name}"] = float(row["f1-score"])
    return out

"""Per-sentence predictions of a token-classification run, and the counts the sentence
bootstrap resamples.

The evaluate step of a token-classification run writes ``predictions-<split>.jsonl``
beside ``metrics.json``: one line per sentence of the split, in the split's order,
``{"tags": [...], "gold": [...]}`` (one tag per word; a word cut off by truncation is
``O``, as the scorer counts it).  Two readers use them:

* a sweep's ``posthoc`` arms (:mod:`priorkit.evaluation.posthoc`) merge a trained run's
  tags with the dictionary's matches, without training;
* the sentence bootstrap (:func:`priorkit.stats.bootstrap_f1_delta`) resamples the test
  sentences, from each sentence's entity counts (:func:`entity_counts`): true positives,
  predicted and gold entities, by seqeval's entity rules, so the micro F1 of the counts'
  sums is the ``f1`` of ``metrics.json``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import PriorkitError

PREDICTIONS = "predictions-{split}.jsonl"


def predictions_path(run_dir: Path, split: str) -> Path:
    return Path(run_dir) / PREDICTIONS.format(split=split)


def write_predictions(run_dir: Path, split: str, tags: Sequence[Sequence[str]],
                      gold: Sequence[Sequence[str]]) -> Path:
    """Write one split's predicted and gold tags (atomically: a temporary file, then a rename)."""
    if len(tags) != len(gold):
        raise PriorkitError(f"{len(tags)} predicted sentences for {len(gold)} gold ones ({split})")
    path = predictions_path(run_dir, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        for t, g in zip(tags, gold):
            fh.write(json.dumps({"tags": list(t), "gold": list(g)}) + "\n")
    tmp.replace(path)
    return path


def read_predictions(run_dir: Path, split: str) -> tuple[list[list[str]], list[list[str]]] | None:
    """(predicted tags, gold tags) per sentence, or None when the run saved none for ``split``."""
    path = predictions_path(run_dir, split)
    if not path.exists():
        return None
    tags, gold = [], []
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            tags.append(row["tags"])
            gold.append(row["gold"])
    return tags, gold


def entity_counts(tags: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> np.ndarray:
    """(N, 3) integers per sentence: correct entities, predicted entities, gold entities.

    One seqeval pass over all sentences (each followed by an ``O``, as seqeval joins a list
    of sentences itself), the entities then counted by the sentence they start in.
    """
    from seqeval.metrics.sequence_labeling import get_entities

    if len(tags) != len(gold) or any(len(t) != len(g) for t, g in zip(tags, gold)):
        raise PriorkitError("predicted and gold tags differ in sentences or words")
    starts, flat_pred, flat_gold = [], [], []
    for t, g in zip(tags, gold):
        starts.append(len(flat_pred))
        flat_pred += [str(x) for x in t] + ["O"]
        flat_gold += [str(x) for x in g] + ["O"]
    p, q = set(get_entities(flat_pred)), set(get_entities(flat_gold))
    starts_arr = np.asarray(starts)
    out = np.zeros((len(tags), 3), dtype=np.int64)
    for col, ents in enumerate((p & q, p, q)):
        if ents:
            first = np.fromiter((e[1] for e in ents), dtype=np.int64, count=len(ents))
            out[:, col] = np.bincount(np.searchsorted(starts_arr, first, side="right") - 1, minlength=len(tags))
    return out


def run_counts(run_dir: Path, split: str) -> tuple[np.ndarray, list[list[str]]] | None:
    """A run's per-sentence entity counts on ``split`` and the gold tags they were counted against."""
    got = read_predictions(run_dir, split)
    if got is None:
        return None
    tags, gold = got
    return entity_counts(tags, gold), gold


#: run folder -> its counts and gold tags on a split (None: no predictions saved)
CountsCache = dict[tuple[str, str], "tuple[np.ndarray, list[list[str]]] | None"]


def sentence_ci(runs: Sequence[tuple[Path, Path]], split: str, metric: str, cache: CountsCache | None = None,
                *, replicates: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """The 95% CI of the mean entity-F1 Δ over sentences and seeds (:func:`priorkit.stats.bootstrap_f1_delta`).

    ``runs``: per seed, (the setting's run folder, the reference's run folder).  None when
    the metric is not entity ``f1``, a run saved no predictions for ``split``, or two runs
    were not scored on the same sentences.
    """
    from ..stats import bootstrap_f1_delta

    if metric != "f1" or not runs:
        return None
    cache = {} if cache is None else cache
    a, b = [], []
    for pair in runs:
        got = []
        for run_dir in pair:
            k = (str(run_dir), split)
            if k not in cache:
                cache[k] = run_counts(run_dir, split)
            got.append(cache[k])
        if any(g is None for g in got) or got[0][1] != got[1][1]:
            return None
        a.append(got[0][0])
        b.append(got[1][0])
    if any(x.shape != a[0].shape for x in a):
        return None
    return bootstrap_f1_delta(a, b, replicates=replicates, seed=seed)

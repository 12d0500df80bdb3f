"""NER models that tag together: each word's log-probabilities from every model, weighted and
summed (a product of experts), then decoded once (docs/inference.md#ensembles).

The use in mind: a model trained with knowledge (token features, silver labels) is precise on
the words the dictionary knows and blind to the others; a model trained without features reads
the context alone.  Mixed word by word, the second lends recall where the first has learnt
"no match, no entity"::

    ens = priorkit.load_ensemble(["runs/k/st-branch/frac0.1/seed0", "runs/k/st-nofeat/frac0.1/seed0"],
                                 weights=[0.7, 0.3], decode="viterbi")
    ens.predict([["Aspirin", "causes", "nausea", "."]])

Each model builds its own inputs (its own channels, priors and tokenizer), so models with
different channels, or different tokenizers, mix: they meet at the word level.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..decode.decoding import check_decoding, check_o_bias, decode_tags, log_softmax
from ..decode.steps import mix, normalised
from ..errors import PriorkitError
from .predictor import Predictor, entities, load_model


class Ensemble:
    """NER predictors mixed word by word; ``predict`` gives :class:`Predictor`'s NER records."""

    def __init__(self, predictors: Sequence[Predictor], weights: Sequence[float] | None = None,
                 decode: str | None = None, o_bias: float | None = None) -> None:
        if len(predictors) < 2:
            raise PriorkitError(f"an ensemble needs at least two models, got {len(predictors)}")
        for p in predictors:
            if p.task_type != "token-classification":
                raise PriorkitError(f"{p.folder} is a {p.task_type} model; ensembles mix NER models only")
        labels = list(predictors[0].labels)
        for p in predictors[1:]:
            if sorted(p.labels) != sorted(labels):
                raise PriorkitError(f"{p.folder} predicts tags {', '.join(p.labels)}, {predictors[0].folder} "
                                    f"{', '.join(labels)}: models of one ensemble must share their tags")
        weights = [1.0] * len(predictors) if weights is None else [float(w) for w in weights]
        if len(weights) != len(predictors):
            raise PriorkitError(f"{len(weights)} weights for {len(predictors)} models; give one per model")
        if any(not np.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
            raise PriorkitError(f"ensemble weights must be non-negative with a positive sum, got {weights}")
        self.predictors, self.labels = list(predictors), labels
        self.weights = normalised(weights)
        # each model's columns in the first model's label order
        self._columns = [[list(p.labels).index(name) for name in labels] for p in self.predictors]
        decode = decode or predictors[0].decode
        check_decoding(decode, labels)
        self.decode = decode
        self.o_bias = predictors[0].o_bias if o_bias is None else check_o_bias(o_bias, labels)

    def word_log_probs(self, inputs: Iterable[Any], batch_size: int = 32) -> list[np.ndarray]:
        """Each sentence's mixed (words, labels) log-probabilities (the first model's label order)."""
        inputs = list(inputs)
        blocks = [[log_softmax(b[:, cols]) for b in p.word_logits(inputs, batch_size)]
                  for p, cols in zip(self.predictors, self._columns)]
        return mix(blocks, self.weights)  # a word one model cut off (another tokenizer): the others' rows alone

    def predict(self, inputs: Iterable[Any], batch_size: int = 32) -> list[dict]:
        """``{"tags", "entities"}`` per input, in order (words cut off by every model: ``O``)."""
        examples = self.predictors[0].examples(inputs)
        records = []
        for e, lp in zip(examples, self.word_log_probs(examples, batch_size)):
            words = e["words"]
            tags = decode_tags(lp, self.labels, self.decode, self.o_bias) + ["O"] * (len(words) - len(lp))
            records.append({"tags": tags, "entities": entities(words, tags)})
        return records

    def __repr__(self) -> str:
        parts = ", ".join(f"{p.folder} x{w:.2f}" for p, w in zip(self.predictors, self.weights))
        return f"<Ensemble {self.decode}: {parts}>"


def load_ensemble(paths: Sequence[str | Path], weights: Sequence[float] | None = None, *,
                  decode: str | None = None, o_bias: float | None = None, device: str | None = None,
                  use_cache: bool = True, max_length: int | None = None) -> Ensemble:
    """:func:`load_model` of each folder, mixed into one :class:`Ensemble` (weights: equal by
    default; decode and o_bias: the first model's ``task.decode`` and ``task.o_bias`` by default)."""
    predictors = [load_model(p, device=device, use_cache=use_cache, max_length=max_length) for p in paths]
    return Ensemble(predictors, weights, decode, o_bias)

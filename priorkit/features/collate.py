"""A collator that adds token features to the batches of another (``PriorCollator``)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from ..errors import PriorkitError
from .builder import FeatureBuilder


class FeatureCollator:
    """``inner(examples)`` plus ``token_features`` (and ``token_concepts``) for word examples.

    The words are tokenised again with the inner collator's tokenizer and arguments (a
    fast tokenizer takes well under a millisecond a sentence) to get the token-to-word
    map; the ids must equal the inner batch's, else the error says so.
    """

    def __init__(self, inner: Any, builder: FeatureBuilder) -> None:
        self.inner, self.builder = inner, builder

    def __getattr__(self, name: str) -> Any:  # tokenizer, builder, store, close ... of the inner one
        if name in ("inner", "builder"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __enter__(self) -> "FeatureCollator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inner.close()

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.inner(examples)
        if "words" not in examples[0]:
            raise PriorkitError("token features need word examples ({'words': [...]}: token classification)")
        words = [list(e["words"]) for e in examples]
        kwargs = dict(getattr(self.inner, "tokenizer_kwargs", {}) or {})
        enc = self.inner.tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt", **kwargs)
        if not torch.equal(enc["input_ids"], batch["input_ids"]):
            raise PriorkitError("token features: the words tokenise differently from the batch's input_ids; "
                                "give the feature collator the same tokenizer and arguments")
        batch.update(self.builder.batch_tensors(words, enc))
        return batch

"""The one data collator: it tokenises a batch once and asks each channel for its tensors
(the token-aligned ``prior``, the token features, ...; docs/channels.md).

Works with the Hugging Face ``Trainer`` (pass ``remove_unused_columns=False``
in ``TrainingArguments`` so the raw text reaches the collator).  Examples are
dicts with either

- ``text_a`` (and optionally ``text_b``) and a ``label`` (float for
  regression, int for classification), or
- ``words`` (a list of words) and ``labels`` (one int per word) for token
  classification: the first sub-token of a word carries the word's label,
  the other sub-tokens and special tokens get -100 (ignored by the loss).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from .errors import PriorkitError


class PriorCollator:
    """Tokenise a batch once, pad, and ask each channel for its tensors; labels too.

    :param tokenizer: the model's (fast) tokenizer; the collator is its one caller per batch.
    :param channels: :class:`priorkit.channels.Channel` objects asked in turn for their
        tensors of the batch (``batch_tensors(examples, encoding)``), all from this one
        tokenisation: the attention prior's ``prior`` (its builder aligns the encoding; its
        aligned store skips the aligning in later epochs), the token features, ...  None
        gives a plain collator: the no-prior baseline.
    :param label_key: name of the label field in the examples.
    :param tokenizer_kwargs: the tokenizer call's options (``truncation``, ``max_length``).

    Call :meth:`close` (or use the collator as a context manager) to let the channels write
    what is pending (the attention channel's aligned store on disk).
    """

    def __init__(self, tokenizer: Any, *, channels: Sequence[Any] = (), label_key: str | None = None,
                 **tokenizer_kwargs: Any) -> None:
        if tokenizer is None:
            raise PriorkitError("PriorCollator needs the model's tokenizer")
        for channel in channels:
            theirs = getattr(channel, "tokenizer", None)
            if theirs is not None and theirs is not tokenizer and \
                    getattr(tokenizer, "name_or_path", None) != getattr(theirs, "name_or_path", None):
                raise PriorkitError(
                    f"PriorCollator got a tokenizer that is not the {channel.name} channel's "
                    f"({getattr(tokenizer, 'name_or_path', '?')} vs {getattr(theirs, 'name_or_path', '?')}); its "
                    "tensors would not line up with the input ids. Build the channel with the model's tokenizer.")
        self.tokenizer = tokenizer
        self.label_key = label_key
        self.tokenizer_kwargs = tokenizer_kwargs
        self.channels = list(channels)

    def close(self) -> None:
        """Let each channel write what is pending (the attention channel's aligned store)."""
        for channel in self.channels:
            channel.close()

    def __enter__(self) -> "PriorCollator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        return self.encode(examples)[1]

    def encode(self, examples: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, torch.Tensor]]:
        """(the batch's one tokenisation, with ``word_ids(b)``; the model's inputs: its tensors,
        each channel's and ``labels`` when the examples carry them; with labels also the
        tensors only the loss reads: ``label_weights``, the channels' ``loss_keys``)."""
        if not examples:
            raise PriorkitError("PriorCollator got an empty batch")
        first = examples[0]
        if "words" in first:
            texts_a = [list(e["words"]) for e in examples]
            texts_b = None
        elif "text_a" in first:
            texts_a = [e["text_a"] for e in examples]
            has_b = [e.get("text_b") is not None for e in examples]
            if any(has_b) and not all(has_b):
                raise PriorkitError(
                    f"PriorCollator got a batch that mixes sentence pairs and single sentences: example "
                    f"{has_b.index(not has_b[0])} {'has' if not has_b[0] else 'lacks'} a 'text_b' unlike "
                    "example 0. Give every example a text_b, or none (split the data by task)."
                )
            texts_b = [e["text_b"] for e in examples] if has_b[0] else None
        else:
            raise PriorkitError(
                f"PriorCollator examples need 'text_a' (and 'text_b') or 'words'; got keys {sorted(first)}"
            )
        batch = self.tokenizer(texts_a, texts_b, is_split_into_words=not isinstance(texts_a[0], str), padding=True,
                               return_tensors="pt", **self.tokenizer_kwargs)  # the batch's one tokenisation
        out = {k: v for k, v in batch.items()}
        for channel in self.channels:  # each reads it (word_ids, the fast tokenizer's offsets)
            out.update(channel.batch_tensors(examples, batch))
        labels = self._labels(examples, batch, token_level="words" in first)
        if labels is not None:
            out["labels"] = labels
            if token_level_weights(examples):  # per-word loss weights (silver rows), aligned like labels
                out["label_weights"] = self._labels(examples, batch, token_level=True, key="weights")
        else:  # no labels, no loss: the tensors only the loss reads would reach the model
            for channel in self.channels:
                for key in getattr(channel, "loss_keys", ()):
                    out.pop(key, None)
        return batch, out

    def _labels(self, examples, batch, token_level: bool, key: str | None = None) -> torch.Tensor | None:
        """Word values on the first token of each word (-100 elsewhere); ``key="weights"``: the
        examples' word weights the same way (1.0 for examples without any, 0 elsewhere)."""
        weights = key == "weights"
        key = key or self.label_key or ("labels" if token_level else "label")
        if not weights and key not in examples[0]:
            return None
        if not token_level:
            values = [e[key] for e in examples]
            dtype = torch.float32 if isinstance(values[0], float) else torch.long
            return torch.tensor(values, dtype=dtype)
        B, L = batch["input_ids"].shape
        labels = (torch.zeros((B, L), dtype=torch.float32) if weights
                  else torch.full((B, L), -100, dtype=torch.long))
        for b, e in enumerate(examples):
            word_labels = e.get(key) if weights else e[key]
            previous = None
            for t, w in enumerate(batch.word_ids(b)):
                if w is not None and w != previous:
                    labels[b, t] = 1.0 if word_labels is None else word_labels[w]
                previous = w
        return labels


def token_level_weights(examples: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any example of a token-level batch carries per-word loss ``weights``."""
    return any("weights" in e for e in examples) and "words" in examples[0]


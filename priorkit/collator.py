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

from .align import PriorBuilder
from .errors import PriorkitError


class PriorCollator:
    """Tokenise, pad, and attach ``prior`` (B, L, L) plus labels.

    :param tokenizer: kept for Trainer's API (it must be the builder's tokenizer).
    :param builder: a :class:`PriorBuilder`; ``None`` gives a plain collator
        (same tokenisation, no ``prior``) -- the no-prior baseline.
    :param label_key: name of the label field in the examples.
    :param channels: :class:`priorkit.channels.Channel` objects asked in turn for their
        tensors of the batch (``batch_tensors(examples, encoding)``, from this one
        tokenisation); the one whose ``encoder()`` tokenises (the attention prior's builder)
        stands in for ``builder`` when that is not given.
    :param store: keep every example's token-aligned prior so later epochs assemble the
        batch without tokenising or aligning (:class:`priorkit.aligned_store.AlignedStore`):
        an ``AlignedStore``, a folder for one (shards written there, shared across runs and
        DataLoader workers), or ``True`` for one in memory.  Same tensors either way.
        Call :meth:`close` (or use the collator as a context manager) to write what is pending.
    """

    def __init__(self, tokenizer: Any, builder: PriorBuilder | None = None, *,
                 label_key: str | None = None, pad_value: float = 0.0, store: Any = None,
                 channels: Sequence[Any] = (), **tokenizer_kwargs: Any) -> None:
        if builder is None and channels:
            from .channels import encoder_of

            builder = encoder_of(channels)
        if builder is not None and tokenizer is not None and tokenizer is not builder.tokenizer:
            if getattr(tokenizer, "name_or_path", None) != getattr(builder.tokenizer, "name_or_path", None):
                raise PriorkitError(
                    "PriorCollator got a tokenizer that is not the PriorBuilder's "
                    f"({getattr(tokenizer, 'name_or_path', '?')} vs "
                    f"{getattr(builder.tokenizer, 'name_or_path', '?')}); the prior would not line up "
                    "with the input ids. Build the PriorBuilder with the model's tokenizer."
                )
        self.builder = builder
        self.tokenizer = builder.tokenizer if builder is not None else tokenizer
        self.label_key = label_key
        self.pad_value = pad_value
        self.tokenizer_kwargs = tokenizer_kwargs
        self.store = _make_store(builder, store)
        self.channels = list(channels)

    def close(self) -> None:
        """Write the store's pending examples (no-op without a store)."""
        if self.store is not None:
            self.store.flush()

    def __enter__(self) -> "PriorCollator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        return self.encode(examples)[1]

    def encode(self, examples: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, torch.Tensor]]:
        """(the batch's one tokenisation, with ``word_ids(b)``; the model's inputs: its tensors,
        each channel's and ``labels`` when the examples carry them)."""
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
        if self.builder is not None:
            source = self.store if self.store is not None else self.builder
            batch = source.build_batch(texts_a, texts_b, pad_value=self.pad_value, **self.tokenizer_kwargs)
        else:
            split = texts_b is None and not isinstance(texts_a[0], str)
            batch = self.tokenizer(texts_a, texts_b, is_split_into_words=split, padding=True,
                                   return_tensors="pt", **self.tokenizer_kwargs)
        out = {k: v for k, v in batch.items()}
        for channel in self.channels:  # the batch's one tokenisation (word_ids) serves them all
            out.update(channel.batch_tensors(examples, batch))
        labels = self._labels(examples, batch, token_level="words" in first)
        if labels is not None:
            out["labels"] = labels
        return batch, out

    def _labels(self, examples, batch, token_level: bool) -> torch.Tensor | None:
        key = self.label_key or ("labels" if token_level else "label")
        if key not in examples[0]:
            return None
        if not token_level:
            values = [e[key] for e in examples]
            dtype = torch.float32 if isinstance(values[0], float) else torch.long
            return torch.tensor(values, dtype=dtype)
        B, L = batch["input_ids"].shape
        labels = torch.full((B, L), -100, dtype=torch.long)
        for b, e in enumerate(examples):
            word_labels = e[key]
            previous = None
            for t, w in enumerate(batch.word_ids(b)):
                if w is not None and w != previous:
                    labels[b, t] = int(word_labels[w])
                previous = w
        return labels


def _make_store(builder: PriorBuilder | None, store: Any):
    if store is None or store is False:
        return None
    if builder is None:
        raise PriorkitError("PriorCollator(store=...) needs a PriorBuilder: a plain collator has no prior to store.")
    from .aligned_store import AlignedStore

    if isinstance(store, AlignedStore):
        if store.builder is not builder:
            raise PriorkitError("PriorCollator got an AlignedStore made for another PriorBuilder; "
                                "make the store with this collator's builder.")
        return store
    if store is True:
        return AlignedStore(builder)
    return AlignedStore(builder, store)

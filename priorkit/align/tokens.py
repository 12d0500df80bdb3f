"""The token side of a prior: fast tokenizers, and which word every token belongs to.

:class:`Alignment` records, for one encoded example, each token's word, side
and phrase; :class:`~priorkit.align.PriorBuilder` fills the (L, L) token matrix
from the word matrix with it.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Sequence

import numpy as np

from ..errors import TokenizerError
from ..checksums import data_sha256
from .words import _dedupe

_CHUNK = re.compile(r"\S+")


@dataclasses.dataclass
class Alignment:
    """How the tokens of one encoded example map to words.

    ``token_word[t]`` is an index into ``keys`` (or -1 for tokens that carry no
    word, e.g. padding); ``token_side[t]`` is 0 for side A, 1 for side B;
    ``token_span[t]`` identifies the phrase (span) a token belongs to, -1 for
    special tokens.
    """

    keys: list[str]
    token_word: np.ndarray  # (L,) int
    token_side: np.ndarray  # (L,) int
    token_span: np.ndarray  # (L,) int
    special: np.ndarray  # (L,) bool
    span_keys: list[str]  # phrase key of each span id


def load_tokenizer(tokenizer: Any):
    """A tokenizer object, a local path or a Hub id -> a fast tokenizer."""
    if isinstance(tokenizer, (str, bytes)) or hasattr(tokenizer, "__fspath__"):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
    if not getattr(tokenizer, "is_fast", False):
        name = getattr(tokenizer, "name_or_path", "") or "PATH"
        cls = type(tokenizer).__name__
        fast = cls.removesuffix("Legacy").removesuffix("Slow")
        fast = fast if fast != cls else "AutoTokenizer"
        raise TokenizerError(
            f"{name} gives a slow (Python) {cls}; priorkit aligns priors with the character offsets "
            "only fast tokenizers (backed by a tokenizer.json) give. Save a fast copy once: "
            f"python -c \"from transformers import {fast}; {fast}.from_pretrained('{name}')"
            f".save_pretrained('{name}-fast')\" and pass --tokenizer {name}-fast (in Python: that "
            "folder, or the fast object). SentencePiece tokenizers need `pip install sentencepiece "
            "protobuf` for the conversion; a model with no fast tokenizer at all cannot be aligned."
        )
    return tokenizer


def _without_fields(text: str, names: tuple[str, ...]) -> str:
    """``text`` (a JSON object) with the values of the top-level ``names`` cut out, without
    re-serialising it (a tokenizer's JSON is large; ``json.dumps`` of it takes about a second)."""
    decoder = json.JSONDecoder()
    for name in names:
        tag = f'"{name}":'
        start = text.find(tag)
        if start < 0:
            continue
        pos = start + len(tag)
        while text[pos].isspace():
            pos += 1
        _, end = decoder.raw_decode(text, pos)
        text = text[:pos] + "null" + text[end:]
    return text


def tokenizer_behaviour(tokenizer) -> str:
    """The fast tokenizer's serialised form without its padding and truncation *state*
    (the vocabulary as JSON for a tokenizer without a backend).

    A call with ``padding=True`` or ``truncation=True`` changes those settings, and they
    decide nothing about the tokens of a text, so identities built on this stay the same
    before and after the first padded batch.
    """
    try:
        return _without_fields(tokenizer.backend_tokenizer.to_str(), ("truncation", "padding"))
    except Exception:  # noqa: BLE001 - fall back to the vocabulary
        return json.dumps(sorted(tokenizer.get_vocab().items()))


def tokenizer_fingerprint(tokenizer) -> str:
    """Identity of a tokenizer's behaviour (vocabulary, normaliser, specials), from
    :func:`tokenizer_behaviour`."""
    blob = tokenizer_behaviour(tokenizer)
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    short = str(name).rstrip("/").split("/")[-1]
    return f"{short}-{data_sha256(blob.encode())[:12]}"


@dataclasses.dataclass
class _Plan:
    length: int
    left: list[str]
    right: list[str]
    a_tok: np.ndarray  # token positions of the rows block
    b_tok: np.ndarray  # token positions of the columns block
    rows: np.ndarray  # for each a_tok, its row in left
    cols: np.ndarray  # for each b_tok, its column in right
    spans: np.ndarray | None  # full layout: span id per word token


def _index_keys(keys: Sequence[str], ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Unique keys of ``keys[ids]`` (first-seen order) and each id's row among them."""
    uniq, rows = np.unique(ids, return_inverse=True)
    names = [keys[i] for i in uniq.tolist()]
    first = _dedupe(names)
    if len(first) == len(names):
        return rows, names
    pos = {k: i for i, k in enumerate(first)}  # several words share a key
    remap = np.array([pos[k] for k in names], dtype=np.int64)
    return remap[rows], first


def _char_to_word(text: str) -> np.ndarray:
    """(len(text) + 1,) index of the whitespace word each character starts or precedes; -1 after the last."""
    ends = np.array([m.end() for m in _CHUNK.finditer(text)], dtype=np.int64)
    c2w = np.searchsorted(ends, np.arange(len(text) + 1), side="right")
    c2w[c2w >= len(ends)] = -1
    return c2w


__all__ = ["Alignment", "load_tokenizer", "tokenizer_fingerprint"]

"""The word side of a prior, without torch: words, keys, and the word pairs a provider is asked for.

- a *word* is a whitespace chunk of the raw text (or one item of a pre-split
  word list);
- its *key* is what the provider sees: ``paper`` (lower-case, all
  ``string.punctuation`` removed, as Xia et al. 2021) or ``strip`` (lower-case,
  surrounding punctuation stripped);
- :class:`WordKeys` gives the (left key, right key) pairs one example needs
  for a layout, stop words dropped; :class:`~priorkit.align.PriorBuilder`
  extends it with the tokenizer and the token matrices.

Importing this module loads neither torch nor transformers, so a process that
only needs pairs (a precompute child, a test) starts in a second.
"""
from __future__ import annotations

import string
from typing import Any, Iterable, Sequence

from ..errors import PriorkitError
from ..providers.base import PriorProvider
from ..providers.spec import LAYOUTS, PAPER_STOP_WORDS, PriorSpec, check_layout

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


def paper_key(chunk: str) -> str:
    """The key of a whitespace chunk: lower-cased, ``string.punctuation`` removed."""
    return chunk.lower().translate(_PUNCT_TABLE)


def paper_words(text: str) -> list[str]:
    """The paper's word sequence for a sentence (empty keys dropped)."""
    return [k for k in (paper_key(c) for c in text.split()) if k]


def is_stop_word(key: str) -> bool:
    """Stop words (and empty keys) get similarity 0 with anything in ``xia2021``."""
    return not key or key in PAPER_STOP_WORDS


def strip_key(chunk: str) -> str:
    """Lower-case and strip surrounding punctuation (keeps inner hyphens)."""
    return chunk.lower().strip(string.punctuation)


#: the key functions of priorkit.providers.spec.KEYS
KEY_FUNCTIONS = {"paper": paper_key, "strip": strip_key}


class WordKeys:
    """Which (left key, right key) pairs an example needs, for one provider and layout.

    :param provider: a :class:`PriorProvider` or a registered provider name;
        its ``segment`` groups words into phrases (``full`` layout).
    :param layout: ``"paper"`` (side A with ``cls``/``sep`` against side B with
        ``sep``) or ``"full"`` (every word or phrase against every other).
    :param stop_words: keys never sent to the provider (empty keys count too).
    :param stop_value: the value stop words get.
    :param keys: ``"paper"`` or ``"strip"`` (see module doc).
    """

    def __init__(self, provider: PriorProvider | str, layout: str = "full",
                 stop_words: Iterable[str] | None = None, stop_value: float = 0.0, keys: str = "strip") -> None:
        check_layout(layout, keys)
        if isinstance(provider, str):
            from ..providers.plugins import get_provider

            provider = get_provider(provider)
        if not isinstance(provider, PriorProvider):
            raise TypeError(f"provider must be a PriorProvider or a provider name, not {type(provider).__name__}")
        #: the provider as given (never a cache wrapper); ``provider`` may wrap it
        self.base_provider: PriorProvider = provider
        self.provider: PriorProvider = provider
        self.layout = layout
        self.stop_words = frozenset(stop_words) if stop_words is not None else None
        self.stop_value = float(stop_value)
        self.key_name = keys
        self.key = KEY_FUNCTIONS[keys]

    @classmethod
    def from_spec(cls, spec: PriorSpec, provider: PriorProvider | None = None) -> "WordKeys":
        """The word pairs ``spec`` asks for (``provider``: an already built one, default
        :meth:`PriorSpec.build_provider`)."""
        return cls(provider or spec.build_provider(), **spec.word_options())

    @classmethod
    def paper(cls, provider: PriorProvider | str) -> "WordKeys":
        """The paper preset's word pairs (keys, layout, stop words) for ``provider``."""
        if isinstance(provider, str):
            return cls.from_spec(PriorSpec(provider=provider, preset="paper"))
        return cls.from_spec(PriorSpec(preset="paper"), provider)

    # ---- words --------------------------------------------------------
    def _side_keys(self, text: str | Sequence[str]) -> list[str]:
        chunks = text.split() if isinstance(text, str) else list(text)
        return [self.key(c) for c in chunks]

    def _spans(self, keys: list[str]) -> list[tuple[int, int]]:
        if self.layout == "paper":
            return [(i, i + 1) for i in range(len(keys))]
        spans = self.provider.segment(keys)
        _check_spans(spans, len(keys), self.base_provider)
        return spans

    def word_pairs(self, text_a: str | Sequence[str], text_b: str | Sequence[str] | None = None
                   ) -> list[tuple[str, str]]:
        """The (left, right) keys ``build`` asks the provider for (before truncation).

        Used by ``priorkit precompute`` to fill a cache in bulk.
        """
        left, right = self._query_keys(text_a, text_b)
        return [(a, b) for a in left for b in right]

    def _query_keys(self, text_a, text_b) -> tuple[list[str], list[str]]:
        _input_kind(text_a, text_b)
        keys_a = self._side_keys(text_a)
        if self.layout == "paper":
            if text_b is None:
                raise PriorkitError("the 'paper' layout needs a sentence pair; use layout='full' for single sentences")
            keys_b = self._side_keys(text_b)
            left = _dedupe(["cls", *keys_a, "sep"])
            right = _dedupe([*keys_b, "sep"])
        else:
            phrases = _phrase_keys(keys_a, self._spans(keys_a))
            if text_b is not None:
                keys_b = self._side_keys(text_b)
                phrases += _phrase_keys(keys_b, self._spans(keys_b))
            left = right = _dedupe(phrases)
        stop = self.stop_words or frozenset()
        left = [k for k in left if k and k not in stop]
        right = [k for k in right if k and k not in stop]
        return left, right


def _input_kind(text_a: Any, text_b: Any = None, name_a: str = "text_a", name_b: str = "text_b") -> bool:
    """Check one example's input; True for pre-split word lists, False for raw strings.

    Caught here rather than by the tokenizer, whose TypeError names neither the
    argument nor the fix.
    """
    split = _is_word_list(text_a, name_a)
    if text_b is not None and _is_word_list(text_b, name_b) != split:
        raise PriorkitError(f"{name_a} and {name_b} must both be strings or both be word lists, not "
                            f"{type(text_a).__name__} and {type(text_b).__name__}")
    return split


def _is_word_list(text: Any, name: str) -> bool:
    if isinstance(text, str):
        return False
    if isinstance(text, (list, tuple)):
        bad = next((w for w in text if not isinstance(w, str)), _NO_BAD)
        if bad is _NO_BAD:
            return True
        raise PriorkitError(f"{name} is a word list holding {type(bad).__name__} {bad!r}; every word must be a str")
    raise PriorkitError(f"{name} must be a string (raw text) or a list of word strings (pre-split), "
                        f"not {type(text).__name__} {text!r:.60}")


_NO_BAD = object()


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _phrase_keys(keys: list[str], spans: list[tuple[int, int]]) -> list[str]:
    return [" ".join(k for k in keys[s:e] if k) for s, e in spans]


def _check_spans(spans, n: int, provider: PriorProvider) -> None:
    pos = 0
    for s, e in spans:
        if s != pos or e <= s:
            break
        pos = e
    else:
        if pos == n:
            return
    raise PriorkitError(
        f"provider {provider.name!r} (plug-in {provider.plugin!r}) returned segments {spans[:5]}... that "
        f"do not cover {n} words in order; segment() must return contiguous half-open spans"
    )


__all__ = ["WordKeys", "PAPER_STOP_WORDS", "paper_key", "paper_words", "is_stop_word", "strip_key",
           "KEY_FUNCTIONS", "LAYOUTS"]

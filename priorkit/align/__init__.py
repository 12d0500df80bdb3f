"""From words to the tokens a model sees: keys, word pairs, alignment, token matrices.

- :mod:`~priorkit.align.words`: words, keys and the word pairs a provider is
  asked for (:class:`WordKeys`); imports without torch;
- :mod:`~priorkit.align.tokens`: fast tokenizers and token-to-word alignment
  (:class:`Alignment`);
- :mod:`~priorkit.align.builder`: :class:`PriorBuilder`, the (L, L) token
  matrices (torch is imported when a tensor is made).

See docs/alignment.md.
"""
from __future__ import annotations

from .builder import PriorBuilder
from .tokens import Alignment, load_tokenizer, tokenizer_fingerprint
from .words import KEY_FUNCTIONS, LAYOUTS, PAPER_STOP_WORDS, WordKeys, paper_key, strip_key

__all__ = ["PriorBuilder", "WordKeys", "Alignment", "load_tokenizer", "tokenizer_fingerprint", "LAYOUTS",
           "KEY_FUNCTIONS", "strip_key", "paper_key", "PAPER_STOP_WORDS"]

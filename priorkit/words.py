"""Deprecated location of the paper's word keys and stop words; import from
:mod:`priorkit.align.words` instead (it re-exports them and warns once)."""
from __future__ import annotations

import warnings

from .align.words import PAPER_STOP_WORDS, is_stop_word, paper_key, paper_words  # noqa: F401

__all__ = ["PAPER_STOP_WORDS", "paper_key", "paper_words", "is_stop_word"]

warnings.warn("priorkit.words moved to priorkit.align.words; import from there", DeprecationWarning, stacklevel=2)

"""Words as the paper sees them: whitespace chunks, lower-cased, punctuation stripped."""
from __future__ import annotations

import string

#: The stop-word list of Xia et al. (2021), plus the special tokens' keys.
PAPER_STOP_WORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with am cls sep""".split()
)

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

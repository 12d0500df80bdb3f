"""The paper's WordNet measure (``xia2021``) in plain NLTK loops, following the authors'
``get_similarity`` line by line: the reference the wordnet provider is checked
(tests/test_wordnet.py) and timed (benchmarks/wordnet_speed.py) against."""
from __future__ import annotations

from typing import Any, Callable

#: The stop words of Xia et al. (2021) plus the special-token keys, spelled out here so the
#: reference does not depend on priorkit.align.words.
PAPER_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with am cls sep".split()
)


def nltk_xia2021(wn: Any, a: str, b: str, wup: Callable[[Any, Any], float | None] | None = None) -> float:
    """The measure for one word pair with NLTK's reader ``wn``; ``wup(x, y)`` is NLTK's
    ``x.wup_similarity(y)`` unless given (e.g. remembered across calls)."""
    wup = wup or (lambda x, y: x.wup_similarity(y))
    if not a or not b or a in PAPER_STOP or b in PAPER_STOP:
        return 0.0
    left, right = wn.synsets(a), wn.synsets(b)
    if not left or not right:
        return 1.0 if a == b else 0.0

    def names(synsets):
        syn, ant = [], []
        for s in synsets:
            for lemma in s.lemmas():
                syn.append(lemma.name())
                if lemma.antonyms():
                    ant.append(lemma.antonyms()[0].name())
        return syn, ant

    lsyn, lant = names(left)
    rsyn, rant = names(right)
    if b in lant or b in lsyn or a in rant or a in rsyn:
        return 1.0
    s1 = s2 = 0.0
    c1 = c2 = 0
    for x in left:
        for y in right:
            v1, v2 = wup(x, y), wup(y, x)
            if v1 is not None:
                s1, c1 = s1 + v1, c1 + 1
            if v2 is not None:
                s2, c2 = s2 + v2, c2 + 1
    return (s1 + s2) / (c1 + c2) if c1 + c2 else 0.0

"""A small lemmatiser checked against a vocabulary (WordNet's *morphy* idea).

ConceptNet's English concepts are mostly base forms ("dog", "heart_attack";
the ConceptNet 4 graph shipped here even stores "clothe" for "clothes"), while
text brings inflected forms ("dogs", "heart attacks", "running").  Instead of
a full lemmatiser (NLTK's needs WordNet loaded, seconds of start-up) we apply
morphy's detachment rules plus a short irregular table and keep the first
candidate the graph actually knows: the vocabulary is the dictionary, so the
rules cannot invent a wrong lemma that happens to be an unknown string.
"""
from __future__ import annotations

from typing import Callable

# WordNet morphy's detachment rules (noun, verb, adjective), in its order.
_SUFFIX_RULES: tuple[tuple[str, str], ...] = (
    ("ies", "y"), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
    ("men", "man"), ("es", "e"), ("es", ""), ("s", ""),
    ("ied", "y"), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
    ("est", ""), ("est", "e"), ("er", ""), ("er", "e"),
)

#: frequent irregular forms morphy's exception lists would cover
IRREGULAR: dict[str, str] = {
    "children": "child", "people": "person", "men": "man", "women": "woman", "mice": "mouse",
    "feet": "foot", "teeth": "tooth", "geese": "goose", "lives": "life", "wives": "wife",
    "knives": "knife", "leaves": "leaf", "wolves": "wolf", "halves": "half", "data": "datum",
    "was": "be", "were": "be", "is": "be", "are": "be", "been": "be", "am": "be",
    "went": "go", "gone": "go", "did": "do", "done": "do", "had": "have", "has": "have",
    "ate": "eat", "eaten": "eat", "ran": "run", "saw": "see", "seen": "see", "made": "make",
    "took": "take", "taken": "take", "gave": "give", "given": "give", "got": "get",
    "came": "come", "knew": "know", "known": "know", "thought": "think", "bought": "buy",
    "brought": "bring", "felt": "feel", "kept": "keep", "told": "tell", "said": "say",
    "found": "find", "wrote": "write", "written": "write", "spoke": "speak", "spoken": "speak",
    "drove": "drive", "driven": "drive", "flew": "fly", "flown": "fly", "sang": "sing",
    "sung": "sing", "swam": "swim", "began": "begin", "begun": "begin", "broke": "break",
    "broken": "break", "chose": "choose", "chosen": "choose", "fell": "fall", "fallen": "fall",
    "better": "good", "best": "good", "worse": "bad", "worst": "bad",
}

_VOWELS = set("aeiou")


def word_candidates(word: str) -> list[str]:
    """Possible base forms of one word, most plausible first (the word itself excluded)."""
    out: list[str] = []
    if word in IRREGULAR:
        out.append(IRREGULAR[word])
    for suffix, repl in _SUFFIX_RULES:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            stem = word[: -len(suffix)] + repl
            out.append(stem)
            # running -> runn -> run, stopped -> stopp -> stop, bigger -> bigg -> big
            if (repl == "" and len(stem) >= 3 and stem[-1] == stem[-2]
                    and stem[-1] not in _VOWELS and stem[-1] not in "lsz"):
                out.append(stem[:-1])
    seen: set[str] = {word}
    return [c for c in out if not (c in seen or seen.add(c))]


def lemmatize(term: str, known: Callable[[str], bool]) -> str | None:
    """The first known base form of an underscore-joined term, or None.

    The head of an English noun phrase is its last word ("heart attacks" ->
    "heart_attack"); of a verb phrase its first ("running shoes" is tried as
    "run_shoes" only after "running_shoe").
    """
    words = term.split("_")
    for position in ((len(words) - 1, 0) if len(words) > 1 else (0,)):
        for cand in word_candidates(words[position]):
            trial = "_".join(words[:position] + [cand] + words[position + 1:])
            if known(trial):
                return trial
    return None

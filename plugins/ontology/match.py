"""Finding concept mentions in a word sequence: longest match over token tuples.

Normalisation, applied alike to ontology names and to text:

1. text is lower-cased and cut at every non-alphanumeric character into
   sub-tokens (``"Heart-attack,"`` -> ``heart attack``); pure punctuation
   words (``","``, ``"-"``) yield none and are transparent inside a mention;
   a mention always covers whole words (it starts at a word's first sub-token
   and ends at a word's last);
2. optional plural folding per token: ``-ies`` -> ``-y``; a final ``-s`` is
   dropped unless the word ends in ``-ss``, ``-us`` or ``-is`` or has at most
   3 letters (``seizures`` -> ``seizure``, ``abnormalities`` ->
   ``abnormality``, ``stenosis`` and ``loss`` unchanged);
3. every name is indexed twice: split at punctuation as in 1
   (``x linked recessive``) and with each whitespace chunk's punctuation
   removed (``xlinked recessive``), so the aligner's punctuation-stripped
   keys (``"xlinked"``) find it as well as ``X-linked`` or ``X - linked``.

Acronyms -- one-token names of at most 5 characters written in capitals
(``MI``, ``ASD``) or synonyms typed ``abbreviation`` -- match only with the
same capitals, so the common word "all" or "ra" never becomes a concept.
Single-token names that are function words (``all``, ``the``, ...) are not
indexed at all (the root of HPO is named "All").

Matching is greedy leftmost-longest: at each position the longest indexed
token tuple wins, then matching resumes after it.

Optional normalisation rules (off in a bare ``ConceptMatcher``; the provider's
defaults are in :mod:`.rules`), applied alike to names and text:

- ``greek``: Greek letters are spelled out (``TNF-α`` -> ``tnf alpha``, so it
  meets ``TNF-alpha`` and ``TNFalpha``);
- ``spelling``: British spellings folded to US ones (``haemorrhage``,
  ``oedema``, ``tumour``, ``anaesthesia``, ``diarrhoea``);
- ``adjectives``: a one-word name also answers to its adjective
  (``hypertension`` -> ``hypertensive``, ``ischemia`` -> ``ischemic``,
  ``epilepsy`` -> ``epileptic``, ``psychosis`` -> ``psychotic``,
  ``diabetes`` -> ``diabetic``, ``parkinsonism`` -> ``parkinsonian``);
- ``acronym_case=False``: acronyms match in any case, like other names.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Sequence

_NON_WORD = re.compile(r"[\W_]+")
_SPLIT = re.compile(r"[^\W_]+")

#: function words never taken as one-word concept names
DEFAULT_STOP_WORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with all any both each few more most other some none
    can may were has have had do does""".split()
)


#: Greek letters -> their names (lower and upper case)
GREEK = {**{c: n for c, n in zip("αβγδεζηθικλμνξοπρστυφχψω",
                                 "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi "
                                 "omicron pi rho sigma tau upsilon phi chi psi omega".split())},
         **{c: n for c, n in zip("ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ",
                                 "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi "
                                 "Omicron Pi Rho Sigma Tau Upsilon Phi Chi Psi Omega".split())},
         "ς": "sigma", "µ": "mu"}
_GREEK_TABLE = str.maketrans({c: f" {n} " for c, n in GREEK.items()})
_GREEK_TABLE_JOINED = str.maketrans(GREEK)
#: British -> US spelling, on lower-cased sub-tokens
_SPELLING = [(re.compile(p), r) for p, r in (
    (r"^oe(?=[a-z])", "e"), (r"(?<=[^aeiou])ae(?=[a-z])", "e"), (r"(?<=[^aeiou])oea", "ea"),
    (r"(?<=rrh)oe", "e"), (r"^coel", "cel"), (r"(?<=tum|hum|vap|col)our", "or"))]
#: noun suffix -> adjective suffix, for one-word names (``adjectives``)
ADJECTIVE_SUFFIXES = (("etes", "etic"), ("psy", "ptic"), ("osis", "otic"), ("itis", "itic"),
                      ("sion", "sive"), ("ism", "ian"), ("ia", "ic"))
MATCHER_OPTIONS = ("greek", "spelling", "adjectives", "acronym_case")


def us_spelling(token: str) -> str:
    """``haemorrhage`` -> ``hemorrhage``, ``oedema`` -> ``edema``, ``tumour`` -> ``tumor``."""
    if "ae" not in token and "oe" not in token and "our" not in token:
        return token
    for pattern, repl in _SPELLING:
        token = pattern.sub(repl, token)
    return token


def adjective(token: str) -> str | None:
    """The adjective of a disease noun (``hypertension`` -> ``hypertensive``), or None."""
    for noun, adj in ADJECTIVE_SUFFIXES:
        if token.endswith(noun) and len(token) > len(noun) + 3:
            return token[: -len(noun)] + adj
    return None


@dataclasses.dataclass(frozen=True)
class Mention:
    """A recognised concept mention: words ``[start, end)`` naming ``concept_ids``."""

    start: int
    end: int
    concept_ids: tuple[str, ...]
    text: str


def fold_plural(token: str) -> str:
    if len(token) <= 3 or token[-1] != "s" or token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    return token[:-1]


def _is_acronym(text: str) -> bool:
    t = text.strip()
    return 1 < len(t) <= 5 and " " not in t and t.isupper() and t.isalnum()


class ConceptMatcher:
    """A dict of normalised token tuples -> concept numbers, with longest match."""

    def __init__(self, fold_plurals: bool = True, stop_words: Iterable[str] = DEFAULT_STOP_WORDS,
                 greek: bool = False, spelling: bool = False, adjectives: bool = False,
                 acronym_case: bool = True) -> None:
        self.fold_plurals = fold_plurals
        self.stop_words = frozenset(stop_words)
        self.greek, self.spelling, self.adjectives, self.acronym_case = greek, spelling, adjectives, acronym_case
        self._keys: dict[tuple[str, ...], set[int]] = {}  # case-insensitive
        self._exact: dict[tuple[str, ...], set[int]] = {}  # acronyms, case kept
        self._longest: dict[str, int] = {}  # first token -> longest key starting with it
        self._longest_exact: dict[str, int] = {}

    # ---- normalising ----------------------------------------------------
    @property
    def options(self) -> dict[str, bool]:
        return {k: getattr(self, k) for k in MATCHER_OPTIONS}

    def token(self, word: str) -> str:
        t = _NON_WORD.sub("", word.lower())
        return self._fold(t) if t else t

    def _greek(self, text: str, joined: bool = False) -> str:
        if not self.greek or text.isascii():
            return text
        return text.translate(_GREEK_TABLE_JOINED if joined else _GREEK_TABLE)

    def _name_keys(self, text: str) -> set[tuple[str, ...]]:
        joined = tuple(t for t in (self.token(c) for c in self._greek(text, True).split()) if t)
        split = tuple(self._fold(t.lower()) for t in _SPLIT.findall(self._greek(text)))
        keys = {k for k in (joined, split) if k}
        if self.adjectives and len(split) == 1:
            adj = adjective(_SPLIT.findall(self._greek(text))[0].lower())
            if adj:
                keys.add((self._fold(adj),))
        return keys

    # ---- building -------------------------------------------------------
    def add(self, text: str, concept: int, acronym: bool | None = None) -> None:
        """Index name ``text`` of ``concept``; ``acronym=None`` decides by shape."""
        if acronym is None:
            acronym = _is_acronym(text)
        if acronym and not self.acronym_case:
            acronym = False
        if acronym and " " not in text.strip():
            key = (_NON_WORD.sub("", text),)
            if key[0]:
                self._exact.setdefault(key, set()).add(concept)
                self._longest_exact[key[0]] = max(self._longest_exact.get(key[0], 0), 1)
            return
        for key in self._name_keys(text):
            if len(key) == 1 and key[0] in self.stop_words:
                continue
            self._keys.setdefault(key, set()).add(concept)
            if self._longest.get(key[0], 0) < len(key):
                self._longest[key[0]] = len(key)

    def freeze(self) -> None:
        """Sets -> sorted tuples (smaller, deterministic)."""
        self._keys = {k: tuple(sorted(v)) for k, v in self._keys.items()}
        self._exact = {k: tuple(sorted(v)) for k, v in self._exact.items()}

    def state(self) -> tuple[list, list]:
        """JSON-able ``(keys, exact)``: ``[[tokens, concepts], ...]`` of a frozen matcher."""
        return ([[list(k), list(v)] for k, v in self._keys.items()],
                [[list(k), list(v)] for k, v in self._exact.items()])

    @classmethod
    def from_state(cls, fold_plurals: bool, stop_words: Iterable[str], keys: list, exact: list,
                   options: dict | None = None) -> "ConceptMatcher":
        """The frozen matcher :meth:`state` describes (``options``: :attr:`options`)."""
        m = cls(fold_plurals=fold_plurals, stop_words=stop_words, **(options or {}))
        m._keys = {tuple(k): tuple(v) for k, v in keys}
        m._exact = {tuple(k): tuple(v) for k, v in exact}
        for k in m._keys:
            if m._longest.get(k[0], 0) < len(k):
                m._longest[k[0]] = len(k)
        for k in m._exact:
            m._longest_exact[k[0]] = 1
        return m

    def __len__(self) -> int:
        return len(self._keys) + len(self._exact)

    # ---- looking up -----------------------------------------------------
    def _fold(self, token: str) -> str:
        if self.spelling:
            token = us_spelling(token)
        return fold_plural(token) if self.fold_plurals else token

    def lookup(self, phrase: str) -> tuple[int, ...]:
        """Concepts named by the whole ``phrase`` (words separated by spaces); () if none."""
        parts = _SPLIT.findall(self._greek(phrase))
        found = self._keys.get(tuple(self._fold(t.lower()) for t in parts), ())
        if len(parts) == 1:
            exact = self._exact.get((parts[0],), ())
            if exact:
                found = tuple(sorted(set(found) | set(exact)))
        return found

    def find(self, words: Sequence[str]) -> list[tuple[int, int, tuple[int, ...]]]:
        """Leftmost-longest mentions as ``(start, end, concepts)`` over ``words`` indices.

        Words are cut at punctuation into sub-tokens (``heart-attack`` -> heart,
        attack); a mention must start at a word's first sub-token and end at a
        word's last, so spans always cover whole words.
        """
        toks: list[str] = []
        raw: list[str] = []
        word: list[int] = []
        first: list[bool] = []
        last: list[bool] = []
        for i, w in enumerate(words):
            parts = _SPLIT.findall(self._greek(w))
            for k, part in enumerate(parts):
                raw.append(part)
                toks.append(self._fold(part.lower()))
                word.append(i)
                first.append(k == 0)
                last.append(k == len(parts) - 1)
        out: list[tuple[int, int, tuple[int, ...]]] = []
        n = len(toks)
        p = 0
        while p < n:
            if not first[p]:
                p += 1
                continue
            best = 0
            concepts: tuple[int, ...] = ()
            for length in range(min(self._longest.get(toks[p], 0), n - p), 0, -1):
                if not last[p + length - 1]:
                    continue
                hit = self._keys.get(tuple(toks[p:p + length]))
                if hit:
                    best, concepts = length, hit
                    break
            if last[p] and best <= 1 and raw[p] in self._longest_exact:
                exact = self._exact.get((raw[p],))
                if exact:
                    best = 1
                    concepts = tuple(sorted(set(concepts) | set(exact)))
            if best:
                out.append((word[p], word[p + best - 1] + 1, concepts))
                p += best
            else:
                p += 1
        return out

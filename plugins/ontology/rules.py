"""The matcher's switchable rules (issue 23): one provider parameter each.

Index rules change the indexed names (they are part of the saved index's key):

- ``greek``, ``spelling``, ``adjectives``, ``acronym_case``: normalisation, see
  :mod:`.match`;
- ``hpo_modifiers``: when False, HPO concepts outside *Phenotypic abnormality*
  (HP:0000118) -- the modifier, frequency, inheritance and history branches
  ("Acute", "Severe", "Left", "Frequency") -- are not matched.

Match rules work on the matcher's mentions of a sentence:

- ``hyphen_join``: a second pass where words joined by hyphens are read as one
  (``non - steroidal`` -> ``nonsteroidal``, ``MK-801`` -> ``MK801``); its
  mentions and the first pass's are resolved longest first, then leftmost;
- ``split_induced``: a mention ``X - induced Y`` (one dictionary name such as
  "heparin-induced thrombocytopenia") is replaced by the mentions of ``X`` and
  of ``Y``, as chemical-induced-disease corpora annotate them;
- ``split_roles``: a mention ``X agonist`` / ``antagonist`` / ``inhibitor`` /
  ``blocker`` (plurals too; MeSH names such classes, "Dopamine Agonists") whose ``X`` is a
  mention itself becomes the mention of ``X`` alone: corpora annotate the
  chemical, not its role;
- ``abbreviations``: short forms defined in the text (:mod:`.abbrev`):
  ``"within"`` takes the concepts of the dictionary mention that ends at the
  parenthesis and overlaps the long form, ``"exact"`` only of one that spans
  the whole long form, ``False`` is off;
- ``abbreviation_unknown``: a short form whose long form names no concept:
  ``"keep"`` its dictionary reading, ``"drop"`` it (the text defined it as
  something else);
- ``term_filter``: surface forms never taken as mentions (lower-cased), e.g.
  a list made from training labels by ``benchmarks/dictionary_baseline.py
  --make-filter`` (only from a *train* split); default none.

``DEFAULTS`` are the settings that measured best on BC5CDR devel
(docs/results/matcher-ablation-devel.md); ``OLD`` is the matcher before the rules.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from priorkit.errors import ProviderParameterError

from .abbrev import definitions, occurrences

Found = list[tuple[int, int, tuple[int, ...]]]

INDEX_RULES = ("greek", "spelling", "adjectives", "acronym_case", "hpo_modifiers")
MATCH_RULES = ("hyphen_join", "split_induced", "split_roles", "abbreviations", "abbreviation_unknown", "term_filter")

DEFAULTS: dict[str, Any] = {
    "greek": True, "spelling": True, "adjectives": True, "acronym_case": True, "hpo_modifiers": False,
    "hyphen_join": True, "split_induced": True, "split_roles": True, "abbreviations": "within",
    "abbreviation_unknown": "drop", "term_filter": (),
}
#: the matcher as it was before these rules
OLD: dict[str, Any] = {
    "greek": False, "spelling": False, "adjectives": False, "acronym_case": True, "hpo_modifiers": True,
    "hyphen_join": False, "split_induced": False, "split_roles": False, "abbreviations": False,
    "abbreviation_unknown": "keep", "term_filter": (),
}
_CHOICES = {"abbreviations": (False, "within", "exact"), "abbreviation_unknown": ("keep", "drop")}
INDUCERS = frozenset({"induced"})
ROLES = frozenset({"agonist", "agonists", "antagonist", "antagonists", "inhibitor", "inhibitors",
                   "blocker", "blockers"})
PHENOTYPE_ROOT = "HP:0000118"


def outside_phenotypes(data, graph) -> set[int]:
    """HPO concepts (``HP:`` ids) that are not under Phenotypic abnormality; empty without HPO."""
    import numpy as np

    if PHENOTYPE_ROOT not in data.ids:
        return set()
    root = data.index(PHENOTYPE_ROOT)
    rows = np.repeat(np.arange(graph.n_nodes), np.diff(graph.anc_ptr))
    under = set(rows[graph.anc_idx == root].tolist())
    return {i for i, cid in enumerate(data.ids) if cid.startswith("HP:") and i not in under}


def check_rules(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validated rule values (bool rules bool, choices among theirs, term_filter a list of strings)."""
    out = {}
    for name, v in values.items():
        if name not in DEFAULTS:
            raise ProviderParameterError(f"ontology: unknown parameter {name!r}; the matcher rules are {', '.join(DEFAULTS)}")
        if name == "abbreviations" and v is True:
            v = "within"
        if name in _CHOICES:
            if v not in _CHOICES[name]:
                raise ProviderParameterError(f"ontology: {name}={v!r} is not one of {_CHOICES[name]}")
        elif name == "term_filter":
            if isinstance(v, str) or not all(isinstance(t, str) for t in v):
                raise ProviderParameterError(f"ontology: term_filter must be a list of phrases, got {v!r}")
            v = sorted({" ".join(t.lower().split()) for t in v})
        elif not isinstance(v, bool):
            raise ProviderParameterError(f"ontology: matcher rule {name}={v!r} must be True or False")
        out[name] = v
    return out


def _resolve(mentions: Found) -> Found:
    """Non-overlapping mentions, longest first, then leftmost; in text order."""
    taken: list[tuple[int, int, tuple[int, ...]]] = []
    used: set[int] = set()
    for m in sorted(mentions, key=lambda m: (m[0] - m[1], m[0])):
        span = range(m[0], m[1])
        if not used.intersection(span):
            taken.append(m)
            used.update(span)
    return sorted(taken)


def _hyphen_joined(words: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
    """Words with hyphen-joined runs as one word (hyphens removed), and each one's span."""
    out, spans = [], []
    i, n = 0, len(words)
    while i < n:
        j, text = i, words[i]
        while j + 2 < n and words[j + 1] == "-" and words[j][-1:].isalnum() and words[j + 2][:1].isalnum():
            j += 2
            text += words[j]
        out.append(text.replace("-", "") if any(c.isalnum() for c in text) else text)
        spans.append((i, j + 1))
        i = j + 1
    return out, spans


def find(find_words: Callable[[Sequence[str]], Found], words: Sequence[str], rules: Mapping[str, Any],
         memory: dict | None = None, sentence: int = 0, window: int | None = None) -> Found:
    """The mentions of ``words`` under the match rules; ``find_words`` is the matcher's ``find``.

    ``memory`` (short form -> (concepts or None, sentence number)) carries
    abbreviation definitions to later sentences of a document; entries older than
    ``window`` sentences are forgotten."""
    found = find_words(words)
    if rules["hyphen_join"]:
        joined, spans = _hyphen_joined(words)
        if len(joined) < len(words) or joined != list(words):
            extra = [(spans[s][0], spans[e - 1][1], c) for s, e, c in find_words(joined)
                     if spans[e - 1][1] - spans[s][0] > e - s or joined[s:e] != list(words[spans[s][0]:spans[e - 1][1]])]
            if extra:
                found = _resolve(found + extra)
    if rules["split_induced"]:
        found = _split_induced(find_words, words, found)
    if rules["split_roles"]:
        found = _split_roles(find_words, words, found)
    if rules["abbreviations"]:
        found = _abbreviations(words, found, rules, {} if memory is None else memory, sentence, window)
    if rules["term_filter"]:
        drop = set(rules["term_filter"])
        found = [m for m in found if " ".join(w.lower() for w in words[m[0]:m[1]]) not in drop]
    return found


def _split_induced(find_words, words: Sequence[str], found: Found) -> Found:
    out: Found = []
    for s, e, c in found:
        cut = next((k for k in range(s + 2, e - 1) if words[k].lower() in INDUCERS and words[k - 1] == "-"), None)
        if cut is None:
            out.append((s, e, c))
            continue
        out += [(s + a, s + b, cc) for a, b, cc in find_words(words[s:cut - 1])]
        out += [(cut + 1 + a, cut + 1 + b, cc) for a, b, cc in find_words(words[cut + 1:e])]
    return out


def _split_roles(find_words, words: Sequence[str], found: Found) -> Found:
    out: Found = []
    for s, e, c in found:
        if e - s >= 2 and words[e - 1].lower() in ROLES:
            head = [(s + a, s + b, cc) for a, b, cc in find_words(words[s:e - 1])]
            if head:
                out += head
                continue
        out.append((s, e, c))
    return out


def _abbreviations(words: Sequence[str], found: Found, rules: Mapping[str, Any], memory: dict,
                   sentence: int, window: int | None) -> Found:
    for short, lf_start, paren, _ in definitions(words):
        ending = [m for m in found if m[1] == paren and
                  (m[0] == lf_start if rules["abbreviations"] == "exact" else m[0] < paren and m[1] > lf_start)]
        memory[short] = (max(ending, key=lambda m: m[1] - m[0])[2] if ending else None, sentence)
    if not memory:
        return found
    if window is not None:
        for short in [k for k, (_, at) in memory.items() if sentence - at > window]:
            del memory[short]
    spans = []
    for short, (concepts, _) in memory.items():
        if concepts is None and rules["abbreviation_unknown"] == "keep":
            continue
        spans += [(s, e, concepts) for s, e in occurrences(words, short)]
    if not spans:
        return found
    spans = _resolve(spans)  # short forms overlapping each other ("5 - FU", "FU"): the longest
    covered = {i for s, e, _ in spans for i in range(s, e)}
    kept = [m for m in found if not covered.intersection(range(m[0], m[1]))]
    return sorted(kept + [m for m in spans if m[2] is not None])

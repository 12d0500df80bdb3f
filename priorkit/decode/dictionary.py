"""A dictionary's concept matches as entities: matches -> BIO tags through a group -> type map,
and the concept IDs behind each tagged span.

A match (:class:`~priorkit.providers.base.Match`: words ``[start, end)``, its ``concept_ids`` and
its ``group``) becomes an entity of the type its group maps to; a span matched in several groups
takes the first of them in the map's order, and groups outside the map are ignored.  The silver
labels, the dictionary-only baseline, the calibration, the post-hoc arms and the tagger all read
matches this way.

:class:`Dictionary` is a provider made ready for the steps after a model
(:mod:`priorkit.decode.steps`): its type map, the forms a calibration dropped and kept (the
``calibrated`` provider over it), its sentence-by-sentence and document-level matches.
Torch-free.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..errors import PriorkitError
from ..providers.base import Match
from .spans import Span


def typed_match_objects(matches: Iterable[Any], types: Mapping[str, str]) -> dict[tuple[int, int], Any]:
    """Each matched span's match of the first of its groups in the type map's order."""
    rank = {g: i for i, g in enumerate(types)}
    best: dict[tuple[int, int], Any] = {}
    for m in matches:
        if m.group not in rank:
            continue
        span = (m.start, m.end)
        if span not in best or rank[m.group] < rank[best[span].group]:
            best[span] = m
    return best


def typed_matches(matches: Iterable[Any], types: Mapping[str, str]) -> dict[tuple[int, int], str]:
    """Each matched span's group: the first of its groups in the type map's order (others ignored)."""
    return {span: m.group for span, m in typed_match_objects(matches, types).items()}


def group_entities(matches: Sequence[Match], n_words: int, group_to_label: Mapping[str, str]) -> list[str]:
    """BIO tags of ``n_words`` words from the matches (one entity per span)."""
    best = typed_matches(matches, group_to_label)  # each span's group: the first in the map's order
    tags = ["O"] * n_words
    for (s, e), g in best.items():
        label = group_to_label[g]
        tags[s] = f"B-{label}"
        for i in range(s + 1, e):
            tags[i] = f"I-{label}"
    return tags


def concept_ids(matches: Iterable[Match], types: Mapping[str, str]) -> dict[Span, tuple[str, ...]]:
    """The concept IDs of every (type, start, end) the matches name: those of all the matches with
    that exact span whose group maps to that type (``myocardial infarction``: its HPO and its
    MeSH C concept, both Disease), in the map's order of groups, each ID once."""
    rank = {g: i for i, g in enumerate(types)}
    found: dict[Span, list[tuple[int, str]]] = {}
    for m in matches:
        if m.group in rank:
            found.setdefault(Span(types[m.group], m.start, m.end), []).extend(
                (rank[m.group], c) for c in m.concept_ids)
    return {span: tuple(dict.fromkeys(c for _, c in sorted(ids, key=lambda x: x[0])))
            for span, ids in found.items()}


def check_types(types: Any, where: str) -> dict[str, str]:
    """A group -> entity type map as a dict; stops on an empty one or a non-string entry."""
    if not isinstance(types, Mapping) or not types:
        raise PriorkitError(f"{where}: the dictionary needs a type map (match group -> entity type, e.g. "
                            f"{{\"mesh:D\": \"Chemical\"}}), got {types!r}")
    bad = [(g, t) for g, t in types.items() if not isinstance(g, str) or not isinstance(t, str) or not t]
    if bad:
        raise PriorkitError(f"{where}: type map entries must be group -> entity type strings, got {bad[0]!r}")
    return dict(types)


class Dictionary:
    """A provider's matches as typed entities (module doc).

    ``drop`` / ``keep``: what a calibration left out of the matches and kept inside a dropped
    branch (the ``calibrated`` provider); they apply to the sentence-by-sentence matches that the
    merge and the fragments read.  The document pass reads the provider as it is (the post-hoc
    arms' rule)."""

    def __init__(self, provider: Any, types: Mapping[str, str], drop: Sequence[Sequence[str]] = (),
                 keep: Sequence[Sequence[str]] = ()) -> None:
        if not getattr(provider, "supports_matches", False):
            raise PriorkitError(f"dictionary: provider {getattr(provider, 'name', provider)!r} has no concept "
                                "matches; use one that implements matches(), e.g. ontology")
        self.provider = provider
        self.types = check_types(types, f"dictionary {provider.name!r}")
        self.drop = [list(d) for d in drop]
        self.keep = [list(k) for k in keep]
        self.sentence_provider = provider
        if self.drop:
            from ..providers.plugins import get_provider

            self.sentence_provider = get_provider("calibrated", provider=provider, drop=self.drop, keep=self.keep)

    @property
    def reads_documents(self) -> bool:
        return hasattr(self.provider, "matches_document")

    def sentence_matches(self, sentences: Sequence[Sequence[str]]) -> list[list[Match]]:
        """Each sentence's matches on its own (after the calibration's drop)."""
        return [list(self.sentence_provider.matches(list(w))) for w in sentences]

    def document_matches(self, sentences: Sequence[Sequence[str]], window: int) -> list[list[Match]]:
        """The matches of the sentences of one document read in order: abbreviations defined in one
        sentence recognised ``window`` sentences on (-1: to the end)."""
        if not self.reads_documents:
            raise PriorkitError(f"document pass: provider {self.provider.name!r} reads one sentence at a time "
                                "(no matches_document); use the ontology provider or drop the document step")
        return self.provider.matches_document([list(w) for w in sentences], window=None if window < 0 else window)

    def tags(self, matches: Sequence[Sequence[Match]], sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """Each sentence's BIO tags from its matches."""
        return [group_entities(m, len(w), self.types) for m, w in zip(matches, sentences)]

    def concept_ids(self, matches: Sequence[Match]) -> dict[Span, tuple[str, ...]]:
        return concept_ids(matches, self.types)

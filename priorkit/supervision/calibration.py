"""How far to trust a dictionary: its matches checked against the gold labels a run has.

A provider's concept matches become entities through a group -> entity-type map (the rule of
the silver labels and of the dictionary-only baseline).  On the run's own gold subset (never
devel or test) every matched surface form is counted: how often its match is exactly a gold
entity of the mapped type.  A form's precision is smoothed towards its group's, so a form
that the gold never shows keeps its group's estimate::

    p(form) = (hits + k * p(group)) / (n + k)          k = ``prior_strength``

With ``branches`` on, a form is smoothed towards its *branch* instead, and the branch towards
its group: the provider's :meth:`~priorkit.providers.base.PriorProvider.match_branch` (an ontology's
level-2 concepts: MeSH's "Enzymes and Coenzymes" under tree D, HPO's "Clinical modifier"), so
a form the gold never shows inherits what the gold says of its neighbours::

    p(branch) = (hits_b + k * p(group)) / (n_b + k)      p(form) = (hits + k * p(branch)) / (n + k)

A branch below ``threshold`` is dropped whole (``["*", group, branch]``), except its forms
the gold shows right often enough (the ``keep`` list).

Forms below ``threshold`` are dropped: the ``calibrated`` provider (plugins/calibrated.py)
wraps the dictionary without them, and token features, silver labels and the post-hoc merge
all read that provider.  The same counts give the dictionary's quality against the gold
subset (precision, recall, F1 per type), before and after the drop, which a run prints before
it trains and which weighs silver labels (:meth:`Calibration.silver_weight`).

Torch-free; it needs only the provider's ``matches`` and the BIO tags of the gold sentences.
"""
from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from ..decode.dictionary import typed_match_objects, typed_matches  # noqa: F401 (their home is decode/)
from ..decode.spans import spans
from ..errors import PriorkitError

Span = tuple[int, int, str]  # first word, end word (exclusive), entity type
#: folds of the held-out estimate of a calibrated dictionary's quality
FOLDS = 5


@dataclasses.dataclass
class CalibrateConfig:
    """The ``prior.calibrate`` section: calibrate the dictionary on the run's gold subset."""

    #: forms whose smoothed precision is below this are dropped (0: count only, drop nothing).
    threshold: float = 0.5
    #: pseudo-matches of the group's precision added to each form's counts (the smoothing).
    prior_strength: float = 2.0
    #: group -> entity type; null: the silver labels' map, else the pipeline's task.dictionary_types,
    #: restricted to the groups whose type the task has (the others are left as they are).
    types: dict[str, str] | None = None
    #: smooth each form towards its branch (the provider's ``match_branch``: an ontology's
    #: level-2 concepts), the branch towards its group, and drop whole branches below the
    #: threshold (but the forms the gold shows right); false: forms towards their group only.
    branches: bool = False

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if isinstance(self.threshold, bool) or not 0.0 <= self.threshold <= 1.0:
            out.append(("threshold", f"must lie in [0, 1] (a precision), got {self.threshold!r}"))
        if isinstance(self.prior_strength, bool) or not self.prior_strength >= 0:
            out.append(("prior_strength", f"must be >= 0, got {self.prior_strength!r}"))
        if self.types is not None and not self.types:
            out.append(("types", "is empty; map at least one group to an entity type, or leave it null"))
        if not isinstance(self.branches, bool):
            out.append(("branches", f"must be true or false, got {self.branches!r}"))
        return out


def form_of(words: Sequence[str], start: int, end: int) -> str:
    """A match's surface form: its words, lower-cased, joined by one space."""
    return " ".join(w.lower() for w in words[start:end])


def gold_spans(tags: Sequence[str]) -> set[Span]:
    """The entities of BIO tags as (start, end exclusive, type) (the one reader,
    :func:`priorkit.decode.spans.spans`)."""
    return {(x.start, x.end, x.type) for x in spans(tags)}


@dataclasses.dataclass(frozen=True)
class DropRule:
    """What a drop list and a keep list leave out (:meth:`Calibration.dropped`,
    :meth:`Calibration.kept`): the one reading that the held-out estimate and the ``calibrated``
    provider (plugins/calibrated.py) share."""

    forms: frozenset  # (form, group); form "*" stands for the whole group (also in ``groups``)
    groups: frozenset  # group
    branches: frozenset  # (group, branch)
    keep: frozenset = frozenset()  # (form, group) kept although their group or branch is dropped

    @classmethod
    def of(cls, drop: Iterable[Sequence[str]], keep: Iterable[Sequence[str]] = ()) -> "DropRule":
        entries = {tuple(d) for d in drop}
        pairs = {d for d in entries if len(d) == 2}
        return cls(frozenset(pairs), frozenset(g for f, g in pairs if f == "*"),
                   frozenset((d[1], d[2]) for d in entries if len(d) == 3), frozenset(tuple(k) for k in keep))

    def removes(self, form: str, group: str, branch: str = "") -> bool:
        """Whether a match of ``form`` in ``group`` (and ``branch``) is left out."""
        if (form, group) in self.keep:
            return False
        return (form, group) in self.forms or group in self.groups or (group, branch) in self.branches


@dataclasses.dataclass
class Quality:
    """The dictionary's entity-level scores against gold sentences."""

    precision: float
    recall: float
    f1: float
    predicted: int
    gold: int
    correct: int

    @classmethod
    def of(cls, correct: int, predicted: int, gold: int) -> "Quality":
        p = correct / predicted if predicted else 0.0
        r = correct / gold if gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return cls(p, r, f, predicted, gold, correct)

    def line(self) -> str:
        return (f"P {100 * self.precision:.1f} R {100 * self.recall:.1f} F1 {100 * self.f1:.1f} "
                f"({self.correct}/{self.predicted} matches right, {self.gold} gold entities)")


@dataclasses.dataclass
class Calibration:
    """Counts of a dictionary's matches against gold sentences (see the module doc)."""

    types: dict[str, str]
    #: (form, group) -> [hits, matches]
    forms: dict[tuple[str, str], list[int]]
    #: group -> [hits, matches]
    groups: dict[str, list[int]]
    #: gold entities per type
    gold: dict[str, int]
    #: per gold sentence, its typed matches as (form, group, branch, hit); branch "" when off
    records: list[list[tuple[str, str, str, int]]]
    prior_strength: float = 2.0
    #: (group, branch) -> [hits, matches] (empty with branches off)
    branches: dict[tuple[str, str], list[int]] = dataclasses.field(default_factory=dict)

    @property
    def sentences(self) -> int:
        return len(self.records)

    # ---- estimates ------------------------------------------------------------------
    def group_precision(self, group: str) -> float:
        hits, n = self.groups.get(group, (0, 0))
        # a group the gold never shows: Laplace's rule (1/2), not a guess of 0 or 1
        return (hits + 1.0) / (n + 2.0)

    def branch_precision(self, group: str, branch: str) -> float:
        """A branch's precision smoothed towards its group's (the group's with branches off)."""
        if not branch:
            return self.group_precision(group)
        hits, n = self.branches.get((group, branch), (0, 0))
        k = self.prior_strength
        return (hits + k * self.group_precision(group)) / (n + k)

    def precision(self, form: str, group: str, branch: str = "") -> float:
        """The smoothed precision of a surface form of ``group`` (its branch's, or its group's
        with branches off, when never seen).  A form seen in several branches is smoothed
        towards the branch it was seen in most."""
        hits, n = self.forms.get((form, group), (0, 0))
        if n and not branch:
            branch = self._form_branch.get((form, group), "")
        k = self.prior_strength
        return (hits + k * self.branch_precision(group, branch)) / (n + k)

    @functools.cached_property
    def _form_branch(self) -> dict[tuple[str, str], str]:
        """Each seen (form, group)'s branch: the one it was seen in most."""
        seen: dict[tuple[str, str], Counter] = {}
        for row in self.records:
            for form, group, branch, _ in row:
                seen.setdefault((form, group), Counter())[branch] += 1
        return {key: c.most_common(1)[0][0] for key, c in seen.items()}

    def _low_branches(self, threshold: float) -> list[tuple[str, str]]:
        """The (group, branch) pairs the gold shows, below ``threshold``, sorted."""
        return sorted((g, b) for (g, b), (_, n) in self.branches.items()
                      if n > 0 and self.branch_precision(g, b) < threshold)

    def dropped(self, threshold: float) -> list[tuple[str, ...]]:
        """What falls below ``threshold``, sorted: ``(form, group)`` pairs (only forms the gold
        shows can fall below it alone), ``("*", group)`` for a whole group and, with branches
        on, ``("*", group, branch)`` for a whole branch (see :meth:`kept`)."""
        out: list[tuple[str, ...]] = sorted((f, g) for (f, g) in self.forms if self.precision(f, g) < threshold)
        out += sorted(("*", g) for g in self.groups if self.group_precision(g) < threshold
                      and self.groups[g][1] > 0)
        out += [("*", g, b) for g, b in self._low_branches(threshold)]
        return out

    def kept(self, threshold: float) -> list[tuple[str, str]]:
        """The (form, group) pairs the gold shows at ``threshold`` or above inside a dropped
        branch: kept although their branch goes (the ``calibrated`` provider's ``keep``)."""
        low = set(self._low_branches(threshold))
        return sorted((f, g) for (f, g) in self.forms
                      if (g, self._form_branch.get((f, g), "")) in low and self.precision(f, g) >= threshold)

    # ---- quality --------------------------------------------------------------------
    def quality(self, threshold: float | None = None, by_type: bool = False) -> Any:
        """Entity P/R/F1 of the dictionary on the gold sentences, as it is (``threshold``
        None) or calibrated at ``threshold``, estimated on held-out folds: each of
        ``FOLDS`` folds of the sentences is scored with the forms dropped by the counts of
        the other folds (in-sample counts would judge the drop by the very matches it
        removed).  ``by_type``: {type: Quality}."""
        correct: Counter = Counter()
        predicted: Counter = Counter()
        folds = FOLDS if threshold is not None and len(self.records) >= FOLDS else 1
        for k in range(folds):
            if threshold is None:
                rule = None
            else:
                rest = self if folds == 1 else self.without_fold(k, folds)
                rule = DropRule.of(rest.dropped(threshold), rest.kept(threshold))
            for i in range(k, len(self.records), folds):
                for form, group, branch, hit in self.records[i]:
                    if rule is not None and rule.removes(form, group, branch):
                        continue
                    t = self.types[group]
                    correct[t] += hit
                    predicted[t] += 1
        if by_type:
            return {t: Quality.of(correct[t], predicted[t], self.gold.get(t, 0))
                    for t in sorted(set(self.gold) | set(predicted))}
        return Quality.of(sum(correct.values()), sum(predicted.values()), sum(self.gold.values()))

    def without_fold(self, k: int, folds: int) -> "Calibration":
        """The counts of every sentence but those of fold ``k`` (sentence i is in fold i % folds)."""
        kept = [r for i, r in enumerate(self.records) if i % folds != k]
        return _counted(self.types, kept, self.gold, self.prior_strength, bool(self.branches))

    def silver_weight(self, threshold: float | None = None) -> float:
        """The default loss weight of silver tokens: the dictionary's estimated F1 against the
        gold subset (after the drop), as a label model weighs a source by its accuracy."""
        return round(self.quality(threshold).f1, 4)

    def report(self, threshold: float | None) -> list[str]:
        """Lines a run prints before training: the dictionary's quality before and after the drop."""
        before = self.quality(None)
        lines = [f"dictionary on the {self.sentences} gold sentences: {before.line()}"]
        if threshold is not None:
            drop = self.dropped(threshold)
            after = self.quality(threshold)
            lines.append(f"calibrated (forms below precision {threshold:g} dropped: {len(drop)}): {after.line()}")
        for t, q in self.quality(threshold, by_type=True).items():
            lines.append(f"  {t}: {q.line()}")
        return lines

    def to_dict(self, threshold: float | None = None) -> dict[str, Any]:
        q0, q1 = self.quality(None), self.quality(threshold)
        dropped = self.dropped(threshold) if threshold is not None else []
        return {"sentences": self.sentences, "threshold": threshold, "prior_strength": self.prior_strength,
                "dropped": len(dropped), "branches_dropped": [list(d[1:]) for d in dropped if len(d) == 3],
                "before": dataclasses.asdict(q0), "after": dataclasses.asdict(q1),
                "groups": {g: {"hits": h, "matches": n, "precision": round(self.group_precision(g), 4)}
                           for g, (h, n) in sorted(self.groups.items())}}


def calibrate(provider: Any, examples: Sequence[Mapping[str, Any]], types: Mapping[str, str],
              prior_strength: float = 2.0, branches: bool = False) -> Calibration:
    """Count ``provider``'s matches in tagged ``examples`` (``{"words", "tags"}``) against their
    gold entities, each match an entity of ``types[group]``; ``branches``: also per branch
    (the provider's ``match_branch``; see the module doc)."""
    if not examples:
        raise PriorkitError("calibration needs gold sentences, and the run's gold subset is empty; "
                            "set prior.calibrate: null, or train on a fraction > 0")
    if not getattr(provider, "supports_matches", False):
        raise PriorkitError(f"calibration: provider {getattr(provider, 'name', provider)!r} has no concept matches")
    if not prior_strength >= 0:
        raise PriorkitError(f"calibration: prior_strength must be >= 0, got {prior_strength!r}")
    types = dict(types)
    gold: Counter = Counter()
    records = []
    for e in examples:
        words, tags = list(e["words"]), list(e["tags"])
        truth = gold_spans(tags)
        gold.update(t for _, _, t in truth)
        records.append([(form_of(words, s, end), m.group, provider.match_branch(m) if branches else "",
                         int((s, end, types[m.group]) in truth))
                        for (s, end), m in typed_match_objects(provider.matches(words), types).items()])
    return _counted(types, records, dict(gold), float(prior_strength), branches)


def _counted(types: dict[str, str], records: list[list[tuple[str, str, str, int]]], gold: dict[str, int],
             prior_strength: float, branches: bool = False) -> Calibration:
    forms: dict[tuple[str, str], list[int]] = {}
    groups: dict[str, list[int]] = {}
    by_branch: dict[tuple[str, str], list[int]] = {}
    for row in records:
        for form, group, branch, hit in row:
            tables = [(forms, (form, group)), (groups, group)]
            if branches and branch:
                tables.append((by_branch, (group, branch)))
            for table, key in tables:
                cell = table.setdefault(key, [0, 0])
                cell[0] += hit
                cell[1] += 1
    return Calibration(types, forms, groups, gold, records, prior_strength, by_branch)

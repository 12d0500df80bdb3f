"""The ``calibrated`` provider: another provider's concept matches without the surface forms
that the gold labels showed to be wrong too often (priorkit/calibration.py, docs/calibration.md)::

    priorkit.get_provider("calibrated", provider="ontology", params={"source": "hpo+mesh"},
                          drop=[["ca", "mesh:D"], ["*", "hpo"]])

``drop`` lists ``[form, group]`` pairs: a match of ``group`` whose words, lower-cased and
joined by one space, are ``form`` is left out; ``["*", group]`` leaves out the whole group and
``["*", group, branch]`` the matches of that branch (the inner provider's ``match_branch``).
``keep`` lists ``[form, group]`` pairs kept although their group or branch is dropped.
Pair values and phrase segments are the inner provider's.  The fingerprint holds the inner
provider's and the drop list, so silver labels and caches of another calibration never mix.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

import priorkit
from priorkit.supervision.calibration import DropRule, form_of
from priorkit.errors import PriorkitError
from priorkit.providers.base import Match, PriorProvider

from .combine import resolve_provider


class CalibratedProvider(PriorProvider):
    """The inner provider's matches minus what the drop list leaves out (a ``DropRule``)."""

    name = "calibrated"
    version = "1"

    def __init__(self, provider: Any = None, params: Mapping[str, Any] | None = None,
                 drop: Sequence[Sequence[str]] = (), keep: Sequence[Sequence[str]] = ()) -> None:
        self.check_params({"provider": provider, "params": params, "drop": drop, "keep": keep})
        if isinstance(provider, str):
            inner = priorkit.get_provider(provider, **dict(params or {}))
        else:
            inner = resolve_provider(provider)
        if not inner.supports_matches:
            raise PriorkitError(f"calibrated: provider {inner.name!r} has no concept matches to calibrate; "
                                "wrap one that implements matches(), e.g. ontology")
        entries = sorted({tuple(str(x) for x in d) for d in drop})
        kept = sorted({(str(f), str(g)) for f, g in keep})
        extra = {"keep": [list(k) for k in kept]} if kept else {}  # old fingerprints hold without keep
        super().__init__(provider=inner, drop=[list(p) for p in entries], **extra)
        self.inner = inner
        self.rule = DropRule.of(entries, kept)

    @staticmethod
    def check_params(params: Mapping[str, Any]) -> None:
        provider = params.get("provider")
        if provider is None or provider == "":
            raise PriorkitError("calibrated needs params.provider: the provider whose matches it filters, "
                                "e.g. {provider: ontology, params: {source: hpo+mesh}, drop: [[form, group]]}")
        inner_params = params.get("params")
        if inner_params is not None and not isinstance(inner_params, Mapping):
            raise PriorkitError(f"calibrated: params.params must be a mapping, got {inner_params!r}")
        for item in params.get("drop") or ():
            if isinstance(item, str) or len(item) not in (2, 3) or not all(isinstance(x, str) for x in item) \
                    or (len(item) == 3 and item[0] != "*"):
                raise PriorkitError(f"calibrated: each drop entry is [form, group] or [\"*\", group, branch] "
                                    f"(strings), got {item!r}")
        for item in params.get("keep") or ():
            if isinstance(item, str) or len(item) != 2 or not all(isinstance(x, str) for x in item):
                raise PriorkitError(f"calibrated: each keep entry is [form, group] (two strings), got {item!r}")

    def load(self) -> None:
        self.inner.ensure_loaded()

    def match_groups(self) -> list[str]:
        return self.inner.match_groups()

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        return self.inner.segment(words)

    def compute_matches(self, words: Sequence[str]) -> list[Match]:
        rule = self.rule
        return [m for m in self.inner.matches(words)
                if not rule.removes(form_of(words, m.start, m.end), m.group,
                                    self.inner.match_branch(m) if rule.branches else "")]

    def match_branch(self, match: Match) -> str:
        return self.inner.match_branch(match)

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        return self.inner.similarity(left, right)


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("calibrated", CalibratedProvider,
             "another provider's concept matches without the forms the gold labels showed wrong (drop list)")

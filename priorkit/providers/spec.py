"""One description of a prior, and every rule about presets and layouts.

A :class:`PriorSpec` is plain data (it round-trips through JSON and YAML): which
provider, with which parameters, and how words become a matrix.  Everything
that builds a prior is made from one:

- :meth:`PriorSpec.build_provider`: the provider, from the plug-in registry;
- :meth:`WordKeys.from_spec <priorkit.align.words.WordKeys.from_spec>`: the word
  pairs it is asked for (no torch);
- :meth:`PriorBuilder.from_spec <priorkit.align.PriorBuilder.from_spec>`: the
  token-aligned builder for a tokenizer.

The command line (``precompute``, ``show``), a pipeline's ``prior:`` section, a
model folder's ``priorkit.json`` and the Dask workers describe a prior this way.
The rules live here and nowhere else (the builder and the pipeline checks call
them): ``preset: paper`` fixes the layout, keys, stop words and neutral value of
Xia et al. (2021) and, without a provider, means WordNet's ``xia2021`` measure
(:data:`PAPER_PROVIDER`); the paper layout takes sentence pairs only, has no
within-word cells and keeps ``neutral`` in [0, 1].  This module imports no other
part of priorkit but the errors (the provider registry only when a provider is
built), so every layer can call it.

>>> spec = PriorSpec(preset="paper")
>>> spec.resolved().provider, spec.resolved().params, spec.resolved().layout
('wordnet', {'measure': 'xia2021'}, 'paper')
>>> PriorSpec.from_dict({"provider": "wordnet", "params": {"measure": "wup"}}).to_dict()["params"]
{'measure': 'wup'}
"""
from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Literal, Mapping

from ..errors import PriorkitError

if TYPE_CHECKING:
    from .base import PriorProvider

PRESETS = ("paper",)
LAYOUTS = ("paper", "full")
#: how a word becomes a key (the functions are priorkit.align.words.KEY_FUNCTIONS)
KEYS = ("paper", "strip")
#: full layout, the cells between tokens of one word or phrase
WITHIN = ("all", "known")
#: the provider of ``preset: paper`` when none is named: WordNet with the paper's measure
PAPER_PROVIDER: tuple[str, dict[str, Any]] = ("wordnet", {"measure": "xia2021"})
#: The stop-word list of Xia et al. (2021), plus the special tokens' keys.
PAPER_STOP_WORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with am cls sep""".split()
)
#: what ``preset: paper`` fixes besides the provider
PAPER_FIELDS: dict[str, Any] = {"layout": "paper", "keys": "paper", "stop_words": sorted(PAPER_STOP_WORDS),
                                "stop_value": 0.0, "neutral": 1.0}


class PriorSpecError(PriorkitError):
    """A prior description breaks a rule; ``field`` names the field at fault (for file:line)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def check_layout(layout: str, keys: str = "strip", *, within: str = "all", neutral: float = 1.0) -> None:
    """The layouts' rules, for a spec and for a builder made by hand alike."""
    if layout not in LAYOUTS:
        raise PriorSpecError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}", "layout")
    if keys not in KEYS:
        raise PriorSpecError(f"unknown key normalisation {keys!r}; choose one of {', '.join(KEYS)}", "keys")
    if within not in WITHIN:
        raise PriorSpecError(f"within={within!r}: choose one of {', '.join(WITHIN)}", "within")
    if layout == "paper" and within != "all":
        raise PriorSpecError(f"within={within!r}: the paper layout has no within-word cells; use within: all",
                             "within")
    if layout == "paper" and not 0.0 <= float(neutral) <= 1.0:
        raise PriorSpecError(f"neutral must lie in [0, 1] with the paper layout, got {neutral}", "neutral")


def check_single_texts(layout: str, preset: str | None = None) -> None:
    """The paper layout compares two sentences: an error for single-text inputs (NER, one text)."""
    if layout == "paper" or preset == "paper":
        what = "the paper preset" if preset == "paper" else "the paper layout"
        raise PriorSpecError(f"{what} needs sentence pairs; single sentences (token classification, one "
                             "text per example) need layout: full (and no preset)",
                             "preset" if preset == "paper" else "layout")


@dataclasses.dataclass
class PriorSpec:
    """What a prior is, as data.

    :param provider: a registered provider name (``priorkit providers``); None
        only with ``preset="paper"`` (then :data:`PAPER_PROVIDER`).
    :param params: the provider's parameters.
    :param preset: ``"paper"`` (Xia et al. 2021: layout, keys, stop words and
        neutral fixed) or None.
    :param layout: ``"paper"`` or ``"full"`` (without a preset).
    :param keys: ``"strip"`` or ``"paper"`` (without a preset).
    :param neutral: value of unknown pairs and (``full``) special tokens.
    :param stop_words: keys never sent to the provider (None: none).
    :param stop_value: the value stop words get.
    :param within: ``full`` layout, the cells between tokens of one word or phrase:
        ``"all"`` (1 for every word) or ``"known"`` (the provider's value of a recognised
        phrase with itself, e.g. a concept mention).
    """

    #: a registered provider name (``priorkit providers``); null only with ``preset: paper``.
    provider: str | None = None
    #: the provider's parameters.
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: "paper": Xia et al. (2021) -- layout, keys, stop words and neutral fixed; xia2021
    #: WordNet unless ``provider`` is given.
    preset: Literal[PRESETS] | None = None
    layout: Literal[LAYOUTS] = "full"
    keys: Literal[KEYS] = "strip"
    #: value of unknown pairs and (full layout) special tokens.
    neutral: float = 1.0
    #: keys never sent to the provider (null: none).
    stop_words: list[str] | None = None
    stop_value: float = 0.0
    #: full layout, cells between tokens of one word or phrase: "all" = 1 for every word;
    #: "known" = the provider's value of the phrase with itself (e.g. a recognised concept
    #: mention), other words' pieces get ``neutral``.
    within: Literal[WITHIN] = "all"

    def __post_init__(self) -> None:
        if self.preset is not None and self.preset not in PRESETS:
            raise PriorkitError(f"unknown prior preset {self.preset!r}; choose one of {', '.join(PRESETS)} "
                                "(or none)")
        if self.provider is None and self.preset is None:
            raise PriorkitError("a prior needs a provider (a registered name, see `priorkit providers`) "
                                "or preset 'paper'")
        if not isinstance(self.params, Mapping):
            raise PriorkitError(f"prior params must be a mapping of provider parameters, not "
                                f"{type(self.params).__name__} {self.params!r}")
        self.params = dict(self.params)
        if self.stop_words is not None:
            self.stop_words = sorted(self.stop_words)
        check_layout(self.layout, self.keys, within=self.within, neutral=self.neutral)
        if self.preset == "paper":  # the preset's layout, with the fields it does not fix
            check_layout(PAPER_FIELDS["layout"], within=self.within, neutral=self.neutral)

    # ---- the paper preset ------------------------------------------------
    def resolved(self) -> "PriorSpec":
        """This spec with the preset applied: every field says what is built."""
        if self.preset != "paper":
            return self
        name, params = (self.provider, self.params) if self.provider is not None else PAPER_PROVIDER
        fields = {**PAPER_FIELDS, "stop_words": list(PAPER_FIELDS["stop_words"])}
        return dataclasses.replace(self, provider=name, params=dict(params), **fields)

    def check_single_texts(self) -> None:
        """Fail when this prior cannot take single texts (the paper layout needs pairs)."""
        check_single_texts(self.resolved().layout, self.preset)

    def spec(self) -> "PriorSpec":
        """The plain :class:`PriorSpec` of this spec (a subclass, such as a pipeline's prior
        setting, less its own fields): what a builder is made from and priorkit.json stores."""
        return spec_of(self)

    # ---- building -------------------------------------------------------
    def build_provider(self) -> "PriorProvider":
        """The provider from the plug-in registry (an unknown name or parameter fails here)."""
        from .plugins import get_provider

        spec = self.resolved()
        return get_provider(spec.provider, **spec.params)

    def word_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~priorkit.align.words.WordKeys` besides the provider."""
        spec = self.resolved()
        return {"layout": spec.layout, "keys": spec.keys, "stop_words": spec.stop_words,
                "stop_value": spec.stop_value}

    def builder_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~priorkit.align.PriorBuilder` besides tokenizer, provider and cache."""
        return {**self.word_options(), "neutral": self.resolved().neutral, "within": self.within}

    # ---- as data ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if d["within"] == "all":  # the default, absent before `within` existed: identities hold
            del d["within"]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PriorSpec":
        """A spec from a mapping; an unknown field is an error that names it."""
        if not isinstance(data, Mapping):
            raise PriorkitError(f"a prior spec is a mapping of {', '.join(FIELDS)}, not {type(data).__name__}")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise PriorkitError(f"unknown prior spec field(s) {', '.join(map(repr, unknown))}; the fields are "
                                f"{', '.join(FIELDS)}")
        return cls(**dict(data))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "PriorSpec":
        return cls._parse(text, "JSON")

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> "PriorSpec":
        return cls._parse(text, "YAML")

    @classmethod
    def _parse(cls, text: str, fmt: str) -> "PriorSpec":
        import yaml

        loads, error = (json.loads, json.JSONDecodeError) if fmt == "JSON" else (yaml.safe_load, yaml.YAMLError)
        try:
            data = loads(text)
        except error as exc:
            raise PriorkitError(f"a prior spec is not valid {fmt} ({exc}): {text[:80]!r}") from exc
        return cls.from_dict(data)


FIELDS = tuple(f.name for f in dataclasses.fields(PriorSpec))


def spec_of(obj: Any) -> PriorSpec:
    """The plain :class:`PriorSpec` of any spec subclass (a pipeline's prior setting)."""
    return PriorSpec(**{name: getattr(obj, name) for name in FIELDS})

__all__ = ["PriorSpec", "PriorSpecError", "PAPER_PROVIDER", "PAPER_STOP_WORDS", "PAPER_FIELDS", "PRESETS",
           "LAYOUTS", "KEYS", "WITHIN", "FIELDS", "check_layout", "check_single_texts", "spec_of"]

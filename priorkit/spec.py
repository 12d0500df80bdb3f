"""One description of a prior: which provider, with which parameters, and how words become a matrix.

A :class:`PriorSpec` is plain data (it round-trips through JSON and YAML) and
builds the three things a prior needs:

- :meth:`PriorSpec.build_provider`: the provider, from the plug-in registry;
- :meth:`PriorSpec.build_words`: the word pairs it is asked for
  (:class:`~priorkit.align.words.WordKeys`, no torch);
- :meth:`PriorSpec.build_builder`: the token-aligned
  :class:`~priorkit.align.PriorBuilder` for a tokenizer.

The command line (``precompute``, ``show``), the pipelines and the Dask
workers describe a prior this way.  The rule of the paper preset lives here
and nowhere else: ``preset: paper`` fixes the layout, keys, stop words and
neutral value of Xia et al. (2021), and without a provider it means WordNet's
``xia2021`` measure (:data:`PAPER_PROVIDER`).

>>> spec = PriorSpec(preset="paper")
>>> spec.resolved().provider, spec.resolved().params, spec.resolved().layout
('wordnet', {'measure': 'xia2021'}, 'paper')
>>> PriorSpec.from_dict({"provider": "wordnet", "params": {"measure": "wup"}}).to_dict()["params"]
{'measure': 'wup'}
"""
from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Mapping

from .align.words import LAYOUTS, PAPER_WORDS, WordKeys, check_layout_keys
from .errors import PriorkitError
from .provider import PriorProvider

if TYPE_CHECKING:
    from .align.builder import PriorBuilder

PRESETS = ("paper",)
#: the provider of ``preset: paper`` when none is named: WordNet with the paper's measure
PAPER_PROVIDER: tuple[str, dict[str, Any]] = ("wordnet", {"measure": "xia2021"})


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

    provider: str | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    preset: str | None = None
    layout: str = "full"
    keys: str = "strip"
    neutral: float = 1.0
    stop_words: list[str] | None = None
    stop_value: float = 0.0
    within: str = "all"

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
        check_layout_keys(self.layout, self.keys)
        if self.stop_words is not None:
            self.stop_words = sorted(self.stop_words)

    # ---- the paper preset ------------------------------------------------
    def resolved(self) -> "PriorSpec":
        """This spec with the preset applied: every field says what is built."""
        if self.preset != "paper":
            return self
        name, params = (self.provider, self.params) if self.provider is not None else PAPER_PROVIDER
        return dataclasses.replace(self, provider=name, params=dict(params), neutral=1.0,
                                   layout=PAPER_WORDS["layout"], keys=PAPER_WORDS["keys"],
                                   stop_words=sorted(PAPER_WORDS["stop_words"]),
                                   stop_value=PAPER_WORDS["stop_value"])

    # ---- building -------------------------------------------------------
    def build_provider(self) -> PriorProvider:
        """The provider from the plug-in registry (an unknown name or parameter fails here)."""
        from .plugins import get_provider

        spec = self.resolved()
        return get_provider(spec.provider, **spec.params)

    def word_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`WordKeys` (and :class:`PriorBuilder`) besides the provider."""
        spec = self.resolved()
        return {"layout": spec.layout, "keys": spec.keys, "stop_words": spec.stop_words,
                "stop_value": spec.stop_value}

    def build_words(self, provider: PriorProvider | None = None) -> WordKeys:
        """The word pairs this prior asks for, without a tokenizer or torch."""
        return WordKeys(provider or self.build_provider(), **self.word_options())

    def build_builder(self, tokenizer: Any, *, provider: PriorProvider | None = None, cache: Any = None,
                      **tokenizer_kwargs: Any) -> "PriorBuilder":
        """The :class:`PriorBuilder` for ``tokenizer`` (an object, a path or a Hub id).

        :param provider: an already built provider (default: :meth:`build_provider`).
        :param cache: a :class:`~priorkit.cache.PriorCache` or a path to one.
        :param tokenizer_kwargs: for every tokenizer call (``truncation``, ``max_length``).
        """
        from .align.builder import PriorBuilder

        return PriorBuilder(tokenizer, provider or self.build_provider(), cache=cache,
                            neutral=self.resolved().neutral, within=self.within, **self.word_options(),
                            **tokenizer_kwargs)

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

__all__ = ["PriorSpec", "PAPER_PROVIDER", "PRESETS", "LAYOUTS", "FIELDS"]

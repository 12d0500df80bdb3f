"""What silver labels a run gets, as plain data (the ``prior.silver`` section).

Torch-free, so the pipeline schema can use :class:`SilverConfig` as a section type.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Union

RECIPES = ("mix", "then-gold")
#: sentences labelled and written per shard of the silver store (a kill loses at most one shard);
#: a setting (prior.silver.chunk_size) until issue 47: no pipeline changed it
CHUNK_SIZE = 2000
#: the fields issue 47 removed from this section, at the values every run's key held (training/plan.py)
REMOVED_IN_KEYS = {"ratio": None, "chunk_size": CHUNK_SIZE}
UNMATCHED = ("O", "ignore")
MERGES = ("teacher-first", "dictionary-first")

#: the baseline of self-training (docs/silver.md, "Self-training without knowledge"): a teacher
#: trained on the gold alone labels the unlabelled text, a student trains on gold plus its confident
#: labels; no dictionary anywhere (no features, no attention prior, no calibration, no dictionary
#: merge).  A ``sweep.priors`` entry may name it as a string; it is merged over the file's prior
#: like a mapping entry, so the file's silver recipe (mix, threshold, silver_epochs ...) is kept.
SELF_TRAINING_NO_KNOWLEDGE = "self-training-no-knowledge"
NAMED_SETTINGS: dict[str, dict[str, Any]] = {
    SELF_TRAINING_NO_KNOWLEDGE: {
        "attention": None, "features": None, "calibrate": None, "channels": {},
        "silver": {"teacher": {"dictionary": False, "model": None, "prior": None}},
    },
}


@dataclasses.dataclass
class TeacherConfig:
    """``prior.silver.teacher``: a trained model labels the unlabelled text (self-training)."""

    #: a trained model folder (priorkit.load_model) whose confident tags are the labels; null:
    #: the run trains its own teacher first (the same setting on the gold subset, no silver).
    model: str | None = None
    #: a word's predicted tag counts when the model gives it at least this probability (an
    #: entity: every word of it); below it the word is unknown (out of the loss).
    threshold: float = 0.9
    #: how the teacher's confident entities meet the dictionary's matches: "teacher-first" (the
    #: teacher's entities stay; a dictionary entity is added where it overlaps none of them) or
    #: "dictionary-first" (the dictionary's entities stay; a teacher entity where it overlaps none).
    merge: Literal["teacher-first", "dictionary-first"] = "teacher-first"
    #: whether the dictionary's matches take part at all (false: the teacher's labels alone).
    dictionary: bool = True
    #: self-training rounds (1-3): each round's student labels the text for the next one; the
    #: rounds stop early when the student's devel score (data.eval) does not beat its teacher's.
    rounds: int = 1
    #: the teacher's own setting: fields of the run's prior replaced for the teacher only, as a
    #: ``sweep.priors`` entry replaces them (e.g. ``{features: null}``: a teacher without token
    #: features, less tied to the dictionary); null: the run's setting.  The teacher never has
    #: silver labels; its calibration goes with its features (none without them), and a teacher
    #: left with no channel is a model without knowledge.
    prior: dict[str, Any] | None = None
    #: the teacher's own encoder (a stronger teacher, distilled into the student through its silver
    #: labels; the student keeps ``model``): "mpnet" (all-mpnet-base-v2, ``priorkit data fetch mpnet``),
    #: "minilm", a model folder or a Hugging Face id; null: the run's ``model.name_or_path``.
    encoder: str | None = None
    #: the teacher's ``max_length`` (its tokenizer's pieces; null: ``model.max_length``).
    max_length: int | None = None
    #: train fields for the teacher alone, over the run's (e.g. ``{learning_rate: 1.0e-4, epochs: 10}``
    #: for an MPNet teacher of MiniLM students); empty: the run's.
    train: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def own_model(self) -> bool:
        """Whether the teacher trains with a model or training fields of its own."""
        return own_model(self.encoder, self.max_length, self.train)

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.encoder is not None and (not isinstance(self.encoder, str) or not self.encoder.strip()):
            out.append(("encoder", f"must name a model (mpnet, minilm, a folder or a Hub id) or be null, got "
                                   f"{self.encoder!r}"))
        if self.max_length is not None and (isinstance(self.max_length, bool) or self.max_length < 8):
            out.append(("max_length", f"must be at least 8 (tokens) or null, got {self.max_length!r}"))
        if not isinstance(self.train, dict):
            out.append(("train", f"must be a mapping of train fields (e.g. {{learning_rate: 1.0e-4}}), got "
                                 f"{self.train!r}"))
        elif "fraction" in self.train or "seed" in self.train:
            out.append(("train", "fraction and seed are the run's: the teacher trains on the run's gold subset "
                                 "with its seed"))
        if self.model is not None and self.own_model:
            out.append(("model", "is a trained teacher already; encoder, max_length and train are for a teacher "
                                 "the run trains itself: drop one or the other"))
        if self.prior is not None and not isinstance(self.prior, dict):
            out.append(("prior", f"must be a mapping of prior fields (e.g. {{features: null}}) or null, got {self.prior!r}"))
        elif self.prior is not None and "silver" in self.prior:
            out.append(("prior", "must not set silver: the teacher trains on the gold subset alone"))
        if isinstance(self.threshold, bool) or not 0.0 < self.threshold <= 1.0:
            out.append(("threshold", f"must lie in (0, 1] (a probability), got {self.threshold!r}"))
        if self.merge not in MERGES:
            out.append(("merge", f"must be one of {', '.join(MERGES)}, got {self.merge!r}"))
        if isinstance(self.rounds, bool) or not 1 <= self.rounds <= 3:
            out.append(("rounds", f"must be 1, 2 or 3, got {self.rounds!r}"))
        return out


@dataclasses.dataclass
class SilverConfig:
    #: provider of the matches that become labels; null: the prior's own provider (and params).
    #: Any provider with concept matches, e.g. ``random-spans`` (the control).
    provider: str | None = None
    #: the provider's parameters; null: the prior's params when the provider is the prior's, else {}.
    params: dict[str, Any] | None = None
    #: match group -> entity type of the task (B-/I- tags); null: the dictionary baseline's map
    #: (BC5CDR: mesh:D Chemical, mesh:C and hpo Disease).  A mention in several groups takes
    #: the type of the first of its groups in this order; other groups are ignored.
    types: dict[str, str] | None = None
    #: words no match covers: "O" (an outside tag) or "ignore" (excluded from the loss: partial labels).
    unmatched: Literal["O", "ignore"] = "O"
    #: "mix": gold and silver sentences in one shuffled training list; "then-gold": train on
    #: silver first, then on gold from those weights.
    recipe: Literal["mix", "then-gold"] = "mix"
    #: mix: the loss weight of silver tokens (gold tokens: 1); "auto" (the default): the
    #: dictionary's F1 estimated on the run's gold subset (docs/calibration.md); with a teacher, 1.
    weight: Union[float, Literal["auto"]] = "auto"
    #: unmatched: O -- the loss weight of the O labels of words no match covers, relative to
    #: ``weight`` (soft partial labels, e.g. 0.1); "auto" (the default): the dictionary's
    #: estimated recall (an O is trusted as far as the dictionary covers the entities; with a
    #: teacher, whose unsure words are out of the loss anyway, 1); null: 1.
    unmatched_weight: Union[float, Literal["auto"], None] = "auto"
    #: a trained model labels the text too (self-training; docs/silver.md); null: the dictionary alone.
    teacher: TeacherConfig | None = None
    #: passes over the silver text (fewer keeps the cost down); fractions take a seeded share.
    silver_epochs: float = 1.0

    @property
    def uses_dictionary(self) -> bool:
        """Whether a dictionary labels anything: without a teacher it is the labeller, with one
        only when ``teacher.dictionary`` is true (false: the teacher's labels alone)."""
        return uses_dictionary(self.teacher is not None, self.teacher.dictionary if self.teacher else None)

    def resolved(self, provider: str, params: dict[str, Any] | None) -> "SilverConfig":
        """This config with ``provider``/``params`` filled in from the prior's (when null)."""
        provider, params = silver_source(self.provider, self.params, provider, params)
        return dataclasses.replace(self, provider=provider, params=params)

    def type_map(self, pipeline: dict[str, str] | None, groups: Any, entity_types: Any, who: str = "silver labels"
                 ) -> dict[str, str]:
        """The labels' group -> type map: ``types``, else the pipeline's ``task.dictionary_types``
        (``pipeline``), else the data's entity types when they are groups of the provider
        (``groups``: its match groups, or a callable giving them); raises otherwise, naming the
        fields to set (:func:`priorkit.supervision.type_map.resolve_types`)."""
        from ..type_map import resolve_types

        return resolve_types(self.types if self.types is not None else pipeline, groups, entity_types,
                             field="prior.silver.types or task.dictionary_types", who=who)

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for values out of range; empty when the config is usable."""
        out = []
        if self.recipe not in RECIPES:
            out.append(("recipe", f"must be one of {', '.join(RECIPES)}, got {self.recipe!r}"))
        if self.unmatched not in UNMATCHED:
            out.append(("unmatched", f"must be one of {', '.join(UNMATCHED)}, got {self.unmatched!r}"))
        if self.weight != "auto" and (isinstance(self.weight, (bool, str)) or not self.weight > 0):
            out.append(("weight", f"must be positive or auto, got {self.weight!r}"))
        uw = self.unmatched_weight
        if uw is not None and uw != "auto" and (isinstance(uw, (bool, str)) or not 0.0 <= uw <= 1.0):
            out.append(("unmatched_weight", f"must lie in [0, 1], auto or null, got {uw!r}"))
        if self.unmatched_weight not in (None, "auto") and self.unmatched == "ignore":
            out.append(("unmatched_weight", "applies to unmatched: O (ignore leaves unmatched words out of the loss)"))
        if self.teacher is not None:
            out += [(f"teacher.{f}", m) for f, m in self.teacher.problems()]
        if not self.silver_epochs > 0:
            out.append(("silver_epochs", f"must be positive, got {self.silver_epochs!r}"))
        if self.types is not None and not self.types:
            out.append(("types", "is empty; map at least one group to an entity type, or leave it null"))
        if self.recipe == "then-gold" and self.weight not in (1.0, "auto"):
            out.append(("weight", "applies to recipe: mix only (then-gold trains on silver alone, then on gold)"))
        return out


# ---- the rules above as plain functions: the run's stages hand plain values down (issue 47) ----
def silver_source(provider: str | None, params: dict[str, Any] | None, prior_provider: str | None,
                  prior_params: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The silver labels' provider and parameters: ``provider`` null takes the prior's (and its
    parameters unless ``params`` is given); ``params`` null is {} for a provider of its own."""
    if provider is None:
        return prior_provider, dict(prior_params or {}) if params is None else params
    return provider, {} if params is None else params


def uses_dictionary(has_teacher: bool, teacher_dictionary: bool | None) -> bool:
    """Whether a dictionary labels anything: always without a teacher, with one when its
    ``dictionary`` is true."""
    return not has_teacher or bool(teacher_dictionary)


def own_model(encoder: str | None, max_length: int | None, train: dict[str, Any] | None) -> bool:
    """Whether a teacher trains with a model or training fields of its own."""
    return encoder is not None or max_length is not None or bool(train)

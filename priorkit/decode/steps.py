"""The steps after the model, as data, in their one order, and the functions that do them.

A recipe (a model folder of kind ``recipe``), a sweep's post-hoc arm and ``priorkit predict`` all
tag with the same chain (docs/tagging.md, "What happens to a document"):

1. ``mix``: the members' word log-probabilities weighted and summed, word by word (a product of
   experts; :func:`mix`);
2. ``decode``: argmax or Viterbi over the valid BIO sequences, after an O bias
   (:func:`priorkit.decode.decoding.decode_tags`);
3. ``merge``: the model's entities with the dictionary's, ``union`` (a dictionary entity where the
   model found nothing) or ``override`` (the dictionary's entities first) (:func:`merge`);
4. ``fragments``: a dictionary entity replaces two or more pieces the model split it into
   (:func:`join_fragments`);
5. ``document``: the dictionary read over the document's sentences in order (abbreviations carried
   ``window`` sentences); its entities that the sentence-by-sentence matches lack are added where
   the model found nothing (:func:`add_document_matches`).

:func:`ordered` checks a list of steps and puts it in this order; :func:`after_decode` runs the
dictionary's steps (3-5) on decoded tags and says which step put each entity there.
Torch-free.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence, Union

import numpy as np

from ..errors import PriorkitError
from .decoding import DECODINGS, check_o_bias
from .spans import Span, overlaps, render, spans


@dataclasses.dataclass(frozen=True)
class Mix:
    """The members' word log-probabilities, ``weights[i]`` for ``members[i]`` (normalised to sum 1)."""

    members: tuple[str, ...]
    weights: tuple[float, ...]
    kind = "mix"


@dataclasses.dataclass(frozen=True)
class Decode:
    """Tags from the (mixed) log-probabilities: ``argmax`` or ``viterbi``, ``o_bias`` added to O first."""

    how: str = "argmax"
    o_bias: float = 0.0
    kind = "decode"


@dataclasses.dataclass(frozen=True)
class Merge:
    """The dictionary's entities merged with the model's: ``union`` or ``override``."""

    how: str = "union"
    kind = "merge"


@dataclasses.dataclass(frozen=True)
class Fragments:
    """A dictionary entity replaces ``min_pieces`` or more model entities of its type inside it."""

    min_pieces: int = 2
    kind = "fragments"


@dataclasses.dataclass(frozen=True)
class DocumentPass:
    """The dictionary over the document in order, abbreviations carried ``window`` sentences (-1: to the end)."""

    window: int = 20
    kind = "document"


Step = Union[Mix, Decode, Merge, Fragments, DocumentPass]
#: the one order of the steps
ORDER = ("mix", "decode", "merge", "fragments", "document")
_CLASSES = {c.kind: c for c in (Mix, Decode, Merge, Fragments, DocumentPass)}
#: the steps that read the dictionary
DICTIONARY_STEPS = ("merge", "fragments", "document")


def _problem(step: Any) -> str | None:
    if isinstance(step, Mix):
        if len(step.members) < 2 or len(set(step.members)) != len(step.members):
            return f"mixes {list(step.members)}: name two or more different members"
        if len(step.weights) != len(step.members):
            return f"has {len(step.weights)} weights for {len(step.members)} members; give one per member"
        if any(not np.isfinite(w) or w < 0 for w in step.weights) or sum(step.weights) <= 0:
            return f"weights {list(step.weights)} must be non-negative with a positive sum"
    elif isinstance(step, Decode):
        if step.how not in DECODINGS:
            return f"decodes by {step.how!r}; choose one of {', '.join(DECODINGS)}"
        try:
            check_o_bias(step.o_bias, None)
        except PriorkitError as exc:
            return str(exc)
    elif isinstance(step, Merge):
        if step.how not in ("union", "override"):
            return f"merges by {step.how!r}; choose union or override"
    elif isinstance(step, Fragments):
        if isinstance(step.min_pieces, bool) or not isinstance(step.min_pieces, int) or step.min_pieces < 1:
            return f"min_pieces {step.min_pieces!r} must be an integer >= 1"
    elif isinstance(step, DocumentPass):
        if isinstance(step.window, bool) or not isinstance(step.window, int) or step.window < -1:
            return f"window {step.window!r} must be an integer >= -1 (-1: to the end of the document)"
    else:
        return f"is a {type(step).__name__}, not a step ({', '.join(ORDER)})"
    return None


def ordered(steps: Sequence[Step], members: Sequence[str] = (), dictionary: bool = True,
            where: str = "steps") -> tuple[Step, ...]:
    """``steps`` checked and put in their one order (:data:`ORDER`).

    ``members``: the names of the models that tag (a recipe's members; empty: not checked): more
    than one needs a ``mix`` of exactly them, and a ``mix`` needs them.  ``dictionary``: whether a
    dictionary is there for ``merge``, ``fragments`` and ``document``.  Exactly one ``decode``."""
    seen: dict[str, Step] = {}
    for step in steps:
        problem = _problem(step)
        if problem is not None:
            raise PriorkitError(f"{where}: step {getattr(step, 'kind', type(step).__name__)} {problem}")
        if step.kind in seen:
            raise PriorkitError(f"{where}: step {step.kind} appears twice; each step runs once")
        seen[step.kind] = step
    if "decode" not in seen:
        raise PriorkitError(f"{where}: no decode step; add {{kind: decode, how: argmax|viterbi, o_bias: 0}}")
    if members:
        mixed = seen.get("mix")
        if len(members) > 1 and (mixed is None or sorted(mixed.members) != sorted(members)):
            raise PriorkitError(f"{where}: members {list(members)} need a mix step that names each of them once"
                                + (f" (it names {list(mixed.members)})" if mixed is not None else ""))
        if len(members) == 1 and mixed is not None:
            raise PriorkitError(f"{where}: a mix step with one member ({members[0]}); drop it")
    needs = [k for k in DICTIONARY_STEPS if k in seen]
    if needs and not dictionary:
        raise PriorkitError(f"{where}: steps {', '.join(needs)} read a dictionary, and there is none")
    return tuple(seen[k] for k in ORDER if k in seen)


def to_data(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """The steps as JSON-able dicts, ``kind`` first."""
    out = []
    for s in steps:
        d = dataclasses.asdict(s)
        for k in ("members", "weights"):
            if k in d:
                d[k] = list(d[k])
        out.append({"kind": s.kind, **d})
    return out


def from_data(data: Sequence[Mapping[str, Any]], where: str = "steps") -> list[Step]:
    """:func:`to_data`'s dicts back to steps (checked by :func:`ordered`, not here)."""
    if not isinstance(data, (list, tuple)):
        raise PriorkitError(f"{where}: a list of steps, got {type(data).__name__}")
    out: list[Step] = []
    for i, d in enumerate(data):
        if not isinstance(d, Mapping) or d.get("kind") not in _CLASSES:
            raise PriorkitError(f"{where}[{i}]: a step is a mapping with kind one of {', '.join(ORDER)}, got {d!r}")
        cls = _CLASSES[d["kind"]]
        fields = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - fields - {"kind"})
        if extra:
            raise PriorkitError(f"{where}[{i}]: step {d['kind']} has no field {', '.join(extra)} "
                                f"(it takes {', '.join(sorted(fields)) or 'none'})")
        args = {k: v for k, v in d.items() if k != "kind"}
        for k in ("members", "weights"):
            if k in args:
                args[k] = tuple(args[k])
        out.append(cls(**args))
    return out


def describe(steps: Sequence[Step]) -> str:
    """One line: ``mix st-branch x0.6 + st-nofeat x0.4 -> viterbi (O bias 1) -> document pass (20 sentences)``."""
    parts = []
    for s in steps:
        if isinstance(s, Mix):
            parts.append("mix " + " + ".join(f"{m} x{w:g}" for m, w in zip(s.members, s.weights)))
        elif isinstance(s, Decode):
            parts.append(s.how + (f" (O bias {s.o_bias:g})" if s.o_bias else ""))
        elif isinstance(s, Merge):
            parts.append(f"{s.how} with the dictionary")
        elif isinstance(s, Fragments):
            parts.append("fragments joined" + (f" ({s.min_pieces}+ pieces)" if s.min_pieces != 2 else ""))
        else:
            parts.append(f"document pass ({s.window} sentences)" if s.window >= 0 else "document pass (whole document)")
    return " -> ".join(parts)


# ---------------------------------------------------------------------------
# the step functions
# ---------------------------------------------------------------------------
def mix(blocks: Sequence[Sequence[np.ndarray]], weights: Sequence[float]) -> list[np.ndarray]:
    """Each sentence's mixed (words, labels) log-probabilities: ``blocks[m][i]`` is model ``m``'s
    log-probabilities of sentence ``i`` (columns in one label order), times ``weights[m]`` (as given:
    :func:`normalised` makes them sum to 1), summed.  A sentence one model has fewer rows of (a word
    it cut off) takes the others' rows there."""
    if len(blocks) != len(weights):
        raise PriorkitError(f"mix: {len(weights)} weights for {len(blocks)} models")
    mixed: list[np.ndarray] | None = None
    for w, member in zip(weights, blocks):
        scaled = [w * b for b in member]
        if mixed is None:
            mixed = scaled
            continue
        if len(scaled) != len(mixed):
            raise PriorkitError(f"mix: {len(scaled)} sentences from one model, {len(mixed)} from another")
        for i, b in enumerate(scaled):
            if len(b) == len(mixed[i]):
                mixed[i] = mixed[i] + b
                continue
            longer, shorter = (b, mixed[i]) if len(b) > len(mixed[i]) else (mixed[i], b)
            mixed[i] = np.concatenate([shorter + longer[:len(shorter)], longer[len(shorter):]])
    return mixed or []


def normalised(weights: Sequence[float]) -> list[float]:
    """``weights`` divided by their sum (the mix's shares)."""
    weights = [float(w) for w in weights]
    return [w / sum(weights) for w in weights]


def merge(model: Sequence[str], dictionary: Sequence[str], how: str) -> list[str]:
    """The model's tags merged with the dictionary's (both BIO, one per word), ``union`` or ``override``."""
    if len(model) != len(dictionary):
        raise PriorkitError(f"{len(model)} model tags for {len(dictionary)} dictionary tags")
    m, d = spans(model), spans(dictionary)
    if how == "union":
        kept = m + [x for x in d if not any(overlaps(x, y) for y in m)]
    elif how == "override":
        kept = d + [x for x in m if not any(overlaps(x, y) for y in d)]
    else:
        raise PriorkitError(f"unknown merge {how!r}; choose union or override")
    return render(kept, len(model))


def join_fragments(model: Sequence[str], dictionary: Sequence[str], min_pieces: int = 2) -> list[str]:
    """The model's tags, except where ``min_pieces`` or more of its entities of one type lie inside
    one dictionary entity of that type and none of its entities crosses that entity's edges: there
    the dictionary entity replaces them (a model that split "migraine with aura" into "migraine"
    and "aura" gets the whole term back).  By default one model entity inside a longer dictionary
    entity stays: the annotators' bounds may be the shorter ones ("hypertension" in "essential
    hypertension")."""
    if len(model) != len(dictionary):
        raise PriorkitError(f"{len(model)} model tags for {len(dictionary)} dictionary tags")
    m = spans(model)
    kept = list(m)
    for d in spans(dictionary):
        touching = [x for x in m if overlaps(x, d)]
        inside = [x for x in touching if d.start <= x.start and x.end <= d.end]
        if len(inside) < max(1, min_pieces) or len(inside) != len(touching) or any(x.type != d.type for x in inside):
            continue
        kept = [x for x in kept if x not in inside] + [d]
    return render(kept, len(model))


def add_document_matches(model: Sequence[str], sentence: Sequence[str], document: Sequence[str]) -> list[str]:
    """The model's tags plus the entities of the document-level dictionary tags ``document`` that
    the sentence-level ones (``sentence``) lack, each where no model entity overlaps it."""
    if not len(model) == len(sentence) == len(document):
        raise PriorkitError(f"{len(model)} model tags, {len(sentence)} sentence-level and {len(document)} "
                            "document-level dictionary tags: the same sentence's, please")
    m, known = spans(model), set(spans(sentence))
    extra = [d for d in spans(document) if d not in known and not any(overlaps(d, x) for x in m)]
    return render(m + extra, len(model))


def after_decode(steps: Sequence[Step], tags: Sequence[Sequence[str]], sentence: Sequence[Sequence[str]] | None,
                 document: Sequence[Sequence[str]] | None = None,
                 sources: bool = False) -> Any:
    """The dictionary's steps (``merge``, ``fragments``, ``document``) of ``steps`` on decoded tags,
    sentence by sentence, in their order.  ``sentence``: the dictionary's sentence-by-sentence tags
    (needed by ``merge`` and ``fragments``, and by ``document`` to know what it adds); ``document``:
    its document-level tags (needed by ``document``).

    Returns the tags; with ``sources``, ``(tags, sources)`` where ``sources[i]`` maps each entity of
    sentence ``i`` to the step that put it there (``model``, ``dictionary`` for the merge,
    ``fragments``, ``document``)."""
    kinds = {s.kind: s for s in steps}
    out = [list(t) for t in tags]
    origin = [{s: "model" for s in spans(t)} for t in out] if sources else None
    for kind in DICTIONARY_STEPS:
        step = kinds.get(kind)
        if step is None:
            continue
        if sentence is None or (kind == "document" and document is None):
            raise PriorkitError(f"step {kind} needs the dictionary's "
                                + ("document-level" if kind == "document" else "sentence-level") + " tags")
        if len(sentence) != len(out) or (document is not None and len(document) != len(out)):
            raise PriorkitError(f"step {kind}: {len(out)} sentences of tags, {len(sentence)} of dictionary tags")
        if kind == "merge":
            new = [merge(t, d, step.how) for t, d in zip(out, sentence)]
        elif kind == "fragments":
            new = [join_fragments(t, d, step.min_pieces) for t, d in zip(out, sentence)]
        else:
            new = [add_document_matches(t, d, x) for t, d, x in zip(out, sentence, document)]
        if origin is not None:
            label = "dictionary" if kind == "merge" else kind
            origin = [{s: before.get(s, label) for s in spans(t)} for t, before in zip(new, origin)]
        out = new
    return (out, origin) if sources else out


def first(steps: Sequence[Step], kind: str) -> Step | None:
    """The step of ``kind`` in ``steps`` (None: none)."""
    return next((s for s in steps if s.kind == kind), None)


__all__ = ["Mix", "Decode", "Merge", "Fragments", "DocumentPass", "Step", "ORDER", "ordered", "to_data",
           "from_data", "describe", "mix", "normalised", "merge", "join_fragments", "add_document_matches", "after_decode",
           "first", "Span"]

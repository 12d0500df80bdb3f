"""A recipe folder back in use: :func:`load_recipe` and :class:`Recipe` (docs/tagging.md).

A recipe is several NER models (its members) and the steps after them (:mod:`priorkit.decode.steps`:
mix, decode, merge with a dictionary, fragments, document pass), in one folder
(:mod:`.recipe_folder`).  :class:`Recipe` has the NER interface of a
:class:`~priorkit.inference.Predictor` -- ``predict`` on word lists gives ``tags`` and ``entities``
-- and the document API of :class:`~priorkit.inference.tagger.Tagging` (``tag_documents``,
``model(text)``).  ``predict``'s inputs are read as the sentences of one document, in order (the
document pass reads them together, as ``priorkit predict --document`` did); ``tag_documents`` keeps
each document to itself.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..checksums import file_sha256
from ..decode.dictionary import Dictionary
from ..decode.spans import entity_dicts, spans
from ..decode.steps import Decode, first, from_data, normalised, ordered
from ..errors import PriorkitError
from . import manifest as mf
from .predictor import Predictor, load_folder, resolve_folder
from .recipe_folder import KIND, RECIPE_FORMAT, with_data_dir
from .tagger import Tagging, entity_score


class RecipeWarning(UserWarning):
    """A recipe's dictionary is not the one it was exported with (another fingerprint)."""


def read_recipe(folder: str | Path) -> dict[str, Any]:
    """A recipe folder's priorkit.json, checked: its kind, format and the fields loading reads."""
    path = Path(folder).expanduser() / mf.PRIORKIT_JSON
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PriorkitError(f"{path}: cannot read the recipe ({exc})") from None
    if info.get("kind") != KIND:
        raise PriorkitError(f"{path}: kind {info.get('kind')!r}, not a recipe")
    if info.get("format") != RECIPE_FORMAT:
        raise PriorkitError(f"{path}: recipe format {info.get('format')!r}; this priorkit reads format "
                            f"{RECIPE_FORMAT}: upgrade priorkit or export the recipe again")
    missing = [k for k in ("steps", "members", "task") if not info.get(k)]
    if missing:
        raise PriorkitError(f"{path}: the recipe has no {', '.join(missing)}; export it again")
    return info


def load_recipe(path: str | Path, *, device: str | None = None, use_cache: bool = True,
                max_length: int | None = None, decode: str | None = None, o_bias: float | None = None,
                check_weights: bool = True) -> "Recipe":
    """A recipe folder with its members and dictionary loaded (module doc).  ``decode`` / ``o_bias``
    replace the recipe's decode step; ``max_length`` applies to every member."""
    folder = Path(path).expanduser()
    info = read_recipe(folder)
    data = info.get("data") or {}
    data_dir = folder / data["folder"] if data.get("files") else None
    if data_dir is not None:
        lost = [f["name"] for f in data["files"] if not (data_dir / f["name"]).is_file()]
        if lost:
            raise PriorkitError(f"{folder}: the dictionary's file {lost[0]} is missing from {data_dir}; "
                                "copy the whole recipe folder")
    members: dict[str, Predictor] = {}
    for m in info["members"]:
        member_dir = folder / m["folder"]
        if not (member_dir / "config.json").exists() or not (member_dir / mf.PRIORKIT_JSON).exists():
            raise PriorkitError(f"{folder}: member {m['name']} is missing ({member_dir}); copy the whole recipe "
                                "folder, members/ included")
        resolve_folder(member_dir)  # the member's own files, named when one is missing
        if check_weights and m.get("sha256"):
            weights = member_dir / m["weights"]
            if not weights.exists() or file_sha256(weights) != m["sha256"]:
                raise PriorkitError(f"{folder}: member {m['name']}'s weights ({weights}) are not the ones exported "
                                    "(SHA-256 differs); export the recipe again")
        member_info = mf.read_info(member_dir)
        if data_dir is not None:
            member_info = with_data_dir(member_info, data_dir)
        members[m["name"]] = load_folder(member_dir, member_info, device=device, use_cache=use_cache,
                                         max_length=max_length)
    dictionary = _dictionary(folder, info.get("dictionary"), data_dir)
    steps = ordered(from_data(info["steps"], f"{folder / mf.PRIORKIT_JSON}: steps"), list(members),
                    dictionary is not None, f"{folder / mf.PRIORKIT_JSON}")
    recipe = Recipe(folder, info, members, steps, dictionary)
    if decode is not None or o_bias is not None:
        recipe.set_decoding(decode, o_bias)
    return recipe


def _dictionary(folder: Path, d: Mapping[str, Any] | None, data_dir: Path | None) -> Dictionary | None:
    if not d:
        return None
    from ..providers.plugins import get_provider

    params = dict(d.get("params") or {})
    if data_dir is not None:
        params["data_dir"] = str(data_dir)
    provider = get_provider(d["provider"], **params)
    if d.get("fingerprint") and provider.fingerprint != d["fingerprint"]:
        warnings.warn(f"{folder}: the dictionary's fingerprint is now {provider.fingerprint}, the recipe was "
                      f"exported with {d['fingerprint']}: its matches may differ", RecipeWarning, stacklevel=3)
    calibration = d.get("calibration") or {}
    return Dictionary(provider, d["types"], calibration.get("drop") or (), calibration.get("keep") or ())


class Recipe(Tagging):
    """Several NER models and the steps after them, loaded from a recipe folder (module doc)."""

    task_type = "token-classification"
    inputs = "words"

    def __init__(self, folder: Path, info: dict, members: Mapping[str, Predictor], steps: tuple,
                 dictionary: Dictionary | None) -> None:
        self.folder, self.info, self.members = Path(folder), info, dict(members)
        first_member = next(iter(self.members.values()))
        self.labels = list(first_member.labels)
        for name, p in self.members.items():
            if p.task_type != "token-classification" or sorted(p.labels) != sorted(self.labels):
                raise PriorkitError(f"{folder}: member {name} predicts {p.labels}, the first member {self.labels}: "
                                    "the members of a recipe share their tags")
        self.steps, self.dictionary = tuple(steps), dictionary
        if dictionary is not None:
            known = {label[2:] for label in self.labels if label[1:2] == "-"}
            bad = sorted(set(dictionary.types.values()) - known)
            if bad:
                raise PriorkitError(f"{folder}: the dictionary's type map gives {', '.join(bad)}, which the members' "
                                    f"tags ({', '.join(self.labels)}) lack")
        self.truncated: list[int] = []  # long sentences are read in windows, never cut
        self.max_length = min(p.max_length for p in self.members.values())

    # ---- what Tagging asks for ------------------------------------------------------------------
    def _order(self) -> list[str]:
        mixed = first(self.steps, "mix")
        return list(mixed.members) if mixed is not None else list(self.members)

    def _scorers(self) -> list[tuple[Predictor, list[int]]]:
        out = []
        for name in self._order():
            p = self.members[name]
            out.append((p, [list(p.labels).index(label) for label in self.labels]))
        return out

    def _mix_weights(self) -> list[float]:
        return normalised(first(self.steps, "mix").weights)

    # ---- decoding -------------------------------------------------------------------------------
    @property
    def decode(self) -> str:
        return first(self.steps, "decode").how

    @property
    def o_bias(self) -> float:
        return first(self.steps, "decode").o_bias

    def set_decoding(self, decode: str | None = None, o_bias: float | None = None) -> None:
        """Replace the decode step's ``how`` and / or ``o_bias``."""
        old = first(self.steps, "decode")
        new = Decode(decode or old.how, old.o_bias if o_bias is None else float(o_bias))
        self.steps = ordered([new if s.kind == "decode" else s for s in self.steps], list(self.members),
                             self.dictionary is not None, str(self.folder))

    # ---- NER records ----------------------------------------------------------------------------
    def examples(self, inputs: Iterable[Any]) -> list[dict]:
        return next(iter(self.members.values())).examples(inputs)

    def predict(self, inputs: Iterable[Any], batch_size: int = 32, progress: bool = False) -> list[dict]:
        """One record per input sentence, in order: ``tags`` and ``entities`` (word spans, ``end``
        exclusive, with ``score``, ``concept_ids`` and ``source``).  The inputs are read as the
        sentences of one document (the document pass reads them together)."""
        words = [e["words"] for e in self.examples(inputs)]
        result = self.run_steps(words, self.word_scores(words, batch_size))
        records = []
        for w, tags, probs, sources, ids in zip(words, result.tags, result.probs, result.sources, result.concept_ids):
            ents = entity_dicts(w, tags)
            for e, span in zip(ents, spans(tags)):
                e["score"] = entity_score(probs, tags, span, self.labels)
                e["concept_ids"] = list(ids.get(span, ()))
                e["source"] = sources.get(span, "model")
            records.append({"tags": tags, "entities": ents})
        return records

    def describe(self) -> str:
        from ..decode.steps import describe

        return describe(self.steps)

    def __repr__(self) -> str:
        return f"<Recipe {self.folder}: {self.describe()}>"


__all__ = ["Recipe", "load_recipe", "read_recipe", "RecipeWarning"]

"""The pipeline's checks of silver labels, before anything is labelled or trained: the
``prior.silver`` section (task type, provider with matches, the type map against the task's
entity types) and the unlabelled file.  Each returns problems; the pipeline turns the
first into a ``file:line`` error."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...errors import PriorkitError
from .config import SilverConfig


def resolved_config(prior: Any) -> SilverConfig | None:
    """A prior setting's silver config with the prior's provider filled in (None: no silver)."""
    if prior is None or getattr(prior, "silver", None) is None:
        return None
    return prior.silver.resolved(prior.provider, prior.params)


def entity_types(labels: Iterable[str]) -> set[str]:
    """The entity types of BIO tags (``B-Disease`` -> ``Disease``)."""
    return {t.split("-", 1)[1] for t in labels if t != "O" and "-" in t}


def task_types(types: dict[str, str], tags: Iterable[str]) -> dict[str, str]:
    """The groups of a group -> type map whose type is an entity type of ``tags`` (BIO tags or
    label names), in the map's order."""
    have = entity_types(tags)
    return {g: t for g, t in types.items() if t in have}


def type_problem(own: dict[str, str] | None, dictionary: bool, labels: Sequence[str], where_labels: str,
                 pipeline: dict[str, str] | None = None) -> str | None:
    """A message when the silver labels' type map (``own``: ``silver.types``, else the pipeline's
    ``task.dictionary_types``) names an entity type the task does not have (None when no
    dictionary labels anything, or when neither map is set: then the map is read off the data's
    entity types, which the task has)."""
    if not dictionary:
        return None
    types = own if own is not None else pipeline
    if types is None:
        return None
    have = entity_types(labels)
    wrong = [f"{g} -> {t}" for g, t in types.items() if t not in have]
    if not wrong:
        return None
    default = " (task.dictionary_types)" if own is None else ""
    return (f"maps {', '.join(wrong)}{default}, but the task has no such entity type; its types "
            f"({where_labels}) are {', '.join(sorted(have)) or 'none'}: map each group to one of them")


def config_problems(prior: Any, task_type: str, labels: Sequence[str] | None,
                    pipeline: dict[str, str] | None = None) -> list[tuple[tuple, str]]:
    """(field path below the prior, message) of what is wrong with a prior's silver section
    (``pipeline``: the pipeline's ``task.dictionary_types``)."""
    config = resolved_config(prior)
    if config is None:
        return []
    if task_type != "token-classification":
        return [(("silver",), f"silver labels need task.type token-classification, not {task_type}")]
    out = [(("silver", field), msg) for field, msg in config.problems()]
    if out or not config.uses_dictionary:  # teacher.dictionary false: no provider, no type map is read
        return out
    if labels is not None:
        why = type_problem(config.types, config.uses_dictionary, labels, "task.labels", pipeline)
        if why:
            return [(("silver", "types"), why)]
    from ...providers.plugins import get_provider

    field = ("silver", "provider") if prior.silver.provider is not None else ("provider",)
    try:
        provider = get_provider(config.provider, **(config.params or {}))
    except (PriorkitError, ValueError) as exc:
        return [(field, str(exc))]
    if not provider.supports_matches:
        return [(field, f"provider {config.provider!r} has no concept matches, so it cannot give silver labels; "
                        "use one that implements matches(), e.g. ontology (silver: {provider: ontology, "
                        "params: {source: hpo+mesh}})")]
    if config.types is None:  # the pipeline's map (or the data's): groups the provider lacks are skipped
        return []
    groups = set(provider.match_groups())
    unknown = [g for g in config.types if g not in groups]
    if unknown:
        return [(("silver", "types"), f"groups {unknown} are not groups of provider {config.provider!r}; "
                                      f"it emits {sorted(groups)}")]
    return []


def unlabeled_file_problem(src: Any) -> str | None:
    """Why ``data.unlabeled``'s file cannot be read (missing, a folder, unreadable, empty)."""
    if src.path is None:
        return None
    path = Path(src.path).expanduser()
    if not path.exists():
        return f"the unlabelled file {path} does not exist"
    if not path.is_file():
        return f"{path} is not a file; give one file of sentences (CoNLL, or format: text)"
    if not os.access(path, os.R_OK):
        return f"the unlabelled file {path} cannot be read (permission denied)"
    if path.stat().st_size == 0:
        return f"the unlabelled file {path} is empty; give sentences to label, or leave data.unlabeled out"
    return None


def read_text(path: str | os.PathLike) -> list[dict[str, Any]]:
    """``format: text``: one sentence a line, words split on white space (blank lines skipped)."""
    from ...errors import DataFormatError

    try:
        with open(path, "r", encoding="utf-8") as fh:
            return [{"words": line.split()} for line in fh if line.strip()]
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 ({exc.reason}); save the file as UTF-8") from None
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot be read: {exc.strerror or exc}") from None

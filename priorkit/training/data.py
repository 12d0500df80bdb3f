"""Getting a pipeline's splits: built-in corpora, files, Hugging Face ids; slices and fractions.

Every split becomes a list of plain dicts (``{"text_a", "text_b", "label"}`` or
``{"words", "tags"}``) with a content digest, so step outputs can tell whether
they were made from the same data.  Subsets are index selections drawn with
their own seeds, never with the prior setting, so every prior setting of a
sweep trains on exactly the same examples.
"""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataFormatError, ResourceError
from ..config import ConfigError, DataSource, PipelineConfig, digest

log = logging.getLogger(__name__)

#: accepted split names of the built-in corpora -> file split name
_STSB_SPLITS = {"train": "train", "dev": "dev", "validation": "dev", "test": "test"}
_BC5CDR_SPLITS = {"train": "train", "devel": "devel", "dev": "devel", "validation": "devel", "test": "test"}


@dataclasses.dataclass
class Split:
    name: str  # "train" / "eval" / "test"
    examples: list[dict[str, Any]]
    origin: str  # where it came from, for logs and metrics.json
    digest: str

    def __len__(self) -> int:
        return len(self.examples)


def load_data(cfg: PipelineConfig) -> dict[str, Split]:
    """All configured splits of ``cfg``: {"train": Split, "eval": ..., "test": ...}."""
    out: dict[str, Split] = {}
    for name in ("train", "eval", "test"):
        src = getattr(cfg.data, name)
        if src is None:
            continue
        where = cfg.where(f"data.{name}")
        examples, origin = read_source(src, where, numeric_label=cfg.task.type == "regression")
        examples = slice_examples(examples, src)
        _check_kind(examples, cfg.task.type, name, where, origin)
        if cfg.data.entity_types is not None:
            examples = keep_types(examples, cfg.data.entity_types, cfg.where("data.entity_types"), origin)
        out[name] = Split(name, examples, origin, digest(examples))
    if cfg.data.unlabeled is not None:
        out["unlabeled"] = load_unlabeled(cfg.data.unlabeled, cfg.where("data.unlabeled"))
        if not cfg.data.transductive:
            check_unlabeled_overlap(out, cfg.where("data.unlabeled"))
    return out


#: sentences shorter than this many words are not compared: headings such as "Case report ."
#: recur across BC5CDR's train, devel and test
OVERLAP_MIN_WORDS = 5


def _sentences(example: dict[str, Any]) -> list[tuple[str, ...]]:
    if "words" in example:
        return [tuple(example["words"])]
    return [tuple(str(example[k]).split()) for k in ("text_a", "text_b") if example.get(k)]


def check_unlabeled_overlap(splits: dict[str, Split], where: str) -> None:
    """Stop when ``data.unlabeled`` holds sentences of the scored splits (eval, test), compared
    by their words (sentences of at least :data:`OVERLAP_MIN_WORDS` words); ``data.transductive:
    true`` allows it on purpose."""
    unlabeled = {s for e in splits["unlabeled"].examples for s in _sentences(e) if len(s) >= OVERLAP_MIN_WORDS}
    for name in ("eval", "test"):
        if name not in splits:
            continue
        scored = [s for e in splits[name].examples for s in _sentences(e) if len(s) >= OVERLAP_MIN_WORDS]
        hits = [s for s in scored if s in unlabeled]
        if hits:
            first = " ".join(hits[0][:10]) + (" ..." if len(hits[0]) > 10 else "")
            raise ConfigError(f"{where}: data.unlabeled ({splits['unlabeled'].origin}) holds {len(hits)} of the "
                              f"{len(scored)} sentences of data.{name} ({splits[name].origin}), e.g. {first!r}; "
                              f"silver labels would train on text the runs are scored on: give text without "
                              f"them, or set data.transductive: true to label it on purpose")


def keep_types(examples: list[dict], types: list[str], where: str, origin: str) -> list[dict]:
    """``data.entity_types``: tagged sentences with the tags of every other entity type set to O."""
    keep = set(types)
    if not keep:
        raise DataFormatError(f"{where}: data.entity_types is empty; name at least one entity type or leave it null")
    if "words" not in examples[0]:
        raise DataFormatError(f"{where}: data.entity_types applies to tagged sentences (token classification), "
                              f"but {origin} holds sentence examples")
    have = {t.split("-", 1)[1] for e in examples for t in e["tags"] if "-" in t}
    missing = sorted(keep - have)
    if missing and len(missing) == len(keep):
        raise DataFormatError(f"{where}: data.entity_types names {', '.join(missing)}, but {origin} has no such "
                              f"entity type; its types are {', '.join(sorted(have)) or 'none'}")
    return [{**e, "tags": [t if t == "O" or t.split("-", 1)[-1] in keep else "O" for t in e["tags"]]}
            for e in examples]


def load_unlabeled(src: DataSource, where: str) -> Split:
    """``data.unlabeled``: sentences whose labels (if any) are dropped."""
    if src.format == "text":
        from ..supervision.silver.checks import read_text

        try:
            examples = read_text(Path(src.path).expanduser())[: src.limit]
        except DataFormatError as exc:
            raise DataFormatError(f"{where}: data.unlabeled: {exc}") from None
        origin = str(src.path)
    else:
        examples, origin = read_source(src, where)
    examples = [{"words": list(e["words"])} for e in slice_examples(examples, src) if "words" in e]
    if not examples:
        raise DataFormatError(f"{where}: data.unlabeled ({origin}) holds no sentences to label; give a CoNLL "
                              "file or one with format: text (one sentence a line)")
    return Split("unlabeled", examples, origin, digest(examples))


def read_source(src: DataSource, where: str = "", numeric_label: bool = False
                ) -> tuple[list[dict[str, Any]], str]:
    """Read one split (before ``limit``/``sample``); returns (examples, origin).

    ``numeric_label`` (regression): a non-numeric label in a file is reported
    with its file and line while reading, not later from inside training.
    """
    from .. import datasets as readers

    if src.hf is not None:
        return read_hf(src, where)
    if src.source == "stsb":
        split = _STSB_SPLITS.get(src.split or "train")
        if split is None:
            raise DataFormatError(f"{where}: STS-B has splits {', '.join(_STSB_SPLITS)}, not {src.split!r}")
        from ..resources import stsb_path

        path, fmt = stsb_path(split), "stsb"
    elif src.source == "bc5cdr":
        split = _BC5CDR_SPLITS.get(src.split or "train")
        if split is None:
            raise DataFormatError(f"{where}: BC5CDR has splits {', '.join(_BC5CDR_SPLITS)}, not {src.split!r}")
        from ..resources import embedded

        path, fmt = embedded("bc5cdr", f"{split}.tsv"), "conll"
    else:
        path = Path(src.path).expanduser()
        fmt = None if src.format == "auto" else src.format
    columns = dict(src.columns)
    header = bool(columns.pop("header", True))
    unknown = sorted(set(columns) - {"text_a", "text_b", "label"})
    if unknown:
        raise DataFormatError(f"{where}: columns accepts text_a, text_b, label and header, not {unknown}")
    if fmt in ("stsb", "conll") and columns:
        raise DataFormatError(f"{where}: columns do not apply to the {fmt} format ({path})")
    kwargs = {} if fmt in ("stsb", "conll") else {**columns, "header": header}
    try:
        if fmt is None or fmt not in ("stsb", "conll"):
            rows = readers.read_dataset(path, fmt, limit=src.limit, numeric_label=numeric_label, **kwargs)
        else:
            rows = readers.read_dataset(path, fmt, limit=src.limit)
    except DataFormatError as exc:
        raise DataFormatError(f"{exc} (configured at {where})") from None
    return [r.to_dict() for r in rows], str(path)


def read_hf(src: DataSource, where: str = "") -> tuple[list[dict[str, Any]], str]:
    """A Hugging Face ``datasets`` split mapped to priorkit's example dicts.

    ``columns`` names the dataset's columns: ``text_a``/``text_b``/``label`` for
    pairs (defaults: sentence1/sentence2/label or question1/question2/label),
    ``words``/``tags`` for NER (defaults: tokens/ner_tags; ClassLabel ids are
    turned into their names).
    """
    try:
        import datasets  # noqa: F401
    except ImportError:
        raise ResourceError(
            f"{where}: data from the Hugging Face Hub ({src.hf!r}) needs the `datasets` package: "
            "pip install datasets (and network access); or download the split and give path: FILE"
        ) from None
    ds = datasets.load_dataset(src.hf, src.hf_config, split=src.split or "train")
    names = list(ds.column_names)
    cols = dict(src.columns)
    origin = f"hf:{src.hf}" + (f"/{src.hf_config}" if src.hf_config else "") + f":{src.split or 'train'}"
    if src.limit is not None:
        ds = ds.select(range(min(src.limit, len(ds))))

    def pick(role: str, guesses: tuple[str, ...], required: bool) -> str | None:
        if role in cols:
            if cols[role] not in names:
                raise DataFormatError(f"{where}: {origin} has no column {cols[role]!r}; columns: {', '.join(names)}")
            return cols[role]
        for g in guesses:
            if g in names:
                return g
        if required:
            raise DataFormatError(f"{where}: cannot tell the {role} column of {origin}; set columns.{role} "
                                  f"(columns: {', '.join(names)})")
        return None

    words_col = pick("words", ("tokens", "words"), False)
    if words_col is not None:
        tags_col = pick("tags", ("ner_tags", "tags", "labels"), True)
        feature = ds.features[tags_col]
        inner = getattr(feature, "feature", None)
        names_of = getattr(inner, "names", None)
        out = [{"words": list(r[words_col]),
                "tags": [names_of[t] if names_of else str(t) for t in r[tags_col]]} for r in ds]
        return out, origin
    a = pick("text_a", ("sentence1", "question1", "premise", "text_a", "sentence", "text"), True)
    b = pick("text_b", ("sentence2", "question2", "hypothesis", "text_b"), False)
    lab = pick("label", ("label", "score", "labels"), False)
    label_names = getattr(ds.features.get(lab), "names", None) if lab else None
    out = []
    for r in ds:
        label = r[lab] if lab else None
        if label_names is not None and isinstance(label, int) and label >= 0:
            label = label_names[label]
        out.append({"text_a": r[a], "text_b": r[b] if b else None, "label": label})
    return out, origin


def sample_indices(n: int, src: DataSource) -> np.ndarray | None:
    """The positions (sorted) that ``src.sample`` keeps of ``n`` examples; None: all of them."""
    if src.sample is not None and src.sample < n:
        rng = np.random.default_rng(src.sample_seed)
        return np.sort(rng.choice(n, size=src.sample, replace=False))
    return None


def slice_examples(examples: list[dict], src: DataSource) -> list[dict]:
    """Apply ``sample`` (``limit`` was applied while reading)."""
    keep = sample_indices(len(examples), src)
    if keep is not None:
        examples = [examples[i] for i in keep]
    elif src.sample is not None:
        log.warning("data sample=%d asks for more than the %d examples there are; keeping all",
                    src.sample, len(examples))
    return examples


def document_context(src: DataSource, where: str = "") -> tuple[list[list[str]], list[int]]:
    """The words of every sentence of ``src`` in the source's order (before ``sample``), and the
    position there of each example that ``sample`` keeps: the text around a sampled sentence,
    for passes that read neighbouring sentences (the document-level dictionary of a post-hoc arm)."""
    examples, _ = read_source(src, where)
    keep = sample_indices(len(examples), src)
    positions = list(range(len(examples))) if keep is None else [int(i) for i in keep]
    return [list(e["words"]) for e in examples], positions


def fraction_indices(n: int, fraction: float, *, mode: str, seed: int, subset_seed: int) -> np.ndarray:
    """Indices (sorted) of the training subset for a fraction.

    One permutation of ``range(n)`` is drawn -- with ``subset_seed`` ("nested")
    or the run's ``seed`` ("per-seed") -- and the first ``round(fraction * n)``
    (at least 1) are kept.  With one permutation, smaller fractions are subsets
    of larger ones; the prior setting never enters, so all settings agree.
    """
    if fraction >= 1.0:
        return np.arange(n)
    rng = np.random.default_rng(subset_seed if mode == "nested" else seed)
    perm = rng.permutation(n)
    k = max(1, int(round(fraction * n)))
    return np.sort(perm[:k])


def _check_kind(examples: list[dict], task_type: str, split: str, where: str, origin: str) -> None:
    if not examples:
        raise DataFormatError(f"{where}: data.{split} ({origin}) holds no examples")
    tagged = "words" in examples[0]
    if task_type == "token-classification" and not tagged:
        raise DataFormatError(
            f"{where}: token classification needs tagged sentences (a CoNLL/BIO file: token TAB tag), "
            f"but data.{split} ({origin}) holds sentence examples"
        )
    if task_type != "token-classification" and tagged:
        raise DataFormatError(
            f"{where}: a {task_type} task needs sentence (pair) examples with labels, but data.{split} "
            f"({origin}) holds tagged sentences; set task.type: token-classification"
        )
    if not tagged and any(e.get("label") is None for e in examples):
        missing = sum(e.get("label") is None for e in examples)
        raise DataFormatError(f"{where}: {missing} example(s) of data.{split} ({origin}) have no label")

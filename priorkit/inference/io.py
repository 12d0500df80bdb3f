"""Reading ``priorkit predict``'s input with the dataset readers, and writing its output."""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Sequence

from ..datasets import TaggedSentence, _lines, check_file, detect_format, read_dataset
from ..errors import DataFormatError

_KIND_WORDS = {"pairs": "sentence pairs (two text columns)", "single": "one text per row",
               "words": "words to tag (NER)", "any": "texts or sentence pairs"}


def read_words(path: str | os.PathLike, limit: int | None = None) -> list[dict]:
    """CoNLL-style input for tagging: one word per line (a tag column, if any, is ignored),
    a blank line between sentences, ``-DOCSTART-`` lines skipped."""
    path = Path(path)
    out: list[dict] = []
    words: list[str] = []
    for _number, line in _lines(path):
        if not line.strip():
            if words:
                out.append({"words": words})
                words = []
                if limit is not None and len(out) >= limit:
                    return out
            continue
        token = (line.split("\t") if "\t" in line else line.split())[0].strip()
        if token.startswith("-DOCSTART-"):
            continue
        if token:
            words.append(token)
    if words:
        out.append({"words": words})
    return out[:limit] if limit is not None else out


def columns_of(path: Path, fmt: str, header: bool) -> list[str]:
    """The column names (csv/tsv header, first JSON object's keys) for error messages."""
    try:
        for _, line in _lines(path):
            if not line.strip():
                continue
            if fmt == "jsonl":
                obj = json.loads(line)
                return list(obj) if isinstance(obj, dict) else []
            if fmt in ("csv", "tsv"):
                row = next(csv.reader(io.StringIO(line), delimiter="\t" if fmt == "tsv" else ","))
                return [c.strip() for c in row] if header else [str(i) for i in range(len(row))]
            return []
    except (DataFormatError, json.JSONDecodeError, StopIteration, csv.Error):
        return []
    return []


def read_inputs(path: str | os.PathLike, kind: str, task_type: str, *, fmt: str | None = None,
                text_a: Any = None, text_b: Any = None, header: bool = True,
                limit: int | None = None) -> list[dict]:
    """The inputs a model of ``kind`` (pairs / single / words / any) takes, from a dataset file.

    A file whose columns do not fit the model is refused with its columns named.
    """
    path = check_file(path, "input")
    fmt = fmt or detect_format(path)
    if kind == "words":
        if fmt == "conll":
            return read_words(path, limit)
        examples = read_dataset(path, fmt, text_a=text_a, text_b=text_b, header=header, limit=limit)
        if examples and not isinstance(examples[0], TaggedSentence) and examples[0].text_b is not None:
            raise DataFormatError(
                f"{path}: the model tags the words of one text ({task_type}), but the input has two text "
                f"columns (columns: {', '.join(columns_of(path, fmt, header)) or '?'}); pick one with --text-a")
        return [{"words": list(e.words)} if isinstance(e, TaggedSentence) else {"words": e.text_a.split()}
                for e in examples]
    if fmt == "conll":
        raise DataFormatError(
            f"{path} is CoNLL (one word per line), but the model takes {_KIND_WORDS[kind]} ({task_type}); "
            "pass a csv, tsv, jsonl or STS-B file (--text-a/--text-b name the columns)")
    examples = read_dataset(path, fmt, text_a=text_a, text_b=text_b, header=header, limit=limit)
    out = [{"text_a": e.text_a, "text_b": e.text_b} for e in examples]
    if not out:
        return out
    cols = ", ".join(columns_of(path, fmt, header)) or "?"
    if kind == "pairs" and out[0]["text_b"] is None:
        raise DataFormatError(
            f"{path}: the model compares sentence pairs ({task_type}), but only one text column was found "
            f"(columns: {cols}); name both with --text-a and --text-b")
    if kind == "single" and out[0]["text_b"] is not None:
        raise DataFormatError(
            f"{path}: the model reads one text per input ({task_type}), but two text columns were found "
            f"(columns: {cols}); name the one to read with --text-a")
    return out


def output_format(out: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    if out:
        suffix = Path(out).suffix.lower().lstrip(".")
        if suffix in ("csv", "tsv"):
            return suffix
    return "jsonl"


def render(records: Sequence[dict], examples: Sequence[dict], fmt: str) -> str:
    """JSON Lines (inputs and prediction per line) or a CSV/TSV table."""
    if fmt == "jsonl":
        return "".join(json.dumps({**{k: v for k, v in e.items() if v is not None}, **r}, ensure_ascii=False) + "\n" for e, r in zip(examples, records))
    from .predictor import records_table

    header, rows = records_table(records, examples)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n",
                        quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in row])
    return buf.getvalue()


def write_atomic(path: str | os.PathLike, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)

"""Readers for the datasets priorkit precomputes priors for and trains on.

Formats:

- ``stsb``: the STS Benchmark files (``sts-{train,dev,test}.csv``).  Tab
  separated with *no* quoting (sentences contain bare ``"``), score in the 5th
  column, sentences in the 6th and 7th; some rows carry two trailing source
  fields, which are dropped.
- ``csv`` / ``tsv``: a header row (or ``header=False`` and integer columns);
  columns chosen with ``text_a``/``text_b``/``label`` (names or 0-based
  indices); when none is given, all three are guessed from common names
  (``sentence1``/``sentence2``/``label``, ``text_a``/``text_b``, ...).  CSV uses standard quoting,
  TSV none (GLUE-style files quote nothing).
- ``jsonl``: one JSON object per line; the same column options name keys.
- ``conll``: one token per line (``token TAB tag``; whitespace-separated
  columns with the tag last are accepted too), a blank line between
  sentences, ``-DOCSTART-`` lines skipped; tags are ``O`` or ``B-``/``I-``/
  ``E-``/``S-`` + type.

Every malformed line raises :class:`DataFormatError` naming the file and line.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator, Sequence, Union

from .errors import DataFormatError

FORMATS = ("stsb", "csv", "tsv", "jsonl", "conll")

_TAG = re.compile(r"^(O|[BIES]-\S+)$")
_TEXT_A_NAMES = ("text_a", "sentence1", "sentence_a", "question1", "premise", "text", "sentence", "s1")
_TEXT_B_NAMES = ("text_b", "sentence2", "sentence_b", "question2", "hypothesis", "s2")
_LABEL_NAMES = ("label", "score", "similarity", "gold_label", "labels")
Column = Union[str, int, None]


@dataclasses.dataclass(frozen=True)
class Example:
    """A sentence (``text_b`` None) or a sentence pair with its label."""

    text_a: str
    text_b: str | None = None
    label: Any = None

    def inputs(self) -> tuple[str, str | None]:
        """What a ``PriorBuilder`` takes: ``(text_a, text_b)``."""
        return self.text_a, self.text_b

    def to_dict(self) -> dict[str, Any]:
        """The form ``PriorCollator`` expects."""
        return {"text_a": self.text_a, "text_b": self.text_b, "label": self.label}


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """A pre-split sentence with one BIO tag per word (NER)."""

    words: tuple[str, ...]
    tags: tuple[str, ...]

    @property
    def text_a(self) -> str:
        return " ".join(self.words)

    @property
    def text_b(self) -> None:
        return None

    def inputs(self) -> tuple[list[str], None]:
        """The word list (a builder aligns pre-split input with ``is_split_into_words``)."""
        return list(self.words), None

    def to_dict(self) -> dict[str, Any]:
        return {"words": list(self.words), "tags": list(self.tags)}


Dataset = Union[list[Example], list[TaggedSentence]]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without the line ending); a bad byte names its line."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise DataFormatError(f"cannot read dataset {path}: {exc}") from exc
    with fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(
                    f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8"
                ) from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]  # byte-order mark
            yield number, text.rstrip("\r\n")


def check_file(path: str | os.PathLike, what: str, hint: str = "") -> Path:
    """``path`` as a Path when it is a file; else a DataFormatError naming it (``what``: the
    kind of file the caller wants, e.g. "dataset"; ``hint`` follows the folder message)."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{what} file {path} does not exist")
    if path.is_dir():
        raise DataFormatError(f"{path} is a folder; pass one {what} file{hint}")
    return path


def file_checksum(path: str | os.PathLike) -> str:
    """sha256 of a file (what a precompute run records about its dataset)."""
    from .checksums import file_sha256

    return file_sha256(path)


def _parse_label(value: str) -> Any:
    """'3' -> 3, '2.5' -> 2.5, 'entailment' -> 'entailment', '' -> None."""
    value = value.strip()
    if value == "":
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


# ---------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------
def read_stsb(path: str | os.PathLike, limit: int | None = None) -> list[Example]:
    """STS Benchmark: label = the 0-5 score (float), text_a/text_b = the sentences."""
    path = Path(path)
    out: list[Example] = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise DataFormatError(
                f"{path}:{number}: expected at least 7 tab-separated fields (genre, file, year, id, "
                f"score, sentence 1, sentence 2), found {len(fields)}; is this an STS-B file? "
                "Use --format csv/tsv with --text-a/--text-b/--label for other layouts"
            )
        try:
            score = float(fields[4])
        except ValueError:
            raise DataFormatError(f"{path}:{number}: score (field 5) is {fields[4]!r}, not a number") from None
        if not 0.0 <= score <= 5.0:
            raise DataFormatError(f"{path}:{number}: score {score} is outside STS-B's 0-5 range")
        out.append(Example(fields[5], fields[6], score))
        if limit is not None and len(out) >= limit:
            break
    return out


def read_conll(path: str | os.PathLike, limit: int | None = None) -> list[TaggedSentence]:
    """CoNLL/BIO: ``token TAB tag`` lines, blank lines between sentences."""
    path = Path(path)
    out: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []

    def close() -> None:
        if words:
            out.append(TaggedSentence(tuple(words), tuple(tags)))
            words.clear()
            tags.clear()

    for number, line in _lines(path):
        if not line.strip():
            close()
            if limit is not None and len(out) >= limit:
                return out
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if fields[0].startswith("-DOCSTART-"):
            continue
        if len(fields) < 2:
            raise DataFormatError(
                f"{path}:{number}: expected 'token<TAB>tag', found {line!r}; every non-blank line "
                "needs a token and its BIO tag, with a blank line between sentences"
            )
        token, tag = fields[0].strip(), fields[-1].strip()
        if not token:
            raise DataFormatError(f"{path}:{number}: empty token in {line!r}")
        if not _TAG.match(tag):
            raise DataFormatError(
                f"{path}:{number}: tag {tag!r} is not a BIO tag (O, B-TYPE, I-TYPE, E-TYPE or S-TYPE)"
            )
        words.append(token)
        tags.append(tag)
    close()
    return out[:limit] if limit is not None else out


def _columns(header: list[str] | None, text_a: Column, text_b: Column, label: Column,
             path: Path) -> tuple[Any, Any, Any]:
    """Resolve the three column options; guess all three only when none is given."""
    guess = text_a is None and text_b is None and label is None
    return (
        _resolve(header, text_a, _TEXT_A_NAMES, "text-a", path, required=True),
        _resolve(header, text_b, _TEXT_B_NAMES if guess else (), "text-b", path, required=False),
        _resolve(header, label, _LABEL_NAMES if guess else (), "label", path, required=False),
    )


def _resolve(header: list[str] | None, column: Column, names: Sequence[str], role: str,
             path: Path, required: bool) -> int | str | None:
    """A column (name, index, None = guess from ``names``) -> a column index."""
    if isinstance(column, str) and column.isdigit():
        column = int(column)
    if isinstance(column, int):
        if header is not None and not 0 <= column < len(header):
            raise DataFormatError(f"{path}: --{role} column {column} out of range; the file has "
                                  f"{len(header)} columns: {', '.join(header)}")
        return column
    if header is None:
        if column is None and not required:
            return None
        raise DataFormatError(
            f"{path}: without a header row, give --{role} as a 0-based column number"
            + ("" if column is None else f" (got {column!r})")
        )
    if column is not None:
        if column in header:
            return header.index(column)
        raise DataFormatError(f"{path}: no column {column!r} for --{role}; columns: {', '.join(header)}")
    for name in names:
        if name in header:
            return header.index(name)
    if required:
        raise DataFormatError(
            f"{path}: cannot tell which column is the text; pass --text-a (and --text-b, --label). "
            f"Columns: {', '.join(header)}"
        )
    return None


def _number(value: Any) -> bool:
    """Whether a label value can serve as a regression target: ``float()`` reads it, finite."""
    if isinstance(value, bool) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def read_table(path: str | os.PathLike, delimiter: str = ",", *, text_a: Column = None,
               text_b: Column = None, label: Column = None, header: bool = True,
               quoting: bool | None = None, limit: int | None = None,
               numeric_label: bool = False) -> list[Example]:
    """CSV/TSV with a header row (or integer columns and ``header=False``).

    ``quoting`` defaults to on for ``,`` and off for tab (GLUE/STS-style TSVs
    contain bare quotes).  ``numeric_label``: every label must be a number
    (regression), checked here where the line is still known.  Line numbers
    in errors are where the row starts (a quoted field may span lines).
    """
    path = Path(path)
    if quoting is None:
        quoting = delimiter != "\t"
    text = "\n".join(line for _, line in _lines(path))
    reader = csv.reader(io.StringIO(text), delimiter=delimiter,
                        quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE, strict=True)
    out: list[Example] = []
    number = 1  # the line the row being read starts on
    try:
        rows = iter(reader)
        head = next(rows, None) if header else None
        if header and head is None:
            raise DataFormatError(f"{path}: the file is empty (expected a header row)")
        names = [h.strip() for h in head] if head is not None else None
        ia, ib, il = _columns(names, text_a, text_b, label, path)
        width = len(names) if names is not None else None
        need = max(i for i in (ia, ib, il) if i is not None)
        while True:
            number = reader.line_num + 1
            row = next(rows, None)
            if row is None:
                break
            if not row or all(not f.strip() for f in row):
                continue
            if width is not None and len(row) != width:
                raise DataFormatError(
                    f"{path}:{number}: {len(row)} fields, but the header has {width} ({', '.join(names)})"
                    + ("" if quoting else "; tabs inside a field are not allowed in TSV")
                    + (f"; the row runs to line {reader.line_num}: is a quote left open?"
                       if reader.line_num > number else "")
                )
            if len(row) <= need:
                raise DataFormatError(f"{path}:{number}: {len(row)} fields, column {need} is needed")
            value = _parse_label(row[il]) if il is not None else None
            if numeric_label and il is not None and not _number(value):
                column = repr(names[il]) if names is not None else str(il)
                raise DataFormatError(
                    f"{path}:{number}: label (column {column}) is {row[il]!r}, not a number; "
                    "a regression task needs a numeric label on every row"
                )
            out.append(Example(row[ia], row[ib] if ib is not None else None, value))
            if limit is not None and len(out) >= limit:
                break
    except csv.Error as exc:
        hint = (f" (the row starting on line {number} runs to line {reader.line_num}: is a quote left open?)"
                if reader.line_num > number else "")
        raise DataFormatError(f"{path}:{number}: {exc}{hint}") from None
    return out


def read_jsonl(path: str | os.PathLike, *, text_a: str | None = None, text_b: str | None = None,
               label: str | None = None, limit: int | None = None,
               numeric_label: bool = False) -> list[Example]:
    """JSON Lines: one object per line; keys chosen like table columns.

    ``numeric_label``: every label must be a number (regression).
    """
    path = Path(path)
    out: list[Example] = []
    keys: tuple[Any, Any, Any] | None = None
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(f"{path}:{number}: expected a JSON object, found {type(obj).__name__}")
        if keys is None:
            names = list(obj)
            cols = _columns(names, text_a, text_b, label, path)
            keys = tuple(names[k] if isinstance(k, int) else k for k in cols)  # type: ignore[assignment]
        ka, kb, kl = keys
        values = []
        for key, role in ((ka, "text-a"), (kb, "text-b")):
            if key is None:
                values.append(None)
                continue
            if key not in obj:
                raise DataFormatError(f"{path}:{number}: no key {key!r} (--{role}); keys: {', '.join(obj)}")
            if not isinstance(obj[key], str):
                raise DataFormatError(f"{path}:{number}: {key!r} is {type(obj[key]).__name__}, not a string")
            values.append(obj[key])
        lab = obj.get(kl) if kl is not None else None
        if numeric_label and kl is not None and not _number(lab):
            found = "missing" if kl not in obj else f"{lab!r}, not a number"
            raise DataFormatError(f"{path}:{number}: label (key {kl!r}) is {found}; "
                                  "a regression task needs a numeric label on every line")
        out.append(Example(values[0], values[1], lab))
        if limit is not None and len(out) >= limit:
            break
    return out


# ---------------------------------------------------------------------------
# detection and the one entry point
# ---------------------------------------------------------------------------
def _first_lines(path: Path, n: int = 5) -> list[str]:
    out = []
    try:
        for _, line in _lines(path):
            if line.strip():
                out.append(line)
            if len(out) >= n:
                break
    except DataFormatError:
        pass
    return out


def _looks_stsb(lines: list[str]) -> bool:
    for line in lines:
        f = line.split("\t")
        if len(f) < 7:
            return False
        try:
            if not 0 <= float(f[4]) <= 5:
                return False
        except ValueError:
            return False
    return bool(lines)


def _looks_conll(lines: list[str]) -> bool:
    for line in lines:
        f = line.split("\t") if "\t" in line else line.split()
        if f and f[0].startswith("-DOCSTART-"):
            continue
        if len(f) < 2 or not _TAG.match(f[-1].strip()):
            return False
    return bool(lines)


def detect_format(path: str | os.PathLike) -> str:
    """Guess the format from the extension and the first lines.

    ``.jsonl``/``.json`` -> jsonl; ``.conll``/``.bio``/``.iob`` -> conll; for
    ``.csv``/``.tsv``/``.txt`` the content decides: STS-B rows (>= 7 tab fields,
    a 0-5 score in field 5) -> stsb; ``token TAB tag`` lines -> conll; else the
    extension (``.tsv`` -> tsv, otherwise csv).
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if ext in (".conll", ".bio", ".iob", ".iob2", ".conllu"):
        return "conll"
    first = _first_lines(path)
    if _looks_stsb(first):
        return "stsb"
    if _looks_conll(first):
        return "conll"
    if ext == ".tsv":
        return "tsv"
    if ext in (".csv", ".txt", ""):
        return "csv"
    raise DataFormatError(f"cannot tell the format of {path}; pass --format ({', '.join(FORMATS)})")


def read_dataset(path: str | os.PathLike, format: str | None = None, *, text_a: Column = None,
                 text_b: Column = None, label: Column = None, header: bool = True,
                 limit: int | None = None, numeric_label: bool = False) -> Dataset:
    """Read any supported dataset file; ``format=None`` detects it (:func:`detect_format`).

    ``numeric_label``: refuse a non-numeric label with its file and line (csv,
    tsv, jsonl; STS-B scores are always checked, CoNLL has tags instead).
    """
    path = check_file(path, "dataset", f" (e.g. {Path(path)}/train.tsv)")
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise DataFormatError(f"unknown dataset format {fmt!r}; choose one of {', '.join(FORMATS)}")
    columns = any(c is not None for c in (text_a, text_b, label))
    if fmt in ("stsb", "conll") and columns:
        raise DataFormatError(f"--text-a/--text-b/--label do not apply to the {fmt} format "
                              f"({path}); use --format csv, tsv or jsonl to pick columns")
    if fmt == "stsb":
        return read_stsb(path, limit=limit)
    if fmt == "conll":
        return read_conll(path, limit=limit)
    if fmt == "jsonl":
        return read_jsonl(path, text_a=text_a, text_b=text_b, label=label, limit=limit,  # type: ignore[arg-type]
                          numeric_label=numeric_label)
    return read_table(path, "\t" if fmt == "tsv" else ",", text_a=text_a, text_b=text_b,
                      label=label, header=header, limit=limit, numeric_label=numeric_label)


__all__ = ["Example", "TaggedSentence", "FORMATS", "read_dataset", "detect_format", "read_stsb",
           "read_conll", "read_table", "read_jsonl", "file_checksum"]

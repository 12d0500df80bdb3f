"""What every document reader shares: the file checks (exists, a file, not binary), the line
reader that names a line that is not UTF-8, and the annotation-offset check.  Torch-free."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..errors import DataFormatError, DocumentError

HEAD_BYTES = 8192
_MAGIC = ((b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "gzip-compressed"), (b"%PDF", "a PDF file"),
          (b"\x89PNG", "a PNG image"), (b"\x7fELF", "an executable"), (b"PAR1", "a Parquet file"),
          (b"\xfd7zXZ", "xz-compressed"), (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
          (b"SQLite format 3", "an SQLite database"), (b"\xff\xfe", "UTF-16 text"), (b"\xfe\xff", "UTF-16 text"))


def binary_kind(head: bytes) -> str | None:
    """What a file whose first bytes are ``head`` is, when it is not text (else None)."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    # safetensors: an 8-byte little-endian header length, then the JSON header
    if len(head) >= 10 and head[8:10] == b'{"' and int.from_bytes(head[:8], "little") < 1 << 32:
        return "a safetensors file"
    if b"\x00" in head:
        return "binary (it has NUL bytes)"
    return None


def check_file(path: Path) -> None:
    """The file exists, is a file and is not binary; else a DataFormatError naming it."""
    if not path.exists():
        raise DataFormatError(f"{path}: no such input file")
    if path.is_dir():
        raise DataFormatError(f"{path} is a folder; pass its files (e.g. {path}/*.txt)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot read it ({exc.strerror})") from None
    kind = binary_kind(head)
    if kind:
        hint = "re-encode it as UTF-8" if kind == "UTF-16 text" else "pass a text file (docs/tagging.md, 'Input formats')"
        raise DataFormatError(f"{path}: not a text document file: {kind}; {hint}")


def lines(path: Path) -> Iterator[tuple[int, str | DocumentError]]:
    """``(line number, text without its line ending)``, or a DocumentError for a line that is
    not UTF-8 (naming the line and the byte offset, in the line and in the file)."""
    offset = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, DocumentError(
                    f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start} of the line, "
                    f"byte {offset + exc.start} of the file); re-encode the file as UTF-8")
            else:
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield number, text.rstrip("\r\n")
            offset += len(raw)


def check_annotations(text: str, annotations: list[dict[str, Any]], where: str) -> DocumentError | None:
    """A DocumentError for the first annotation whose offsets do not give its text."""
    for a in annotations:
        s, e = a["start"], a["end"]
        if not (isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= len(text)):
            return DocumentError(f"{where}: annotation offsets {s}-{e} are outside the text "
                                 f"(length {len(text)}); fix the offsets or drop the annotation")
        if a.get("text") is not None and text[s:e] != a["text"]:
            return DocumentError(f"{where}: annotation {s}-{e} says {a['text']!r} but the text there is "
                                 f"{text[s:e]!r}; the offsets must be character offsets into the document's text")
    return None



"""Static word vectors: GloVe / word2vec / Numberbatch text files and ``.npy`` matrices.

Shared by the ``embedding`` provider (``vectors=FILE``) and the ``conceptnet``
provider (``embeddings=FILE``, Numberbatch).  Parsing a text embedding file
costs seconds to minutes (GloVe 6B 50d: 400k lines), so the parsed, unit-length
matrix is cached as ``vectors.npz`` + ``words.txt`` under
``priorkit_home()/index/vectors/<key>``, keyed by the file's SHA-256.

Accepted layouts:

- text, one word per line followed by its numbers, space separated (GloVe);
  an optional first line ``<count> <dim>`` (word2vec text format); plain or
  gzip.  Numberbatch's multilingual terms ``/c/en/dog`` keep only the chosen
  languages and become ``dog``.
- ``.npy`` matrix (V, D) plus a vocabulary: a ``.parquet`` file (one string
  column, or a column named word/token/term/index) or a ``.txt`` file with
  one word per line, found beside the ``.npy`` or given as ``vocab=``.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from priorkit.errors import DataFormatError, ResourceError

from .. import _support
from .._support import open_text_lines

#: 2: the matrix is saved as vectors.npz through ``_support`` (was vectors.npy)
INDEX_FORMAT = 2
INDEX_KIND = "vectors"
_CHUNK = 20000
_VOCAB_COLUMNS = ("word", "words", "token", "tokens", "term", "terms", "vocab", "index")


@dataclasses.dataclass
class StaticVectors:
    """Unit-length word vectors and a word -> row table."""

    words: list[str]
    matrix: np.ndarray        # (V, D) float32, rows of length 1 (zero rows stay zero)
    source: str

    def __post_init__(self) -> None:
        self.row: dict[str, int] = {}
        for i, w in enumerate(self.words):
            self.row.setdefault(w, i)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def vector(self, text: str) -> np.ndarray | None:
        """Unit vector of a word or phrase, or None if it is out of vocabulary.

        Tries the text as is, lower-cased, and with spaces as underscores
        (Numberbatch stores "heart_attack"); otherwise a phrase is the mean of
        its words' vectors, and only if every word is known -- a phrase with
        an unknown word is unknown rather than silently half-represented.
        """
        text = text.strip()
        if not text:
            return None
        for cand in (text, text.lower(), "_".join(text.lower().split())):
            i = self.row.get(cand)
            if i is not None:
                return self.matrix[i]
        parts = text.lower().replace("_", " ").replace("-", " ").split()
        if len(parts) < 2:
            return None
        rows = [self.row.get(p) for p in parts]
        if any(r is None for r in rows):
            return None
        mean = self.matrix[rows].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm > 0 else mean


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


# ---- text files -----------------------------------------------------------
def parse_text_vectors(path: Path, languages: Sequence[str] | None = None) -> StaticVectors:
    """Parse a GloVe / word2vec / Numberbatch text file (see the module docstring)."""
    keep_langs = {lang for lang in languages} if languages else None
    words: list[str] = []
    blocks: list[np.ndarray] = []
    pending_words: list[str] = []
    pending_rows: list[str] = []
    pending_lines: list[int] = []
    dim: int | None = None

    def flush() -> None:
        if not pending_rows:
            return
        try:
            block = np.array(" ".join(pending_rows).split(), dtype=np.float32).reshape(len(pending_rows), dim)
        except ValueError:
            for lineno, row in zip(pending_lines, pending_rows):  # find the culprit line
                try:
                    np.array(row.split(), dtype=np.float32)
                except ValueError:
                    raise DataFormatError(
                        f"{path}, line {lineno}: the vector holds a value that is not a number: "
                        f"{row[:80]!r}"
                    ) from None
            raise
        blocks.append(block)
        words.extend(pending_words)
        pending_words.clear(), pending_rows.clear(), pending_lines.clear()

    with open_text_lines(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise DataFormatError(f"{path}, line {lineno}: not UTF-8 text; is this a binary word2vec file?") from None
            if not line.strip():
                continue
            if lineno == 1:
                head = line.split()
                if len(head) == 2 and head[0].isdigit() and head[1].isdigit():
                    dim = int(head[1])  # word2vec header "<count> <dim>"
                    continue
            fields = line.rstrip(" ").split(" ")
            if dim is None:
                dim = len(fields) - 1
                if dim < 1:
                    raise DataFormatError(f"{path}, line {lineno}: expected a word followed by numbers, got {line[:80]!r}")
            if len(fields) < dim + 1:
                raise DataFormatError(
                    f"{path}, line {lineno}: expected a word and {dim} numbers, found "
                    f"{len(fields) - 1} value(s)"
                )
            # words may contain spaces (GloVe 840B): the last `dim` fields are the vector
            word = " ".join(fields[: len(fields) - dim])
            if word.startswith("/c/"):
                parts = word.split("/")
                if len(parts) < 4 or (keep_langs is not None and parts[2] not in keep_langs):
                    continue
                word = parts[3]
            pending_words.append(word)
            pending_rows.append(" ".join(fields[len(fields) - dim:]))
            pending_lines.append(lineno)
            if len(pending_rows) >= _CHUNK:
                flush()
    flush()
    if not words:
        raise DataFormatError(f"{path} holds no word vectors" + (f" for language(s) {sorted(keep_langs)}" if keep_langs else ""))
    return StaticVectors(words, _normalise_rows(np.concatenate(blocks)), str(path))


# ---- .npy + vocabulary ----------------------------------------------------
def find_vocab_file(npy: Path) -> Path:
    """The vocabulary beside a ``.npy``: same stem, else the only parquet/txt in the folder."""
    for suffix in (".parquet", ".txt", ".vocab"):
        cand = npy.with_suffix(suffix)
        if cand.exists():
            return cand
    siblings = sorted(p for p in npy.parent.iterdir() if p.suffix in (".parquet", ".vocab")
                      or p.name.endswith(("vocab.txt", "words.txt", "index.txt")))
    if len(siblings) == 1:
        return siblings[0]
    raise ResourceError(
        f"no vocabulary found for {npy}: put <name>.parquet or <name>.txt (one word per line) "
        f"beside it, or pass vocab=FILE" + (f" (candidates: {', '.join(p.name for p in siblings)})" if siblings else "")
    )


def read_vocab(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        names = table.column_names
        string_cols = [n for n in names if str(table.schema.field(n).type) in ("string", "large_string")]
        chosen = next((n for n in names if n.lower() in _VOCAB_COLUMNS), None)
        if chosen is None and len(string_cols) == 1:
            chosen = string_cols[0]
        if chosen is None:
            raise DataFormatError(
                f"{path}: cannot tell which column holds the words (columns: {', '.join(names)}); "
                f"name it one of {', '.join(_VOCAB_COLUMNS)}"
            )
        words = table.column(chosen).to_pylist()
        if any(w is None for w in words):
            raise DataFormatError(f"{path}: column {chosen!r} holds missing (null) words")
        return [str(w) for w in words]
    text = path.read_text(encoding="utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def load_npy_vectors(npy: Path, vocab: Path | None) -> StaticVectors:
    vocab = vocab or find_vocab_file(npy)
    try:
        matrix = np.load(npy, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise DataFormatError(f"{npy} is not a readable .npy matrix: {exc}") from exc
    if matrix.ndim != 2:
        raise DataFormatError(f"{npy}: expected a (words, dim) matrix, found shape {matrix.shape}")
    words = read_vocab(vocab)
    if len(words) != matrix.shape[0]:
        raise DataFormatError(
            f"{vocab} lists {len(words)} words but {npy} has {matrix.shape[0]} rows; they must match"
        )
    return StaticVectors(words, _normalise_rows(matrix), str(npy))


# ---- entry point ------------------------------------------------------------
def load_vectors(path: str | Path, *, vocab: str | Path | None = None,
                 languages: Sequence[str] | None = None, cache_dir=None) -> StaticVectors:
    """Load static vectors from ``path``; text files go through the index cache."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ResourceError(f"vector file {path} does not exist")
    if path.suffix == ".npy":
        return load_npy_vectors(path, Path(vocab).expanduser() if vocab else None)
    checksum = _support.file_sha256(path, cache_dir)
    key = _support.index_key(sha256=checksum, languages=sorted(languages or []), format=INDEX_FORMAT)
    folder = _support.find_index(INDEX_KIND, key, cache_dir)
    if folder is not None:
        words = _support.load_lines(folder / "words.txt")
        return StaticVectors(words, _support.load_arrays(folder / "vectors.npz")["matrix"], str(path))
    vectors = parse_text_vectors(path, languages)
    meta = {"source": str(path), "sha256": checksum, "words": len(vectors.words), "dim": vectors.dim}
    try:
        with _support.building_index(INDEX_KIND, key, meta, cache_dir) as tmp:
            _support.save_arrays(tmp / "vectors.npz", matrix=vectors.matrix)
            _support.save_lines(tmp / "words.txt", vectors.words)
    except OSError as exc:  # read-only or full disk: work on, parse again next time
        warnings.warn(f"could not save parsed vectors of {path} under {_support.index_root(cache_dir)} "
                      f"({exc}); they will be parsed again next time", UserWarning, stacklevel=2)
    return vectors

"""Built-in ``embedding`` provider: cosine between word or phrase vectors.

::

    priorkit.get_provider("embedding")                          # the embedded MiniLM
    priorkit.get_provider("embedding", model="sentence-transformers/all-mpnet-base-v2", device="cuda")
    priorkit.get_provider("embedding", vectors="glove")        # GloVe 6B 50d (.npy + parquet)
    priorkit.get_provider("embedding", vectors="glove.840B.300d.txt")

Two back-ends behind one name:

- a sentence-transformers model (default: the embedded all-MiniLM-L6-v2)
  encodes each word or phrase as a short text, so every string gets a vector
  and the provider never returns NaN (``allows_nan = False``);
- static vectors (GloVe/word2vec text, or ``.npy`` + vocabulary) give NaN
  for out-of-vocabulary words; a phrase is the mean of its words' vectors.

Cosine is mapped to [0, 1] by ``scale``: ``"clip"`` = max(cos, 0) (default)
or ``"shift"`` = (cos + 1) / 2.  Both keep the ranking of positive cosines;
they differ in what an unrelated pair gets (0 vs about 0.5), which matters
once values are mixed with other providers or multiplied into attention.
docs/providers/embedding.md has the measurements behind the default.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import priorkit
from priorkit import resources
from priorkit.errors import PriorkitError, ResourceError
from priorkit.providers.base import PriorProvider

from .. import _support

SCALES = ("clip", "shift")


def cosine_to_unit(cos: np.ndarray, scale: str) -> np.ndarray:
    """Map cosines to [0, 1] (see the module docstring)."""
    if scale == "clip":
        return np.clip(cos, 0.0, 1.0)
    return np.clip((cos + 1.0) * 0.5, 0.0, 1.0)


def _check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise PriorkitError(f"embedding: scale must be one of {', '.join(SCALES)}, not {scale!r}")
    return scale


class _EmbeddingBase(PriorProvider):
    name = "embedding"
    version = "1"
    #: cosine is symmetric: a cache stores each pair once
    symmetric = True

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        self.prepare([*left, *right])                           # one batch for both sides
        lv, lok = self.vectors_for(left)                        # (L, D), (L,)
        rv, rok = self.vectors_for(right)                       # (R, D), (R,)
        # float64 products: values then do not depend on how words were batched (BLAS order)
        cos = lv.astype(np.float64) @ rv.astype(np.float64).T   # (L, R)
        out = cosine_to_unit(cos, self.params["scale"]).astype(np.float32)
        same = np.asarray(left, dtype=object)[:, None] == np.asarray(right, dtype=object)[None, :]
        out[same] = 1.0                                         # a word is itself, whatever its vector
        if not (lok.all() and rok.all()):
            out[~lok, :] = np.nan
            out[:, ~rok] = np.nan
        return out

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise cosines: every distinct word is encoded (or looked up) once, in one
        batch, then one row-wise dot product; equal to ``compute`` pair by pair."""
        words = list(dict.fromkeys([*left, *right]))
        self.prepare(words)
        vecs, ok = self.vectors_for(words)                      # (W, D), (W,)
        row = {w: i for i, w in enumerate(words)}
        li = np.fromiter(map(row.__getitem__, left), dtype=np.int64, count=len(left))    # (P,)
        ri = np.fromiter(map(row.__getitem__, right), dtype=np.int64, count=len(right))  # (P,)
        v = vecs.astype(np.float64)
        cos = np.einsum("pd,pd->p", v[li], v[ri])              # (P,)
        out = cosine_to_unit(cos, self.params["scale"]).astype(np.float32)
        out[li == ri] = 1.0                                     # a word is itself
        out[~(ok[li] & ok[ri])] = np.nan
        return out

    def prepare(self, words: Sequence[str]) -> None:
        """Make vectors of ``words`` available (a model encodes the missing ones in one batch)."""

    def vectors_for(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(len(words), D) unit vectors and a (len(words),) mask of known words."""
        raise NotImplementedError


class SentenceEmbeddingProvider(_EmbeddingBase):
    """Cosine of sentence-transformers embeddings of the words (every string is known)."""

    allows_nan = False

    def __init__(self, model: str | os.PathLike | None = None, *, device: str | None = None,
                 batch_size: int = 128, scale: str = "clip", max_cache: int = 1_000_000) -> None:
        """
        :param model: local folder or Hub id; default: the embedded all-MiniLM-L6-v2.
        :param device: "cpu", "cuda", "cuda:1", "mps"; default: CUDA if available, else CPU.
            Not part of the fingerprint: values agree across devices to float tolerance.
        :param batch_size: words per forward pass.
        :param scale: "clip" (max(cos, 0)) or "shift" ((cos + 1) / 2).
        :param max_cache: words whose vectors are kept in memory (oldest dropped first).
        """
        if batch_size < 1:
            raise PriorkitError(f"embedding: batch_size must be >= 1, not {batch_size!r}")
        super().__init__(model=None if model is None else str(model), scale=_check_scale(scale))
        self.device = device
        self.batch_size = int(batch_size)
        self.max_cache = int(max_cache)
        self.model = None
        self._cache: dict[str, np.ndarray] = {}
        self._cache_lock = threading.Lock()
        self._checksum: str | None = None

    @property
    def model_path(self) -> str:
        if self.params["model"] is None:
            return str(resources.minilm_path())
        return self.params["model"]

    def data_checksum(self) -> str:
        """Checksum of a local model's weight files; '' for a Hub id (the id is in the params)."""
        if self._checksum is None:
            folder = Path(self.model_path).expanduser()
            if folder.is_dir():
                weights = sorted(p for p in folder.iterdir()
                                 if p.suffix in (".safetensors", ".bin") and p.is_file())
                self._checksum = "+".join(_support.file_sha256(p) for p in weights)
            else:
                self._checksum = ""
        return self._checksum

    def load(self) -> None:
        from sentence_transformers import SentenceTransformer

        device = self.device
        if device is None:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.model = SentenceTransformer(self.model_path, device=device)
        except OSError as exc:
            raise ResourceError(
                f"embedding: cannot load sentence-transformers model {self.model_path!r}: {exc}. "
                "Pass a local folder, or a Hub id on a machine that reaches the Hub"
            ) from exc
        self.device = str(self.model.device)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (L, D), in batches; no caching."""
        vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def prepare(self, words: Sequence[str]) -> None:
        with self._cache_lock:
            missing = [w for w in dict.fromkeys(words) if w not in self._cache]
        if missing:
            # The model sees the surface text; underscores (ConceptNet-style terms) become spaces.
            encoded = self.encode([w.replace("_", " ") for w in missing])
            with self._cache_lock:
                if len(self._cache) + len(missing) > self.max_cache:
                    for key in list(self._cache)[: len(self._cache) + len(missing) - self.max_cache]:
                        del self._cache[key]
                self._cache.update(zip(missing, encoded))

    def vectors_for(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        self.prepare(words)
        with self._cache_lock:
            vecs = np.stack([self._cache[w] if w in self._cache else self.encode([w.replace("_", " ")])[0]
                             for w in words])  # evicted meanwhile: encode again
        return vecs, np.ones(len(words), dtype=bool)


class StaticVectorProvider(_EmbeddingBase):
    """Cosine of static word vectors (GloVe, word2vec, .npy); NaN out of vocabulary."""

    allows_nan = True

    def __init__(self, vectors: str | os.PathLike, *, vocab: str | os.PathLike | None = None,
                 scale: str = "clip", cache_dir: str | os.PathLike | None = None) -> None:
        """
        :param vectors: a GloVe/word2vec text file (plain or .gz), a ``.npy`` matrix,
            or ``"glove"`` for the GloVe 6B 50d resource.
        :param vocab: the ``.npy``'s vocabulary (.parquet or .txt) if not beside it.
        :param scale: "clip" (max(cos, 0)) or "shift" ((cos + 1) / 2).
        :param cache_dir: where parsed text vectors are cached (default ``priorkit_home()/index``).
        """
        super().__init__(vectors=str(vectors), vocab=None if vocab is None else str(vocab),
                         scale=_check_scale(scale))
        self.cache_dir = cache_dir
        self.table = None
        self._checksum: str | None = None

    def files(self) -> tuple[Path, Path | None]:
        vectors, vocab = self.params["vectors"], self.params["vocab"]
        path = Path(vectors).expanduser()
        if not path.exists() and vectors == "glove":
            return (resources.resource_path("glove", "glove_6B_50d_emb.npy"),
                    resources.resource_path("glove", "glove_6B_index.parquet"))
        if not path.exists():
            raise ResourceError(
                f"embedding: vector file {path} does not exist; pass a GloVe/word2vec text file, "
                "a .npy matrix with its vocabulary, or vectors='glove'"
            )
        return path, (Path(vocab).expanduser() if vocab else None)

    def data_checksum(self) -> str:
        if self._checksum is None:
            vec, vocab = self.files()
            parts = [_support.file_sha256(vec, self.cache_dir)]
            if vec.suffix == ".npy":
                from .vectors import find_vocab_file

                parts.append(_support.file_sha256(vocab or find_vocab_file(vec), self.cache_dir))
            self._checksum = "+".join(parts)
        return self._checksum

    def load(self) -> None:
        from .vectors import load_vectors

        vec, vocab = self.files()
        self.table = load_vectors(vec, vocab=vocab, cache_dir=self.cache_dir)

    def vectors_for(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        vecs = np.zeros((len(words), self.table.dim), dtype=np.float32)
        ok = np.zeros(len(words), dtype=bool)
        for i, w in enumerate(words):
            v = self.table.vector(w)
            if v is not None:
                vecs[i], ok[i] = v, True
        return vecs, ok


def make_embedding_provider(model: str | os.PathLike | None = None, *,
                            vectors: str | os.PathLike | None = None, **params: Any) -> PriorProvider:
    """Cosine of embeddings: a sentence-transformers model (default MiniLM) or static vectors."""
    if model is not None and vectors is not None:
        raise PriorkitError("embedding: pass either model= (sentence-transformers) or vectors= (static), not both")
    if vectors is not None:
        return StaticVectorProvider(vectors, **params)
    return SentenceEmbeddingProvider(model, **params)


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("embedding", make_embedding_provider,
             "cosine of sentence-transformers embeddings (MiniLM) or static vectors (GloVe, word2vec)")

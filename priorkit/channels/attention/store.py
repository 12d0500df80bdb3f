"""Token-aligned priors stored once, so later epochs and runs skip tokenising and aligning.

A :class:`PriorBuilder` tokenises every example, aligns tokens to words, looks the word
pairs up and scatters them into an (L, L) matrix -- every epoch.  An :class:`AlignedStore`
keeps what that produced for each example (input ids, token type ids, word ids and the
(L, L) prior, data only) and, for a text it has seen, assembles the padded batch from
memory: no tokenizer call, no alignment, no look-up.

Keys.  One *namespace* per builder setting: a hash of the store format, the builder's
``describe()`` (layout, neutral value, key normalisation, stop words, the provider's
fingerprint, the tokenizer's fingerprint and its keyword arguments) and the keyword
arguments of the call (``truncation``, ``max_length`` ...).  Inside it, an example is the
128-bit BLAKE2b hash of ``[text_a, text_b]`` as JSON (a word list and the string of its
words hash differently, as they tokenise differently).  Anything that changes a value
changes the namespace, so a stale entry is never read.

Files.  ``<root>/<namespace>/*.npz``: NumPy archives of plain arrays, read with
``allow_pickle=False`` (nothing in them can run code).  Each flush writes a new shard
under a temporary name and renames it into place, so a crash leaves either the whole
shard or none, and no existing shard is ever rewritten; processes (and DataLoader
workers) that fill the same namespace write separate shards.  A shard that cannot be
read raises :class:`~priorkit.errors.CacheError` naming the file (delete it: its entries
are simply rebuilt).

Equality.  An example's block is cut from the builder's own ``build_batch`` output, and
batches are assembled with the tokenizer's padding (side, pad id, pad token type id), so
a stored batch equals ``builder.build_batch`` on the same texts exactly
(tests/test_aligned_store.py).  Calls the store cannot reproduce (``padding`` other than
longest, ``pad_to_multiple_of``, other ``return_tensors``, extra ``return_*`` outputs) go
to the builder unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ...align.tokens import tokenizer_behaviour
from ...errors import CacheError

FORMAT = 1
#: keyword arguments of a build call whose effect the store reproduces (the rest bypass it)
_SAFE_KWARGS = {"truncation", "max_length", "add_special_tokens"}
#: what a stored batch holds; a builder batch with more (e.g. special_tokens_mask) is not stored
_STORED = {"input_ids", "token_type_ids", "attention_mask", "prior"}


def text_key(text_a: Any, text_b: Any = None) -> bytes:
    """The 16-byte key of one example (raw strings or word lists)."""
    blob = json.dumps([text_a, text_b], ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=16).digest()


def tokenizer_identity(tokenizer: Any) -> str:
    """A hash of what the tokenizer does, without its padding/truncation *state*.

    A fast tokenizer's serialised form records the padding and truncation last used by
    a call (``padding=True`` switches them on), so hashing it whole would give a
    different value before and after the first batch.
    """
    blob = tokenizer_behaviour(tokenizer)
    specials = json.dumps(getattr(tokenizer, "special_tokens_map", {}), sort_keys=True, default=str)
    return hashlib.sha256((blob + specials + str(getattr(tokenizer, "padding_side", ""))).encode()).hexdigest()[:16]


class StoredBatch(dict):
    """The batch dict (``input_ids``, ``attention_mask``, [``token_type_ids``], ``prior``) with
    ``word_ids(b)`` like a ``BatchEncoding``'s (what :class:`PriorCollator` uses for word labels)."""

    def __init__(self, data: dict[str, torch.Tensor], word_ids: list[list[int | None]]) -> None:
        super().__init__(data)
        self._word_ids = word_ids

    def word_ids(self, batch_index: int = 0) -> list[int | None]:
        return self._word_ids[batch_index]


class _Shard:
    """The arrays of one .npz shard, concatenated over its examples."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.keys = arrays["keys"]  # (N, 16) uint8
        self.lengths = arrays["lengths"].astype(np.int64)  # (N,)
        self.tok_off = np.concatenate([[0], np.cumsum(self.lengths)])
        self.mat_off = np.concatenate([[0], np.cumsum(self.lengths ** 2)])
        self.input_ids = arrays["input_ids"]
        self.token_type_ids = arrays.get("token_type_ids")
        self.word_ids = arrays["word_ids"]
        self.prior = arrays["prior"]

    def example(self, i: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        t0, t1 = self.tok_off[i], self.tok_off[i + 1]
        n = t1 - t0
        m0 = self.mat_off[i]
        tt = None if self.token_type_ids is None else self.token_type_ids[t0:t1]
        return self.input_ids[t0:t1], tt, self.word_ids[t0:t1], self.prior[m0:m0 + n * n].reshape(n, n)


class AlignedStore:
    """Token-aligned priors of one :class:`PriorBuilder`, in memory and in ``root`` on disk.

    :param builder: the builder whose output is stored (its settings pick the namespace).
    :param root: a folder (created when writable); ``None`` keeps everything in memory.
    :param read_only: never write (e.g. a shared, prepared store).
    :param flush_every: write a shard once this many new examples are pending
        (:meth:`flush` writes the rest; :class:`PriorCollator` flushes when closed).

    ``build_batch`` has the builder's signature and returns the same tensors.
    """

    def __init__(self, builder: Any, root: str | os.PathLike | None = None, *, read_only: bool = False,
                 flush_every: int = 2048) -> None:
        self.builder = builder
        self.root = None if root is None else Path(root).expanduser()
        self.read_only = read_only
        self.flush_every = int(flush_every)
        tok = builder.tokenizer
        self._pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        self._pad_type = int(getattr(tok, "pad_token_type_id", 0) or 0)
        self._left = getattr(tok, "padding_side", "right") == "left"
        self._spaces: dict[str, dict[bytes, tuple[_Shard | dict, int]]] = {}  # namespace -> key -> entry
        self._pending: dict[str, list[tuple[bytes, tuple]]] = {}
        self._names: dict[str, str] = {}
        self.hits = self.misses = 0

    # ---- keys ---------------------------------------------------------
    def namespace(self, call_kwargs: dict[str, Any] | None = None) -> str:
        """The folder name for this builder and these call keyword arguments (computed once each)."""
        call = json.dumps(call_kwargs or {}, sort_keys=True, default=str)
        ns = self._names.get(call)
        if ns is None:
            desc = dict(self.builder.describe())
            desc["tokenizer"] = tokenizer_identity(self.builder.tokenizer)
            blob = json.dumps({"format": FORMAT, "builder": desc, "call": call}, sort_keys=True, default=str)
            ns = self._names[call] = hashlib.sha256(blob.encode()).hexdigest()[:24]
        return ns

    def _space(self, ns: str) -> dict:
        space = self._spaces.get(ns)
        if space is None:
            space = self._spaces[ns] = {}
            for path in self._shard_paths(ns):
                shard = _read_shard(path)
                for i, key in enumerate(shard.keys):
                    space.setdefault(key.tobytes(), (shard, i))
        return space

    def _shard_paths(self, ns: str) -> list[Path]:
        if self.root is None or not (self.root / ns).is_dir():
            return []
        return sorted((self.root / ns).glob("*.npz"))

    def __len__(self) -> int:
        return sum(len(s) for s in self._spaces.values())

    # ---- building -----------------------------------------------------
    def build_batch(self, texts_a: Sequence, texts_b: Sequence | None = None, *, pad_value: float = 0.0,
                    return_tensors: str = "pt", **kwargs: Any):
        """``builder.build_batch(texts_a, texts_b, ...)``, from the store where it can."""
        opts = {**self.builder.tokenizer_kwargs, **kwargs}
        padding = opts.pop("padding", True)
        if return_tensors != "pt" or padding not in (True, "longest") or set(opts) - _SAFE_KWARGS:
            return self.builder.build_batch(texts_a, texts_b, pad_value=pad_value,
                                            return_tensors=return_tensors, **kwargs)
        n = len(texts_a) if hasattr(texts_a, "__len__") else 0
        try:
            if n == 0 or isinstance(texts_a, (str, bytes)) or (texts_b is not None and len(texts_b) != n):
                raise TypeError
            keys = [text_key(texts_a[i], None if texts_b is None else texts_b[i]) for i in range(n)]
        except TypeError:  # not a batch of texts: the builder raises its own clear error
            return self.builder.build_batch(texts_a, texts_b, pad_value=pad_value, **kwargs)
        ns = self.namespace(kwargs)
        space = self._space(ns)
        missing = [i for i, k in enumerate(keys) if k not in space]
        if missing:
            self.misses += len(missing)
            sub_a = [texts_a[i] for i in missing]
            sub_b = None if texts_b is None else [texts_b[i] for i in missing]
            fresh = self.builder.build_batch(sub_a, sub_b, pad_value=pad_value, **kwargs)
            if len(missing) == n:  # nothing stored yet: the builder's batch is the answer
                self._keep(ns, space, keys, fresh)
                return fresh
            self._keep(ns, space, [keys[i] for i in missing], fresh)
        self.hits += n - len(missing)
        return self._assemble([space[k] for k in keys], pad_value)

    def priors(self, encoding: Any, texts_a: Sequence, texts_b: Sequence | None = None, *,
               pad_value: float = 0.0) -> torch.Tensor:
        """``builder.priors(encoding, texts_a, texts_b)`` (a batch tokenised elsewhere: the
        collator's), from the store where it can: a stored example whose token ids equal the
        encoding's row gives its block without aligning or looking anything up; the others are
        aligned by the builder (in one call) and stored."""
        B, L = encoding["input_ids"].shape
        keys = [text_key(texts_a[i], None if texts_b is None else texts_b[i]) for i in range(B)]
        ns = self.namespace()
        space = self._space(ns)
        ids = encoding["input_ids"].numpy()
        mask = encoding["attention_mask"].numpy().astype(bool)
        prior = np.full((B, L, L), float(pad_value), dtype=np.float32)
        missing = []
        for b, key in enumerate(keys):
            entry = space.get(key)
            valid = np.flatnonzero(mask[b])
            if entry is not None:
                part, i = entry
                tok, _, _, mat = part if i < 0 else part.example(i)
                if len(tok) == len(valid) and np.array_equal(tok, ids[b, valid]):
                    prior[b][np.ix_(valid, valid)] = mat
                    continue
            missing.append(b)
        self.hits += B - len(missing)
        if missing:
            self.misses += len(missing)
            fresh = self.builder.priors(encoding, texts_a, texts_b, pad_value=pad_value, rows=missing)
            prior[missing] = fresh.numpy()[missing]
            rows = torch.tensor(missing)
            sub = {k: encoding[k][rows] for k in ("input_ids", "token_type_ids", "attention_mask") if k in encoding}
            sub["prior"] = torch.from_numpy(prior[missing])
            self._keep(ns, space, [keys[b] for b in missing],
                       StoredBatch(sub, [encoding.word_ids(b) for b in missing]))
        return torch.from_numpy(prior)

    def _keep(self, ns: str, space: dict, keys: list[bytes], batch: Any) -> None:
        """Cut each example's block out of a builder batch and keep it (pending a flush)."""
        if set(batch.keys()) - _STORED:
            return
        ids = batch["input_ids"].numpy()
        types = batch["token_type_ids"].numpy() if "token_type_ids" in batch else None
        mask = batch["attention_mask"].numpy().astype(bool)
        prior = batch["prior"].numpy()
        pending = self._pending.setdefault(ns, [])
        for b, key in enumerate(keys):
            if key in space:  # the same text twice in one batch
                continue
            valid = np.flatnonzero(mask[b])
            lo, hi = int(valid[0]), int(valid[-1]) + 1
            words = np.array([-1 if w is None else w for w in batch.word_ids(b)[lo:hi]], dtype=np.int32)
            entry = (ids[b, lo:hi].copy(), None if types is None else types[b, lo:hi].copy(), words,
                     prior[b, lo:hi, lo:hi].copy())
            space[key] = (entry, -1)
            pending.append((key, entry))
        if not self.read_only and self.root is not None and len(pending) >= self.flush_every:
            self.flush()

    def _assemble(self, entries: list[tuple[Any, int]], pad_value: float) -> StoredBatch:
        parts = [e if i < 0 else e.example(i) for e, i in entries]
        B, L = len(parts), max(len(p[0]) for p in parts)
        ids = np.full((B, L), self._pad_id, dtype=np.int64)
        mask = np.zeros((B, L), dtype=np.int64)
        has_types = parts[0][1] is not None
        types = np.full((B, L), self._pad_type, dtype=np.int64) if has_types else None
        prior = np.full((B, L, L), pad_value, dtype=np.float32)
        word_ids: list[list[int | None]] = []
        for b, (tok, tt, words, mat) in enumerate(parts):
            n = len(tok)
            s = slice(L - n, L) if self._left else slice(0, n)
            ids[b, s] = tok
            mask[b, s] = 1
            if has_types:
                types[b, s] = tt
            prior[b, s, s] = mat
            w = [None if x < 0 else int(x) for x in words.tolist()]
            pad = [None] * (L - n)
            word_ids.append(pad + w if self._left else w + pad)
        data = {"input_ids": torch.from_numpy(ids)}
        if has_types:
            data["token_type_ids"] = torch.from_numpy(types)
        data["attention_mask"] = torch.from_numpy(mask)
        data["prior"] = torch.from_numpy(prior)
        return StoredBatch(data, word_ids)

    # ---- writing ------------------------------------------------------
    def flush(self) -> int:
        """Write pending examples as one new shard per namespace; returns how many were written."""
        if self.read_only or self.root is None:
            return 0
        written = 0
        for ns, pending in self._pending.items():
            if not pending:
                continue
            folder = self.root / ns
            folder.mkdir(parents=True, exist_ok=True)
            arrays = _pack(pending)
            fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=".npz", dir=folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    np.savez(fh, **arrays)
                os.replace(tmp, folder / f"{uuid.uuid4().hex}.npz")
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            written += len(pending)
            pending.clear()
        return written

    def close(self) -> None:
        self.flush()


def _pack(pending: list[tuple[bytes, tuple]]) -> dict[str, np.ndarray]:
    keys = np.frombuffer(b"".join(k for k, _ in pending), dtype=np.uint8).reshape(-1, 16)
    entries = [e for _, e in pending]
    out = {
        "format": np.array([FORMAT], dtype=np.int64),
        "keys": keys,
        "lengths": np.array([len(e[0]) for e in entries], dtype=np.int32),
        "input_ids": np.concatenate([e[0] for e in entries]).astype(np.int64),
        "word_ids": np.concatenate([e[2] for e in entries]).astype(np.int32),
        "prior": np.concatenate([e[3].ravel() for e in entries]).astype(np.float32),
    }
    if entries[0][1] is not None:
        out["token_type_ids"] = np.concatenate([e[1] for e in entries]).astype(np.int64)
    return out


def _read_shard(path: Path) -> _Shard:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        if int(arrays["format"][0]) != FORMAT:
            raise ValueError(f"format {int(arrays['format'][0])}, this priorkit reads {FORMAT}")
        shard = _Shard(arrays)
        n = len(shard.keys)
        if (shard.keys.shape != (n, 16) or len(shard.lengths) != n or len(shard.input_ids) != shard.tok_off[-1]
                or len(shard.word_ids) != shard.tok_off[-1] or len(shard.prior) != shard.mat_off[-1]):
            raise ValueError("array lengths do not agree")
    except Exception as exc:  # noqa: BLE001 - any unreadable shard gets the same advice
        raise CacheError(
            f"aligned-prior shard {path} cannot be read ({type(exc).__name__}: {exc}). It holds only "
            "derived data: delete the file and its examples are rebuilt from the builder."
        ) from exc
    return shard

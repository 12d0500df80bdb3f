"""In-memory word-pair lookups: :class:`PairTable`.

Training loads a provider's pairs from the cache once into a :class:`PairTable`,
so it holds no lock on the file afterwards.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

Pair = tuple[str, str]


class PairTable:
    """In-memory ``(left, right) -> value`` for one provider, with vectorised lookups.

    Words map to integer ids; a pair is the int64 key ``left_id << 32 | right_id``
    kept in one sorted array, so looking up an (n, m) block costs n + m dict
    look-ups plus one ``searchsorted``.  For a symmetric provider both orders
    are held, so lookups never need to order the words.  Pairs added later go to
    a small dict that is merged into the sorted arrays once it grows.
    """

    def __init__(self, left: Sequence[str] = (), right: Sequence[str] = (),
                 values: Sequence[float] | np.ndarray = (), symmetric: bool = False) -> None:
        self.symmetric = symmetric
        self.vocab: dict[str, int] = {}
        self._keys = np.empty(0, dtype=np.int64)  # (N,) sorted
        self._vals = np.empty(0, dtype=np.float32)  # (N,)
        self._pending: dict[int, float] = {}
        if len(left):
            self.add(left, right, values)
            self._merge()

    @classmethod
    def from_arrow(cls, table, symmetric: bool = False) -> "PairTable":
        """Build from an Arrow table with columns left, right, value (no Python loop per pair)."""
        import pyarrow as pa

        self = cls(symmetric=symmetric)
        n = table.num_rows
        if n == 0:
            return self
        both = pa.concat_arrays([table.column("left").combine_chunks(),
                                 table.column("right").combine_chunks()]).dictionary_encode()
        self.vocab = {w: i for i, w in enumerate(both.dictionary.to_pylist())}
        ids = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)  # (2N,)
        vals = table.column("value").to_numpy().astype(np.float32, copy=False)
        keys = (ids[:n] << 32) | ids[n:]
        if symmetric:
            keys = np.concatenate([keys, (ids[n:] << 32) | ids[:n]])
            vals = np.concatenate([vals, vals])
        self._set(keys, vals)
        return self

    def _set(self, keys: np.ndarray, vals: np.ndarray) -> None:
        keys, first = np.unique(keys, return_index=True)  # sorted; first occurrence wins
        self._keys, self._vals = keys, vals[first]

    def _ids(self, words: Sequence[str], create: bool) -> np.ndarray:
        """Word ids; -1 for unknown words (then every key built from it is negative: never found)."""
        vocab = self.vocab
        if create:
            return np.array([vocab.setdefault(w, len(vocab)) for w in words], dtype=np.int64)
        return np.array([vocab.get(w, -1) for w in words], dtype=np.int64)

    def add(self, left: Sequence[str], right: Sequence[str], values: Sequence[float] | np.ndarray) -> None:
        """Add pairs (existing keys keep their value)."""
        values = np.asarray(values, dtype=np.float32)
        if not (len(left) == len(right) == len(values)):
            raise ValueError(f"add: {len(left)} left, {len(right)} right, {len(values)} values")
        li, ri = self._ids(left, True), self._ids(right, True)
        keys = (li << 32) | ri
        if self.symmetric:
            keys = np.concatenate([keys, (ri << 32) | li])
            values = np.concatenate([values, values])
        present = self._in_sorted(keys)
        pend = self._pending
        for k, v in zip(keys[~present].tolist(), values[~present].tolist()):
            pend.setdefault(k, v)
        if len(pend) > max(4096, len(self._keys) // 8):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        pk = np.fromiter(self._pending.keys(), np.int64, len(self._pending))
        pv = np.fromiter(self._pending.values(), np.float32, len(self._pending))
        self._pending = {}
        self._set(np.concatenate([self._keys, pk]), np.concatenate([self._vals, pv]))

    def _in_sorted(self, keys: np.ndarray) -> np.ndarray:
        if not len(self._keys):
            return np.zeros(keys.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        return self._keys[pos] == keys

    def _lookup_keys(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(self._keys)
        if n:
            pos = np.searchsorted(self._keys, keys)
            pos[pos == n] = 0
            found = self._keys[pos] == keys
            vals = np.where(found, self._vals[pos], np.float32(np.nan))
        else:
            found = np.zeros(keys.shape, dtype=bool)
            vals = np.full(keys.shape, np.nan, dtype=np.float32)
        if self._pending:
            flat_keys, flat_vals, flat_found = keys.reshape(-1), vals.reshape(-1), found.reshape(-1)
            for i in np.flatnonzero(~flat_found).tolist():
                v = self._pending.get(int(flat_keys[i]))
                if v is not None:
                    flat_vals[i] = v
                    flat_found[i] = True
        return vals, found

    def lookup(self, left: Sequence[str], right: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Block lookup: values (len(left), len(right)) float32 (NaN where absent) and a found mask."""
        li, ri = self._ids(left, False), self._ids(right, False)
        return self._lookup_keys((li[:, None] << 32) | ri[None, :])  # (n, m)

    def get_many(self, pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
        """Element-wise lookup: values (N,) float32 and found (N,) bool."""
        li = self._ids([a for a, _ in pairs], False)
        ri = self._ids([b for _, b in pairs], False)
        keys = (li << 32) | ri
        keys[(li < 0) | (ri < 0)] = -1  # unknown word: never found
        return self._lookup_keys(keys)

    # dict-like conveniences
    def __len__(self) -> int:
        return len(self._keys) + len(self._pending)

    def __contains__(self, pair: Pair) -> bool:
        return bool(self.get_many([pair])[1][0])

    def __getitem__(self, pair: Pair) -> float:
        vals, found = self.get_many([pair])
        if not found[0]:
            raise KeyError(pair)
        return float(vals[0])

    def get(self, pair: Pair, default: Any = None) -> Any:
        vals, found = self.get_many([pair])
        return float(vals[0]) if found[0] else default

    def to_dict(self) -> dict[Pair, float]:
        """Every stored pair (both orders for a symmetric provider) -> value."""
        self._merge()
        words = list(self.vocab)
        li, ri = (self._keys >> 32).tolist(), (self._keys & 0xFFFFFFFF).tolist()
        return {(words[a], words[b]): v for a, b, v in zip(li, ri, self._vals.tolist())}



def nan_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Exact equality with NaN == NaN (for comparing cached and computed values)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


__all__ = ["PairTable", "Pair", "nan_equal"]

"""A provider that reads (and fills) the cache: :class:`CachedProvider` and its write buffer."""
from __future__ import annotations

import dataclasses
import os
import threading
import warnings
import weakref
from typing import Any, Sequence

import numpy as np

from ..providers.base import PriorProvider
from .store import PriorCache, is_symmetric
from .table import Pair, PairTable


@dataclasses.dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0


class _WriteBuffer:
    """Computed pairs waiting to be written; flushed in bulk (and at exit)."""

    def __init__(self, cache: PriorCache, provider: PriorProvider) -> None:
        self.cache, self.provider = cache, provider
        self.pairs: list[Pair] = []
        self.values: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.pairs)

    def take(self) -> tuple[list[Pair], np.ndarray]:
        pairs, values = self.pairs, self.values
        self.pairs, self.values = [], []
        return pairs, (np.concatenate(values) if values else np.empty(0, np.float32))

    def give_back(self, pairs: list[Pair], values: np.ndarray) -> None:
        self.pairs[:0] = pairs
        self.values.insert(0, values)

    def flush(self) -> int:
        pairs, values = self.take()
        if not pairs:
            return 0
        try:
            return self.cache.put(self.provider, pairs, values)
        except BaseException:
            self.give_back(pairs, values)
            raise


def _flush_at_exit(buffer: _WriteBuffer) -> None:
    try:
        buffer.flush()
    except Exception as exc:  # noqa: BLE001 - interpreter shutdown: warn, never crash
        warnings.warn(f"priorkit: could not write {len(buffer)} cached pairs at exit: {exc}")


class CachedProvider(PriorProvider):
    """Wraps a provider: values come from the cache; only missing pairs are computed.

    The provider's pairs are loaded into memory on first use (one query), so a
    training process holds no lock on the file afterwards.  Missing pairs are
    computed by the wrapped provider; on a writable cache they are buffered and
    written in bulk every ``flush_every`` pairs, on :meth:`flush`/:meth:`close`,
    and at interpreter exit.  Name, version, parameters and fingerprint are the
    wrapped provider's, so cached and uncached values are interchangeable.
    """

    def __init__(self, provider: PriorProvider, cache: PriorCache | str | os.PathLike,
                 flush_every: int = 20_000) -> None:
        if isinstance(provider, CachedProvider):
            provider = provider.provider
        if not isinstance(provider, PriorProvider):
            raise TypeError(f"CachedProvider wraps a PriorProvider, not {type(provider).__name__}")
        super().__init__(**provider.params)
        self.provider = provider
        self.cache = cache if isinstance(cache, PriorCache) else PriorCache(cache, read_only=True)
        self.name = provider.name  # type: ignore[misc] - instance value of the ClassVar
        self.version = provider.version  # type: ignore[misc]
        self.allows_nan = provider.allows_nan  # type: ignore[misc]
        self.symmetric = is_symmetric(provider)
        self.plugin = provider.plugin
        self._fingerprint = provider.fingerprint
        self.flush_every = int(flush_every)
        self.stats = CacheStats()
        self.table: PairTable | None = None
        self._buffer = _WriteBuffer(self.cache, provider)
        self._lock = threading.Lock()  # table and buffer are shared by threads (DataLoader workers)
        self._finalizer = None if self.cache.read_only else weakref.finalize(self, _flush_at_exit, self._buffer)

    def __repr__(self) -> str:
        return f"<CachedProvider {self.provider!r} in {self.cache.path}>"

    def load(self) -> None:
        self.table = self.cache.load(self.fingerprint, symmetric=self.symmetric)
        if len(self.table) == 0:
            self._warn_if_other_versions()

    def _warn_if_other_versions(self) -> None:
        """Say so when the file holds this provider only under other fingerprints.

        A new provider version, other parameters or other data give a new
        fingerprint, so old values are never served for new settings; they are
        kept (another setting may still use them) until deleted on purpose.
        """
        others = [p for p in self.cache.providers() if p["name"] == self.name and p["pairs"]]
        if others:
            desc = "; ".join(f"{p['fingerprint']} (version {p['version']}, params {p['params']}, "
                             f"{p['pairs']:,} pairs)" for p in others[:3])
            more = f" and {len(others) - 3} more" if len(others) > 3 else ""
            warnings.warn(
                f"prior cache {self.cache.path} holds {self.name!r} values only for other "
                f"versions/parameters/data ({desc}{more}), none for {self.fingerprint} "
                f"(version {self.version}, params {self.describe()['params']}); they will be "
                "computed. Run `priorkit precompute` with these settings to fill the cache. "
                "The other values are kept untouched; `priorkit cache info` lists them, and "
                f"PriorCache({str(self.cache.path)!r}).delete(FINGERPRINT) removes one you no "
                "longer need.",
                stacklevel=3,
            )

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        return self.provider.segment(words)

    def data_checksum(self) -> str:
        return self.provider.data_checksum()

    def describe(self) -> dict[str, Any]:
        return self.provider.describe()

    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        assert self.table is not None
        with self._lock:
            vals, found = self.table.lookup(left, right)  # (n, m)
        if found.all():
            self.stats.hits += found.size
            return vals
        n_missing = int(found.size - np.count_nonzero(found))
        self.stats.hits += found.size - n_missing
        self.stats.misses += n_missing
        rows = np.flatnonzero(~found.all(axis=1))
        cols = np.flatnonzero(~found.all(axis=0))
        sub = self.provider.similarity([left[i] for i in rows], [right[j] for j in cols])
        need = ~found[np.ix_(rows, cols)]  # (r, c)
        ri, ci = np.nonzero(need)
        new_left = [left[i] for i in rows[ri].tolist()]
        new_right = [right[j] for j in cols[ci].tolist()]
        new_vals = sub[ri, ci]
        vals[rows[ri], cols[ci]] = new_vals
        self._remember(new_left, new_right, new_vals)
        return vals

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise: one vectorised table look-up; missing pairs go to the provider."""
        assert self.table is not None
        with self._lock:
            vals, found = self.table.get_many(list(zip(left, right)))  # (N,)
        n_missing = int(len(found) - np.count_nonzero(found))
        self.stats.hits += len(found) - n_missing
        if n_missing == 0:
            return vals
        self.stats.misses += n_missing
        miss = np.flatnonzero(~found)
        new_left = [left[i] for i in miss.tolist()]
        new_right = [right[i] for i in miss.tolist()]
        new_vals = self.provider.pair_similarity(new_left, new_right)
        vals[miss] = new_vals
        self._remember(new_left, new_right, new_vals)
        return vals

    def _remember(self, left: list[str], right: list[str], values: np.ndarray) -> None:
        """Keep newly computed pairs in memory and, on a writable cache, buffer them for the file."""
        with self._lock:
            self.table.add(left, right, values)
            if not self.cache.read_only:
                self._buffer.pairs.extend(zip(left, right))
                self._buffer.values.append(values)
            due = len(self._buffer) >= self.flush_every
        if due:
            self.flush()

    def flush(self) -> int:
        """Write buffered pairs now (one transaction); returns how many were new in the file."""
        with self._lock:
            pairs, values = self._buffer.take()
        if not pairs:
            return 0
        try:
            n = self.cache.put(self.provider, pairs, values)
        except BaseException:
            with self._lock:  # keep them for the next flush (e.g. after a lock timeout)
                self._buffer.give_back(pairs, values)
            raise
        self.stats.written += n
        return n

    def close(self) -> None:
        self.flush()
        if self._finalizer is not None:
            self._finalizer.detach()

    def __enter__(self) -> "CachedProvider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()



__all__ = ["CachedProvider", "CacheStats"]

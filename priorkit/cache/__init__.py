"""The prior cache: a DuckDB file of word-pair similarities, keyed by provider fingerprint.

- :mod:`~priorkit.cache.schema`: the tables and their numbered migrations;
- :mod:`~priorkit.cache.files`: path checks, short-lived connections, locking,
  DuckDB errors in our words (:class:`~priorkit.cache.files.CacheFile`);
- :mod:`~priorkit.cache.store`: :class:`PriorCache`, every SQL read and write
  (pairs, providers, runs, Parquet-shard ingest) and the symmetric-pair rule;
- :mod:`~priorkit.cache.table`: :class:`PairTable`, the in-memory lookups;
- :mod:`~priorkit.cache.provider`: :class:`CachedProvider` and its write buffer.

See docs/cache.md.
"""
from __future__ import annotations

from .files import DEFAULT_TIMEOUT, CacheFile, default_cache_path
from .provider import CachedProvider, CacheStats
from .schema import MIGRATIONS, SCHEMA_VERSION
from .store import PriorCache, canonical_pairs, fold_pairs, is_symmetric
from .table import Pair, PairTable, nan_equal

__all__ = ["PriorCache", "CachedProvider", "PairTable", "CacheStats", "default_cache_path",
           "canonical_pairs", "is_symmetric", "nan_equal", "MIGRATIONS", "SCHEMA_VERSION",
           "DEFAULT_TIMEOUT", "CacheFile", "fold_pairs", "Pair"]

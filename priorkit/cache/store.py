"""A DuckDB file of word-pair similarities, keyed by provider fingerprint: every SQL read and write.

Why DuckDB: bulk (columnar) inserts and joins against hundreds of thousands of
pairs take milliseconds, the file is a single portable artefact, and its WAL
makes every committed transaction survive ``kill -9``.

This module holds every query priorkit runs on the cache's data (providers,
pairs, runs, and the ingest of Parquet shards written by Dask workers); the
tables are defined in :mod:`priorkit.cache.schema`, opening and locking the
file in :mod:`priorkit.cache.files`.

Integrity: a pair is written only if its key is absent (an anti-join inside the
writing transaction, under DuckDB's single-writer lock), so each (fingerprint,
left, right) is stored once and the first value wins.  A unique index would
say the same declaratively, but on three string columns DuckDB's ART index made
the file 8x larger (73 MB vs 9 MB for 500k pairs) and writes 2x slower.

A symmetric provider's pair is stored once, under the key :func:`fold_pairs`
gives it; the flag recorded with the fingerprint decides, so every writer
folds alike.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import socket
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..providers.base import PriorProvider
from .creation import pid_alive as _pid_alive
from .files import DEFAULT_TIMEOUT, CacheFile, _first, default_cache_path  # noqa: F401
from .schema import _utcnow
from .table import Pair, PairTable


def is_symmetric(provider: PriorProvider) -> bool:
    """Whether ``provider`` declares sim(a, b) == sim(b, a) (stored once then)."""
    return bool(getattr(provider, "symmetric", False))


def fold_pairs(pairs: Iterable[Pair], symmetric: bool) -> list[Pair]:
    """The stored key of every pair, in order: (min, max) for a symmetric provider, else as given."""
    if not symmetric:
        return list(pairs)
    return [(a, b) if a <= b else (b, a) for a, b in pairs]


def canonical_pairs(pairs: Iterable[Pair]) -> list[Pair]:
    """Unique pairs in first-seen order, each as (min, max): the key of a symmetric provider."""
    return list(dict.fromkeys(fold_pairs(pairs, True)))


class PriorCache(CacheFile):
    """A DuckDB file of word-pair similarities.

    :param path: the file (default ``default_cache_path()``); created with its
        parent folder on first write.
    :param read_only: open for reading only (many processes at once; the file
        must exist).  Training should read; ``priorkit precompute`` writes.
    :param timeout: seconds to wait for another process's lock before raising
        :class:`CacheError`.  0 fails at once.
    """

    # ---- providers ----------------------------------------------------
    @staticmethod
    def _register(con, provider: PriorProvider) -> None:
        d = provider.describe()
        con.execute(
            "INSERT INTO providers VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [provider.fingerprint, d["name"], str(d["version"]),
             json.dumps(d["params"], sort_keys=True), provider.data_checksum(),
             is_symmetric(provider), d.get("plugin"), _utcnow()],
        )

    def register(self, provider: PriorProvider) -> None:
        """Record a provider's name, version, parameters and data checksum."""
        with self.connect(write=True) as con:
            self._register(con, provider)

    def providers(self) -> list[dict[str, Any]]:
        """Providers with their pair counts, NaN counts and mean values."""
        with self.connect() as con:
            return self._providers(con)

    @staticmethod
    def _providers(con) -> list[dict[str, Any]]:
        rows = con.execute(
            """SELECT p.fingerprint, p.name, p.version, p.params, p.data_checksum, p."symmetric",
                      p.plugin, p.created, coalesce(s.n, 0), coalesce(s.nan, 0), s.mean
               FROM providers p LEFT JOIN (
                   SELECT fingerprint, count(*) AS n, count(*) FILTER (WHERE isnan(value)) AS nan,
                          avg(value) FILTER (WHERE NOT isnan(value)) AS mean
                   FROM pairs GROUP BY fingerprint) s USING (fingerprint)
               ORDER BY p.created, p.fingerprint"""
        ).fetchall()
        keys = ("fingerprint", "name", "version", "params", "data_checksum", "symmetric", "plugin",
                "created", "pairs", "nan", "mean")
        out = []
        for r in rows:
            d = dict(zip(keys, r))
            d["params"] = json.loads(d["params"])
            d["created"] = d["created"].isoformat(timespec="seconds") + "Z"
            d["mean"] = None if d["mean"] is None else round(float(d["mean"]), 6)
            out.append(d)
        return out

    def _symmetric(self, con, fingerprint: str) -> bool:
        row = _first(con.execute('SELECT "symmetric" FROM providers WHERE fingerprint = ?', [fingerprint]))
        return bool(row and row[0])

    def stored_symmetric(self, fingerprint: str) -> bool:
        """Whether ``fingerprint`` is recorded as symmetric (False when not registered)."""
        with self.connect() as con:
            return self._symmetric(con, fingerprint)

    def keys(self, provider: PriorProvider, pairs: Iterable[Pair]) -> list[Pair]:
        """The unique keys (first-seen order) under which ``provider``'s ``pairs`` are stored.

        The flag recorded with the fingerprint decides, as in :meth:`put`;
        the provider's own flag applies only before it is registered.
        """
        pairs = list(pairs)
        sym = is_symmetric(provider)
        if self.path.exists():
            with self.connect() as con:
                known = _first(con.execute('SELECT "symmetric" FROM providers WHERE fingerprint = ?',
                                           [provider.fingerprint]))
            if known is not None:
                sym = bool(known[0])
        return list(dict.fromkeys(fold_pairs(pairs, sym)))

    # ---- pairs ----------------------------------------------------------
    def count(self, fingerprint: str | None = None) -> int:
        with self.connect() as con:
            if fingerprint is None:
                return con.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
            return con.execute("SELECT count(*) FROM pairs WHERE fingerprint = ?", [fingerprint]).fetchall()[0][0]

    def get(self, fingerprint: str, pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
        """Values of ``pairs``: (N,) float32 (NaN where absent or unknown) and a found (N,) mask."""
        import pyarrow as pa

        pairs = list(pairs)
        values = np.full(len(pairs), np.nan, dtype=np.float32)
        found = np.zeros(len(pairs), dtype=bool)
        if not pairs:
            return values, found
        with self.connect() as con:
            sym = self._symmetric(con, fingerprint)
            keys = fold_pairs(pairs, sym)
            query = pa.table({"i": pa.array(np.arange(len(keys), dtype=np.int64)),
                              "left": pa.array([a for a, _ in keys], pa.string()),
                              "right": pa.array([b for _, b in keys], pa.string())})
            con.register("query_pairs", query)
            res = con.sql(
                'SELECT q.i, p.value FROM query_pairs q JOIN pairs p ON p.fingerprint = $fp '
                'AND p."left" = q."left" AND p."right" = q."right"', params={"fp": fingerprint}
            ).fetchnumpy()
            con.unregister("query_pairs")
        idx = np.asarray(res["i"], dtype=np.int64)
        values[idx] = np.asarray(res["value"], dtype=np.float32)
        found[idx] = True
        return values, found

    def missing(self, fingerprint: str, pairs: Sequence[Pair]) -> list[Pair]:
        """The pairs (unique, first-seen order) with no stored value for ``fingerprint``."""
        pairs = list(dict.fromkeys(pairs))
        _, found = self.get(fingerprint, pairs)
        return [p for p, f in zip(pairs, found.tolist()) if not f]

    def put(self, provider: PriorProvider, pairs: Sequence[Pair], values: Sequence[float] | np.ndarray) -> int:
        """Store values of ``pairs`` in one transaction; returns how many were new.

        Keys already present keep their value (the first write wins); for a
        symmetric provider (b, a) counts as (a, b).  Values must be float in
        [0, 1] or NaN.
        """
        import pyarrow as pa

        pairs = list(pairs)
        values = np.asarray(values)
        if values.shape != (len(pairs),):
            raise ValueError(f"put: {len(pairs)} pairs but values of shape {values.shape}")
        if not np.issubdtype(values.dtype, np.floating):
            raise ValueError(f"put: values must be floats in [0, 1] or NaN, got dtype {values.dtype}")
        values = values.astype(np.float32, copy=False)
        bad = ~np.isnan(values) & ((values < 0) | (values > 1))
        if bad.any():
            raise ValueError(f"put: values outside [0, 1] for provider {provider.name!r}: "
                             f"{values[bad][:3].tolist()} (NaN means 'no knowledge')")
        if not pairs:
            return 0
        fp = provider.fingerprint
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                self._register(con, provider)
                # the flag recorded with the fingerprint decides, so every writer folds alike
                sym = self._symmetric(con, fp)
                first: dict[Pair, int] = {}
                for i, key in enumerate(fold_pairs(pairs, sym)):
                    first.setdefault(key, i)
                rows = np.fromiter(first.values(), np.int64, len(first))
                table = pa.table({"left": pa.array([a for a, _ in first], pa.string()),
                                  "right": pa.array([b for _, b in first], pa.string()),
                                  "value": pa.array(values[rows], pa.float32())})
                con.register("new_pairs", table)
                inserted = _insert_absent(con, "new_pairs", {"fp": fp})
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise
            finally:
                with contextlib.suppress(Exception):
                    con.unregister("new_pairs")
        return int(inserted)

    def ingest_parquet(self, fingerprint: str, paths: Sequence[str | os.PathLike]) -> int:
        """Insert the pairs of Parquet files (columns left, right, value) that the cache
        lacks for ``fingerprint``, all in one transaction; returns how many.

        DuckDB reads the files directly.  The keys must already be folded as
        the fingerprint's recorded flag says (the Dask workers compute the
        keys :meth:`keys` gives).
        """
        if not paths:
            return 0
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                inserted = _insert_absent(con, "read_parquet($paths)",
                                          {"fp": fingerprint, "paths": [str(p) for p in paths]})
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise
        return int(inserted)

    def load(self, fingerprint: str, symmetric: bool = False) -> PairTable:
        """Every stored pair of ``fingerprint`` in a :class:`PairTable` (lock released at return).

        ``symmetric`` applies only when the fingerprint is not registered yet;
        otherwise the flag recorded with it decides.
        """
        with self.connect() as con:
            known = _first(con.execute('SELECT "symmetric" FROM providers WHERE fingerprint = ?',
                                       [fingerprint]))
            sym = bool(known[0]) if known else symmetric
            table = con.sql('SELECT "left", "right", value FROM pairs WHERE fingerprint = $fp',
                            params={"fp": fingerprint}).to_arrow_table()
        return PairTable.from_arrow(table, symmetric=sym)

    def delete(self, fingerprint: str) -> int:
        """Remove a provider and its pairs; returns the number of pairs removed."""
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            n = con.execute("SELECT count(*) FROM pairs WHERE fingerprint = ?", [fingerprint]).fetchall()[0][0]
            con.execute("DELETE FROM pairs WHERE fingerprint = ?", [fingerprint])
            con.execute("DELETE FROM providers WHERE fingerprint = ?", [fingerprint])
            con.execute("COMMIT")
        return int(n)

    # ---- runs -----------------------------------------------------------
    def start_run(self, **fields: Any) -> int:
        """Record that a precompute started; returns its run id."""
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            run_id = con.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchall()[0][0]
            cols = {"id": run_id, "started": _utcnow(), "status": "running",
                    "host": socket.gethostname(), "pid": os.getpid(), **fields}
            _insert(con, "runs", cols)
            con.execute("COMMIT")
        return int(run_id)

    def finish_run(self, run_id: int, status: str = "finished", **fields: Any) -> None:
        """Record a run's outcome (finished, interrupted or failed) and counts."""
        cols = {"status": status, "finished": _utcnow(), **fields}
        sets = ", ".join(f"{_ident(k)} = ?" for k in cols)
        with self.connect(write=True) as con:
            con.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*cols.values(), run_id])

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        with self.connect() as con:
            return self._runs(con, limit)

    @staticmethod
    def _runs(con, limit: int) -> list[dict[str, Any]]:
        cur = con.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", [limit])
        names = [d[0] for d in cur.description]
        out = []
        host = socket.gethostname()
        for row in cur.fetchall():
            d = dict(zip(names, row))
            for k in ("started", "finished"):
                if d[k] is not None:
                    d[k] = d[k].isoformat(timespec="seconds") + "Z"
            if d["status"] == "running" and d["host"] == host and not _pid_alive(d["pid"]):
                d["status"] = "killed"  # the process died without recording an end
            out.append(d)
        return out

    # ---- summary --------------------------------------------------------
    def info(self, runs: int = 10) -> dict[str, Any]:
        """Path, sizes, schema version, providers (with counts) and the latest runs."""
        with self.connect() as con:
            version = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
            providers = self._providers(con)
            total = con.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
            recent = self._runs(con, runs)
        wal = Path(str(self.path) + ".wal")
        return {
            "path": str(self.path),
            "size_bytes": self.path.stat().st_size,
            "wal_bytes": wal.stat().st_size if wal.exists() else 0,
            "schema_version": int(version),
            "pairs": int(total),
            "providers": providers,
            "runs": recent,
        }

    # ---- removing entries (``priorkit cache delete`` / ``cache prune``) ----------
    def last_written(self) -> dict[str, _dt.datetime]:
        """Per fingerprint: when it was registered or last precomputed (UTC, naive)."""
        with self.connect() as con:
            rows = con.execute(
                """SELECT p.fingerprint, greatest(p.created, coalesce(max(coalesce(r.finished, r.started)),
                                                                     p.created))
                   FROM providers p LEFT JOIN runs r USING (fingerprint) GROUP BY p.fingerprint, p.created"""
            ).fetchall()
        return {fp: when for fp, when in rows}

    def delete_many(self, fingerprints: Sequence[str]) -> dict[str, int]:
        """Remove these providers and their pairs in one transaction (all or nothing);
        {fingerprint: pairs removed}.  Every other entry stays; refused on a read-only cache."""
        fingerprints = list(dict.fromkeys(fingerprints))
        if not fingerprints:
            return {}
        with self.connect(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                counts = {fp: int(con.execute("SELECT count(*) FROM pairs WHERE fingerprint = ?",
                                              [fp]).fetchall()[0][0]) for fp in fingerprints}
                for fp in fingerprints:
                    con.execute("DELETE FROM pairs WHERE fingerprint = ?", [fp])
                    con.execute("DELETE FROM providers WHERE fingerprint = ?", [fp])
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                raise
            con.execute("CHECKPOINT")  # give the space back to the file's free list now
        return counts

    def prune(self, older_than: _dt.timedelta, now: _dt.datetime | None = None,
              dry_run: bool = False) -> dict[str, int]:
        """Remove every provider last written (see :meth:`last_written`) more than
        ``older_than`` ago, with its pairs; {fingerprint: pairs (to be) removed}."""
        if older_than.total_seconds() < 0:
            raise ValueError(f"older_than must not be negative, got {older_than}")
        cutoff = (now or _utcnow()) - older_than
        old = sorted(fp for fp, when in self.last_written().items() if when < cutoff)
        if dry_run:
            counts = {p["fingerprint"]: int(p["pairs"]) for p in self.providers()}
            return {fp: counts.get(fp, 0) for fp in old}
        return self.delete_many(old)



def _ident(name: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"bad column name {name!r}")
    return f'"{name}"'


def _insert_absent(con, source: str, params: dict[str, Any]) -> int:
    """``INSERT`` the rows of ``source`` (left, right, value) whose key is absent: the anti-join
    that keeps the first value of every key.  Runs inside the caller's transaction."""
    return con.execute(
        f'INSERT INTO pairs SELECT $fp, n."left", n."right", n.value FROM {source} n '
        'WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE p.fingerprint = $fp '
        'AND p."left" = n."left" AND p."right" = n."right")', params).fetchall()[0][0]


def _insert(con, table: str, cols: dict[str, Any]) -> None:
    names = ", ".join(_ident(k) for k in cols)
    marks = ", ".join("?" for _ in cols)
    con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(cols.values()))


__all__ = ["PriorCache", "default_cache_path", "canonical_pairs", "fold_pairs", "is_symmetric",
           "DEFAULT_TIMEOUT"]

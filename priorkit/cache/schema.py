"""The prior cache's tables and their numbered migrations.

Migrations are applied in order, each in its own transaction (DuckDB's DDL is
transactional, so a kill leaves no half schema); ``schema_version`` records
which ones a file has.  :func:`stored_version` reads that record and refuses a
database of something else or a newer schema; :func:`migrate` brings a file
up to :data:`SCHEMA_VERSION`.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Callable

from ..errors import CacheError


def m001_initial(con) -> None:
    con.execute(
        """
        CREATE TABLE providers (
            fingerprint   VARCHAR PRIMARY KEY,
            name          VARCHAR NOT NULL,
            version       VARCHAR NOT NULL,
            params        VARCHAR NOT NULL,     -- JSON, canonical form
            data_checksum VARCHAR NOT NULL,
            "symmetric"   BOOLEAN NOT NULL,     -- pairs stored once as (min, max)
            plugin        VARCHAR,
            created       TIMESTAMP NOT NULL
        )"""
    )
    con.execute(
        """
        CREATE TABLE pairs (
            fingerprint VARCHAR NOT NULL,
            "left"      VARCHAR NOT NULL,
            "right"     VARCHAR NOT NULL,
            value       FLOAT               -- in [0, 1]; NaN = the source has no knowledge
        )"""
    )
    con.execute(
        """
        CREATE TABLE runs (
            id               INTEGER PRIMARY KEY,
            started          TIMESTAMP NOT NULL,
            finished         TIMESTAMP,
            status           VARCHAR NOT NULL,  -- running | finished | interrupted | failed
            dataset          VARCHAR,
            dataset_checksum VARCHAR,
            format           VARCHAR,
            examples         BIGINT,
            layout           VARCHAR,
            tokenizer        VARCHAR,
            fingerprint      VARCHAR,
            pairs            BIGINT,
            new              BIGINT,
            cached           BIGINT,
            seconds          DOUBLE,
            host             VARCHAR,
            pid              INTEGER,
            message          VARCHAR
        )"""
    )


MIGRATIONS: list[Callable] = [m001_initial]
SCHEMA_VERSION = len(MIGRATIONS)


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


class MigrateFirst(Exception):
    """A read on a writable cache found an older (or no) schema: reopen writable and migrate."""


def stored_version(con, path: Path) -> int:
    """The schema version recorded in the open file (0: no tables yet).

    Raises :class:`CacheError` for a database of something else or a schema
    newer than this priorkit understands.
    """
    tables = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}
    version = 0
    if "schema_version" in tables:
        try:
            rows = con.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
        except Exception:  # noqa: BLE001 - a different table of that name
            rows = None
        known = [(i + 1, m.__name__) for i, m in enumerate(MIGRATIONS)]
        if rows is None or not rows or rows[0] != known[0]:
            raise foreign(path, tables)
        version = rows[-1][0]
        if version > SCHEMA_VERSION:
            raise CacheError(
                f"{path} has cache schema version {version}, newer than this priorkit "
                f"understands ({SCHEMA_VERSION}); upgrade priorkit"
            )
    elif tables:
        raise foreign(path, tables)
    return version


def migrate(con, version: int) -> None:
    """Apply the migrations after ``version``, each in its own transaction."""
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        con.execute("BEGIN TRANSACTION")  # DDL is transactional: a kill leaves no half schema
        try:
            if number == 1:
                con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                            "name VARCHAR NOT NULL, applied TIMESTAMP NOT NULL)")
            migration(con)
            con.execute("INSERT INTO schema_version VALUES (?, ?, ?)",
                        [number, migration.__name__, _utcnow()])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def foreign(path: Path, tables: set[str]) -> CacheError:
    shown = ", ".join(sorted(tables)[:8])
    return CacheError(
        f"{path} is a DuckDB database of something else (tables: {shown}), not a prior "
        "cache; priorkit will not write into it. Pass another --cache path"
    )


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "m001_initial", "stored_version", "migrate", "MigrateFirst"]

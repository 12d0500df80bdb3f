"""SHA-256 of a prior cache's ``pairs`` table, exported sorted to CSV.

Used to check that a change to the code leaves precompute's output unchanged:
precompute the same dataset into a fresh cache before and after, then compare
the digests (docs/archive/issue-12.md, "Behaviour unchanged").

    python benchmarks/cache_table_digest.py CACHE.duckdb [--csv OUT.csv]
"""
from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path


def table_digest(cache: str | Path, csv: str | Path | None = None) -> tuple[str, int]:
    """(sha-256 hex of the sorted CSV export, row count); the CSV is kept at ``csv`` if given."""
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(csv) if csv is not None else Path(tmp) / "pairs.csv"
        con = duckdb.connect(str(cache), read_only=True)
        try:
            con.execute(
                'COPY (SELECT fingerprint, "left", "right", value FROM pairs '
                'ORDER BY fingerprint, "left", "right") TO ? (HEADER, DELIMITER \',\')', [str(out)])
            rows = con.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
        finally:
            con.close()
        return hashlib.sha256(out.read_bytes()).hexdigest(), int(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache")
    ap.add_argument("--csv", default=None, help="keep the sorted CSV export here")
    args = ap.parse_args()
    digest, rows = table_digest(args.cache, args.csv)
    print(f"{digest}  {rows} rows  {args.cache}")


if __name__ == "__main__":
    main()

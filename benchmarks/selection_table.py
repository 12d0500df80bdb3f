"""Regenerate the selection tables of the docs from the selection files.

Every table between ``<!-- selection-table: FILE -->`` and ``<!-- /selection-table -->``
in docs/*.md and docs/archive/*.md is rewritten from ``docs/results/FILE`` (columns arm, setting, split, origin,
seed, fraction, metric, value, chosen, source; priorkit/evaluation/selection.py).
``tests/test_selection_tables.py`` fails when a table and its file differ.

    .venv/bin/python benchmarks/selection_table.py           # rewrite the tables
    .venv/bin/python benchmarks/selection_table.py --check   # exit 1 when one is stale
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from priorkit.evaluation.selection import update_markers

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table is stale")
    args = ap.parse_args()
    stale = []
    for doc in [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "archive").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        new, used = update_markers(text, ROOT / "docs" / "results")
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new, encoding="utf-8")
        for name in used:
            print(f"{doc.relative_to(ROOT)}: {name}" + (" (stale)" if new != text else ""))
    if stale:
        print(("stale: " if args.check else "rewritten: ") + ", ".join(map(str, stale)))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

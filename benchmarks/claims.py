"""Regenerate the measured claims of README.md and docs/*.md from the result files.

Every block between ``<!-- claims:begin NAME -->`` and ``<!-- claims:end -->`` in README.md,
docs/*.md and docs/archive/*.md is rewritten from the files under ``docs/results/`` by the renderer NAME of
``lab/claims/__init__.py`` (its ``BLOCKS``: ``readme``, ``curve-scores``, ``arms-deltas``,
``knowledge-gain``, ``knowledge-calibration`` ...; an unknown name is refused, naming them).
``tests/test_claims.py`` fails when a block and its files differ.

    .venv/bin/python benchmarks/claims.py           # rewrite the blocks
    .venv/bin/python benchmarks/claims.py --check   # change nothing; exit 1 when one is stale
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # lab/ is not installed: run as `python benchmarks/claims.py` from anywhere

from lab.claims import Results, update_claims  # noqa: E402
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "archive").glob("*.md"))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a block is stale")
    args = ap.parse_args()
    res = Results(ROOT / "docs" / "results")
    stale = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        new, used = update_claims(text, res.folder, res)
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

"""Progress of a tagging run: documents per second and the time left.

The number of documents is not known before the input has been read, so the time left comes
from how far into the input the last committed document lies: its ``source`` (``file:line``)
against the input files' line counts (counted once at the start; about a second per GB).
On a terminal a bar (:func:`priorkit.output.progress_style`), elsewhere one plain line every
few seconds (``PRIORKIT_PROGRESS_SECONDS``), nothing under ``-q``.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence, TextIO

from ..output import interval, progress_style

_BLOCK = 1 << 22


def count_lines(path: str | os.PathLike) -> int:
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _seconds(s: float) -> str:
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.1f}min" if s < 7200 else f"{s / 3600:.1f}h"


class InputPosition:
    """How far into the input files (by lines) a document's ``source`` lies, as a fraction."""

    def __init__(self, paths: Sequence[str | os.PathLike]) -> None:
        self.where: dict[str, tuple[int, int]] = {}  # path -> (lines before it, its lines)
        before = 0
        for p in paths:
            n = max(count_lines(p), 1)
            for key in {str(p), str(Path(p).resolve()), Path(p).name}:
                self.where.setdefault(key, (before, n))
            before += n
        self.total = before

    def fraction(self, source: str) -> float | None:
        if not self.total or not source:
            return None
        path, _, line = source.rpartition(":")
        if not path or not line.isdigit():
            path, line = source, "0"
        hit = self.where.get(path) or self.where.get(Path(path).name)
        if hit is None:
            return None
        before, n = hit
        return min(1.0, (before + min(int(line), n)) / self.total)


class TagProgress:
    """Counts committed documents; shows the rate and, where the input position is known, the
    time left."""

    def __init__(self, paths: Sequence[str | os.PathLike], *, enabled: bool = True, desc: str = "tag",
                 file: TextIO | None = None, every: float | None = None, resumed: int = 0) -> None:
        self.style = progress_style(enabled, file)
        self.file = file if file is not None else sys.stderr
        self.desc, self.every = desc, interval() if every is None else every
        self.position = InputPosition(paths) if self.style != "off" and paths else None
        self.n, self.resumed, self.frac, self.frac0 = 0, resumed, None, None
        self.start = self._last = time.monotonic()
        self.lines, self._shown = 0, -1
        self._bar: Any = None
        if self.style == "bar":
            from tqdm.auto import tqdm

            self._bar = tqdm(desc=desc, unit="doc", leave=False, file=file, initial=resumed)

    def started_at(self, source: str) -> None:
        """The position of the first document this run tags (after the committed ones)."""
        if self.position is not None and self.frac0 is None:
            self.frac0 = self.position.fraction(source) or 0.0

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        done = self.resumed + self.n
        text = f"{self.desc}: {done:,} documents" + (f" ({self.resumed:,} before this run)" if self.resumed else "")
        text += f", {rate:,.1f} doc/s, {_seconds(elapsed)}"
        left = self.left(elapsed)
        if left is not None:
            text += f", {100 * self.frac:.0f}% of the input, about {_seconds(left)} left"
        return text

    def left(self, elapsed: float) -> float | None:
        if self.frac is None or self.frac0 is None or self.frac <= self.frac0:
            return None
        return elapsed * (1.0 - self.frac) / (self.frac - self.frac0)

    def update(self, documents: int, last_source: str = "") -> None:
        self.n += documents
        if self.position is not None and last_source:
            self.frac = self.position.fraction(last_source)
        if self.style == "bar":
            self._bar.update(documents)
            left = self.left(time.monotonic() - self.start)
            if left is not None:
                self._bar.set_postfix_str(f"{100 * self.frac:.0f}%, about {_seconds(left)} left")
        elif self.style == "lines" and time.monotonic() - self._last >= self.every:
            self.emit()

    def emit(self) -> None:
        self.file.write(self.line() + "\n")
        self.file.flush()
        self.lines, self._shown = self.lines + 1, self.n
        self._last = time.monotonic()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.style == "lines" and self.lines and self._shown != self.n:
            self.emit()


__all__ = ["TagProgress", "InputPosition", "count_lines"]

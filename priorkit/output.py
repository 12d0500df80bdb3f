"""Output meant for people, read where people read it (docs/cli.md, "Output").

On a terminal, tables are rich tables and progress is a live bar.  Anywhere else (a pipe,
a log file, CI) a table is plain Markdown whose cells no terminal width cuts, and progress
is one plain line every few seconds (``PRIORKIT_PROGRESS_SECONDS``, default 5), never a
carriage return; under ``priorkit -q`` (``PRIORKIT_QUIET``) there is no progress at all.

* :func:`print_table`: every table the command line prints;
* :func:`progress_style`: ``"bar"``, ``"lines"`` or ``"off"`` for a progress display;
* :func:`progress`: an iterable with a bar, plain lines or nothing (tqdm's ``set_postfix_str``
  and ``write`` too); :class:`Ticker`: the plain lines, for code that counts by itself (the
  Trainer's callback, the precompute run).

Imports nothing of priorkit: every part may use it.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Iterable, Iterator, Sequence, TextIO

DEFAULT_SECONDS = 5.0


def quiet() -> bool:
    """``priorkit -q`` (also in sub-processes)."""
    return bool(os.environ.get("PRIORKIT_QUIET"))


def is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


def interval() -> float:
    """Seconds between two plain progress lines (``PRIORKIT_PROGRESS_SECONDS``)."""
    try:
        return max(0.0, float(os.environ.get("PRIORKIT_PROGRESS_SECONDS", DEFAULT_SECONDS)))
    except ValueError:
        return DEFAULT_SECONDS


def progress_style(enabled: bool = True, stream: TextIO | None = None) -> str:
    """``"off"`` (disabled or ``-q``), ``"bar"`` (``stream``, default stderr, is a terminal)
    or ``"lines"`` (anything else: one plain line every few seconds)."""
    if not enabled or quiet():
        return "off"
    return "bar" if is_terminal(stream if stream is not None else sys.stderr) else "lines"


# ---- tables ---------------------------------------------------------------------------------
def _plain(cell: Any) -> str:
    text = getattr(cell, "plain", None)  # a rich Text
    return str(cell if text is None else text)


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """Plain Markdown: a title line, the header, one line per row; ``|`` escaped, line breaks
    made spaces; nothing cut."""
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(_plain(c).replace("|", "\\|").replace("\r", " ").replace("\n", " ")
                                 for c in cells) + " |"

    out = [title] if title else []
    out += [line(columns), "|" + "|".join("---" for _ in columns) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out) + "\n"


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
                justify: dict[str, str] | None = None, console: Any = None, **table_options: Any) -> None:
    """A rich table on a terminal; Markdown elsewhere.  Cells are plain text (rich markup is
    not read) or rich ``Text`` for a style; ``justify``: column -> left/right/center."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console if console is not None else Console()
    rows = [list(r) for r in rows]
    if not console.is_terminal:
        console.file.write(markdown_table(columns, rows, title))
        console.file.flush()
        return
    table = Table(title=title, **table_options)
    for col in columns:
        table.add_column(col, justify=(justify or {}).get(col, "left"), overflow="fold")  # wrap, never "…"
    for r in rows:
        table.add_row(*[c if isinstance(c, Text) else Text(str(c)) for c in r])
    console.print(table)


# ---- progress -------------------------------------------------------------------------------
def _seconds(s: float) -> str:
    return f"{s:.1f}s" if s < 10 else f"{s:.0f}s" if s < 120 else f"{s / 60:.1f}min"


class Ticker:
    """Progress as plain lines: ``desc: n/total unit (p%), elapsed, left`` at most once every
    :func:`interval` seconds, and a last line at :meth:`close` when one was written before."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "it", *, file: TextIO | None = None,
                 every: float | None = None) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.file = file if file is not None else sys.stderr
        self.every = interval() if every is None else every
        self.n, self.note, self.lines, self._shown = 0, "", 0, -1
        self.start = self._last = time.monotonic()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        done = f"{self.n}" + (f"/{self.total}" if self.total else "") + f" {self.unit}"
        if self.total:
            done += f" ({100 * self.n / self.total:.0f}%)"
        text = f"{self.desc}: {done}, {_seconds(elapsed)}"
        if self.total and 0 < self.n < self.total:
            text += f", about {_seconds(elapsed / self.n * (self.total - self.n))} left"
        return text + (f"; {self.note}" if self.note else "")

    def emit(self) -> None:
        self.file.write(self.line() + "\n")
        self.file.flush()
        self.lines, self._shown = self.lines + 1, self.n
        self._last = time.monotonic()

    def update(self, n: int = 1, note: str | None = None) -> None:
        self.n += n
        if note is not None:
            self.note = note
        if time.monotonic() - self._last >= self.every:
            self.emit()

    def close(self) -> None:
        if self.lines and self._shown != self.n:
            self.emit()
        self.lines = 0


class _Lines:
    """tqdm's face over a :class:`Ticker` (iteration, ``set_postfix_str``, ``write``, ``update``)."""

    def __init__(self, iterable: Iterable[Any] | None, ticker: Ticker | None) -> None:
        self.iterable, self.ticker = iterable, ticker

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def update(self, n: int = 1) -> None:
        if self.ticker is not None:
            self.ticker.update(n)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        if self.ticker is not None:
            self.ticker.note = text

    def write(self, text: str, file: TextIO | None = None) -> None:
        print(text, file=file if file is not None else sys.stdout, flush=True)

    def close(self) -> None:
        if self.ticker is not None:
            self.ticker.close()
            self.ticker = None


def progress(iterable: Iterable[Any] | None = None, *, desc: str, total: int | None = None, unit: str = "it",
             enabled: bool = True, file: TextIO | None = None) -> Any:
    """``iterable`` with progress: a tqdm bar on a terminal, plain lines elsewhere, nothing when
    ``enabled`` is false or under ``-q``; the object has tqdm's ``update``, ``set_postfix_str``,
    ``write`` and ``close``."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    style = progress_style(enabled, file)
    if style == "bar":
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, file=file)
    return _Lines(iterable, Ticker(desc, total, unit, file=file) if style == "lines" else None)


__all__ = ["print_table", "markdown_table", "progress", "progress_style", "Ticker", "quiet", "interval"]

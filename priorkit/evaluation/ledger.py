"""The test-read ledger (issue 48, docs/pipelines.md#the-sealed-test-split): every time test is
read, one line in ``docs/results/test-reads.csv``; a claimed test score names its line.

Choices are made on devel (``data.eval``, ``sweep.split: eval``); test is read by an explicit
final step, ``priorkit sweep PIPELINE --final SETTING ... --decision "..."``
(:mod:`priorkit.evaluation.final`), which appends one line here per read:

``read, date, commit, pipeline, name, settings, scored, fractions, seeds, decision, result, earlier``

* ``read``: the read's number (1, 2, ...; a README row names it as ``[read N](...#L<N+1>)``);
* ``commit``: the repository's commit (``+changes`` when priorkit/, plugins/ or the pipeline file
  differ from it; `` (code imported from DIR)`` when the code that ran is a copy outside it);
* ``settings``: the settings the read is about; ``scored``: every arm scored on test for it (the
  baseline, the settings a post-hoc arm mixes, the sweep's baselines);
* ``decision``: what the read decides, in the reader's words; ``result``: the results file it
  wrote (copied next to the ledger);
* ``earlier``: the earlier reads of the same pipeline and settings: a second read of one question
  is allowed, and visible.

:func:`render_row` writes a README row from a read's result file; :func:`check_table` says which
rows of a Markdown table claim a score that no ledger line backs.
"""
from __future__ import annotations

import csv
import datetime as _dt
import re
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import PriorkitError

LEDGER = Path("docs/results/test-reads.csv")
COLUMNS = ["read", "date", "commit", "pipeline", "name", "settings", "scored", "fractions", "seeds", "decision",
           "result", "earlier"]
FINAL_DIR = "final"  # runs/<name>/final/read-<N>/: a final read's folder
READ_LINK = re.compile(r"\[read (?P<read>\d+)\]\((?P<target>[^)#\s]+)(?:#L(?P<line>\d+))?\)")


def is_final(cfg: Any) -> bool:
    """Whether ``cfg`` is a final read's configuration (its output folder is ``final/read-<N>``)."""
    out = cfg.out_dir
    return out.parent.name == FINAL_DIR and out.name.startswith("read-")


def unsealed(cfg: Any) -> list[str]:
    """The warning of a sweep that scores test outside a final read (empty otherwise).  Such a
    sweep runs: the warning says that its test scores are in no ledger and choose nothing."""
    if cfg.evaluate is None or "test" not in cfg.evaluate or is_final(cfg):
        return []
    return [f"test scored outside a final read: {cfg.source} lists test in `evaluate`, so every run of this sweep "
            "was scored on data.test; a choice is made on devel (evaluate: [eval], sweep.split: eval), and test is "
            f"read once, for a stated decision, by `priorkit sweep {cfg.source} --final SETTING --decision \"...\"` "
            f"(recorded in {LEDGER}); these test scores are in no ledger (docs/pipelines.md#the-sealed-test-split)"]


def read_ledger(path: str | Path) -> list[dict[str, str]]:
    """The ledger's lines (empty when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if rows and set(COLUMNS) - set(rows[0]):
        raise PriorkitError(f"{path}: not a test-read ledger (columns {', '.join(rows[0])}; expected "
                            f"{', '.join(COLUMNS)}); name another file with --ledger")
    return rows


def next_read(path: str | Path) -> int:
    rows = read_ledger(path)
    return 1 + max((int(r["read"]) for r in rows), default=0)


def earlier_reads(path: str | Path, name: str, settings: Sequence[str],
                  fractions: Sequence[float] | None = None) -> list[dict[str, str]]:
    """The ledger's earlier reads of pipeline ``name`` about the same settings (at the same
    fractions, when given: a read at 1% gold is not a second read of the question at 10%)."""
    want = " ".join(sorted(settings))

    def same_fractions(r: Mapping[str, str]) -> bool:
        return fractions is None or sorted(float(f) for f in r["fractions"].split()) == sorted(map(float, fractions))

    return [r for r in read_ledger(path) if r["name"] == name and " ".join(sorted(r["settings"].split())) == want
            and same_fractions(r)]


def append_read(path: str | Path, entry: Mapping[str, Any]) -> dict[str, str]:
    """Append one read (its ``read`` number must be the next one); returns the line as written."""
    path = Path(path)
    line = {k: str(entry.get(k, "")) for k in COLUMNS}
    if int(line["read"]) != next_read(path):
        raise PriorkitError(f"{path}: read {line['read']} is not the next read ({next_read(path)}); another read "
                            "was recorded meanwhile: run the final read again")
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerow(line)
    return line


def current_commit(paths: Sequence[str | Path] = ("priorkit", "plugins")) -> str:
    """``git rev-parse HEAD`` of the working directory, ``+changes`` when ``paths`` differ from it
    (paths outside the repository are no change of it), `` (code imported from DIR)`` when the
    priorkit that runs is not the repository's (a frozen copy: its commit is the copy's, not HEAD's);
    "-" outside a repository."""
    try:
        got = subprocess.run(["git", "rev-parse", "HEAD", "--show-toplevel"], capture_output=True, text=True,
                             timeout=30)
        if got.returncode != 0:
            return "-"
        head, top = got.stdout.split()
        root = Path(top).resolve()
        inside = [str(p) for p in paths if Path(p).resolve().is_relative_to(root)]
        dirty = bool(inside) and subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *inside],
                                                capture_output=True, timeout=60).returncode != 0
    except (OSError, subprocess.SubprocessError):
        return "-"
    code = Path(__file__).resolve().parents[2]  # the folder priorkit was imported from
    frozen = "" if code.is_relative_to(root) else f" (code imported from {code})"
    return head + ("+changes" if dirty else "") + frozen


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


# ---- README rows ------------------------------------------------------------------------------
def result_scores(path: Path, setting: str, fraction: float | None, column: str) -> dict[int, float]:
    """``{seed: score}`` of ``setting`` in a read's result file (one fraction, or the only one)."""
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["prior"] == setting and r.get(column) not in (None, "")]
    if fraction is not None:
        rows = [r for r in rows if abs(float(r["fraction"]) - fraction) < 1e-9]
    if len({float(r["fraction"]) for r in rows}) > 1:
        raise PriorkitError(f"{path}: {setting} was read at several fractions; name one")
    return {int(r["seed"]): float(r[column]) for r in rows}


def read_line(ledger: str | Path, read: int) -> dict[str, str]:
    for r in read_ledger(ledger):
        if int(r["read"]) == read:
            return r
    raise PriorkitError(f"{ledger}: no read {read}; the ledger holds reads "
                        f"{', '.join(r['read'] for r in read_ledger(ledger)) or 'none'}")


def render_row(ledger: str | Path, read: int, setting: str, cells: Sequence[str], *, baseline: str | None = None,
               fraction: float | None = None, metric: str = "f1", split: str = "test", root: str | Path = ".") -> str:
    """A Markdown row for README's measured table from a final read: ``cells`` (e.g. task, train,
    arm), the setting's mean score x100 on the read's result file, its paired Δ against
    ``baseline`` with the 95% CI over seeds and the seeds ahead, the number of seeds, and the link
    to the ledger line, ``[read N](LEDGER#L<N+1>)``.  ``ledger`` and the read's result file are
    paths relative to ``root`` (the repository), as in the ledger."""
    from ..stats import paired

    line = read_line(Path(root) / ledger, read)
    result = Path(root) / line["result"]
    column = f"{split}_{metric}"
    got = result_scores(result, setting, fraction, column)
    if not got:
        raise PriorkitError(f"{result} (read {read}) has no {column} of {setting!r}; it holds the settings read "
                            f"then: {line['scored']}")
    mean = sum(got.values()) / len(got)
    delta = "-"
    if baseline is not None:
        base = result_scores(result, baseline, fraction, column)
        seeds = sorted(set(got) & set(base))
        p = paired([100 * (got[s] - base[s]) for s in seeds])
        ahead = sum(got[s] > base[s] for s in seeds)
        ci = f" [{p.ci_low:+.2f}, {p.ci_high:+.2f}]" if p.n > 1 else ""
        delta = f"{p.mean:+.2f}{ci}"
        count = f"{len(seeds)} ({ahead} ahead)"
    else:
        count = str(len(got))
    index = list(read_ledger(Path(root) / ledger)).index(line) + 2  # the header is line 1
    link = f"[read {read}]({Path(ledger).as_posix()}#L{index})"
    return "| " + " | ".join([*cells, f"{100 * mean:.2f}", delta, count, link]) + " |"


def check_table(text: str, ledger: str | Path, root: str | Path = ".", metric: str = "f1",
                split: str = "test") -> list[str]:
    """Problems of a Markdown table whose rows claim test scores (README's measured table): a row
    without a ``[read N](...)`` link, a link to a read the ledger lacks or to another ledger or line,
    a read whose result file is missing, or whose result file has no setting with the row's score
    (the mean x100 of ``<split>_<metric>`` at some fraction, to two decimals, in the row's fourth
    cell).  Empty when every row is backed."""
    root = Path(root)
    rows = [r for r in text.splitlines() if r.startswith("|") and not re.match(r"^\|[\s|:-]+\|$", r)]
    problems = []
    lines = read_ledger(root / ledger)
    for row in rows[1:]:  # the first is the header
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        name = " / ".join(cells[:3])
        m = READ_LINK.search(row)
        if m is None:
            problems.append(f"row '{name}' claims a test score and names no ledger read ([read N]({ledger}#L...))")
            continue
        read = int(m["read"])
        found = [i for i, r in enumerate(lines) if int(r["read"]) == read]
        if Path(m["target"]) != Path(ledger) or not found:
            problems.append(f"row '{name}' names read {read} of {m['target']}; {ledger} has "
                            f"{'no such read' if not found else 'it, but the link points elsewhere'}")
            continue
        if m["line"] is not None and int(m["line"]) != found[0] + 2:
            problems.append(f"row '{name}' links line {m['line']} of the ledger; read {read} is on line {found[0] + 2}")
        result = root / lines[found[0]]["result"]
        if not result.exists():
            problems.append(f"row '{name}': read {read}'s result file {result} does not exist")
            continue
        score = cells[3] if len(cells) > 3 else ""
        column = f"{split}_{metric}"
        with open(result, newline="") as fh:
            results = list(csv.DictReader(fh))
        means = {}
        for r in results:
            if r.get(column) not in (None, ""):
                means.setdefault((r["prior"], r["fraction"]), []).append(float(r[column]))
        if not any(f"{100 * sum(v) / len(v):.2f}" == score for v in means.values()):
            problems.append(f"row '{name}': score {score} is no setting's mean {column} in {result} (read {read})")
    return problems

"""Checkable selection: every run that chose a setting leaves a CSV, and the tables that
report a selection are generated from those files.

A selection file (``docs/results/*-selection.csv``) has one row per scored run:

``arm, setting, split, origin, seed, fraction, metric, value, chosen, source``

* ``arm``: the arm the setting belongs to (``none``, ``features`` ...); ``setting``: what
  was tried (a sweep writes the setting's name and its learning rate);
* ``split`` / ``origin``: the data split the runs were scored on (never test) and where
  it came from (a sample of devel ...); ``metric`` / ``value``: the score, unscaled;
* ``chosen``: ``yes`` for the setting the selection kept, else empty (a sweep leaves it
  empty: choosing is the reader's step);
* ``source``: the run folder, or how the row was obtained when there is none;
* ``reason`` (optional, a last column): on a ``chosen`` row that is not its arm's best
  on the split (the devel maximum; the minimum for ``mse``), why it was kept anyway.
  :func:`unexplained_choices` names every chosen setting that is neither the best nor
  explained (``tests/test_selection_tables.py`` runs it on every file), and the table
  shows the reason under a dagger.

:func:`write_sweep_selection` writes a sweep's file (``priorkit sweep`` does so by itself
when ``sweep.split`` is not ``test``); :func:`markdown` renders a file as the table the
docs show (one row per arm and setting, the mean over seeds); :func:`update_markers`
rewrites every table of a document between ``<!-- selection-table: FILE -->`` and
``<!-- /selection-table -->`` (``benchmarks/selection_table.py``; a docs test keeps them
equal).
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

COLUMNS = ["arm", "setting", "split", "origin", "seed", "fraction", "metric", "value", "chosen", "source"]
REASON = "reason"  # optional last column: why a chosen setting is not the best on the split
LOWER_IS_BETTER = {"mse"}
MARKER = re.compile(r"<!-- selection-table: (?P<file>[^ ]+) -->\n(?P<table>.*?)<!-- /selection-table -->",
                    re.DOTALL)


def write_selection(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    columns = COLUMNS + ([REASON] if any(r.get(REASON) for r in rows) else [])
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in columns})
    tmp.replace(path)
    return path


def read_selection(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    missing = [c for c in ("arm", "setting", "split", "seed", "metric", "value") if rows and c not in rows[0]]
    if missing:
        from ..errors import PriorkitError

        raise PriorkitError(f"{path}: not a selection file (no column {', '.join(missing)}; expected {COLUMNS})")
    return rows


def sweep_selection_rows(cfg: Any, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A sweep's results rows (``results.csv``) as selection rows on ``sweep.split``."""
    from ..config import for_fraction, prior_settings

    split, metric = cfg.sweep.split, cfg.task.metric
    src = getattr(cfg.data, split, None)
    name = (src.split if src is not None and src.split else split) if src is not None else split
    origin = ""
    if src is not None:
        origin = src.path or src.hf or src.source or ""
        origin += f" {src.split}" if src.split else ""
        origin += f", sample {src.sample} (sample_seed {src.sample_seed})" if src.sample else ""
        origin += f", first {src.limit}" if src.limit else ""
    settings = prior_settings(cfg)
    out = []
    for r in rows:
        value = r.get(f"{split}_{metric}")
        if value is None or value == "":
            continue
        prior = settings.get(r["prior"])
        lr = for_fraction(cfg, float(r["fraction"]), prior).train.learning_rate if r["prior"] in settings else None
        out.append({"arm": r["prior"], "setting": r["prior"] + (f" (lr {lr:g})" if lr is not None else " (post-hoc)"),
                    "split": name, "origin": origin.strip(), "seed": r["seed"], "fraction": r["fraction"],
                    "metric": metric, "value": value, "chosen": "", "source": r.get("run_dir", "")})
    return out


def write_sweep_selection(cfg: Any, rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Write a sweep's selection file; refuses a sweep reported on test (selection never sees it)."""
    if cfg.sweep.split == "test":
        from ..errors import PriorkitError

        raise PriorkitError(f"{cfg.source}: sweep.split is test; a selection is made on eval (devel), never on "
                            "test: set sweep.split=eval")
    return write_selection(sweep_selection_rows(cfg, rows), path)


def _groups(rows: Sequence[Mapping[str, str]]) -> dict[tuple[str, str], list[Mapping[str, str]]]:
    groups: dict[tuple[str, str], list[Mapping[str, str]]] = {}
    for r in rows:
        groups.setdefault((r["arm"], r["setting"]), []).append(r)
    return groups


def _mean(group: Sequence[Mapping[str, str]]) -> float:
    return sum(float(r["value"]) for r in group) / len(group)


def _reason(group: Sequence[Mapping[str, str]]) -> str:
    return next((r.get(REASON) or "" for r in group if (r.get(REASON) or "").strip()), "").strip()


def unexplained_choices(rows: Sequence[Mapping[str, str]]) -> list[str]:
    """Every chosen setting that is not the best of its arm and fraction on the split (the
    maximum of the seed means; the minimum for ``mse``) and carries no ``reason``, and every
    ``reason`` on a row that is not chosen, each as one line naming the arm and setting."""
    problems = []
    by_arm: dict[tuple[str, str], dict[str, list[Mapping[str, str]]]] = {}
    for (arm, setting), g in _groups(rows).items():
        by_arm.setdefault((arm, g[0].get("fraction", "")), {})[setting] = g
        if _reason(g) and not any(r.get("chosen") == "yes" for r in g):
            problems.append(f"{arm} / {setting}: a reason on a setting that is not chosen")
    for (arm, fraction), settings in by_arm.items():
        sign = -1.0 if next(iter(settings.values()))[0]["metric"] in LOWER_IS_BETTER else 1.0
        best = max(sign * _mean(g) for g in settings.values())
        for setting, g in settings.items():
            if any(r.get("chosen") == "yes" for r in g) and sign * _mean(g) < best - 1e-12 and not _reason(g):
                problems.append(f"{arm} / {setting} (fraction {fraction}): chosen but not the best on "
                                f"{g[0]['split']} ({_mean(g):.4f}); set its `{REASON}` column to say why")
    return problems


def _points(value: float, metric: str) -> str:
    return f"{value:.4f}" if metric == "mse" else f"{100 * value:.2f}"


def markdown(rows: Sequence[Mapping[str, str]]) -> str:
    """The table of a selection file: one row per (arm, setting) in file order, the mean over
    its seeds (x100 unless the metric is mse); the chosen settings in bold; a chosen setting
    with a ``reason`` (not the best on the split) marked with a dagger, the reason below."""
    groups = _groups(rows)
    splits = sorted({r["split"] for r in rows})
    metrics = sorted({r["metric"] for r in rows})
    seeds = max((len(g) for g in groups.values()), default=0)
    head = f"{'/'.join(splits)} {'/'.join(m.upper() if m == 'f1' else m for m in metrics)}"
    lines = ["| arm | setting | " + head + (" | seeds |" if seeds > 1 else " |"),
             "|---|---|---|" + ("---|" if seeds > 1 else "")]
    notes = []
    for (arm, setting), g in groups.items():
        value = _points(_mean(g), g[0]["metric"])
        if any(r.get("chosen") == "yes" for r in g):
            if _reason(g):
                notes.append(f"{'†' * (len(notes) + 1)} {arm}, {setting}: chosen although not the best on "
                             f"{g[0]['split']}: {_reason(g)}")
            setting, value = f"**{setting}**" + ("†" * len(notes) if _reason(g) else ""), f"**{value}**"
        lines.append(f"| {arm} | {setting} | {value} |" + (f" {len(g)} |" if seeds > 1 else ""))
    return "\n".join(lines) + "\n" + "".join(f"\n{n}\n" for n in notes)


def update_markers(text: str, folder: Path) -> tuple[str, list[str]]:
    """``text`` with every marked selection table regenerated from ``folder/FILE``; the files used."""
    used = []

    def repl(m: re.Match) -> str:
        used.append(m.group("file"))
        table = markdown(read_selection(Path(folder) / m.group("file")))
        return f"<!-- selection-table: {m.group('file')} -->\n{table}<!-- /selection-table -->"

    return MARKER.sub(repl, text), used

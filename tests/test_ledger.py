"""The test-read ledger (issue 48): reads numbered and appended, a second read of a question
visible, README rows rendered from a read, and the check that every row claiming a test score
names its read -- on hand-made ledgers and result files, then on README.md itself."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from priorkit.errors import PriorkitError
from priorkit.evaluation import ledger as lg

ROOT = Path(__file__).resolve().parents[1]
README_BLOCK = ("<!-- claims:begin readme -->", "<!-- claims:end -->")


def _result(path: Path, rows: dict[tuple[str, int], float]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["prior", "fraction", "seed", "test_f1", "run_dir"])
        w.writeheader()
        for (prior, seed), v in rows.items():
            w.writerow({"prior": prior, "fraction": 0.1, "seed": seed, "test_f1": v, "run_dir": "x"})
    return path


def _read(n: int, result: str, settings: str = "st-mix", name: str = "bc5cdr-mix", earlier: str = "") -> dict:
    return {"read": n, "date": "2026-12-07", "commit": "abc", "pipeline": "pipelines/bc5cdr-mix.yaml", "name": name,
            "settings": settings, "scored": f"none {settings}", "fractions": "0.1", "seeds": "0 1 2",
            "decision": "the recipe", "result": result, "earlier": earlier}


@pytest.fixture
def booked(tmp_path, monkeypatch):
    """A ledger with two reads in docs/results/, the way a final read leaves it (paths relative
    to the repository root)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "results").mkdir(parents=True)
    led = Path("docs/results/test-reads.csv")
    _result(tmp_path / "docs/results/mix-read1-results.csv",
            {("none", 0): 0.70, ("none", 1): 0.72, ("none", 2): 0.68,
             ("st-mix", 0): 0.80, ("st-mix", 1): 0.81, ("st-mix", 2): 0.79})
    _result(tmp_path / "docs/results/mix-read2-results.csv", {("none", 0): 0.5, ("st-mix", 0): 0.6})
    lg.append_read(led, _read(1, "docs/results/mix-read1-results.csv"))
    lg.append_read(led, _read(2, "docs/results/mix-read2-results.csv", earlier="1"))
    return led


def test_reads_are_numbered_and_a_second_read_of_a_question_is_found(booked):
    assert lg.next_read(booked) == 3
    assert [r["read"] for r in lg.earlier_reads(booked, "bc5cdr-mix", ["st-mix"])] == ["1", "2"]
    assert lg.earlier_reads(booked, "bc5cdr-mix", ["st-mix", "none"]) == []
    assert lg.earlier_reads(booked, "other", ["st-mix"]) == []
    assert [r["read"] for r in lg.earlier_reads(booked, "bc5cdr-mix", ["st-mix"], [0.1])] == ["1", "2"]
    assert lg.earlier_reads(booked, "bc5cdr-mix", ["st-mix"], [0.01]) == []   # another question: 1% gold
    with pytest.raises(PriorkitError, match="read 2 is not the next read \\(3\\)"):
        lg.append_read(booked, _read(2, "x"))
    lines = booked.read_text().splitlines()
    assert lines[0] == ",".join(lg.COLUMNS) and lines[1].startswith("1,2026-12-07,abc,")


def test_a_readme_row_is_rendered_from_its_read(booked):
    row = lg.render_row(booked, 1, "st-mix", ["BC5CDR NER", "10%", "the mix"], baseline="none")
    # mean 80.00; Δ per seed +10, +9, +11: mean +10.00, t(2) CI half-width 2.48
    assert row == ("| BC5CDR NER | 10% | the mix | 80.00 | +10.00 [+7.52, +12.48] | 3 (3 ahead) | "
                   "[read 1](docs/results/test-reads.csv#L2) |")
    assert lg.render_row(booked, 2, "st-mix", ["a", "b", "c"]).endswith("| 60.00 | - | 1 | "
                                                                          "[read 2](docs/results/test-reads.csv#L3) |")
    with pytest.raises(PriorkitError, match="no read 7; the ledger holds reads 1, 2"):
        lg.render_row(booked, 7, "st-mix", [])
    with pytest.raises(PriorkitError, match="has no test_f1 of 'st-branch'"):
        lg.render_row(booked, 1, "st-branch", [])


def test_check_table_names_every_row_no_read_backs(booked):
    good = lg.render_row(booked, 1, "st-mix", ["BC5CDR NER", "10%", "the mix"], baseline="none")
    head = "| task | train | arm | score | Δ | seeds | file |\n|---|---|---|---|---|---|---|\n"
    assert lg.check_table(head + good + "\n", booked) == []
    missing = "| BC5CDR NER | 10% | old row | 80.19 | +11.99 | 5 | [x.csv](docs/results/x.csv) |"
    wrong_read = good.replace("[read 1](docs/results/test-reads.csv#L2)", "[read 9](docs/results/test-reads.csv#L10)")
    wrong_line = good.replace("#L2)", "#L3)")
    wrong_score = good.replace("| 80.00 |", "| 80.01 |")
    problems = lg.check_table(head + "\n".join([missing, wrong_read, wrong_line, wrong_score]) + "\n", booked)
    assert len(problems) == 4, problems
    assert "old row' claims a test score and names no ledger read" in problems[0]
    assert "names read 9" in problems[1] and "no such read" in problems[1]
    assert "links line 3 of the ledger; read 1 is on line 2" in problems[2]
    assert "score 80.01 is no setting's mean test_f1" in problems[3]
    Path("docs/results/mix-read1-results.csv").unlink()
    assert "does not exist" in lg.check_table(head + good + "\n", booked)[0]


def _readme_table() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(README_BLOCK[0])
    end = text.index(README_BLOCK[1], start)  # the end marker after this block's begin (README has other blocks)
    return "\n".join(line for line in text[start:end].splitlines() if line.startswith("|"))


def test_every_readme_test_score_names_its_read():
    assert lg.check_table(_readme_table(), lg.LEDGER, ROOT) == []


def test_the_readme_table_is_found_and_checked():
    """The check above reads README's real table: it has rows, and it would name each one."""
    table = _readme_table()
    rows = [r for r in table.splitlines()[2:]]
    assert len(rows) >= 5
    problems = lg.check_table(table, lg.LEDGER, ROOT)
    assert len(problems) <= len(rows) and all(p.startswith("row '") for p in problems)


def test_the_ledger_in_the_repository_is_a_ledger():
    rows = lg.read_ledger(ROOT / lg.LEDGER)  # raises on a file with other columns
    for r in rows:
        assert (ROOT / r["result"]).exists(), r
        assert r["decision"].strip() and r["settings"].strip()


def test_the_commit_ignores_a_pipeline_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    outside = tmp_path / "pipeline.yaml"
    outside.write_text("name: x\n")
    here = lg.current_commit(("priorkit", "plugins"))
    assert len(here.split("+")[0]) == 40  # the commit, then +changes only where priorkit/ or plugins/ differ
    # a file outside the repository is no change of it: the line is the one without it
    assert lg.current_commit(("priorkit", "plugins", outside)) == here


def test_the_commit_names_a_frozen_copy_of_the_code(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "priorkit", tmp_path / "priorkit", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-P", "-c", "from priorkit.evaluation import ledger; print(ledger.__file__); "
                          "print(ledger.current_commit())"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0].startswith(str(tmp_path))
    assert out[1].endswith(f" (code imported from {tmp_path})")
    assert "code imported from" not in lg.current_commit()  # the repository's own code: no such note

"""Checkable selection and reports a log can read.

* Every selection table of docs/*.md and docs/archive/*.md (between ``<!-- selection-table: FILE -->`` markers)
  equals the table generated from ``docs/results/FILE``, and every
  ``docs/results/*-selection.csv`` has its table: the docs cannot drift from the files.
* A sweep reported on eval writes its selection file by itself (and ``--selection-csv``
  a copy); one reported on test refuses ``--selection-csv``.
* The sweep table printed to something that is not a terminal (a log, CI) is not cut.
* A file's ``chosen`` setting is its arm's best on the split (the devel maximum), or the
  file says why not in its ``reason`` column, which the table shows.
"""
from __future__ import annotations

import csv
import io
import textwrap
from pathlib import Path

import pytest
import yaml

from priorkit.evaluation.selection import COLUMNS, REASON, markdown, read_selection, unexplained_choices, update_markers

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
FILES = sorted(RESULTS.glob("*-selection.csv"))


def test_the_docs_selection_tables_are_generated_from_the_files():
    used = []
    for doc in [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "archive").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        new, names = update_markers(text, RESULTS)
        assert new == text, (f"{doc.name}: a selection table differs from its file; run "
                             "`python benchmarks/selection_table.py`")
        used += names
    assert FILES, "no docs/results/*-selection.csv"
    assert sorted(used) == sorted({f.name for f in FILES}), "every selection file has its table in the docs"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_selection_files_never_use_test_and_choose_one_setting_per_arm(path):
    rows = read_selection(path)
    assert rows and list(rows[0]) in (COLUMNS, COLUMNS + [REASON])
    assert all(r["split"] != "test" and "test" not in r["origin"] for r in rows)
    for arm in {r["arm"] for r in rows}:
        chosen = {r["setting"] for r in rows if r["arm"] == arm and r["chosen"] == "yes"}
        assert len(chosen) <= 1, (arm, chosen)
    assert all(r["source"] for r in rows), "every row says where it came from"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_chosen_setting_is_the_devel_maximum_or_says_why_not(path):
    assert unexplained_choices(read_selection(path)) == []


def _rows(values, chosen, reason=""):
    return [{"arm": "attention", "setting": s, "split": "devel", "seed": "0", "fraction": "1.0", "metric": "f1",
             "value": v, "chosen": "yes" if s == chosen else "", REASON: reason if s == chosen else ""}
            for s, v in values]


def test_a_choice_below_the_maximum_needs_a_reason_and_the_table_shows_it():
    values = [("lr 4e-4", "0.8283"), ("lr 2e-4", "0.8307")]
    (problem,) = unexplained_choices(_rows(values, "lr 4e-4"))
    assert problem.startswith("attention / lr 4e-4 (fraction 1.0): chosen but not the best on devel")
    assert unexplained_choices(_rows(values, "lr 2e-4")) == []
    explained = _rows(values, "lr 4e-4", "kept: within the seed spread")
    assert unexplained_choices(explained) == []
    table = markdown(explained)
    assert "| attention | **lr 4e-4**† | **82.83** |" in table
    assert "† attention, lr 4e-4: chosen although not the best on devel: kept: within the seed spread" in table
    # lower is better for mse; a reason on a setting not chosen is a mistake
    mse = [dict(r, metric="mse") for r in _rows(values, "lr 4e-4")]
    assert unexplained_choices(mse) == []
    stray = _rows(values, "lr 4e-4", "x")
    stray[1][REASON] = "misplaced"
    assert any("not chosen" in p for p in unexplained_choices(stray))


def test_the_check100_file_keeps_its_choice_with_its_reason():
    rows = read_selection(RESULTS / "bc5cdr-curve-check100-selection.csv")
    att = {r["setting"]: r for r in rows if r["arm"] == "attention"}
    kept = att["lr 4e-4, 5 epochs (reused 10% setting)"]
    assert kept["chosen"] == "yes" and float(kept["value"]) < float(att["lr 2e-4, 5 epochs"]["value"])
    assert "seed" in kept[REASON] and "reused" in kept[REASON]


def test_markdown_of_a_file_averages_seeds_and_bolds_the_choice():
    rows = [{"arm": "none", "setting": "lr 1e-4", "split": "devel", "seed": s, "metric": "f1", "value": v,
             "chosen": c} for s, v, c in ((0, "0.5", ""), (1, "0.6", ""))]
    rows += [{"arm": "none", "setting": "lr 4e-4", "split": "devel", "seed": 0, "metric": "f1", "value": "0.7",
              "chosen": "yes"}]
    assert markdown(rows).splitlines() == ["| arm | setting | devel F1 | seeds |", "|---|---|---|---|",
                                           "| none | lr 1e-4 | 55.00 | 2 |", "| none | **lr 4e-4** | **70.00** | 1 |"]


# ---- a tiny sweep on eval --------------------------------------------------------------------
def _tiny(tmp_path, tiny_bert_dir, split="eval"):
    raw = yaml.safe_load(textwrap.dedent(f"""\
        name: tiny-selection
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: regression, label_scale: 5.0, metric: pearson}}
        data:
          train: {{source: stsb, split: train, sample: 16, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 16}}
          test: {{source: stsb, split: test, sample: 16}}
        train: {{epochs: 1, batch_size: 8, learning_rate: 1.0e-3, progress: false, logging_steps: 100,
                 threads: 1, save: "no"}}
        sweep:
          seeds: [0, 1]
          priors: {{none: null, wordnet: {{provider: wordnet, params: {{measure: wup}},
                                            attention: {{layers: [0], mode: multiply}},
                                            train: {{learning_rate: 2.0e-3}}}}}}
          split: {split}
        """))
    path = tmp_path / "sel.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_sweep_on_eval_leaves_its_selection_file_and_a_readable_table(tmp_path, tiny_bert_dir):
    from click.testing import CliRunner

    from priorkit.cli import cli

    path = _tiny(tmp_path, tiny_bert_dir)
    copy = tmp_path / "docs" / "tiny-selection.csv"
    res = CliRunner().invoke(cli, ["sweep", str(path), "--selection-csv", str(copy)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = tmp_path / "runs"
    results = {(r["prior"], int(r["seed"])): r for r in csv.DictReader(open(out / "results.csv"))}
    rows = read_selection(out / "selection.csv")
    assert copy.read_text() == (out / "selection.csv").read_text()
    assert {(r["arm"], int(r["seed"])) for r in rows} == set(results)
    for r in rows:
        assert r["split"] == "dev" and r["metric"] == "pearson" and "sample 16" in r["origin"]
        assert float(r["value"]) == float(results[(r["arm"], int(r["seed"]))]["eval_pearson"])
        assert r["setting"] == ("none (lr 0.001)" if r["arm"] == "none" else "wordnet (lr 0.002)")
        assert r["source"] == results[(r["arm"], int(r["seed"]))]["run_dir"]
    # the table in the output (not a terminal here) is whole: no cell cut to a terminal's width
    assert "…" not in res.output
    header = next(ln for ln in res.output.splitlines() if ln.startswith("| fraction |"))
    assert "| 95% CI (sent.+seeds) | MDE (80%) | wins | per seed | prior use |" in header
    line = next(ln for ln in res.output.splitlines() if ln.startswith("| 1 | wordnet |"))
    per_seed = " ".join(f"{100 * float(results[('wordnet', s)]['eval_pearson']):.2f}" for s in (0, 1))
    assert per_seed in line


def test_a_sweep_on_test_refuses_a_selection_file(tmp_path, tiny_bert_dir):
    from click.testing import CliRunner

    from priorkit.cli import cli

    path = _tiny(tmp_path, tiny_bert_dir, split="test")
    res = CliRunner().invoke(cli, ["sweep", str(path), "--selection-csv", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "never on test" in res.output
    assert not (tmp_path / "runs").exists()


def test_print_table_to_a_log_is_not_cut(tmp_path):
    from rich.console import Console

    from priorkit.config import load_config
    from priorkit.evaluation.sweep import TABLE_HEADER, Cell, print_table, table_rows

    path = tmp_path / "p.yaml"
    path.write_text("name: a-pipeline-with-a-rather-long-name\ntask: {type: token-classification}\n"
                    "data:\n  train: {source: bc5cdr}\n  eval: {source: bc5cdr, split: devel}\n")
    cfg = load_config(path)
    base = [0.6731, 0.6612, 0.6904, 0.6555, 0.6801]
    cells = [Cell("none", 0.1, base, seeds=list(range(5))),
             Cell("features-with-a-long-setting-name", 0.1, [b + 0.05 + 0.003 * i for i, b in enumerate(base)],
                  base, list(range(5)), "none")]
    stream = io.StringIO()  # not a terminal: rich would cut the table to 80 columns
    print_table(cfg, cells, Console(file=stream, width=80))
    text = stream.getvalue()
    assert "…" not in text
    for row in table_rows(cfg, cells):
        assert "| " + " | ".join(row) + " |" in text
    assert "| " + " | ".join(TABLE_HEADER) + " |" in text
    # on a terminal the rich table is kept
    term = io.StringIO()
    print_table(cfg, cells, Console(file=term, width=300, force_terminal=True))
    assert "┃" in term.getvalue() or "│" in term.getvalue()


# ---- the matcher ablation never sees test ---------------------------------------------------------
def _baseline():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dictionary_baseline", ROOT / "benchmarks" / "dictionary_baseline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_ablation_defaults_to_devel_and_refuses_test():
    import subprocess
    import sys

    mod = _baseline()
    assert mod.parse_args(["--ablation"]).split == "devel"
    assert mod.parse_args([]).split == "test"  # the plain baseline scores beside the trained models
    assert mod.parse_args(["--ablation", "--split", "train"]).split == "train"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dictionary_baseline.py"), "--ablation",
                          "--split", "test"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    (line,) = res.stderr.strip().splitlines()
    assert "--ablation" in line and "refuses --split test" in line

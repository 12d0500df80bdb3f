"""Output meant for people, read where people read it (priorkit/output.py).

* Piped (not a terminal), every table the command line prints is plain Markdown whose cells
  are whole: ``priorkit plugins`` (with a broken folder plug-in and its reason),
  ``priorkit providers``, ``priorkit cache info``.
* ``priorkit plugins`` lists the built-in attention modes and channels, and a plug-in's.
* A real ``priorkit sweep`` whose output goes to a pipe holds no carriage return: progress is
  one plain line every few seconds (here every update: ``PRIORKIT_PROGRESS_SECONDS=0``), and
  nothing under ``-q``.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BROKEN = "import does_not_exist_with_a_rather_long_module_name_that_no_80_column_table_could_hold\n"

MODE_PLUGIN = '''
import priorkit
from priorkit.attention import AttentionMode


class LongNamedTiltForTheListing(AttentionMode):
    name = "a_plugin_mode_with_a_name_longer_than_any_column_of_eighty"

    def attend(self, layer, call):
        return call.stock(None)


@priorkit.hookimpl
def register_attention_modes(register):
    register(LongNamedTiltForTheListing)
'''


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real command line in a fresh process, its output captured (a pipe, not a terminal)."""
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "80"}
    for key in ("PRIORKIT_PLUGINS_DIR", "PRIORKIT_QUIET", "PRIORKIT_PROGRESS_SECONDS", "FORCE_COLOR",
                "TTY_COMPATIBLE"):
        full.pop(key, None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True, cwd=ROOT,
                          env=full, timeout=600)


def markdown_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of ``text`` (separator rows left out)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and line.endswith(" |"):
            rows.append([c.strip() for c in line[2:-2].split(" | ")])
    return rows


@pytest.fixture(scope="module")
def plugin_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("output-plugins")
    folder.chmod(0o755)
    (folder / "broken_prior_plugin_with_a_long_name.py").write_text(BROKEN)
    (folder / "tilting.py").write_text(textwrap.dedent(MODE_PLUGIN))
    return folder


def test_plugins_piped_prints_every_cell_whole_with_builtins_and_a_broken_plugin(plugin_folder):
    env = {"PRIORKIT_PLUGINS_DIR": str(plugin_folder)}
    res = cli("plugins", env=env)
    assert res.returncode == 0, res.stderr
    assert "…" not in res.stdout and "━" not in res.stdout and "\r" not in res.stdout
    rows = {r[0]: r for r in markdown_rows(res.stdout)}
    header = rows.pop("name")
    assert header == ["name", "version", "source", "hooks", "providers (or why broken)", "attention modes",
                      "channels"]
    listed = {p["name"]: p for p in json.loads(cli("plugins", "--json", env=env).stdout)}
    assert set(rows) == set(listed)
    for name, info in listed.items():  # every cell as long as the value it shows
        row = rows[name]
        assert row[2] == info["source"]
        if info["error"] is None:
            assert row[4] == (", ".join(info["providers"]) or "-")
            assert row[5] == (", ".join(info["modes"]) or "-") and row[6] == (", ".join(info["channels"]) or "-")
        else:
            assert row[3] == "broken" and row[4] == info["error"]
    broken = rows["broken_prior_plugin_with_a_long_name"]
    assert "does_not_exist_with_a_rather_long_module_name_that_no_80_column_table_could_hold" in broken[4]
    # the built-in modes and channels, and the plug-in's mode
    from priorkit.attention.builtin_modes import __all__ as classes
    import priorkit.attention.builtin_modes as builtin
    from priorkit.channels import CHANNELS

    assert rows["priorkit"][5].split(", ") == sorted(getattr(builtin, c).name for c in classes)
    # the built-in channels: those priorkit's own modules register (other tests may have added theirs)
    builtin = [name for name, cls in CHANNELS.items() if cls.__module__.startswith("priorkit.")]
    assert rows["priorkit"][6].split(", ") == builtin and {"attention", "features"} <= set(builtin)
    assert rows["tilting"][5] == "a_plugin_mode_with_a_name_longer_than_any_column_of_eighty"
    assert "1 plug-in(s) broken" in res.stderr


def test_providers_piped_prints_every_description_whole():
    res = cli("providers")
    assert res.returncode == 0, res.stderr
    rows = {r[0]: r for r in markdown_rows(res.stdout)}
    listed = json.loads(cli("providers", "--json").stdout)
    assert {p["name"] for p in listed} <= set(rows)
    for p in listed:
        assert rows[p["name"]][1:] == [p["plugin"], p["description"]]


def test_precompute_and_cache_info_piped_are_markdown_with_plain_progress(tmp_path):
    from priorkit.resources import stsb_path

    path = tmp_path / "c.duckdb"
    res = cli("precompute", str(stsb_path("dev")), "--provider", "wordnet", "--param", "measure=wup",
              "--limit", "30", "--batch-size", "50", "--cache", str(path), env={"PRIORKIT_PROGRESS_SECONDS": "0"})
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stdout + res.stderr and "━" not in res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("wordnet pairs: ")]
    assert len(lines) > 1 and "(100%)" in lines[-1]
    rows = {r[0]: r for r in markdown_rows(res.stdout)}
    assert rows["cache"][1] == str(path) and rows["pairs"][1].replace(",", "").split()[0].isdigit()
    info = cli("cache", "info", "--cache", str(path))
    assert info.returncode == 0, info.stderr
    table = markdown_rows(info.stdout)
    assert table[0] == ["fingerprint", "provider", "pairs", "NaN", "mean"]
    assert table[1][1].startswith("wordnet v") and "measure=wup" in table[1][1]
    assert "━" not in info.stdout


def test_print_table_markdown_escapes_and_keeps_long_cells():
    from rich.console import Console
    from rich.text import Text

    from priorkit.output import print_table

    stream = io.StringIO()
    long = "x" * 300
    print_table("t", ["a", "b"], [[Text("red", style="red"), f"{long} | pipe\nnext"]], console=Console(file=stream))
    assert stream.getvalue() == f"t\n| a | b |\n|---|---|\n| red | {long} \\| pipe next |\n"
    term = io.StringIO()
    print_table("t", ["a", "b"], [["[bold]x[/bold]", long]],
                console=Console(file=term, width=60, force_terminal=True, color_system=None))
    text = term.getvalue()
    assert "┃" in text and "…" not in text and "[bold]x[/bold]" in text  # wrapped, markup shown as typed
    assert text.count("x") >= 300


def test_ticker_writes_plain_lines_at_most_every_interval():
    from priorkit.output import Ticker

    out = io.StringIO()
    t = Ticker("work", 4, "items", file=out, every=0)
    for _ in range(4):
        t.update(1, "note")
    t.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("work: 1/4 items (25%)") and lines[-1].startswith("work: 4/4 items (100%)")
    assert len(lines) == 4 and "\r" not in out.getvalue()
    quiet = io.StringIO()
    t = Ticker("work", 4, file=quiet, every=3600)
    t.update(4)
    t.close()
    assert quiet.getvalue() == ""  # faster than one interval: nothing to say (the caller says "done")


# ---- a real sweep, piped ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory, tiny_bert_dir) -> Path:
    folder = tmp_path_factory.mktemp("piped-sweep")
    path = folder / "sweep.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: piped
        output_dir: {folder / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: regression, label_scale: 5.0, metric: pearson}}
        data:
          train: {{source: stsb, split: train, sample: 48, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 16}}
        train: {{epochs: 2, batch_size: 8, learning_rate: 1.0e-3, logging_steps: 2, threads: 1}}
        sweep:
          seeds: [0]
          priors: {{none: null, wordnet: {{provider: wordnet, params: {{measure: wup}},
                                          attention: {{layers: [0], mode: multiply}}}}}}
        """))
    return path


def test_a_piped_sweep_log_has_plain_progress_lines_and_no_carriage_return(tiny_sweep):
    res = cli("sweep", str(tiny_sweep), "--force", env={"PRIORKIT_PROGRESS_SECONDS": "0"})
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "\r" not in log and "\x1b[" not in log
    train = [ln for ln in res.stderr.splitlines() if "] train: " in ln and " steps (" in ln]
    assert any(ln.startswith("[none fraction=1 seed=0] train: 12/12 steps (100%)") for ln in train), res.stderr
    assert any("loss " in ln for ln in train)
    assert any(ln.startswith("wordnet pairs: ") and "pairs (" in ln for ln in res.stderr.splitlines())
    assert "{'loss'" not in log  # the Trainer's per-step dicts are not printed either
    assert ["1", "wordnet"] == markdown_rows(res.stdout)[-1][:2]


def test_a_quiet_piped_sweep_prints_no_progress(tiny_sweep):
    res = cli("-q", "sweep", str(tiny_sweep), "--force", env={"PRIORKIT_PROGRESS_SECONDS": "0"})
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "\r" not in log and " steps (" not in log
    assert not [ln for ln in log.splitlines() if ln.startswith("wordnet pairs: ")]
    assert "| 1 | wordnet |" in res.stdout

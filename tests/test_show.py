"""priorkit show on long input: truncation, the top-cells table, --json, a capped figure."""
from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from priorkit.cli import cli

A = "A man is playing a big guitar on the stage tonight with his friends and a dog."
B = "A woman plays the guitar for her friends on a stage in the evening with a cat."


def run(*args: str):
    result = CliRunner().invoke(cli, ["show", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_long_pair_lists_top_cells_and_says_it_truncated(tmp_path):
    out = tmp_path / "prior.json"
    result = run(A * 3, B * 3, "--max-length", "48", "--top", "5", "--json", str(out))
    assert "note: the input has " in result.output and "showing the first 48 (--max-length)" in result.output
    doc = json.loads(out.read_text())
    assert len(doc["tokens"]) == 48 and np.array(doc["matrix"]).shape == (48, 48)
    assert doc["truncated"] is True and doc["tokens_in_input"] > 48
    assert doc["layout"] == "paper" and doc["provider"]["params"] == {"measure": "xia2021"}
    assert "5 highest of" in result.output and "--all prints the whole 48 x 48 matrix" in result.output
    # the listed cells are the highest cross-sentence values of the matrix, highest first
    # piped (CliRunner is no terminal), the table is Markdown: | a | b | i | j | value |
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in result.output.splitlines()
            if line.count("|") == 6]
    rows = [r for r in rows if r[4].replace(".", "", 1).isdigit()]  # the cells, not the header or rule
    values = [float(r[4]) for r in rows]
    assert len(values) == 5 and values == sorted(values, reverse=True)
    P = np.array(doc["matrix"])
    for r in rows:
        i, j = int(r[2]), int(r[3])
        assert abs(P[i, j] - float(r[4])) < 1e-3
    sep = doc["tokens"].index("[SEP]")
    cross = P[1:sep, sep + 1:-1]
    assert values[0] == round(float(cross.max()), 3)


def test_all_prints_the_matrix_and_json_dash_prints_only_json():
    short = run("A man plays guitar.", "A woman plays the guitar.")
    assert "[CLS]" in short.output and "highest of" not in short.output  # short input: the whole matrix
    full = run(A, B, "--all")
    assert "highest of" not in full.output and full.output.count("| guitar") >= 2
    doc = json.loads(run(A, "--json", "-").output)
    assert doc["layout"] == "full" and len(doc["matrix"]) == len(doc["tokens"])


def test_figure_is_capped(tmp_path):
    from PIL import Image

    from priorkit.viz import plot_prior

    L = 300
    path = plot_prior(np.random.default_rng(0).random((L, L), dtype=np.float32), [f"t{i}" for i in range(L)],
                      tmp_path / "big.png")
    with Image.open(path) as im:
        assert max(im.size) <= 2040


def test_no_knowledge_reads_apart_from_a_perfect_match(plugin_dir, monkeypatch):
    # the trigram plug-in: 1.0 for the same word, NaN ("no knowledge") for a word without a letter;
    # the builder gives both 1.0 (neutral 1), the table must not
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(plugin_dir))
    result = run("cat 123", "cat 123", "--provider", "trigram", "--layout", "full")
    rows = {r[0]: r[1:] for r in ([c.strip() for c in line.split("|")[1:-1]]
                                  for line in result.output.splitlines() if line.startswith("|"))}
    header = rows[""]
    cat, num = header.index("cat"), header.index("123")
    assert rows["cat"][cat] == "1.00"  # a perfect match
    assert rows["cat"][num] == "-" and rows["123"][num] == "-" and rows["123"][cat] == "-"  # no knowledge
    assert "-: no knowledge (the provider knows neither word" in result.output and "neutral 1 there" in result.output
    doc = json.loads(run("cat 123", "cat 123", "--provider", "trigram", "--layout", "full", "--json", "-").output)
    P, known, tokens = np.array(doc["matrix"]), np.array(doc["known"]), doc["tokens"]
    c, n = tokens.index("cat"), tokens.index("123")
    assert P[c, c] == P[c, n] == 1.0 and known[c, c] and not known[c, n]  # the same value, told apart
    # the long-input table ranks only cells with knowledge and counts the others
    long = run(" ".join(["cat 123"] * 15), "--provider", "trigram", "--layout", "full", "--top", "3")
    assert "highest of" in long.output and "with knowledge" in long.output and "more without" in long.output

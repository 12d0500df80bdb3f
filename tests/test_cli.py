"""The core commands, run through Click on real data."""
from __future__ import annotations

import json

from click.testing import CliRunner

from priorkit.cli import cli


def test_show_prints_tokens_and_writes_heatmap(tmp_path, minilm_path):
    out = tmp_path / "prior.png"
    res = CliRunner().invoke(cli, ["show", "A man plays guitar.", "A woman plays the guitar.",
                                   "--tokenizer", str(minilm_path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "woman" in res.output and "[SEP]" in res.output and "paper layout" in res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_show_single_sentence_full_layout(minilm_path):
    res = CliRunner().invoke(cli, ["show", "Myocardial infarction and fever", "--provider", "wordnet",
                                   "--param", "measure=path", "--tokenizer", str(minilm_path)])
    assert res.exit_code == 0, res.output
    assert "full layout" in res.output and "fever" in res.output


def test_providers_json_lists_builtins():
    res = CliRunner().invoke(cli, ["providers", "--json"])
    assert res.exit_code == 0, res.output
    names = {p["name"] for p in json.loads(res.output)}
    assert {"wordnet", "conceptnet", "ontology", "embedding", "combine"} <= names


def test_unknown_provider_is_a_clean_error(minilm_path):
    from priorkit.cli import main
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["show", "a b", "--provider", "nosuch", "--tokenizer", str(minilm_path)])
    assert exc.value.code == 2

"""Judging priors on real WordSim-353 / SimLex-999, through the API and the CLI."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import pearsonr, spearmanr

import priorkit
from priorkit.errors import DataFormatError, PriorkitError, ResourceError
from priorkit.providers.prior_eval import (
    correlations,
    evaluate,
    pair_values,
    parse_provider_arg,
    read_word_pairs,
)
from priorkit.resources import resource_path


def _raw_rows(path):
    """The benchmark rows read with the csv module (the independent reference)."""
    with open(path, encoding="utf-8") as fh:
        return [r for r in csv.reader(fh, delimiter="\t") if r and not r[0].startswith("#")]


@pytest.fixture(scope="module")
def glove():
    return priorkit.get_provider("embedding", vectors="glove")


@pytest.mark.parametrize("name,file,count", [("wordsim353", "wordsim353.tsv", 353),
                                             ("simlex999", "simlex999.txt", 999)])
def test_reads_the_real_benchmarks(name, file, count):
    pairs = read_word_pairs(name)
    rows = _raw_rows(resource_path("wordsim", file))
    assert len(pairs) == len(rows) == count
    assert pairs.name == name
    assert pairs.left == [r[0] for r in rows] and pairs.right == [r[1] for r in rows]
    np.testing.assert_array_equal(pairs.gold, [float(r[2]) for r in rows])
    assert read_word_pairs(resource_path("wordsim", file)).left == pairs.left   # by path too


def test_separators_headers_and_comments(tmp_path):
    comma = tmp_path / "pairs.csv"
    comma.write_text("# my pairs\nword1,word2,score\n\ncat,dog,7.5\n\"ice cream\",dessert,8\n// end\n")
    p = read_word_pairs(comma)
    assert p.left == ["cat", "ice cream"] and p.right == ["dog", "dessert"]
    assert p.gold.tolist() == [7.5, 8.0]
    spaces = tmp_path / "men.txt"
    spaces.write_text("sun sunlight 50.0\nautomobile car 50\n")
    assert read_word_pairs(spaces).gold.tolist() == [50.0, 50.0]
    # the original SimLex-999 layout: a header naming the score column (the 4th)
    original = tmp_path / "SimLex-999.txt"
    original.write_text("word1\tword2\tPOS\tSimLex999\tconc(w1)\nold\tnew\tA\t1.58\t2.72\nsmart\tintelligent\tA\t9.2\t1.75\n")
    assert read_word_pairs(original).gold.tolist() == [1.58, 9.2]


def test_malformed_benchmarks_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("cat\tdog\t7\nbird\tplane\tmany\n")
    with pytest.raises(DataFormatError, match=r"bad\.tsv, line 2: score 'many' \(column 3\) is not a number"):
        read_word_pairs(bad)
    short = tmp_path / "short.tsv"
    short.write_text("cat\tdog\t7\nbird\tplane\n")
    with pytest.raises(DataFormatError, match=r"short\.tsv, line 2: expected word1, word2 and a score"):
        read_word_pairs(short)
    empty = tmp_path / "empty.tsv"
    empty.write_text("# nothing\n")
    with pytest.raises(DataFormatError, match="no word pairs"):
        read_word_pairs(empty)
    with pytest.raises(ResourceError, match="neither a file nor a known name"):
        read_word_pairs("wordsim999")


def test_spearman_equals_scipy_on_real_wordsim(glove):
    pairs = read_word_pairs("wordsim353")
    result = evaluate(glove, pairs, label="glove")
    values = pair_values(glove, pairs.left, pairs.right).astype(np.float64)
    known = ~np.isnan(values)
    assert result.pairs == 353 and result.covered == int(known.sum())
    assert result.coverage == pytest.approx(known.mean())
    assert result.spearman == spearmanr(values[known], pairs.gold[known]).statistic
    assert result.pearson == pearsonr(values[known], pairs.gold[known]).statistic
    assert result.pairs_per_s > 0 and result.fingerprint == glove.fingerprint
    # the grouped calls give the values of one call per pair (BLAS rounding aside)
    single = np.array([glove.similarity([a], [b])[0, 0] for a, b in zip(pairs.left, pairs.right)])
    np.testing.assert_allclose(values, single, atol=1e-6, equal_nan=True)


def test_full_spearman_fills_unknown_pairs():
    gold = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    values = np.array([0.1, np.nan, 0.3, 0.2, np.nan, 0.9])
    stats = correlations(values, gold)
    median = np.median([0.1, 0.3, 0.2, 0.9])
    assert stats["neutral"] == median
    assert stats["spearman_full"] == pytest.approx(
        spearmanr(np.where(np.isnan(values), median, values), gold).statistic)
    assert stats["spearman"] == pytest.approx(spearmanr([0.1, 0.3, 0.2, 0.9], [1, 3, 4, 6]).statistic)
    zero = correlations(values, gold, neutral=0.0)
    assert zero["spearman_full"] == pytest.approx(
        spearmanr(np.nan_to_num(values, nan=0.0), gold).statistic)
    assert stats["coverage"] == pytest.approx(4 / 6)


def test_pair_values_equal_the_matrix_diagonal(glove):
    pairs = read_word_pairs("simlex999")
    left, right = pairs.left[:60], pairs.right[:60]
    got = pair_values(glove, left, right)
    full = glove.similarity(left, right)
    np.testing.assert_allclose(got, np.diagonal(full), atol=1e-6)


def test_provider_argument_parsing():
    assert parse_provider_arg("wordnet") == ("wordnet", {})
    assert parse_provider_arg("wordnet:measure=wup") == ("wordnet", {"measure": "wup"})
    assert parse_provider_arg('combine:providers=["embedding",{"name":"conceptnet","hops":1}],how=max') == \
        ("combine", {"providers": ["embedding", {"name": "conceptnet", "hops": 1}], "how": "max"})
    assert parse_provider_arg("conceptnet:min_weight=2,lemmatize=false") == \
        ("conceptnet", {"min_weight": 2, "lemmatize": False})
    with pytest.raises(PriorkitError, match="not key=value"):
        parse_provider_arg("wordnet:wup")
    with pytest.raises(PriorkitError, match="unbalanced"):
        parse_provider_arg("combine:providers=[a,b")


def test_cli_table_and_json(tmp_path, glove):
    from priorkit.cli import cli

    out = tmp_path / "res.json"
    runner = CliRunner()
    res = runner.invoke(cli, ["eval-prior", "-p", "embedding:vectors=glove", "-p", "conceptnet:hops=1",
                              "-b", "wordsim353", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "embedding:vectors=glove" in res.output and "conceptnet:hops=1" in res.output
    data = json.loads(out.read_text())
    rows = {r["provider"]: r for r in data["results"]}
    want = evaluate(glove, read_word_pairs("wordsim353"))
    assert rows["embedding:vectors=glove"]["spearman"] == pytest.approx(want.spearman, abs=1e-12)
    assert rows["embedding:vectors=glove"]["coverage"] == pytest.approx(want.coverage)
    assert rows["conceptnet:hops=1"]["benchmark"] == "wordsim353"

    res = runner.invoke(cli, ["eval-prior", "-p", "embedding:vectors=glove", "--json", "-"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert {r["benchmark"] for r in data["results"]} == {"wordsim353", "simlex999"}


def test_cli_reports_bad_provider_arguments():
    from priorkit.cli import cli

    res = CliRunner().invoke(cli, ["eval-prior", "-p", "conceptnett", "-b", "wordsim353"])
    assert res.exit_code != 0
    assert isinstance(res.exception, priorkit.UnknownProviderError)
    assert "conceptnet" in str(res.exception)
    res = CliRunner().invoke(cli, ["eval-prior", "-b", "wordsim353"])
    assert res.exit_code == 2 and "--provider" in res.output

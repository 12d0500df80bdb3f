"""Claims generated from files: the measured tables of README.md, docs/benchmarks.md and docs/archive/.

* Every ``<!-- claims:begin NAME -->`` block of README.md, docs/*.md and docs/archive/*.md equals what
  ``lab.claims`` renders from ``docs/results/`` (``benchmarks/claims.py``
  rewrites them), and every renderer has its block: no measured table can drift from its file.
* The README's measured section holds no number outside its generated block.
* The claims the files refute stay out: no learned arm beats the dictionary merged afterwards
  below 10%, and at 10% the attention prior is below it.
* The renderers compute what they say, on a small file made here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import lab.claims as claims
from lab.claims import knowledge as claims_knowledge
from lab.claims import BLOCKS, MARKER, Results, update_claims
from priorkit.stats import paired

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "archive").glob("*.md"))]


def test_the_docs_claims_are_generated_from_the_files():
    res = Results(RESULTS)
    used = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        new, names = update_claims(text, RESULTS, res)
        assert new == text, f"{doc.name}: a claims block differs from its files; run `python benchmarks/claims.py`"
        used += names
    assert sorted(set(used)) == sorted(BLOCKS), "every claims renderer has its block in the docs"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "<!-- claims:begin readme -->" in readme
    assert "<!-- claims:begin curve-scores -->" in (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def test_the_readme_measured_section_has_no_number_outside_its_generated_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## What knowledge does (measured)", 1)[1].split("\n## ", 1)[0]
    assert "<!-- claims:begin readme -->" in section and "[read 1](docs/results/test-reads.csv#L2)" in section
    assert "claims:begin earlier-readme" not in text, "results read before the ledger stay out of the README"
    rest = MARKER.sub("", section)
    assert re.findall(r"[+-]?\d+\.\d+", rest) == [], "a measured number written by hand in the README"
    assert len(section.splitlines()) < 40, "the measured section stays short"


def test_the_merge_claims_follow_the_files():
    res = Results(RESULTS)
    # below 10% the dictionary merged afterwards beats every learned arm; from 10% on it does not
    assert claims.merge_beats_all(res) == [0.01, 0.02, 0.05]
    s = res.scores(claims.CURVE)
    attention = claims.compare(s, "attention", "dict-override", 0.1).stats
    assert round(attention.mean, 2) == -3.85 and attention.ci_high < 0
    assert claims.compare(s, "features", "dict-override", 0.1).stats.ci_low > 0
    for doc in (ROOT / "README.md", ROOT / "docs" / "benchmarks.md", *(ROOT / "docs" / "archive").glob("*.md")):
        text = " ".join(doc.read_text(encoding="utf-8").split())
        assert "Every learned arm beats the dictionary merged" not in text
        assert "**Every learned arm beats the cheap baseline**" not in text
    earlier = " ".join((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").split())
    assert "at 1, 2 and 5% it beats every learned arm" in earlier
    assert f"still beats the attention prior ({attention.mean:+.2f} [{attention.ci_low:+.2f}," in earlier


# ---- the renderers on a small file -----------------------------------------------------------
ROWS = """prior,fraction,seed,test_f1,test_f1_Chemical,test_f1_Disease,train_seconds,prior_shift
none,0.1,0,0.50,0.6,0.4,10,
none,0.1,1,0.60,0.7,0.5,12,
none,0.1,2,0.55,0.6,0.5,14,
features,0.1,0,0.52,0.6,0.44,20,
features,0.1,1,0.64,0.7,0.58,22,
features,0.1,2,0.61,0.7,0.52,24,
dict-override,0.1,0,0.70,0.7,0.7,0.0,
dict-override,0.1,1,0.70,0.7,0.7,0.0,
features,1,0,0.80,0.8,0.8,100,
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "x-results.csv").write_text(ROWS)
    return tmp_path


def test_scores_and_deltas_tables_compute_what_they_say(folder):
    res = Results(folder)
    rows, s = res.rows("x-results.csv"), res.scores("x-results.csv")
    assert s[("features", 0.1)] == pytest.approx({0: 52.0, 1: 64.0, 2: 61.0})
    lines = claims.scores_markdown(rows, s, ["none", "features", "absent", "dict-override"]).splitlines()
    assert lines[0] == "| fraction | none | features | dict-override | train s/run |"
    # none: mean 55, sd 5; features 59 (sd 6.24...); dict-override 70 over 2 seeds; seconds: mean of
    # the trained runs only (10..24 -> 17), the post-hoc rows' 0 left out
    assert lines[2] == "| 10% | 55.00 (5.00, 3) | 59.00 (6.24, 3) | 70.00 (0.00, 2) | 17 |"
    assert lines[3] == "| 100% | - | 80.00 (1) | - | 100 |"
    d = claims.deltas_markdown(s, [("features", "none"), ("features", "dict-override"), ("both", "none")])
    p = paired([2.0, 4.0, 6.0])
    head, _, ten, hundred = d.splitlines()
    assert head == "| fraction | features − none | features − dict-override |"
    assert ten == f"| 10% | +4.00 [{p.ci_low:+.2f}, {p.ci_high:+.2f}] 3/3 | -12.00 [{paired([-18.0, -6.0]).ci_low:+.2f}, " \
                  f"{paired([-18.0, -6.0]).ci_high:+.2f}] 0/2 |"
    assert hundred == "| 100% | - | - |"  # one seed, or no baseline: no CI


def test_a_stale_block_is_rewritten_and_an_unknown_one_refused(folder, monkeypatch):
    monkeypatch.setitem(BLOCKS, "tiny", lambda res: claims.deltas_markdown(res.scores("x-results.csv"),
                                                                          [("features", "none")]))
    text = "before\n<!-- claims:begin tiny -->\n| stale |\n<!-- claims:end -->\nafter\n"
    new, used = update_claims(text, folder)
    assert used == ["tiny"] and "| stale |" not in new and "+4.00" in new
    assert new.startswith("before\n<!-- claims:begin tiny -->\n| fraction |") and new.endswith("<!-- claims:end -->\nafter\n")
    assert update_claims(new, folder) == (new, ["tiny"])
    with pytest.raises(KeyError, match="unknown claims block 'nope'"):
        update_claims("<!-- claims:begin nope -->\n<!-- claims:end -->", folder)


def test_a_runs_csv_without_a_fraction_column_takes_the_given_fraction(tmp_path):
    (tmp_path / "r.csv").write_text("arm,seed,test_f1\nnone,0,0.5\nsilver,0,0.7\n")
    rows = claims.read_runs(tmp_path / "r.csv", fraction=0.1)
    assert [(r["prior"], r["fraction"], r["seed"], r["test_f1"]) for r in rows] == [("none", 0.1, 0, 0.5),
                                                                                   ("silver", 0.1, 0, 0.7)]


def test_gain_tables_average_each_arm_and_put_the_dictionary_last(tmp_path):
    (tmp_path / "d.csv").write_text("prior,fraction,seed,precision,recall,f1,recall_dict,recall_other,coverage\n"
                                    "dictionary alone,0.1000,-,80.0000,50.0000,61.5385,100.0000,0.0000,50.0000\n"
                                    "features,0.1000,0,70.0000,60.0000,64.6154,90.0000,30.0000,50.0000\n"
                                    "features,0.1000,1,72.0000,62.0000,66.6269,92.0000,32.0000,50.0000\n")
    res = Results(tmp_path)
    lines = claims.gain_markdown(claims._by_arm(res.csv("d.csv"))).splitlines()
    assert lines[0] == "| arm | F1 | precision | recall | recall inside | recall outside |"
    assert lines[2:] == ["| features | 65.62 | 71.00 | 61.00 | 91.00 | 31.00 |",
                         "| dictionary alone | 61.54 | 80.00 | 50.00 | 100.00 | 0.00 |"]


CALIBRATION_HEAD = ("pipeline,prior,fraction,seed,sentences,threshold,prior_strength,dropped,precision,recall,f1,"
                    "calibrated_precision,calibrated_recall,calibrated_f1,silver_weight,silver_unmatched_weight,warning\n")


def test_the_calibration_table_has_one_row_per_regime_and_seed_and_refuses_runs_that_disagree(tmp_path, monkeypatch):
    monkeypatch.setattr(claims_knowledge, "CALIBRATION", "c.csv")
    row = "bc5cdr-weak,{arm},0.1,1,456,0.5,2.0,6,77.0035,47.8355,59.0120,78.5455,46.7532,58.6160,{w}\n"
    (tmp_path / "c.csv").write_text(CALIBRATION_HEAD + row.format(arm="features", w=",,")
                                    + row.format(arm="silver", w="0.5862,0.4675,yes"))
    lines = claims_knowledge.knowledge_calibration(Results(tmp_path)).splitlines()
    assert lines[2:] == ["| Disease, HPO alone | 1 | 77.0 / 47.8 / 59.0 | 78.5 / 46.8 / 58.6 | 6 | 0.59 / 0.47 (warned) |"]
    (tmp_path / "c.csv").write_text(CALIBRATION_HEAD + row.format(arm="features", w=",,")
                                    + row.format(arm="silver", w=",,").replace(",6,", ",7,"))
    with pytest.raises(ValueError, match="bc5cdr-weak seed 1 disagree"):
        claims_knowledge.knowledge_calibration(Results(tmp_path))


def test_the_threshold_table_gives_means_and_the_range_over_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(claims_knowledge, "THRESHOLDS", "t.csv")
    (tmp_path / "t.csv").write_text("pipeline,fraction,seed,sentences,threshold,prior_strength,dropped,precision,recall,f1\n"
                                    "bc5cdr-knowledge,0.1,0,456,0.0,2.0,0,70.0,70.0,70.0\n"
                                    "bc5cdr-knowledge,0.1,1,456,0.0,2.0,0,72.0,72.0,72.0\n"
                                    "bc5cdr-knowledge,0.1,0,456,0.5,2.0,140,80.0,70.0,74.0\n"
                                    "bc5cdr-knowledge,0.1,1,456,0.5,2.0,150,82.0,70.0,76.0\n")
    lines = claims_knowledge.calibration_thresholds(Results(tmp_path)).splitlines()
    assert lines[2:] == ["| BC5CDR, HPO + MeSH | - (as it is) | 0 | 71.0 | 71.0 | 71.0 (70.0-72.0) | 2 |",
                         "| BC5CDR, HPO + MeSH | 0.5 | 140-150 | 81.0 | 70.0 | 75.0 (74.0-76.0) | 2 |"]


def test_the_tagging_tables_follow_their_files(tmp_path):
    """Every number of the tagging tables is read from docs/results/tagging-*.json: change a file and
    the tables change (a target missed, a slower Dask run, a GPU measured)."""
    import json
    import shutil

    from lab.claims import tagging

    for name in (tagging.THROUGHPUT, tagging.MEMORY, tagging.TRIM, tagging.KILL, tagging.DASK, tagging.BAD,
                 tagging.GPU):
        shutil.copy(RESULTS / name, tmp_path / name)
    assert tagging.memory_slope(json.loads((RESULTS / tagging.MEMORY).read_text())) == 25
    tp = json.loads((tmp_path / tagging.THROUGHPUT).read_text())
    tp["ratio_recipe_to_hf"], tp["systems"]["hf"]["sentences_per_second"] = 2.5, 12.34
    (tmp_path / tagging.THROUGHPUT).write_text(json.dumps(tp))
    gpu = json.loads((tmp_path / tagging.GPU).read_text())
    gpu["cuda"] = True
    gpu["runs"].append({"device": "cuda", "precision": "bf16", "batch_size": 64, "documents": 600,
                        "documents_per_second": 512.0})
    (tmp_path / tagging.GPU).write_text(json.dumps(gpu))
    table = tagging.tagging_table(Results(tmp_path))
    assert "pipeline 12.3 sentences/s" in table and "the recipe 42.8 (**2.50x**, target 2.4x)" in table
    assert "512.0 documents/s at batch 64 (cuda, bf16)" in table and "no GPU here" not in table
    scaling = tagging.tagging_scaling(Results(tmp_path))
    assert "features **met**; recipe **missed** (on 800 sentences)" in scaling


def test_the_demo_blocks_read_a_demo_runs_summary_json(tmp_path):
    """A later demo run's summary.json (no trial log, no cold index) renders too; a recipe that beats
    the dictionary is said to."""
    import json

    from lab.claims import demo

    d = json.loads((RESULTS / demo.DEMO).read_text())
    for key in ("extracted_from", "extracted_note", "trial", "cold_index"):
        d.pop(key, None)
    d["written"] = "2027-01-02T03:04:05Z"
    d["rows"][0]["f1"] = 85.0
    d["verdict"].update(delta=4.26, ci=[1.5, 7.0], outcome="beats")
    (tmp_path / demo.DEMO).write_text(json.dumps(d))
    res = Results(tmp_path)
    readme = demo.demo_readme(res)
    assert "the recipe tags better than the calibrated dictionary (85.00 against 80.74 F1 on\n300" in readme
    run = demo.demo_run(res)
    assert f"Measured 2027-01-02:\n**{d['seconds']['after_bootstrap']} s** after the bootstrap" in run
    assert "empty home" not in run and "under `exclusive`" not in run
    assert run.endswith("The numbers: [results/demo-bc5cdr.json](results/demo-bc5cdr.json); the earlier trials, each "
                        "with its whole output: [results/demo-bc5cdr.md](results/demo-bc5cdr.md).\n")
    table = demo.demo_table(res)
    assert table.endswith("The recipe BEATS the strongest dictionary row (the dictionary alone, calibrated, read as a "
                          "document): +4.26 F1, 95% CI [+1.50, +7.00], the CI above 0.\n")
    assert "| **the recipe**: st-mix, then the dictionary read as a document | 85.00 |  |  |" in table


def test_a_demo_trial_without_the_load_before_says_why(tmp_path):
    """A trial whose load before was not recorded prints the load after and the trial's note instead."""
    import json

    from lab.claims import demo

    d = json.loads((RESULTS / demo.DEMO).read_text())
    d["trial"].update(load_before=None, load_after=1.5, note="right after another job")
    (tmp_path / demo.DEMO).write_text(json.dumps(d))
    run = demo.demo_run(Results(tmp_path))
    assert "load 1.50 after (right after another job)" in run and " before / " not in run
    d["trial"].update(load_before=0.25)
    (tmp_path / demo.DEMO).write_text(json.dumps(d))
    assert "load 0.25 before / 1.50 after" in demo.demo_run(Results(tmp_path))

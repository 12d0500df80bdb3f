"""The main job (scripts/demo.sh): its pipeline is the recipe of record (pipelines/bc5cdr-mix.yaml)
on a small slice, and its closing summary (scripts/demo_summary.py) prints the recipe beside no
knowledge and the dictionary rows with its paired Δ and CI, a plain verdict, and a raw abstract
tagged by the recipe folder.  The 5-minute job itself is not run here: the summary is checked on
a tiny real sweep of the same pipeline file (a 2-layer BERT, the hand-made ontology)."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from priorkit.config import load_config, prior_settings

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "pipelines" / "demo-bc5cdr.yaml"
MINI = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"
ABSTRACT = ROOT / "data" / "examples" / "bc5cdr-abstract.txt"


def _summary():
    spec = importlib.util.spec_from_file_location("demo_summary", ROOT / "scripts" / "demo_summary.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_demo_pipeline_is_the_recipe_of_record_on_a_slice():
    demo, mix = load_config(DEMO), load_config(ROOT / "pipelines" / "bc5cdr-mix.yaml")
    mine, theirs = prior_settings(demo), prior_settings(mix)
    # the record's arms the demo trains (not its extra baseline st-nok: self-training without knowledge)
    assert list(mine) == ["none", "st-branch", "st-nofeat"] and set(mine) <= set(theirs)
    for arm in mine:  # every student's settings, the calibration and the teacher's included
        a = None if mine[arm] is None else {k: v for k, v in mine[arm].to_dict().items() if k != "cache"}
        b = None if theirs[arm] is None else {k: v for k, v in theirs[arm].to_dict().items() if k != "cache"}
        assert a == b, arm
    assert demo.sweep.posthoc == mix.sweep.posthoc and list(demo.sweep.posthoc) == ["st-mix", "st-mix-doc"]
    assert (demo.task.decode, demo.task.o_bias, demo.task.dictionary_types) == \
        (mix.task.decode, mix.task.o_bias, mix.task.dictionary_types)
    for field in ("learning_rate", "batch_size", "warmup", "group_by_length"):
        assert getattr(demo.train, field) == getattr(mix.train, field), field
    assert demo.train.keep_model and demo.sweep.baseline == "none" and demo.sweep.split == "test"
    # the slice: gold from train, the students' text from devel (neither the gold nor test), test scored
    assert demo.data.train.split == "train" and demo.data.train.sample
    assert demo.data.unlabeled.split == "devel" and demo.data.unlabeled.sample and demo.data.eval is None
    assert demo.data.test.split == "test" and demo.evaluate == ["test"]
    header = DEMO.read_text().split("\nname:")[0]
    assert "SLICE_TEXT" not in header and "5 minutes" in header


def test_the_results_table_pairs_the_recipe_with_every_row():
    m = _summary()
    scores = {("st-mix-doc", 1.0): {0: 80.0}, ("none", 1.0): {0: 50.0},
              ("dictionary-calibrated-doc", 1.0): {0: 78.5}}
    cis = {"none": (25.0, 35.0), "dictionary-calibrated-doc": (-1.0, 4.0)}
    lines = m.results_table(scores, 1.0, cis, extra={"none": (40.0, 60.0)}).splitlines()
    assert lines[0] == "| row | entity F1 | P | R | recipe − row | 95% CI (sentences) |"
    assert lines[2].startswith("| **the recipe**") and lines[2].endswith("| 80.00 | nan | nan |  |  |")
    assert lines[3] == "| no knowledge (MiniLM on the gold alone) | 50.00 | 40.0 | 60.0 | +30.00 | [+25.00, +35.00] |"
    assert lines[4].endswith("| 78.50 | nan | nan | +1.50 | [-1.00, +4.00] |") and len(lines) == 5
    # two seeds: each seed's F1, the t CI over seeds and the seeds ahead
    scores2 = {("st-mix-doc", 1.0): {0: 80.0, 1: 82.0}, ("none", 1.0): {0: 50.0, 1: 56.0}}
    lines = m.results_table(scores2, 1.0, {"none": (20.0, 35.0)}).splitlines()
    assert lines[0].endswith("| 95% CI (sentences + seeds) | 95% CI (seeds, t) | seeds recipe ahead |")
    assert "| 53.00 (50.00 56.00) |" in lines[3] and lines[3].endswith("| 2/2 |") and "| +28.00 |" in lines[3]


def test_the_verdict_names_the_strongest_dictionary_and_says_plainly_when_the_recipe_loses():
    m = _summary()
    scores = {("st-mix-doc", 1.0): {0: 80.0}, ("dictionary-alone", 1.0): {0: 72.0},
              ("dictionary-calibrated-doc", 1.0): {0: 78.0}}
    ahead = m.verdict(scores, 1.0, {"dictionary-calibrated-doc": (0.5, 3.5)})
    assert ahead.startswith("The recipe BEATS the strongest dictionary row (the dictionary alone, calibrated, read as")
    assert "+2.00 F1, 95% CI [+0.50, +3.50]" in ahead
    unsure = m.verdict(scores, 1.0, {"dictionary-calibrated-doc": (-0.5, 4.5)})
    assert "is not shown to beat the dictionary" in unsure
    scores[("dictionary-alone", 1.0)] = {0: 81.0}  # now the plain dictionary is the strongest, and ahead
    behind = m.verdict(scores, 1.0, {"dictionary-alone": (-3.0, 1.0)})
    assert behind.startswith("The recipe does NOT beat the strongest dictionary row (the dictionary alone (HPO")
    assert "-1.00 F1" in behind


def test_summary_json_holds_every_row_the_verdict_and_the_recall_as_numbers():
    """summary.json (summary_record): what summary.md shows, unrounded; the kept
    docs/results/demo-bc5cdr.json (a demo run's summary.json, plus its trial) has the same layout."""
    from priorkit.evaluation.dictionary_recall import DictionaryRecall, recall_table

    m = _summary()
    scores = {("st-mix-doc", 1.0): {0: 80.0}, ("none", 1.0): {0: 50.0},
              ("dictionary-calibrated-doc", 1.0): {0: 78.5}}
    cis = {"none": (25.0, 35.0), "dictionary-calibrated-doc": (-1.0, 4.0)}
    recalls = {"the recipe": [DictionaryRecall(gold_dict=8, found_dict=6, gold_other=2, found_other=1, pred_other=4,
                                               right_other=1)],
               "the dictionary alone": [DictionaryRecall(gold_dict=8, found_dict=8, gold_other=2)]}
    about = dict.fromkeys(m.ABOUT) | {"seconds": {"training": 12}}
    d = m.summary_record(scores, 1.0, cis, extra={"none": (40.0, 60.0)}, recalls=recalls, **about)
    json.dumps(d, allow_nan=False)  # no NaN: a missing precision is null
    rows = {r["name"]: r for r in d["rows"]}
    assert list(rows) == ["st-mix-doc", "none", "dictionary-calibrated-doc"]
    assert rows["st-mix-doc"]["f1"] == 80.0 and rows["st-mix-doc"]["delta"] is None
    assert rows["st-mix-doc"]["precision"] is None and rows["st-mix-doc"]["ci"] is None
    assert rows["none"] == {"name": "none", "label": "no knowledge (MiniLM on the gold alone)", "f1": 50.0,
                            "f1_by_seed": {"0": 50.0}, "precision": 40.0, "recall": 60.0, "delta": 30.0,
                            "ci": [25.0, 35.0], "ci_seeds": None, "seeds_ahead": 1, "seeds_paired": 1}
    assert d["verdict"] == {"row": "dictionary-calibrated-doc", "delta": 1.5, "ci": [-1.0, 4.0], "outcome": "ahead",
                            "text": m.verdict(scores, 1.0, cis)}
    assert d["recall"]["gold_dict"] == 8 and d["recall"]["gold"] == 10 and d["recall"]["coverage"] == 80.0
    recipe, alone = d["recall"]["arms"]
    assert recipe == {"arm": "the recipe", "runs": 1, "recall_dict": 75.0, "recall_other": 50.0,
                      "recall_boundary": 0.0, "recall_unseen": 50.0, "recall": 70.0, "precision_other": 25.0}
    assert alone["precision_other"] is None  # recall_table's "-"
    assert recall_table(recalls).splitlines()[2] == "| the recipe | 1 | 75.0 | 50.0 | 0.0 | 50.0 | 70.0 | 25.0 |"
    assert d["seconds"] == {"training": 12} and d["schema"] == m.SCHEMA
    # the kept file (a demo run's summary.json): the same keys, plus what no run writes (the trial's
    # queue and load, the cold index)
    kept = json.loads((ROOT / "docs" / "results" / "demo-bc5cdr.json").read_text())
    assert kept["schema"] == m.SCHEMA and set(kept) - {"trial", "cold_index"} == set(d)
    assert all(set(r) == set(rows["none"]) for r in kept["rows"])
    assert set(kept["verdict"]) == set(d["verdict"]) and set(kept["recall"]) == set(d["recall"])
    assert all(set(a) == set(recipe) for a in kept["recall"]["arms"])


def test_the_abstract_is_checked_against_its_gold_entities():
    m = _summary()
    text = ABSTRACT.read_text()
    gold = m.gold_entities(text)
    assert len(gold) == 17 and (0, 18, "Disease") in gold and (72, 82, "Chemical") in gold
    assert all(text[s:e].strip() == text[s:e] for s, e, _ in gold)
    assert m.gold_entities("Another text entirely.") is None
    record = {"text": text, "entities": [
        {"start": 72, "end": 82, "text": "dobutamine", "type": "Chemical", "score": 0.97,
         "concept_ids": ["MESH:D004280"], "source": "model"},
        {"start": 0, "end": 42, "text": text[:42], "type": "Disease", "score": 0.6, "concept_ids": [],
         "source": "model"}]}
    table = m.entities_table(record, gold).splitlines()
    assert table[2] == "| 0 | 42 | Torsade de pointes ventricular tachycardia | Disease | - | 0.60 | model | no |"
    assert table[3] == "| 72 | 82 | dobutamine | Chemical | MESH:D004280 | 0.97 | model | yes |"
    assert table[5].startswith("1 of the 2 entities are gold entities (same offsets and type); the abstract has 17: "
                               "missed 'Torsade de pointes' (Disease, 0-18)")
    record["entities"][0]["start"] = 1  # an offset that does not hold is not printed as if it did
    with pytest.raises(AssertionError):
        m.entities_table(record, gold)


def _conll(path: Path, sentences: list[tuple[str, dict]], copies: int) -> Path:
    lines = []
    for _ in range(copies):
        for text, tags in sentences:
            lines += [f"{w}\t{tags.get(i, 'O')}" for i, w in enumerate(text.split())] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


SENTENCES = [
    ("Cor pulmonale was seen in two patients .", {0: "B-Disease", 1: "I-Disease"}),
    ("The arrhythmia worsened after pneumonia .", {1: "B-Disease", 4: "B-Disease"}),
    ("She developed arrhythmia and tachycardia .", {2: "B-Disease", 4: "B-Disease"}),
    ("The dose was doubled .", {}),
    ("Ventricular tachycardia stopped after two days .", {0: "B-Disease", 1: "I-Disease"}),
]


def test_the_summary_of_a_tiny_real_demo_sweep(tmp_path, tiny_bert_dir, capsys):
    """The demo's pipeline file with a tiny model, data and ontology: the sweep (students,
    post-hoc arms, baselines), the recipe exported and tagging a raw text through the CLI, then
    the summary: every row with the recipe's Δ and a bootstrap CI, the verdict, the entities."""
    from click.testing import CliRunner

    from priorkit.cli import cli

    onto = tmp_path / "onto"
    onto.mkdir()
    shutil.copyfile(MINI, onto / "mini.obo")
    params = f"{{path: {onto / 'mini.obo'}, cache: false}}"
    train = _conll(tmp_path / "train.conll", SENTENCES, 3)
    test = _conll(tmp_path / "test.conll", SENTENCES[::-1], 2)
    unlabeled = _conll(tmp_path / "unlabeled.conll", SENTENCES[1:], 2)
    sets = [f"output_dir={tmp_path / 'runs'}", f"model.name_or_path={tiny_bert_dir}", "model.max_length=32",
            f"data.train={{path: {train}, format: conll}}", f"data.test={{path: {test}, format: conll}}",
            f"data.unlabeled={{path: {unlabeled}, format: conll}}", "data.transductive=true",
            f"prior.params={params}", "task.dictionary_types={mini: Disease}", "prior.silver.types={mini: Disease}", "train.epochs=20", "task.o_bias=0",
            "train.batch_size=8", "train.threads=1", "train.learning_rate=5.0e-3", "prior.train.learning_rate=5.0e-3",
            f"sweep.posthoc.st-mix-doc.params={params}"]
    args = [a for s in sets for a in ("--set", s)]
    res = CliRunner().invoke(cli, ["-q", "sweep", str(DEMO), *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    recipe, raw, tagged = tmp_path / "recipe", tmp_path / "abstract.txt", tmp_path / "abstract.jsonl"
    res = CliRunner().invoke(cli, ["-q", "export", str(DEMO), "--arm", "st-mix-doc", "--out", str(recipe), *args],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    raw.write_text("The patient developed arrhythmia. Pneumonia followed.\n")
    res = CliRunner().invoke(cli, ["-q", "predict", str(recipe), str(raw), "--out", str(tagged)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output

    m = _summary()
    capsys.readouterr()
    assert m.main([str(DEMO), *args, "--tagged", str(tagged), "--recipe", str(recipe), "--abstract", str(raw),
                   "--timing", "training=12"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert (tmp_path / "runs" / "summary.md").read_text().strip() == out.strip()
    data = json.loads((tmp_path / "runs" / "summary.json").read_text())  # the same numbers, for machines
    assert data["seconds"] == {"training": 12} and data["seeds"] == [0] and data["pipeline"] == "demo-bc5cdr"
    for r in data["rows"]:
        line = next(line for line in lines if line.startswith(f"| {r['label']} | "))
        cells = line.split(" | ")
        assert cells[1] == f"{r['f1']:.2f}" and cells[4] == ("" if r["delta"] is None else f"{r['delta']:+.2f}")
    assert data["verdict"]["text"] in out and data["abstract"]["characters"] == len(raw.read_text())
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}
    for label in ("**the recipe**: st-mix, then the dictionary read as a document", "no knowledge (MiniLM on the gold alone)",
                  "the dictionary alone (HPO+MeSH matches, no model)", "the dictionary alone, read as a document",
                  "the dictionary alone, calibrated on the gold", "the dictionary alone, calibrated, read as a document"):
        assert label in rows, label
    none = rows["no knowledge (MiniLM on the gold alone)"].split(" | ")
    assert none[4][0] in "+-" and none[5].startswith("[") and none[5].count(",") == 1  # Δ and its bootstrap CI
    recipe_f1 = float(rows["**the recipe**: st-mix, then the dictionary read as a document"].split(" | ")[1])
    assert float(none[4]) == pytest.approx(recipe_f1 - float(none[1]), abs=0.011)
    assert "a paired bootstrap over the test sentences (one seed" in out
    assert any(line.startswith("The recipe ") and "the strongest dictionary row" in line for line in lines)
    record = json.loads(tagged.read_text().splitlines()[0])
    assert f"A raw abstract ({raw}, {len(record['text'])} characters, not CoNLL)" in out
    assert "| start | end | text | type | concept IDs | score | source |" in out  # not BC5CDR's: no gold column
    assert record["entities"]  # the tiny recipe learned its sentences: the table is not empty
    for e in record["entities"]:
        assert f"| {e['start']} | {e['end']} | {e['text']} | {e['type']} | {', '.join(e['concept_ids'])} |" in out
    assert "the two students mixed 0.6 / 0.4 word by word, viterbi, O bias 0" in rows


@pytest.mark.parametrize("script", ["demo.sh"])
def test_demo_sh_runs_the_recipe_tags_the_abstract_and_keeps_the_stsb_setting(script):
    text = (ROOT / "scripts" / script).read_text()
    assert "pipelines/demo-bc5cdr.yaml" in text and 'if [ "${1:-}" = stsb ]' in text
    assert "sweep pipelines/demo.yaml" in text and "scripts/demo_summary.py" in text
    assert "export \"$P\" --arm st-mix-doc" in text and "predict \"$out/recipe\" \"$ABSTRACT\"" in text
    assert "ABSTRACT=data/examples/bc5cdr-abstract.txt" in text and ABSTRACT.exists()

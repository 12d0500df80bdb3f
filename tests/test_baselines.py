"""Issue 48: the baselines every NER sweep reports (the dictionary alone, calibrated like the
recipe, read by sentence and as a document; no knowledge decoded like a mix arm), the warning on
runs that find (almost) nothing, and the sealed test split (a final read, its ledger line).

A tiny real sweep (random 2-layer BERT, CoNLL files, the hand-made mini ontology), every number
checked against its hand computation from the same parts."""
from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

MINI = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"
TYPES = {"mini": "Disease"}
#: "tachycardia" is a Disease only in some sentences, so a calibration on a gold subset can drop it
SENTENCES = [
    ("The patient had arrhythmia after the dose .", {3: "Disease"}),
    ("Pneumonia was treated with aspirin .", {0: "Disease", 4: "Chemical"}),
    ("No cardiomyopathy was seen .", {1: "Disease"}),
    ("The tachycardia study enrolled adults .", {}),
    ("She developed pneumonia and arrhythmia .", {2: "Disease", 4: "Disease"}),
    ("Tachycardia clinics reported the dose .", {}),
    ("Cor pulmonale ( CP ) was seen .", {0: "Disease", 1: "Disease", 3: "Disease"}),
    ("The CP worsened after tachycardia .", {1: "Disease", 4: "Disease"}),
]


def _conll(path, copies, sentences=SENTENCES):
    lines = []
    for _ in range(copies):
        for text, ents in sentences:
            words = text.split()
            for i, w in enumerate(words):
                if i in ents:
                    tag = ("I-" if i - 1 in ents and ents[i - 1] == ents[i] and words[i - 1] != "(" and i != 3
                           else "B-") + ents[i]
                else:
                    tag = "O"
                lines.append(f"{w}\t{tag}")
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def _pipeline(tmp_path, tiny_bert_dir):
    train, devel, test = (_conll(tmp_path / f"{n}.conll", k) for n, k in (("train", 4), ("devel", 2), ("test", 3)))
    params = f"{{path: {MINI}, cache: false}}"
    raw = yaml.safe_load(textwrap.dedent(f"""\
        name: tiny-baselines
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: token-classification}}
        data:
          train: {{path: {train}, format: conll}}
          eval: {{path: {devel}, format: conll}}
          test: {{path: {test}, format: conll}}
        evaluate: [eval]
        prior: {{name: features, provider: ontology, params: {params}, layout: full, attention: null,
                 features: {{}}, calibrate: {{threshold: 0.5, types: {{mini: Disease}}}}}}
        train: {{epochs: 2, batch_size: 8, learning_rate: 1.0e-3, progress: false, logging_steps: 100,
                 threads: 1, save: "no", subset: per-seed, keep_model: true}}
        sweep:
          fractions: [0.5]
          seeds: [0, 1]
          priors: {{none: null, features: {{}}}}
          posthoc:
            mixed: {{of: features, mix: [none], weights: [0.7, 0.3], decode: viterbi, o_bias: 0.5}}
            doc: {{of: none, merge: union, provider: ontology, params: {params}, types: {{mini: Disease}},
                   document: 2}}
          dictionary: {{provider: ontology, params: {params}, types: {{mini: Disease}}}}
          split: eval
        """))
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _blocks(path):
    blocks = [b for b in path.read_text().strip().split("\n\n") if b.strip()]
    words = [[ln.split("\t")[0] for ln in b.split("\n")] for b in blocks]
    tags = [[ln.split("\t")[1] for ln in b.split("\n")] for b in blocks]
    return words, tags


@pytest.fixture(scope="module")
def swept(tmp_path_factory, tiny_bert_dir):
    """The devel sweep, run once through the command line."""
    from click.testing import CliRunner

    from priorkit.cli import cli

    tmp = tmp_path_factory.mktemp("baselines")
    path = _pipeline(tmp, tiny_bert_dir)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        res = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    finally:
        torch.set_num_threads(threads)
    assert res.exit_code == 0, res.output
    return tmp, path, res.output


def test_the_sweep_names_its_baselines(tmp_path, tiny_bert_dir):
    from priorkit.config import load_config
    from priorkit.evaluation.baselines import baselines

    cfg = load_config(_pipeline(tmp_path, tiny_bert_dir))
    got = {b.name: b for b in baselines(cfg)}
    assert list(got) == ["dictionary-alone", "dictionary-alone-doc", "dictionary-calibrated",
                         "dictionary-calibrated-doc", "none-as-mixed"]
    assert got["dictionary-calibrated"].calibrated_as == "features"
    assert got["dictionary-calibrated-doc"].document == "doc" and got["dictionary-alone"].calibrated_as is None
    assert (got["none-as-mixed"].decode, got["none-as-mixed"].o_bias, got["none-as-mixed"].arm) == ("viterbi", 0.5, "mixed")
    # an arm decoded like the task has no such twin; a regression task has no baselines at all
    cfg.sweep.posthoc["mixed"].o_bias = None
    cfg.sweep.posthoc["mixed"].decode = None
    assert "none-as-mixed" not in {b.name for b in baselines(cfg)}


def test_baselines_are_scored_like_arms_on_the_same_sentences(swept):
    import priorkit
    from priorkit.config import load_config
    from priorkit.evaluation.posthoc import add_document_matches, document_tags
    from priorkit.metrics import ner_metrics
    from priorkit.supervision.calibration import calibrate
    from priorkit.supervision.silver.label import group_entities
    from priorkit.training.data import load_data
    from priorkit.training.plan import RunPlan
    from priorkit.training.predictions import read_predictions

    tmp, path, output = swept
    out = tmp / "runs"
    cfg = load_config(path)
    words, gold = _blocks(tmp / "devel.conll")
    provider = priorkit.get_provider("ontology", path=str(MINI), cache=False)
    plain = [group_entities(provider.matches(w), len(w), TYPES) for w in words]
    doc = document_tags(cfg.sweep.posthoc["doc"], words, list(range(len(words))), window=2)
    rows = {(r["prior"], int(r["seed"])): r for r in csv.DictReader(open(out / "results.csv"))}
    train = load_data(cfg)["train"]
    drops = []
    for seed in (0, 1):
        cell = out / "{}" / "frac0.5" / f"seed{seed}"
        want = ner_metrics(gold, plain)["f1"]
        assert float(rows[("dictionary-alone", seed)]["eval_f1"]) == pytest.approx(want)
        with_doc = [add_document_matches(t, t, d) for t, d in zip(plain, doc)]
        assert read_predictions(Path(str(cell).format("dictionary-alone-doc")), "eval")[0] == with_doc
        # calibrated on this seed's gold subset, as the features setting's run calibrates it
        subset = RunPlan(cfg, "features", None, 0.5, seed).train_indices(len(train))
        drop = calibrate(provider, [train.examples[i] for i in subset], TYPES).dropped(0.5)
        drops.append(sorted(map(tuple, drop)))
        cal = priorkit.get_provider("calibrated", provider=provider, drop=[list(d) for d in drop]) if drop else provider
        cal_tags = [group_entities(cal.matches(w), len(w), TYPES) for w in words]
        assert read_predictions(Path(str(cell).format("dictionary-calibrated")), "eval")[0] == cal_tags
        assert float(rows[("dictionary-calibrated", seed)]["eval_f1"]) == pytest.approx(ner_metrics(gold, cal_tags)["f1"])
        # the same features run's own calibration record drops the same forms
        record = json.loads((Path(str(cell).format("features")) / "calibration.json").read_text())
        assert record["dropped"] == len(drop)
        cal_doc = [add_document_matches(t, p, d) for t, p, d in zip(cal_tags, plain, doc)]
        assert read_predictions(Path(str(cell).format("dictionary-calibrated-doc")), "eval")[0] == cal_doc
        # no knowledge decoded like the mix: none's kept model, Viterbi, O bias 0.5
        none = priorkit.load_model(Path(str(cell).format("none")), decode="viterbi", o_bias=0.5)
        assert read_predictions(Path(str(cell).format("none-as-mixed")), "eval")[0] == \
            [r["tags"] for r in none.predict(words)]
    assert drops[0] != drops[1]  # the per-seed subsets calibrate differently: a per-seed baseline
    # in the results table with its paired Δ against none, and in the table against the baselines
    md = (out / "results.md").read_text()
    assert "| 0.5 | dictionary-calibrated | 2 |" in md and "## Against the baselines" in md
    against = list(csv.DictReader(open(out / "results-baselines.csv")))
    pairs = {(r["setting"], r["vs"]) for r in against}
    assert ("mixed", "none-as-mixed") in pairs and ("features", "none-as-mixed") not in pairs
    assert ("doc", "dictionary-calibrated-doc") in pairs and ("none", "dictionary-alone") not in pairs
    for r in against:
        d = [float(rows[(r["setting"], s)]["eval_f1"]) - float(rows[(r["vs"], s)]["eval_f1"]) for s in (0, 1)]
        assert float(r["mean_delta"]) == pytest.approx(np.mean(d))
    # the baselines are not judged as knowledge settings, nor reported blind outside the dictionary
    dict_rows = {r["prior"] for r in csv.DictReader(open(out / "results-dictionary.csv"))}
    assert "dictionary-alone" not in dict_rows and "none-as-mixed" in dict_rows
    assert "baselines: " in output and "[dictionary-calibrated fraction=0.5 seed=1] baseline" in output


def test_a_second_sweep_scores_no_baseline_again(swept):
    from click.testing import CliRunner

    from priorkit.cli import cli

    tmp, path, _ = swept
    again = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    lines = [ln for ln in again.output.splitlines() if "] baseline" in ln]
    assert len(lines) == 10 and all("skipped (metrics.json is up to date)" in ln for ln in lines)


def test_runs_that_find_almost_nothing_are_named(tmp_path, tiny_bert_dir):
    from priorkit.config import load_config
    from priorkit.evaluation.baselines import few_entities
    from priorkit.training.predictions import write_predictions

    cfg = load_config(_pipeline(tmp_path, tiny_bert_dir))
    words, gold = _blocks(_conll(tmp_path / "devel.conll", 2))
    rows = []
    for name, keep in (("none", 1.0), ("features", 0.0), ("fewer", 0.2)):
        for seed in (0, 1):
            folder = tmp_path / "r" / name / str(seed)
            kept = 0
            tags = []
            for g in gold:  # keep the first `keep` share of the gold entities, the rest O
                t = []
                for x in g:
                    if x.startswith("B-"):
                        kept += 1
                    t.append(x if x != "O" and kept <= keep * 22 else "O")
                tags.append(t)
            write_predictions(folder, "eval", tags, gold)
            rows.append({"prior": name, "fraction": 0.5, "seed": seed, "run_dir": str(folder)})
    lines = few_entities(cfg, rows, words)
    assert len(lines) == 2, lines
    assert lines[0].startswith("few entities: features at fraction 0.5 predicts no entity at all on eval in 2 of 2 runs")
    assert "fewer at fraction 0.5 predicts fewer than a third of the dictionary's entities" in lines[1]
    assert "the dictionary alone finds" in lines[1]


def test_the_final_read_scores_the_kept_models_on_test_and_records_it(swept, tmp_path):
    from click.testing import CliRunner

    import priorkit
    from priorkit.cli import cli
    from priorkit.metrics import ner_metrics

    tmp, path, output = swept
    out = tmp / "runs"
    ledger = tmp_path / "results" / "test-reads.csv"
    before = (out / "features" / "frac0.5" / "seed0" / "metrics.json").read_text()
    card = (out / "features" / "frac0.5" / "seed0" / "model" / "priorkit.json").read_text()
    bad = CliRunner().invoke(cli, ["sweep", str(path), "--final", "featurs", "--decision", "x", "--ledger", str(ledger)])
    assert "--final featurs: not a setting of" in str(bad.exception) and "sweep.posthoc: doc, mixed" in str(bad.exception)
    assert not ledger.exists()
    bad = CliRunner().invoke(cli, ["sweep", str(path), "--final", "features"])
    assert bad.exit_code == 2 and "--final needs --decision" in bad.output
    args = ["sweep", str(path), "--final", "features", "--final", "mixed", "--decision", "features or the mix",
            "--ledger", str(ledger)]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    lines = list(csv.DictReader(open(ledger)))
    assert len(lines) == 1
    line = lines[0]
    assert (line["read"], line["name"], line["settings"], line["decision"]) == ("1", "tiny-baselines",
                                                                               "features mixed", "features or the mix")
    assert set(line["scored"].split()) >= {"none", "features", "mixed", "dictionary-alone", "dictionary-calibrated",
                                           "none-as-mixed"}
    assert line["fractions"] == "0.5" and line["seeds"] == "0 1" and line["earlier"] == ""
    result = Path(line["result"])
    assert result == ledger.parent / "tiny-baselines-read1-results.csv" and result.exists()
    # the scores are the kept models' on test, scored afresh
    words, gold = _blocks(tmp / "test.conll")
    rows = {(r["prior"], int(r["seed"])): r for r in csv.DictReader(open(result))}
    for seed in (0, 1):
        model = priorkit.load_model(out / "features" / "frac0.5" / f"seed{seed}")
        tags = [r["tags"] for r in model.predict(words)]
        assert float(rows[("features", seed)]["test_f1"]) == pytest.approx(ner_metrics(gold, tags)["f1"])
        assert "eval_f1" not in rows[("features", seed)]
    # the devel runs are untouched: their scores and the kept model's own record
    assert (out / "features" / "frac0.5" / "seed0" / "metrics.json").read_text() == before
    assert (out / "features" / "frac0.5" / "seed0" / "model" / "priorkit.json").read_text() == card
    assert "read 1 recorded in" in res.output
    # a second read of the same question is allowed, and visible
    again = CliRunner().invoke(cli, [*args[:-4], "--final", "mixed", "--final", "features", "--decision", "once more",
                                     "--ledger", str(ledger)], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "note: read 1" in again.output
    lines = list(csv.DictReader(open(ledger)))
    assert [r["read"] for r in lines] == ["1", "2"] and lines[1]["earlier"] == "1"


def test_a_sweep_that_scores_test_says_so(swept):
    from click.testing import CliRunner

    from priorkit.cli import cli

    tmp, path, output = swept
    assert "test scored outside a final read" not in output  # evaluate: [eval]
    res = CliRunner().invoke(cli, ["sweep", str(path), "--report-only", "--set", "evaluate=[eval, test]"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "warning: test scored outside a final read" in res.output
    assert "test scored outside a final read" in (tmp / "runs" / "results.md").read_text()

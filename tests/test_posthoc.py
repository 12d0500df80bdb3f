"""``sweep.posthoc``: the no-prior model's predictions merged with a dictionary afterwards,
and the sentence bootstrap that the saved predictions make possible.

The merge rules on hand-made tags; the bootstrap on counts whose answer is known; the
config errors by file and line; and a tiny real sweep (random 2-layer BERT, a CoNLL file,
the hand-made mini ontology) whose post-hoc arms are scored like any run."""
from __future__ import annotations

import csv
import json
import re
import textwrap

import numpy as np
import pytest
import yaml

from priorkit.config import ConfigError, load_config
from priorkit.evaluation.posthoc import add_document_matches, join_fragments, merge
from priorkit.training.predictions import entity_counts
from priorkit.training.tasks import ner_metrics
from priorkit.stats import bootstrap_f1_delta, f1_from_counts

MODEL = ["B-Chemical", "I-Chemical", "O", "O", "O", "B-Disease", "O"]
DICT_ = ["B-Disease", "I-Disease", "O", "B-Disease", "I-Disease", "I-Disease", "O"]


def test_union_adds_only_where_the_model_found_nothing():
    # the dictionary's first entity overlaps the model's chemical: the model's stays; the
    # second (words 3-5) overlaps the model's disease at word 5: not added either
    assert merge(MODEL, DICT_, "union") == MODEL
    assert merge(MODEL, ["O", "O", "B-Disease", "O", "O", "O", "B-Chemical"], "union") == \
        ["B-Chemical", "I-Chemical", "B-Disease", "O", "O", "B-Disease", "B-Chemical"]


def test_override_replaces_the_model_entities_it_overlaps():
    assert merge(MODEL, DICT_, "override") == \
        ["B-Disease", "I-Disease", "O", "B-Disease", "I-Disease", "I-Disease", "O"]
    # a model entity no dictionary entity touches stays
    assert merge(MODEL, ["O"] * 4 + ["B-Chemical", "O", "O"], "override") == \
        ["B-Chemical", "I-Chemical", "O", "O", "B-Chemical", "B-Disease", "O"]


def test_join_fragments_takes_the_dictionary_entity_the_model_split():
    dictionary = ["O", "B-Disease", "I-Disease", "I-Disease", "O", "B-Disease", "I-Disease", "O"]
    # "migraine" + "aura" inside "migraine with aura" (words 1-3): joined; the one piece inside the
    # second dictionary entity (words 5-6) stays, the annotators' bounds may be the shorter ones
    model = ["O", "B-Disease", "O", "B-Disease", "O", "O", "B-Disease", "O"]
    assert join_fragments(model, dictionary) == \
        ["O", "B-Disease", "I-Disease", "I-Disease", "O", "O", "B-Disease", "O"]
    # two pieces, one of another type: left alone
    other = ["O", "B-Disease", "O", "B-Chemical", "O", "O", "O", "O"]
    assert join_fragments(other, dictionary) == other
    # a model entity crossing the dictionary entity's edge (words 3-4): left alone
    crossing = ["O", "B-Disease", "O", "B-Disease", "I-Disease", "O", "O", "O"]
    assert join_fragments(crossing, dictionary) == crossing
    # two pieces that already fill the entity's words (B B I): joined into one entity too
    assert join_fragments(["O", "B-Disease", "B-Disease", "I-Disease", "O", "O", "O", "O"], dictionary)[:4] == \
        ["O", "B-Disease", "I-Disease", "I-Disease"]
    with pytest.raises(Exception, match="7 model tags for 8 dictionary tags"):
        join_fragments(model[:7], dictionary)


def test_add_document_matches_adds_only_what_the_sentence_matches_lack_where_the_model_is_silent():
    sentence = ["B-Chemical", "I-Chemical", "O", "O", "O", "O"]
    # the document pass finds the same chemical and two more entities: "VPA" (word 3) and a disease
    # (word 5) that the model already covers with an entity of its own
    document = ["B-Chemical", "I-Chemical", "O", "B-Chemical", "O", "B-Disease"]
    model = ["O", "O", "O", "O", "B-Disease", "I-Disease"]
    assert add_document_matches(model, sentence, document) == ["O", "O", "O", "B-Chemical", "B-Disease", "I-Disease"]
    # nothing beyond the sentence-level matches: the model's tags as they are
    assert add_document_matches(model, sentence, sentence) == model
    with pytest.raises(Exception, match="6 model tags, 6 sentence-level and 5 document-level"):
        add_document_matches(model, sentence, document[:5])


def test_document_tags_carry_abbreviations_to_the_next_sentences():
    from pathlib import Path

    from priorkit.errors import PriorkitError
    from priorkit.config import PosthocConfig
    from priorkit.evaluation.posthoc import document_tags

    mini = str(Path(__file__).parent / "fixtures" / "ontology" / "mini.obo")
    arm = PosthocConfig(params={"path": mini, "cache": False}, types={"mini": "Disease"})
    doc = [s.split() for s in ("Cor pulmonale ( CP ) was seen .", "The CP worsened .", "No arrhythmia .", "CP .")]
    # "CP", defined in sentence 0, is recognised one sentence later (window 1), not three
    assert document_tags(arm, doc, [1, 3], window=1) == [["O", "B-Disease", "O", "O"], ["O", "O"]]
    assert document_tags(arm, doc, [3], window=-1) == [["B-Disease", "O"]]  # -1: to the end
    # the sentence-level matches do not see it at all
    import priorkit
    from priorkit.supervision.silver.label import group_entities

    provider = priorkit.get_provider("ontology", path=mini, cache=False)
    assert group_entities(provider.matches(doc[1]), 4, {"mini": "Disease"}) == ["O"] * 4
    control = PosthocConfig(provider="random-spans", params={"provider": "ontology", "params": {"path": mini, "cache": False},
                                                             "seed": 0})
    with pytest.raises(PriorkitError, match="provider 'random-spans' reads one sentence at a time"):
        document_tags(control, doc, [1], window=1)


def test_document_context_gives_the_sampled_sentences_their_neighbours(tmp_path):
    from priorkit.config import DataSource
    from priorkit.training.data import document_context, read_source, slice_examples

    path = _conll(tmp_path / "d.conll", 3)  # 18 sentences
    src = DataSource(path=str(path), format="conll", sample=5, sample_seed=3)
    words, positions = document_context(src)
    kept = slice_examples(read_source(src)[0], src)
    assert len(words) == 18 and len(positions) == 5 and positions == sorted(positions)
    assert [words[p] for p in positions] == [list(e["words"]) for e in kept]
    whole = DataSource(path=str(path), format="conll")
    assert document_context(whole)[1] == list(range(18))


def test_an_arm_reading_the_whole_split_is_redone_when_an_unsampled_sentence_changes(tmp_path):
    from priorkit.config import PosthocConfig
    from priorkit.training.data import document_context, load_data
    from priorkit.evaluation.posthoc import _key

    path = _conll(tmp_path / "test.conll", 3)  # 18 sentences, 5 sampled
    text = NER.replace("  eval: {source: bc5cdr, split: devel}\n",
                       f"  test: {{path: {path}, format: conll, sample: 5, sample_seed: 3}}\n")
    (tmp_path / "p.yaml").write_text(text.replace("  posthoc:\n", "  split: test\n") + "evaluate: [test]\n")
    cfg = load_config(tmp_path / "p.yaml")
    splits = load_data(cfg)
    plain, reading = PosthocConfig(), PosthocConfig(document=2)
    before = (_key(cfg, plain, {}, splits), _key(cfg, reading, {}, splits))
    blocks = path.read_text().split("\n\n")
    positions = set(document_context(cfg.data.test)[1])
    other = next(i for i in range(18) if i not in positions)
    blocks[other] = "Indeed\tO\n" + blocks[other]  # one more word in a sentence the sample leaves out
    path.write_text("\n\n".join(blocks))
    after_splits = load_data(cfg)
    assert after_splits["test"].digest == splits["test"].digest  # the sample itself is unchanged
    assert _key(cfg, plain, {}, after_splits) == before[0]
    assert _key(cfg, reading, {}, after_splits) != before[1]


def test_an_arms_type_map_comes_from_the_pipeline_and_old_arms_keep_their_keys(tmp_path):
    from pathlib import Path

    from priorkit.config import PosthocConfig
    from priorkit.errors import PriorkitError
    from priorkit.evaluation.posthoc import _key, dictionary_tags, typed_arm
    from priorkit.supervision.type_map import MAP_BEFORE_47
    from priorkit.training.data import load_data

    mini = str(Path(__file__).parent / "fixtures" / "ontology" / "mini.obo")
    (tmp_path / "p.yaml").write_text(NER + "    dict: {of: none}\n")
    cfg = load_config(tmp_path / "p.yaml")
    arm = PosthocConfig(params={"path": mini, "cache": False})
    tags = ["B-Chemical", "B-Disease", "O"]
    # no map in the pipeline, and the mini ontology's group is not an entity type of BC5CDR: stop, naming the field
    with pytest.raises(PriorkitError, match=rf"{re.escape(str(tmp_path / 'p.yaml'))}:9: sweep.posthoc.dict: no type "
                                            r"map .* set task.dictionary_types or sweep.posthoc.dict.types"):
        typed_arm(cfg, arm, "sweep.posthoc.dict", tags)
    with pytest.raises(PriorkitError, match="has no type map"):
        dictionary_tags(arm, [{"words": ["x"]}])
    # the pipeline's map (task.dictionary_types), or the arm's own
    cfg.task.dictionary_types = {"mini": "Disease"}
    assert typed_arm(cfg, arm, "sweep.posthoc.dict", tags).types == {"mini": "Disease"}
    own = PosthocConfig(params=arm.params, types={"mini": "Chemical"})
    assert typed_arm(cfg, own, "sweep.posthoc.dict", tags) is own
    # an arm whose null types are filled with the map null meant before keeps its key; another map changes it
    splits = load_data(cfg)
    old = _key(cfg, arm, {"eval_key": "b"}, splits)
    assert _key(cfg, arm, {"eval_key": "b"}, splits, types=dict(MAP_BEFORE_47)) == old
    assert _key(cfg, arm, {"eval_key": "b"}, splits, types={"mini": "Disease"}) != old


def test_fragments_stay_out_of_the_key_of_arms_made_before_it():
    from priorkit.config import PosthocConfig
    from priorkit.evaluation.posthoc import _NEW_DEFAULTS

    assert _NEW_DEFAULTS["fragments"] is False and PosthocConfig().fragments is False
    assert _NEW_DEFAULTS["document"] is None and PosthocConfig().document is None
    import dataclasses
    assert set(_NEW_DEFAULTS) <= {f.name for f in dataclasses.fields(PosthocConfig)}


def test_a_merge_without_matches_keeps_the_entities_and_their_score():
    gold = [["B-Chemical", "I-Chemical", "O", "B-Disease"], ["O", "B-Disease", "I-Disease", "O"]]
    pred = [["I-Chemical", "I-Chemical", "O", "B-Disease"], ["O", "B-Disease", "O", "B-Chemical"]]
    for how in ("union", "override"):
        merged = [merge(p, ["O"] * len(p), how) for p in pred]
        assert ner_metrics(gold, merged)["f1"] == ner_metrics(gold, pred)["f1"]


def test_entity_counts_sum_to_seqeval_f1():
    rng = np.random.default_rng(3)
    tags = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    gold = [list(rng.choice(tags, size=rng.integers(1, 12))) for _ in range(60)]
    pred = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in g] for g in gold]
    counts = entity_counts(pred, gold)
    c = counts.sum(axis=0)
    assert float(f1_from_counts(*c)) == pytest.approx(ner_metrics(gold, pred)["f1"])
    # each sentence's own counts, entity by entity (the one-pass count attributes them right)
    from seqeval.metrics.sequence_labeling import get_entities

    for row, p, g in zip(counts, pred, gold):
        pe, ge = set(get_entities([str(t) for t in p])), set(get_entities([str(t) for t in g]))
        assert list(row) == [len(pe & ge), len(pe), len(ge)]


def _counts(rng, n=400, hit=0.7):
    """Per-sentence (correct, predicted, gold) counts of a model that finds ``hit`` of the entities."""
    gold = rng.integers(0, 4, size=n)
    correct = rng.binomial(gold, hit)
    predicted = correct + rng.integers(0, 2, size=n)
    return np.stack([correct, predicted, gold], axis=1)


def test_bootstrap_of_identical_predictions_is_zero():
    rng = np.random.default_rng(0)
    runs = [_counts(rng) for _ in range(3)]
    assert bootstrap_f1_delta(runs, runs, replicates=300) == (0.0, 0.0)


def test_bootstrap_finds_a_known_shift_and_is_wider_than_no_sentence_noise():
    rng = np.random.default_rng(1)
    base = [_counts(rng, hit=0.6) for _ in range(4)]
    better = []
    for b in base:  # every seed finds more of the same gold entities: a true gain
        c = b.copy()
        c[:, 0] = np.minimum(c[:, 2], c[:, 0] + rng.binomial(c[:, 2] - c[:, 0], 0.5))
        c[:, 1] = c[:, 1] + (c[:, 0] - b[:, 0])
        better.append(c)
    true = np.mean([f1_from_counts(*a.sum(0)) - f1_from_counts(*b.sum(0)) for a, b in zip(better, base)])
    low, high = bootstrap_f1_delta(better, base, replicates=1000, seed=2)
    assert 0 < low < true < high
    # the reverse comparison mirrors the interval
    rlow, rhigh = bootstrap_f1_delta(base, better, replicates=1000, seed=2)
    assert rlow == pytest.approx(-high) and rhigh == pytest.approx(-low)
    with pytest.raises(ValueError, match="one shape"):
        bootstrap_f1_delta(better, [b[:10] for b in base])


# ---- config errors by file and line ------------------------------------------------------
NER = """\
name: p
task: {type: token-classification}
data:
  train: {source: bc5cdr, split: train}
  eval: {source: bc5cdr, split: devel}
sweep:
  priors: {none: null}
  posthoc:
"""


@pytest.mark.parametrize("entry, line, field, words", [
    ("    dict: {of: nonee}\n", 9, "sweep.posthoc.dict.of", "'nonee' is not a setting of sweep.priors (none)"),
    ("    none: {of: none}\n", 9, "sweep.posthoc.none", "also a setting of sweep.priors"),
    ("    dict:\n      of: none\n      provider: ontologgy\n", 11, "sweep.posthoc.dict.provider",
     "unknown provider 'ontologgy'"),
    ("    dict:\n      merge: unoin\n", 10, "sweep.posthoc.dict.merge", "did you mean 'union'"),
    ("    dict: {types: {}}\n", 9, "sweep.posthoc.dict.types", "is empty"),
    ("    mixed: {of: none, mix: [nonee]}\n", 9, "sweep.posthoc.mixed.mix.0", "'nonee' is not a setting of sweep"),
    ("    mixed: {of: none, mix: [none]}\n", 9, "sweep.posthoc.mixed.mix.0", "other than `of`"),
    ("    mixed: {of: none, weights: [1.0]}\n", 9, "sweep.posthoc.mixed.mix", "is empty, so weights"),
    ("    mixed: {of: none, o_bias: .nan}\n", 9, "sweep.posthoc.mixed.o_bias", "must be a finite number, got nan"),
    ("    dict: {document: -2}\n", 9, "sweep.posthoc.dict.document", "-1: to the end of the split"),
    ("    dict: {document: 20, calibrate: {threshold: 0.5}}\n", 9, "sweep.posthoc.dict.document",
     "cannot follow a calibration"),
    # removed options: one line naming the field and that it was removed (config/removed.py)
    ("    dict: {propagate: -1}\n", 9, "sweep.posthoc.dict.propagate", "was removed: the post-hoc arm's propagation"),
    ("    dict:\n      of: none\n      share: 0.5\n", 11, "sweep.posthoc.dict.share", "was removed: the vote"),
    ("    dict: {min_prob: 0.1}\n", 9, "sweep.posthoc.dict.min_prob", "was removed: the gate"),
])
def test_bad_posthoc_arms_name_the_file_and_line(tmp_path, entry, line, field, words):
    path = tmp_path / "p.yaml"
    path.write_text(NER + entry)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{line}: {field}: "), msg
    assert words in msg, msg


def test_posthoc_needs_token_classification(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\ndata:\n  train: {source: stsb}\n  eval: {source: stsb, split: dev}\n"
                    "sweep:\n  posthoc:\n    dict: {of: none}\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:7: sweep.posthoc.dict: .*need "
                                          "task.type token-classification, not regression"):
        load_config(path)


# ---- a tiny real sweep ---------------------------------------------------------------------
SENTENCES = [
    ("The patient had arrhythmia after the dose .", {3: "Disease"}),
    ("Pneumonia was treated with aspirin .", {0: "Disease", 4: "Chemical"}),
    ("No cardiomyopathy was seen .", {1: "Disease"}),
    ("Aspirin and heparin were given .", {0: "Chemical", 2: "Chemical"}),
    ("She developed pneumonia and arrhythmia .", {2: "Disease", 4: "Disease"}),
    ("The dose was doubled .", {}),
]


def _conll(path, copies):
    lines = []
    for k in range(copies):
        for text, ents in SENTENCES:
            for i, w in enumerate(text.split()):
                lines.append(f"{w}\t{'B-' + ents[i] if i in ents else 'O'}")
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_posthoc_arms_are_scored_like_runs(tmp_path, tiny_bert_dir):
    from click.testing import CliRunner

    from priorkit.cli import cli
    from priorkit.training.predictions import read_predictions

    from pathlib import Path

    mini = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"
    train, test = _conll(tmp_path / "train.conll", 4), _conll(tmp_path / "test.conll", 2)
    raw = yaml.safe_load(textwrap.dedent(f"""\
        name: tiny-posthoc
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: token-classification}}
        data:
          train: {{path: {train}, format: conll}}
          test: {{path: {test}, format: conll}}
        train: {{epochs: 1, batch_size: 8, learning_rate: 1.0e-3, progress: false, logging_steps: 100,
                 threads: 1, save: "no"}}
        sweep:
          seeds: [0, 1]
          priors:
            none: null
            features: {{provider: ontology, params: {{path: {mini}, cache: false}}, layout: full,
                        attention: null, features: {{}}}}
          posthoc:
            dict-union: {{of: none, merge: union, provider: ontology,
                          params: {{path: {mini}, cache: false}}, types: {{mini: Disease}}}}
            dict-override: {{of: none, merge: override, provider: ontology,
                             params: {{path: {mini}, cache: false}}, types: {{mini: Disease}}}}
            dict-calibrated: {{of: none, merge: override, provider: ontology,
                               params: {{path: {mini}, cache: false}}, types: {{mini: Disease}},
                               calibrate: {{threshold: 0.5}}}}
            mixed: {{of: features, mix: [none], weights: [0.7, 0.3], decode: viterbi, o_bias: 0.5}}
            joined: {{of: features, mix: [none], weights: [0.7, 0.3], decode: viterbi, o_bias: 0.5,
                      fragments: true, provider: ontology, params: {{path: {mini}, cache: false}},
                      types: {{mini: Disease}}}}
            dict-document: {{of: none, merge: union, provider: ontology, params: {{path: {mini}, cache: false}},
                             types: {{mini: Disease}}, document: 2}}
          dictionary: {{provider: ontology, params: {{path: {mini}, cache: false}}, types: {{mini: Disease}}}}
          split: test
        """))
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = tmp_path / "runs"
    gold = [[t for t in (line.split("\t")[1] for line in block.split("\n") if line)]
            for block in test.read_text().strip().split("\n\n")]
    words = [[line.split("\t")[0] for line in block.split("\n") if line]
             for block in test.read_text().strip().split("\n\n")]
    import priorkit
    from priorkit.evaluation.dictionary_baseline import group_entities

    provider = priorkit.get_provider("ontology", path=str(mini), cache=False)
    dict_tags = [group_entities(provider.matches(w), len(w), {"mini": "Disease"}) for w in words]
    rows = {(r["prior"], int(r["seed"])): r for r in csv.DictReader(open(out / "results.csv"))}
    for seed in (0, 1):
        # the trained run saved its tags and gold; their F1 is the run's
        tags, saved_gold = read_predictions(out / "none" / "frac1" / f"seed{seed}", "test")
        assert saved_gold == gold
        assert ner_metrics(gold, tags)["f1"] == pytest.approx(float(rows[("none", seed)]["test_f1"]))
        for arm, how in (("dict-union", "union"), ("dict-override", "override")):
            merged = [merge(t, d, how) for t, d in zip(tags, dict_tags)]
            m = json.loads((out / arm / "frac1" / f"seed{seed}" / "metrics.json").read_text())
            assert m["metrics"]["test"]["f1"] == pytest.approx(ner_metrics(gold, merged)["f1"])
            assert float(rows[(arm, seed)]["test_f1"]) == pytest.approx(m["metrics"]["test"]["f1"])
            assert m["posthoc"]["of"] == "none" and m["train"]["steps"] == 0
        # calibrated: the dictionary without the forms the run's own gold subset shows wrong
        from priorkit.supervision.calibration import calibrate
        from priorkit.config import load_config
        from priorkit.training.data import load_data
        from priorkit.training.plan import RunPlan

        cfg = load_config(path)
        train_split = load_data(cfg)["train"]
        subset = RunPlan(cfg, "none", None, 1.0, seed).train_indices(len(train_split))
        drop = calibrate(provider, [train_split.examples[i] for i in subset], {"mini": "Disease"}).dropped(0.5)
        cal = priorkit.get_provider("calibrated", provider=provider, drop=[list(d) for d in drop])
        cal_tags = [group_entities(cal.matches(w), len(w), {"mini": "Disease"}) for w in words]
        m = json.loads((out / "dict-calibrated" / "frac1" / f"seed{seed}" / "metrics.json").read_text())
        want = ner_metrics(gold, [merge(t, d, "override") for t, d in zip(tags, cal_tags)])["f1"]
        assert m["metrics"]["test"]["f1"] == pytest.approx(want)
        # mixed: the kept models of features (0.7) and none (0.3), Viterbi, O bias 0.5
        ens = priorkit.load_ensemble([out / "features" / "frac1" / f"seed{seed}", out / "none" / "frac1" / f"seed{seed}"],
                                     [0.7, 0.3], decode="viterbi", o_bias=0.5)
        mixed_tags = [r["tags"] for r in ens.predict(words)]
        assert read_predictions(out / "mixed" / "frac1" / f"seed{seed}", "test")[0] == mixed_tags
        m = json.loads((out / "mixed" / "frac1" / f"seed{seed}" / "metrics.json").read_text())
        assert m["metrics"]["test"]["f1"] == pytest.approx(ner_metrics(gold, mixed_tags)["f1"])
        assert float(rows[("mixed", seed)]["test_f1"]) == pytest.approx(m["metrics"]["test"]["f1"])
        # the same mix with the dictionary's entities joining the pieces the mix split
        joined = [join_fragments(t, d) for t, d in zip(mixed_tags, dict_tags)]
        assert read_predictions(out / "joined" / "frac1" / f"seed{seed}", "test")[0] == joined
        m = json.loads((out / "joined" / "frac1" / f"seed{seed}" / "metrics.json").read_text())
        assert m["posthoc"]["fragments"] is True
        # the union, then the document pass over the whole test file (2 sentences of carry)
        from priorkit.config import PosthocConfig
        from priorkit.evaluation.posthoc import document_tags

        doc_arm = PosthocConfig(params={"path": str(mini), "cache": False}, types={"mini": "Disease"})
        doc_tags = document_tags(doc_arm, words, list(range(len(words))), window=2)
        want = [add_document_matches(merge(t, d, "union"), d, x) for t, d, x in zip(tags, dict_tags, doc_tags)]
        assert read_predictions(out / "dict-document" / "frac1" / f"seed{seed}", "test")[0] == want
        assert m["metrics"]["test"]["f1"] == pytest.approx(ner_metrics(gold, joined)["f1"])
    # every trained arm's recall inside and outside the dictionary, the dictionary alone as a row
    dict_rows = list(csv.DictReader(open(out / "results-dictionary.csv")))
    alone = [r for r in dict_rows if r["prior"] == "dictionary alone"]
    assert len(alone) == 1 and float(alone[0]["recall_dict"]) == pytest.approx(100.0)
    assert {r["prior"] for r in dict_rows} >= {"none", "features", "dict-union", "dictionary alone"}
    assert "## Inside and outside the dictionary (test split)" in (out / "results.md").read_text()
    # with a document arm in the sweep, every row also gives recall outside the document-level dictionary
    from priorkit.evaluation.dictionary_recall import dictionary_recall

    assert all("recall_other_doc" in r for r in dict_rows)
    doc_arm = PosthocConfig(params={"path": str(mini), "cache": False}, types={"mini": "Disease"})
    doc_tags = document_tags(doc_arm, words, list(range(len(words))), window=2)
    none0 = next(r for r in dict_rows if r["prior"] == "none" and r["seed"] == "0")
    want = dictionary_recall(read_predictions(out / "none" / "frac1" / "seed0", "test")[0], gold, doc_tags)
    assert float(none0["recall_other_doc"]) == pytest.approx(want.recall_other, abs=1e-3)
    assert "outside the document-level dictionary |" in (out / "results.md").read_text()
    # override puts every dictionary entity in: its recall of diseases is the dictionary's at least
    assert float(rows[("dict-override", 0)]["test_recall"]) > 0
    md = (out / "results.md").read_text()
    assert "| 1 | dict-union | 2 |" in md and "| 1 | dict-override | 2 |" in md and "95% CI (sent.+seeds)" in md
    # every knowledge setting is judged against the post-hoc arms (no sweep.controls: every
    # trained setting but the baseline), paired by seed
    ctl = list(csv.DictReader(open(out / "controls.csv")))
    assert sorted((r["setting"], r["vs"]) for r in ctl) == [("features", "dict-calibrated"), ("features", "dict-document"),
                                                           ("features", "dict-override"), ("features", "dict-union")]
    for r in ctl:
        d = [float(rows[("features", s)]["test_f1"]) - float(rows[(r["vs"], s)]["test_f1"]) for s in (0, 1)]
        assert float(r["mean_delta"]) == pytest.approx(np.mean(d))
        assert r["beats_merge"] == "yes" or r["beats_merge"].startswith("no: vs dict-")
        assert float(r["ci_low_sentences"]) <= float(r["ci_high_sentences"])
    lines = [ln for ln in res.output.splitlines() if ln.startswith("fraction 1, features: ")]
    assert len(lines) == 1 and "the dictionary merged afterwards" in lines[0], res.output
    assert "## Against the dictionary merged afterwards" in (out / "controls.md").read_text()
    # a second call merges nothing again
    again = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert again.exit_code == 0 and "post-hoc: skipped (metrics.json is up to date)" in again.output

"""Recipes (issue 45): a sweep's post-hoc arm exported as one folder, loaded back, tagging words
and documents as the arm scored them; the folder self-contained; concept IDs of the dictionary's
entries; long sentences read in windows.  Tiny real runs (a 2-layer BERT, the hand-made ontology)."""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import priorkit
from priorkit.errors import PriorkitError

MINI = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"

SENTENCES = [
    ("Cor pulmonale ( CP ) was seen in two patients .", {0: "B-Disease", 1: "I-Disease"}),
    ("The CP worsened after pneumonia .", {1: "B-Disease", 4: "B-Disease"}),
    ("She developed arrhythmia and tachycardia .", {2: "B-Disease", 4: "B-Disease"}),
    ("The dose was doubled .", {}),
    ("Ventricular tachycardia ( VT ) stopped .", {0: "B-Disease", 1: "I-Disease", 3: "B-Disease"}),
    ("No VT , no pneumonia .", {1: "B-Disease", 4: "B-Disease"}),
]


def _conll(path: Path, copies: int) -> Path:
    lines = []
    for _ in range(copies):
        for text, tags in SENTENCES:
            lines += [f"{w}\t{tags.get(i, 'O')}" for i, w in enumerate(text.split())] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


def _words(path: Path) -> list[list[str]]:
    return [[line.split("\t")[0] for line in block.split("\n") if line]
            for block in path.read_text().strip().split("\n\n")]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, tiny_bert_dir):
    """A tiny sweep (none, features) with two mix arms, scored; the ontology in a folder of its own."""
    from priorkit.cli import cli

    tmp = tmp_path_factory.mktemp("recipe")
    onto = tmp / "onto"
    onto.mkdir()
    shutil.copyfile(MINI, onto / "mini.obo")
    train, test = _conll(tmp / "train.conll", 3), _conll(tmp / "test.conll", 1)
    dictionary = f"provider: ontology, params: {{path: {onto / 'mini.obo'}, cache: false}}, types: {{mini: Disease}}"
    raw = yaml.safe_load(textwrap.dedent(f"""\
        name: tiny-recipe
        output_dir: {tmp / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: token-classification}}
        data:
          train: {{path: {train}, format: conll}}
          test: {{path: {test}, format: conll}}
        train: {{epochs: 1, batch_size: 8, learning_rate: 1.0e-3, progress: false, logging_steps: 100,
                 threads: 1, save: "no"}}
        sweep:
          seeds: [0]
          priors:
            none: null
            features: {{provider: ontology, params: {{path: {onto / 'mini.obo'}, cache: false}}, layout: full,
                        attention: null, features: {{}}}}
          posthoc:
            mixed: {{of: features, mix: [none], weights: [0.7, 0.3], decode: viterbi, o_bias: 0.5}}
            mixed-doc: {{of: features, mix: [none], weights: [0.7, 0.3], decode: viterbi, o_bias: 0.5,
                         fragments: true, document: 2, {dictionary}}}
          split: test
        """))
    path = tmp / "p.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    for arm in ("mixed", "mixed-doc"):
        res = CliRunner().invoke(cli, ["export", str(path), "--arm", arm, "--out", str(tmp / f"recipe-{arm}")],
                                 catch_exceptions=False)
        assert res.exit_code == 0, res.output
    return {"tmp": tmp, "pipeline": path, "test": test, "onto": onto, "runs": tmp / "runs"}


def _arm_tags(sweep, arm):
    from priorkit.training.predictions import read_predictions

    return read_predictions(sweep["runs"] / arm / "frac1" / "seed0", "test")[0]


def test_an_exported_recipe_tags_as_its_sweep_arm_scored(sweep):
    words = _words(sweep["test"])
    for arm in ("mixed", "mixed-doc"):
        recipe = priorkit.load_model(sweep["tmp"] / f"recipe-{arm}")
        assert isinstance(recipe, priorkit.inference.Recipe)
        records = recipe.predict(words)
        assert [r["tags"] for r in records] == _arm_tags(sweep, arm), arm
        # the CLI on the test file gives the same tags
        out = sweep["tmp"] / f"{arm}.jsonl"
        from priorkit.cli import cli

        res = CliRunner().invoke(cli, ["predict", str(sweep["tmp"] / f"recipe-{arm}"), str(sweep["test"]),
                                       "--input-format", "conll", "--out", str(out)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        assert [json.loads(line)["tags"] for line in out.read_text().splitlines()] == _arm_tags(sweep, arm)


def test_the_folder_holds_the_chain_members_dictionary_and_scores(sweep):
    from priorkit.checksums import file_sha256

    folder = sweep["tmp"] / "recipe-mixed-doc"
    info = json.loads((folder / "priorkit.json").read_text())
    assert info["kind"] == "recipe" and [s["kind"] for s in info["steps"]] == ["mix", "decode", "fragments", "document"]
    assert info["steps"][0] == {"kind": "mix", "members": ["features", "none"], "weights": [0.7, 0.3]}
    assert info["steps"][1] == {"kind": "decode", "how": "viterbi", "o_bias": 0.5}
    assert info["steps"][3] == {"kind": "document", "window": 2}
    for m in info["members"]:
        run_model = sweep["runs"] / m["name"] / "frac1" / "seed0" / "model"
        assert m["sha256"] == file_sha256(run_model / "model.safetensors") == file_sha256(folder / m["folder"] / m["weights"])
    assert [m["share"] for m in info["members"]] == pytest.approx([0.7, 0.3])
    d = info["dictionary"]
    assert d["types"] == {"mini": "Disease"} and d["calibration"] is None
    assert d["fingerprint"] == priorkit.get_provider("ontology", path=str(sweep["onto"] / "mini.obo"), cache=False).fingerprint
    assert (folder / "dictionary" / "mini.obo").read_bytes() == MINI.read_bytes()
    arm_metrics = json.loads((sweep["runs"] / "mixed-doc" / "frac1" / "seed0" / "metrics.json").read_text())
    assert info["scores"] == arm_metrics["metrics"]
    assert info["result_files"]["arm metrics"].endswith("mixed-doc/frac1/seed0/metrics.json")
    card = (folder / "README.md").read_text()
    assert "mix features x0.7 + none x0.3 -> viterbi (O bias 0.5) -> fragments joined -> document pass (2 sentences)" in card
    assert f"{arm_metrics['metrics']['test']['f1']:.4f}" in card and "mixed-doc/frac1/seed0/metrics.json" in card
    from priorkit.cli import cli

    shown = CliRunner().invoke(cli, ["show", str(folder)], catch_exceptions=False)
    assert shown.exit_code == 0 and "document pass (2 sentences)" in shown.output


def test_a_copied_recipe_needs_neither_its_runs_nor_its_ontology(sweep, tmp_path):
    words = _words(sweep["test"])
    copy = tmp_path / "elsewhere"
    shutil.copytree(sweep["tmp"] / "recipe-mixed-doc", copy)
    hidden = [sweep["runs"], sweep["onto"]]
    for p in hidden:
        p.rename(p.with_name(p.name + ".hidden"))
    try:
        tags = [r["tags"] for r in priorkit.load_model(copy).predict(words)]
    finally:
        for p in hidden:
            p.with_name(p.name + ".hidden").rename(p)
    assert tags == _arm_tags(sweep, "mixed-doc")
    shutil.rmtree(copy / "members" / "none")
    with pytest.raises(PriorkitError, match=r"elsewhere: member none is missing") as err:
        priorkit.load_model(copy)
    assert "\n" not in str(err.value)


def test_documents_get_character_offsets_and_the_dictionarys_concept_ids(sweep, tmp_path):
    """A recipe whose dictionary overrides the model: every match is an entity, with its concept IDs."""
    from priorkit.decode.steps import Decode, Merge, to_data
    from priorkit.documents import Document
    from priorkit.inference.recipe_folder import write_recipe

    model = sweep["runs"] / "none" / "frac1" / "seed0" / "model"
    write_recipe(tmp_path / "r", members=[{"name": "none", "model_dir": model, "share": 1.0}],
                 steps=to_data([Decode("argmax", 0.0), Merge("override")]), labels=priorkit.load_model(model).labels,
                 dictionary={"provider": "ontology", "params": {"path": str(MINI), "cache": False},
                             "types": {"mini": "Disease"}, "calibration": None},
                 scores=None, result_files={}, run={"command": "test"})
    tagger = priorkit.load_model(tmp_path / "r")
    text = "Ventricular tachycardia was treated.  Then pneumonia, and VT again."
    doc = Document("d1", text)
    (tagged,) = list(tagger.tag_documents([doc]))
    provider = priorkit.get_provider("ontology", path=str(MINI), cache=False)
    want = {}
    for sentence in tagged.sentences:
        for m in provider.matches(sentence.words):
            want[(sentence.tokens[m.start].start, sentence.tokens[m.end - 1].end)] = tuple(m.concept_ids)
    got = {(e.start, e.end): e for e in tagged.entities}
    assert want and set(want) <= set(got)
    for span, ids in want.items():
        e = got[span]
        assert e.concept_ids == ids and e.text == text[e.start:e.end] and e.type == "Disease"
        assert e.source in ("model", "dictionary") and 0.0 <= e.score <= 1.0
    assert got[(0, 23)].concept_ids == ("MINI:0000012",)
    # the transformers pipeline's dicts, plus concept_ids; a list in, a list per text out
    out = tagger(text)
    assert {(d["start"], d["end"]) for d in out} == set(got)
    assert set(out[0]) == {"entity_group", "score", "word", "start", "end", "concept_ids"}
    assert tagger([text, "Then pneumonia."]) == [out, tagger("Then pneumonia.")]
    # a plain model tags documents too, without concept IDs
    plain = priorkit.load_model(model)
    (alone,) = list(plain.tag_documents([doc]))
    assert all(e.concept_ids == () and e.source == "model" for e in alone.entities)
    assert plain.predict([{"id": "x", "text": "Aspirin causes nausea ."}])[0]["tags"]  # a document record reads as its text


def test_the_document_pass_reads_each_document_alone(sweep):
    """'CP' is defined in the first document; the second, tagged in the same call, does not inherit it
    (an O bias of 50 silences the models: the entities left are the document pass's)."""
    from priorkit.documents import Document

    recipe = priorkit.load_model(sweep["tmp"] / "recipe-mixed-doc", o_bias=50.0)
    assert recipe.o_bias == 50.0 and recipe.decode == "viterbi"
    first = Document("a", "Cor pulmonale ( CP ) was seen . The CP worsened .")
    second = Document("b", "The CP worsened .")
    a, b = recipe.tag_documents([first, second])
    assert [(e.text, e.source, e.concept_ids) for e in a.entities] == [("CP", "document", ("MINI:0000010",))]
    assert b.entities == ()
    assert list(recipe.tag_documents([second]))[0].entities == ()


def test_a_sentence_longer_than_the_token_limit_is_read_in_windows(sweep):
    from priorkit.inference.tagger import _best_window, windowed_word_logits, word_windows

    assert word_windows([1] * 10, 4) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    assert word_windows([1] * 3, 4) == [(0, 3)]
    assert word_windows([5, 1, 1], 4) == [(0, 1), (1, 3)]  # a word longer than the budget: alone
    model = priorkit.load_model(sweep["runs"] / "none" / "frac1" / "seed0", max_length=16)
    words = ("The patient with ventricular tachycardia and pneumonia was given lithium " * 4).split()
    rows = windowed_word_logits(model, [words])[0]
    assert rows.shape[0] == len(words)  # every word has scores: nothing is cut
    assert len(model.word_logits([words])[0]) < len(words)  # predict's own reading cuts
    counts = [len(model.tokenizer(w, add_special_tokens=False)["input_ids"]) for w in words]
    spans = word_windows(counts, 16 - 2)
    assert len(spans) > 2
    pieces = model.word_logits([words[s:e] for s, e in spans])
    for i in range(len(words)):
        k = _best_window(i, spans, len(words))
        np.testing.assert_allclose(rows[i], pieces[k][i - spans[k][0]], rtol=1e-5, atol=1e-6)


def test_the_ontology_reads_its_files_from_data_dir_with_the_same_fingerprint(tmp_path):
    from priorkit.errors import PriorkitError as Error

    here = priorkit.get_provider("ontology", path=str(MINI), cache=False)
    (tmp_path / "d").mkdir()
    shutil.copyfile(MINI, tmp_path / "d" / "mini.obo")
    moved = priorkit.get_provider("ontology", path="/nowhere/mini.obo", cache=False, data_dir=str(tmp_path / "d"))
    words = "Ventricular tachycardia ( VT ) and pneumonia".split()
    assert moved.matches(words) == here.matches(words) and moved.matches(words)
    assert moved.data_checksum() == here.data_checksum()
    same = priorkit.get_provider("ontology", path=str(MINI), cache=False, data_dir=str(tmp_path / "d"))
    assert same.fingerprint == here.fingerprint  # the same parameters and files: the same fingerprint
    with pytest.raises(Error, match=r"data_dir .*empty has no mini.obo"):
        (tmp_path / "empty").mkdir()
        priorkit.get_provider("ontology", path=str(MINI), cache=False, data_dir=str(tmp_path / "empty")).matches(words)
    with pytest.raises(Error, match="is not a folder"):
        priorkit.get_provider("ontology", path=str(MINI), data_dir=str(tmp_path / "missing"))


def test_predict_refuses_the_options_a_recipe_carries_itself(sweep):
    from priorkit.cli import cli

    res = CliRunner().invoke(cli, ["predict", str(sweep["tmp"] / "recipe-mixed-doc"), str(sweep["test"]),
                                   "--input-format", "conll", "--document", "0", "--dictionary", "hpo"])
    assert res.exit_code == 2 and "is a recipe: its steps (mix features x0.7 + none x0.3" in res.output
    assert "leave out --dictionary, --document" in res.output


def test_a_conll_document_is_tagged_on_its_own_words_as_predict_tags_them(sweep):
    """A CoNLL file read as one document (the reader keeps its split): tag_documents gives the
    entities predict gives on the same words, as character spans of the document's text."""
    from priorkit.decode.spans import spans
    from priorkit.documents.readers import read_documents

    recipe = priorkit.load_model(sweep["tmp"] / "recipe-mixed-doc")
    (doc,) = list(read_documents(sweep["test"], "conll"))
    (tagged,) = list(recipe.tag_documents([doc]))
    words = _words(sweep["test"])
    assert [s.words for s in tagged.sentences] == words
    want = [(s.tokens[x.start].start, s.tokens[x.end - 1].end, x.type)
            for s, r in zip(tagged.sentences, recipe.predict(words)) for x in spans(r["tags"])]
    assert want and [(e.start, e.end, e.type) for e in tagged.entities] == want
    assert all(doc.text[e.start:e.end] == e.text for e in tagged.entities)


def test_priorkit_recipe_trains_what_the_arm_needs_then_exports(sweep, tmp_path):
    """One fraction and seed of a fresh output folder: the arm's two settings trained, the arm
    scored, the folder written; a second call keeps the valid runs."""
    from priorkit.cli import cli
    from priorkit.training.predictions import read_predictions

    runs = tmp_path / "runs"
    args = ["recipe", str(sweep["pipeline"]), "--arm", "mixed", "--set", f"output_dir={runs}",
            "--out", str(tmp_path / "r")]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in runs.iterdir()) == ["features", "mixed", "none"]  # nothing else trained
    tags = [r["tags"] for r in priorkit.load_model(tmp_path / "r").predict(_words(sweep["test"]))]
    assert tags == read_predictions(runs / "mixed" / "frac1" / "seed0", "test")[0]
    again = CliRunner().invoke(cli, args + ["--force"], catch_exceptions=False)
    assert again.exit_code == 0 and "train: skipped" in again.output and "post-hoc: skipped" in again.output
    res = CliRunner().invoke(cli, ["export", str(sweep["pipeline"]), "--arm", "nope", "--out", str(tmp_path / "x")])
    assert isinstance(res.exception, PriorkitError)  # main() prints it as one line, exit 1
    assert "p.yaml:14: no post-hoc arm 'nope'; the arms are mixed, mixed-doc" in str(res.exception)


def test_a_recipe_without_dictionary_steps_carries_its_members_concept_ids(sweep, tmp_path):
    """An arm with no dictionary step (a mix of a token-features member and another) still gives
    its entities the concept IDs of the features member's dictionary, once the pipeline maps the
    dictionary's groups to types; its tags stay those of the recipe exported without that map."""
    from priorkit.cli import cli

    out = tmp_path / "with-ids"
    res = CliRunner().invoke(cli, ["export", str(sweep["pipeline"]), "--arm", "mixed", "--out", str(out),
                                   "--set", "task.dictionary_types={mini: Disease}"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    info = json.loads((out / "priorkit.json").read_text())
    assert info["dictionary"]["use"].startswith("concept IDs only") and info["dictionary"]["types"] == {"mini": "Disease"}
    assert not any(s["kind"] in ("merge", "fragments", "document") for s in info["steps"])
    plain, with_ids = priorkit.load_model(sweep["tmp"] / "recipe-mixed"), priorkit.load_model(out)
    words = _words(sweep["test"])
    assert [r["tags"] for r in with_ids.predict(words)] == [r["tags"] for r in plain.predict(words)]
    # an entity whose span is exactly a match carries that match's IDs; the recipe without the map carries none
    provider = priorkit.get_provider("ontology", path=str(sweep["onto"] / "mini.obo"), cache=False)
    text = "Cor pulmonale ( CP ) was seen.  Then pneumonia , and ventricular tachycardia again ."
    (tagged,) = list(with_ids.tag_documents([text]))
    (bare,) = list(plain.tag_documents([text]))
    matched = {(s.tokens[m.start].start, s.tokens[m.end - 1].end): tuple(m.concept_ids)
               for s in tagged.sentences for m in provider.matches(s.words)}
    assert matched
    for e in tagged.entities:
        assert e.concept_ids == matched.get((e.start, e.end), ())
    # the tiny model may tag nothing: the steps on scores that tag "Ventricular tachycardia" as a Disease
    labels = list(with_ids.labels)
    scores = np.zeros((4, len(labels)), dtype=np.float32)
    for i, tag in enumerate(["B-Disease", "I-Disease", "O", "O"]):
        scores[i, labels.index(tag)] = 10.0
    words = "Ventricular tachycardia was treated".split()
    assert with_ids.run_steps([words], [scores]).concept_ids[0] != {}
    assert "MINI:0000012" in {i for ids in with_ids.run_steps([words], [scores]).concept_ids[0].values() for i in ids}
    assert plain.run_steps([words], [scores]).concept_ids[0] == {}
    assert all(e.concept_ids == () for e in bare.entities)
    assert [(e.start, e.end, e.type) for e in tagged.entities] == [(e.start, e.end, e.type) for e in bare.entities]

"""Using a trained run: priorkit predict, priorkit.load_model and the saved model folder.

Tiny random BERTs (2 layers, width 32) beside the real MiniLM tokenizer, trained for one
epoch on a few real STS-B pairs / a few CoNLL sentences, with real WordNet priors.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import priorkit
from priorkit.providers.spec import PriorSpec

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def tiny_bert(tiny_bert_dir):
    return tiny_bert_dir


def train(tmp: Path, model: Path, body: str) -> Path:
    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    path = tmp / "p.yaml"
    path.write_text(f"name: t\noutput_dir: {tmp / 'runs'}\nmodel: {{name_or_path: {model}, max_length: 24}}\n"
                    + textwrap.dedent(body)
                    + "train: {epochs: 1, learning_rate: 1.0e-3, batch_size: 8, progress: false, threads: 1, "
                      "logging_steps: 100, save: 'no'}\n")
    result = run_pipeline(load_config(str(path), ()), log=lambda m: None)
    return result.plan.run_dir


@pytest.fixture(scope="module")
def sts_run(tmp_path_factory, tiny_bert):
    return train(tmp_path_factory.mktemp("sts"), tiny_bert, """\
        task: {type: regression, label_scale: 5.0}
        data:
          train: {source: stsb, split: train, sample: 16, sample_seed: 1}
          eval: {source: stsb, split: dev, sample: 8}
        prior: {name: paper, preset: paper, attention: {layers: [0], mode: gate, options: {init: 0.5}}}
        """)


@pytest.fixture(scope="module")
def sts_pairs():
    from priorkit.resources import stsb_path

    rows = [line.rstrip("\n").split("\t") for line in open(stsb_path("test"), encoding="utf-8")][:6]
    return [(r[5], r[6]) for r in rows]


CONLL = """\
Aspirin\tB-Chemical
causes\tO
severe\tO
nausea\tB-Disease
.\tO

Patients\tO
given\tO
lithium\tB-Chemical
carbonate\tI-Chemical
developed\tO
renal\tB-Disease
failure\tI-Disease
.\tO

"""


def train_ner(tmp: Path, model: Path, repeat: int, prior: str = "") -> Path:
    """A tiny NER run on CONLL x ``repeat`` (``prior``: the pipeline's prior line, if any)."""
    (tmp / "train.conll").write_text(CONLL * repeat)
    return train(tmp, model, f"""\
        task: {{type: token-classification, metric: f1}}
        data:
          train: {{path: {tmp / 'train.conll'}}}
          eval: {{path: {tmp / 'train.conll'}, limit: 2}}
        """ + prior)


@pytest.fixture(scope="module")
def ner_run(tmp_path_factory, tiny_bert):
    return train_ner(tmp_path_factory.mktemp("ner"), tiny_bert, 4, "prior: {name: wn, provider: wordnet, "
                     "params: {measure: wup}, layout: full, attention: {layers: [0]}}\n")


# --------------------------------------------------------------------------- the folder
def test_model_folder_carries_the_prior_and_a_model_card(sts_run):
    folder = sts_run / "model"
    info = json.loads((folder / "priorkit.json").read_text())
    assert info["task"] == {"type": "regression", "labels": None, "label_scale": 5.0, "metric": "spearman"}
    assert info["inputs"] == "pairs" and info["max_length"] == 24
    prior = info["prior"]
    wn = priorkit.get_provider("wordnet", measure="xia2021")
    assert (prior["provider"], prior["params"], prior["fingerprint"]) == ("wordnet", {"measure": "xia2021"},
                                                                       wn.fingerprint)
    assert info["format"] == 4 and list(info["channels"]) == ["attention"]
    assert sorted(p.name for p in folder.glob("priorkit*")) == ["priorkit.json"]  # one priorkit file
    assert "priorkit" not in json.loads((folder / "config.json").read_text())  # nor a section in config.json
    assert info["run"]["prior_name"] == "paper" and info["run"]["train"]["train_key"]
    assert prior["spec"] == {"provider": "wordnet", "params": {}, "preset": "paper", "layout": "full", "keys": "strip",
                             "neutral": 1.0, "stop_words": None, "stop_value": 0.0}  # as the pipeline wrote it
    built = PriorSpec.from_dict(prior["spec"]).resolved()
    assert (built.layout, built.keys, built.neutral) == ("paper", "paper", 1.0)
    attention = info["channels"]["attention"]  # as the live channel applied it
    assert attention == {"layers": [0], "mode": "gate", "heads": None, "options": {"init": 0.5}}
    assert Path(prior["cache"]).exists()
    metrics = json.loads((sts_run / "metrics.json").read_text())["metrics"]
    assert info["scores"]["eval"]["spearman"] == metrics["eval"]["spearman"]
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: transformers\n")
    assert "pipeline_tag: sentence-similarity" in card and "- prior-wordnet" in card
    assert f"| spearman | {metrics['eval']['spearman']:.4f} |" in card
    assert wn.fingerprint in card and "mode gate, layers [0]" in card
    assert "priorkit.load_model(" in card and "priorkit predict" in card
    assert "\n## Training\n\n```bash\n" in card and "train: `{" in card


# --------------------------------------------------------------------------- equal logits
def test_predict_load_model_and_a_copied_folder_give_equal_logits(sts_run, sts_pairs, tmp_path):
    model = priorkit.load_model(sts_run)
    assert model.model.config._attn_implementation == "priorkit_sdpa"  # prior attention is back on
    gate = model.model.bert.encoder.layer[0].attention.self.prior_gate
    assert not torch.allclose(gate, torch.full_like(gate, 0.5))  # the learnt gates, not their init
    reference = np.stack(model.logits(sts_pairs))
    by_dicts = np.stack(model.logits([{"text_a": a, "text_b": b} for a, b in sts_pairs], batch_size=3))
    np.testing.assert_allclose(by_dicts, reference, atol=1e-5)  # other batches: padding changes (almost) nothing

    shared = tmp_path / "shared-model"  # the folder alone, somewhere else, without its run
    shutil.copytree(sts_run / "model", shared)
    again = priorkit.load_model(shared)
    np.testing.assert_array_equal(np.stack(again.logits(sts_pairs)), reference)

    records = model.predict(sts_pairs)
    assert [r["score"] for r in records] == [float(v) * 5.0 for v in reference[:, 0]]

    source = tmp_path / "in.tsv"
    source.write_text("sentence1\tsentence2\n" + "".join(f"{a}\t{b}\n" for a, b in sts_pairs))
    out = tmp_path / "pred.jsonl"
    result = cli("predict", str(sts_run), str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["text_a"], r["text_b"]) for r in lines] == sts_pairs  # input order
    assert [r["score"] for r in lines] == [r["score"] for r in records]

    # without its prior the same weights predict something else: the prior is really applied
    priorkit.disable_prior_attention(model.model)
    model.builder = None
    stock = np.stack(model.logits(sts_pairs))
    assert np.abs(stock - reference).max() > 1e-7, "the prior changed nothing"


def test_plain_from_pretrained_refuses_a_prior(sts_run, sts_pairs):
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(sts_run / "model"))
    builder = priorkit.load_model(sts_run).builder
    batch = builder.build_batch([a for a, _ in sts_pairs[:2]], [b for _, b in sts_pairs[:2]])
    with pytest.raises(priorkit.PriorkitError, match=r"saved by priorkit with its channels .* priorkit.load_model"):
        model(**batch)
    batch.pop("prior")
    assert model(**batch).logits.shape == (2, 1)  # the stock model still runs without a prior


def test_ner_predicts_tags_per_word_and_entity_spans(ner_run, tmp_path):
    model = priorkit.load_model(ner_run)
    assert model.inputs == "words" and model.task_type == "token-classification"
    sentences = [["Aspirin", "causes", "nausea", "."], "lithium carbonate causes renal failure"]
    records = model.predict(sentences)
    assert [len(r["tags"]) for r in records] == [4, 5]
    for words, r in zip([sentences[0], sentences[1].split()], records):
        assert set(r["tags"]) <= {"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}
        assert r["entities"] == priorkit.inference.entities(words, r["tags"])
    logits = model.logits(sentences)
    word_ids = model.tokenizer(sentences[0], is_split_into_words=True).word_ids()
    first = [word_ids.index(w) for w in range(4)]  # each word's first sub-token carries its tag
    assert records[0]["tags"] == [model.labels[i] for i in logits[0][first].argmax(-1)]

    words = tmp_path / "words.conll"  # CoNLL without tags: one word per line
    words.write_text("Aspirin\ncauses\nnausea\n.\n\nlithium\ncarbonate\ncauses\nrenal\nfailure\n")
    out = tmp_path / "ner.jsonl"
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["tags"] for r in lines] == [r["tags"] for r in records]
    assert [r["entities"] for r in lines] == [r["entities"] for r in records]


def test_ner_viterbi_decoding_from_the_manifest_the_api_and_the_cli(ner_run, sts_run, tmp_path):
    from priorkit.decode.decoding import decode_tags

    info = json.loads((ner_run / "model" / "priorkit.json").read_text())
    assert info["task"]["decode"] == "argmax"  # the run's task.decode
    model = priorkit.load_model(ner_run, decode="viterbi")
    assert model.decode == "viterbi"
    sentences = [["Aspirin", "causes", "nausea", "."], "lithium carbonate causes renal failure".split(),
                 ["renal", "failure", "after", "lithium"]]
    blocks = model.word_logits(sentences)
    assert [len(b) for b in blocks] == [4, 5, 4]
    records = model.predict(sentences)
    for r, block in zip(records, blocks):
        assert r["tags"] == decode_tags(block, model.labels, "viterbi")
        for prev, tag in zip(["O"] + r["tags"], r["tags"]):  # every I-X continues an X
            assert not tag.startswith("I-") or prev[2:] == tag[2:], r["tags"]
    model.decode = "argmax"
    assert [r["tags"] for r in model.predict(sentences)] == [[model.labels[k] for k in b.argmax(-1)] for b in blocks]
    assert info["task"]["o_bias"] == 0.0
    biased = priorkit.load_model(ner_run, decode="viterbi", o_bias=0.8)
    assert [r["tags"] for r in biased.predict(sentences)] == [decode_tags(b, model.labels, "viterbi", 0.8)
                                                               for b in blocks]

    words = tmp_path / "words.conll"
    words.write_text("\n\n".join("\n".join(s) for s in sentences) + "\n")
    out = tmp_path / "ner.jsonl"
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--decode", "viterbi",
                 "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert [json.loads(line)["tags"] for line in out.read_text().splitlines()] == [r["tags"] for r in records]
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--o-bias", "100", "--out",
                 str(out), "--force")
    assert result.returncode == 0, result.stderr[-2000:]
    assert all(set(json.loads(line)["tags"]) == {"O"} for line in out.read_text().splitlines())
    with pytest.raises(priorkit.PriorkitError, match="o_bias shifts the tag O of an NER model"):
        priorkit.load_model(sts_run, o_bias=0.5)
    with pytest.raises(priorkit.PriorkitError, match="viterbi decoding is for token classification"):
        priorkit.load_model(sts_run, decode="viterbi")
    with pytest.raises(priorkit.PriorkitError, match="decode 'beam' is not one of argmax, viterbi"):
        model.decode = "beam"


def test_predict_joins_fragments_and_reads_the_document_with_a_dictionary(ner_run, tmp_path):
    from priorkit.config import PosthocConfig
    from priorkit.evaluation.posthoc import add_document_matches, dictionary_tags, document_tags, join_fragments

    mini = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"
    sentences = [s.split() for s in ("Cor pulmonale ( CP ) was seen .", "The CP worsened with arrhythmia .",
                                     "Aspirin causes nausea .")]
    words = tmp_path / "doc.conll"
    words.write_text("\n\n".join("\n".join(x) for x in sentences) + "\n")
    plain, joined = tmp_path / "plain.jsonl", tmp_path / "joined.jsonl"
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--out", str(plain))
    assert result.returncode == 0, result.stderr[-2000:]
    types = '{"mini": "Disease"}'
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--dictionary", str(mini),
                 "--dictionary-types", types, "--fragments", "--document", "1", "--out", str(joined))
    assert result.returncode == 0, result.stderr[-2000:]
    # what a sweep's post-hoc arm with fragments and document: 1 does to the same tags
    arm = PosthocConfig(params={"path": str(mini)}, types={"mini": "Disease"})
    sentence = dictionary_tags(arm, [{"words": w} for w in sentences])
    doc = document_tags(arm, sentences, [0, 1, 2], 1)
    assert doc[1][1] == "B-Disease" and sentence[1][1] == "O"  # "CP" is known one sentence on, by the document
    tags = [json.loads(line)["tags"] for line in plain.read_text().splitlines()]
    want = [add_document_matches(join_fragments(t, d), d, x) for t, d, x in zip(tags, sentence, doc)]
    got = [json.loads(line) for line in joined.read_text().splitlines()]
    assert [r["tags"] for r in got] == want
    assert [r["entities"] for r in got] == [priorkit.inference.entities(w, t) for w, t in zip(sentences, want)]
    # the flags need each other, and a readable type map
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--fragments")
    assert bad.returncode == 2 and "need --dictionary" in bad.stderr
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--dictionary", str(mini))
    assert bad.returncode == 2 and "add one of them" in bad.stderr
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--dictionary", str(mini),
              "--document", "1", "--dictionary-types", "{mini: Disease")
    assert bad.returncode == 2 and "--dictionary-types" in bad.stderr and "not JSON" in bad.stderr
    # no type map is the default: the model's entity types are not the mini ontology's group, so
    # the dictionary's matches cannot be read as them without --dictionary-types
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--dictionary", str(mini),
              "--fragments")
    assert bad.returncode == 2 and "no type map" in bad.stderr and "set --dictionary-types" in bad.stderr, bad.stderr
    # the model's finds carried across the document (--propagate, --share) were removed
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--propagate", "-1")
    assert bad.returncode == 2 and "--propagate was removed" in bad.stderr, bad.stderr
    bad = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--share", "0.5")
    assert bad.returncode == 2 and "--share was removed" in bad.stderr, bad.stderr


@pytest.fixture(scope="module")
def ner_plain_run(tmp_path_factory, tiny_bert):
    """A second NER model, without a prior: the other half of an ensemble."""
    return train_ner(tmp_path_factory.mktemp("ner-plain"), tiny_bert, 3)


def test_an_ensemble_mixes_word_log_probabilities(ner_run, ner_plain_run, sts_run, tmp_path):
    from priorkit.decode.decoding import decode_tags, log_softmax
    from priorkit.inference import Ensemble

    sentences = [["Aspirin", "causes", "nausea", "."], "lithium carbonate causes renal failure".split()]
    a, b = priorkit.load_model(ner_run), priorkit.load_model(ner_plain_run)
    la, lb = a.word_logits(sentences), b.word_logits(sentences)
    assert any(not np.allclose(x, y) for x, y in zip(la, lb))  # two different models
    cols = [list(b.labels).index(name) for name in a.labels]
    for w in (0.5, 0.8):
        ens = Ensemble([a, b], [w, 1 - w], decode="viterbi")
        mixed = ens.word_log_probs(sentences)
        for m, x, y in zip(mixed, la, lb):
            np.testing.assert_allclose(m, w * log_softmax(x) + (1 - w) * log_softmax(y[:, cols]), rtol=1e-6)
        assert [r["tags"] for r in ens.predict(sentences)] == [decode_tags(m, a.labels, "viterbi") for m in mixed]
    alone = Ensemble([a, b], [1.0, 0.0], decode="argmax").predict(sentences)
    assert [r["tags"] for r in alone] == [r["tags"] for r in a.predict(sentences)]

    words = tmp_path / "words.conll"
    words.write_text("\n\n".join("\n".join(x) for x in sentences) + "\n")
    out = tmp_path / "ens.jsonl"
    result = cli("predict", str(ner_run), str(words), "--input-format", "conll", "--with", str(ner_plain_run),
                 "--weight", "0.8", "--decode", "viterbi", "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    want = priorkit.load_ensemble([ner_run, ner_plain_run], [0.8, 0.2], decode="viterbi").predict(sentences)
    assert [json.loads(line)["tags"] for line in out.read_text().splitlines()] == [r["tags"] for r in want]

    with pytest.raises(priorkit.PriorkitError, match="ensembles mix NER models only"):
        priorkit.load_ensemble([ner_run, sts_run])
    with pytest.raises(priorkit.PriorkitError, match="1 weights for 2 models"):
        Ensemble([a, b], [1.0])
    with pytest.raises(priorkit.PriorkitError, match="non-negative with a positive sum"):
        Ensemble([a, b], [1.0, -0.5])
    with pytest.raises(priorkit.PriorkitError, match="at least two models"):
        Ensemble([a])
    with pytest.raises(priorkit.PriorkitError, match="o_bias must be a finite number, got nan"):
        Ensemble([a, b], o_bias=float("nan"))
    result = cli("predict", str(ner_run), str(words), "--weight", "0.5")
    assert result.returncode == 2 and "name the others with --with" in result.stderr


def test_entities_from_bio_and_bioes():
    from priorkit.inference import entities

    words = "a b c d e f".split()
    assert entities(words, ["B-X", "I-X", "O", "I-Y", "B-Y", "I-Y"]) == [
        {"type": "X", "start": 0, "end": 2, "text": "a b"},
        {"type": "Y", "start": 3, "end": 4, "text": "d"},
        {"type": "Y", "start": 4, "end": 6, "text": "e f"}]
    assert entities(words, ["S-X", "B-Y", "E-Y", "B-X", "I-Z", "O"]) == [
        {"type": "X", "start": 0, "end": 1, "text": "a"},
        {"type": "Y", "start": 1, "end": 3, "text": "b c"},
        {"type": "X", "start": 3, "end": 4, "text": "d"},
        {"type": "Z", "start": 4, "end": 5, "text": "e"}]


def test_classification_gives_label_and_probabilities(tiny_bert, minilm_tokenizer):
    from transformers import AutoModelForSequenceClassification

    from priorkit.inference import Predictor

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_bert), num_labels=3)
    p = Predictor(model, minilm_tokenizer, None, task_type="pair-classification", labels=["no", "maybe", "yes"],
                  label_scale=1.0, inputs="pairs", max_length=24, info={}, folder=tiny_bert)
    records = p.predict([("A cat.", "A dog."), ("It rains.", "It is wet.")])
    logits = np.stack(p.logits([("A cat.", "A dog."), ("It rains.", "It is wet.")]))
    for r, row in zip(records, logits):
        assert list(r["probs"]) == ["no", "maybe", "yes"]
        assert sum(r["probs"].values()) == pytest.approx(1.0)
        assert r["label"] == ["no", "maybe", "yes"][int(row.argmax())]
    with pytest.raises(priorkit.PriorkitError, match="input 0 is a single text"):
        p.predict(["A cat."])


# --------------------------------------------------------------------------- bad input
def in_process(capsys, *args: str) -> tuple[int, str]:
    """``priorkit ARGS`` through the real entry point in this process: (exit status, stderr)."""
    from priorkit.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def test_predict_refuses_bad_folders_inputs_and_existing_out(sts_run, tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text("sentence1,sentence2\nA man plays guitar.,A woman plays the guitar.\n")
    (tmp_path / "not-a-run").mkdir()
    code, err = in_process(capsys, "predict", str(tmp_path / "not-a-run"), str(source))
    assert code == 1
    assert err.strip().splitlines() == [
        f"error: {tmp_path / 'not-a-run' / 'config.json'} is missing: {tmp_path / 'not-a-run'} is not a model "
        "folder (a run folder holds it under model/)"]

    broken = tmp_path / "no-weights"
    shutil.copytree(sts_run / "model", broken)
    (broken / "model.safetensors").unlink()
    code, err = in_process(capsys, "predict", str(broken), str(source))
    assert code == 1 and "model.safetensors is missing" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1

    single = tmp_path / "single.csv"
    single.write_text("text,label\nA man plays guitar.,1\n")
    code, err = in_process(capsys, "predict", str(sts_run), str(single))
    assert code == 1
    assert "compares sentence pairs" in err and "columns: text, label" in err

    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    code, err = in_process(capsys, "predict", str(sts_run), str(source), "--out", str(out))
    assert code == 2 and "--force" in err
    assert out.read_text() == "keep me\n"
    result = cli("-q", "predict", str(sts_run), str(source), "--out", str(out), "--force")
    assert result.returncode == 0 and json.loads(out.read_text())["score"] > -1e9
    assert result.stderr == ""  # --quiet: no progress bar, no notice


def test_long_text_is_truncated_with_a_warning(sts_run):
    model = priorkit.load_model(sts_run)
    long = " ".join(["word"] * 200)
    with pytest.warns(priorkit.inference.PredictionWarning, match=r"1 of 2 inputs are longer than 24 tokens"):
        records = model.predict([(long, "A short one."), ("A man.", "A woman.")])
    assert len(records) == 2 and model.truncated == [0]
    with pytest.raises(priorkit.PriorkitError, match="more than the model takes"):
        priorkit.load_model(sts_run, max_length=4096)


def test_cache_is_read_never_written_and_a_locked_cache_is_skipped(sts_run, sts_pairs):
    from priorkit.cache import CachedProvider, PriorCache

    cache_file = Path(json.loads((sts_run / "model" / "priorkit.json").read_text())["prior"]["cache"])
    before = PriorCache(cache_file, read_only=True).count()
    model = priorkit.load_model(sts_run)
    assert isinstance(model.builder.provider, CachedProvider)
    reference = np.stack(model.logits(sts_pairs))  # test pairs: words training never saw
    assert model.builder.provider.stats.misses > 0 and model.builder.provider.stats.hits > 0
    del model
    assert PriorCache(cache_file, read_only=True).count() == before  # computed, not written

    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import duckdb, time
        con = duckdb.connect({str(cache_file)!r})
        print("holding", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.warns(priorkit.inference.PredictionWarning, match="not reading the prior cache"):
            locked = priorkit.load_model(sts_run)
        np.testing.assert_array_equal(np.stack(locked.logits(sts_pairs)), reference)  # same values, computed
    finally:
        holder.kill()
        holder.wait()
    assert PriorCache(cache_file, read_only=True).count() == before

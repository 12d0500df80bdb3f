"""Knowledge as token features (priorkit.channels.features): matches, alignment, control, the gated
input, save/reload, pipeline checks and an outside plug-in.  Real ontologies (hand-made OBO
files, HPO + MeSH), the real MiniLM tokenizer, a tiny random BERT for the model side."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import priorkit
from priorkit import Match
from priorkit.align import load_tokenizer
from priorkit.errors import PriorkitError, ProviderOutputError
from priorkit.channels.features import FeatureConfig
from priorkit.providers.plugins import PriorkitPluginManager

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "tests" / "fixtures" / "ontology" / "mini.obo"

#: two roots with one prefix (named mesh:C / mesh:D) and a concept under both
TWO_TREES = """\
format-version: 1.2

[Term]
id: MESHCAT:C
name: Diseases

[Term]
id: MESHCAT:D
name: Chemicals

[Term]
id: MESH:D1
name: seizure
is_a: MESHCAT:C

[Term]
id: MESH:D2
name: cocaine
is_a: MESHCAT:D

[Term]
id: MESH:D3
name: lithium carbonate
is_a: MESHCAT:D

[Term]
id: MESH:D4
name: heparin toxicity
is_a: MESHCAT:C
is_a: MESHCAT:D
"""


@pytest.fixture(scope="module")
def two_trees(tmp_path_factory):
    path = tmp_path_factory.mktemp("obo") / "trees.obo"
    path.write_text(TWO_TREES)
    return priorkit.get_provider("ontology", path=str(path), cache=False)


@pytest.fixture(scope="module")
def tiny_ner(tmp_path_factory, minilm_tokenizer):
    """A random 2-layer BERT token classifier with the MiniLM vocabulary, and its folder."""
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                        num_labels=3)
    folder = tmp_path_factory.mktemp("tiny-ner")
    BertForTokenClassification(config).save_pretrained(folder)
    minilm_tokenizer.save_pretrained(folder)
    return folder


def _model(folder):
    from transformers import AutoModelForTokenClassification

    return AutoModelForTokenClassification.from_pretrained(str(folder))


# ---- the provider interface -------------------------------------------------------
def test_ontology_groups_are_named_roots_and_a_mention_in_two_trees_gives_two_matches(two_trees):
    assert two_trees.match_groups() == ["mesh:C", "mesh:D"]
    words = "Cocaine and heparin toxicity caused a seizure .".split()
    got = two_trees.matches(words)
    assert got == [
        Match(0, 1, ("MESH:D2",), "mesh:D"),
        Match(2, 4, ("MESH:D4",), "mesh:C"),
        Match(2, 4, ("MESH:D4",), "mesh:D"),
        Match(6, 7, ("MESH:D1",), "mesh:C"),
    ]
    single = priorkit.get_provider("ontology", path=str(MINI), cache=False)
    assert single.match_groups() == ["mini"]
    assert [(m.start, m.end, m.group) for m in single.matches("pneumonia with tachycardia".split())] == [
        (0, 1, "mini"), (2, 3, "mini")]


@pytest.fixture(scope="module")
def hpo_mesh():
    return priorkit.get_provider("ontology", source="hpo+mesh")


def test_hpo_mesh_matches_on_a_real_sentence(hpo_mesh):
    assert hpo_mesh.match_groups() == ["hpo", "mesh:C", "mesh:D"]
    words = "Cocaine induced myocardial infarction and seizures in rats .".split()
    spans = {(m.start, m.end, m.group) for m in hpo_mesh.matches(words)}
    assert {(0, 1, "mesh:D"), (2, 4, "hpo"), (2, 4, "mesh:C"), (5, 6, "mesh:C")} <= spans
    assert all(m.concept_ids for m in hpo_mesh.matches(words))


def test_a_provider_without_matches_says_so():
    wordnet = priorkit.get_provider("wordnet")
    assert not wordnet.supports_matches
    with pytest.raises(ProviderOutputError, match="has no concept matches.*ontology"):
        wordnet.matches(["cat"])


OUTSIDE = """
    import priorkit
    from priorkit import Match

    class Capitals(priorkit.PriorProvider):
        '''Every capitalised word is a mention of group "cap"; ``bad`` breaks the output.'''
        name = "capitals"

        def __init__(self, bad: str = ""):
            super().__init__(bad=bad)

        def compute(self, left, right):
            import numpy as np
            return np.full((len(left), len(right)), np.nan, dtype=np.float32)

        def match_groups(self):
            return ["cap"]

        def compute_matches(self, words):
            out = [Match(i, i + 1, (w.upper(),), "cap") for i, w in enumerate(words) if w[:1].isupper()]
            bad = self.params["bad"]
            if bad == "span":
                out.append(Match(len(words), len(words) + 1, ("X",), "cap"))
            elif bad == "overlap":
                out.append(Match(0, 2, ("X",), "cap"))
            elif bad == "group":
                out = [Match(0, 1, ("X",), "nope")]
            elif bad == "type":
                out = [(0, 1)]
            return out

    @priorkit.hookimpl
    def register_prior_providers(register):
        register("capitals", Capitals)
"""


@pytest.fixture()
def capitals_dir(tmp_path):
    (tmp_path / "capitals_plugin.py").write_text(textwrap.dedent(OUTSIDE))
    return tmp_path


@pytest.mark.parametrize("bad, words", [
    ("span", "span"), ("overlap", "overlapping"), ("group", "does not list"), ("type", "not a priorkit.Match"),
])
def test_bad_plugin_matches_are_caught_with_its_name(capitals_dir, bad, words):
    pm = PriorkitPluginManager(plugins_dir=capitals_dir, load_entry_points=False)
    provider = pm.get_provider("capitals", bad=bad)
    with pytest.raises(ProviderOutputError, match=words) as exc:
        provider.matches(["Aspirin", "and", "Heparin"])
    assert "'capitals'" in str(exc.value) and "capitals_plugin" in str(exc.value)


def test_outside_plugin_gives_token_features(capitals_dir, minilm_tokenizer):
    from priorkit.channels.features import FeatureBuilder

    pm = PriorkitPluginManager(plugins_dir=capitals_dir, load_entry_points=False)
    provider = pm.get_provider("capitals")
    assert provider.supports_matches
    builder = FeatureBuilder(provider, FeatureConfig(), minilm_tokenizer)
    batch = builder.encode([["Aspirin", "and", "heparin"]])
    f = batch["token_features"][0]
    firsts = [t for t, w in enumerate(batch.word_ids(0)) if w == 0]
    assert f[firsts[0]].tolist() == [1.0, 0.0] and f.sum().item() == len(firsts)  # B then I on its pieces


def test_overriding_matches_is_refused():
    with pytest.raises(TypeError, match="compute_matches"):
        class Sneaky(priorkit.PriorProvider):  # noqa: F841
            def matches(self, words):
                return []


# ---- features on tokens ---------------------------------------------------------
def test_word_pieces_inherit_and_b_only_on_the_first_piece(two_trees, minilm_tokenizer):
    from priorkit.channels.features import FeatureBuilder

    builder = FeatureBuilder(two_trees, FeatureConfig(), minilm_tokenizer, max_length=64)
    words = ["Cocaine", "and", "heparin", "toxicity", "caused", "a", "seizure"]
    batch = builder.encode([words, ["no", "match"]])
    f = batch["token_features"]
    assert f.shape == (2, batch["input_ids"].shape[1], 4)  # B/I x mesh:C, mesh:D
    word_ids = batch.word_ids(0)
    pieces = {w: [t for t, x in enumerate(word_ids) if x == w] for w in range(len(words))}
    assert len(pieces[2]) + len(pieces[3]) > 2, "the test needs a word cut into pieces"
    C_B, C_I, D_B, D_I = range(4)
    for t, w in enumerate(word_ids):
        row = f[0, t].tolist()
        if w is None or w in (1, 4, 5):  # specials, padding, unmatched words
            assert row == [0, 0, 0, 0]
        elif w == 0:  # cocaine: one-word mention of mesh:D
            assert row == ([0, 0, 1, 0] if t == pieces[0][0] else [0, 0, 0, 1])
        elif w in (2, 3):  # heparin toxicity: both groups, B only on the first piece of "heparin"
            assert row == ([1, 0, 1, 0] if t == pieces[2][0] else [0, 1, 0, 1])
        elif w == 6:
            assert row == ([1, 0, 0, 0] if t == pieces[6][0] else [0, 1, 0, 0])
    assert f[1].sum() == 0 and f[0, batch["attention_mask"][0] == 0].sum() == 0


def test_groups_select_columns_and_concept_buckets_are_stable(two_trees, minilm_tokenizer):
    from priorkit.channels.features import FeatureBuilder, concept_bucket

    builder = FeatureBuilder(two_trees, FeatureConfig(groups=["mesh:D"], concept_buckets=64), minilm_tokenizer)
    batch = builder.encode([["cocaine", "and", "seizure"]])
    assert batch["token_features"].shape[-1] == 2
    first = batch.word_ids(0).index(0)
    assert batch["token_concepts"][0, first].tolist()[0] == concept_bucket("MESH:D2", 64)
    assert batch["token_concepts"][0, batch.word_ids(0).index(2)].sum() == 0  # seizure: group not chosen
    assert concept_bucket("MESH:D2", 64) == concept_bucket("MESH:D2", 64) and 1 <= concept_bucket("x", 3) <= 3
    with pytest.raises(PriorkitError, match="not groups of provider"):
        FeatureBuilder(two_trees, FeatureConfig(groups=["mesh:Z"]), minilm_tokenizer)


def test_random_spans_keep_count_lengths_groups_and_are_deterministic(two_trees):
    from priorkit_plugins.controls import RandomSpansProvider, random_spans
    from priorkit.channels.features import FeatureBuilder

    words = "Cocaine and heparin toxicity caused a seizure in the rats of this study".split()
    real = two_trees.matches(words)
    seen = set()
    for seed in range(6):
        moved = random_spans(real, words, seed)
        assert moved == random_spans(real, words, seed)  # deterministic per sentence and seed
        assert sorted((m.end - m.start, m.group, m.concept_ids) for m in moved) == sorted(
            (m.end - m.start, m.group, m.concept_ids) for m in real)
        spans = sorted({(m.start, m.end) for m in moved})
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])) and spans[-1][1] <= len(words)
        seen.add(tuple(spans))
    assert len(seen) > 1  # the seed moves them
    provider = RandomSpansProvider(two_trees, seed=3)  # the control provider, around the real one
    assert provider.match_groups() == two_trees.match_groups()
    control = FeatureBuilder(provider, FeatureConfig())
    assert control.matches(words) == random_spans(real, words, 3)
    assert priorkit.get_provider("random-spans", provider=two_trees, seed=3).fingerprint == provider.fingerprint
    assert random_spans([], words, 0) == []


# ---- the model side ------------------------------------------------------------
def test_gated_input_starts_as_an_exact_no_op_and_gets_gradients(tiny_ner, two_trees, one_torch_thread):
    from priorkit.channels.features import FeatureBuilder, attach_for, detach_features, feature_module

    tokenizer = load_tokenizer(str(tiny_ner))
    builder = FeatureBuilder(two_trees, FeatureConfig(concept_buckets=16), tokenizer, max_length=32)
    batch = builder.encode([["Cocaine", "and", "heparin", "toxicity"], ["a", "seizure"]])
    plain = {k: v for k, v in batch.items() if not k.startswith("token_")}
    model = _model(tiny_ner).eval()
    with torch.no_grad():
        before = model(**plain).logits
    attach_for(model, builder)
    with torch.no_grad():
        assert torch.equal(model(**batch).logits, before)  # W = 0: exactly the pretrained model
        assert torch.equal(model(**plain).logits, before)  # no token_features: the stock model
    model.train()
    model(**batch, labels=torch.zeros_like(batch["input_ids"])).loss.backward()
    module = feature_module(model)
    assert module.proj.weight.grad.abs().sum() > 0 and module.concepts.weight.grad.abs().sum() > 0
    # with trained weights the features change the output
    with torch.no_grad():
        module.proj.weight.normal_()
    model.eval()
    with torch.no_grad():
        assert not torch.equal(model(**batch).logits, before)
    detach_features(model)
    assert feature_module(model) is None
    with torch.no_grad():
        assert torch.equal(model(**plain).logits, before)
    from priorkit.attention.guard import PriorNotEnabledError

    with pytest.raises(PriorNotEnabledError, match="token_features"):
        model(**batch)


def test_feature_dropout_only_in_training():
    from priorkit.channels.features import TokenFeatureInput

    module = TokenFeatureInput(2, 4, dropout=0.5, gate="scalar")
    with torch.no_grad():
        module.proj.weight.fill_(1.0)
    e = torch.zeros(1, 400, 4)
    f = torch.ones(1, 400, 2)
    module.eval()
    assert torch.equal(module(e, f), module(e, f)) and (module(e, f) != 0).all()
    module.train()
    dropped = (module(e, f)[0, :, 0] == 0).float().mean().item()
    assert 0.35 < dropped < 0.65


def test_features_restored_bit_for_bit_after_reload(tiny_ner, two_trees, tmp_path, one_torch_thread):
    """The features channel describes itself, is restored from that description and takes its
    weights from the model's own model.safetensors (no side file)."""
    from priorkit.channels import Context
    from priorkit.channels.features.channel import FeatureChannel
    from priorkit.channels.features import FeatureBuilder, feature_module

    tokenizer = load_tokenizer(str(tiny_ner))
    path = Path(two_trees.params["path"])
    config = FeatureConfig(provider="ontology", params={"path": str(path), "cache": False}, concept_buckets=8,
                           gate="token")
    builder = FeatureBuilder(priorkit.get_provider("ontology", path=str(path), cache=False), config, tokenizer, 32)
    model = _model(tiny_ner)
    channel = FeatureChannel(builder)
    channel.attach(model)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in feature_module(model).parameters():
            p.normal_()
    model.eval()
    batch = builder.encode([["Cocaine", "and", "heparin", "toxicity"], ["a", "seizure", "."]])
    with torch.no_grad():
        want = model(**batch).logits
    model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if "features" in p.name) == []  # one copy: model.safetensors
    description = json.loads(json.dumps(channel.describe()))  # as priorkit.json keeps it
    again = _model(tmp_path).eval()
    assert feature_module(again) is None  # a plain from_pretrained drops them
    restored = FeatureChannel.restore(description, Context(tokenizer, 32, folder=tmp_path))
    restored.attach(again)
    restored.load_state(again, tmp_path)
    assert restored.builder.groups == builder.groups and restored.builder.config.concept_buckets == 8
    batch2 = restored.builder.encode([["Cocaine", "and", "heparin", "toxicity"], ["a", "seizure", "."]])
    assert all(torch.equal(batch[k], batch2[k]) for k in batch)
    with torch.no_grad():
        assert torch.equal(again.eval()(**batch2).logits, want)
    fresh = _model(tiny_ner)  # a folder without the features' weights says so
    FeatureChannel.restore(description, Context(tokenizer, 32)).attach(fresh)
    with pytest.raises(priorkit.PriorkitError, match="weights of the features channel"):
        FeatureChannel(builder).load_state(fresh, tiny_ner)


# ---- the pipeline -----------------------------------------------------------------
def _pipeline(tmp_path, body: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    return path


NER = """\
name: feats
task: {type: token-classification}
data:
  train: {source: bc5cdr, split: train}
  eval: {source: bc5cdr, split: devel}
"""


@pytest.mark.parametrize("body, line, field, words", [
    (NER.replace("token-classification", "regression").replace("bc5cdr, split: train", "stsb")
     .replace("bc5cdr, split: devel", "stsb, split: dev")
     + "prior:\n  provider: ontology\n  features: {dropout: 0.2}\n", 8, "prior.features", "token-classification"),
    (NER + "prior:\n  provider: wordnet\n  features: {}\n", 7, "prior.provider", "has no concept matches"),
    (NER + "prior:\n  provider: ontology\n  features:\n    provider: wordnet\n", 9, "prior.features.provider",
     "has no concept matches"),
    (NER + "prior:\n  provider: ontology\n  features:\n    dropout: 1.5\n", 9, "prior.features.dropout", "[0, 1)"),
    (NER + "prior:\n  provider: ontology\n  attention: null\n", 8, "prior.attention", "would do nothing"),
    (NER + "prior:\n  provider: ontology\n  features: {}\nsweep:\n  priors:\n    none: null\n"
     "    w:\n      features: {provider: wordnet}\n", 13, "sweep.priors.w.features.provider",
     "has no concept matches"),
])
def test_pipeline_feature_errors_name_file_and_line(tmp_path, body, line, field, words):
    from priorkit.config import ConfigError, load_config

    path = _pipeline(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert f"{path}:{line}" in msg and field in msg and words in msg


def test_features_only_setting_and_sweep_overrides(tmp_path):
    from priorkit.config import load_config, prior_settings
    from priorkit.training.plan import prior_identity

    path = _pipeline(tmp_path, NER + textwrap.dedent("""\
        prior:
          provider: ontology
          params: {source: hpo+mesh, measure: concept}
          attention: {mode: bias}
        sweep:
          priors:
            none: null
            features: {attention: null, features: {}}
            both: {features: {concept_buckets: 256}}
            control: {attention: null, features: {provider: random-spans,
                      params: {provider: ontology, params: {source: hpo+mesh, measure: concept}, seed: 2}}}
        """))
    cfg = load_config(path, ["sweep.priors.both.features.dropout=0.3"])
    s = prior_settings(cfg)
    assert s["features"].attention is None and s["features"].features == FeatureConfig()
    assert s["both"].attention.mode == "bias" and s["both"].features.concept_buckets == 256
    assert s["both"].features.dropout == 0.3
    assert s["control"].features.provider == "random-spans" and s["control"].features.params["seed"] == 2
    assert cfg.prior.features is None and "features" not in prior_identity(cfg.prior)  # old keys hold
    assert prior_identity(s["features"]) != prior_identity(s["control"])


def test_shipped_features_pipeline(tmp_path):
    from priorkit.config import load_config, prior_settings

    cfg = load_config(ROOT / "pipelines" / "bc5cdr-features.yaml")
    s = prior_settings(cfg)
    assert set(s) >= {"none", "features", "features+attention", "random-spans"}
    assert s["features"].attention is None and s["features"].features is not None
    assert s["features+attention"].attention.mode == "bias"
    assert s["random-spans"].features.provider == "random-spans"


def test_dictionary_baseline_scores_the_matcher(two_trees):
    from priorkit.evaluation.dictionary_baseline import dictionary_scores, group_entities

    examples = [
        {"words": ["cocaine", "caused", "a", "seizure"], "tags": ["B-Chemical", "O", "O", "B-Disease"]},
        {"words": ["heparin", "toxicity", "here"], "tags": ["B-Chemical", "I-Chemical", "O"]},
    ]
    types = {"mesh:C": "Disease", "mesh:D": "Chemical"}
    # heparin toxicity is in both trees: the first group of the mapping (mesh:C) names it Disease
    assert group_entities(two_trees.matches(examples[1]["words"]), 3, types) == ["B-Disease", "I-Disease", "O"]
    scores = dictionary_scores(two_trees, examples, types)
    assert scores["precision"] == pytest.approx(2 / 3) and scores["recall"] == pytest.approx(2 / 3)
    assert scores["recall_Chemical"] == pytest.approx(0.5) and scores["precision_Disease"] == pytest.approx(0.5)
    flipped = dictionary_scores(two_trees, examples, {"mesh:D": "Chemical", "mesh:C": "Disease"})
    assert flipped["f1"] == pytest.approx(1.0)


def test_tune_space_addresses_feature_fields(tmp_path):
    from priorkit.config import config_from_dict, load_config
    from priorkit.tune.space import apply, dimensions

    path = _pipeline(tmp_path, NER + textwrap.dedent("""\
        prior:
          provider: ontology
          params: {source: hpo+mesh}
          attention: null
          features: {}
        tune:
          space:
            prior.features.dropout: {low: 0.0, high: 0.3}
            prior.features.gate: {choice: [token, scalar]}
        """))
    cfg = load_config(path)
    dims = dimensions(cfg)
    trial = config_from_dict(apply(cfg.raw, dims, {"prior.features.dropout": 0.25,
                                                   "prior.features.gate": "scalar"}))
    assert trial.prior.features.dropout == 0.25 and trial.prior.features.gate == "scalar"
    assert trial.prior.attention is None


def test_pipeline_trains_features_and_load_model_restores_them(tmp_path, tiny_bert_dir, two_trees,
                                                              one_torch_thread):
    from priorkit.channels.features import feature_module
    from priorkit.config import config_from_dict
    from priorkit.training.data import load_data
    from priorkit.training.steps import run_pipeline

    raw = {
        "name": "tiny-features",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 24},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        "prior": {"name": "feats", "provider": "ontology", "cache": None, "attention": None,
                  "params": {"path": two_trees.params["path"], "cache": False},
                  "features": {"concept_buckets": 16, "learning_rate": 1e-2}},
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no"},
    }
    cfg = config_from_dict(raw)
    result = run_pipeline(cfg, steps=("precompute", "train", "evaluate"), log=lambda s: None)
    assert 0.0 <= result.metrics["metrics"]["eval"]["f1"] <= 1.0
    folder = result.plan.run_dir / "model"
    assert not any("features" in p.name for p in folder.iterdir())  # no side files: one manifest
    info = json.loads((folder / "priorkit.json").read_text())  # token features, no attention
    assert info["format"] == 4 and list(info["channels"]) == ["features"]
    assert info["channels"]["features"]["config"]["groups"] == ["mesh:C", "mesh:D"]
    card = (folder / "README.md").read_text()
    assert "in its attention" not in card and "token features from the ontology provider" in card
    model = priorkit.load_model(result.plan.run_dir)
    module = feature_module(model.model)
    assert module is not None and module.proj.weight.abs().sum() > 0  # trained away from zero
    assert model.features is not None and model.builder is None  # features only: no attention prior
    examples = load_data(cfg)["eval"].examples
    got = model.logits([e["words"] for e in examples])
    # the evaluate step scored the same loaded model: its F1 again from these logits
    tags = [r["tags"] for r in model.predict([e["words"] for e in examples])]
    from priorkit.metrics import ner_metrics

    assert ner_metrics([e["tags"] for e in examples], tags)["f1"] == pytest.approx(
        result.metrics["metrics"]["eval"]["f1"], abs=1e-9)
    assert len(got) == len(examples)
    records = model.predict([e["words"] for e in examples[:2]])
    assert len(records[0]["tags"]) == len(examples[0]["words"])


def test_one_collator_adds_features_to_prior_batches(two_trees, minilm_tokenizer):
    """One tokenisation per batch (the collator's) serves both channels: the attention
    channel aligns it (its aligned store skips the aligning in the second epoch) and the
    feature tensors equal the feature builder's own encoding."""
    from priorkit import PriorBuilder, PriorCollator
    from priorkit.channels.attention.channel import AttentionChannel
    from priorkit.channels.features.channel import FeatureChannel
    from priorkit.channels.features import FeatureBuilder

    prior = PriorBuilder(minilm_tokenizer, two_trees, layout="full", truncation=True, max_length=16)
    features = FeatureBuilder(two_trees, FeatureConfig(), minilm_tokenizer, max_length=16)
    examples = [{"words": ["Heparin", "and", "cocaine"], "labels": [1, 0, 1]},
                {"words": ["a", "seizure", "in", "rats", "with", "heparin", "toxicity", "after", "cocaine",
                           "use", "for", "many", "weeks", "in", "the", "spring"], "labels": [0] * 16}]
    attention = AttentionChannel(prior, store=True)
    collate = PriorCollator(minilm_tokenizer, truncation=True, max_length=16,
                            channels=[attention, FeatureChannel(features)])
    calls = []
    original = minilm_tokenizer.__class__.__call__

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    for epoch in range(2):  # the second epoch reads the prior from the store
        minilm_tokenizer.__class__.__call__ = counting
        try:
            batch = collate(examples)
        finally:
            minilm_tokenizer.__class__.__call__ = original
        assert len(calls) == 1  # one tokenisation per batch
        calls.clear()
        assert attention.store.hits == (0 if epoch == 0 else 2)
        want = features.encode([e["words"] for e in examples])
        assert batch["prior"].shape[1] == batch["input_ids"].shape[1] == 16
        assert torch.equal(batch["token_features"], want["token_features"])
        assert batch["token_features"][1].sum() > 0 and batch["labels"].shape == batch["input_ids"].shape
    plain = PriorCollator(minilm_tokenizer, truncation=True, max_length=16,
                          channels=[FeatureChannel(features)])(examples)  # features only: no prior
    assert torch.equal(plain["token_features"], want["token_features"]) and "prior" not in plain
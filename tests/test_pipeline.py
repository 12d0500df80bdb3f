"""Pipelines: config files and their errors, tasks' metrics, end-to-end runs (skip, resume,
reload), NER, sweeps with their table and plot.

Training runs use a tiny random BERT (2 layers, 32 hidden) saved with the real MiniLM
tokenizer, on real STS-B pairs and real BC5CDR sentences, so a whole run takes a few
seconds; the prior is the real WordNet one, through a real DuckDB cache.
"""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np

import priorkit
import pytest

from priorkit.config import ConfigError, config_from_dict, load_config, parse_yaml, prior_settings

ROOT = Path(__file__).resolve().parent.parent
PIPELINES = sorted((ROOT / "pipelines").glob("*.yaml"))


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, minilm_tokenizer):
    """A random 2-layer BERT with the MiniLM vocabulary, saved like a Hub model."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                        initializer_range=0.1)  # larger logits: the prior's effect is visible
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config).save_pretrained(folder)
    minilm_tokenizer.save_pretrained(folder)
    return str(folder)


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def stsb_config(tmp_path: Path, model: str, **extra) -> dict:
    cfg = {
        "name": "tiny-stsb",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": model, "max_length": 32},
        "task": {"type": "regression", "label_scale": 5.0},
        "data": {"train": {"source": "stsb", "split": "train", "sample": 32, "sample_seed": 1},
                 "eval": {"source": "stsb", "split": "dev", "sample": 24}},
        "prior": {"name": "paper", "preset": "paper"},
        "train": {"epochs": 1, "batch_size": 8, "eval_batch_size": 32, "learning_rate": 1e-3,
                  "progress": False, "logging_steps": 1, "threads": 1},
    }
    for key, value in extra.items():
        section, _, field = key.partition("__")
        if field:
            cfg.setdefault(section, {})[field] = value
        else:
            cfg[section] = value
    return cfg


# ---------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------
def test_config_defaults_overrides_and_round_trip(tmp_path):
    path = _write(tmp_path / "p.yaml", """
        name: demo-x
        data:
          train: {source: stsb, split: train}
          eval: {source: stsb, split: dev}
        prior:
          preset: paper
        train:
          learning_rate: 5e-5     # PyYAML reads this as a string; it must become 5e-05
        sweep:
          fractions: [0.1, 1.0]
    """)
    cfg = load_config(path, ["train.fraction=0.25", "sweep.seeds=3", "train.epochs=2",
                             "sweep.priors={none: null, paper: {}, bias: {attention: {mode: bias}}}"])
    assert cfg.train.learning_rate == pytest.approx(5e-5)
    assert cfg.train.fraction == 0.25 and cfg.train.epochs == 2.0
    assert cfg.sweep.seeds == [3]  # a scalar becomes a one-item list
    assert cfg.task.metric == "spearman"  # the task's default main metric
    settings = prior_settings(cfg)
    assert list(settings) == ["none", "paper", "bias"]
    assert settings["none"] is None
    assert settings["paper"].preset == "paper" and settings["paper"].attention.mode == "multiply"
    assert settings["bias"].attention.mode == "bias" and settings["bias"].preset == "paper"  # merged over prior
    again = config_from_dict(cfg.to_dict())
    assert again.to_dict() == cfg.to_dict()
    assert cfg.out_dir == Path("runs") / "demo-x"


def test_yaml_lines_are_recorded():
    _, lines = parse_yaml("a: 1\nb:\n  c: 2\n  d: [1, 2]\n", "x.yaml")
    assert lines[("a",)] == 1 and lines[("b", "c")] == 3 and lines[("b", "d")] == 4


@pytest.mark.parametrize("body, line, field, words", [
    ("train:\n  epochs: 2\n  learning_rate: fast\n", 6, "train.learning_rate", "expected a number"),
    ("train:\n  learning_rat: 1e-4\n", 5, "train.learning_rat", "did you mean 'train.learning_rate'"),
    ("task:\n  type: regresion\n", 5, "task.type", "did you mean 'regression'"),
    ("task:\n  type: token-classification\nprior:\n  preset: paper\n", 7, "prior.preset", "single sentences"),
    ("train:\n  fraction: 1.5\n", 5, "train.fraction", "(0, 1]"),
    ("sweep:\n  fractions: [0.1, 0.0]\n", 5, "sweep.fractions.1", "(0, 1]"),
    ("prior:\n  attention:\n    mode: gate\n    layers: [0, -1]\n", 7, "prior.attention.layers", "non-negative"),
    ("prior:\n  attention:\n    learning_rate: 0.01\n", 6, "prior.attention.learning_rate", "mode: gate"),
])
def test_config_errors_name_file_line_and_field(tmp_path, body, line, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text("data:\n  train: {source: stsb}\n  eval: {source: stsb, split: dev}\n" + body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: {field}"), msg
    assert words in msg


def test_config_error_for_data_source_and_yaml_syntax(tmp_path):
    path = _write(tmp_path / "two.yaml", """
        data:
          train:
            source: stsb
            path: /tmp/x.tsv
    """)
    with pytest.raises(ConfigError, match=rf"^{path}:2: data.train: give exactly one of source"):
        load_config(path)
    bad = _write(tmp_path / "syntax.yaml", "data:\n  train: {source: stsb\nprior: x\n")
    with pytest.raises(ConfigError, match=rf"^{bad}:3:\d+: invalid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match=r"does not exist"):
        load_config(tmp_path / "missing.yaml")


def test_engine_section_picks_the_engine(tmp_path):
    path = _write(tmp_path / "p.yaml", """
        data:
          train: {source: stsb}
          eval: {source: stsb, split: dev}
        engine:
          type: dask
          scheduler: tcp://10.0.0.5:8786
          batch_size: 5000
    """)
    ec = load_config(path).engine
    assert ec.engine_options() == {"workers": None, "scheduler": "tcp://10.0.0.5:8786", "shard_size": 5000,
                                   "shard_dir": None}
    assert ec.teacher_options() == {"engine": "dask", "workers": None, "scheduler": "tcp://10.0.0.5:8786"}
    # batch_size null: each engine's own default (50,000 pairs a transaction, 20,000 a shard)
    assert load_config(path, ["engine.type=local", "engine.batch_size=null"]).engine.engine_options() == {
        "batch_size": 50_000}
    assert load_config(path, ["engine.batch_size=null"]).engine.engine_options()["shard_size"] == 20_000
    ray = _write(tmp_path / "ray.yaml", path.read_text().replace("type: dask", "type: ray"))
    with pytest.raises(ConfigError, match=rf"^{ray}:5: engine.type: "):
        load_config(ray)
    with pytest.raises(ConfigError, match=r"^--set engine.workers=0: engine.workers: must be at least 1"):
        load_config(path, ["engine.workers=0"])
    old = _write(tmp_path / "old.yaml", path.read_text().replace("engine:", "precompute:"))
    with pytest.raises(ConfigError, match=rf"^{old}:4: precompute: was removed: the precompute section is the engine "):
        load_config(old)


def test_override_errors_name_the_override(tmp_path):
    path = _write(tmp_path / "ok.yaml", "data:\n  train: {source: stsb}\n  eval: {source: stsb, split: dev}\n")
    with pytest.raises(ConfigError, match=r"^--set train.batch_size=many: train.batch_size: expected an integer"):
        load_config(path, ["train.batch_size=many"])
    with pytest.raises(ConfigError, match=r"expected FIELD=VALUE"):
        load_config(path, ["train.batch_size"])
    with pytest.raises(ConfigError, match=r"^--set sweep.baseline=paper: sweep.baseline: 'paper' is not one of"):
        load_config(path, ["sweep.baseline=paper"])


@pytest.mark.parametrize("path", PIPELINES, ids=[p.stem for p in PIPELINES])
def test_shipped_pipelines_are_valid(path):
    cfg = load_config(path)
    settings = prior_settings(cfg)
    assert cfg.sweep.baseline in settings and settings[cfg.sweep.baseline] is None
    assert cfg.prior is not None
    # a split to choose settings on, unless the file only reports fixed settings (the demo)
    assert cfg.data.eval is not None or ("eval" not in cfg.evaluate and cfg.sweep.split == "test")


def test_shipped_pipeline_set_is_complete():
    names = {p.stem for p in PIPELINES}
    assert {"demo", "stsb-wordnet", "stsb-conceptnet", "stsb-embedding", "bc5cdr-ontology",
            "bc5cdr-wordnet"} <= names
    demo = load_config(ROOT / "pipelines" / "demo.yaml")
    assert len(demo.sweep.seeds) == 2 and set(prior_settings(demo)) == {"none", "paper"}
    paper = load_config(ROOT / "pipelines" / "stsb-wordnet.yaml").prior
    assert paper.preset == "paper" and paper.attention.layers == [0] and paper.attention.mode == "multiply"
    onto = load_config(ROOT / "pipelines" / "bc5cdr-ontology.yaml")
    assert onto.task.type == "token-classification" and onto.prior.layout == "full"
    assert onto.prior.provider == "ontology"


# ---------------------------------------------------------------------------
# subsets and metrics
# ---------------------------------------------------------------------------
def test_fraction_subsets_are_nested_and_seeded():
    from priorkit.training.data import fraction_indices

    small = fraction_indices(1000, 0.05, mode="nested", seed=1, subset_seed=0)
    large = fraction_indices(1000, 0.1, mode="nested", seed=2, subset_seed=0)
    assert len(small) == 50 and len(large) == 100
    assert set(small) <= set(large)  # 5% inside 10%, whatever the run seed
    a = fraction_indices(1000, 0.1, mode="per-seed", seed=1, subset_seed=0)
    b = fraction_indices(1000, 0.1, mode="per-seed", seed=2, subset_seed=0)
    assert set(a) != set(b)
    assert np.array_equal(a, fraction_indices(1000, 0.1, mode="per-seed", seed=1, subset_seed=7))
    assert len(fraction_indices(10, 0.01, mode="nested", seed=0, subset_seed=0)) == 1
    assert np.array_equal(fraction_indices(7, 1.0, mode="nested", seed=0, subset_seed=0), np.arange(7))


def test_regression_metrics_match_independent_formulas():
    from priorkit.metrics import regression_metrics

    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 200)
    pred = gold + rng.normal(0, 1, 200)
    m = regression_metrics(pred, gold)
    assert m["pearson"] == pytest.approx(np.corrcoef(pred, gold)[0, 1], abs=1e-12)
    ranks = lambda x: np.argsort(np.argsort(x))  # noqa: E731 - no ties in continuous data
    assert m["spearman"] == pytest.approx(np.corrcoef(ranks(pred), ranks(gold))[0, 1], abs=1e-12)
    assert m["mse"] == pytest.approx(np.mean((pred - gold) ** 2))
    assert regression_metrics(np.ones(5), np.arange(5.0))["spearman"] == 0.0  # constant: no NaN


@pytest.mark.parametrize("n_labels", [2, 3])
def test_classification_f1_fallback_matches_sklearn(n_labels):
    sklearn = pytest.importorskip("sklearn.metrics")
    from priorkit.metrics import classification_metrics, f1_binary_or_macro

    rng = np.random.default_rng(n_labels)
    gold = rng.integers(0, n_labels, 300)
    pred = np.where(rng.random(300) < 0.7, gold, rng.integers(0, n_labels, 300))
    avg = "binary" if n_labels == 2 else "macro"
    expected = sklearn.f1_score(gold, pred, average=avg)
    assert f1_binary_or_macro(pred, gold, n_labels) == pytest.approx(expected, abs=1e-12)
    m = classification_metrics(pred, gold, n_labels)
    assert m["f1"] == pytest.approx(expected) and m["accuracy"] == pytest.approx(sklearn.accuracy_score(gold, pred))


def test_ner_scoring_counts_truncated_words_as_missed():
    from priorkit.config import TaskConfig
    from priorkit.training.tasks import TokenClassificationTask

    task = TokenClassificationTask(TaskConfig(type="token-classification"))
    examples = [{"words": ["Aspirin", "causes", "severe", "headache", "here"],
                 "tags": ["B-Chemical", "O", "B-Disease", "I-Disease", "O"]}]
    task.fit_labels(examples)
    ids = [task.labels.index(t) for t in examples[0]["tags"]]
    # the model saw only the first 2 words (truncated), and got them right
    label_ids = np.full((1, 6), -100)
    label_ids[0, 1:3] = ids[:2]
    logits = np.zeros((1, 6, len(task.labels)))
    logits[0, 1, ids[0]] = logits[0, 2, ids[1]] = 5.0
    m = task.score(logits, label_ids, examples)
    # two gold entities, one found: P = 1, R = 0.5 (the Disease fell off the end)
    assert m["precision"] == 1.0 and m["recall"] == 0.5 and m["f1"] == pytest.approx(2 / 3)
    assert m["truncated_words"] == 3.0


# ---------------------------------------------------------------------------
# end to end
# ---------------------------------------------------------------------------
class _Crash:
    """A TrainerCallback that simulates a crash after a given step (checkpoint already saved)."""

    def __init__(self, after_step: int) -> None:
        from transformers import TrainerCallback

        outer = self

        class CB(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == outer.after_step + 1:
                    raise RuntimeError("simulated crash")

        self.after_step = after_step
        self.callback = CB()


def test_run_writes_metrics_skips_on_rerun_and_refuses_changed_settings(tmp_path, tiny_model):
    from priorkit.training.steps import run_pipeline

    cfg = config_from_dict(stsb_config(tmp_path, tiny_model))
    first = run_pipeline(cfg, log=lambda s: None)
    assert [o.status for o in first.outcomes] == ["done", "done", "done", "done"]
    run_dir = first.plan.run_dir
    metrics = json.loads((run_dir / "metrics.json").read_text())
    ev = metrics["metrics"]["eval"]
    assert set(ev) >= {"pearson", "spearman", "mse"} and ev["examples"] == 24
    assert metrics["train"]["examples"] == 32 and metrics["train"]["steps"] == 4
    assert (run_dir / "model" / "config.json").exists() and (run_dir / "config.yaml").exists()
    assert not (run_dir / "checkpoints").exists()  # removed once the model is saved
    saved = load_config(run_dir / "config.yaml")  # the config beside the model is a valid pipeline
    assert saved.prior.preset == "paper" and saved.train.seed == 0
    stamp = (run_dir / "metrics.json").stat().st_mtime_ns

    again = run_pipeline(config_from_dict(stsb_config(tmp_path, tiny_model)), log=lambda s: None)
    assert [o.status for o in again.outcomes[:3]] == ["skipped", "skipped", "skipped"]
    assert (run_dir / "metrics.json").stat().st_mtime_ns == stamp

    changed = config_from_dict(stsb_config(tmp_path, tiny_model), overrides=["train.learning_rate=3e-4"])
    from priorkit.errors import PriorkitError

    with pytest.raises(PriorkitError, match=r"other settings.*--force"):
        run_pipeline(changed, log=lambda s: None)


def test_interrupted_training_resumes_to_the_same_model(tmp_path, tiny_model):
    from priorkit.training.steps import run_pipeline

    def cfg(sub):
        return config_from_dict(stsb_config(tmp_path / sub, tiny_model, train={
            "epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "save": 3,
            "threads": 1}))

    reference = run_pipeline(cfg("ref"), steps=("train", "evaluate"), log=lambda s: None)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_pipeline(cfg("crash"), steps=("train",), log=lambda s: None, callbacks=[_Crash(3).callback])
    run_dir = cfg("crash").out_dir / "paper" / "frac1" / "seed0"
    assert (run_dir / "checkpoints" / "checkpoint-3").is_dir() and not (run_dir / "model").exists()
    resumed = run_pipeline(cfg("crash"), steps=("train", "evaluate"), log=lambda s: None)
    assert resumed.outcomes[0].status == "resumed"
    assert resumed.metrics["train"]["resumed_from"] == "checkpoint-3"
    assert resumed.metrics["train"]["steps"] == reference.metrics["train"]["steps"] == 8
    a, b = reference.metrics["metrics"]["eval"], resumed.metrics["metrics"]["eval"]
    assert b["spearman"] == pytest.approx(a["spearman"], abs=1e-5)
    assert b["mse"] == pytest.approx(a["mse"], rel=1e-4)


def test_reloaded_model_restores_prior_settings_and_scores(tmp_path, tiny_model):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    from priorkit.training.steps import run_pipeline
    from priorkit.metrics import regression_metrics

    raw = stsb_config(tmp_path, tiny_model)
    raw["prior"] = {"name": "gate", "preset": "paper", "attention": {"mode": "gate", "layers": [0, 1]}}
    cfg = config_from_dict(raw)
    result = run_pipeline(cfg, steps=("precompute", "train", "evaluate"), log=lambda s: None)
    trained = priorkit.load_model(result.plan.run_dir)
    assert trained.model.config.priorkit["mode"] == "gate" and trained.model.config.priorkit["layers"] == [0, 1]
    weights = load_file(str(result.plan.run_dir / "model" / "model.safetensors"))
    saved_gates = {k: v for k, v in weights.items() if k.endswith("prior_gate")}
    assert len(saved_gates) == 2
    live = {n: p for n, p in trained.model.named_parameters() if n.endswith("prior_gate")}
    for name, value in saved_gates.items():
        match = [p for n, p in live.items() if n.endswith(name.split("bert.")[-1])]
        assert match and torch.equal(match[0].detach(), value)
        assert not torch.allclose(value, torch.ones_like(value))  # the gates were trained
    # the reloaded model reproduces the scores of the evaluate step
    from priorkit.training.data import load_data

    eval_examples = load_data(cfg)["eval"].examples
    pred = np.stack(trained.logits(eval_examples))
    score = regression_metrics(pred[:, 0] * 5.0, np.array([e["label"] for e in eval_examples]))
    assert score["spearman"] == pytest.approx(result.metrics["metrics"]["eval"]["spearman"], abs=1e-5)
    # ... and the prior matters: the same weights without prior attention compute other states
    plain = AutoModelForSequenceClassification.from_pretrained(str(result.plan.run_dir / "model")).eval()
    batch = trained.collator()([{"text_a": e["text_a"], "text_b": e["text_b"]} for e in eval_examples[:8]])
    prior = batch.pop("prior")
    with torch.no_grad():
        with_prior = trained.model.eval()(**batch, prior=prior, output_hidden_states=True).hidden_states[1]
        without = plain(**batch, output_hidden_states=True).hidden_states[1]
    assert not torch.allclose(with_prior, without, atol=1e-4)


def test_gate_learning_rate_gives_the_gates_their_own_group(tmp_path, tiny_model):
    """attention.learning_rate: the gates train at their own rate, without weight decay,
    and the rest of the model is untouched by the split."""
    import torch

    from priorkit.training.steps import run_pipeline
    from priorkit.training.plan import plan_for_run
    from priorkit.training.trainer import channel_param_group

    raw = stsb_config(tmp_path, tiny_model, train__learning_rate=1e-4, train__epochs=2)
    raw["prior"] = {"name": "paper", "preset": "paper"}
    # a sibling setting in another mode: reloading the gate run must not check it against the gate
    raw["sweep"] = {"split": "test",  # with evaluate: [test]: the reload must keep this too
                    "priors": {"none": None, "bias": {"attention": {"mode": "bias"}},
                               "gate": {"attention": {"mode": "gate", "layers": [0, 1], "learning_rate": 0.05}}}}
    raw["data"]["test"] = raw["data"].pop("eval")
    raw["evaluate"] = ["test"]
    cfg = config_from_dict(raw)
    plan = plan_for_run(cfg, "gate")
    result = run_pipeline(cfg, prior_name="gate", steps=("precompute", "train"), log=lambda s: None)
    gates = [p.detach() for n, p in priorkit.load_model(result.plan.run_dir).model.named_parameters()
             if n.endswith("prior_gate")]
    # the same run at the model's rate moves the gates far less
    raw["sweep"]["priors"]["gate"]["attention"]["learning_rate"] = None
    slow = run_pipeline(config_from_dict(raw | {"output_dir": str(tmp_path / "slow")}), prior_name="gate",
                        steps=("precompute", "train"), log=lambda s: None)
    slow_gates = [p.detach() for n, p in priorkit.load_model(slow.plan.run_dir).model.named_parameters()
                  if n.endswith("prior_gate")]
    moved = sum(float((g - 1).abs().sum()) for g in gates)
    slow_moved = sum(float((g - 1).abs().sum()) for g in slow_gates)
    assert moved > 20 * slow_moved > 0

    # the group itself: every parameter in exactly one group, gates alone at lr 0.05
    loaded = priorkit.load_model(result.plan.run_dir)
    model, attention = loaded.model, loaded.channel("attention")
    attention.learning_rate = 0.05
    opt = torch.optim.AdamW([{"params": list(model.parameters()), "weight_decay": 0.01}], lr=1e-4)
    assert channel_param_group(opt, model, attention) == 2
    ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())
    assert opt.param_groups[-1]["lr"] == 0.05 and opt.param_groups[-1]["weight_decay"] == 0.0
    assert all(n.endswith("prior_gate") for n, p in model.named_parameters()
               if id(p) in {id(q) for q in opt.param_groups[-1]["params"]})
    assert plan.prior.attention.learning_rate == 0.05


def test_ner_run_reports_seqeval_entity_scores(tmp_path, tiny_model):
    from seqeval.metrics import f1_score

    from priorkit.training.data import load_data
    from priorkit.training.steps import run_pipeline

    raw = {
        "name": "tiny-ner",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": tiny_model, "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 48},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 24}},
        "prior": {"name": "wup", "provider": "wordnet", "params": {"measure": "wup"}, "layout": "full"},
        "train": {"epochs": 2, "batch_size": 8, "learning_rate": 3e-3, "progress": False, "threads": 1},
    }
    cfg = config_from_dict(raw)
    result = run_pipeline(cfg, steps=("precompute", "train", "evaluate"), log=lambda s: None)
    ev = result.metrics["metrics"]["eval"]
    assert {"precision", "recall", "f1", "accuracy"} <= set(ev)
    assert all(0.0 <= ev[k] <= 1.0 for k in ("precision", "recall", "f1"))
    # recompute the entity F1 from the reloaded model with seqeval directly
    trained = priorkit.load_model(result.plan.run_dir)
    examples = load_data(cfg)["eval"].examples
    logits = trained.logits(examples)
    y_pred = []
    for i, e in enumerate(examples):
        enc = trained.tokenizer(e["words"], is_split_into_words=True, truncation=True, max_length=48)
        firsts = [t for t, w in enumerate(enc.word_ids()) if w is not None and
                  (t == 0 or enc.word_ids()[t - 1] != w)]
        tags = [trained.labels[j] for j in logits[i][firsts].argmax(-1)]
        y_pred.append(tags + ["O"] * (len(e["tags"]) - len(tags)))
    assert f1_score([e["tags"] for e in examples], y_pred) == pytest.approx(ev["f1"], abs=1e-9)
    assert trained.labels[0] == "O" and set(trained.labels) == {
        "O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}


def test_sweep_table_plot_and_cli(tmp_path, tiny_model):
    import csv
    import statistics

    from click.testing import CliRunner

    from priorkit.cli import cli

    raw = stsb_config(tmp_path, tiny_model)
    raw["data"]["train"]["sample"] = 16
    raw["data"]["eval"]["sample"] = 16
    raw["sweep"] = {"fractions": [0.5, 1.0], "seeds": [0, 1], "priors": {"none": None, "paper": {}}}
    import yaml

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = Path(raw["output_dir"])
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert len(rows) == 8
    # the same subset size for every prior setting at a fraction
    sizes = {(r["prior"], r["fraction"]): r["train_examples"] for r in rows}
    assert sizes[("none", "0.5")] == sizes[("paper", "0.5")] == "8"
    # the table's mean and std agree with the CSV, computed independently
    vals = [float(r["eval_spearman"]) for r in rows if r["prior"] == "paper" and r["fraction"] == "0.5"]
    base = [float(r["eval_spearman"]) for r in rows if r["prior"] == "none" and r["fraction"] == "0.5"]
    md = (out / "results.md").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("| 0.5 | paper |"))
    mean_std = f"{100 * statistics.mean(vals):.2f} ± {100 * statistics.stdev(vals):.2f}"
    assert mean_std in line
    assert f"{100 * (statistics.mean(vals) - statistics.mean(base)):+.2f}" in line
    assert "fraction" in res.output and "paper" in res.output and "results.png" in res.output
    png = (out / "results.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # the power columns: the smallest Δ two seeds detect, from the paired differences
    from priorkit.stats import paired

    d = [v - b for v, b in zip(vals, base)]
    assert f"| {100 * paired(d).mde:.2f} |" in line and "MDE (80%)" in md
    # two fractions: the learning curve of the paired Δ, one row per (setting, fraction)
    curve_rows = list(csv.DictReader(open(out / "curve.csv")))
    assert [(r["setting"], r["vs"], r["fraction"]) for r in curve_rows] == [("paper", "none", "0.5"),
                                                                             ("paper", "none", "1.0")]
    assert float(curve_rows[0]["mean_delta"]) == pytest.approx(statistics.mean(d))
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "curve.md").exists()
    # each side's absolute score and the cost per run, beside the Δ
    assert float(curve_rows[0]["spearman setting"]) == pytest.approx(100 * statistics.mean(vals), abs=0.006)
    assert float(curve_rows[0]["spearman vs"]) == pytest.approx(100 * statistics.mean(base), abs=0.006)
    secs = [float(r["train_seconds"]) for r in rows if r["prior"] == "paper" and r["fraction"] == "0.5"]
    assert float(curve_rows[0]["train s/run"]) == pytest.approx(statistics.mean(secs), abs=0.006)
    curve_md = (out / "curve.md").read_text()
    assert "## Absolute spearman (eval) of every arm" in curve_md and "## Where the difference stops" in curve_md
    assert f"| 0.5 | {100 * statistics.mean(base):.2f} (" in curve_md
    # a second sweep trains nothing: every run is skipped
    stamps = sorted(p.stat().st_mtime_ns for p in out.rglob("metrics.json"))
    res2 = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert res2.exit_code == 0 and "train: done" not in res2.output
    assert sorted(p.stat().st_mtime_ns for p in out.rglob("metrics.json")) == stamps
    assert math.isfinite(float(rows[0]["eval_pearson"]))


def test_pair_classification_from_jsonl_with_column_mapping_via_cli(tmp_path, tiny_model):
    """MRPC-style layout: a JSONL file with its own column names, labels as strings."""
    import yaml
    from click.testing import CliRunner

    from priorkit.cli import cli
    from priorkit.datasets import read_stsb
    from priorkit.resources import stsb_path

    pairs = read_stsb(stsb_path("train"), limit=80)
    rows = [{"s1": p.text_a, "s2": p.text_b, "verdict": "similar" if p.label >= 3 else "different"}
            for p in pairs]
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:48]) + "\n")
    (tmp_path / "dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows[48:]) + "\n")
    columns = {"text_a": "s1", "text_b": "s2", "label": "verdict"}
    raw = {
        "name": "tiny-pairs",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": tiny_model, "max_length": 32},
        "task": {"type": "pair-classification", "metric": "f1"},
        "data": {"train": {"path": str(tmp_path / "train.jsonl"), "columns": columns},
                 "eval": {"path": str(tmp_path / "dev.jsonl"), "format": "jsonl", "columns": columns}},
        "prior": {"name": "paper", "preset": "paper"},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "progress": False, "threads": 1},
    }
    path = tmp_path / "pairs.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["run", str(path), "--prior", "none", "--set", "train.seed=3"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "runs" / "none" / "frac1" / "seed3" / "metrics.json").read_text())
    ev = metrics["metrics"]["eval"]
    assert set(ev) >= {"accuracy", "f1"} and ev["examples"] == 32
    assert metrics["prior"] == "none" and metrics["metric"] == "f1"
    model_cfg = json.loads((tmp_path / "runs" / "none" / "frac1" / "seed3" / "model" / "config.json").read_text())
    assert model_cfg["id2label"] == {"0": "different", "1": "similar"} and "priorkit" not in model_cfg
    # a bad column name is reported with the file and the pipeline line it came from
    raw["data"]["train"]["columns"] = {"text_a": "sentence", "text_b": "s2", "label": "verdict"}
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["run", str(path)])
    assert res.exit_code != 0
    assert "no column 'sentence'" in str(res.exception) and f"{path}:" in str(res.exception)


def test_hf_dataset_ids_need_the_datasets_package(tmp_path):
    from priorkit.errors import ResourceError
    from priorkit.training.data import load_data

    try:
        import datasets  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("datasets is installed; the Hub is unreachable here")
    cfg = config_from_dict({"name": "hf", "data": {"train": {"source": "hf:glue:stsb", "split": "train"},
                                                    "eval": {"source": "stsb", "split": "dev"}}})
    with pytest.raises(ResourceError, match=r"pip install datasets"):
        load_data(cfg)


def test_every_config_field_is_documented():
    """docs/pipelines.md's reference lists every field of the schema (datasette-style)."""
    import dataclasses
    import typing

    from priorkit import config as C

    doc = (ROOT / "docs" / "pipelines.md").read_text()
    missing = []

    def walk(cls, prefix):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("internal"):
                continue
            if f"{f.name}:" not in doc:
                missing.append(prefix + f.name)
            tp = hints[f.name]
            inner = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)] or (
                [tp] if dataclasses.is_dataclass(tp) else [])
            for sub in inner:
                walk(sub, f"{prefix}{f.name}.")

    walk(C.PipelineConfig, "")
    assert not missing, f"fields missing from docs/pipelines.md: {missing}"


def test_resume_passes_over_a_checkpoint_cut_short(tmp_path):
    """A kill while a checkpoint is written can leave an empty trainer_state.json: resume from
    the newest whole checkpoint instead of failing on it."""
    from priorkit.training.train import last_checkpoint

    for step, state in ((2, '{"global_step": 2}'), (4, "")):
        ckpt = tmp_path / "checkpoints" / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        (ckpt / "trainer_state.json").write_text(state)
    assert last_checkpoint(tmp_path).name == "checkpoint-2"
    (tmp_path / "checkpoints" / "checkpoint-2" / "trainer_state.json").write_text('{"global_')
    assert last_checkpoint(tmp_path) is None

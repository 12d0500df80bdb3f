"""Self-training without knowledge (issue 48): the named sweep setting
``self-training-no-knowledge`` trains a teacher on the gold alone, labels the rest of train with
its confident tags and trains a student on both, and never asks the dictionary anything.

The pipeline's dictionary here is a plug-in provider that raises when it is asked for a match, a
similarity or its data, and writes a line to a log whenever it is built; a tiny real run (random
2-layer BERT, 40 real BC5CDR sentences) must leave the log empty and finish."""
from __future__ import annotations

import json
import textwrap

import pytest

from priorkit.config import ConfigError, config_from_dict

TRIPWIRE = textwrap.dedent('''\
    """A dictionary that must not be consulted: building it is logged (with its callers), asking it raises."""
    import os
    import traceback

    import priorkit
    from priorkit.providers.base import PriorProvider


    class Tripwire(PriorProvider):
        name = "tripwire"
        version = "1"

        def __init__(self, **params):
            with open(os.environ["TRIPWIRE_LOG"], "a") as fh:
                fh.write(" ".join(f"{f.filename.rsplit('priorkit/', 1)[-1]}:{f.name}"
                                  for f in traceback.extract_stack() if "/priorkit/" in f.filename) + "\\n")
            super().__init__(**params)

        def load(self):
            raise RuntimeError("tripwire: the dictionary was loaded")

        def compute(self, left, right):
            raise RuntimeError("tripwire: the dictionary was asked for similarities")

        def compute_matches(self, words):
            raise RuntimeError("tripwire: the dictionary was asked for matches")

        def match_groups(self):
            return ["mesh:C"]


    @priorkit.hookimpl
    def register_prior_providers(register):
        register("tripwire", Tripwire, "raises when consulted")
    ''')


@pytest.fixture
def tripwire(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "tripwire.py").write_text(TRIPWIRE)
    log = tmp_path / "tripwire.log"
    log.write_text("")
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(folder))
    monkeypatch.setenv("TRIPWIRE_LOG", str(log))
    return log


def _raw(tmp_path, tiny_bert_dir, **sweep):
    return {
        "name": "tiny-nok",
        "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification", "dictionary_types": {"mesh:C": "Disease"}},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 40},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        # the recipe this baseline is compared with: features, calibration, a teacher merged with the dictionary
        "prior": {"name": "st", "provider": "tripwire", "cache": None, "attention": None,
                  "features": {"learning_rate": 1e-2}, "calibrate": {"threshold": 0.5},
                  "silver": {"recipe": "mix", "silver_epochs": 1,
                             "teacher": {"threshold": 0.3, "dictionary": True, "prior": {"features": None}}}},
        "train": {"epochs": 2, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no", "fraction": 0.25, "subset": "per-seed", "seed": 3, "keep_model": True},
        "sweep": {"priors": {"none": None, "st": {}, "st-nok": "self-training-no-knowledge"}, **sweep},
    }


def test_the_named_setting_keeps_the_recipe_and_drops_every_dictionary_part(tmp_path, tiny_bert_dir, tripwire):
    from priorkit.config import prior_settings

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir))
    nok = prior_settings(cfg)["st-nok"]
    assert nok.name == "st-nok"
    assert nok.features is None and nok.attention is None and nok.calibrate is None and not nok.channels
    t = nok.silver.teacher
    assert t.dictionary is False and t.prior is None and t.model is None
    assert t.threshold == 0.3 and nok.silver.recipe == "mix"  # the file's recipe, kept
    assert not nok.silver.uses_dictionary
    # the recipe itself still reads its dictionary
    assert prior_settings(cfg)["st"].silver.uses_dictionary


def test_an_unknown_named_setting_says_which_names_exist(tmp_path, tiny_bert_dir):
    raw = _raw(tmp_path, tiny_bert_dir)
    raw["prior"]["provider"] = "ontology"
    raw["sweep"]["priors"]["st-nok"] = "self-training-without-anything"
    with pytest.raises(ConfigError, match=r"sweep.priors.st-nok: expected null .* a named setting "
                                          r"\(self-training-no-knowledge\)"):
        config_from_dict(raw)


def test_self_training_without_knowledge_never_consults_the_dictionary(tmp_path, tiny_bert_dir, tripwire,
                                                                       one_torch_thread):
    from priorkit.training.steps import run_pipeline

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir))
    tripwire.write_text("")  # loading the file checked the recipe's features (built, not asked)
    none = run_pipeline(cfg, prior_name="none", steps=("train", "evaluate"), log=lambda s: None)
    result = run_pipeline(cfg, prior_name="st-nok", steps=("train", "evaluate"), log=lambda s: None)
    # it was never asked (that raises); it was built only to check the recipe's own setting ("st", the
    # features and silver checks of the file) and to name the setting's provider in priorkit.json
    allowed = ("channels/features/checks.py:config_problems", "supervision/silver/checks.py:config_problems",
               "inference/manifest.py:prior_description")
    builds = tripwire.read_text().splitlines()
    assert all(any(a in line for a in allowed) for line in builds), builds
    assert not any("silver_stage" in line or "calibrate_stage" in line or "label" in line for line in builds)
    run = result.plan.run_dir
    train = result.metrics["train"]
    assert train["examples"] == 10 and train["silver"]["sentences"] == 30
    assert train["silver"]["teacher"]["dictionary"] is False
    assert "calibration" not in train and not (run / "calibration.json").exists()
    # the teacher is the gold alone: the none arm's kept model, reused bit for bit
    record = json.loads((run / "self_training.json").read_text())
    assert record["teacher"]["reused"] == "none/frac0.25/seed3/model"
    assert (run / "teacher" / "model" / "model.safetensors").read_bytes() == \
        (none.plan.run_dir / "model" / "model.safetensors").read_bytes()
    # the labels are the teacher's alone: stored under a teacher fingerprint, unsure words unknown
    shards = list((tmp_path / "runs" / "silver").glob("teacher-*/shard-*.jsonl"))
    assert shards and not list((tmp_path / "runs" / "silver").glob("silver-*"))
    rows = [json.loads(line) for p in shards for line in p.read_text().splitlines()]
    assert len(rows) == 30
    # the student has no channel: nothing of the dictionary reaches prediction either
    info = json.loads((run / "model" / "priorkit.json").read_text())
    assert not info.get("channels")
    assert 0.0 <= result.metrics["metrics"]["eval"]["f1"] <= 1.0


def test_the_recipe_itself_does_consult_it(tmp_path, tiny_bert_dir, tripwire, one_torch_thread):
    """The tripwire is live: the setting with the dictionary trips it."""
    from priorkit.training.steps import run_pipeline

    cfg = config_from_dict(_raw(tmp_path, tiny_bert_dir))
    with pytest.raises(RuntimeError, match="tripwire: the dictionary was"):
        run_pipeline(cfg, prior_name="st", steps=("train",), log=lambda s: None)

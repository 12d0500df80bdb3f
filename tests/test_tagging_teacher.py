"""Self-training's teacher labelling on the tagging engines (priorkit/tagging/teacher.py,
the pipeline's ``engine`` section): on a real Dask LocalCluster of 2 workers the silver store gets
the shards local labelling writes, byte for byte; a pipeline run with ``engine: {type: dask}`` labels
through the workers, with the run's key unchanged.  Tiny real teacher: a 2-layer BERT trained on
a few CoNLL sentences; the dictionary: the mini ontology fixture."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import priorkit
from priorkit.config import ConfigError, config_from_dict
from priorkit.providers.plugins import get_provider
from priorkit.supervision.silver.label import Labeller
from priorkit.supervision.silver.store import SilverStore
from priorkit.supervision.silver.teacher import TeacherLabeller
from priorkit.tagging.teacher import fill_store

from support.tagging import WORDS, train_tiny_ner

MINI = Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, tiny_bert_dir, one_torch_thread):
    return train_tiny_ner(tmp_path_factory.mktemp("teacher"), tiny_bert_dir) / "model"


@pytest.fixture(scope="module")
def client():
    from priorkit.precompute.dask_engine import start_client

    client, cluster = start_client(workers=2)
    yield client
    client.close()
    cluster.close()


def _sentences(n: int) -> list[list[str]]:
    import random

    rng = random.Random(5)
    extra = ["Cor", "pulmonale", "arrhythmia", "CP"]
    return [[rng.choice(WORDS + extra) for _ in range(rng.randint(3, 14))] for _ in range(n)]


def _labeller(folder: Path) -> TeacherLabeller:
    dictionary = Labeller(get_provider("ontology", path=str(MINI)), {"mini": "Disease"})
    return TeacherLabeller(priorkit.load_model(folder), folder, 0.3, dictionary, "teacher-first", batch_size=16)


def _shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("shard-*.jsonl"))}


def test_labelling_on_dask_writes_the_local_store(teacher, client, tmp_path):
    sentences = _sentences(260)
    local = SilverStore(tmp_path / "local", _labeller(teacher))
    counts = local.fill(sentences, chunk_size=40)
    assert counts["labelled"] == len({tuple(s) for s in sentences}) > 200
    dask = SilverStore(tmp_path / "dask", _labeller(teacher))
    built_from = ("ontology", {"path": str(MINI)})
    assert fill_store(dask, sentences, 40, "dask", client=client, dictionary=built_from)["labelled"] \
        == counts["labelled"]
    assert dask.dir.name == local.dir.name  # one labeller, one fingerprint
    shards = _shards(local.dir)
    assert len(shards) == 7 and _shards(dask.dir) == shards
    rows = [json.loads(line) for text in shards.values() for line in text.decode().splitlines()]
    tags = {t for r in rows for t in r["t"]}
    assert "B-Disease" in tags and "?" in tags  # the dictionary's and the teacher's unsure words both show
    # the workers loaded the teacher once each, and a full store asks them for nothing
    again = fill_store(dask, sentences + sentences[:5], 40, "dask", client=client, dictionary=built_from)
    assert again == {"known": counts["labelled"], "labelled": 0, "dask_workers": 0}


def test_a_worker_that_sees_another_teacher_stops_with_both_fingerprints(teacher, client, tmp_path):
    import dataclasses
    import functools

    from priorkit.errors import PriorkitError
    from priorkit.tagging.dask_engine import DaskEngine
    from priorkit.tagging.jobs import Job
    from priorkit.tagging.teacher import build_teacher, teacher_recipe

    recipe = dataclasses.replace(teacher_recipe(_labeller(teacher), dictionary=("ontology", {"path": str(MINI)})),
                                 threshold=0.5)  # not the driver's labeller
    job = Job("other", functools.partial(build_teacher, dataclasses.replace(
        recipe, fingerprint=_labeller(teacher).fingerprint)))
    with pytest.raises(PriorkitError, match=r"rebuilt the teacher .* with fingerprint teacher-\w+, not the driver's"):
        list(DaskEngine(client=client).map(job, [[["Aspirin", "causes", "nausea"]]]))


def _pipeline(tmp_path: Path, tiny_bert_dir: Path, teacher: Path, section: dict | None = None, **own) -> dict:
    return {**({"engine": section} if section is not None else {}),
        "name": "tiny-st", "output_dir": str(tmp_path / "runs"),
        "model": {"name_or_path": str(tiny_bert_dir), "max_length": 48},
        "task": {"type": "token-classification"},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": 40},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 8}},
        "prior": {"name": "st", "provider": "ontology", "params": {"path": str(MINI)}, "cache": None,
                  "attention": None, "silver": {"recipe": "mix", "types": {"mini": "Disease"},
                                                "teacher": {"model": str(teacher), "threshold": 0.3, **own}}},
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "progress": False, "threads": 1,
                  "save": "no", "fraction": 0.25, "seed": 3},
    }


def test_a_pipeline_with_a_dask_teacher_labels_what_a_local_one_does(tmp_path, tiny_bert_dir, teacher,
                                                                    one_torch_thread, caplog, monkeypatch):
    import logging

    from priorkit.training import silver_stage
    from priorkit.training.data import load_data
    from priorkit.training.plan import plan_for_run
    from priorkit.training.steps import run_pipeline

    local_cfg = config_from_dict(_pipeline(tmp_path / "local", tiny_bert_dir, teacher))
    dask_cfg = config_from_dict(_pipeline(tmp_path / "dask", tiny_bert_dir, teacher, {"type": "dask", "workers": 2}))
    assert dask_cfg.engine.teacher_options() == {"engine": "dask", "workers": 2, "scheduler": None}
    monkeypatch.setattr(silver_stage, "CHUNK_SIZE", 8)  # several shards of the store (2000 a shard otherwise)
    run_pipeline(local_cfg, steps=("train",), log=lambda s: None)
    with caplog.at_level(logging.INFO, logger="priorkit.training.train"):
        run_pipeline(dask_cfg, steps=("train",), log=lambda s: None)
    assert "silver labels: 30 sentences, 30 newly labelled on 2 Dask workers" in caplog.text
    local = list((tmp_path / "local" / "runs" / "silver").glob("teacher-*"))
    dask = list((tmp_path / "dask" / "runs" / "silver").glob("teacher-*"))
    assert len(local) == len(dask) == 1 and local[0].name == dask[0].name
    assert len(_shards(local[0])) == 4 and _shards(dask[0]) == _shards(local[0])
    assert sum(text.count(b"\n") for text in _shards(dask[0]).values()) == 30  # the rest of 40 at fraction 0.25
    # where the teacher labels is not what a run learns: the key is the local run's
    splits = load_data(local_cfg)
    assert plan_for_run(dask_cfg).train_key(splits["train"]) == plan_for_run(local_cfg).train_key(splits["train"])


@pytest.mark.parametrize("section, own, message", [
    ({"type": "ray"}, {}, "engine.type: expected one of 'local', 'dask', got 'ray'"),
    ({"type": "dask", "workers": 0}, {}, "engine.workers: must be at least 1"),
    # the teacher's own engine fields before issue 47: one line naming the engine section
    (None, {"engine": "dask"}, "prior.silver.teacher.engine: was removed: .*engine: {type: dask"),
    (None, {"workers": 2}, "prior.silver.teacher.workers: was removed: .*engine: {type: dask, workers: N}"),
])
def test_bad_engine_settings_stop_at_the_files_line(tmp_path, tiny_bert_dir, teacher, section, own, message):
    raw = _pipeline(tmp_path, tiny_bert_dir, teacher, section, **own)
    with pytest.raises(ConfigError, match=message):
        config_from_dict(copy.deepcopy(raw))

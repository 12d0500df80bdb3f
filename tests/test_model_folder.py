"""A model folder written before issue 31 (tests/fixtures/model-v3, made by
tests/support/make_model_v3.py with that code: priorkit.json format 3, priorkit-run.json,
priorkit-pipeline.yaml and config.json["priorkit"]; a gate attention prior and token
features) loads with today's code and predicts what it predicted then, bit for bit."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import priorkit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "model-v3"
SENTENCES = [["Cocaine", "and", "heparin", "toxicity", "caused", "a", "seizure", "."],
             ["lithium", "carbonate", "was", "given"], ["no", "match", "here"]]


@pytest.fixture
def v3_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the folder's ontology path is relative to the repo root
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE / "model", folder)  # a copy: loading must not need to write
    return folder


def test_a_format_3_folder_predicts_what_it_predicted(v3_folder):
    model = priorkit.load_model(v3_folder)
    assert [c.name for c in model.channels] == ["attention", "features"]
    want = np.load(FIXTURE / "expected.npz")
    got = model.logits(SENTENCES)
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, want[f"logits{i}"])
    tags = [" ".join(r["tags"]) for r in model.predict(SENTENCES)]
    assert tags == (FIXTURE / "expected-tags.txt").read_text().splitlines()
    gates = [p for n, p in model.model.named_parameters() if n.endswith("prior_gate")]
    assert len(gates) == 1 and not np.allclose(gates[0].detach().numpy(), 0.5)  # trained gates restored

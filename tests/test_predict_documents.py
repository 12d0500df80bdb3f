"""``priorkit predict`` on documents (issue 46): an NER model tags a corpus as a stream into
committed chunks; the input is checked before the model loads; a bad record deep in the file stops
the run with file:line after committing what came before, and --skip-bad goes on and lists it; the
command run again after a real kill -9 finishes the file as an uninterrupted run writes it; another
option refuses to resume; --engine dask writes the same bytes.  A tiny real NER run tags."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.tagging import train_tiny_ner, word_corpus

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_bert_dir, one_torch_thread):
    return str(train_tiny_ner(tmp_path_factory.mktemp("cli-ner"), tiny_bert_dir) / "model")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return word_corpus(tmp_path_factory.mktemp("cli-corpus") / "abstracts.jsonl", 400, seed=4)


def run(capsys, *args: str) -> tuple[int, str, str]:
    """``priorkit ARGS`` through the real entry point in this process: (exit status, stdout, stderr)."""
    from priorkit.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli(*args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "priorkit", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **env})


@pytest.fixture(scope="module")
def reference(model, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli-ref") / "tagged.jsonl"
    child = cli("predict", model, str(corpus), "--out", str(out), "--chunk-size", "16")
    _, err = child.communicate(timeout=600)
    assert child.returncode == 0, err[-2000:]
    assert f"tagged 400 documents to {out}" in err
    return out.read_bytes()


def test_documents_come_out_in_input_order_with_offsets_into_their_text(reference, corpus):
    rows = [json.loads(line) for line in reference.decode().splitlines()]
    given = [json.loads(line) for line in corpus.read_text().splitlines()]
    assert [r["id"] for r in rows] == [g["id"] for g in given] and [r["text"] for r in rows] == [g["text"] for g in given]
    entities = [e for r in rows for e in r["entities"]]
    assert len(entities) > 100
    assert all(r["text"][e["start"]:e["end"]] == e["text"] for r in rows for e in r["entities"])
    assert {e["type"] for e in entities} <= {"Chemical", "Disease"} and all(0 < e["score"] <= 1 for e in entities)


def test_the_input_is_checked_before_the_model_loads(model, tmp_path, capsys):
    broken = tmp_path / "broken-model"
    shutil.copytree(model, broken)
    (broken / "model.safetensors").write_bytes(b"not weights")  # loading it would fail differently
    binary = tmp_path / "scan.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    code, _, err = run(capsys, "predict", str(broken), str(binary), "--out", str(tmp_path / "o.jsonl"))
    assert code == 1 and str(binary) in err and "safetensors" not in err
    assert not (tmp_path / "o.jsonl").exists()
    code, _, err = run(capsys, "predict", str(broken), str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o.jsonl"))
    assert code == 1 and "missing.jsonl" in err and "safetensors" not in err
    code, _, err = run(capsys, "predict", model, str(binary), "--out", str(tmp_path / "o.jsonl"), "--device", "cuda:0")
    assert code == 1 and "scan.txt" in err  # the input first, then the device
    good = word_corpus(tmp_path / "good.jsonl", 3)
    import torch

    if not torch.cuda.is_available():
        code, _, err = run(capsys, "predict", str(broken), str(good), "--out", str(tmp_path / "o.jsonl"),
                           "--device", "cuda")
        assert code == 1 and "--device cuda: no CUDA GPU is visible" in err and "safetensors" not in err


def test_a_bad_record_at_line_150_stops_with_file_line_and_skip_bad_goes_on(model, tmp_path, capsys):
    corpus = word_corpus(tmp_path / "big.jsonl", 200, seed=6, bad_at=150)
    out = tmp_path / "tagged.jsonl"
    code, _, err = run(capsys, "predict", model, str(corpus), "--out", str(out), "--chunk-size", "32")
    assert code == 1
    assert f"{corpus}:150:" in err
    assert "the 128 documents of the chunks before it are tagged and committed in tagged.jsonl (the 21 after" in err
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [f"doc{i}" for i in range(128)]
    code, _, err = run(capsys, "predict", model, str(corpus), "--out", str(out), "--chunk-size", "32", "--skip-bad")
    assert code == 0, err
    assert "skipped 1 bad record (--skip-bad):" in err and f"{corpus}:150:" in err
    assert "(128 committed before, resumed)" in err
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == [f"doc{i}" for i in range(200) if i != 149]
    # the same in one go gives the same file
    fresh = tmp_path / "fresh.jsonl"
    code, _, err = run(capsys, "predict", model, str(corpus), "--out", str(fresh), "--chunk-size", "32", "--skip-bad")
    assert code == 0 and fresh.read_bytes() == out.read_bytes()


def test_the_command_run_again_after_kill_9_finishes_the_same_file(model, corpus, reference, tmp_path):
    out = tmp_path / "tagged.jsonl"
    progress = Path(str(out) + ".progress")
    args = ("predict", model, str(corpus), "--out", str(out), "--chunk-size", "16")
    child = cli(*args)
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:
        if progress.exists() and json.loads(progress.read_text() or "{}").get("documents", 0) >= 48:
            break
        time.sleep(0.02)
    assert child.poll() is None, "the run ended before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    record = json.loads(progress.read_text())
    assert 48 <= record["documents"] < 400 and not record["done"]
    again = cli(*args)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-2000:]
    assert f"({record['documents']} committed before, resumed)" in err
    assert out.read_bytes() == reference
    # another option refuses to resume, and says how to start over
    refused = cli("predict", model, str(corpus), "--out", str(out), "--chunk-size", "32")
    _, err = refused.communicate(timeout=600)
    assert refused.returncode == 1 and "option chunk_size was 16, is 32" in err and "--restart" in err
    assert out.read_bytes() == reference


def test_dask_workers_write_the_local_bytes(model, corpus, reference, tmp_path):
    out = tmp_path / "dask.jsonl"
    child = cli("predict", model, str(corpus), "--out", str(out), "--chunk-size", "16", "--engine", "dask",
                "--workers", "2")
    _, err = child.communicate(timeout=600)
    assert child.returncode == 0, err[-2000:]
    assert "2 Dask workers" in err and out.read_bytes() == reference


def test_formats_standard_output_progress_lines_and_usage_errors(model, corpus, tmp_path, capsys, monkeypatch):
    small = word_corpus(tmp_path / "small.jsonl", 30, seed=8)
    code, out, err = run(capsys, "predict", model, str(small), "--format", "pubtator")
    assert code == 0 and out.count("|t|") == 30 and out.splitlines()[0].startswith("doc0|t|")
    code, _, err = run(capsys, "predict", model, str(small), "--out", str(tmp_path / "t.bioc.xml"))
    text = (tmp_path / "t.bioc.xml").read_text()
    assert code == 0 and text.count("<collection>") == 1 and text.rstrip().endswith("</collection>")
    assert text.count("<document>") == 30
    monkeypatch.setenv("PRIORKIT_PROGRESS_SECONDS", "0")
    code, _, err = run(capsys, "predict", model, str(small), "--out", str(tmp_path / "p.jsonl"), "--chunk-size", "10")
    lines = [line for line in err.splitlines() if line.startswith("tag: ")]
    assert code == 0 and len(lines) == 3 and "doc/s" in lines[0] and "left" in lines[0]
    code, _, err = run(capsys, "predict", model, str(small), "--scheduler", "tcp://h:8786")
    assert code == 2 and "--scheduler is for --engine dask" in err
    code, _, err = run(capsys, "predict", model, str(small), "--with", model, "--engine", "dask")
    assert code == 2 and "--with give per-sentence records" in err

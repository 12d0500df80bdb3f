"""Tagging a corpus (priorkit/tagging/): streamed, written in input order in committed chunks,
resumed after a real kill -9, refused when the model, input or options changed, the same bytes
on a real Dask LocalCluster of 2 workers.  A tiny real NER run (2-layer BERT, MiniLM's
tokenizer) tags word corpora."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import priorkit
from priorkit.documents import Document
from priorkit.errors import DocumentError, PriorkitError
from priorkit.tagging import LocalEngine, tag_corpus
from priorkit.tagging.commit import progress_path, run_fingerprint
from priorkit.tagging.jobs import Job, tag_chunk
from priorkit.tagging.taggers import ModelTagger, model_job

from support.tagging import JsonWriter, XmlishWriter, jsonl_documents, tag_file, train_tiny_ner, word_corpus

SUPPORT = Path(__file__).parent / "support" / "tagging.py"


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory, tiny_bert_dir, one_torch_thread):
    run = train_tiny_ner(tmp_path_factory.mktemp("tag-ner"), tiny_bert_dir)
    return str(run / "model")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return word_corpus(tmp_path_factory.mktemp("corpus") / "words.jsonl", 300, seed=1)


@pytest.fixture(scope="module")
def reference(ner_model, corpus, tmp_path_factory):
    """An uninterrupted local run's output."""
    out = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    summary = tag_file(ner_model, str(corpus), str(out), chunk_size=25)
    assert summary.documents == 300 and summary.chunks == 12
    return out.read_bytes()


def test_the_stream_gives_the_models_own_tags_in_input_order(ner_model, corpus, reference):
    predictor = priorkit.load_model(ner_model)
    docs = list(jsonl_documents(corpus))
    rows = [json.loads(line) for line in reference.decode().splitlines()]
    assert [r["id"] for r in rows] == [d.id for d in docs]  # input order, every document once
    # the model's own document API, on other batches (7 documents, unsorted)
    direct = list(predictor.tag_documents(docs, batch_size=7))
    found = 0
    for doc, row, tagged in zip(docs, rows, direct):
        assert [[s, e, t] for s, e, _, t, _ in row["entities"]] == [[e.start, e.end, e.type] for e in tagged.entities]
        for (s, e, text, _, score), ent in zip(row["entities"], tagged.entities):
            assert doc.text[s:e] == text and score == pytest.approx(ent.score, abs=1e-5)
        found += len(row["entities"])
    assert found > 50  # the tiny model tags something: the comparison is not between empty lists


def test_each_chunk_is_tagged_sorted_by_length_and_put_back_in_order(ner_model, corpus):
    seen: list[list[int]] = []
    tagger = ModelTagger(priorkit.load_model(ner_model), batch_size=8)

    def recording(docs):
        seen.append([len(d.text) for d in docs])
        return tagger(docs)

    docs = list(jsonl_documents(corpus))[:40]
    tagged = tag_chunk(recording, docs)
    assert [t.id for t in tagged] == [d.id for d in docs]
    assert seen[0] == sorted(len(d.text) for d in docs) != [len(d.text) for d in docs]
    with pytest.raises(PriorkitError, match="keep the order it is given"):
        tag_chunk(lambda ds: tagger(list(reversed(ds))), docs[:5])
    with pytest.raises(PriorkitError, match="gave 4 tagged documents for 5"):
        tag_chunk(lambda ds: tagger(ds)[:4], docs[:5])


def test_memory_is_bounded_by_the_chunk_not_the_corpus(ner_model, corpus, tmp_path):
    read = [0]
    ahead = []

    def counted():
        for doc in jsonl_documents(corpus):
            read[0] += 1
            yield doc

    job = model_job(ner_model, JsonWriter, batch_size=16)
    tag_corpus(counted(), job, JsonWriter(), out=tmp_path / "o.jsonl", chunk_size=20, progress=False,
               on_commit=lambda committed: ahead.append(read[0] - committed))
    assert len(ahead) == 15 and max(ahead) <= 20  # never more than one chunk read past what is written


def test_a_restart_cuts_the_uncommitted_tail_and_goes_on(ner_model, corpus, reference, tmp_path):
    out = tmp_path / "o.jsonl"

    class Stop(Exception):
        pass

    def stop_after(committed):
        if committed >= 100:
            raise Stop

    job = model_job(ner_model, JsonWriter, batch_size=16)
    fp = run_fingerprint(ner_model, [corpus], {"chunk_size": 25, "batch_size": 16})
    with pytest.raises(Stop):
        tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=out, fingerprint=fp, chunk_size=25,
                   progress=False, on_commit=stop_after)
    record = json.loads(progress_path(out).read_text())
    assert record["documents"] == 100 and record["bytes"] == out.stat().st_size and not record["done"]
    with out.open("ab") as fh:  # a chunk written but never recorded: a kill between the two steps
        fh.write(b'{"id": "doc100", "entities": [[0, 3, "hal')
    summary = tag_file(ner_model, str(corpus), str(out), chunk_size=25)
    assert summary.resumed == 100 and summary.tagged == 200 and summary.documents == 300
    assert out.read_bytes() == reference
    again = tag_file(ner_model, str(corpus), str(out), chunk_size=25)  # finished: nothing to do
    assert again.already_done and again.tagged == 0 and out.read_bytes() == reference


def _committed(progress: Path) -> dict:
    try:
        return json.loads(progress.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def test_a_real_kill_9_at_random_moments_loses_nothing(ner_model, tmp_path):
    """A child process tags; it is killed with SIGKILL at a random moment after each of its
    commits moved on, up to three times; the resumed output equals an uninterrupted run's."""
    corpus = word_corpus(tmp_path / "big.jsonl", 1500, seed=3)
    reference = tmp_path / "reference.jsonl"
    tag_file(ner_model, str(corpus), str(reference), chunk_size=20)
    out = tmp_path / "killed.jsonl"
    progress = progress_path(out)
    rng = random.Random(11)
    kills = []
    while len(kills) < 3 and not _committed(progress).get("done"):
        before = _committed(progress).get("documents", 0)
        child = subprocess.Popen([sys.executable, str(SUPPORT), ner_model, str(corpus), str(out), "20"],
                                 stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
        deadline = time.monotonic() + 180
        while child.poll() is None and time.monotonic() < deadline:
            if _committed(progress).get("documents", 0) > before:  # it is tagging: now a random moment
                time.sleep(rng.uniform(0.0, 0.4))
                break
            time.sleep(0.02)
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        record = _committed(progress)
        if child.returncode == -signal.SIGKILL:
            kills.append(record["documents"])
        assert record["bytes"] <= out.stat().st_size  # what the record counts is on disk
        assert len(out.read_bytes()[:record["bytes"]].decode().splitlines()) == record["documents"]
    assert kills and kills == sorted(kills) and 0 < kills[0] < 1500  # killed mid-run, and each run went further
    summary = tag_file(ner_model, str(corpus), str(out), chunk_size=20)
    assert summary.resumed == kills[-1] and summary.documents == 1500
    assert out.read_bytes() == reference.read_bytes()


def test_another_model_input_or_option_refuses_to_resume(ner_model, corpus, tmp_path):
    out = tmp_path / "o.jsonl"
    job = model_job(ner_model, JsonWriter, batch_size=16)

    def run(fp, restart=False):
        return tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=out, fingerprint=fp, chunk_size=50,
                          progress=False, restart=restart)

    base = run_fingerprint(ner_model, [corpus], {"chunk_size": 50, "batch_size": 16})
    run(base)
    finished = out.read_bytes()
    with pytest.raises(PriorkitError, match=r"option batch_size was 16, is 32.*pass --restart"):
        run(run_fingerprint(ner_model, [corpus], {"chunk_size": 50, "batch_size": 32}))
    other = tmp_path / "other-model"
    import shutil

    shutil.copytree(ner_model, other)
    (other / "priorkit.json").write_text((other / "priorkit.json").read_text().replace('"argmax"', '"viterbi"'))
    with pytest.raises(PriorkitError, match="the model differs"):
        run(run_fingerprint(str(other), [corpus], {"chunk_size": 50, "batch_size": 16}))
    edited = tmp_path / "words.jsonl"
    edited.write_bytes(corpus.read_bytes().replace(b"Aspirin", b"aspirin", 1))
    with pytest.raises(PriorkitError, match="the input files differ"):
        run(run_fingerprint(ner_model, [edited], {"chunk_size": 50, "batch_size": 16}))
    assert out.read_bytes() == finished  # a refusal touches nothing
    with out.open("ab") as fh:
        fh.write(b"more")
    os.utime(corpus, None)  # the same bytes, touched: the input counts as changed
    with pytest.raises(PriorkitError, match="has changed since"):
        run(run_fingerprint(ner_model, [corpus], {"chunk_size": 50, "batch_size": 16}))
    summary = run(run_fingerprint(ner_model, [corpus], {"chunk_size": 50, "batch_size": 16}), restart=True)
    assert summary.resumed == 0 and out.read_bytes() == finished
    stray = tmp_path / "stray.jsonl"
    stray.write_text("someone's file\n")
    with pytest.raises(PriorkitError, match="has no stray.jsonl.progress beside it.*--restart"):
        tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=stray, fingerprint=base, progress=False)
    assert stray.read_text() == "someone's file\n"


def test_a_bad_record_deep_in_the_input_stops_after_committing_what_came_before(ner_model, tmp_path):
    corpus = word_corpus(tmp_path / "bad.jsonl", 120, seed=2, bad_at=87)
    out = tmp_path / "o.jsonl"
    with pytest.raises(DocumentError) as err:
        tag_file(ner_model, str(corpus), str(out), chunk_size=25)
    message = str(err.value)
    assert message.startswith(f"{corpus}:87: not a JSON object")
    assert "the 75 documents of the chunks before it are tagged and committed in o.jsonl (the 11 after them" in message
    assert "--skip-bad" in message
    record = json.loads(progress_path(out).read_text())
    assert record["documents"] == 75 and not record["done"]
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [f"doc{i}" for i in range(75)]


def test_header_and_footer_are_written_once_across_a_resume_and_to_a_stream(ner_model, corpus, tmp_path):
    import io

    job = model_job(ner_model, XmlishWriter, batch_size=16)
    stream = io.StringIO()
    tag_corpus(jsonl_documents(corpus), job, XmlishWriter(), stream=stream, chunk_size=40, progress=False)
    whole = stream.getvalue()
    assert whole.startswith("<collection>\n") and whole.endswith("</collection>\n") and whole.count("<collection>") == 1
    out = tmp_path / "o.xml"

    def stop(committed):
        if committed >= 80:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tag_corpus(jsonl_documents(corpus), job, XmlishWriter(), out=out, chunk_size=40, progress=False,
                   on_commit=stop)
    summary = tag_corpus(jsonl_documents(corpus), job, XmlishWriter(), out=out, chunk_size=40, progress=False)
    assert summary.resumed == 80 and out.read_text() == whole


def test_empty_input_writes_header_and_footer(ner_model, tmp_path):
    job = model_job(ner_model, XmlishWriter)
    summary = tag_corpus(iter(()), job, XmlishWriter(), out=tmp_path / "o.xml", progress=False)
    assert summary.documents == 0 and (tmp_path / "o.xml").read_text() == "<collection>\n</collection>\n"


# --------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def client():
    from priorkit.precompute.dask_engine import start_client

    client, cluster = start_client(workers=2)
    yield client
    client.close()
    cluster.close()


def test_two_dask_workers_write_the_local_runs_bytes(ner_model, corpus, reference, client, tmp_path):
    from priorkit.tagging.dask_engine import DaskEngine

    out = tmp_path / "dask.jsonl"
    read = [0]
    ahead = []

    def counted():
        for doc in jsonl_documents(corpus):
            read[0] += 1
            yield doc

    engine = DaskEngine(client=client, in_flight=3)
    job = model_job(ner_model, JsonWriter, batch_size=16, threads=1)
    fp = run_fingerprint(ner_model, [corpus], {"chunk_size": 25, "batch_size": 16})
    summary = tag_corpus(counted(), job, JsonWriter(), out=out, fingerprint=fp, chunk_size=25, engine=engine,
                         progress=False, on_commit=lambda n: ahead.append(read[0] - n))
    assert out.read_bytes() == reference
    workers = set(client.run(os.getpid).values())
    assert {int(k.rsplit(":", 1)[1]) for k in summary.engine["builds"]} <= workers and os.getpid() not in workers
    assert set(summary.engine["builds"].values()) == {1}  # each worker process loaded the model once
    assert max(ahead) <= 25 * 4  # at most in_flight chunks ahead of the committed ones, plus the next read


def test_a_run_started_locally_is_finished_on_dask(ner_model, corpus, reference, client, tmp_path):
    from priorkit.tagging.dask_engine import DaskEngine

    out = tmp_path / "o.jsonl"

    def stop(committed):
        if committed >= 150:
            raise KeyboardInterrupt

    fp = run_fingerprint(ner_model, [corpus], {"chunk_size": 25, "batch_size": 16})
    job = model_job(ner_model, JsonWriter, batch_size=16)  # no thread count: each worker's own (--nthreads)
    import torch

    client.run(torch.set_num_threads, 2)
    with pytest.raises(KeyboardInterrupt):
        tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=out, fingerprint=fp, chunk_size=25,
                   progress=False, on_commit=stop)
    summary = tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=out, fingerprint=fp, chunk_size=25,
                         engine=DaskEngine(client=client), progress=False)
    assert summary.resumed == 150 and out.read_bytes() == reference
    assert set(client.run(torch.get_num_threads).values()) == {1}  # the workers' one thread, not every core


def test_a_worker_error_stops_the_run_with_its_message(corpus, client, tmp_path):
    import functools

    from priorkit.tagging.dask_engine import DaskEngine

    job = Job("broken", functools.partial(_broken_tagger, "no such model folder"))
    with pytest.raises(PriorkitError, match="--engine dask: a worker failed: no such model folder"):
        tag_corpus(jsonl_documents(corpus), job, JsonWriter(), out=tmp_path / "o.jsonl", chunk_size=25,
                   engine=DaskEngine(client=client), progress=False)


def _broken_tagger(why):
    raise PriorkitError(why)


def test_the_bf16_autocast_path_tags_like_float32(tmp_path, tiny_bert_dir, corpus, one_torch_thread):
    """--device cuda tags under bf16 autocast; the same casts on the CPU, through a model with the
    WordNet attention prior in layer 0, find the entities float32 finds (scores to bf16's precision)."""
    from priorkit.tagging.taggers import Autocast

    run = train_tiny_ner(tmp_path, tiny_bert_dir, prior="prior: {name: wn, provider: wordnet, params: "
                         "{measure: wup}, layout: full, attention: {layers: [0]}}\n")
    model = priorkit.load_model(run)
    assert model.builder is not None  # the prior is on
    docs = list(jsonl_documents(corpus))[:60]
    tagger = ModelTagger(model, batch_size=16)
    full = tag_chunk(tagger, docs)
    half = tag_chunk(Autocast(tagger, "cpu"), docs)
    pairs = [(a, b) for x, y in zip(full, half) for a, b in zip(x.entities, y.entities)]
    same = sum((a.start, a.end, a.type) == (b.start, b.end, b.type) for a, b in pairs)
    assert len(pairs) > 20 and same >= 0.9 * sum(len(x.entities) for x in full)
    assert all(abs(a.score - b.score) < 0.05 for a, b in pairs if (a.start, a.end) == (b.start, b.end))


def test_every_chunk_gives_the_memory_it_freed_back(monkeypatch):
    """glibc keeps what a chunk's tensors free in a fragmented heap: without a trim after each
    chunk the resident memory of a tagging run climbed with the documents (docs/scaling.md,
    "Tagging on a cluster"); every engine runs its chunks through ``apply``, which trims."""
    from priorkit.tagging import jobs

    calls = []
    monkeypatch.setattr(jobs, "release_memory", lambda: calls.append(1))
    job = Job("trim-test", lambda: (lambda chunk: [d * 2 for d in chunk]))
    results = list(LocalEngine().map(job, [[1, 2], [3]]))
    assert [r.value for r in results] == [[2, 4], [6]] and len(calls) == 2
    monkeypatch.undo()
    jobs.release_memory()  # the real one: malloc_trim on glibc, nothing elsewhere; never raises
    jobs.release_memory()

"""The embedding provider: the real MiniLM and the real GloVe 6B 50d vectors."""
from __future__ import annotations

import contextlib
import gzip

import numpy as np
import pyarrow.parquet as pq
import pytest

import priorkit
from priorkit.errors import DataFormatError, PriorkitError, ResourceError
from priorkit.resources import resource_path

WORDS = ["dog", "cat", "car", "heart attack", "democracy"]


@pytest.fixture(scope="module")
def minilm():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny batches: threads only contend on a shared 2-core box
    p = priorkit.get_provider("embedding", device="cpu")
    p.ensure_loaded()
    yield p
    torch.set_num_threads(threads)  # leave the process as we found it for other test modules


@pytest.fixture(scope="module")
def glove_raw():
    """GloVe rows read straight from the package files (the independent reference)."""
    words = pq.read_table(resource_path("glove", "glove_6B_index.parquet")).column("index").to_pylist()
    matrix = np.load(resource_path("glove", "glove_6B_50d_emb.npy"))
    return {w: i for i, w in enumerate(words)}, matrix, words


def _cos(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_minilm_equals_manual_mean_pooling(minilm, minilm_path):
    """Reference: transformers' AutoModel + attention-masked mean pooling, by hand."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(minilm_path))
    model = AutoModel.from_pretrained(str(minilm_path)).eval()
    batch = tok(WORDS, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state                       # (B, T, H)
    mask = batch["attention_mask"].unsqueeze(-1).float()                # (B, T, 1)
    emb = (hidden * mask).sum(1) / mask.sum(1)
    emb = torch.nn.functional.normalize(emb, dim=-1).numpy()
    want = np.clip(emb @ emb.T, 0, 1)
    np.fill_diagonal(want, 1.0)
    got = minilm.similarity(WORDS, WORDS)
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_minilm_covers_every_string(minilm):
    odd = ["qwzxv", "", "🙂", "heart_attack", "Dog!"]
    sim = minilm.similarity(odd, ["dog", "heart attack"])
    assert minilm.allows_nan is False
    assert np.isfinite(sim).all() and sim.min() >= 0 and sim.max() <= 1
    # underscore terms are read as the phrase
    assert sim[3, 1] == pytest.approx(1.0, abs=1e-5)


def test_minilm_related_above_unrelated(minilm):
    sim = minilm.similarity(["dog", "car"], ["puppy", "vehicle", "democracy"])
    assert sim[0, 0] > sim[0, 2] and sim[1, 1] > sim[1, 2]


@contextlib.contextmanager
def counting_encode(provider):
    """Record every batch of texts the provider's encoder is given."""
    calls: list[list[str]] = []
    original = provider.encode

    def counting(texts):
        calls.append(list(texts))
        return original(texts)

    provider.encode = counting
    try:
        yield calls
    finally:
        provider.encode = original


def test_minilm_caches_words_and_batches_consistently(minilm):
    with counting_encode(minilm) as calls:
        fresh = ["zebra", "giraffe", "savanna"]
        a = minilm.similarity(fresh, ["lion"])
        b = minilm.similarity(["lion"], fresh)
        assert calls == [["zebra", "giraffe", "savanna", "lion"]]   # one batch, then cache hits
        np.testing.assert_array_equal(a[:, 0], b[0])                 # symmetric
    small = priorkit.get_provider("embedding", device="cpu", batch_size=2)
    small.model = minilm.model          # same weights, different batching
    small._loaded = True
    np.testing.assert_allclose(small.similarity(WORDS, WORDS), minilm.similarity(WORDS, WORDS), atol=2e-5)
    assert small.fingerprint == minilm.fingerprint   # batch size and device do not change values


def test_minilm_device_and_fingerprint(minilm):
    assert minilm.device == "cpu"
    shifted = priorkit.get_provider("embedding", scale="shift")
    assert shifted.fingerprint != minilm.fingerprint
    with pytest.raises(PriorkitError, match="scale"):
        priorkit.get_provider("embedding", scale="sigmoid")
    with pytest.raises(PriorkitError, match="not both"):
        priorkit.get_provider("embedding", model="x", vectors="glove")
    with pytest.raises(ResourceError, match="cannot load"):
        priorkit.get_provider("embedding", model="/nonexistent/model").similarity(["a"], ["b"])


def test_glove_npy_equals_raw_cosine(glove_raw):
    row, matrix, _ = glove_raw
    p = priorkit.get_provider("embedding", vectors="glove")
    left, right = ["dog", "king", "ice"], ["cat", "queen", "steam", "democracy"]
    got = p.similarity(left, right)
    want = np.array([[max(_cos(matrix[row[a]], matrix[row[b]]), 0.0) for b in right] for a in left])
    np.testing.assert_allclose(got, want, atol=1e-6)
    shift = priorkit.get_provider("embedding", vectors="glove", scale="shift").similarity(left, right)
    raw = np.array([[_cos(matrix[row[a]], matrix[row[b]]) for b in right] for a in left])
    np.testing.assert_allclose(shift, (raw + 1) / 2, atol=1e-6)


def test_glove_nan_for_oov_and_phrase_mean(glove_raw):
    row, matrix, _ = glove_raw
    p = priorkit.get_provider("embedding", vectors="glove")
    assert p.allows_nan
    sim = p.similarity(["heart attack", "qwzxvq", "", "heart qwzxvq"], ["stroke", "qwzxvq"])
    mean = matrix[row["heart"]] / np.linalg.norm(matrix[row["heart"]]) \
        + matrix[row["attack"]] / np.linalg.norm(matrix[row["attack"]])
    assert sim[0, 0] == pytest.approx(max(_cos(mean, matrix[row["stroke"]]), 0), abs=1e-6)
    assert np.isnan(sim[1:, :]).all() and np.isnan(sim[:, 1]).all()   # OOV word, empty, partial phrase


def _write_text(path, rows, header):
    lines = ([f"{len(rows)} {len(rows[0][1])}"] if header else []) + \
        [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in rows]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


@pytest.mark.parametrize("name,header", [("glove.txt", False), ("w2v.txt", True), ("glove.txt.gz", False)])
def test_text_formats_and_their_index(tmp_path, glove_raw, name, header):
    row, matrix, _ = glove_raw
    words = ["dog", "cat", "car", "truck", "apple"]
    rows = [(w, matrix[row[w]]) for w in words]
    path = tmp_path / name
    _write_text(path, rows, header)
    cache = tmp_path / "idx"
    p = priorkit.get_provider("embedding", vectors=str(path), cache_dir=str(cache))
    got = p.similarity(words, words)
    rounded = {w: np.array([float(f"{x:.5f}") for x in v]) for w, v in rows}
    want = np.array([[max(_cos(rounded[a], rounded[b]), 0) for b in words] for a in words])
    np.fill_diagonal(want, 1.0)
    np.testing.assert_allclose(got, want, atol=1e-5)
    built = list((cache / "vectors").glob("*/vectors.npz"))
    assert len(built) == 1
    again = priorkit.get_provider("embedding", vectors=str(path), cache_dir=str(cache))
    np.testing.assert_array_equal(again.similarity(words, words), got)
    assert built[0].stat().st_mtime_ns == list((cache / "vectors").glob("*/vectors.npz"))[0].stat().st_mtime_ns


def test_malformed_vector_files_name_the_line(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("dog 0.1 0.2 0.3\ncat 0.1 0.2\n")
    with pytest.raises(DataFormatError, match=r"short\.txt, line 2: expected a word and 3 numbers"):
        priorkit.get_provider("embedding", vectors=str(short), cache_dir=str(tmp_path)).similarity(["dog"], ["cat"])
    nonnum = tmp_path / "nonnum.txt"
    nonnum.write_text("dog 0.1 0.2 0.3\ncat 0.1 0.2 0.3\nbird 0.1 zero 0.3\n")
    with pytest.raises(DataFormatError, match=r"nonnum\.txt, line 3: .*not a number"):
        priorkit.get_provider("embedding", vectors=str(nonnum), cache_dir=str(tmp_path)).similarity(["dog"], ["cat"])
    with pytest.raises(ResourceError, match="does not exist"):
        priorkit.get_provider("embedding", vectors=str(tmp_path / "none.txt")).similarity(["dog"], ["cat"])


def test_npy_with_a_vocabulary_that_does_not_match(tmp_path, glove_raw):
    _, matrix, words = glove_raw
    np.save(tmp_path / "vecs.npy", matrix[:10])
    (tmp_path / "vecs.txt").write_text("\n".join(words[:9]) + "\n")
    with pytest.raises(DataFormatError, match="lists 9 words but .* has 10 rows"):
        priorkit.get_provider("embedding", vectors=str(tmp_path / "vecs.npy")).similarity(["the"], [","])
    (tmp_path / "vecs.txt").write_text("\n".join(words[:10]) + "\n")
    sim = priorkit.get_provider("embedding", vectors=str(tmp_path / "vecs.npy")).similarity(["the"], ["of"])
    assert sim[0, 0] == pytest.approx(max(_cos(matrix[0], matrix[3]), 0), abs=1e-6)


# ---- the batched pair path (issues 11 and 13) ------------------------------------------
PAIR_WORDS = ["dog", "cat", "car", "heart attack", "democracy", "dog", "heart_attack", "zebra"]


def _pairs(words):
    left = [a for a in words for _ in words]
    right = [b for _ in words for b in words]
    return left, right


def test_minilm_pair_path_is_one_batch_and_equals_the_matrix_path(minilm):
    fresh = ["okapi", "tapir", "capybara", "wombat"]
    left, right = _pairs([*fresh, "dog", "cat"])
    with counting_encode(minilm) as calls:
        got = minilm.pair_similarity(left, right)
    assert len(calls) == 1 and set(fresh) <= set(calls[0])  # the new words, once each, in one batch
    assert len(calls[0]) == len(set(calls[0]))
    want = np.array([minilm.similarity([a], [b])[0, 0] for a, b in zip(left, right)])
    assert np.abs(got - want).max() <= 1e-7
    left, right = _pairs(PAIR_WORDS)
    got = minilm.pair_similarity(left, right)
    np.testing.assert_allclose(got, minilm.similarity(PAIR_WORDS, PAIR_WORDS).ravel(), rtol=0, atol=1e-7)
    assert got[left.index("dog")] == 1.0


def test_glove_pair_path_equals_the_matrix_path():
    p = priorkit.get_provider("embedding", vectors="glove")
    words = [*PAIR_WORDS, "qwzxv-not-a-word", "new york"]
    left, right = _pairs(words)
    got = p.pair_similarity(left, right)
    want = p.similarity(words, words).ravel()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    known = ~np.isnan(want)
    assert np.isnan(want).sum() > 0 and np.abs(got[known] - want[known]).max() <= 1e-7

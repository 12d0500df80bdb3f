"""The conceptnet provider on real ConceptNet edges (slices of the embedded dump)."""
from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import priorkit
from priorkit.errors import DataFormatError, PriorkitError, ResourceError
from priorkit.resources import embedded

FULL = embedded("conceptnet-en", "assertions-en.csv.gz")
#: concepts whose edges the slice keeps (plus the first lines of the dump)
FOCUS = {"dog", "animal", "cat", "chair", "furniture", "table", "pet", "puppy", "bark",
         "heart_attack", "heart", "car", "vehicle", "bone", "sit"}


def _concept(uri: str) -> str:
    return uri.split("/")[3]


@pytest.fixture(scope="module")
def slice_lines() -> list[str]:
    """Real lines of the dump: every edge touching FOCUS, plus the first 3,000 lines."""
    keep = []
    with gzip.open(FULL, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            fields = line.rstrip("\n").split("\t")
            if i < 3000 or _concept(fields[2]) in FOCUS or _concept(fields[3]) in FOCUS:
                keep.append(line)
    return keep


@pytest.fixture()
def slice_file(tmp_path, slice_lines) -> Path:
    path = tmp_path / "assertions.csv"
    path.write_text("".join(slice_lines), encoding="utf-8")
    return path


def _provider(path, tmp_path, **params):
    return priorkit.get_provider("conceptnet", path=str(path), cache_dir=str(tmp_path / "idx"), **params)


def _reference(lines: list[str], power: float = 1.0):
    """The documented measure, re-implemented with plain dicts from the raw lines."""
    strength: dict[tuple[str, str], float] = defaultdict(lambda: 1.0)  # product of (1 - s)
    for line in lines:
        _, rel, start, end, info = line.rstrip("\n").split("\t")
        a, b = _concept(start), _concept(end)
        w = json.loads(info)["weight"]
        rel_name = rel[3:]
        relw = {"Antonym": .5, "DistinctFrom": .5, "HasContext": .5, "SimilarSize": .5}.get(rel_name, 1.0)
        if a == b or w <= 0:
            continue
        s = relw * (1 - math.exp(-w))
        strength[(a, b)] *= 1 - s
        strength[(b, a)] *= 1 - s
    adj: dict[str, dict[str, float]] = defaultdict(dict)
    for (a, b), keep in strength.items():
        adj[a][b] = 1 - keep
    damp = {n: 1 / math.log2(2 + len(nb)) for n, nb in adj.items()}

    def vec(n):
        v = {k: a * damp[k] for k, a in adj[n].items()}
        v[n] = v.get(n, 0.0) + damp[n]
        return v

    def sim(x, y):
        if x == y:
            return 1.0
        vx, vy = vec(x), vec(y)
        dot = sum(val * vy.get(k, 0.0) for k, val in vx.items())
        nx = math.sqrt(sum(v * v for v in vx.values()))
        ny = math.sqrt(sum(v * v for v in vy.values()))
        return min(dot / (nx * ny), 1.0) ** power

    return sim


def test_values_match_independent_reference(slice_file, slice_lines, tmp_path):
    words = ["dog", "cat", "animal", "chair", "pet", "furniture", "heart_attack", "car"]
    for power in (1.0, 0.5):
        p = _provider(slice_file, tmp_path, power=power)
        got = p.similarity(words, words)
        ref = _reference(slice_lines, power)
        want = np.array([[ref(a, b) for b in words] for a in words])
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


def test_range_nan_and_identity(slice_file, tmp_path):
    p = _provider(slice_file, tmp_path)
    sim = p.similarity(["dog", "cat", "qwzxv", "", "!!"], ["animal", "chair", "dog"])
    assert sim.shape == (5, 3) and sim.dtype == np.float32
    finite = sim[:2]
    assert np.isfinite(finite).all() and finite.min() >= 0 and finite.max() <= 1
    assert np.isnan(sim[2:]).all()  # unknown, empty and punctuation-only words
    assert sim[0, 2] == 1.0  # dog/dog


def test_related_scores_above_unrelated_on_full_dump(tmp_path):
    """Cold build of the whole embedded dump (488,014 edges), then real pairs.  (Its speed,
    about 3 s on an idle 2-core machine, is a benchmark's business, not a test's.)"""
    p = _provider(FULL, tmp_path)
    sim = p.similarity(["dog", "car"], ["animal", "chair", "vehicle", "cat"])
    stats = p.stats()
    assert stats["edges_in_file"] == 488_014
    assert sim[0, 0] > sim[0, 1]          # dog/animal > dog/chair
    assert sim[1, 2] > sim[1, 1]          # car/vehicle > car/chair
    assert sim[0, 3] > sim[0, 1]          # dog/cat > dog/chair


def test_index_is_reused_and_identical(slice_file, tmp_path):
    words = ["dog", "cat", "animal", "chair"]
    first = _provider(slice_file, tmp_path)
    a = first.similarity(words, words)
    folder = Path(first.stats()["index_folder"])
    assert (folder / "index.json").exists() and (folder / "edges.npz").exists()
    mtime = (folder / "edges.npz").stat().st_mtime_ns

    second = _provider(slice_file, tmp_path)
    b = second.similarity(words, words)
    np.testing.assert_array_equal(a, b)
    assert (folder / "edges.npz").stat().st_mtime_ns == mtime  # read, not rebuilt
    assert first.fingerprint == second.fingerprint

    # a changed file gets a new index and fingerprint, never the stale one
    with open(slice_file, "a", encoding="utf-8") as fh:
        fh.write("/a/x\t/r/IsA\t/c/en/dog\t/c/en/chair\t{\"weight\": 5.0}\n")
    third = _provider(slice_file, tmp_path)
    c = third.similarity(words, words)
    assert third.stats()["index_folder"] != str(folder)
    assert third.fingerprint != first.fingerprint
    assert c[0, 3] > a[0, 3]  # the new dog-chair edge counts


def test_gzip_and_plain_give_the_same_values(slice_file, tmp_path):
    gz = tmp_path / "assertions.csv.gz"
    gz.write_bytes(gzip.compress(slice_file.read_bytes()))
    words = ["dog", "cat", "animal", "chair", "bark"]
    plain = _provider(slice_file, tmp_path).similarity(words, words)
    packed = _provider(gz, tmp_path).similarity(words, words)
    np.testing.assert_array_equal(plain, packed)


def test_phrases_lemmas_and_case(slice_file, tmp_path):
    p = _provider(slice_file, tmp_path)
    sim = p.similarity(["heart attack", "Heart Attacks", "dogs", "DOG"], ["heart_attack", "dog"])
    assert sim[0, 0] == 1.0 and sim[1, 0] == 1.0
    assert sim[2, 1] == 1.0 and sim[3, 1] == 1.0
    np.testing.assert_array_equal(sim[2], sim[3])   # two words, one node: identical rows
    off = p.similarity(["dogs"], ["dogs"], )
    assert off[0, 0] == 1.0
    no_lemma = _provider(slice_file, tmp_path, lemmatize=False)
    assert np.isnan(no_lemma.similarity(["dogs"], ["cat"])).all()


def test_relation_filter_and_min_weight_count_edges(slice_file, slice_lines, tmp_path):
    isa = sum(1 for ln in slice_lines if ln.split("\t")[1] == "/r/IsA")
    heavy = sum(1 for ln in slice_lines if json.loads(ln.rstrip("\n").split("\t")[4])["weight"] >= 2)
    p = _provider(slice_file, tmp_path, relations=["/r/IsA"])
    self_loops = sum(1 for ln in slice_lines
                     if ln.split("\t")[1] == "/r/IsA" and ln.split("\t")[2] == ln.split("\t")[3])
    assert p.stats()["edges_used"] == isa - self_loops
    q = _provider(slice_file, tmp_path, min_weight=2)
    assert 0 < q.stats()["edges_used"] <= heavy
    assert q.fingerprint != p.fingerprint
    # names are matched case-insensitively, with or without /r/
    r = _provider(slice_file, tmp_path, relations=["isa"])
    assert r.stats()["edges_used"] == p.stats()["edges_used"]


def test_unknown_relation_lists_known_ones(slice_file, tmp_path):
    p = _provider(slice_file, tmp_path, relations=["IsAA"])
    with pytest.raises(PriorkitError, match=r"unknown relation 'IsAA'.*IsA, PartOf"):
        p.similarity(["dog"], ["cat"])
    q = _provider(slice_file, tmp_path, relation_weights={"Bogus": 0.3})
    with pytest.raises(PriorkitError, match="unknown relation 'Bogus'"):
        q.similarity(["dog"], ["cat"])


def test_wrong_layout_raises_with_file_and_line(tmp_path, slice_lines):
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(slice_lines[:2]) + "dog,IsA,animal,1.0\n" + "".join(slice_lines[2:5]))
    p = _provider(bad, tmp_path)
    with pytest.raises(DataFormatError, match=r"bad\.csv, line 3: expected 5 tab-separated fields"):
        p.similarity(["dog"], ["cat"])
    worse = tmp_path / "worse.csv"
    worse.write_text("/a/x\tIsA\t/c/en/dog\t/c/en/animal\t{\"weight\": 1}\n")
    with pytest.raises(DataFormatError, match=r"worse\.csv, line 1: the relation field 'IsA'"):
        _provider(worse, tmp_path).similarity(["dog"], ["cat"])


def test_damaged_lines_are_skipped_with_a_counted_warning(tmp_path, slice_lines):
    path = tmp_path / "damaged.csv"
    lines = list(slice_lines[:50])
    lines[9] = lines[9].rsplit("\t", 1)[0] + "\t{not json\n"
    lines[19] = lines[19].rsplit("\t", 1)[0] + "\t{\"dataset\": \"x\"}\n"
    path.write_text("".join(lines))
    p = _provider(path, tmp_path)
    with pytest.warns(UserWarning, match=r"skipped 2 malformed line\(s\).*lines 10, 20"):
        p.ensure_loaded()
    assert p.stats()["edges_in_file"] == 48


def test_no_usable_edges_is_an_error_not_an_empty_prior(slice_file, tmp_path):
    with pytest.raises(DataFormatError, match="no usable ConceptNet edge.*fr"):
        _provider(slice_file, tmp_path, languages=["fr"]).similarity(["chien"], ["chat"])
    with pytest.raises(DataFormatError, match="no edge .* is left after the filters"):
        _provider(slice_file, tmp_path, min_weight=1e9).similarity(["dog"], ["cat"])
    empty = tmp_path / "empty.csv"
    empty.write_text("\n\n")
    with pytest.raises(DataFormatError, match="no usable"):
        _provider(empty, tmp_path).similarity(["dog"], ["cat"])


def test_missing_file_and_bad_parameters(tmp_path):
    with pytest.raises(ResourceError, match="does not exist"):
        priorkit.get_provider("conceptnet", path=str(tmp_path / "nope.csv")).similarity(["a"], ["b"])
    with pytest.raises(PriorkitError, match="hops"):
        priorkit.get_provider("conceptnet", hops=3)
    with pytest.raises(PriorkitError, match="power"):
        priorkit.get_provider("conceptnet", power=0)


def test_direct_edges_only(slice_file, slice_lines, tmp_path):
    """hops=1: the noisy-or edge strength, 0 without an edge."""
    p = _provider(slice_file, tmp_path, hops=1, power=1.0)
    sim = p.similarity(["dog"], ["animal", "furniture"])
    keep = 1.0
    for ln in slice_lines:
        _, rel, s, e, info = ln.rstrip("\n").split("\t")
        if {_concept(s), _concept(e)} == {"dog", "animal"}:
            keep *= math.exp(-json.loads(info)["weight"])  # relation weight 1 for these
    assert sim[0, 0] == pytest.approx(1 - keep, rel=1e-5)
    assert sim[0, 1] == 0.0 or sim[0, 1] < sim[0, 0]


def test_numberbatch_style_embeddings(slice_file, tmp_path):
    """Cosine of the given vectors where both words have one; the graph elsewhere."""
    from priorkit.resources import resource_path
    import pyarrow.parquet as pq

    words = pq.read_table(resource_path("glove", "glove_6B_index.parquet")).column(0).to_pylist()
    matrix = np.load(resource_path("glove", "glove_6B_50d_emb.npy"), mmap_mode="r")
    row = {w: i for i, w in enumerate(words[:20000])}
    chosen = ["dog", "animal", "cat"]
    vec_file = tmp_path / "numberbatch.txt"
    with open(vec_file, "w") as fh:
        fh.write(f"{len(chosen)} 50\n")
        for w in chosen:
            fh.write(f"/c/en/{w} " + " ".join(f"{x:.6f}" for x in matrix[row[w]]) + "\n")
        fh.write("/c/fr/chien " + " ".join("0.1" for _ in range(50)) + "\n")
    p = _provider(slice_file, tmp_path, embeddings=str(vec_file))
    plain = _provider(slice_file, tmp_path)
    sim = p.similarity(["dog", "cat"], ["animal", "chair"])
    ref = plain.similarity(["dog", "cat"], ["animal", "chair"])
    v = {w: np.array([float(f"{x:.6f}") for x in matrix[row[w]]]) for w in chosen}
    cos = lambda a, b: float(v[a] @ v[b] / np.linalg.norm(v[a]) / np.linalg.norm(v[b]))  # noqa: E731
    assert sim[0, 0] == pytest.approx(max(cos("dog", "animal"), 0), abs=1e-5)
    assert sim[1, 0] == pytest.approx(max(cos("cat", "animal"), 0), abs=1e-5)
    np.testing.assert_array_equal(sim[:, 1], ref[:, 1])  # "chair" has no vector: graph value
    assert p.fingerprint != plain.fingerprint


def test_registered_through_the_entry_point():
    entry = {e.name: e for e in priorkit.list_providers()}["conceptnet"]
    assert entry.plugin == "conceptnet"
    p = priorkit.get_provider("conceptnet")
    assert p.symmetric and p.allows_nan


def test_unwritable_cache_folder_warns_and_still_works(slice_file, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    p = priorkit.get_provider("conceptnet", path=str(slice_file), cache_dir=str(blocker / "idx"))
    with pytest.warns(UserWarning, match="could not save the index"):
        sim = p.similarity(["dog"], ["animal", "dog"])
    assert sim[0, 1] == 1.0 and 0 < sim[0, 0] < 1
    assert p.stats()["index_folder"] is None

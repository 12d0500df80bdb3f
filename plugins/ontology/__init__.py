"""Built-in ``ontology`` provider: concept similarity over an is-a hierarchy.

Reads OBO (the Human Phenotype Ontology by default; ``source="mesh"`` for
MeSH, ``"hpo+mesh"`` for both merged), OWL/RDF through rdflib
and the UMLS RRF pair MRCONSO/MRREL; recognises concept mentions in text by
longest match of names and synonyms; scores two phrases by the similarity of
the concepts they name (Lin, Resnik, path or Wu-Palmer over the is-a DAG, with
intrinsic information content), or by how the concepts relate
(``measure="concept"``: same concept, related, unrelated).  Phrases that name no concept are NaN ("no
knowledge"), so a combination can fall back to another source.

    >>> p = priorkit.get_provider("ontology", measure="lin")   # HPO
    >>> p.recognise("Patient with myocardial infarction .".split())
    [Mention(start=2, end=4, concept_ids=('HP:0001658',), text='myocardial infarction')]
    >>> p.similarity(["myocardial infarction"], ["angina pectoris", "banana"])  # (1, 2), NaN for banana

See docs/providers/ontology.md for formats, normalisation and formulas.
"""
from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import priorkit
from priorkit.errors import DataFormatError, ProviderParameterError, ResourceError
from priorkit.providers.base import Match, PriorProvider, validate_matches

from .. import _support
from . import saved
from .concept import CONCEPT_DEFAULTS, SOURCES, concept_params, relation_values, source_names, source_paths
from .graph import IC_METHODS, MEASURES, ConceptGraph
from .groups import concept_branch, concept_groups, group_matches, subset_under
from . import rules as _rules
from .loading import FORMATS, default_path, detect_format, file_checksum, load_ontology  # noqa: F401
from .match import DEFAULT_STOP_WORDS, ConceptMatcher, Mention
from .model import SCOPES, OntologyData, OntologyFormatWarning, merge
from .readers import HIERARCHICAL_RELS
from .saved import OntologyIndex

__all__ = ["OntologyProvider", "OntologyIndex", "Mention", "load_ontology", "detect_format"]

DEFAULT_SCOPES = ("EXACT", "RELATED", "NARROW")
_MEMO_LIMIT = 2_000_000


# ---- the provider -------------------------------------------------------------
class OntologyProvider(PriorProvider):
    """Concept similarity over an is-a ontology (OBO, OWL/RDF, UMLS RRF); HPO by default.

    Parameters (all optional):

    - ``path``: OBO / OWL / RDF / Turtle file, ``MRCONSO.RRF`` or a folder with
      MRCONSO.RRF + MRREL.RRF, or a list of such (merged); default: the Human
      Phenotype Ontology
    - ``source``: instead of ``path``, fetched ontologies by name: ``hpo``,
      ``mesh`` (MeSH trees C and D) or several joined by ``+`` (``hpo+mesh``)
    - ``format``: obo, owl, rdf, ttl, nt, n3, json-ld, rrf; default: from the
      suffix, then the first line
    - ``measure``: ``lin`` (default), ``resnik``, ``path``, ``wup``, or ``concept``
      with ``within``, ``related``, ``unrelated``, ``hops``, ``groups`` (see
      :mod:`.concept`)
    - ``ic``: intrinsic information content, ``seco`` (default) or ``sanchez``
    - ``synonym_scopes``: synonym scopes used for recognition
      (default EXACT, RELATED, NARROW; BROAD synonyms name a wider idea)
    - ``fold_plurals``: fold simple English plurals when matching (True)
    - ``stop_words``: one-word names never recognised (default: function words)
    - ``roots``: keep only the concepts under these ids (e.g. ["HP:0000118"])
    - ``strict``: raise at the first malformed line instead of skipping it
    - ``language``: RDF language tag prefix (default "en") / RRF LAT ("ENG")
    - RRF only: ``sources`` (SABs), ``relations`` (PAR, CHD, RB, RN; default
      PAR, CHD), ``rela`` (accepted RELA values; default "", isa, inverse_isa)
    - matcher rules (issue 23; defaults in :data:`.rules.DEFAULTS`, each one off
      for an ablation): ``greek``, ``spelling``, ``adjectives``, ``acronym_case``,
      ``hpo_modifiers``, ``hyphen_join``, ``split_induced``, ``abbreviations``,
      ``abbreviation_unknown``, ``term_filter`` (see :mod:`.rules`)
    - ``cache``: where the parsed index is saved: True (default:
      ``priorkit_home()/index/ontology/<key>``), False (never saved), or a
      folder (``<folder>/ontology/<key>``); not part of the fingerprint
    - ``data_dir``: a folder holding the ontology files under their own names
      (``hp.obo``, ``mesh.obo`` for ``source``; each ``path`` file's name),
      read instead of their usual place: a recipe folder carries its
      dictionary so (docs/tagging.md).  Not part of the fingerprint: the
      files' checksums are, so the same files give the same fingerprint
    """

    name = "ontology"
    version = "1"
    allows_nan = True

    def __init__(self, path: str | os.PathLike | None = None, format: str | None = None,  # noqa: A002
                 measure: str = "lin", ic: str = "seco",
                 synonym_scopes: Sequence[str] = DEFAULT_SCOPES, fold_plurals: bool = True,
                 stop_words: Sequence[str] | None = None, roots: Sequence[str] | None = None,
                 strict: bool = False, language: str | None = None,
                 sources: Sequence[str] | None = None, relations: Sequence[str] = ("PAR", "CHD"),
                 rela: Sequence[str] | None = ("", "isa", "inverse_isa"),
                 cache: bool | str | os.PathLike = True, source: str | None = None,
                 within: float | None = None, related: float | None = None,
                 unrelated: float | None = None, hops: int | None = None, groups: int | None = None,
                 data_dir: str | os.PathLike | None = None, **rules: Any) -> None:
        if measure not in (*MEASURES, "concept"):
            raise ProviderParameterError(f"ontology: unknown measure {measure!r}; choose one of "
                             f"{', '.join(MEASURES)}, concept")
        concept = concept_params(measure, {"within": within, "related": related, "unrelated": unrelated,
                                           "hops": hops, "groups": groups})
        if source is not None:
            if path is not None:
                raise ProviderParameterError("ontology: pass either path= (your files) or source= (fetched ontologies: "
                                 f"{', '.join(SOURCES)}), not both")
            source_names(source)  # checked now; the files are fetched on first use
        if isinstance(path, (list, tuple)):
            path = [str(x) for x in path]
            if not path:
                raise ProviderParameterError("ontology: path= is an empty list; give at least one ontology file")
        if ic not in IC_METHODS:
            raise ProviderParameterError(f"ontology: unknown ic {ic!r}; choose one of {', '.join(IC_METHODS)}")
        bad = [s for s in synonym_scopes if s not in SCOPES]
        if bad:
            raise ProviderParameterError(f"ontology: unknown synonym scopes {bad}; choose from {', '.join(SCOPES)}")
        if format is not None:
            detect_format(Path("."), format)  # validates the name early
        bad = [r for r in relations if r not in HIERARCHICAL_RELS]
        if bad:
            raise ProviderParameterError(f"ontology: relations {bad} are not hierarchical; choose from "
                             f"{', '.join(HIERARCHICAL_RELS)} (PAR/CHD parent/child, RB/RN broader/narrower)")
        super().__init__(
            path=str(path) if path is not None and not isinstance(path, list) else path,
            format=format, measure=measure, ic=ic,
            synonym_scopes=list(synonym_scopes), fold_plurals=fold_plurals,
            stop_words=sorted(stop_words) if stop_words is not None else None,
            roots=list(roots) if roots is not None else None, strict=strict, language=language,
            sources=sorted(sources) if sources is not None else None, relations=list(relations),
            rela=list(rela) if rela is not None else None,
        )
        # new parameters enter the fingerprint only when used: older caches keep their keys
        if source is not None:
            self.params["source"] = str(source)
        self.params.update(concept)
        # the matcher rules always enter the fingerprint: they change matches and lookups
        self.rules = {**_rules.DEFAULTS, **_rules.check_rules(rules)}
        self.params["matcher_rules"] = {k: list(v) if k == "term_filter" else v for k, v in self.rules.items()}
        self._cache = cache
        self._data_dir = None if data_dir is None else Path(data_dir).expanduser()
        if self._data_dir is not None and not self._data_dir.is_dir():
            raise ProviderParameterError(f"ontology: data_dir {self._data_dir} is not a folder; pass the folder "
                                         "that holds the ontology files (a recipe's dictionary/)")
        self._index: OntologyIndex | None = None
        self._checksum: str | None = None
        self._memo: dict[int, float] = {}
        self._phrase_memo: dict[str, tuple[int, ...]] = {}
        self.load_seconds: float | None = None
        self.loaded_from_cache = False
        self._groups: tuple[list[str], list[tuple[int, ...]]] | None = None
        self._branches: dict[tuple[str, ...], str] = {}

    # ---- data -------------------------------------------------------------
    def _paths(self) -> list[Path]:
        path = self.params["path"]
        if "source" in self.params:
            paths = source_paths(self.params["source"], fetch=self._data_dir is None)
        elif isinstance(path, list):
            paths = [Path(x).expanduser() for x in path]
        else:
            paths = [Path(path).expanduser() if path is not None else default_path()]
        if self._data_dir is None:
            return paths
        moved = [self._data_dir / p.name for p in paths]
        missing = [p for p in moved if not p.exists()]
        if missing:
            raise ResourceError(f"ontology: data_dir {self._data_dir} has no {missing[0].name} (the file "
                                f"{'source ' + self.params['source'] if 'source' in self.params else 'path'} "
                                "reads); copy it there or drop data_dir")
        return moved

    def _files(self) -> list[Path]:
        out = []
        for p in self._paths():
            if not p.exists():
                raise ResourceError(f"ontology file {p} does not exist; pass path= an existing ontology file")
            kind, _ = detect_format(p, self.params["format"])
            if kind == "rrf":
                from .readers import locate

                out += list(locate(p))  # MRCONSO and MRREL
            else:
                out.append(p)
        return out

    def data_files(self) -> list[Path]:
        """The files (or RRF folders) this provider reads its ontology from, as given (a recipe
        folder copies them)."""
        return self._paths()

    def data_checksum(self) -> str:
        if self._checksum is None:
            self._checksum = "+".join(file_checksum(f) for f in self._files())
        return self._checksum

    def _index_key(self, rules: bool = True) -> str:
        """Key of the saved index: format, data checksum, every parameter but measure, ic and the
        match rules; ``rules=False``: without the index rules either (the key of an index saved
        before them, whose data and graph are reused when only the matcher differs)."""
        params = {k: v for k, v in self.params.items()
                  if k not in ("measure", "ic", "matcher_rules", *CONCEPT_DEFAULTS)}
        if rules:
            params["index_rules"] = {k: self.rules[k] for k in _rules.INDEX_RULES}
        return _support.index_key(format=saved.INDEX_FORMAT, data=self.data_checksum(), params=params)

    def _cache_dir(self) -> str | os.PathLike | None:
        return None if self._cache is True else self._cache

    def load(self) -> None:
        t0 = time.perf_counter()
        key = self._index_key() if self._cache is not False else None
        folder = _support.find_index(saved.INDEX_KIND, key, self._cache_dir()) if key else None
        base = None
        if folder is None and key is not None:  # parsed before with other index rules: reuse the parse
            folder = _support.find_index(saved.INDEX_KIND, self._index_key(False), self._cache_dir())
            base = folder
        if folder is not None:
            try:
                self._index = saved.load(folder)
                self.loaded_from_cache = True
            except (OSError, ValueError, KeyError, TypeError):  # damaged: rebuilt, not fatal
                self._index = None
            else:
                for note in self._index.notes:  # skipped lines stay visible on every load
                    warnings.warn(f"{note}\n(parsed earlier; index read from {folder})",
                                  OntologyFormatWarning, stacklevel=3)
        if base is not None and self._index is not None:
            self._index = self._build(self._index)
        elif self._index is None:
            self._index = self._build()
            if key is not None:
                try:
                    with _support.building_index(saved.INDEX_KIND, key,
                                                 {"source": " + ".join(map(str, self._paths()))},
                                                 self._cache_dir()) as tmp:
                        saved.save(self._index, tmp)
                except OSError:  # a read-only home only costs the next load a re-parse
                    pass
        self.load_seconds = time.perf_counter() - t0

    def _build(self, parsed: OntologyIndex | None = None) -> OntologyIndex:
        """Parse the files (or take ``parsed``'s data and graph) and index the names."""
        p = self.params
        if parsed is not None:
            return OntologyIndex(parsed.data, parsed.graph, self._matcher(parsed.data, parsed.graph), parsed.notes)
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", OntologyFormatWarning)
                data = merge([load_ontology(path, p["format"], strict=p["strict"], language=p["language"],
                                            sources=p["sources"], relations=p["relations"], rela=p["rela"])
                              for path in self._paths()])
        finally:
            for w in caught:  # pass them on (also before an error), and keep ours for cached loads
                warnings.warn(w.message, stacklevel=3)
        notes = [str(w.message) for w in caught if issubclass(w.category, OntologyFormatWarning)]
        graph = ConceptGraph.build(len(data), data.edges, data.ids, data.source)
        if p["roots"]:
            data = subset_under(data, graph, p["roots"])
            graph = ConceptGraph.build(len(data), data.edges, data.ids, data.source)
        return OntologyIndex(data, graph, self._matcher(data, graph), notes)

    def _matcher(self, data: OntologyData, graph: ConceptGraph) -> ConceptMatcher:
        p = self.params
        stop = DEFAULT_STOP_WORDS if p["stop_words"] is None else p["stop_words"]
        r = self.rules
        matcher = ConceptMatcher(fold_plurals=p["fold_plurals"], stop_words=stop, greek=r["greek"],
                                 spelling=r["spelling"], adjectives=r["adjectives"], acronym_case=r["acronym_case"])
        skip = set() if r["hpo_modifiers"] else _rules.outside_phenotypes(data, graph)
        for i, name in enumerate(data.names):
            if name and i not in skip:
                matcher.add(name, i)
        scopes = set(p["synonym_scopes"])
        for s in data.synonyms:
            if s.scope in scopes and s.kind != "obsolete_synonym" and s.concept not in skip:
                matcher.add(s.text, s.concept, acronym=True if s.kind == "abbreviation" and " " not in s.text.strip() else None)
        matcher.freeze()
        if not len(matcher):
            raise DataFormatError(f"{data.source}: no concept has a usable name, so no text can be recognised")
        return matcher

    @property
    def index(self) -> OntologyIndex:
        self.ensure_loaded()
        return self._index

    @property
    def ontology(self) -> OntologyData:
        return self.index.data

    # ---- concepts -----------------------------------------------------------
    def _phrase_concepts(self, phrase: str) -> tuple[int, ...]:
        hit = self._phrase_memo.get(phrase)
        if hit is None:
            hit = self._index.matcher.lookup(phrase)
            if len(self._phrase_memo) < _MEMO_LIMIT:
                self._phrase_memo[phrase] = hit
        return hit

    def concepts(self, phrase: str) -> list[str]:
        """Ids of the concepts ``phrase`` names exactly (after normalisation)."""
        self.ensure_loaded()
        return [self._index.data.ids[c] for c in self._phrase_concepts(phrase)]

    def concept_name(self, concept_id: str) -> str:
        data = self.ontology
        return data.names[data.index(concept_id)]

    def parents(self, concept_id: str) -> list[str]:
        idx = self.index
        return [idx.data.ids[p] for p in idx.graph.parents(idx.data.index(concept_id)) if p < len(idx.data)]

    def concept_similarity(self, a: Sequence[str] | str, b: Sequence[str] | str) -> np.ndarray | float:
        """Similarity of concept ids (element-wise for sequences) under this measure."""
        idx = self.index
        scalar = isinstance(a, str)
        ia = np.array([idx.data.index(x) for x in ([a] if scalar else a)])
        ib = np.array([idx.data.index(x) for x in ([b] if isinstance(b, str) else b)])
        out = self._values(self._pairs(ia, ib))
        return float(out[0]) if scalar else out

    def _pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Concept-pair values with a memo keyed by the unordered pair (measures are symmetric)."""
        N = self._index.graph.n_nodes
        keys = np.minimum(a, b) * N + np.maximum(a, b)
        uniq, inverse = np.unique(keys, return_inverse=True)
        memo = self._memo
        values = np.array([memo.get(k, np.nan) for k in uniq.tolist()], dtype=np.float64)
        todo = np.isnan(values)
        if todo.any():
            lo, hi = np.divmod(uniq[todo], N)
            if self.params["measure"] == "concept":  # relation codes; _values maps them
                new = self._index.graph.pair_relation(lo, hi, self.params["hops"],
                                                      self.params["groups"]).astype(np.float64)
            else:
                new = self._index.graph.pair_similarity(lo, hi, self.params["measure"], self.params["ic"])
            values[todo] = new
            if len(memo) > _MEMO_LIMIT:
                memo.clear()
            memo.update(zip(uniq[todo].tolist(), new.tolist()))
        return values[inverse]

    def _values(self, scores: np.ndarray) -> np.ndarray:
        """Scores of ``_pairs`` (maxima of them) -> prior values; relation codes for ``concept``."""
        return relation_values(scores, self.params) if self.params["measure"] == "concept" else scores

    # ---- PriorProvider ------------------------------------------------------
    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        out = np.full((len(left), len(right)), -np.inf)  # (n_left, n_right)
        lp, lc = _flatten([self._phrase_concepts(p) for p in left])
        rp, rc = _flatten([self._phrase_concepts(p) for p in right])
        if lc.size and rc.size:
            # every (left concept, right concept) combination, then max per phrase pair
            li = np.repeat(np.arange(lc.size), rc.size)
            ri = np.tile(np.arange(rc.size), lc.size)
            values = self._pairs(lc[li], rc[ri])
            np.maximum.at(out, (lp[li], rp[ri]), values)
        out[np.isneginf(out)] = np.nan
        return self._values(out)

    def compute_pairs(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Element-wise ``compute``, vectorised: each distinct phrase is looked up once, every
        (left concept, right concept) combination of every pair goes through one ``_pairs``
        call, and a ``maximum.reduceat`` takes the best per pair.  NaN where a phrase names
        no concept."""
        phrases = list(dict.fromkeys([*left, *right]))
        row = {p: i for i, p in enumerate(phrases)}
        li = np.fromiter(map(row.__getitem__, left), dtype=np.int64, count=len(left))     # (P,)
        ri = np.fromiter(map(row.__getitem__, right), dtype=np.int64, count=len(right))   # (P,)
        concepts = [self._phrase_concepts(p) for p in phrases]
        n_of = np.fromiter((len(c) for c in concepts), dtype=np.int64, count=len(concepts))  # (W,)
        ptr = np.zeros(len(concepts) + 1, dtype=np.int64)
        np.cumsum(n_of, out=ptr[1:])
        flat = np.fromiter((x for c in concepts for x in c), dtype=np.int64, count=int(ptr[-1]))
        out = np.full(len(left), np.nan)
        nl, nr = n_of[li], n_of[ri]
        known = np.flatnonzero((nl > 0) & (nr > 0))      # pairs whose both phrases name concepts
        if known.size:
            nl, nr = nl[known], nr[known]
            combos = nl * nr                               # concept combinations per pair
            pair = np.repeat(np.arange(known.size), combos)
            starts = np.cumsum(combos) - combos
            within = np.arange(int(combos.sum())) - starts[pair]
            a = flat[ptr[li[known]][pair] + within // nr[pair]]
            b = flat[ptr[ri[known]][pair] + within % nr[pair]]
            out[known] = np.maximum.reduceat(self._pairs(a, b), starts)
        return self._values(out)

    def recognise(self, words: Sequence[str]) -> list[Mention]:
        """Concept mentions in ``words`` (leftmost-longest, case and punctuation tolerant)."""
        if isinstance(words, str):
            raise TypeError("ontology.recognise expects a list of words, e.g. text.split()")
        idx = self.index
        words = list(words)
        return [
            Mention(s, e, tuple(idx.data.ids[c] for c in cs), " ".join(words[s:e]))
            for s, e, cs in self._find(words)
        ]

    def _find(self, words: Sequence[str], memory: dict | None = None, sentence: int = 0,
              window: int | None = None) -> list[tuple[int, int, tuple[int, ...]]]:
        """The matcher's mentions under the match rules (:mod:`.rules`)."""
        return _rules.find(self.index.matcher.find, list(words), self.rules, memory, sentence, window)

    def _group_table(self) -> tuple[list[str], list[tuple[int, ...]]]:
        if self._groups is None:
            idx = self.index
            if idx.groups is None:  # the index may be shared with other providers (saved.load)
                idx.groups = concept_groups(idx.data.ids, idx.graph)
            self._groups = idx.groups
        return self._groups

    def match_groups(self) -> list[str]:
        """The top-level roots of the is-a graph, named short (``hpo``, ``mesh:C``, ``mesh:D``)."""
        return list(self._group_table()[0])

    def match_branch(self, match: Match) -> str:
        """The level-2 concepts above the match's concepts (``groups.concept_branch``), joined
        by ``+``: e.g. ``MESH:D045762`` (Enzymes and Coenzymes) for "enzyme"; '' for none."""
        key = tuple(match.concept_ids)
        if key not in self._branches:
            data, graph = self.index.data, self.index.graph
            found = sorted({b for c in key for b in concept_branch(graph, data.ids, data.index(c))})
            self._branches[key] = "+".join(found)
        return self._branches[key]

    def compute_matches(self, words: Sequence[str]) -> list[Match]:
        """:meth:`recognise`'s mentions with their groups: a mention whose concepts lie under
        several roots (``myocardial infarction``: HPO and MeSH C) gives one match per group,
        same span, in ``match_groups()`` order, each with that group's concepts."""
        names, of_concept = self._group_table()
        return group_matches(self._find(words), self._index.data.ids, names, of_concept)

    def matches_document(self, sentences: Sequence[Sequence[str]], window: int | None = None) -> list[list[Match]]:
        """:meth:`matches` of each sentence of one document, in order, with abbreviations
        defined in a sentence also recognised in the later ones (up to ``window`` sentences
        later; None: to the end).  Token features and the attention prior see the
        per-sentence :meth:`matches`, not this."""
        self.ensure_loaded()
        names, of_concept = self._group_table()
        memory: dict = {}
        out = []
        for i, words in enumerate(sentences):
            if isinstance(words, str):
                raise TypeError("ontology.matches_document expects a list of sentences, each a list of words")
            found = self._find(words, memory, i, window)
            out.append(validate_matches(group_matches(found, self._index.data.ids, names, of_concept),
                                        len(words), self))
        return out

    def segment(self, words: Sequence[str]) -> list[tuple[int, int]]:
        """One span per recognised mention, one per other word; covers ``words`` in order."""
        spans: list[tuple[int, int]] = []
        pos = 0
        for s, e, _ in self._find(words):
            spans.extend((i, i + 1) for i in range(pos, s))
            spans.append((s, e))
            pos = e
        spans.extend((i, i + 1) for i in range(pos, len(words)))
        return spans


def _flatten(concepts: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(phrase index, concept) pairs of the phrases that name concepts."""
    lengths = np.fromiter((len(c) for c in concepts), dtype=np.int64, count=len(concepts))
    phrase = np.repeat(np.arange(len(concepts)), lengths)
    flat = np.fromiter((x for c in concepts for x in c), dtype=np.int64, count=int(lengths.sum()))
    return phrase, flat


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register(
        "ontology",
        OntologyProvider,
        "Concept similarity over an is-a ontology (OBO, OWL/RDF, UMLS RRF); HPO by default",
    )

"""Built-in ``conceptnet`` provider: word similarity from the ConceptNet graph.

::

    p = priorkit.get_provider("conceptnet")                 # the embedded English graph
    p.similarity(["dog", "heart attack"], ["animal", "chair"])

Reads the ConceptNet 5 assertions CSV (plain or gzip); by default the English
graph shipped in ``data/conceptnet-en`` (488,014 edges).  The file is parsed
once into a compact index under ``priorkit_home()/index/conceptnet`` and read
from there afterwards (about 0.1 s instead of 2-3 s for the shipped file).
Similarity is the cosine of hub-damped closed neighbourhoods (direct edges
plus two-hop paths; see ``conceptnet/graph.py``), NaN for words the graph does
not know.  With ``embeddings=FILE`` (Numberbatch, word2vec text format) the
cosine of the two words' vectors is used where both have one, and the graph
value elsewhere.  See docs/providers/conceptnet.md.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

import priorkit
from priorkit.errors import PriorkitError, ResourceError
from priorkit.providers.base import PriorProvider
from priorkit.resources import embedded

from .. import _support
from .graph import ConceptGraph
from .index import EdgeIndex, load_edge_index

DEFAULT_DATA = ("conceptnet-en", "assertions-en.csv.gz")


class ConceptNetProvider(PriorProvider):
    """Similarity from the ConceptNet graph (direct relations + shared neighbours)."""

    name = "conceptnet"
    version = "1"
    allows_nan = True
    #: sim(a, b) == sim(b, a): a cache stores each pair once
    symmetric = True

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        languages: Sequence[str] | str = ("en",),
        relations: Sequence[str] | None = None,
        min_weight: float = 0.0,
        relation_weights: Mapping[str, float] | None = None,
        hops: int = 2,
        power: float = 0.5,
        lemmatize: bool = True,
        embeddings: str | os.PathLike | None = None,
        cache_dir: str | os.PathLike | None = None,
        use_cache: bool = True,
    ) -> None:
        """
        :param path: assertions CSV (plain or .gz); default: the embedded English graph.
        :param languages: language codes whose concepts are kept (``/c/<lang>/...``);
            a word is looked up in them in this order.
        :param relations: keep only these relations (``"IsA"`` or ``"/r/IsA"``); None keeps all.
        :param min_weight: drop edges whose JSON weight is below this.
        :param relation_weights: override the weight (in [0, 1]) of some relations.
        :param hops: 1 = direct edges only; 2 = closed-neighbourhood cosine (default).
        :param power: graph values are raised to this power (0.5 spreads the small
            cosines over [0, 1]; ranks never change).
        :param lemmatize: look up base forms ("dogs" -> "dog") when a word itself is unknown.
        :param embeddings: Numberbatch-style text vectors: cosine where both words have one.
        :param cache_dir: where derived indexes go (default ``priorkit_home()/index``).
        :param use_cache: False re-parses the file every load (for debugging).
        """
        if isinstance(languages, str):
            languages = [languages]
        languages = [str(lang) for lang in languages]
        if not languages:
            raise PriorkitError("conceptnet: languages= must name at least one language code, e.g. ['en']")
        if relations is not None:
            if isinstance(relations, str):
                relations = [relations]
            relations = sorted({str(r) for r in relations})
            if not relations:
                raise PriorkitError("conceptnet: relations= is empty; pass None to keep every relation")
        if hops not in (1, 2):
            raise PriorkitError(f"conceptnet: hops must be 1 or 2, not {hops!r}")
        if not (0.0 < float(power) <= 4.0):
            raise PriorkitError(f"conceptnet: power must be in (0, 4], not {power!r}")
        if not np.isfinite(float(min_weight)):
            raise PriorkitError(f"conceptnet: min_weight must be a finite number, not {min_weight!r}")
        params: dict[str, Any] = {
            "path": None if path is None else str(path),
            "languages": languages,
            "relations": relations,
            "min_weight": float(min_weight),
            "relation_weights": dict(relation_weights) if relation_weights else None,
            "hops": int(hops),
            "power": float(power),
            "lemmatize": bool(lemmatize),
            "embeddings": None if embeddings is None else str(embeddings),
        }
        super().__init__(**params)
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.graph: ConceptGraph | None = None
        self.vectors = None
        self._checksum: str | None = None

    # ---- data ---------------------------------------------------------------
    @property
    def data_path(self) -> Path:
        if self.params["path"] is None:
            return embedded(*DEFAULT_DATA)
        path = Path(self.params["path"]).expanduser()
        if not path.exists():
            raise ResourceError(
                f"conceptnet: assertions file {path} does not exist; pass path= the ConceptNet 5 "
                "assertions CSV (plain or .gz), or leave it out for the embedded English graph"
            )
        return path

    def data_checksum(self) -> str:
        if self._checksum is None:
            parts = [_support.file_sha256(self.data_path, self.cache_dir)]
            if self.params["embeddings"]:
                parts.append(_support.file_sha256(self.params["embeddings"], self.cache_dir))
            self._checksum = "+".join(parts)
        return self._checksum

    def load(self) -> None:
        index: EdgeIndex = load_edge_index(
            self.data_path, self.params["languages"], self.cache_dir, use_cache=self.use_cache
        )
        self.graph = ConceptGraph(
            index,
            relations=self.params["relations"],
            min_weight=self.params["min_weight"],
            relation_weights=self.params["relation_weights"],
            hops=self.params["hops"],
            power=self.params["power"],
            lemmatize_words=self.params["lemmatize"],
            source=str(self.data_path),
        )
        if self.params["embeddings"]:
            from ..embedding.vectors import load_vectors

            self.vectors = load_vectors(self.params["embeddings"], languages=self.params["languages"],
                                        cache_dir=self.cache_dir)

    def stats(self) -> dict[str, Any]:
        """Counts of the loaded graph (loads it if needed)."""
        self.ensure_loaded()
        g = self.graph
        return {
            "nodes": len(g.index.vocab),
            "known_concepts": len(g.lookup_table),
            "edges_in_file": int(g.index.meta["edges"]),
            "edges_used": g.edges_used,
            "relations": list(g.index.relations),
            "skipped": g.index.meta.get("skipped", {}),
            "index_folder": str(g.index.folder) if g.index.folder else None,
        }

    # ---- similarity ---------------------------------------------------------
    def compute(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        out = self.graph.similarity(left, right)                    # (L, R), NaN = unknown
        if self.vectors is not None:
            lv = [self.vectors.vector(w) for w in left]
            rv = [self.vectors.vector(w) for w in right]
            li = [i for i, v in enumerate(lv) if v is not None]
            ri = [j for j, v in enumerate(rv) if v is not None]
            if li and ri:
                cos = np.stack([lv[i] for i in li]) @ np.stack([rv[j] for j in ri]).T
                out[np.ix_(li, ri)] = np.clip(cos, 0.0, 1.0)
                same = np.array(left)[li][:, None] == np.array(right)[ri][None, :]
                out[np.ix_(li, ri)] = np.where(same, 1.0, out[np.ix_(li, ri)])
        return out


@priorkit.hookimpl
def register_prior_providers(register) -> None:
    register("conceptnet", ConceptNetProvider,
             "ConceptNet graph: direct relations + shared neighbours (embedded English graph)")

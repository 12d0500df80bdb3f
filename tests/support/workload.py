"""STS-B workloads for precompute runs with the trigram plug-in, and reading a cache back.

A :class:`Workload` is STS-B dev examples, the paper preset's word pairs
(:class:`priorkit.align.words.WordKeys`, no tokenizer or torch needed), the
trigram provider of ``plugins/trigram_plugin.py`` and a batch size; it runs a
precompute in this process or as a child program (for fault injection).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from priorkit.align.words import WordKeys
from priorkit.cache import PriorCache, canonical_pairs, nan_equal
from priorkit.datasets import read_dataset
from priorkit.errors import CacheError
from priorkit.precompute import collect_pairs, plan_batches, precompute
from priorkit.resources import stsb_path

#: the trigram plug-in file (a real plug-in: ``register_prior_providers`` registers "trigram")
PLUGIN_FILE = Path(__file__).resolve().parent / "plugins" / "trigram_plugin.py"

CHILD = """
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("trigram_plugin", {plugin!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
import duckdb, pyarrow  # imported before any privilege drop in `setup`
from priorkit.align.words import WordKeys
from priorkit.cache import PriorCache
from priorkit.datasets import read_dataset
from priorkit.errors import PriorkitError
from priorkit.precompute import precompute
examples = read_dataset({dataset!r}, limit={limit})[{start}:]
builder = WordKeys.paper(mod.Trigram())
{setup}
print("start", flush=True)
def report(r):
    print("batch", r.index, r.committed, flush=True)
    time.sleep({pause})  # a slower provider: leaves readers a window between batches
try:
    s = precompute(examples, builder, PriorCache({cache!r}), batch_size={batch}, progress=False, on_batch=report)
except PriorkitError as exc:
    print("error", type(exc).__name__, " ".join(str(exc).split()), flush=True)
    sys.exit(3)
print("done", s.new, flush=True)
"""

#: ``setup`` for CHILD: writes beyond N bytes per file fail with EFBIG ("File too large"),


def write_plugin(folder: Path) -> Path:
    """Copy the trigram plug-in file into ``folder`` (a plug-in folder of its own); returns the copy."""
    path = Path(folder) / PLUGIN_FILE.name
    shutil.copyfile(PLUGIN_FILE, path)
    return path


def load_plugin(plugin_file: Path = PLUGIN_FILE, name: str = "trigram_plugin_faults"):
    """The plug-in file as a module (``Trigram``, ``jaccard_matrix``)."""
    spec = importlib.util.spec_from_file_location(name, plugin_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class Workload:
    """STS-B dev examples ``[start:limit]``, paper word pairs, trigram provider, batches of ``batch``."""

    plugin_file: Path
    limit: int = 300
    start: int = 0
    batch: int = 300

    @functools.cached_property
    def module(self):
        return load_plugin(self.plugin_file)

    @functools.cached_property
    def builder(self):
        return WordKeys.paper(self.module.Trigram())

    @property
    def fingerprint(self) -> str:
        return self.builder.provider.fingerprint

    @functools.cached_property
    def examples(self) -> list:
        return read_dataset(stsb_path("dev"), limit=self.limit)[self.start:]

    @functools.cached_property
    def keys(self) -> list[tuple[str, str]]:
        """The stored keys (symmetric: folded), in the order precompute plans them."""
        return canonical_pairs(collect_pairs(self.examples, self.builder)[0])

    def script(self, cache: Path, *, pause: float = 0.0, setup: str = "") -> str:
        return CHILD.format(plugin=str(self.plugin_file), dataset=str(stsb_path("dev")), limit=self.limit,
                            start=self.start, cache=str(cache), batch=self.batch, pause=pause, setup=setup)

    def run(self, cache: Path, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", self.script(cache, **kw)], capture_output=True,
                              text=True, timeout=600)

    def precompute(self, cache: Path, batch: int | None = None):
        """In this process (the rerun after a fault, or a reference)."""
        return precompute(self.examples, self.builder, PriorCache(cache), batch_size=batch or self.batch,
                          progress=False)

    def reference(self, folder: Path) -> dict:
        """Values of an uninterrupted run (one batch: batch size does not change values)."""
        path = Path(folder) / f"reference-{self.start}-{self.limit}.duckdb"
        if not path.exists():
            self.precompute(path, batch=max(1, len(self.keys)))
        return stored(path, self.fingerprint)

    def plan(self, path: Path) -> tuple[int, list[list[tuple[str, str]]]]:
        """(keys stored now, the batches a run started now will commit, in order)."""
        todo = PriorCache(path).missing(self.fingerprint, self.keys) if path.exists() else self.keys
        batches = [[p for block in batch for p in block.pairs()] for batch in plan_batches(todo, self.batch)]
        return len(self.keys) - len(todo), batches


def whole_counts(before: int, batches: list[list]) -> set[int]:
    """Pair counts a file may hold after a run that starts with ``before`` keys commits some batches."""
    return {before + int(s) for s in np.cumsum([0, *[len(b) for b in batches]])}


def stored(path: Path, fingerprint: str) -> dict:
    return PriorCache(path, read_only=True).load(fingerprint).to_dict()


def same_values(a: dict, b: dict) -> bool:
    keys = sorted(a)
    return keys == sorted(b) and nan_equal(np.array([a[k] for k in keys]), np.array([b[k] for k in keys]))


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def duplicate_keys(path: Path) -> int:
    """Keys stored more than once (must be 0)."""
    with PriorCache(path, read_only=True).connect() as con:
        return con.execute('SELECT count(*) FROM (SELECT 1 FROM pairs GROUP BY fingerprint, "left", "right" '
                           "HAVING count(*) > 1)").fetchall()[0][0]


def file_state(path: Path, fingerprint: str) -> tuple[str, int | None]:
    """('absent' | 'no schema yet' | 'ok', pair count) read-only; CacheError for anything else."""
    if not path.exists():
        return "absent", 0
    try:
        return "ok", PriorCache(path, read_only=True, timeout=30).count(fingerprint)
    except CacheError as exc:
        if "not yet a prior cache" in str(exc):  # killed between creating the file and its schema
            return "no schema yet", 0
        raise

"""The code's layout rules: tests never import benchmarks, and the word side of a prior imports
without torch (module size and import circles: tests/test_structure.py)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[str]:
    """Every module name ``path`` imports, and every path it puts on ``sys.path`` (as text)."""
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append"):
            names.append(ast.unparse(node))
    return names


def test_tests_never_import_benchmarks():
    offenders = []
    for path in sorted(ROOT.glob("tests/**/*.py")):
        for name in _imports(path):
            if name.split(".")[0] in {"benchmarks", "_faults"} or "benchmarks" in name:
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert not offenders, "tests import benchmark code (shared helpers belong in tests/support/): " + "; ".join(offenders)


def test_benchmarks_take_shared_helpers_from_tests_support():
    """The fault benchmark really uses the test suite's helpers (the rule above is not vacuous)."""
    assert any("support" in name for name in _imports(ROOT / "benchmarks" / "cache_faults.py"))


BLOCK_TORCH = """
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, Blocked())
{body}
assert not any(m.split(".")[0] in ("torch", "transformers") for m in sys.modules), "torch was imported"
print("ok")
"""


def test_word_keys_import_and_work_without_torch():
    """What a precompute child needs (word pairs of the paper preset, the run, the cache)
    loads and runs with torch and transformers blocked."""
    body = """
from priorkit.align.words import WordKeys
from priorkit.precompute import collect_pairs
from priorkit.providers.spec import PriorSpec
from priorkit.providers.base import PriorProvider
import numpy as np

class Ones(PriorProvider):
    name = "ones"
    def compute(self, left, right):
        return np.ones((len(left), len(right)), np.float32)

words = WordKeys.from_spec(PriorSpec(preset="paper"), Ones())
assert type(words) is WordKeys
pairs, n = collect_pairs([("A man plays.", "The woman sings!")], words)
assert n == 1 and pairs == [("man", "woman"), ("man", "sings"), ("plays", "woman"), ("plays", "sings")], pairs
"""
    out = subprocess.run([sys.executable, "-c", BLOCK_TORCH.replace("{body}", body)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_torch_block_is_real():
    """The same child fails when it does import torch: the check above can fail."""
    out = subprocess.run([sys.executable, "-c", BLOCK_TORCH.replace("{body}", "import priorkit.collator")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "blocked in this test" in out.stderr


def test_the_old_import_paths_are_gone():
    """The deprecated shims were removed before any release: the old paths do not import."""
    import importlib

    for old in ("priorkit.distributed", "priorkit.words", "priorkit.evaluate", "priorkit.training.dist"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_docstring_examples_run():
    """Every ``>>>`` example in priorkit/ runs and prints what it shows (docs cannot drift)."""
    import doctest
    import importlib

    modules = []
    for path in sorted((ROOT / "priorkit").rglob("*.py")):
        if ">>> " not in path.read_text():
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0, f"{name}: {result.failed} docstring examples failed"
        modules.append((name, result.attempted))
    assert modules and all(n > 0 for _, n in modules), modules

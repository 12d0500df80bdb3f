"""What ``pip install priorkit`` installs: the wheel's file list.

The wheel is built once for this file (setuptools' ``build_meta``, no build isolation, offline, on a
copy of the working tree so that the checkout gets no ``build/`` folder; a few seconds), then:

* it holds the package (``priorkit/``, the built-in providers as ``priorkit_plugins/``) and its
  ``.dist-info``, and nothing of the repository's own tools: no ``lab/``, ``benchmarks/``,
  ``tests/`` or ``scripts/``;
* every module of ``priorkit/`` and ``plugins/`` is in it (a package left out of pyproject.toml's
  ``packages`` list installs a priorkit that cannot import it);
* every module in it is reachable from the package's own roots: ``priorkit/__init__.py`` (its lazy
  tables included), ``python -m priorkit``, the console scripts and the plug-in entry points of
  pyproject.toml, following imports between wheel modules (the import graph of
  ``tests/test_structure.py``, every level) and string tables of module names (``"priorkit.align"``,
  ``f"priorkit.commands.{name}"`` with ``name`` from the module's own strings, ``f"{__name__}.{x}"``
  in a package). A module only ``benchmarks/``, ``lab/``, ``scripts/`` or the tests import belongs
  with them, not in what users install.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from test_structure import _modules, import_graph

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("lab", "benchmarks", "tests", "scripts")
SKIP = {".git", ".venv", "runs", "out", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}

#: modules known to fail the reachability check, each with the reason it is still in the wheel; the
#: test fails when one of them becomes reachable (take it off the list) or a new one appears
KNOWN_UNREACHABLE: dict[str, str] = {
    "priorkit.evaluation.dictionary_baseline": "imported only by benchmarks/dictionary_baseline.py and the tests; "
    "the sweep is to use it (issue 47), or it leaves the package",
}


def _tree_files(root: Path) -> list[str]:
    """The working tree's files as a build sees them: tracked and untracked, not ignored."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, check=True).stdout.decode()
        return [f for f in out.split("\0") if f and (root / f).is_file()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything but the usual litter
        return [p.relative_to(root).as_posix() for p in root.rglob("*")
                if p.is_file() and not SKIP & set(p.relative_to(root).parts)
                and not any(part.endswith(".egg-info") for part in p.relative_to(root).parts)]


def build_wheel(source: Path, work: Path) -> Path:
    copy = work / "src"
    for rel in _tree_files(source):
        dest = copy / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, dest)
    out = work / "dist"
    out.mkdir()
    env = {**os.environ, "PIP_NO_INDEX": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    code = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    res = subprocess.run([sys.executable, "-c", code, str(out)], cwd=copy, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"the wheel did not build:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> list[str]:
    pytest.importorskip("setuptools", reason="the wheel is built with setuptools' build_meta, as pip would")
    with zipfile.ZipFile(build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))) as z:
        return z.namelist()


def wheel_modules(files: list[str]) -> set[str]:
    out = set()
    for f in files:
        if f.endswith(".py") and ".dist-info/" not in f:
            parts = f[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.add(".".join(parts))
    return out


# ---------------------------------------------------------------------------- reachability
def string_edges(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules a module names in strings: a string that is a module name (or ``module:func``); an
    f-string ``"prefix.{x}"`` joined with every string of the module; ``f"{__name__}.{x}"`` in a package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    prefixes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).endswith("."):
                prefixes.add(str(first.value))
            elif (isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name)
                  and first.value.id == "__name__" and len(node.values) > 1
                  and isinstance(node.values[1], ast.Constant) and str(node.values[1].value).startswith(".")):
                prefixes.add(name + str(node.values[1].value)[:1])
    candidates = {s.partition(":")[0] for s in strings} | {p + s for p in prefixes for s in strings}
    return {c for c in candidates if c in modules and c != name}


def entry_roots(pyproject: dict) -> set[str]:
    project = pyproject.get("project", {})
    values = list(project.get("scripts", {}).values()) + list(project.get("gui-scripts", {}).values())
    for group in project.get("entry-points", {}).values():
        values += list(group.values())
    return {v.split(":")[0].strip() for v in values}


def unreachable(modules: set[str], roots: set[str], edges: dict[str, set[str]]) -> list[str]:
    seen, todo = set(), [r for r in roots if r in modules]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [t for t in edges.get(m, ()) if t in modules and t not in seen]
        parent = m.rpartition(".")[0]  # importing a.b.c runs a/__init__ and a/b/__init__ first
        if parent in modules and parent not in seen:
            todo.append(parent)
    return sorted(modules - seen)


def package_edges(modules: set[str], graph: dict[str, set[str]]) -> dict[str, set[str]]:
    files = _modules()
    return {m: (graph.get(m, set()) | string_edges(m, files[m], modules)) & modules for m in modules if m in files}


def package_roots(modules: set[str]) -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {"priorkit", "priorkit.__main__"} | entry_roots(pyproject)


# ---------------------------------------------------------------------------- the tests
def foreign_files(files: list[str]) -> list[str]:
    """The files of a wheel outside priorkit/, priorkit_plugins/ and its .dist-info (lab/, tests/ ...)."""
    return sorted(f for f in files if f.split("/", 1)[0] not in ("priorkit", "priorkit_plugins")
                  and not f.split("/", 1)[0].endswith(".dist-info"))


def test_the_wheel_holds_the_package_and_none_of_the_tools(wheel_files):
    assert foreign_files(wheel_files) == [], "the wheel carries files of the repository's tools"
    assert not {f.split("/", 1)[0] for f in wheel_files} & set(TOOLS)
    assert "priorkit/cli.py" in wheel_files and "priorkit_plugins/wordnet/__init__.py" in wheel_files
    assert any(f.endswith(".dist-info/entry_points.txt") for f in wheel_files)


def test_every_module_of_the_tree_is_in_the_wheel(wheel_files):
    missing = sorted(set(_modules()) - wheel_modules(wheel_files))
    assert missing == [], ("modules of priorkit/ or plugins/ missing from the wheel (a package not in "
                           f"pyproject.toml's [tool.setuptools] packages?): {missing}")


def test_every_module_in_the_wheel_is_reachable_from_the_package(wheel_files):
    modules = wheel_modules(wheel_files)
    imports = import_graph()
    graph = package_edges(modules, imports)
    roots = package_roots(modules)
    assert "priorkit.cli" in roots and "priorkit_plugins.wordnet" in roots
    offenders = unreachable(modules, roots, graph)
    new = [m for m in offenders if m not in KNOWN_UNREACHABLE]
    fixed = [m for m in KNOWN_UNREACHABLE if m not in offenders]
    assert new == [], ("modules in the wheel that nothing of the package imports (only benchmarks/, lab/, "
                       "scripts/ or the tests?): " + ", ".join(new))
    assert fixed == [], f"reachable now (or gone), take them off tests/test_wheel.py's KNOWN_UNREACHABLE: {fixed}"
    # the check reads the string tables: without them the commands and the lazy attributes look unused
    plain = {m: imports.get(m, set()) & modules for m in modules}
    assert {"priorkit.commands.predict", "priorkit.commands.score"} <= set(unreachable(modules, roots, plain))


def test_the_reachability_check_catches_a_module_only_tools_import(tmp_path):
    modules = {"pkg", "pkg.cli", "pkg.commands", "pkg.commands.run", "pkg.lazy", "pkg.only_bench", "pkg.helper"}
    src = {
        "cli.py": 'import importlib\nNAMES = ("run",)\nfor n in NAMES:\n    importlib.import_module(f"pkg.commands.{n}")\n',
        "__init__.py": '_LAZY = {"X": "pkg.lazy"}\n',
        "lazy.py": "from . import helper\n",
    }
    edges = {}
    for mod, text in (("pkg.cli", src["cli.py"]), ("pkg", src["__init__.py"]), ("pkg.lazy", src["lazy.py"])):
        path = tmp_path / f"{mod}.py"
        path.write_text(text)
        edges[mod] = string_edges(mod, path, modules)
    assert edges["pkg.cli"] == {"pkg.commands.run"} and edges["pkg"] == {"pkg.lazy"}
    edges["pkg.lazy"] = {"pkg.helper"}  # what import_graph gives for `from . import helper`
    assert unreachable(modules, {"pkg", "pkg.cli"}, edges) == ["pkg.only_bench"]
    # a package's f"{__name__}.{name}" table
    (tmp_path / "p.py").write_text('import importlib\n_LAZY = {"A": "lazy"}\n'
                                   'def f(n):\n    return importlib.import_module(f"{__name__}.{_LAZY[n]}")\n')
    assert string_edges("pkg", tmp_path / "p.py", modules) == {"pkg.lazy"}


def test_the_tool_check_sees_a_tool_in_a_wheel():
    """The first test's rule on a hand-made file list: lab/, benchmarks/ or a stray top-level module are refused."""
    files = ["priorkit/__init__.py", "priorkit_plugins/__init__.py", "priorkit-0.1.0.dist-info/RECORD",
             "lab/claims/__init__.py", "benchmarks/claims.py", "conftest.py"]
    assert foreign_files(files) == ["benchmarks/claims.py", "conftest.py", "lab/claims/__init__.py"]
    assert wheel_modules(files) == {"priorkit", "priorkit_plugins", "lab.claims", "benchmarks.claims", "conftest"}

"""The package's shape: no import circles, no module over 500 lines, and
docs/architecture.md's module table equal to the package tree."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"priorkit": ROOT / "priorkit", "priorkit_plugins": ROOT / "plugins"}
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    """dotted module name -> file, for priorkit/ and plugins/ (installed as priorkit_plugins)."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, at any level (module, class or function
    body, under TYPE_CHECKING too: a circle there is still a circle in the design)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                # the longest known module the name is or lies in ("from .x import y": x.y or x)
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                # importing pkg.sub runs pkg/__init__.py first (unless pkg encloses the importer)
                parent = target.rpartition(".")[0]
                while parent and parent in modules and not name.startswith(parent + "."):
                    graph[name].add(parent)
                    parent = parent.rpartition(".")[0]
    return graph


def _is_parent(a: str, b: str) -> bool:
    return b.startswith(a + ".")


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    # a package's __init__ importing its submodules is how packages work (pkg -> pkg.sub is
    # kept); a submodule reading a name of an enclosing package (``from .. import __version__``)
    # is not counted, or every package with re-exports would be one circle
    edges = {m: {t for t in ts if not _is_parent(t, m)} for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    cycles = find_cycles(import_graph())
    assert cycles == [], "modules importing each other (at any level):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_cycle_finder_sees_a_function_level_circle(tmp_path):
    graph = {"priorkit.a": {"priorkit.b"}, "priorkit.b": {"priorkit.a"}, "priorkit.c": {"priorkit.a"}}
    assert find_cycles(graph) == [["priorkit.a", "priorkit.b"]]
    src = "def f():\n    from .b import x\n"
    tree = ast.parse(src)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _resolve("priorkit.a", False, node) == "priorkit.b"


def package_of(module: str) -> str:
    """The package a module belongs to at the top level: ``priorkit.config.schema`` ->
    ``priorkit.training``; a top-level module (``priorkit.collator``) is its own node."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to top-level packages (an edge to an enclosing package, the
    ``from .. import x`` case, is left out as in :func:`find_cycles`)."""
    out: dict[str, set[str]] = {package_of(m): set() for m in graph}
    for m, targets in graph.items():
        a = package_of(m)
        for t in targets:
            b = package_of(t)
            if b != a and not _is_parent(t, m) and not _is_parent(b, m):
                out[a].add(b)
    return out


def test_no_import_circles_between_packages():
    """Packages do not import each other either (priorkit.channels.features -> priorkit.training ->
    priorkit.channels.features would be one, even with no module circle)."""
    graph = import_graph()
    cycles = find_cycles(package_graph(graph))
    detail = []
    for c in cycles:
        members = set(c)
        detail += [f"  {m} -> {t}" for m, ts in sorted(graph.items()) for t in sorted(ts)
                   if package_of(m) in members and package_of(t) in members and package_of(t) != package_of(m)
                   and not _is_parent(t, m)]
    assert cycles == [], "packages importing each other:\n" + "\n".join(
        " <-> ".join(c) for c in cycles) + "\nthrough:\n" + "\n".join(detail)


def test_the_package_graph_sees_a_circle_made_of_two_acyclic_module_paths():
    graph = {"priorkit.evaluation.dictionary_baseline": {"priorkit.training.tasks"}, "priorkit.training.tasks": set(),
             "priorkit.training.train": {"priorkit.evaluation.curve"}, "priorkit.evaluation.curve": set()}
    assert find_cycles(graph) == []
    assert find_cycles(package_graph(graph)) == [["priorkit.evaluation", "priorkit.training"]]


def test_inference_does_not_import_the_pipeline():
    graph = import_graph()
    bad = sorted(f"{m} -> {t}" for m, ts in graph.items() if m.startswith("priorkit.inference")
                 for t in ts if t.startswith("priorkit.training"))
    assert bad == []


def test_no_module_over_500_lines():
    long = sorted(f"{p.relative_to(ROOT)}: {n}" for p in _modules().values()
                  if (n := len(p.read_text().splitlines())) > MAX_LINES)
    assert long == []


def _table_paths() -> list[str]:
    """The paths named in the first column of docs/architecture.md's module table."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    out = []
    for row in table.splitlines():
        if not row.startswith("| `"):
            continue
        first = row.split("|")[1]
        names = re.findall(r"`([^`]+)`", first)
        folder = names[0].rsplit("/", 1)[0] + "/" if "/" in names[0] else ""
        out += [names[0]] + [n if "/" in n else folder + n for n in names[1:]]
    return out


def test_the_architecture_table_is_the_package_tree():
    """Every module of priorkit/ is in docs/architecture.md's module table (by its file or by
    its package folder), and every path the table names exists."""
    named = _table_paths()
    missing_paths = [n for n in named if not list(ROOT.glob(n.rstrip("/")))]
    assert missing_paths == [], f"docs/architecture.md names paths that do not exist: {missing_paths}"
    folders = tuple(n for n in named if n.endswith("/"))
    unlisted = []
    for path in sorted((ROOT / "priorkit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if path.name in ("__init__.py", "__main__.py") and rel.count("/") == 1:
            continue  # the package itself
        if rel in named or rel.startswith(folders):
            continue
        package = rel[:-len("__init__.py")]
        if path.name == "__init__.py" and any(n.startswith(package) for n in named):
            continue  # a package whose modules are listed one by one
        unlisted.append(rel)
    assert unlisted == [], f"modules missing from docs/architecture.md's module table: {unlisted}"


def architecture_layers() -> tuple[list[list[str]], dict[str, list[list[str]]]]:
    """docs/architecture.md's layers, low to high, as dotted names (``x/`` a package, ``x`` a
    module of priorkit, ``plugins/`` the built-in providers), and the ordered sub-layers of the
    rooms that have them ("inside it: a, b < c")."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("Layers, low to high", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"\n(?=\d+\. )", block.split("\n\n", 1)[1].strip())
    layers, inner = [], {}
    for item in items:
        head, _, inside = item.partition("inside it:")
        names = []
        for n in re.findall(r"`([^`]+)`", head):
            if n == "plugins/":
                names.append("priorkit_plugins")
            else:
                names.append("priorkit." + n.rstrip("/"))
        if "__init__" in head:
            names.append("priorkit")
        layers.append(names)
        if inside:
            room = names[0]
            inner[room] = [[f"{room}.{n}" for n in re.findall(r"`([^`]+)`", part)] for part in inside.split("<")]
    return layers, inner


def layer_of(module: str, layers: list[list[str]], inner: dict[str, list[list[str]]]) -> tuple[int, int] | None:
    """(layer, sub-layer) of a dotted module name: the longest name of the list it is or lies in."""
    best, where = -1, None
    for i, names in enumerate(layers):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, where = len(name), (i, name)
    if where is None:
        return None
    i, name = where
    sub = next((j for j, names in enumerate(inner.get(name, [])) for n in names
                if module == n or module.startswith(n + ".")), 0)
    return i, sub


def test_no_module_imports_a_higher_layer():
    """The layers docs/architecture.md draws are the code's: every module lies in one, and none
    imports a module of a higher layer (or of a later sub-layer of its own room)."""
    layers, inner = architecture_layers()
    assert len(layers) > 10 and "priorkit.training" in inner
    graph = import_graph()
    unplaced = sorted(m for m in graph if layer_of(m, layers, inner) is None)
    assert unplaced == [], f"modules in no layer of docs/architecture.md: {unplaced}"
    up = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                if not m.startswith(t + ".") and layer_of(t, layers, inner) > layer_of(m, layers, inner))
    assert up == [], "imports up the layering of docs/architecture.md:\n" + "\n".join(up)


def test_the_layer_check_sees_an_upward_import():
    layers, inner = architecture_layers()
    low, high = "priorkit.errors", "priorkit.training.train"
    assert layer_of(high, layers, inner) > layer_of(low, layers, inner)
    assert layer_of("priorkit.training.steps", layers, inner) > layer_of("priorkit.training.plan", layers, inner)

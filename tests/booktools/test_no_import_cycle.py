"""No import cycle in booktools: the graph of every import between its modules, at module
level or inside a function (a deferred import hides a cycle, it does not remove it), has no
cycle. The Sphinx extensions share what has no Sphinx in it through plain modules
(booktools.chapters), so no extension imports another.

Edges: ``import booktools.x``, ``from booktools.x import y`` and ``from .x import y`` (relative
imports resolved) go to the module named, or to the submodule when ``y`` is one; a package's
``__init__`` is a node like any other, so a module importing ``ROOT`` from ``booktools`` is an
edge to ``booktools`` and a cycle only if ``booktools/__init__.py`` imports it back. A literal
name loaded at run time (``importlib.import_module("booktools.x")``,
``app.setup_extension("booktools.x")``) is an edge too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
RUNTIME_LOADERS = {"import_module", "setup_extension"}


def modules(src: Path, package: str) -> dict[str, Path]:
    """{dotted module name: file} of every module of ``package`` under ``src``."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    """{module: the modules of ``package`` it imports}, at any depth of its code."""
    mods = modules(src, package)

    def target(name: str) -> str | None:  # the longest known module the name starts with
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) in RUNTIME_LOADERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names = [node.args[0].value]
            for name in names:
                if name == package or name.startswith(package + "."):
                    t = target(name)
                    if t is not None and t != mod:
                        graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first search meets (each once, as a path back to its start)."""
    found, seen, state = [], set(), {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt) :]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    found.append([*cycle, nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_booktools_has_no_import_cycle():
    graph = import_graph(SRC, "booktools")
    # the graph sees the imports it must: module level, inside functions, and relative
    assert "booktools.chapters" in graph["booktools.sphinx.colab_notebooks"]
    assert "booktools.chapters" in graph["booktools.sphinx.chapter_header"]
    found = cycles(graph)
    assert not found, "import cycles in booktools:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_graph_finds_a_cycle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("ROOT = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import ROOT\nfrom .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("def setup(app):\n    app.setup_extension('pkg.a')\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg", "pkg.sub.b"} and graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
    (pkg / "__init__.py").write_text("from . import c\n")  # now __init__ imports a back
    assert ["pkg", "pkg.c", "pkg.a", "pkg"] in cycles(import_graph(tmp_path, "pkg"))

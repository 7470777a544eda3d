"""The library's imports: a topic module states what it uses at its top, and no two of the
library's modules import each other, directly or around a loop.

A topic module (``seqtheory/*.py`` but ``__init__.py``, and ``seqtheory/sources/*.py``)
imports at module level only: an import inside a function hides a dependency from the
reader and from tools, and is needed only to break an import cycle (which the second test
rules out) or for an optional dependency (the library has none: torch, numpy, matplotlib
and python-sat are all requirements).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.booktools.test_no_import_cycle import cycles, import_graph

SRC = Path(__file__).resolve().parents[1] / "src"
LIBRARY = SRC / "seqtheory"
TOPIC_MODULES = [p for p in sorted(LIBRARY.glob("*.py")) if p.name != "__init__.py"] + sorted(
    (LIBRARY / "sources").glob("*.py")
)
# (module path relative to src/seqtheory, function name): imports allowed inside that
# function, each with its reason. Empty: every function-level import could move to the top.
ALLOWED_IN_FUNCTIONS: dict[tuple[str, str], str] = {}


def function_imports(path: Path) -> list[tuple[str, int, str]]:
    """``(function, line, import statement)`` of every import inside a function (or method)
    of the module at ``path``, named by the innermost function around it."""
    found = {}
    # ast.walk goes breadth first: an inner function comes after the one around it
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found[node] = (fn.name, node.lineno, ast.unparse(node))
    return sorted(found.values(), key=lambda f: f[1])


def test_topic_modules_import_at_the_top():
    assert len(TOPIC_MODULES) > 10 and LIBRARY / "sources" / "markov.py" in TOPIC_MODULES
    inside = [
        f"{path.relative_to(LIBRARY)}:{line} in {fn}(): {statement}"
        for path in TOPIC_MODULES
        for fn, line, statement in function_imports(path)
        if (path.relative_to(LIBRARY).as_posix(), fn) not in ALLOWED_IN_FUNCTIONS
    ]
    assert not inside, "imports inside functions of topic modules (move them to the top):\n" + (
        "\n".join(inside)
    )


def test_function_imports_are_found(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "import os\n\nclass A:\n    def f(self):\n        import math\n\n"
        "        def g():\n            from .x import y\n\n        return g\n"
    )
    assert function_imports(path) == [("f", 5, "import math"), ("g", 8, "from .x import y")]


def test_the_library_has_no_import_cycle():
    graph = import_graph(SRC, "seqtheory")
    # the graph holds the edges it must: a topic module's relative import of the engine, a
    # package __init__ re-exporting from its submodules, a module-level import between topics
    assert "seqtheory.core.training" in graph["seqtheory.parity"]
    assert "seqtheory.core.models" in graph["seqtheory"]
    assert "seqtheory.parity" in graph["seqtheory.chain_of_thought"]
    found = cycles(graph)
    assert not found, "import cycles in seqtheory:\n" + "\n".join(" -> ".join(c) for c in found)


LAYERS = ("core", "sources", "book", "topics", "chapters")


def layer(module: str) -> str | None:
    """The layer of a ``seqtheory`` module; None for the package itself and its data."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "data":
        return None
    return parts[1] if parts[1] in LAYERS else "topics"


def test_no_module_imports_from_a_later_layer():
    # core -> sources -> book -> topics -> chapters (README, "Where code goes"): a module
    # imports from its own layer and earlier ones. Fails on e.g. seqtheory.core.runtime
    # importing seqtheory.book.session, or a topic importing a chapter module.
    graph = import_graph(SRC, "seqtheory")
    assert layer("seqtheory.core.models") == "core" and layer("seqtheory.incontext") == "topics"
    upward = [
        f"{module} ({layer(module)}) imports {target} ({layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer(module)
        and layer(target)
        and LAYERS.index(layer(target)) > LAYERS.index(layer(module))
    ]
    assert not upward, "imports from a later layer:\n" + "\n".join(sorted(upward))


def test_no_module_imports_a_private_name_of_another():
    # a name with a leading underscore belongs to its module (e.g. models._CHECK_INPUTS:
    # other modules ask checking_inputs()); fails on `from .models import _CHECK_INPUTS`
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("seqtheory")
            ):
                found += [
                    f"{path.relative_to(LIBRARY)}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not found, "\n".join(found)

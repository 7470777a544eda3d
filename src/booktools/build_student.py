"""Build the student edition of the book: every exercise, no solution.

The lecturer's edition is the normal build (``jupyter-book build .``): each exercise is
followed by its solution in a collapsed block. This script builds the same book with
``hide_solutions: true`` (sphinx-exercise drops every ``{solution}``;
``booktools.sphinx.student`` drops the code cells tagged ``solution`` that compute one) into
``_build/student/_build/html``. It reuses the chapters' executed outputs (the build's
execution cache, shared with the lecturer's edition and the notebook tests), so after one
build the second costs only the rendering.

    python -m booktools.build_student               # then open _build/student/_build/html
    python -m booktools.build_student -W -n --keep-going   # extra arguments go to jupyter-book

Exit status: that of ``jupyter-book build``.
"""

from __future__ import annotations

import ast
import builtins
import subprocess
import symtable
import sys

import yaml

from booktools import ROOT

OUT = ROOT / "_build" / "student"


def student_config(config: dict) -> dict:
    """The book's configuration with solutions hidden, no page sources, and the edition named
    on every page."""
    config = yaml.safe_load(yaml.safe_dump(config))  # a deep copy
    sphinx = config.setdefault("sphinx", {})
    sphinx_config = sphinx.setdefault("config", {})
    sphinx_config["hide_solutions"] = True
    # no page sources on the site (they hold every solution), hence no source download
    sphinx_config["html_copy_source"] = False
    config["title"] = f"{config.get('title', '')} (student edition)".strip()
    html = config.setdefault("html", {})
    html["extra_footer"] = (
        html.get("extra_footer", "") + " Student edition: the exercises without their solutions."
    ).strip()
    return config


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace (not inside functions or classes)."""
    bound: set[str] = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)):
            return
        if isinstance(node, ast.GeneratorExp):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return bound


def _global_reads(source: str) -> set[str]:
    """Names a cell reads from the notebook's namespace: at its top level, or inside its
    functions and comprehensions where no parameter or local of theirs has the name."""
    found: set[str] = set()

    def visit(table: symtable.SymbolTable, top: bool) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (
                top or sym.is_global() or (sym.is_free() and not sym.is_local())
            ):
                found.add(sym.get_name())
        for child in table.get_children():
            visit(child, False)

    visit(symtable.symtable(source, "<cell>", "exec"), True)
    return found


def solution_only_uses(cells: list[tuple[str, bool]]) -> list[str]:
    """Where a cell of the student edition uses a name that only a solution cell defines.

    ``cells``: the chapter's code cells in order as ``(source, is_solution)``. A name a cell
    reads from the notebook's namespace that no earlier cell of the student edition binds,
    and the cell itself does not bind at its top level, but an earlier solution cell does,
    works in the lecturer's notebook and fails with a NameError in the student's. Returns
    one line per such use."""
    from booktools.cache import parse_cell

    student: set[str] = set(dir(builtins))
    solution: set[str] = set()
    found = []
    for n, (source, is_solution) in enumerate(cells, start=1):
        tree = parse_cell(source)
        if tree is None:  # a lab's starter cell with blanks: nothing it defines is read
            continue
        if is_solution:
            solution |= _top_level_names(tree)
            continue
        own = _top_level_names(tree)
        plain = ast.unparse(tree)  # without IPython's magics
        for name in sorted(_global_reads(plain) & solution - student - own):
            found.append(f"code cell {n} reads {name!r}, which only a solution cell defines")
        student |= own
    return found


def chapter_solution_leaks(md) -> list[str]:
    """:func:`solution_only_uses` for one chapter's ``.md``."""
    import jupytext

    cells = [
        (c.source, "solution" in c.metadata.get("tags", []))
        for c in jupytext.read(md).cells
        if c.cell_type == "code"
    ]
    return [f"{md.stem}: {line}" for line in solution_only_uses(cells)]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "_config_student.yml"
    path.write_text(yaml.safe_dump(student_config(config), sort_keys=False), encoding="utf-8")
    cmd = [
        "jupyter-book",
        "build",
        str(ROOT),
        "--config",
        str(path),
        "--path-output",
        str(OUT),
        *argv,
    ]
    print("student edition:", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

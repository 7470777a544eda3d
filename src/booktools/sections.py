"""What computes one claims section of a chapter, and its fingerprint.

A section's values come from the chapter's cell ``verify(chapter.claims("NAME", ...))``.
:func:`section_cells` finds the code cells that cell depends on: walking back from it, every
earlier cell that binds (or changes in place: ``x[k] = ...``, ``x.append(...)``) a name a
cell already in the set reads, transitively; a cell that rebinds a name whole (``x = ...``
at its top level) ends the search for that name's earlier values.
:func:`section_fingerprint` hashes those cells' code, the source of the section's function
in the chapter module (``ClaimTable.computes``) with the module's functions it calls, the
run sizes (``Sizes``: a topic's ``SETUP``) its cells read, and the conditions of the
section's claims.
The record of measured values (``booktools.robustness --record``) stores it per seed and
section, and ``tests/test_claims_recorded.py`` fails on a section whose fingerprint has
changed since it was recorded. Not part of it: the library's topic and engine modules the
section's code calls (an edit there would make every section of every chapter that uses
them stale; the chapter's own run checks them under CI), hence also which library module a
name is imported from (an import counts as the names it binds: moving a function between
modules leaves the sections that import it as they were), and the order of draws from a
global random generator (the library's runs draw from their own named streams).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import re
from pathlib import Path

from booktools import ROOT
from booktools.cache import parse_cell


def _imported(tree: ast.Module) -> set[str]:
    return {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _kills(tree: ast.Module) -> set[str]:
    """Names a cell's top-level statements always rebind whole (``x = ...``, imports,
    definitions): earlier values of them no longer matter after the cell."""
    out: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        out.add(node.id)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return out


def binds_and_reads(
    source: str, modules: frozenset[str] = frozenset()
) -> tuple[set[str], set[str], set[str]]:
    """``(names the cell binds or changes in place, names it reads, names it rebinds whole)``;
    a method called on one of ``modules`` (names the notebook imports) changes nothing."""
    tree = parse_cell(source)
    if tree is None:
        return set(), set(), set()
    imported = _imported(tree)
    modules = modules | imported
    binds, reads = set(imported), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (binds if isinstance(node.ctx, (ast.Store, ast.Del)) else reads).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            binds.add(_root_name(node) or "")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = _root_name(node.func.value)
            if owner and owner not in modules:  # x.append(...) may change x
                binds.add(owner)
    for stmt in tree.body:  # a statement that is a bare call, f(x), may change x
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            if call.func.id not in ("print", "display", "len", "repr", "str"):
                binds |= {a.id for a in call.args if isinstance(a, ast.Name)}
    binds.discard("")
    return binds, reads, _kills(tree) - reads


def verify_cells(cells: list[str], section: str) -> list[int]:
    """Indices of the code cells that verify ``section``."""
    pattern = re.compile(r"verify\(chapter\.claims\(\"" + re.escape(section) + r"\"")
    return [i for i, c in enumerate(cells) if pattern.search(re.sub(r"\s+", "", c))]


def section_cells(cells: list[str], section: str) -> list[int]:
    """The code cells (indices, in order) the values of ``section`` depend on."""
    found = verify_cells(cells, section)
    if not found:
        raise ValueError(f"section must be verified by a cell of the chapter, got {section!r}")
    trees = [parse_cell(c) for c in cells]
    modules = frozenset().union(*(_imported(t) for t in trees if t is not None))
    parsed = [binds_and_reads(c, modules) for c in cells]
    keep = set(found)
    needed = set(parsed[max(found)][1])
    for i in range(max(found) - 1, -1, -1):
        binds, reads, kills = parsed[i]
        if i in found:
            needed |= reads
        elif binds & needed:
            keep.add(i)
            needed = (needed - kills) | reads
    return sorted(keep)


def solution_sections(md: Path) -> set[str]:
    """The claim sections of a chapter whose values a solution cell computes: a code cell
    tagged ``solution`` (which the student edition leaves out) verifies the section or
    computes a value it reads."""
    from booktools.cache import CODE_CELL, code_cells

    text = md.read_text(encoding="utf-8")
    cells = code_cells(text)
    solution = {
        i
        for i, body in enumerate(CODE_CELL.findall(text))
        if re.search(r"^:tags:.*\bsolution\b", body, re.M)
    }
    verified = re.compile(r"verify\(chapter\.claims\(\"(\w+)\"")
    sections = {m for c in cells for m in verified.findall(re.sub(r"\s+", "", c))}
    return {s for s in sections if solution & set(section_cells(cells, s))}


def chapter_code(md: Path) -> list[str]:
    """The code cells of a chapter's ``.md``."""
    from booktools.cache import code_cells

    return code_cells(md.read_text(encoding="utf-8"))


def _module_functions(fn) -> list:
    """``fn`` and the functions of its own module it calls, transitively (by name)."""
    module = inspect.getmodule(fn)
    found, todo = [], [fn]
    while todo:
        f = todo.pop()
        if f in found:
            continue
        found.append(f)
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(f)))
        for node in ast.walk(tree):
            g = getattr(module, node.id, None) if isinstance(node, ast.Name) else None
            if inspect.isfunction(g) and inspect.getmodule(g) is module:
                todo.append(g)
    return found


def _sizes(cells: list[str], used: list[int]) -> list[str]:
    """``repr`` of each run size (``Sizes``, e.g. a topic's ``SETUP``) the used cells read
    under a name the chapter imports from the library."""
    import importlib

    from seqtheory.core.runtime import Sizes

    imported: dict[str, tuple[str, str]] = {}
    for tree in filter(None, map(parse_cell, cells)):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seqtheory"):
                for alias in node.names:
                    imported[alias.asname or alias.name] = (node.module, alias.name)
    read = set().union(*(binds_and_reads(cells[i])[1] for i in used))
    out = []
    for name in sorted(read & set(imported)):
        module, attr = imported[name]
        value = getattr(importlib.import_module(module), attr, None)
        if isinstance(value, Sizes):
            out.append(f"{module}.{attr} = {value!r}")
    return out


def section_fingerprint(chapter: str, section: str, root: Path = ROOT) -> str:
    """Short hash of what computes ``section``: its cells, the run sizes they read, its
    function with the chapter module's functions that it calls, and its claims'
    conditions."""
    from seqtheory import chapters

    table = chapters.table(chapter)
    cells = chapter_code(root / "book" / f"{chapter}.md")
    used = section_cells(cells, section)
    h = hashlib.sha256()
    for i in used:
        h.update(_without_import_paths(cells[i]).strip().encode() + b"\0")
    for size in _sizes(cells, used):
        h.update(size.encode() + b"\0")
    compute = table._compute.get(section)
    for fn in _module_functions(compute) if compute else []:
        h.update(inspect.getsource(fn).encode() + b"\0")
    for claim in table.section(section):
        h.update(f"{claim.id}: {claim.condition} [{claim.scale}]".encode() + b"\0")
    return h.hexdigest()[:16]


def _without_import_paths(source: str) -> str:
    """``source`` with each run of adjacent import statements written as one line of the
    names they bind, sorted (``from a.b import c as d`` and ``import e.f`` become
    ``import d, e``)."""
    tree = parse_cell(source)
    if tree is None:
        return source
    lines = source.splitlines()
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    runs: list[list] = []  # (first line, last line, names) of adjacent imports
    for node in sorted(imports, key=lambda n: n.lineno):
        names = [(a.asname or a.name).split(".")[0] for a in node.names]
        if runs and runs[-1][1] + 1 == node.lineno and runs[-1][3] == node.col_offset:
            runs[-1][1], runs[-1][2] = node.end_lineno, runs[-1][2] + names
        else:
            runs.append([node.lineno, node.end_lineno, names, node.col_offset])
    for first, last, names, col in reversed(runs):
        lines[first - 1 : last] = [f"{lines[first - 1][:col]}import {', '.join(sorted(names))}"]
    return "\n".join(lines)


def last_cell(chapter: str, sections: list[str], root: Path = ROOT) -> int:
    """Index (among the code cells) of the last cell that verifies one of ``sections``: a
    run that records only them can stop after it."""
    cells = chapter_code(root / "book" / f"{chapter}.md")
    found = [i for s in sections for i in verify_cells(cells, s)]
    if len(found) == 0 or any(not verify_cells(cells, s) for s in sections):
        missing = [s for s in sections if not verify_cells(cells, s)]
        raise ValueError(f"sections must be verified by a cell of {chapter}; not: {missing}")
    return max(found)


def stale_sections(chapter: str, root: Path = ROOT, threads: int = 1) -> list[str]:
    """``"seed S, section X"`` for each recorded section whose fingerprint is missing or no
    longer that of the code (``measured/CHAPTER.json``; ``CHAPTER.threadsN.json``)."""
    from seqtheory import chapters

    record = chapters.table(chapter).recorded(threads)
    prints = record.get("fingerprints", {})
    now: dict[str, str] = {}
    out = []
    for seed, sections in record["runs"].items():
        for section in sections:
            if section not in now:
                now[section] = section_fingerprint(chapter, section, root)
            if prints.get(seed, {}).get(section) != now[section]:
                out.append(f"seed {seed}, section {section}")
    return out

"""The book's execution cache, keyed per chapter on what the chapter uses.

myst-nb's ``cache`` mode reuses a chapter's executed outputs while the notebook's hash is
unchanged; jupyter-cache hashes the code cells and the ``kernelspec`` metadata.  A chapter's
outputs also depend on the library, so :func:`fingerprint` hashes what one chapter uses --
the library modules it imports (transitively, every ``import`` anywhere in a module counts),
the data files they or the chapter name, the chapter's recorded claims and lab ranges, and
``requirements.txt`` -- and :func:`keyed` puts that hash into the notebook's ``kernelspec``
(``seqtheory_uses``).  Editing ``parity.py`` therefore re-executes the chapters that import
it and no other; editing the book's tooling (``src/booktools``) re-executes none.

Every executor stores into the same cache: the notebook tests (``conftest.py``), the
book build (:mod:`booktools.sphinx.bookcache`, which keys the notebooks myst-nb reads and
first executes the stale chapters in parallel, :mod:`booktools.execute`), so a CI run
executes each chapter once and the build reuses the results.

    python -m booktools.cache            # each chapter: cached or stale, and what it uses
    python -m booktools.cache --executions [--require-once]   # executions per chapter and size
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
from pathlib import Path

from booktools import ROOT

PACKAGE = "seqtheory"
KEY = "seqtheory_uses"  # the kernelspec entry that carries a chapter's fingerprint
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def cache_path(root: Path = ROOT) -> Path:
    """Where executed chapters are cached (one cache; records are keyed per chapter)."""
    return root / "_build" / ".jupyter_cache"


def code_cells(md_text: str) -> list[str]:
    """The code cells of a MyST notebook's text, their options (``:tags:``) left out."""
    cells = []
    for body in CODE_CELL.findall(md_text):
        lines = body.splitlines()
        while lines and re.match(r"^:[\w-]+:", lines[0]):
            lines.pop(0)
        cells.append("\n".join(lines))
    return cells


def parse_cell(source: str) -> ast.Module | None:
    """A code cell's syntax tree, IPython's magics and shell escapes left out (None when the
    cell is not Python, e.g. a lab's starter with blanks)."""
    plain = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )
    try:
        return ast.parse(plain)
    except SyntaxError:
        return None


def imported_names(source: str, module: str = "", is_package: bool = False) -> set[str]:
    """Every dotted name an ``import`` anywhere in ``source`` asks for (``from a import b``
    gives ``a`` and ``a.b``: ``b`` may be a module); relative imports resolved against
    ``module`` (a package's ``__init__`` when ``is_package``)."""
    tree = parse_cell(source)
    if tree is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if module else []
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[: max(keep, 0)] + ([base] if base else []))
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _module_file(name: str, src: Path) -> Path | None:
    path = src.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def library_closure(sources: list[str], src: Path) -> list[Path]:
    """The library's module files that ``sources`` (code cells) import, transitively, with
    the ``__init__.py`` of every package on the way."""
    found: dict[str, Path] = {}
    asked = set().union(*(imported_names(s) for s in sources))
    todo = sorted(n for n in asked if n.split(".")[0] == PACKAGE)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
            sub = ".".join(parts[:i])
            path = _module_file(sub, src)
            if sub in found or path is None:
                continue
            found[sub] = path
            text = path.read_text(encoding="utf-8")
            todo += [
                n
                for n in imported_names(text, sub, path.name == "__init__.py")
                if n.split(".")[0] == PACKAGE and n not in found
            ]
    return sorted(found.values())


def data_files(texts: list[str], chapter: str, src: Path) -> list[Path]:
    """The package's data files that a chapter reads: those whose file name appears in its
    code or its modules, and the claims' record its run reads (``measured/CHAPTER.json``)."""
    blob = "\n".join(texts)
    records = {f"{chapter}.json"}
    found = []
    for path in sorted((src / PACKAGE).rglob("*")):
        if not path.is_file() or path.suffix in (".py", ".pyc", ".lock"):
            continue
        if path.parent.name == "measured" and path.parent.parent.name == "chapters":
            if path.name in records:
                found.append(path)
        elif path.name in blob:
            found.append(path)
    return found


def dependencies(md: Path, root: Path = ROOT) -> list[Path]:
    """Every file a chapter's execution depends on beyond its own code cells."""
    src = root / "src"
    cells = code_cells(md.read_text(encoding="utf-8"))
    modules = library_closure(cells, src)
    texts = cells + [p.read_text(encoding="utf-8") for p in modules]
    return modules + data_files(texts, md.stem, src) + [root / "requirements.txt"]


def run_key(env=None) -> str:
    """The settings of the environment that change a chapter's outputs: its run size, base
    seed and torch threads (``FULL``, ``SEQTHEORY_SMOKE``, ``SEQTHEORY_SEED``,
    ``SEQTHEORY_NUM_THREADS``; unset: the defaults)."""
    env = os.environ if env is None else env
    smoke = env.get("SEQTHEORY_SMOKE", "").strip() or "0"
    seed = env.get("SEQTHEORY_SEED", "").strip() or "0"
    threads = env.get("SEQTHEORY_NUM_THREADS", "").strip() or "1"
    return f"{run_size(env)} smoke={smoke} seed={seed} threads={threads}"


def fingerprint(md: Path, root: Path = ROOT, env=None) -> str:
    """Short hash of the files :func:`dependencies` lists (names and contents) and of
    :func:`run_key` (a ``FULL=1`` build does not reuse the CPU-size run)."""
    md, root = Path(md).resolve(), Path(root).resolve()
    h = hashlib.sha256(run_key(env).encode() + b"\0")
    for path in dependencies(md, root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def keyed(nb, key: str):
    """``nb`` (a chapter read as myst-nb reads it) with ``key`` (its :func:`fingerprint`) in
    the kernelspec, which jupyter-cache hashes with the code cells."""
    nb.metadata.setdefault("kernelspec", {})[KEY] = key
    return nb


def read_chapter(md: Path, root: Path = ROOT, key: str | None = None):
    """A chapter's ``.md`` as the build reads it (myst-nb's reader), keyed for the cache with
    ``key`` (default: its fingerprint now)."""
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    nb = read_myst_markdown_notebook(
        md.read_text(encoding="utf-8"), config=MdParserConfig(), add_source_map=True, path=str(md)
    )
    return keyed(nb, fingerprint(md, root) if key is None else key)


def cached(md: Path, root: Path = ROOT, key: str | None = None) -> bool:
    """Whether the cache holds this chapter for its current code and fingerprint (``key``:
    the fingerprint, when it is known)."""
    from jupyter_cache import get_cache

    path = cache_path(root)
    if not path.exists():
        return False
    try:
        get_cache(str(path)).match_cache_notebook(read_chapter(md, root, key))
    except KeyError:
        return False
    return True


def store(nb, md: Path, seconds: float, root: Path = ROOT) -> None:
    """Put an executed chapter into the cache under the key it was read with
    (:func:`read_chapter` before it ran: an edit while it ran does not reach the key)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    if KEY not in nb.metadata.get("kernelspec", {}):
        raise ValueError("nb must be read with read_chapter (its kernelspec carries its key)")
    get_cache(str(cache_path(root))).cache_notebook_bundle(
        CacheBundleIn(nb, str(md), data={"execution_seconds": seconds}),
        check_validity=False,
        overwrite=True,
    )


def execution_log(root: Path = ROOT) -> Path:
    """Every chapter execution of this build folder, one line each (``.ci/run`` counts them)."""
    return root / "_build" / "executions.tsv"


def run_size(env=None) -> str:
    """The size a kernel with environment ``env`` (default: this process's) runs a chapter at:
    ``smoke`` (``SEQTHEORY_SMOKE``), ``full`` (``FULL=1``) or ``cpu``."""
    env = os.environ if env is None else env
    if env.get("SEQTHEORY_SMOKE", "").strip() not in ("", "0"):
        return "smoke"
    return "full" if env.get("FULL", "0").strip().lower() in ("1", "true", "yes", "on") else "cpu"


def log_execution(root: Path, chapter: str, runner: str, env=None) -> None:
    """Append ``chapter, runner, size`` to :func:`execution_log`."""
    path = execution_log(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{chapter}\t{runner}\t{run_size(env)}\n")


def execution_counts(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """``(chapter, size) -> [runner, ...]`` from :func:`execution_log`."""
    counts: dict[tuple[str, str], list[str]] = {}
    path = execution_log(root)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        chapter, runner, size = line.split("\t")
        counts.setdefault((chapter, size), []).append(runner)
    return counts


def executions_report(root: Path = ROOT) -> tuple[str, list[str]]:
    """A table chapter -> executions per size (and by whom), and the chapters that did not
    execute exactly once at their CPU size."""
    from booktools.toc import chapter_names

    counts = execution_counts(root)
    sizes = sorted({size for _, size in counts})
    lines = [f"  {'chapter':20s} " + " ".join(f"{s:>6s}" for s in sizes) + "  by"]
    wrong = []
    for name in chapter_names(root):
        row = [len(counts.get((name, s), [])) for s in sizes]
        runners = sorted({r for s in sizes for r in counts.get((name, s), [])})
        lines.append(
            f"  {name:20s} " + " ".join(f"{n:6d}" for n in row) + "  " + ", ".join(runners)
        )
        if len(counts.get((name, "cpu"), [])) != 1:
            wrong.append(f"{name}: {counts.get((name, 'cpu'), [])}")
    return "\n".join(lines), wrong


def main(argv: list[str] | None = None) -> int:
    import argparse

    from booktools.toc import chapter_sources

    parser = argparse.ArgumentParser(description="The execution cache: chapters and what they use.")
    parser.add_argument(
        "--executions", action="store_true", help="count this build folder's executions"
    )
    parser.add_argument(
        "--require-once",
        action="store_true",
        help="with --executions: fail unless every chapter executed exactly once at its CPU size",
    )
    args = parser.parse_args(argv)
    if args.executions:
        table, wrong = executions_report(ROOT)
        print(f"Chapter executions in this build folder ({execution_log(ROOT).relative_to(ROOT)}):")
        print(table)
        if args.require_once and wrong:
            print(
                "Each chapter must execute exactly once at its CPU size; not so for: "
                + "; ".join(wrong)
            )
            return 1
        return 0
    for md in chapter_sources(ROOT):
        uses = [p.relative_to(ROOT / "src").as_posix() for p in dependencies(md)[:-1]]
        mods = [u.removeprefix(f"{PACKAGE}/") for u in uses if u.endswith(".py")]
        data = [u.removeprefix(f"{PACKAGE}/") for u in uses if not u.endswith(".py")]
        state = "cached" if cached(md) else "stale "
        print(
            f"{md.stem:20s} {state} {fingerprint(md)}  {len(mods)} modules, data: {', '.join(data)}"
        )
        topics = [m for m in mods if "/" not in m or m.startswith(("chapters/", "sources/"))]
        print(f"{'':28s}uses {', '.join(t for t in topics if not t.endswith('__init__.py'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

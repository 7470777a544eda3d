"""The table of contents (``_toc.yml``): its pages, and the chapters that execute."""

from __future__ import annotations

from pathlib import Path

from booktools import ROOT


def toc_files(root: Path = ROOT) -> list[Path]:
    """Every page listed in ``_toc.yml``, as a path to its ``.md`` source."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    found.append(node[key])
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(toc)
    return [root / (f if f.endswith(".md") else f + ".md") for f in found]


def chapter_sources(root: Path = ROOT) -> list[Path]:
    """The ``.md`` sources of the executable chapters (pages with code cells), in toc order."""
    return [p for p in toc_files(root) if "```{code-cell}" in p.read_text(encoding="utf-8")]


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """Paired notebooks of the executable chapters in the table of contents."""
    return [p.with_suffix(".ipynb") for p in chapter_sources(root)]


def chapter_names(root: Path = ROOT) -> list[str]:
    """Names of the executable chapters in ``book/`` (``book/NAME.md`` -> ``NAME``), in toc
    order."""
    return [p.stem for p in chapter_sources(root) if p.parent == root / "book"]

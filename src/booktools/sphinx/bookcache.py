"""Sphinx extension: the build's jupyter-cache in the folder keyed on the library's sources
(:func:`booktools.cache.cache_path` of the book's source folder)."""

from __future__ import annotations

from pathlib import Path

from booktools.cache import cache_path


def _set_cache_path(app, config) -> None:
    config.nb_execution_cache_path = str(cache_path(Path(app.srcdir).resolve()))


def setup(app):
    app.connect("config-inited", _set_cache_path, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: after the HTML build, every chapter's lecture deck (``slides/NAME.html``).

The decks are written by :mod:`booktools.slides` from their sources ``book/slides/NAME.md``
and the executed chapters; a source that names a figure, a glued value or an exercise the
chapter does not have stops the build.
"""

from __future__ import annotations

import re
from pathlib import Path

from booktools.slides import write_decks
from booktools.toc import chapter_names


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    srcdir, outdir = Path(app.srcdir), Path(app.outdir)
    book = re.sub(r"\s*\(student edition\)$", "", app.config.html_title or "")
    write_decks(
        outdir,
        outdir.parent / "jupyter_execute",
        chapter_names(srcdir),
        book or app.config.project,
        app.config.html_baseurl or "",
        srcdir / "book" / "slides",
    )


def setup(app):
    app.connect("build-finished", _build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

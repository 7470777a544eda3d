"""Sphinx extension: pages that work as static files, with no kernel and no network.

* MathJax is served from the site itself.  Sphinx loads it from a CDN by default, which
  leaves raw TeX on a page read offline (a classroom, a train, a locally built copy).  The
  ``django-static-mathjax`` package on PyPI ships MathJax 3; the one combined component
  the book needs (TeX input, HTML output, every TeX extension) and its web fonts are copied
  into ``_static/mathjax/`` and ``mathjax_path`` points at it.
* Chapters executed by the build show progress bars as a line of text with their final
  state (``SEQTHEORY_STATIC_PROGRESS=1``, inherited by the kernels), not as widgets that
  would need JavaScript from a CDN.  (``pytest`` sets the same variable, see conftest.py.)
* The light/dark mode defaults to "auto" (none set makes the theme log an error on a
  reader's first visit).
* A script that two extensions both add is included once (sphinx-thebe's settings script
  otherwise appears twice and the second copy throws "THEBE_JS_URL has already been
  declared" on every page).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

COMPONENT = "tex-chtml-full.js"  # relative to MathJax's es5/ folder
FONTS = Path("output") / "chtml" / "fonts" / "woff-v2"


def mathjax_es5() -> Path:
    """MathJax's ``es5`` folder inside the installed ``django-static-mathjax`` package."""
    try:
        import mathjax  # the import name of django-static-mathjax
    except ImportError as exc:
        raise ExtensionError(
            "offline MathJax needs the package django-static-mathjax "
            "(pip install -r requirements.txt)"
        ) from exc
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / COMPONENT).is_file():
        raise ExtensionError(f"{es5 / COMPONENT} is missing: reinstall django-static-mathjax")
    return es5


def _configure(app, config) -> None:
    mathjax_es5()  # fail early, with the fix in the message
    config.mathjax_path = f"mathjax/{COMPONENT}"  # relative paths are under _static/
    os.environ.setdefault("SEQTHEORY_STATIC_PROGRESS", "1")
    # the build's kernels inherit this: a failed claim check fails the build
    os.environ.setdefault("SEQTHEORY_STRICT_CHECKS", "1")
    os.environ.setdefault("SEQTHEORY_SVG_FIGURES", "1")  # figures also as SVG, for the decks


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    es5, dest = mathjax_es5(), Path(app.outdir) / "_static" / "mathjax"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(es5 / COMPONENT, dest / COMPONENT)
    shutil.copytree(es5 / FONTS, dest / FONTS, dirs_exist_ok=True)


def _page_context(app, pagename, templatename, context, doctree) -> None:
    # pydata-sphinx-theme reads the default light/dark mode from html_context
    context["default_mode"] = context.get("default_mode") or "auto"
    seen, unique = set(), []
    for script in context.get("script_files", []):
        name = getattr(script, "filename", script) or ""  # inline scripts: None or ""
        key = (str(name), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _root_page(app, exception) -> None:
    """The site's root ``index.html``: a redirect to the first page, as a complete page (a
    language, a title and a link), written before sphinx-external-toc would write a bare
    redirect (it leaves an existing file alone)."""
    if exception is not None or app.builder.format != "html":
        return
    import html

    root = app.config.master_doc.removesuffix(".md")
    title = html.escape(app.config.html_title or app.config.project)
    (Path(app.outdir) / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>"
        f'<meta http-equiv="Refresh" content="0; url={root}.html"></head>'
        f'<body><p><a href="{root}.html">{title}</a></p></body></html>\n',
        encoding="utf-8",
    )


def _citation_roles(app, exception) -> None:
    """docutils marks each bibliography entry ``role="doc-biblioentry"`` inside a
    ``role="list"``: a deprecated role that leaves the list without list items (WCAG
    4.1.2). The entries become list items."""
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if 'role="doc-biblioentry"' in text:
            page.write_text(
                text.replace('role="doc-biblioentry"', 'role="listitem"'), encoding="utf-8"
            )


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("build-finished", _root_page, priority=100)
    app.connect("build-finished", _citation_roles)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

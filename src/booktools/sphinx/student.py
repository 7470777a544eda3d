"""Sphinx extension: the student edition leaves out the code cells that compute a solution.

``sphinx-exercise`` drops every ``{solution}`` directive when ``hide_solutions`` is true (the
student edition, ``python -m booktools.build_student``). A few solutions are *computed* by a
code cell of the chapter (tagged ``solution``; myst-nb gives its node the class
``tag_solution``); such a cell would still show its code and output to a student, so this
extension removes it from the page as well. (The cell is still executed: the chapter's later
cells and checks may use its results, and the execution cache is shared with the lecturer's
edition.) The student edition's site also carries no page sources (``html_copy_source`` is
off in its configuration), so this extension takes the theme's "download the source" items
out of each page's download menu. The lecturer's edition is unchanged.
"""

from __future__ import annotations

from docutils import nodes

SOLUTION_CLASS = "tag_solution"


def remove_solution_cells(app, doctree) -> None:
    if not app.config.hide_solutions:
        return
    for node in list(doctree.findall(nodes.Element)):
        if SOLUTION_CLASS in node.get("classes", ()) and node.parent is not None:
            node.parent.remove(node)


SOURCE_BUTTONS = {"download-source-button", "download-notebook-button"}


def remove_source_downloads(app, pagename, templatename, context, doctree) -> None:
    """The download menu without the page's source (which holds the solutions)."""
    if not app.config.hide_solutions:
        return
    for button in context.get("header_buttons", []):
        if isinstance(button, dict) and "buttons" in button:
            button["buttons"] = [
                b for b in button["buttons"] if b.get("label") not in SOURCE_BUTTONS
            ]


def setup(app):
    app.setup_extension("sphinx_exercise")  # defines the hide_solutions config value
    app.connect("doctree-read", remove_solution_cells)
    # after sphinx-book-theme fills the header's buttons (its handlers run at 501)
    app.connect("html-page-context", remove_source_downloads, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

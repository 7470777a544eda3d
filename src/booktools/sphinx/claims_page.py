"""Sphinx extension: the page "What the book checks", from the chapters' claims tables.

The directive ``{claims-overview}`` writes, for every chapter of the table of contents that
has a module in ``seqtheory.chapters``, one table per section: each claim's sentence, its
condition, the result that would make it fail, its values over the base seeds recorded in
``seqtheory/chapters/measured/CHAPTER.json`` (with how many of them satisfy it), and this
build's values, pasted from the chapter's executed notebook (``verify`` glues them as
``claim.ID``). The student edition (``hide_solutions``) leaves out the sections whose values
a solution cell computes (:func:`booktools.sections.solution_sections`): their claims state
the exercises' answers.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def _text(text: str) -> str:
    """Text on one line of a list-table item."""
    return " ".join(text.split()).rstrip(".")


def _code(text: str) -> str:
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def toc_chapters(root: Path) -> list[str]:
    """Page names (``book/NAME`` -> ``NAME``) in the order of ``_toc.yml``."""
    found = re.findall(r"file:\s*book/([\w-]+)", (root / "_toc.yml").read_text(encoding="utf-8"))
    return list(dict.fromkeys(found))


def _title(md: Path) -> str:
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return md.stem


def overview_markdown(root: Path, without_solutions: bool = False) -> str:
    """The page body as MyST Markdown (tables with cross-document glue roles);
    ``without_solutions``: the sections a solution cell computes are left out."""
    from booktools.sections import solution_sections
    from seqtheory import chapters

    have = set(chapters.names())
    lines: list[str] = []
    total = 0
    for name in toc_chapters(root):
        if name not in have:
            continue
        table = chapters.table(name)
        record = table.recorded()
        seeds = sorted(record["runs"], key=int)
        left_out = solution_sections(root / "book" / f"{name}.md") if without_solutions else set()
        shown = [c for c in table.claims if c.section not in left_out]
        lines += [
            f"## {_title(root / 'book' / f'{name}.md')}",
            "",
            f"{len(shown)} claims of the chapter {{doc}}`{name}`, recorded under "
            f"base seeds {table.seeds_text() if seeds else 'none'}."
            + (
                f" The claims of {len(left_out)} section(s) that exercise solutions compute "
                "are in the lecturer's edition only."
                if left_out
                else ""
            ),
            "",
        ]
        for section in table.sections():
            claims = table.section(section)
            if not claims or section in left_out:
                continue
            lines += [
                f"**Section `{section}`**",
                "",
                "```{list-table}",
                ":header-rows: 1",
                ":widths: 40 22 20 18",
                ":class: claims-table",
                "",
                "* - claim",
                "  - condition",
                f"  - over base seeds {table.seeds_text()}",
                "  - this build",
            ]
            for claim in claims:
                scale = "" if claim.scale == "any" else f" *({claim.scale} runs only)*"
                if claim.applies("cpu"):
                    try:
                        held, n = table.held(claim, record)
                    except KeyError:  # tests/test_claims_recorded.py fails on this too
                        held, n = "?", len(seeds)
                    spread = "; ".join(f"{k}: {v}" for k, v in table.spread(claim, record).items())
                    spread += f"; holds in {held}/{n}"
                else:
                    spread = "not in the record (its runs use the default size)"
                build = f"{{glue:text}}`{name}.md::claim.{claim.id}:s`"
                lines += [
                    f"* - {_text(claim.sentence)}.{scale}",
                    "",
                    f"    *Fails if* {_text(claim.fails_if)}.",
                    f"  - {_code(claim.condition)}",
                    f"  - {_text(spread)}",
                    f"  - {build}",
                ]
                total += 1
            lines += ["```", ""]
    return "\n".join([f"The book checks {total} claims.", "", *lines])


class ClaimsOverview(SphinxDirective):
    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        text = overview_markdown(root, without_solutions=bool(self.config.hide_solutions))
        container = nodes.container(classes=["claims-overview"])
        self.state.nested_parse(
            StringList(text.splitlines(), source="claims-overview"),
            self.content_offset,
            container,
            match_titles=True,
        )
        for name in toc_chapters(root):
            self.env.note_dependency(str(root / "book" / f"{name}.md"))
        return container.children


def setup(app):
    app.add_directive("claims-overview", ClaimsOverview)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

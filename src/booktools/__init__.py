"""The book's tooling: the table of contents, the execution cache (keyed per chapter) and the
executor of stale chapters, the Colab setup cell, the student edition, the site check, the
PDF, Colab emulation, robustness runs and the claims' record (with the sections' fingerprints),
full runs, and the Sphinx extensions of the build (:mod:`booktools.sphinx`).

It works in a checkout of the repository (``pip install -e .``): :data:`ROOT` is the
checkout's root folder. Commands run as ``python -m booktools.NAME``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The licences (LICENSE), as every product of the build states them: the site's footer
#: (_config.yml), the slides' title slide, the PDF's cover and each notebook's first cell.
LICENCE = "Text and figures: CC BY 4.0. Code: MIT. See the repository's LICENSE file."
LICENSE_URL = "https://github.com/seqtheory/seqtheory-book/blob/main/LICENSE"

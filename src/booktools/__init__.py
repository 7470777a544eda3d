"""The book's tooling: the table of contents, the execution cache's key, the Colab setup cell,
the student edition, the site check, the PDF, Colab emulation, robustness and full runs, and
the Sphinx extensions of the build (:mod:`booktools.sphinx`).

It works in a checkout of the repository (``pip install -e .``): :data:`ROOT` is the
checkout's root folder. Commands run as ``python -m booktools.NAME``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

"""Build the student edition of the book: every exercise, no solution.

The lecturer's edition is the normal build (``jupyter-book build .``): each exercise is
followed by its solution in a collapsed block. This script builds the same book with
``hide_solutions: true`` (sphinx-exercise drops every ``{solution}``;
``booktools.sphinx.student`` drops the code cells tagged ``solution`` that compute one) into
``_build/student/_build/html``. It reuses the chapters' executed outputs (the build's
execution cache, shared with the lecturer's edition and the notebook tests), so after one
build the second costs only the rendering.

    python -m booktools.build_student               # then open _build/student/_build/html
    python -m booktools.build_student -W -n --keep-going   # extra arguments go to jupyter-book

Exit status: that of ``jupyter-book build``.
"""

from __future__ import annotations

import subprocess
import sys

import yaml

from booktools import ROOT

OUT = ROOT / "_build" / "student"


def student_config(config: dict) -> dict:
    """The book's configuration with solutions hidden and the edition named on every page."""
    config = yaml.safe_load(yaml.safe_dump(config))  # a deep copy
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["hide_solutions"] = True
    config["title"] = f"{config.get('title', '')} (student edition)".strip()
    html = config.setdefault("html", {})
    html["extra_footer"] = (
        html.get("extra_footer", "") + " Student edition: the exercises without their solutions."
    ).strip()
    return config


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "_config_student.yml"
    path.write_text(yaml.safe_dump(student_config(config), sort_keys=False), encoding="utf-8")
    cmd = [
        "jupyter-book",
        "build",
        str(ROOT),
        "--config",
        str(path),
        "--path-output",
        str(OUT),
        *argv,
    ]
    print("student edition:", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

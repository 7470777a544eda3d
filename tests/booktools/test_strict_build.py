"""The README's `jupyter-book build .` fails loudly when a chapter fails to execute.

A one-page book with the project's own _config.yml and extensions (booktools.sphinx, installed
with the library), whose only code cell fails a claim check -- or runs past the cell timeout
(as chapters did on a busy machine) -- must make the plain build command (no -W) exit
non-zero.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter whose claim check fails

```{code-cell} ipython3
assert 1 + 1 == 3, "a claim that does not hold"
```
"""


SLOW_CELL = """import time
time.sleep(60)
"""


@pytest.mark.parametrize("failure", ["claim check", "cell timeout"])
def test_build_fails_on_a_chapter_that_fails(tmp_path, failure):
    book = tmp_path / "book"
    book.mkdir()
    config = (ROOT / "_config.yml").read_text()
    page = PAGE
    if failure == "cell timeout":
        assert "  timeout: 900\n" in config
        config = config.replace("  timeout: 900\n", "  timeout: 3\n")
        page = PAGE.replace('assert 1 + 1 == 3, "a claim that does not hold"\n', SLOW_CELL)
    (book / "_config.yml").write_text(config)
    shutil.copy(ROOT / "references.bib", book / "references.bib")
    (book / "src").mkdir()
    (book / "requirements.txt").write_text("\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    (book / "page.md").write_text(page)
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb), "build", str(book)], capture_output=True, text=True, timeout=600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    expected = "a claim that does not hold" if failure == "claim check" else "timed out"
    assert expected in out, out[-3000:]

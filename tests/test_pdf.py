"""scripts/make_pdf.py: pages printed by headless Chromium, joined in order, with every
chapter's title in the text; a missing chapter is reported."""
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
spec = importlib.util.spec_from_file_location("make_pdf", ROOT / "scripts" / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_pdf)


def test_toc_pages_follow_the_table_of_contents():
    pages = make_pdf.toc_pages()
    assert pages[0] == "book/intro" and "book/induction_heads" in pages
    assert pages.index("book/partitions") < pages.index("book/copying")
    assert len(pages) == len(set(pages)) >= 12


def test_pages_are_printed_joined_and_checked(tmp_path):
    pytest.importorskip("pypdf")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("no chromium on this machine (CI installs it for the browser check)")
    html = tmp_path / "html" / "book"
    html.mkdir(parents=True)
    for name, title in [("one", "Copying with transformers"), ("two", "Hidden progress")]:
        (html / f"{name}.html").write_text(
            f"<html><body><h1>{title}</h1><details><summary>Solution</summary>"
            f"<p>inside the dropdown of {name}</p></details></body></html>")
    pdf, titles = make_pdf.print_pages(tmp_path / "html", ["book/one", "book/two"], binary)
    assert titles == ["Copying with transformers", "Hidden progress"]
    assert make_pdf.missing_titles(pdf, titles) == []
    assert make_pdf.missing_titles(pdf, ["inside the dropdown of two"]) == []   # opened
    assert make_pdf.missing_titles(pdf, [*titles, "Chain of thought"]) == ["Chain of thought"]
    with pytest.raises(FileNotFoundError, match="three.html"):
        make_pdf.print_pages(tmp_path / "html", ["book/three"], binary)

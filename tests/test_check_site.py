"""scripts/check_site.py fails on a chapter that did not execute (no browser needed)."""
import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_site", ROOT / "scripts" / "check_site.py")
check_site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_site)


def _site(tmp_path, page_html):
    html = tmp_path / "html"
    for md in check_site.toc_chapters():
        page = html / md.relative_to(ROOT).with_suffix(".html")
        page.parent.mkdir(parents=True, exist_ok=True)
        n = check_site.expected_figures(md)
        page.write_text("".join(f'<img src="../_images/f{i}.png">' for i in range(n)))
    return html


def test_every_chapter_has_figure_cells():
    assert all(check_site.expected_figures(md) >= 1 for md in check_site.toc_chapters())


def test_a_clean_site_passes(tmp_path):
    assert check_site.execution_problems(_site(tmp_path, "")) == {}


def test_missing_outputs_tracebacks_and_error_reports_fail(tmp_path):
    html = _site(tmp_path, "")
    chapters = check_site.toc_chapters()
    first = html / chapters[0].relative_to(ROOT).with_suffix(".html")
    first.write_text("<p>no outputs: the chapter failed to execute</p>")
    second = html / chapters[1].relative_to(ROOT).with_suffix(".html")
    second.write_text(second.read_text() + '<div class="highlight-ipythontb">Traceback')
    report = html / "reports" / "book" / "x.err.log"
    report.parent.mkdir(parents=True)
    report.write_text("CellTimeoutError: A cell timed out while it was being executed\n")
    problems = check_site.execution_problems(html)
    assert "missing outputs" in " ".join(problems[first.relative_to(html).as_posix()])
    assert "execution error" in " ".join(problems[second.relative_to(html).as_posix()])
    assert "CellTimeoutError" in " ".join(problems["book/x.html"])
    shutil.rmtree(html)

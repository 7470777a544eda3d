"""booktools.check_site fails on a chapter that did not execute (no browser needed) and on
an explorer whose player does not respond to its controls (headless Chromium)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from booktools import check_site
from booktools.toc import chapter_sources

ROOT = Path(__file__).resolve().parents[2]


def _site(tmp_path, page_html):
    html = tmp_path / "html"
    for md in chapter_sources():
        page = html / md.relative_to(ROOT).with_suffix(".html")
        page.parent.mkdir(parents=True, exist_ok=True)
        n = check_site.expected_figures(md) - check_site.expected_explorers(md)
        page.write_text(
            "".join(f'<img src="../_images/f{i}.png">' for i in range(n))
            + '<div class="sqx-explorer"></div>' * check_site.expected_explorers(md)
        )
    return html


def test_every_chapter_has_figure_cells():
    assert all(check_site.expected_figures(md) >= 1 for md in chapter_sources())


def test_a_clean_site_passes(tmp_path):
    assert check_site.execution_problems(_site(tmp_path, "")) == {}


def test_every_chapter_has_an_explorer_and_a_page_without_its_player_fails(tmp_path):
    chapters = chapter_sources()
    assert all(check_site.expected_explorers(md) >= 1 for md in chapters)
    html = _site(tmp_path, "")
    page = html / chapters[0].relative_to(ROOT).with_suffix(".html")
    # the explorer shown as its static PNG (an image file) instead of the player
    page.write_text(
        page.read_text().replace(
            '<div class="sqx-explorer"></div>', '<img src="../_images/explorer.png">'
        )
    )
    problems = check_site.execution_problems(html)
    assert list(problems) == [page.relative_to(html).as_posix()]
    assert (
        "0 explorer player(s) for 1 explorer cell(s)"
        in problems[page.relative_to(html).as_posix()][0]
    )


def test_hidden_explorer_cells_are_not_expected_on_the_page(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "```{code-cell} ipython3\n:tags: [remove-cell]\nexplorer(f, k=1)\n```\n"
        "```{code-cell} ipython3\n---\ntags: [remove-output]\n---\nexplorer(f)\n```\n"
        "```{code-cell} ipython3\n---\nmystnb:\n  image:\n    alt: a b c d e\n---\n"
        "explorer(\n    f, k=(1, 3))\n```\n"
    )
    assert check_site.expected_explorers(md) == 1


def test_missing_outputs_tracebacks_and_error_reports_fail(tmp_path):
    html = _site(tmp_path, "")
    chapters = chapter_sources()
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


# --------------------------------------------------------------------------- explorers in Chromium


def _explorer_html():
    """A real explorer player (seqtheory.book.widgets) of two controls, as the book embeds it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqtheory.book.widgets import explorer

    def draw(k, name):
        fig = plt.figure(figsize=(1.2, 0.8))
        fig.text(0.1, 0.4, f"{name}: k={k}")
        return fig

    return explorer(
        draw, alt="a test explorer of a label and a number", k=(1, 4), name=["first", "second"]
    ).static_player()


def _page(body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title>'
        f"</head><body><article><h1>t</h1>{body}</article></body></html>"
    )


@pytest.mark.skipif(check_site.find_chromium() is None, reason="needs chromium")
def test_explorers_must_respond_to_their_controls_in_chromium(tmp_path):
    player = _explorer_html()
    no_script = re.sub(r"<script>.*?</script>", "", player, flags=re.S)  # controls do nothing
    data = re.search(r'class="sqx-data">(.*?)</script>', player, re.S).group(1)
    frames = json.loads(data)["frames"]
    lost = json.dumps({k: v for k, v in frames.items() if k != "3,1"}, separators=(",", ":"))
    throws = player.replace(json.dumps(frames, separators=(",", ":")), lost)  # one view lost
    assert throws != player
    pages = {"works.html": player, "no_script.html": no_script, "throws.html": throws}
    for name, body in pages.items():
        (tmp_path / name).write_text(_page(body), encoding="utf-8")
    _, failures, rows, _, _ = check_site.browse(tmp_path, sorted(pages), check_site.find_chromium())
    assert "works.html" not in failures, failures.get("works.html")
    assert {r[0]: r[7] for r in rows} == {name: 1 for name in pages}  # one explorer each
    assert any('moving "k" never changes the figure' in p for p in failures["no_script.html"])
    assert any("JavaScript" in p and "no precomputed view" in p for p in failures["throws.html"])


@pytest.mark.skipif(check_site.find_chromium() is None, reason="needs chromium")
def test_accessibility_violations_in_the_books_content_fail_and_the_themes_are_reported(
    tmp_path, capsys
):
    """axe-core runs on every page: an unnamed slider and a link at 3:1 contrast in the
    article fail it; the same slider in the theme's header bar is only reported."""
    clean = '<p>Plain text with <a href="clean.html">a link</a>.</p>'
    slider = '<input type="range" min="0" max="3">'
    faint = '<p style="background:#fff"><a href="clean.html" style="color:#999">faint</a></p>'
    theme = f'<div class="bd-header">{slider}</div>'
    pages = {"clean.html": clean, "slider.html": slider, "faint.html": faint}
    for name, body in pages.items():
        (tmp_path / name).write_text(_page(body), encoding="utf-8")
    (tmp_path / "theme.html").write_text(_page(clean).replace("<article>", theme + "<article>"))
    _, failures, _, _, _ = check_site.browse(
        tmp_path, [*sorted(pages), "theme.html"], check_site.find_chromium()
    )
    assert "clean.html" not in failures and "theme.html" not in failures, failures
    assert any("critical, label" in p for p in failures["slider.html"])
    assert any("serious, color-contrast" in p for p in failures["faint.html"])
    assert "theme.html: critical label" in capsys.readouterr().out


@pytest.mark.skipif(check_site.find_chromium() is None, reason="needs chromium")
def test_a_table_or_output_wider_than_the_column_and_a_raw_web_address_fail(tmp_path):
    long = "x" * 400
    pages = {
        "clean.html": '<p>See <a href="https://example.org/">the example</a>, or run '
        "<code>curl https://example.org/</code>.</p><table><tr><td>short</td></tr></table>",
        "wide.html": '<div class="pst-scrollable-table-container" style="overflow-x:auto">'
        f"<table><tr><td>{long}</td></tr></table></div>",
        "url.html": "<p>Read more at https://example.org/more.</p>",
        "output.html": '<div class="cell"><div class="cell_output"><pre style="overflow:auto">'
        f"{long}</pre></div></div>",
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(_page(body), encoding="utf-8")
    _, failures, _, _, _ = check_site.browse(tmp_path, sorted(pages), check_site.find_chromium())
    assert "clean.html" not in failures, failures.get("clean.html")
    assert any("wider than the text column" in p for p in failures["wide.html"])
    assert any("cut off): pre: xxx" in p for p in failures["output.html"])
    assert any(
        "raw web address in the text: https://example.org/more" in p for p in failures["url.html"]
    )


def test_axe_problems_split_the_books_violations_from_the_themes():
    node = {"target": "#x", "html": "<input>", "theme": False}
    violations = [
        {
            "id": "label",
            "impact": "critical",
            "help": "Form elements must have labels",
            "nodes": [node, dict(node, theme=True)],
        },
        {"id": "region", "impact": "moderate", "help": "Content in landmarks", "nodes": [node]},
    ]
    problems, theme = check_site.axe_problems(violations)
    assert problems == [
        "accessibility (critical, label): Form elements must have labels: #x (<input>)"
    ]
    assert theme == ["critical label x1: #x"]


def _reader(**kw):
    r = {
        "core_words": 1000,
        "open_words": 2000,
        "first_figure_screens": 0.5,
        "images": [[0.95, "fig"]],
        "code_lines": [3, 5, 8],
        "myst": [],
        "pipe_tables": [],
        "bars": ["training: 100%|██████████| 500/500"],
        "explorers": 1,
        "text_static": [],
    }
    r.update(kw)
    return {"reader": r}


def test_a_readable_chapter_passes_the_reader_checks():
    rel = sorted(check_site.CHAPTER_PAGES)[0]
    assert check_site.reader_problems(rel, _reader()) == []
    row = check_site.reader_row(rel, _reader())
    assert row["median_code_lines"] == 5 and row["smallest_image_ratio"] == 0.95


@pytest.mark.parametrize(
    "change, message",
    [
        ({"myst": ["{glue:text}`x`"]}, "literal MyST"),
        ({"pipe_tables": ["| a | b |"]}, "raw pipes"),
        ({"core_words": 3200}, "core path of 3200 words"),
        ({"first_figure_screens": 2.4}, "first figure 2.4 screens"),
        ({"first_figure_screens": None}, "first figure missing"),
        ({"images": [[0.95, "a"], [0.55, "wide"]]}, "image shown at 55%"),
        ({"text_static": ["On this site the figure is a static picture."]}, "static"),
        ({"bars": ["k=2:   1%|▏         | 199/15000"]}, "progress bar left at 1%"),
        ({"code_lines": [3, 9, 12]}, "median of 9 lines"),
    ],
)
def test_each_reader_check_can_fail(change, message):
    rel = "book/induction_heads.html"
    problems = check_site.reader_problems(rel, _reader(**change))
    assert len(problems) == 1 and message in problems[0], problems


def test_reader_budgets_and_notes():
    # meet the model's budget is 2,000 words; a bar with a final note is fine at any count
    assert check_site.reader_problems("book/meet_the_model.html", _reader(core_words=2100))
    assert not check_site.reader_problems("book/induction_heads.html", _reader(core_words=2100))
    ok = _reader(bars=["k=2: stopped at 200 of 15,000: its stop rule (stop_when) was met"])
    assert check_site.reader_problems("book/induction_heads.html", ok) == []
    # pages that are not chapters are held only to the MyST and table checks
    assert check_site.reader_problems("book/notation.html", _reader(core_words=9000)) == []


def test_deck_problems_name_what_is_wrong():
    good = {
        "ready": True,
        "count": 9,
        "index": 0,
        "next": 1,
        "back": 0,
        "shown": 1,
        "titles": ["Demo", "Q", "Setup", "Theory", "Fig", "Fig 2", "Ko", "Takeaways", "Ex"],
        "notes": [0, 40, 40, 40, 40, 40, 40, 40, 40],
        "exercises": [False] * 8 + [True],
        "images": [
            {"slide": 4, "src": "demo_files/fig-a.svg", "natural": 540, "shown": 900},
            {"slide": 5, "src": "demo_files/fig-b.png", "natural": 1800, "shown": 900},
        ],
    }
    notes = {"opened": True, "want": "Point at the plateau", "got": "Point at the plateau"}
    assert check_site.deck_problems(good, notes) == []
    assert "did not start" in check_site.deck_problems({"ready": False})[0]
    stuck = dict(good, next=0, back=0)
    assert any("arrow keys" in p for p in check_site.deck_problems(stuck))
    all_shown = dict(good, shown=9)
    assert any("shows 9 slides at once" in p for p in check_site.deck_problems(all_shown))
    silent = dict(good, notes=[0, 40, 0, 40, 40, 40, 40, 40, 40])
    assert any("without speaker notes: [3]" in p for p in check_site.deck_problems(silent))
    drill = dict(good, exercises=[False] * 5 + [True] * 4)
    assert any("4 of 9 slides are exercise" in p for p in check_site.deck_problems(drill))
    soft = dict(good, images=[dict(good["images"][1], natural=1000)])
    assert any("1000 px wide, shown at 900" in p for p in check_site.deck_problems(soft))
    cut = dict(good, clipped=[{"slide": 6, "what": "mjx-container: H = h(p)"}])
    assert any("slide 7: cut off" in p for p in check_site.deck_problems(cut))
    mute = dict(notes, got="")
    assert any("speaker view" in p for p in check_site.deck_problems(good, mute))
    short = dict(good, count=3, titles=["Demo", "Setup", "Ex"])
    problems = check_site.deck_problems(short)
    assert any("has 3 slides" in p for p in problems)
    assert any("'Takeaways'" in p for p in problems)


def _figure_png(fontsize: float, label: str) -> bytes:
    """A small matplotlib figure as the book's kernels render it (text size recorded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqtheory.book.plotting import png_with_text_size

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=12)
    ax.set_title(label, fontsize=12)
    ax.text(0.5, 0.2, "note", fontsize=fontsize)
    data = png_with_text_size(fig)
    plt.close(fig)
    return data


def test_the_smallest_text_of_a_figure_is_recorded_in_its_png():
    """5-point text at 100 dpi is 6.9 px; a figure whose text is all 12 points records 16.7."""
    small = check_site.png_texts(_figure_png(5, "a"))[check_site.TEXT_SIZE_KEY]
    large = check_site.png_texts(_figure_png(12, "b"))[check_site.TEXT_SIZE_KEY]
    assert float(small) == pytest.approx(5 * 100 / 72, abs=0.01)
    assert float(large) == pytest.approx(12 * 100 / 72, abs=0.01)
    assert check_site.png_texts(b"not a png") == {}


@pytest.mark.skipif(check_site.find_chromium() is None, reason="needs chromium")
def test_a_figure_shown_twice_and_figure_text_below_8_px_fail(tmp_path):
    """Two different figures with 12-point text pass; the same image twice on a page fails,
    5-point text (6.9 px) fails, and 12-point text (16.7 px) shown at a third of its width
    (5.6 px) fails."""
    (tmp_path / "a.png").write_bytes(_figure_png(12, "a"))
    third = int.from_bytes((tmp_path / "a.png").read_bytes()[16:20], "big") / 3  # IHDR width
    (tmp_path / "b.png").write_bytes(_figure_png(12, "b"))
    (tmp_path / "small.png").write_bytes(_figure_png(5, "c"))
    img = '<img src="{}" alt="{}" style="{}">'
    pages = {
        "clean.html": img.format("a.png", "figure a", "") + img.format("b.png", "figure b", ""),
        "twice.html": img.format("a.png", "figure a", "") + img.format("a.png", "figure a", ""),
        "small.html": img.format("small.png", "figure c", ""),
        "shrunk.html": img.format("a.png", "figure a", f"width:{third}px"),
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(_page(body), encoding="utf-8")
    _, failures, _, _, _ = check_site.browse(tmp_path, sorted(pages), check_site.find_chromium())
    assert "clean.html" not in failures, failures.get("clean.html")
    assert any("figure shown twice on the page: 'figure a'" in p for p in failures["twice.html"])
    assert any("figure text 6.9 px as shown" in p for p in failures["small.html"])
    assert any("figure text 5.6 px as shown" in p for p in failures["shrunk.html"])

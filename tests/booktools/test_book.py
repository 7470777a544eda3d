"""The book's structure: every chapter parses, is paired with an output-free .ipynb in sync,
starts with the Colab setup cell, checks its claims, and cites only known references."""

import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml

from booktools import chapters
from booktools.setup_cell import cell_source
from booktools.toc import chapter_notebooks, toc_files

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
PAGES = toc_files(ROOT)
CHAPTERS = [p for p in PAGES if "```{code-cell}" in p.read_text(encoding="utf-8")]
REPO_URL = CONFIG["repository"]["url"]
SETUP_CELL = cell_source()


def ids(paths):
    return [p.stem for p in paths]


def test_toc_pages_exist_and_there_are_chapters():
    missing = [str(p) for p in PAGES if not p.exists()]
    assert not missing, f"_toc.yml lists missing files: {missing}"
    assert CHAPTERS, "no executable chapter found in _toc.yml"
    assert {p.with_suffix(".ipynb") for p in CHAPTERS} == set(chapter_notebooks(ROOT))


def test_no_orphan_notebooks():
    listed = {p.with_suffix(".ipynb") for p in CHAPTERS}
    orphans = [
        str(p)
        for p in (ROOT / "book").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts and p not in listed
    ]
    assert not orphans, f"notebooks not paired with a chapter in _toc.yml: {orphans}"


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_header_parses_to_code_cells(md):
    text = md.read_text(encoding="utf-8")
    header = yaml.safe_load(text.split("---", 2)[1])
    rep = header["jupytext"]["text_representation"]
    assert rep["extension"] == ".md" and rep["format_name"] == "myst"
    assert header["kernelspec"]["name"] == "python3"
    assert "ipynb" in header["jupytext"]["formats"]
    nb = jupytext.read(md)
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    assert n_code >= 1, f"{md.name} parses to no code cells: check its front matter"
    assert n_code == text.count("```{code-cell}")


def _cells(nb):
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", []))) for c in nb.cells]


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_paired_notebook_in_sync_and_output_free(md):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run jupytext --sync {md}"
    raw = json.loads(ipynb.read_text(encoding="utf-8"))
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, (
                f"{ipynb.name} has stored outputs: clear them (jupytext --sync keeps none)"
            )
    assert _cells(jupytext.read(md)) == _cells(jupytext.read(ipynb)), (
        f"{md.name} and {ipynb.name} differ: run jupytext --sync {md}"
    )


def _code_cells(md):
    return [c for c in jupytext.read(md).cells if c.cell_type == "code"]


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_first_cell_is_the_colab_setup_cell(md):
    first = _code_cells(md)[0]
    assert "remove-cell" in first.metadata.get("tags", []), "setup cell must be hidden"
    assert "google.colab" in first.source
    # the cell is the one booktools.setup_cell writes from _config.yml: the library comes
    # from the repository's URL at the branch that the site's Colab links open (one ref)
    assert first.source == SETUP_CELL, (
        f"{md.name}: setup cell out of date: run python -m booktools.setup_cell --write"
    )
    assert f'REPO, REF = "{REPO_URL}", "{CONFIG["repository"]["branch"]}"' in first.source
    installs = re.findall(r'"([^"]+)"', first.source)
    assert not any(re.match(r"(torch|numpy)\b", s) for s in installs), (
        "the setup cell must never (re)install torch or numpy"
    )
    # the Colab emulation in .ci/run points the cell at the local checkout through this
    assert "SEQTHEORY_INSTALL_FROM" in first.source


def test_every_chapter_has_the_same_setup_cell():
    cells = {md.name: _code_cells(md)[0].source for md in CHAPTERS}
    assert len(set(cells.values())) == 1, "setup cells differ: " + ", ".join(sorted(cells))


HIDDEN_TAGS = ("remove-cell", "remove-input")
MAX_HIDDEN_LINES = 150  # all chapters together, the Colab setup cells aside
MAX_HIDDEN_CELL = 5


def _hidden_cells(md):
    """The code cells a reader of the site does not see, the first (Colab setup) cell aside."""
    return [
        c for c in _code_cells(md)[1:] if any(t in c.metadata.get("tags", []) for t in HIDDEN_TAGS)
    ]


def _lines(cell) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip())


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_checks_its_claims_and_has_exercises(md):
    # claims are checked by the one helper, in short hidden cells, never by bare calls
    verified = [
        c
        for c in _hidden_cells(md)
        if re.search(r"\bverify\(chapter\.claims\(", re.sub(r"\s+", "", c.source))
    ]
    assert verified, f"{md.name}: no hidden cell verifies its claims (verify(chapter.claims(...)))"
    long = [
        (c.source.split("\n")[0], _lines(c))
        for c in _hidden_cells(md)
        if _lines(c) > MAX_HIDDEN_CELL
    ]
    assert not long, f"{md.name}: hidden cells longer than {MAX_HIDDEN_CELL} lines: {long}"
    bare = [
        c.source.split("\n")[0]
        for c in _code_cells(md)
        if re.search(r"(^|[^.\w])(check|glue)\(|^\s*assert ", c.source, re.M)
    ]
    assert not bare, (
        f"{md.name}: cells calling check(, glue( or assert; claims go through "
        f"verify(chapter.claims(...)): {bare}"
    )
    text = md.read_text(encoding="utf-8")
    for heading in ("## Exercises", "## Takeaways", "## References"):
        assert heading in text, f"{md.name} lacks a '{heading}' section"
    # numbered exercises (sphinx-exercise), each with a collapsed solution right after it
    labels = re.findall(r"^:{3,}\{exercise\}.*\n:label: (\S+)$", text, re.M)
    solved = re.findall(r"^:{3,}\{solution\} (\S+)\n:class: dropdown$", text, re.M)
    assert labels, f"{md.name}: exercises must be {{exercise}} directives with a :label:"
    assert labels == solved, f"{md.name}: one collapsed solution per exercise, in order"
    stem = md.stem.replace("_", "-")
    assert sorted(labels, key=lambda x: int(x.rsplit("-", 1)[1])) == [
        f"ex-{stem}-{n}" for n in range(1, len(labels) + 1)
    ], labels


def test_hidden_code_stays_small():
    lines = {md.stem: sum(_lines(c) for c in _hidden_cells(md)) for md in CHAPTERS}
    assert sum(lines.values()) <= MAX_HIDDEN_LINES, (
        f"{sum(lines.values())} hidden code lines in the chapters (at most {MAX_HIDDEN_LINES}): "
        f"{lines}"
    )


def test_every_chapter_has_a_claims_module():
    from seqtheory import chapters

    assert {md.stem for md in CHAPTERS} == set(chapters.names())


def test_every_citation_is_in_references_bib():
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    cited = set()
    for page in PAGES:
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text(encoding="utf-8")):
            cited |= {k.strip() for k in group.split(",")}
    assert cited, "the book cites nothing"
    assert cited <= keys, f"unknown citation keys: {sorted(cited - keys)}"


def test_every_reference_links_to_its_paper():
    """The Colab notebooks turn each citation into a link to the paper: every entry has an
    https ``url``."""
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    entries = re.split(r"\n(?=@)", bib.strip())
    no_url = [
        re.match(r"@\w+\{([^,]+),", e).group(1)
        for e in entries
        if not re.search(r"^\s*url\s*=\s*\{https://[^}\s]+\}", e, re.M)
    ]
    assert not no_url, f"references.bib entries without an https url: {no_url}"


def test_config_follows_the_conventions():
    assert CONFIG["only_build_toc_files"] is True
    for pattern in (
        "_build",
        ".*",
        "**/.*",
        "src",
        "tests",
        "benchmarks",
        "book/*.ipynb",
        "book/**/*.ipynb",
    ):
        assert pattern in CONFIG["exclude_patterns"], pattern
    assert CONFIG["repository"]["branch"] == "main"
    # the Colab links open the notebooks generated from the build
    # (booktools.sphinx.colab_notebooks), not the MyST source notebooks that the theme's
    # launch button would open
    assert "colab_url" not in CONFIG.get("launch_buttons", {})
    assert "booktools.sphinx.colab_notebooks" in CONFIG["sphinx"]["extra_extensions"]
    assert CONFIG["sphinx"]["config"]["colab_branch"] not in ("", CONFIG["repository"]["branch"])
    assert CONFIG["html"]["baseurl"].startswith("https://")
    ex = CONFIG["execute"]
    assert ex["execute_notebooks"] in ("force", "cache") and ex["allow_errors"] is False
    assert ex["timeout"] > 0
    if ex["execute_notebooks"] == "cache":  # the cache must be keyed on the library
        assert "booktools.sphinx.bookcache" in CONFIG["sphinx"]["extra_extensions"]


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_every_figure_has_alt_text(md):
    """Screen readers get a description of every figure, explorer and animation."""
    missing = []
    for n, cell in enumerate(_code_cells(md)):
        src = cell.source
        if re.search(r"\banimate(_snapshots)?\(", src) and "import" not in src.split("\n")[0]:
            if "alt=" not in src:
                missing.append(f"cell {n}: animation without alt=")
        elif re.search(r"plt\.show\(\)|^explorer\(|^\s+explorer\(", src, re.M):
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            if len(alt.split()) < 5:
                missing.append(f"cell {n}: figure without mystnb.image.alt")
    assert not missing, f"{md.name}: " + "; ".join(missing)


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_every_figure_is_captioned_and_named(md):
    """One figure convention: every figure cell (plt.show) is a numbered MyST figure with a
    caption and a name that the text can reference ({numref}`fig-...`)."""
    missing, names = [], []
    for n, cell in enumerate(_code_cells(md)):
        if not re.search(r"plt\.show\(\)", cell.source):
            continue
        fig = cell.metadata.get("mystnb", {}).get("figure", {})
        if len(str(fig.get("caption", "")).split()) < 5:
            missing.append(f"cell {n}: no mystnb.figure.caption")
        name = str(fig.get("name", ""))
        if not name.startswith("fig-"):
            missing.append(f"cell {n}: no mystnb.figure.name 'fig-...'")
        names.append(name)
        after = cell.source.rpartition("plt.show()")[2]
        if re.search(r"markdown_table\(|display\(", after):
            # myst-nb would wrap the table in the figure too: a duplicate target
            missing.append(f"cell {n}: a table after the figure: move it to the next cell")
    assert not missing, f"{md.name}: " + "; ".join(missing)
    assert len(names) == len(set(names)), f"{md.name}: duplicate figure names {names}"


# --------------------------------------------------------------------------- the reader's path
CORE_BUDGET = {"meet_the_model": 2000}


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_opens_with_a_header_box_and_a_summary(md):
    """The title, then the header box (prerequisites that exist, three objectives, why it
    matters for transformers), then the question-and-result box with the key figure."""
    text = md.read_text(encoding="utf-8")
    body = text.split("\n# ", 1)[1]
    head = re.match(
        r"[^\n]*\n\n:::\{chapter-header\}\n:prerequisites: ([^\n]+)\n(.*?)\n:::\n", body, re.S
    )
    assert head, f"{md.name}: the title must be followed by a {{chapter-header}} box"
    pre = head.group(1).split()
    assert pre == ["none"] or all((ROOT / "book" / f"{p}.md").is_file() for p in pre), pre
    learn = re.search(r"\*\*You will learn\*\*\n((?:- .*\n(?:  .*\n)*)+)", head.group(2) + "\n")
    assert learn and learn.group(1).count("\n- ") + 1 == 3, f"{md.name}: three objectives"
    assert "**Why it matters for transformers.**" in head.group(2), md.name
    after = body[head.end() :]
    assert re.match(r"\n*:{3,}\{admonition\} Question and result\n", after), (
        f"{md.name}: the header box must be followed by the 'Question and result' box"
    )
    assert "```{glue:figure} key_figure\n:alt: " in text, f"{md.name}: a key figure with alt"
    assert re.search(r"\bkey_figure\(", "".join(c.source for c in _code_cells(md))), md.name


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_ends_with_short_takeaways_and_where_next(md):
    text = md.read_text(encoding="utf-8")
    take = text.split("## Takeaways\n", 1)[1].split("\n## ", 1)[0]
    take = re.sub(r"\n:{3,}\{dropdown\}.*?\n:{3,}\n", "\n", take, flags=re.S)  # folded notes
    bullets = re.findall(r"^- (.*(?:\n  .*)*)", take, re.M)
    assert 1 <= len(bullets) <= 5, f"{md.name}: {len(bullets)} takeaways (at most 5)"
    long = [b[:50] for b in bullets if len(re.findall(r"\S+", b)) > 30]
    assert not long, f"{md.name}: takeaways over 30 words: {long}"
    assert "\n## Where next\n" in text, f"{md.name}: no 'Where next' section"
    order = [text.index(h) for h in ("## Takeaways", "## Where next", "## References")]
    assert order == sorted(order), f"{md.name}: Takeaways, Where next, References in order"


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_core_path_fits_its_budget(md):
    # the browser check measures the same on the built page (booktools.check_site)
    words = chapters.core_words(md.read_text(encoding="utf-8"))
    budget = CORE_BUDGET.get(md.stem, 3000)
    assert words <= budget, f"{md.name}: core path of {words} words (budget {budget})"


@pytest.mark.parametrize("md", CHAPTERS, ids=ids(CHAPTERS))
def test_explore_does_not_call_the_player_static(md):
    explore = md.read_text(encoding="utf-8").split("## Explore", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"static (picture|image|figure)", explore), md.name


def test_glossary_terms_used_by_chapters_exist():
    glossary = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    terms = {
        t.lower()
        for t in re.findall(r"^(\S[^\n]*)\n  \S", glossary.split("```{glossary}", 1)[1], re.M)
    }
    assert len(terms) >= 40, len(terms)
    used = set()
    for page in PAGES:
        for m in re.findall(r"\{term\}`([^`]+)`", page.read_text(encoding="utf-8")):
            used.add(" ".join((m.split("<")[1].rstrip(">") if "<" in m else m).split()).lower())
    assert used and used <= terms, sorted(used - terms)


def test_a_reader_notebook_pins_the_library_to_its_commit(tmp_path):
    """The set-up cell of a reader notebook installs the library at the build's tag or commit
    (a notebook saved in week 1 keeps week 1's library); a cell without the REF line is
    refused."""
    import subprocess

    from booktools import setup_cell

    cell = cell_source()
    assert setup_cell.pinned_ref(cell) == CONFIG["repository"]["branch"]
    pinned = setup_cell.pin(cell, "0123abc")
    assert setup_cell.pinned_ref(pinned) == "0123abc"
    assert (
        pinned.replace('"0123abc"' + setup_cell.PINNED, f'"{CONFIG["repository"]["branch"]}"')
        == cell
    )
    with pytest.raises(ValueError, match="REPO, REF"):
        setup_cell.pin("print(1)", "v1")
    assert setup_cell.build_ref(tmp_path) is None  # not a git checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert setup_cell.build_ref(tmp_path) == sha.strip()
    subprocess.run([*git, "tag", "course-2027"], check=True)
    assert setup_cell.build_ref(tmp_path) == "course-2027"

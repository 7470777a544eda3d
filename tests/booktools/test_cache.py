"""The execution cache keyed per chapter (booktools.cache) and the build's executor
(booktools.execute): a change re-executes the chapters that use what changed, and only them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from booktools import cache, execute
from booktools.sphinx.bookcache import keyed_front_matter
from booktools.toc import chapter_names, chapter_sources

ROOT = Path(__file__).resolve().parents[2]


def _rel(paths, root=ROOT):
    return {p.relative_to(root / "src" / "seqtheory").as_posix() for p in paths[:-1]}


def test_a_chapter_uses_its_modules_its_data_and_its_records():
    uses = _rel(cache.dependencies(ROOT / "book" / "induction_heads.md"))
    for want in (
        "__init__.py",
        "core/training.py",
        "chapters/__init__.py",
        "chapters/induction_heads.py",
        "incontext.py",
        "sources/markov.py",
        "data/icl_paper.json",
        "chapters/measured/induction_heads.json",
        "chapters/measured/induction_heads.labs.json",
    ):
        assert want in uses, want
    for other in ("parity.py", "chapters/copying.py", "data/copying_sweeps.json"):
        assert other not in uses, other
    assert cache.dependencies(ROOT / "book" / "copying.md")[-1] == ROOT / "requirements.txt"


def test_imports_are_resolved_relative_and_inside_functions():
    names = cache.imported_names(
        "from . import a\nfrom ..core import models\ndef f():\n    import seqtheory.x.y\n",
        "seqtheory.chapters.demo",
    )
    assert {"seqtheory.chapters", "seqtheory.chapters.a", "seqtheory.core.models"} <= names
    assert "seqtheory.x.y" in names
    assert cache.imported_names("from .book import claims", "seqtheory", is_package=True) >= {
        "seqtheory.book",
        "seqtheory.book.claims",
    }


@pytest.fixture
def book_copy(tmp_path):
    """The book's sources in a temporary folder, every chapter in its cache as executed."""
    for name in ("_toc.yml", "_config.yml", "requirements.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for md in chapter_sources(tmp_path):
        cache.store(cache.read_chapter(md, tmp_path), md, 1.0, tmp_path)
    assert execute.stale(tmp_path) == []
    return tmp_path


def _stale_after(root: Path, relative: str) -> set[str]:
    """The chapters an edit of one file makes stale (then cached again, as a build would)."""
    path = root / relative
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n# an edit\n" if path.suffix == ".py" else "\n")
    stale = execute.stale(root)
    for md in stale:
        cache.store(cache.read_chapter(md, root), md, 1.0, root)
    return {p.stem for p in stale}


def test_editing_one_topic_module_reexecutes_exactly_the_chapters_importing_it(book_copy):
    # parity.py is the topic module of the two Part II chapters on sparse parity
    assert _stale_after(book_copy, "src/seqtheory/parity.py") == {
        "hidden_progress",
        "width_and_luck",
    }


def test_a_chapter_module_its_data_and_the_tooling_reexecute_what_uses_them(book_copy):
    assert _stale_after(book_copy, "src/seqtheory/chapters/copying.py") == {"copying"}
    assert _stale_after(book_copy, "src/seqtheory/data/tokenization_race.json") == {"tokenization"}
    assert _stale_after(book_copy, "src/seqtheory/chapters/measured/partitions.json") == {
        "partitions"
    }
    assert _stale_after(book_copy, "src/booktools/toc.py") == set()


def test_the_engine_and_the_requirements_reexecute_every_chapter(book_copy):
    assert _stale_after(book_copy, "src/seqtheory/core/training.py") == set(
        chapter_names(book_copy)
    )


def test_a_chapter_whose_code_changed_is_stale(book_copy):
    md = book_copy / "book" / "partitions.md"
    md.write_text(md.read_text(encoding="utf-8").replace("c_anim = 16", "c_anim = 8"))
    assert {p.stem for p in execute.stale(book_copy)} == {"partitions"}


def test_the_builds_keyed_front_matter_hashes_as_the_cache_does():
    """What the build's source-read hook gives myst-nb matches what the executors store."""
    from jupyter_cache.cache.main import JupyterCacheBase
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    md = ROOT / "book" / "meet_the_model.md"
    text = keyed_front_matter(md.read_text(encoding="utf-8"), cache.fingerprint(md))
    as_built = read_myst_markdown_notebook(text, config=MdParserConfig(), path=str(md))
    hashed = JupyterCacheBase.create_hashed_notebook
    _, built_key = hashed(None, as_built)
    _, stored_key = hashed(None, cache.read_chapter(md))
    assert built_key == stored_key
    _, bare_key = hashed(None, read_myst_markdown_notebook(md.read_text(), MdParserConfig()))
    assert bare_key != stored_key  # the fingerprint is part of the hash
    assert keyed_front_matter("# no front matter\n", "x") == "# no front matter\n"


def test_execution_log_counts_runs_per_chapter_and_size(tmp_path):
    cache.log_execution(tmp_path, "copying", "pytest", {})
    cache.log_execution(tmp_path, "copying", "colab student/copying", {"SEQTHEORY_SMOKE": "2"})
    cache.log_execution(tmp_path, "copying", "build", {"FULL": "1"})
    assert cache.execution_counts(tmp_path) == {
        ("copying", "cpu"): ["pytest"],
        ("copying", "smoke"): ["colab student/copying"],
        ("copying", "full"): ["build"],
    }


def test_jobs_times_threads_never_exceed_the_cores():
    assert execute.plan(None, 10, cores=2) == (2, 1)
    assert execute.plan(1, 10, cores=2) == (1, 2)
    assert execute.plan(None, 1, cores=16) == (1, 16)
    assert execute.plan(8, 3, cores=4) == (3, 1)
    for jobs in (None, 1, 2, 3, 5):
        for tasks in (1, 2, 7):
            j, t = execute.plan(jobs, tasks, cores=4)
            assert j * t <= 4

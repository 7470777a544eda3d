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


@pytest.fixture(scope="module")
def book_copy(tmp_path_factory):
    """The book's sources in a temporary folder, every chapter in its cache as executed
    (each test puts back what it edits)."""
    tmp_path = tmp_path_factory.mktemp("book")
    for name in ("_toc.yml", "_config.yml", "requirements.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for md in chapter_sources(tmp_path):
        cache.store(cache.read_chapter(md, tmp_path), md, 1.0, tmp_path)
    assert execute.stale(tmp_path) == []
    return tmp_path


def _stale_after(root: Path, relative: str) -> set[str]:
    """The chapters an edit of one file makes stale (the edit is then undone)."""
    path = root / relative
    before = path.read_bytes()
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n# an edit\n" if path.suffix == ".py" else "\n")
    try:
        return {p.stem for p in execute.stale(root)}
    finally:
        path.write_bytes(before)
        assert execute.stale(root) == []  # the records of the code as it was match again


def test_editing_one_topic_module_reexecutes_exactly_the_chapters_importing_it(book_copy):
    # parity.py is the topic module of the two Part II chapters on sparse parity, and
    # chain_of_thought.py imports its check of a support (parity._check_support)
    assert _stale_after(book_copy, "src/seqtheory/parity.py") == {
        "chain_of_thought",
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
    every = set(chapter_names(book_copy))
    assert _stale_after(book_copy, "src/seqtheory/core/training.py") == every
    assert _stale_after(book_copy, "requirements.txt") == every


def test_the_run_size_seed_and_threads_are_part_of_the_key(monkeypatch):
    md = ROOT / "book" / "meet_the_model.md"
    default = cache.fingerprint(md)
    assert cache.fingerprint(md, env={"SEQTHEORY_SEED": "0", "SEQTHEORY_NUM_THREADS": "1"}) == (
        cache.fingerprint(md, env={})
    )
    for env in ({"FULL": "1"}, {"SEQTHEORY_SEED": "3"}, {"SEQTHEORY_NUM_THREADS": "2"}):
        assert cache.fingerprint(md, env=env) != cache.fingerprint(md, env={}), env
    monkeypatch.setenv("FULL", "1")  # a FULL=1 build does not reuse the CPU-size run
    assert cache.fingerprint(md) != default


def test_files_a_run_does_not_read_are_not_in_the_key(book_copy):
    measured = book_copy / "src" / "seqtheory" / "chapters" / "measured"
    (measured / "copying.lock").write_text("")  # robustness's lock: not committed
    (measured / "copying.threads2.json").write_text("{}")  # the two-thread record
    try:
        assert execute.stale(book_copy) == []
    finally:
        (measured / "copying.lock").unlink()
        (measured / "copying.threads2.json").unlink()


def test_a_chapter_is_stored_under_the_key_it_was_read_with(tmp_path):
    md = ROOT / "book" / "meet_the_model.md"
    nb = cache.read_chapter(md, ROOT, key="as-it-started")
    assert nb.metadata.kernelspec[cache.KEY] == "as-it-started"
    nb.metadata.kernelspec.pop(cache.KEY)
    with pytest.raises(ValueError, match="read_chapter"):
        cache.store(nb, md, 1.0, tmp_path)


def test_a_chapter_whose_code_changed_is_stale(book_copy):
    md = book_copy / "book" / "partitions.md"
    text = md.read_text(encoding="utf-8")
    md.write_text(text.replace("c_anim = 16", "c_anim = 8"), encoding="utf-8")
    try:
        assert {p.stem for p in execute.stale(book_copy)} == {"partitions"}
    finally:
        md.write_text(text, encoding="utf-8")


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

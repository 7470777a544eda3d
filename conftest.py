"""pytest glue for the book's notebook tests (nbval).

* Only the paired notebooks of chapters listed in ``_toc.yml`` are collected.
* Parallel workers (pytest-xdist, one per core) get one thread each (torch, BLAS, OpenMP),
  so they do not oversubscribe the cores.
* Each chapter that nbval executes without a failure is stored in the book's execution
  cache, keyed on what the chapter uses (``booktools.cache``), so ``jupyter-book build .``
  afterwards reuses the outputs instead of executing the chapter a second time; every
  execution is counted in ``_build/executions.tsv`` (``.ci/run`` checks each chapter ran
  once). Progress bars are static text (``SEQTHEORY_STATIC_PROGRESS=1``), so the pages
  need no widget JavaScript.
* ``_build/chapter_times.tsv`` records how long each chapter took to execute.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from booktools.cache import fingerprint, log_execution, read_chapter, store
from booktools.execute import thread_env
from booktools.toc import chapter_notebooks

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "_build" / ".nbval"  # executed chapters, one JSON file each
TIMES = ROOT / "_build" / "chapter_times.tsv"


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    # Chapters executed for the book show each progress bar as one line of text with its
    # final state (a static page cannot animate a widget); seqtheory.core.runtime.progress_bar.
    os.environ.setdefault("SEQTHEORY_STATIC_PROGRESS", "1")
    # a failed claim check (seqtheory.book.notebook.check) raises in the tests, as assert does
    os.environ.setdefault("SEQTHEORY_STRICT_CHECKS", "1")
    # each figure also as SVG, for the lecture decks (seqtheory.book.plotting.set_style)
    os.environ.setdefault("SEQTHEORY_SVG_FIGURES", "1")
    workers = getattr(config.option, "numprocesses", None)
    if _is_worker(config) or (workers not in (None, 0, 1)):
        # one thread per worker (torch, BLAS, OpenMP), inherited by nbval's kernels: the
        # workers (one per core) never oversubscribe the cores
        for key, value in thread_env(1).items():
            os.environ.setdefault(key, value)
        try:
            import torch

            torch.set_num_threads(int(os.environ["SEQTHEORY_NUM_THREADS"]))
        except ImportError:
            pass
    config._chapter_notebooks = {p.resolve() for p in chapter_notebooks(ROOT)}
    config._nb_state = {}


def pytest_ignore_collect(collection_path, config):
    path = Path(collection_path)
    if path.name in ("_build", ".ipynb_checkpoints", "__pycache__") or path.name.startswith("."):
        return True
    if path.suffix == ".ipynb":
        return path.resolve() not in config._chapter_notebooks
    return None


def pytest_collection_modifyitems(session, config, items):
    """The chapters first, longest first (CI's last measured times), each chapter's cells in
    order, then the unit tests: with ``--dist loadfile --no-loadscope-reorder`` the workers
    take files in this order, so the long chapters start at once and the short tests fill
    the gaps at the end."""
    from booktools.execute import TIMES, longest_first

    notebooks = [Path(str(i.parent.fspath)) for i in items if _nb_item(i)]
    order = {p: k for k, p in enumerate(longest_first(list(dict.fromkeys(notebooks)), TIMES))}
    position = {id(item): n for n, item in enumerate(items)}

    def key(item):
        if _nb_item(item):
            return (0, order[Path(str(item.parent.fspath))], position[id(item)])
        return (1, 0, position[id(item)])

    items.sort(key=key)


def pytest_sessionstart(session):
    if not _is_worker(session.config):
        OUT.mkdir(parents=True, exist_ok=True)
        for old in OUT.glob("*.json"):
            old.unlink()


# ----------------------------------------------------------------------------- nbval outputs
def _nb_item(item) -> bool:
    return type(item).__name__ == "IPyNbCell"


def _md(item) -> Path:
    return Path(str(item.parent.fspath)).with_suffix(".md")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if _nb_item(item):  # the chapter's cache key as it starts (an edit later is not in it)
        state = item.config._nb_state.setdefault(item.parent.nodeid, {"seconds": 0.0})
        state.setdefault("key", fingerprint(_md(item), ROOT))
    start = time.perf_counter()
    yield
    if _nb_item(item):
        state["seconds"] += time.perf_counter() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _nb_item(item) and report.failed:
        item.config._nb_state.setdefault(item.parent.nodeid, {"seconds": 0.0})["failed"] = True


def _save_executed(nbfile, items, seconds: float, key: str) -> None:
    """Merge nbval's outputs into the chapter as myst-nb reads it; save as JSON."""
    import nbformat

    md = Path(str(nbfile.fspath)).with_suffix(".md")
    nb = read_chapter(md, ROOT, key)  # keyed on what the chapter uses (booktools.cache)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    if len(code_cells) != len(items):
        return  # out of sync with its .md: test_book reports it; do not cache
    for n, (cell, item) in enumerate(zip(code_cells, items, strict=True), start=1):
        if cell.source.strip() != item.cell.source.strip():
            return
        outputs = []
        for out in item.test_outputs or []:
            out = nbformat.from_dict(dict(out))
            if out.output_type == "execute_result":
                out.execution_count = n
            outputs.append(out)
        cell.outputs, cell.execution_count = outputs, n
    record = {"md": str(md), "seconds": seconds, "notebook": nbformat.writes(nb)}
    (OUT / (md.stem + ".json")).write_text(json.dumps(record), encoding="utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # Before nbval stops the kernel after a notebook's last cell, save what it produced.
    if _nb_item(item) and (nextitem is None or nextitem.parent is not item.parent):
        state = item.config._nb_state.get(item.parent.nodeid, {})
        log_execution(ROOT, Path(str(item.parent.fspath)).stem, "pytest")
        kernel = getattr(item.parent, "kernel", None)
        if not state.get("failed") and kernel is not None and kernel.is_alive():
            items = [i for i in item.session.items if i.parent is item.parent]
            try:
                _save_executed(item.parent, items, state.get("seconds", 0.0), state["key"])
            except Exception as err:  # caching is an optimisation: never fail the test run
                print(f"\n[conftest] could not cache {item.parent.nodeid}: {err!r}")
    yield


def pytest_sessionfinish(session, exitstatus):
    if _is_worker(session.config) or not OUT.exists():
        return
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("*.json"))]
    if not records:
        return
    import nbformat

    rows = []
    for rec in records:
        nb = nbformat.reads(rec["notebook"], as_version=4)
        store(nb, Path(rec["md"]), rec["seconds"], ROOT)
        rows.append((Path(rec["md"]).relative_to(ROOT).as_posix(), rec["seconds"]))
    TIMES.write_text("chapter\tseconds\n" + "".join(f"{c}\t{s:.1f}\n" for c, s in rows))

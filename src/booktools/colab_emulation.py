"""Run the chapters' Colab notebooks the way Google Colab would, in a bare environment.

    python -m booktools.colab_emulation [--venv DIR] [--jobs 2] [--edition student]
                                        [--smoke N] [NB ...]

The notebooks are the reader notebooks that the book's build writes for Colab
(``_build/html/colab/{lecturer,student}/*.ipynb``, see ``booktools.sphinx.colab_notebooks``):
the ones the chapter pages' Colab links open. ``--edition`` picks one edition (default: both);
explicit paths run those notebooks instead.

A fresh virtual environment gets only what Colab ships and the chapters rely on — torch,
numpy, matplotlib, seaborn, ipywidgets (plus ipykernel, to run a kernel) — and NOT the
book's library or anything else from requirements.txt. Each notebook is copied
alone into an empty folder (a notebook opened from GitHub has no repository next to it)
and executed top to bottom in that environment with ``SEQTHEORY_INSTALL_FROM`` pointing
at this checkout in the setup cell's own URL form, ``git+<this repository>@<REF>`` with
the REF the cell names (the commit the notebook was built from): the setup cell
pip-installs the library exactly as it would from the remote repository, and a REF this
repository does not have fails here as it would in Colab. The install takes the committed
state of REF, so commit before building and running this script. Before each notebook the library is
uninstalled again, so every chapter starts like a fresh Colab session. With ``--jobs 2``
or more, notebooks share the environment: the library is uninstalled once, the first
notebook installs it through the git URL, and the others' setup cells install a wheel
built once from this checkout (several source builds of one folder at the same time
collide in its build/ directory). The script also checks that the setup cell left torch
and numpy alone.

``--smoke N`` runs every cell with each training loop stopped after N steps
(``SEQTHEORY_SMOKE``, claim checks lenient): what CI runs, since pytest has already executed
every chapter at its CPU size with its checks; it tests the install, the imports, the
package's data and the order of the notebook's cells, not the numbers. Without it every
notebook runs in full with strict checks (``python -m booktools.release_check --full``).
Notebooks at a time times torch threads each never exceeds the cores; with
``--one-at-a-time-while FILE`` one notebook runs at a time while FILE exists (CI runs this
script next to its browser steps, which use about one core, and removes FILE after them).

Install constraints (e.g. torch pinned to a local wheel) come from ``PIP_CONSTRAINT``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from booktools import ROOT
from booktools.cache import log_execution
from booktools.colab_env import COLAB_PACKAGES, KERNEL, make_env
from booktools.execute import plan, thread_env
from booktools.setup_cell import config, pinned_ref
from booktools.toc import chapter_notebooks


def git_source(ref: str | None = None) -> str:
    """The setup cell's install URL with this repository in place of the remote one, at
    ``ref`` (default: ``repository.branch``), which must exist here as it must in Colab."""
    ref = ref or config()[1]
    known = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if known.returncode:
        raise SystemExit(
            f"the setup cells install REF {ref!r}, which this repository does not have"
        )
    # file://localhost/...: pip rejects a VCS URL with an empty host (git+file:///...)
    return f"git+file://localhost{ROOT.as_posix()}@{ref}"


def notebook_ref(nb) -> str:
    """The ref that a reader notebook's set-up cell installs the library from."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "# Colab setup" in cell.source:
            return pinned_ref(cell.source)
    raise ValueError("the notebook has no set-up cell")


def versions(py: Path) -> dict:
    out = subprocess.run(
        [
            str(py),
            "-c",
            "import json, torch, numpy; print(json.dumps("
            "{'torch': [torch.__version__, torch.__file__], "
            "'numpy': [numpy.__version__, numpy.__file__]}))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def label(nb_path: Path) -> str:
    """``edition/chapter`` for a reader notebook, else the notebook's name."""
    return (
        f"{nb_path.parent.name}/{nb_path.stem}"
        if nb_path.parent.name in ("lecturer", "student")
        else nb_path.stem
    )


def reader_notebooks(edition: str) -> list[Path]:
    """The build's Colab notebooks of one edition or both, chapters in the book's order."""
    editions = ("lecturer", "student") if edition == "both" else (edition,)
    found = [
        ROOT / "_build" / "html" / "colab" / e / f"{nb.stem}.ipynb"
        for e in editions
        for nb in chapter_notebooks(ROOT)
    ]
    missing = [str(p) for p in found if not p.is_file()]
    if missing:
        raise SystemExit(
            "no Colab notebook (build the book first: jupyter-book build .): " + ", ".join(missing)
        )
    return found


def run_notebook(
    nb_path: Path,
    venv: Path,
    threads: int,
    source: str | None = None,
    smoke: int = 0,
    keep: Path | None = None,
) -> tuple[str, float, str | None]:
    """Execute one notebook alone in an empty folder; return (name, seconds, error).

    ``source`` is what the setup cell installs (default: this checkout); ``smoke``: stop
    every training loop after that many steps (0: a full run); ``keep``: a folder for the
    executed notebook (its cells carry their start and end times)."""
    import nbformat
    from nbclient import NotebookClient

    work = Path(tempfile.mkdtemp(prefix=f"colab-{nb_path.stem}-"))
    try:
        shutil.copy(nb_path, work / nb_path.name)
        nb = nbformat.read(work / nb_path.name, as_version=4)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SEQTHEORY_", "PYTHONPATH", "VIRTUAL_ENV", "JUPYTER_"))
        }
        env.update(
            {
                **thread_env(threads),
                "SEQTHEORY_INSTALL_FROM": source or git_source(notebook_ref(nb)),
                # a full run fails on a failed claim check; a smoke run's numbers mean nothing
                "SEQTHEORY_STRICT_CHECKS": "0" if smoke else "1",
                "JUPYTER_PATH": str(venv / "share" / "jupyter"),
                "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "MPLBACKEND": "agg",
            }
        )
        if smoke:
            env["SEQTHEORY_SMOKE"] = str(smoke)
        log_execution(ROOT, nb_path.stem, f"colab {label(nb_path)}", env)
        client = NotebookClient(
            nb, timeout=900, kernel_name=KERNEL, resources={"metadata": {"path": str(work)}}
        )
        start, error = time.perf_counter(), None
        try:
            # the kernel inherits this process's environment: hand it the emulated one
            client.execute(env=env)
        except Exception as err:  # a failing cell: report the notebook and the error
            error = f"{type(err).__name__}: {err}"
        seconds = time.perf_counter() - start
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, keep / (label(nb_path).replace("/", "__") + ".ipynb"))
        return label(nb_path), seconds, error
    finally:
        shutil.rmtree(work, ignore_errors=True)


class Gate:
    """At most ``jobs`` notebooks at a time; only one while the file ``hold`` exists (another
    step of CI is using the other cores), all ``jobs`` once it is gone."""

    def __init__(self, jobs: int, hold: Path | None = None):
        held = hold is not None and hold.exists()
        self._slots = threading.Semaphore(1 if held else jobs)
        if held and jobs > 1:

            def release_when_gone():
                while hold.exists():
                    time.sleep(1)
                for _ in range(jobs - 1):
                    self._slots.release()

            threading.Thread(target=release_when_gone, daemon=True).start()

    def __enter__(self):
        self._slots.acquire()

    def __exit__(self, *exc):
        self._slots.release()
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--venv", type=Path, help="reuse or create the environment here")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="notebooks at a time (each with its own library install)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per notebook (default: the cores / --jobs; never more)",
    )
    parser.add_argument(
        "--one-at-a-time-while",
        type=Path,
        metavar="FILE",
        help="run one notebook at a time while FILE exists (CI: while the browser steps run), "
        "then --jobs",
    )
    parser.add_argument(
        "--smoke",
        type=int,
        default=0,
        metavar="N",
        help="stop every training loop after N steps, checks lenient (default 0: full runs)",
    )
    parser.add_argument(
        "--edition",
        choices=["lecturer", "student", "both"],
        default="both",
        help="which edition's Colab notebooks to run (default: both)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="write the executed notebooks there (each cell with its start and end times)",
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    notebooks = args.notebooks or reader_notebooks(args.edition)
    venv = args.venv or Path(tempfile.mkdtemp(prefix="colab-venv-")) / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"[colab] creating {venv} with only {', '.join(COLAB_PACKAGES)}", flush=True)
        make_env(venv)
    os.environ["JUPYTER_PATH"] = str(venv / "share" / "jupyter")  # finds the kernel spec
    before = versions(py)
    print(f"[colab] torch {before['torch'][0]}, numpy {before['numpy'][0]}", flush=True)
    jobs, threads = plan(args.jobs, len(notebooks))
    if args.threads is not None:
        if not 1 <= args.threads <= threads:
            parser.error(f"--threads must be between 1 and {threads} with {jobs} job(s)")
        threads = args.threads
    results = []
    if jobs == 1:
        for nb in notebooks:
            # a fresh session: the library is not there until the setup cell installs it
            subprocess.run(
                [str(py), "-m", "pip", "uninstall", "-q", "-y", "seqtheory"], capture_output=True
            )
            results.append(run_notebook(nb, venv, threads, smoke=args.smoke, keep=args.keep))
            print(
                f"[colab] {results[-1][0]:33s} {results[-1][1]:6.1f} s  "
                f"{'ok' if results[-1][2] is None else 'FAILED'}",
                flush=True,
            )
    else:  # parallel notebooks share one environment: install the library once, first
        subprocess.run(
            [str(py), "-m", "pip", "uninstall", "-q", "-y", "seqtheory"], capture_output=True
        )
        # Setup cells that install from a source folder at the same time would build it in
        # the same build/ directory and collide; a wheel built once installs without a
        # build, and pip leaves an installed wheel of the same version alone.
        wheels = Path(tempfile.mkdtemp(prefix="colab-wheel-"))
        subprocess.run(
            [str(py), "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(wheels)],
            check=True,
            capture_output=True,
        )
        wheel = next(wheels.glob("seqtheory-*.whl")).as_uri()
        # through the git URL
        results.append(run_notebook(notebooks[0], venv, threads, smoke=args.smoke, keep=args.keep))
        # the others find the wheel installed (same version: pip leaves it alone)
        subprocess.run(
            [str(py), "-m", "pip", "uninstall", "-q", "-y", "seqtheory"], capture_output=True
        )
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--no-deps", wheel],
            check=True,
            capture_output=True,
        )
        gate = Gate(jobs, args.one_at_a_time_while)

        def one(nb: Path):
            with gate:
                return run_notebook(nb, venv, threads, wheel, args.smoke, args.keep)

        with ThreadPoolExecutor(jobs) as pool:
            results += list(pool.map(one, notebooks[1:]))
    after = versions(py)
    failed = [(name, err) for name, _, err in results if err]
    if after != before:
        failed.append(("environment", f"a setup cell replaced torch or numpy: {before} -> {after}"))
    print("\n[colab] notebook                           seconds")
    for name, seconds, err in results:
        print(f"[colab] {name:33s} {seconds:7.1f}  {'ok' if err is None else 'FAILED'}")
    for name, err in failed:
        print(f"\n[colab] {name} FAILED:\n{err[-3000:]}")
    print(
        f"\n[colab] {len(results) - len([r for r in results if r[2]])} of {len(results)} "
        f"notebooks ran in the emulated Colab environment in {time.perf_counter() - began:.0f} s"
        + (" -- FAILED" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Release check, run by hand before publishing the book: can a reader's Colab reach it, and
(``--full``) do the reader notebooks run in full?

    python -m booktools.release_check            # the repository and its branches
    python -m booktools.release_check --full     # and both editions' notebooks in full

Asks the configured repository (``repository.url`` in ``_config.yml``), with ``git ls-remote``
and no credentials, for the branch the Colab set-up cells install the library from
(``repository.branch``) and the branch the Colab links open the notebooks from
(``sphinx.config.colab_branch``, published by ``.github/workflows/pages.yml``). A private or
missing repository, or a missing branch, fails. Offline (the host does not resolve), the
check is skipped with a message and exit status 0; CI does not run it.

``--full`` (after ``jupyter-book build .`` and ``python -m booktools.build_student``, with the
build's commit checked out) also runs the checks that CI leaves out because they execute
every chapter again or take long: the Colab notebooks of both editions in a bare
environment, every cell at its CPU size with strict claim checks
(``booktools.colab_emulation``) -- the student's one at a time with two torch threads (other
bits than CI's one-thread run), the lecturer's with one thread each, as many at a time as
there are cores -- and the PDF of both editions with its checks (``booktools.make_pdf``:
``_build/pdf/book.pdf`` and ``_build/pdf/student/book.pdf``). About 30 minutes on two
cores.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from urllib.parse import urlparse

import yaml

from booktools import ROOT


def configured() -> tuple[str, list[str]]:
    """(repository URL, [library branch, notebooks branch]) from _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]
    return repo["url"].rstrip("/"), [
        repo.get("branch", "main"),
        config["sphinx"]["config"]["colab_branch"],
    ]


def online(url: str) -> bool:
    host = urlparse(url).hostname
    if host is None:  # a local path or file:// URL needs no network
        return True
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return False
    return True


def check(url: str, branches: list[str], timeout: float = 60) -> tuple[int, str]:
    """(exit status, message): 0 when every branch is readable without credentials."""
    if not online(url):
        return 0, f"skipped: {urlparse(url).hostname} does not resolve (offline?)"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(
            ["git", "ls-remote", "--heads", url, *branches],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return 1, f"git ls-remote {url} did not answer within {timeout:.0f} s"
    if done.returncode:
        return 1, (
            f"{url} cannot be read without credentials (private, renamed or "
            f"missing?): {done.stderr.strip()}"
        )
    heads = {
        line.split("refs/heads/", 1)[1]
        for line in done.stdout.splitlines()
        if "refs/heads/" in line
    }
    missing = [b for b in branches if b not in heads]
    if missing:
        return 1, (
            f"{url} is public but lacks the branch(es) {', '.join(missing)} "
            "(the notebooks' branch is published by .github/workflows/pages.yml)"
        )
    return 0, f"{url} is public with the branches {', '.join(branches)}"


def full_runs() -> int:
    """Both editions' reader notebooks in full in the emulated Colab, and both editions'
    PDFs; non-zero on a failure."""
    import tempfile
    from pathlib import Path

    from booktools import colab_emulation, make_pdf
    from booktools.execute import available_cores

    venv = Path(tempfile.mkdtemp(prefix="release-colab-")) / "venv"
    student = colab_emulation.main(
        ["--edition", "student", "--jobs", "1", "--threads", "2", "--venv", str(venv)]
    )
    lecturer = colab_emulation.main(
        ["--edition", "lecturer", "--jobs", str(available_cores()), "--venv", str(venv)]
    )
    pdfs = [
        make_pdf.main([str(ROOT / "_build" / "html"), "--out", str(ROOT / "_build/pdf/book.pdf")]),
        make_pdf.main(
            [
                str(ROOT / "_build" / "student" / "_build" / "html"),
                "--out",
                str(ROOT / "_build" / "pdf" / "student" / "book.pdf"),
            ]
        ),
    ]
    return 1 if student or lecturer or any(pdfs) else 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--full", action="store_true", help="also run both editions' notebooks in full"
    )
    args = parser.parse_args(argv)
    url, branches = configured()
    status, message = check(url, branches)
    print(message)
    if args.full:
        status = full_runs() or status
    return status


if __name__ == "__main__":
    sys.exit(main())

"""The chapters' Colab setup cell, written from _config.yml (one source for the repository).

Every chapter starts with the same hidden cell. It installs the book's library in Colab from
``repository.url`` at ``repository.branch`` -- the branch the site's Colab links open the
notebooks from, so a notebook and its library always come from the same ref. Outside Colab
it does nothing if the library is importable, and otherwise prints how to install it.

    python -m booktools.setup_cell            # show the cell
    python -m booktools.setup_cell --write    # put it into every chapter (then jupytext --sync)
    python -m booktools.setup_cell --check    # exit 1 if a chapter's cell differs (tests use it)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

from booktools import ROOT

TEMPLATE = """# Colab setup: install the book's library, seqtheory, where it is missing. In Colab it
# comes from the branch the notebook was opened from (REF), so notebook and library match;
# Colab's own torch and numpy are kept (the library needs torch>=2.1, numpy>=1.24).
# SEQTHEORY_INSTALL_FROM=<pip source> installs from elsewhere (a fork, a local checkout).
# If the library cannot be installed, the cell stops the notebook with one message.
import importlib.util
import os
import subprocess
import sys

REPO, REF = "{url}", "{ref}"
SOURCE = os.environ.get("SEQTHEORY_INSTALL_FROM", f"git+{{REPO}}@{{REF}}")
HOW = (
    "To install from a fork or a local clone, set SEQTHEORY_INSTALL_FROM to a pip source "
    "before this cell and run it again, e.g.\\n"
    "    import os; os.environ['SEQTHEORY_INSTALL_FROM'] = 'git+https://github.com/YOU/FORK@main'\\n"
    "or the folder of a clone: os.environ['SEQTHEORY_INSTALL_FROM'] = '/content/seqtheory-book'"
)


class SetupFailed(Exception):
    "The book's library is missing: the notebook stops here."


try:
    import google.colab  # noqa: F401

    IN_COLAB = True
except ImportError:
    IN_COLAB = False
if IN_COLAB or "SEQTHEORY_INSTALL_FROM" in os.environ:
    pip = [sys.executable, "-m", "pip", "install", "-q", f"seqtheory @ {{SOURCE}}"]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode:
        said = "\\n".join("    " + x for x in done.stderr.strip().splitlines()[-6:])
        raise SetupFailed(
            f"could not install the book's library from {{SOURCE}}.\\n"
            "Is the repository public, and are you online? pip said:\\n"
            f"{{said}}\\n{{HOW}}"
        ) from None
elif importlib.util.find_spec("seqtheory") is None:
    raise SetupFailed(
        "this notebook needs the book's library, seqtheory, which is not installed here.\\n"
        f"Install it with:  pip install 'seqtheory @ git+{{REPO}}@{{REF}}'\\n"
        "or, in a clone of the repository:  pip install -r requirements.txt\\n"
        f"{{HOW}}"
    ) from None"""
CELL = re.compile(
    r"(```\{code-cell\} ipython3\n:tags: \[remove-cell\]\n\n)(# Colab setup.*?)(\n```)", re.S
)


PIN = re.compile(r'^(REPO, REF = "[^"]+", )"([^"]*)"[^\n]*$', re.M)
PINNED = "  # the commit this notebook was built from"


def build_ref(root: Path = ROOT) -> str | None:
    """The tag at ``root``'s checked-out commit, else the commit's hash; None outside a git
    checkout. A reader notebook's set-up cell installs the library at this ref, so a
    notebook saved in week 1 keeps week 1's library."""
    for cmd in (["describe", "--tags", "--exact-match", "HEAD"], ["rev-parse", "HEAD"]):
        out = subprocess.run(["git", "-C", str(root), *cmd], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return None


def pin(source: str, ref: str) -> str:
    """The set-up cell ``source`` installing the library at ``ref``."""
    new, n = PIN.subn(lambda m: f'{m.group(1)}"{ref}"{PINNED}', source, count=1)
    if n != 1:
        raise ValueError("the set-up cell has no line REPO, REF = ... to pin")
    return new


def pinned_ref(source: str) -> str:
    """The ref a set-up cell installs from."""
    m = PIN.search(source)
    if m is None:
        raise ValueError("the set-up cell has no line REPO, REF = ...")
    return m.group(2)


def config() -> tuple[str, str]:
    """(repository URL, branch) from _config.yml."""
    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def cell_source() -> str:
    url, ref = config()
    return TEMPLATE.format(url=url, ref=ref)


def chapters() -> list[Path]:
    return sorted(
        p for p in (ROOT / "book").glob("*.md") if "```{code-cell}" in p.read_text(encoding="utf-8")
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite every chapter's cell")
    ap.add_argument("--check", action="store_true", help="exit 1 if a chapter differs")
    ap.add_argument("chapters", nargs="*", help="chapter names (default: every chapter)")
    args = ap.parse_args(argv)
    want = cell_source()
    if not (args.write or args.check):
        print(want)
        return 0
    stale = []
    for md in chapters():
        if args.chapters and md.stem not in args.chapters:
            continue
        text = md.read_text(encoding="utf-8")
        m = CELL.search(text)
        if m is None:
            stale.append(f"{md.name}: no setup cell")
            continue
        if m.group(2) != want:
            stale.append(md.name)
            if args.write:
                md.write_text(text[: m.start(2)] + want + text[m.end(2) :], encoding="utf-8")
                subprocess.run(["jupytext", "--sync", str(md)], check=True, capture_output=True)
    if stale:
        print(("rewrote: " if args.write else "out of date: ") + ", ".join(stale))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

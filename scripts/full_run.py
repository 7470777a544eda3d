"""Run every chapter at paper scale (``FULL=1``) on this machine's device and tabulate it.

Each chapter's paired notebook is executed in sequence with ``FULL=1`` (one process per
chapter, on a GPU when there is one: chapters pick their device through the library). A
failing cell does not stop the chapter: every hidden check (each code cell with an
``assert``) is reported as passed or failed, so one run shows which checks still hold at
the full sizes. Writes ``_build/full_run.tsv`` (chapter, device, seconds, checks passed,
checks failed, the failing lines) and each executed notebook to
``_build/full_run/CHAPTER.ipynb``:

    python scripts/full_run.py                          # every chapter, FULL=1
    python scripts/full_run.py --chapters induction_heads --timeout 3600
    python scripts/full_run.py --notebooks path/to/a.ipynb   # any notebooks (tests use this)

Exit status 1 if any chapter had a failed check or an error.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from robustness import chapters, failing_line  # noqa: E402

RUN_ONE = r"""
import json, sys, time, nbformat
from nbclient import NotebookClient
path, timeout, cwd, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
error = ""
try:
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": cwd}}).execute()
except Exception as err:          # a timeout or a dead kernel: report it, keep the outputs
    error = f"{type(err).__name__}: {str(err)[:300]}"
seconds = time.perf_counter() - start
nbformat.write(nb, out)
print("@@RESULT@@" + json.dumps({"seconds": seconds, "error": error}))
"""


def device_name() -> str:
    """What the chapters will train on here: the GPU's name, or "CPU"."""
    try:
        import torch
    except ImportError:
        return "CPU"
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    return "CPU"


def checks(nb_path: Path) -> list[dict]:
    """Every claim-check cell (``check(`` or ``assert``) in an executed notebook: passed, or
    the failure."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or ("assert" not in cell.source
                                         and "check(" not in cell.source):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        ran = cell.get("execution_count") is not None or bool(errors)
        row = {"cell": i, "ran": ran, "ok": ran and not errors}
        if errors:
            err = errors[0]
            row["line"] = failing_line("\n".join(err.get("traceback", [])))
            row["error"] = f"{err.get('ename')}: {err.get('evalue', '')}"[:200]
        out.append(row)
    return out


def run_chapter(nb: Path, timeout: int, out_dir: Path) -> dict:
    env = {**os.environ, "FULL": "1", "SEQTHEORY_STATIC_PROGRESS": "1", "MPLBACKEND": "Agg",
           "SEQTHEORY_STRICT_CHECKS": "1"}
    out = out_dir / f"{nb.stem}.ipynb"
    proc = subprocess.run([sys.executable, "-c", RUN_ONE, str(nb), str(timeout),
                           str(nb.parent), str(out)], env=env, capture_output=True, text=True)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    if not marker:
        return {"seconds": float("nan"), "error": f"runner crashed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout)[-300:]}", "checks": []}
    result = json.loads(marker[-1].removeprefix("@@RESULT@@"))
    result["checks"] = checks(out)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chapters", default="", help="comma-separated chapter names (default all)")
    ap.add_argument("--notebooks", nargs="*", type=Path, default=(),
                    help="run these notebooks instead of the book's chapters")
    ap.add_argument("--timeout", type=int, default=3600, help="per-cell timeout in seconds")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "full_run.tsv")
    args = ap.parse_args(argv)
    nbs = list(args.notebooks) or chapters()
    if args.chapters and not args.notebooks:
        wanted = {c.strip() for c in args.chapters.split(",")}
        unknown = wanted - {nb.stem for nb in nbs}
        if unknown:
            ap.error(f"unknown chapter(s) {sorted(unknown)}; known: {[nb.stem for nb in nbs]}")
        nbs = [nb for nb in nbs if nb.stem in wanted]
    missing = [str(nb) for nb in nbs if not Path(nb).is_file()]
    if missing:
        ap.error(f"no such notebook(s): {missing}")
    device = device_name()
    out_dir = args.out.parent / "full_run"
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"FULL=1 on {device}: {len(nbs)} notebook(s), one after another", flush=True)
    rows, bad = [], 0
    for nb in nbs:
        r = run_chapter(Path(nb), args.timeout, out_dir)
        passed = sum(c["ok"] for c in r["checks"])
        failed = [c for c in r["checks"] if c["ran"] and not c["ok"]]
        not_run = sum(not c["ran"] for c in r["checks"])
        bad += bool(failed or r["error"] or not_run)
        notes = "; ".join(f"cell {c['cell']}: {c.get('line', '')} -> {c.get('error', '')}"
                          for c in failed)
        if r["error"]:
            notes = (notes + "; " if notes else "") + r["error"]
        rows.append((Path(nb).stem, device, f"{r['seconds']:.1f}", passed, len(failed),
                     not_run, notes))
        print(f"{Path(nb).stem}: {r['seconds']:.0f} s, checks {passed} passed, "
              f"{len(failed)} failed, {not_run} not reached {notes}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "chapter\tdevice\tseconds\tchecks_passed\tchecks_failed\tchecks_not_reached\tfailures\n"
        + "".join("\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n"
                  for row in rows))
    print(f"wrote {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run every chapter at paper scale (``FULL=1``) on this machine's device and tabulate it.

Each chapter's paired notebook is executed in sequence with ``FULL=1`` (one process per
chapter, on a GPU when there is one: chapters pick their device through the library). A
failing check does not stop the chapter: the claim checks run in the reader's mode (a note
instead of an exception) and log every outcome (``SEQTHEORY_CHECK_LOG``, see
``seqtheory.utils.check``), so one run shows which checks still hold at the full sizes; a
cell that raises anything else is reported as an error and the chapter goes on. Writes
``_build/full_run.tsv`` (chapter, device, torch, seconds, checks passed / failed, errors,
check cells not reached, the failures), ``_build/full_run/CHAPTER.checks.jsonl`` (every
check: held, message, source line), ``_build/full_run/CHAPTER.claims.jsonl`` (the values of
every claims section, ``seqtheory.claims.verify``) and each executed notebook to
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


def device_name() -> tuple[str, str]:
    """What the chapters will train on here (the GPU's name, or "CPU") and torch's version."""
    try:
        import torch
    except ImportError:
        return "CPU", "none"
    if torch.cuda.is_available():
        return (f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})",
                torch.__version__)
    return "CPU", torch.__version__


def cell_outcomes(nb_path: Path) -> tuple[list[dict], int]:
    """The cells of an executed notebook that raised (index, source line, error), and the
    number of claim-check cells (``verify(``, ``check(`` or ``assert``) that never ran (a
    timeout or a dead kernel stops a chapter)."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    errors, not_reached = [], 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errs:
            err = errs[0]
            errors.append({"cell": i,
                           "line": failing_line("\n".join(err.get("traceback", []))),
                           "error": f"{err.get('ename')}: {err.get('evalue', '')}"[:200]})
        elif cell.get("execution_count") is None and any(
                call in cell.source for call in ("assert", "check(", "verify(")):
            not_reached += 1
    return errors, not_reached


def run_chapter(nb: Path, timeout: int, out_dir: Path) -> dict:
    log = out_dir / f"{nb.stem}.checks.jsonl"
    log.unlink(missing_ok=True)
    values = out_dir / f"{nb.stem}.claims.jsonl"      # every section's claim values
    values.unlink(missing_ok=True)
    env = {**os.environ, "FULL": "1", "SEQTHEORY_STATIC_PROGRESS": "1", "MPLBACKEND": "Agg",
           "SEQTHEORY_STRICT_CHECKS": "0", "SEQTHEORY_CHECK_LOG": str(log),
           "SEQTHEORY_CLAIMS_RECORD": str(values)}
    out = out_dir / f"{nb.stem}.ipynb"
    proc = subprocess.run([sys.executable, "-c", RUN_ONE, str(nb), str(timeout),
                           str(nb.parent), str(out)], env=env, capture_output=True, text=True)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    if not marker:
        return {"seconds": float("nan"), "error": f"runner crashed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout)[-300:]}", "checks": [], "cell_errors": [],
                "not_reached": 0}
    result = json.loads(marker[-1].removeprefix("@@RESULT@@"))
    result["checks"] = ([json.loads(line) for line in log.read_text().splitlines()]
                        if log.is_file() else [])
    result["cell_errors"], result["not_reached"] = cell_outcomes(out)
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
    device, torch_version = device_name()
    out_dir = args.out.parent / "full_run"
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"FULL=1 on {device} (torch {torch_version}): {len(nbs)} notebook(s), one after "
          "another", flush=True)
    rows, bad = [], 0
    for nb in nbs:
        r = run_chapter(Path(nb), args.timeout, out_dir)
        passed = sum(c["held"] for c in r["checks"])
        failed = [c for c in r["checks"] if not c["held"]]
        errors, not_run = r["cell_errors"], r["not_reached"]
        bad += bool(failed or errors or r["error"] or not_run)
        notes = [f"check {c['line'] or '?'} -> {c['message']}" for c in failed]
        notes += [f"cell {e['cell']}: {e['line']} -> {e['error']}" for e in errors]
        notes += [r["error"]] if r["error"] else []
        notes = "; ".join(notes)
        rows.append((Path(nb).stem, device, torch_version, f"{r['seconds']:.1f}", passed,
                     len(failed), len(errors), not_run, notes))
        print(f"{Path(nb).stem}: {r['seconds']:.0f} s, checks {passed} passed, "
              f"{len(failed)} failed, {len(errors)} cell errors, {not_run} check cells not "
              f"reached {notes}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "chapter\tdevice\ttorch\tseconds\tchecks_passed\tchecks_failed\tcell_errors"
        "\tcheck_cells_not_reached\tfailures\n"
        + "".join("\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n"
                  for row in rows))
    print(f"wrote {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

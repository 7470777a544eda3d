"""Run every chapter at paper scale (``FULL=1``) on this machine's device and tabulate it.

Each chapter's paired notebook runs with ``FULL=1`` in its own process (on a GPU when there
is one: chapters pick their device through the library), ``--jobs`` chapters at a time:
the longest first (``--estimates``: a table of earlier runs), admitted while the estimated
peak GPU memory of the chapters running together fits the card (``--gpu-memory``). A
failing check does not stop the chapter: the claim checks run in the reader's mode (a note
instead of an exception) and log every outcome (``SEQTHEORY_CHECK_LOG``, see
``seqtheory.book.notebook.check``), so one run shows which checks still hold at the full sizes; a
cell that raises anything else is reported as an error and the chapter goes on; a cell that
times out stops its chapter. Writes ``_build/full_run.tsv`` (chapter, device, torch,
seconds, start, peak GPU memory (``torch.cuda.max_memory_allocated``) and resident memory,
checks passed / failed, errors, check cells not reached, the failures),
``_build/full_run/CHAPTER.checks.jsonl`` (every check: held, message, source line),
``_build/full_run/CHAPTER.claims.jsonl`` (the values of every claims section,
``seqtheory.book.claims.verify``) and each executed notebook to ``_build/full_run/CHAPTER.ipynb``.
``--smoke N`` stops every training loop after N steps (``SEQTHEORY_SMOKE``): paper sizes,
a test of everything but the training's outcome, for a machine without a GPU:

    python -m booktools.full_run --jobs 4                 # every chapter, FULL=1
    python -m booktools.full_run --chapters induction_heads --timeout 3600
    python -m booktools.full_run --jobs 2 --smoke 2       # the smoke run
    python -m booktools.full_run --jobs 4 --deadline 540  # within one short GPU lease
    python -m booktools.full_run --notebooks path/to/a.ipynb   # any notebooks (tests use this)

Exit status 1 if any chapter had a failed check or an error (in a smoke run: an error).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from booktools import ROOT
from booktools.execute import available_cores, thread_env
from booktools.robustness import failing_line
from booktools.toc import chapter_notebooks

RUN_ONE = r"""
import json, sys, time, nbformat
from nbclient import NotebookClient
path, timeout, cwd, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
deadline = float(sys.argv[5])     # wall-clock time (time.time()) to stop at, 0: none
nb = nbformat.read(path, as_version=4)
client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                        interrupt_on_timeout=True, resources={"metadata": {"path": cwd}})
PEAKS = ("import json, resource, torch\n"
         "print('@@PEAK@@' + json.dumps({'gpu': torch.cuda.max_memory_allocated() "
         "if torch.cuda.is_available() else 0, "
         "'rss': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))")
start = time.perf_counter()
error, peaks = "", {}
client.reset_execution_trackers()
with client.setup_kernel():
    try:
        for index, cell in enumerate(nb.cells):
            if deadline:
                left = deadline - time.time()
                if left < 1:
                    raise TimeoutError("the run's deadline came before this cell")
                client.timeout = int(max(1, min(timeout, left)))
            began = time.perf_counter()
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            if any(o.get("ename") == "KeyboardInterrupt" for o in cell.get("outputs", [])):
                raise TimeoutError(f"cell {index} timed out after "
                                   f"{time.perf_counter() - began:.0f} s and was interrupted")
    except Exception as err:      # a timeout or a dead kernel: report it, keep the outputs
        error = f"{type(err).__name__}: {str(err)[:300]}"
    seconds = time.perf_counter() - start
    try:                          # the kernel's peak memory (GPU allocator, process RSS)
        client.timeout = 60
        nb.cells.append(nbformat.v4.new_code_cell(PEAKS))
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
        peaks = json.loads(text.split("@@PEAK@@")[1].splitlines()[0])
    except Exception:
        pass
    if nb.cells and "@@PEAK@@" in nb.cells[-1].source:
        nb.cells.pop()
nbformat.write(nb, out)
print("@@RESULT@@" + json.dumps({"seconds": seconds, "error": error, "peaks": peaks}))
"""


def device_name() -> tuple[str, str]:
    """What the chapters will train on here (the GPU's name, or "CPU") and torch's version."""
    try:
        import torch
    except ImportError:
        return "CPU", "none"
    if torch.cuda.is_available():
        return (f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})", torch.__version__)
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
            errors.append(
                {
                    "cell": i,
                    "line": failing_line("\n".join(err.get("traceback", []))),
                    "error": f"{err.get('ename')}: {err.get('evalue', '')}"[:200],
                }
            )
        elif cell.get("execution_count") is None and any(
            call in cell.source for call in ("assert", "check(", "verify(")
        ):
            not_reached += 1
    return errors, not_reached


def run_chapter(
    nb: Path,
    timeout: int,
    out_dir: Path,
    smoke: int = 0,
    deadline: float = 0.0,
    threads: int = 1,
) -> dict:
    log = out_dir / f"{nb.stem}.checks.jsonl"
    log.unlink(missing_ok=True)
    values = out_dir / f"{nb.stem}.claims.jsonl"  # every section's claim values
    values.unlink(missing_ok=True)
    env = {
        **os.environ,
        **thread_env(threads),  # jobs x threads within the cores
        "FULL": "1",
        "SEQTHEORY_STATIC_PROGRESS": "1",
        "MPLBACKEND": "Agg",
        "SEQTHEORY_STRICT_CHECKS": "0",
        "SEQTHEORY_CHECK_LOG": str(log),
        "SEQTHEORY_CLAIMS_RECORD": str(values),
        "SEQTHEORY_SMOKE": str(smoke),
    }
    out = out_dir / f"{nb.stem}.ipynb"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN_ONE,
            str(nb),
            str(timeout),
            str(nb.parent),
            str(out),
            str(deadline),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    if not marker:
        return {
            "seconds": float("nan"),
            "error": f"runner crashed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout)[-300:]}",
            "checks": [],
            "cell_errors": [],
            "not_reached": 0,
            "peaks": {},
        }
    result = json.loads(marker[-1].removeprefix("@@RESULT@@"))
    result["checks"] = (
        [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    )
    result["cell_errors"], result["not_reached"] = cell_outcomes(out)
    return result


ESTIMATES = Path(__file__).resolve().parent / "full_run_estimates.tsv"
DEFAULT_SECONDS, DEFAULT_MIB = 300.0, 8192.0  # a chapter missing from the estimates


def read_estimates(path: Path) -> dict:
    """chapter -> (seconds, peak GPU MiB) from a table with those columns (a previous run's
    ``full_run.tsv`` or ``src/booktools/full_run_estimates.tsv``); empty cells are missing."""
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    head = lines[0].split("\t")
    out = {}
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t"), strict=False))
        out[row["chapter"]] = (
            _number(row, "seconds", DEFAULT_SECONDS),
            _number(row, "peak_gpu_mib", DEFAULT_MIB),
        )
    return out


def _number(row: dict, key: str, default: float) -> float:
    try:
        value = float(row.get(key, ""))
    except ValueError:
        return default
    return value if value == value else default  # nan: missing


def schedule(names: list[str], estimates: dict, jobs: int, budget_mib: float | None):
    """The order to start chapters in and the rule to admit one: longest first, at most
    ``jobs`` at once, and (with ``budget_mib``) the estimated peaks of the chapters running
    together within the card's memory.  Returns (order, admit(running, name) -> bool)."""
    est = {n: estimates.get(n, (DEFAULT_SECONDS, DEFAULT_MIB)) for n in names}
    order = sorted(names, key=lambda n: -est[n][0])

    def admit(running: list[str], name: str) -> bool:
        if not running:
            return True  # alone it runs whatever its estimate
        if len(running) >= jobs:
            return False
        return budget_mib is None or sum(est[r][1] for r in running) + est[name][1] <= budget_mib

    return order, admit


def card_mib() -> float | None:
    """The GPU's memory in MiB (None without a GPU)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(0).total_memory / 2**20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chapters", default="", help="comma-separated chapter names (default all)")
    ap.add_argument(
        "--notebooks",
        nargs="*",
        type=Path,
        default=(),
        help="run these notebooks instead of the book's chapters",
    )
    ap.add_argument("--timeout", type=int, default=3600, help="per-cell timeout in seconds")
    ap.add_argument(
        "--jobs", type=int, default=1, help="chapters run at the same time (each its own process)"
    )
    ap.add_argument(
        "--gpu-memory",
        type=float,
        default=None,
        help="GiB the concurrent chapters' estimated peaks may sum to (default: "
        "the GPU's memory; no limit without a GPU)",
    )
    ap.add_argument(
        "--estimates",
        type=Path,
        default=ESTIMATES,
        help="a table of chapter, seconds, peak_gpu_mib (a previous run's table) to schedule from",
    )
    ap.add_argument(
        "--smoke",
        type=int,
        default=0,
        help="stop every training loop after this many steps (paper sizes, a "
        "quick test of everything but the outcome; 0: a real run)",
    )
    ap.add_argument(
        "--deadline",
        type=float,
        default=0,
        help="seconds after which the run stops: running chapters end at their "
        "current cell, the rest do not start (0: no deadline)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "full_run.tsv")
    args = ap.parse_args(argv)
    if args.deadline < 0:
        ap.error(f"--deadline must be 0 or a number of seconds, got {args.deadline}")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.smoke < 0:
        ap.error(f"--smoke must be 0 or a number of steps, got {args.smoke}")
    nbs = list(args.notebooks) or chapter_notebooks(ROOT)
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
    budget = args.gpu_memory * 1024 if args.gpu_memory is not None else card_mib()
    by_name = {Path(nb).stem: Path(nb) for nb in nbs}
    order, admit = schedule(list(by_name), read_estimates(args.estimates), args.jobs, budget)
    mode = f"smoke run ({args.smoke} training steps)" if args.smoke else "FULL=1"
    print(
        f"{mode} on {device} (torch {torch_version}): {len(nbs)} notebook(s), {args.jobs} "
        f"at a time" + (f", estimated peaks within {budget / 1024:.0f} GiB" if budget else ""),
        flush=True,
    )
    results, running, pending = {}, {}, list(order)
    t0 = time.perf_counter()
    deadline = time.time() + args.deadline if args.deadline else 0.0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        while pending or running:
            for name in list(pending):
                if deadline and time.time() > deadline - 1:
                    pending.remove(name)
                    results[name] = {
                        "started": float("nan"),
                        "seconds": float("nan"),
                        "error": "not started: the run's deadline came first",
                        "checks": [],
                        "cell_errors": [],
                        "not_reached": 0,
                    }
                    continue
                if admit(list(running.values()), name):
                    pending.remove(name)
                    fut = pool.submit(
                        run_chapter,
                        by_name[name],
                        args.timeout,
                        out_dir,
                        args.smoke,
                        deadline,
                        max(1, available_cores() // args.jobs),
                    )
                    running[fut] = name
                    results[name] = {"started": time.perf_counter() - t0}
            if not running:
                continue
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                name = running.pop(fut)
                results[name].update(fut.result())
                report(name, results[name], args.smoke)
    wall = time.perf_counter() - t0
    rows, bad = [], 0
    for name in by_name:  # the book's order
        r = results[name]
        failed = [c for c in r["checks"] if not c["held"]]
        # a smoke run trains a few steps: its checks are not expected to hold
        bad += bool(
            (failed and not args.smoke) or r["cell_errors"] or r["error"] or r["not_reached"]
        )
        peaks = r.get("peaks") or {}
        rows.append(
            (
                name,
                device,
                torch_version,
                f"{r['seconds']:.1f}",
                f"{r['started']:.0f}",
                mib(peaks.get("gpu")),
                mib(peaks.get("rss")),
                sum(c["held"] for c in r["checks"]),
                len(failed),
                len(r["cell_errors"]),
                r["not_reached"],
                notes_of(r, checks=not args.smoke),
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "chapter\tdevice\ttorch\tseconds\tstarted_s\tpeak_gpu_mib\tpeak_rss_mib"
        "\tchecks_passed\tchecks_failed\tcell_errors\tcheck_cells_not_reached\tfailures\n"
        + "".join(
            "\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n"
            for row in rows
        )
    )
    print(f"all {len(rows)} notebook(s) in {wall:.0f} s wall; wrote {args.out}")
    return 1 if bad else 0


def mib(value) -> str:
    """Bytes as MiB for the table ("" when not measured)."""
    return "" if value is None else f"{value / 2**20:.0f}"


def notes_of(r: dict, checks: bool = True) -> str:
    """The failed checks (with ``checks``), cell errors and the run's error, in one line."""
    notes = [
        f"check {c['line'] or '?'} -> {c['message']}"
        for c in r["checks"]
        if checks and not c["held"]
    ]
    notes += [f"cell {e['cell']}: {e['line']} -> {e['error']}" for e in r["cell_errors"]]
    notes += [r["error"]] if r["error"] else []
    return "; ".join(notes)


def report(name: str, r: dict, smoke: int) -> None:
    peaks = r.get("peaks") or {}
    print(
        f"{name}: {r['seconds']:.0f} s (started at {r['started']:.0f} s), peak GPU "
        f"{mib(peaks.get('gpu')) or '?'} MiB, RSS {mib(peaks.get('rss')) or '?'} MiB, checks "
        f"{sum(c['held'] for c in r['checks'])} passed, "
        f"{sum(not c['held'] for c in r['checks'])} failed, {len(r['cell_errors'])} cell "
        f"errors, {r['not_reached']} check cells not reached {notes_of(r, not smoke)}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())

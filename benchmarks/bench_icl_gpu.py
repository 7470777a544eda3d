"""ICL-MC at the authors' configuration: training steps per second of the book's library next
to the authors' own code, on the same device in one run.

Run:  PYTHONPATH=PATH python benchmarks/bench_icl_gpu.py [--device cuda] [--steps 2000]
                                                      [--seeds 32] [--out results.json]

PATH is a checkout of the public repository EzraEdelman/Evolution-of-Statistical-Induction-Heads
(its top-level modules ``training_pipeline``, ``datasets``, ``utils`` and ``mingpt`` import each
other, so the checkout goes on ``PYTHONPATH``).  Its ``training_pipeline.train`` is run
unmodified: 2-layer, 1-head, d = 16 attention-only transformer with relative positions, dropout
0.1, AdamW 5e-4, batch 64, sequences of 101 tokens, its DataLoader with 6 worker processes and
its model snapshots every max_iters/200 steps; we only set k = 3 states and the number of
steps.  Ours: ``seqtheory.incontext.PAPER`` trained by ``seqtheory.train`` (a) without
evaluation and (b) as the archive runs it (``incontext.run``: held-out evaluation of 256
sequences every 50 steps); (c) the chapter's
default ``ICLSetup`` (learned positions, no dropout, same sizes) without evaluation.  Each
timing includes set-up (for theirs the start of the data workers); steps/s = steps / wall
seconds, after 50 untimed warm-up steps of ours in the same process.  With ``--seeds M``,
seeds per second: ours trains M seeds of PAPER as one batched program
(``incontext.run_seeds``), theirs one seed per process (steps/s / steps).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import time
from pathlib import Path

import torch


def ours(device: str, steps: int) -> dict:
    from seqtheory import seed_everything, train
    from seqtheory.incontext import PAPER, SETUP
    from seqtheory.incontext import run as run_icl

    setup = PAPER.replace(steps=steps)
    out = {}
    seed_everything(1)  # warm-up (kernels, allocator), not timed
    train(setup.model().to(device), setup.batch, setup.train_config(steps=50), progress=False)
    seed_everything(0)
    model = setup.model().to(device)
    _sync(device)
    start = time.perf_counter()
    train(model, setup.batch, setup.train_config(), progress=False)
    _sync(device)
    out["seqtheory train (no evaluation)"] = steps / (time.perf_counter() - start)
    start = time.perf_counter()
    run_icl(setup, seed=0, progress=False, device=device)
    _sync(device)
    out["seqtheory incontext.run (evaluation every 50 steps)"] = steps / (
        time.perf_counter() - start
    )
    # the book's default run (the chapter's): learned positions, no dropout, lr 1e-3
    default = SETUP.cpu.replace(steps=steps)
    model = default.model().to(device)
    _sync(device)
    start = time.perf_counter()
    train(model, default.batch, default.train_config(), progress=False)
    _sync(device)
    out["seqtheory default ICLSetup (learned positions, no dropout)"] = steps / (
        time.perf_counter() - start
    )
    return out


def ours_seeds(device: str, steps: int, members: int) -> dict:
    """``seqtheory.incontext.run_seeds``: ``members`` seeds of PAPER as one batched program,
    evaluated every 50 steps; seeds per second counts a seed as ``steps`` steps."""
    from seqtheory.incontext import PAPER, run_seeds

    setup = PAPER.replace(steps=steps)
    run_seeds(
        setup.replace(steps=50), seeds=range(members), seed=1, device=device, progress=False
    )  # warm-up, not timed
    _sync(device)
    start = time.perf_counter()
    run_seeds(setup, seeds=range(members), seed=0, device=device, progress=False)
    _sync(device)
    return {
        f"seqtheory incontext.run_seeds, {members} seeds at once (seeds/s)": members
        / (time.perf_counter() - start)
    }


def authors_pipeline():
    """The authors' ``training_pipeline`` module, from the checkout on ``PYTHONPATH``."""
    try:
        return importlib.import_module("training_pipeline")
    except ModuleNotFoundError as err:
        raise SystemExit(
            "the authors' training_pipeline is not importable: run with "
            "PYTHONPATH=<a checkout of EzraEdelman/Evolution-of-Statistical-"
            f"Induction-Heads> ({err})"
        ) from None


def theirs(tp, device: str, steps: int) -> dict:
    """Steps per second of the authors' ``tp.train`` (``tp``: their module; it picks cuda:0
    when it can, so the device is set on it)."""
    tp.device = torch.device(device)
    config = tp.get_default_config()
    config.vocab_size, config.n, config.max_iters = 3, 2, steps
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        tp.train(config)
    _sync(device)
    return {"authors' training_pipeline.train": steps / (time.perf_counter() - start)}


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (CPU runs)")
    parser.add_argument(
        "--seeds",
        type=int,
        default=0,
        help="also train this many seeds as one batched program and compare "
        "seeds per second with the authors' code (one process, one seed)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.seeds < 0:
        parser.error(f"--seeds must be 0 or a number of seeds, got {args.seeds}")
    tp = authors_pipeline()
    torch.set_num_threads(args.threads)
    name = (
        torch.cuda.get_device_name()
        if args.device.startswith("cuda")
        else f"CPU, {args.threads} thread(s)"
    )
    rates = {**ours(args.device, args.steps), **theirs(tp, args.device, args.steps)}
    base = rates["authors' training_pipeline.train"]
    print(
        f"ICL-MC, {args.steps} steps on {name} (torch {torch.__version__}); the authors' code "
        "and the first two rows: the PAPER configuration; the default row: learned positions, no "
        "dropout (not the same work); one run each, ours first"
    )
    for k, v in rates.items():
        print(f"  {k:<60} {v:8.1f} steps/s  ({v / base:.2f}x the authors' code)")
    seeds_per_s = {}
    if args.seeds:
        seeds_per_s = {
            "authors' training_pipeline.train (one seed, seeds/s)": base / args.steps,
            **ours_seeds(args.device, args.steps, args.seeds),
        }
        for k, v in seeds_per_s.items():
            print(f"  {k:<60} {v:8.3f} seeds/s ({v * args.steps / base:.2f}x the authors' code)")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "device": name,
                    "torch": torch.__version__,
                    "steps": args.steps,
                    "steps_per_s": rates,
                    "seeds_per_s": seeds_per_s,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()

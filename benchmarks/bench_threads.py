"""Torch threads for the book's tiny models, on an idle and on a busy machine.

Times one chapter's main training (300 steps of the induction-heads chapter's ICL-MC model,
default configuration) with 1 and 2 intra-op threads, (a) on an idle machine, (b) next to
one busy program (a pure-Python spin loop), (c) next to another torch job (a 2-thread
matrix-multiply loop, as when two chapters or a chapter and a test run at once). Each
setting is measured in a fresh subprocess, interleaved, and the median of ``--repeats``
runs is printed with the ratio to the idle 1-thread time. This is what chose the library's
default of one thread (``seqtheory.core.runtime.default_threads``); the goal is that the default
stays within 1.5x of its idle time next to one busy program.

    python benchmarks/bench_threads.py [--steps 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import time

TRAIN = textwrap.dedent("""
    import sys, time, torch
    from seqtheory.incontext import ICLSetup
    from seqtheory.sources.markov import icl_mc_batch
    from seqtheory.core.training import train
    from seqtheory.core.seeds import make_generator, seeded
    torch.set_num_threads(int(sys.argv[1]))
    setup = ICLSetup()
    with seeded(0):
        model = setup.model()
    g = make_generator(0)
    t = time.perf_counter()
    train(model, lambda s: setup.batch(s, generator=g), steps=int(sys.argv[2]),
          lr=setup.lr, progress=False)
    print(time.perf_counter() - t)
""")

SPIN = "while True: pass"
TORCH_JOB = textwrap.dedent("""
    import torch
    torch.set_num_threads(2)
    a = torch.randn(512, 512)
    while True:
        a = (a @ a).tanh()
""")


def timed_run(threads: int, steps: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TRAIN, str(threads), str(steps)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    loads = {"idle": None, "one busy program": SPIN, "a 2-thread torch job": TORCH_JOB}
    times: dict = {(load, t): [] for load in loads for t in (1, 2)}
    for _ in range(args.repeats):
        for load, code in loads.items():
            proc = subprocess.Popen([sys.executable, "-c", code]) if code else None
            try:
                time.sleep(0.5 if proc else 0)
                for t in (1, 2):
                    times[(load, t)].append(timed_run(t, args.steps))
            finally:
                if proc:
                    proc.kill()
                    proc.wait()
    idle1 = statistics.median(times[("idle", 1)])
    print(f"{args.steps} ICL-MC training steps (default ICLSetup), median of {args.repeats}")
    print("| load | threads | seconds | x idle, 1 thread |\n|---|---|---|---|")
    for (load, t), v in times.items():
        m = statistics.median(v)
        print(f"| {load} | {t} | {m:.2f} | {m / idle1:.2f} |")


if __name__ == "__main__":
    main()

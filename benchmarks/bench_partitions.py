"""Speed of the partitions experiments: SAT recovery sweep and batched gradient descent.

Run:  python benchmarks/bench_partitions.py

Prints, for N in {16, 32, 64} (K = 3 classes, I = 3 groups, binary g known), the mean SAT
time per instance (both solves) and CNF size at c = S / (N ln N) in {2, 4, 8}, and the time
of gradient descent on embeddings for 8 runs trained as one tensor program.
"""
from __future__ import annotations

import math
import time

import numpy as np

from seqtheory.partitions import planted_problem, sample, solve_partitions, train_embeddings


def main() -> None:
    print(f"{'N':>4} {'c':>3} {'samples':>8} {'clauses':>8} {'SAT ms/instance':>16}")
    for N in (16, 32, 64):
        for c in (2, 4, 8):
            S = int(c * N * math.log(N))
            times, sizes = [], []
            for trial in range(10):
                pb = planted_problem(N, 3, 3, seed=trial)
                x, y = sample(pb, S, seed=100 + trial)
                start = time.perf_counter()
                res = solve_partitions(x, y, N, 3, g=pb.g)
                times.append(time.perf_counter() - start)
                sizes.append(res.n_clauses)
            print(f"{N:4d} {c:3d} {S:8d} {int(np.mean(sizes)):8d} {np.mean(times) * 1e3:16.1f}")
    N, S = 32, int(16 * 32 * math.log(32))
    data = [sample(planted_problem(N, 3, 3, seed=t), S, seed=t) for t in range(8)]
    start = time.perf_counter()
    train_embeddings([d[0] for d in data], [d[1] for d in data], N, 3, steps=1500, lr=0.03)
    print(f"gradient descent, 8 runs x {S} samples x 1500 steps (N = {N}): "
          f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

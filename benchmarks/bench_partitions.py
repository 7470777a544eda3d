"""Speed of the partitions experiments: SAT recovery sweep and batched gradient descent.

Run:  python benchmarks/bench_partitions.py

Prints, for N in {16, 32, 64} (K = 3 classes, I = 3 groups, binary g known), the mean SAT
time per instance (both solves) and CNF size at c = S / (N ln N) in {2, 4, 8}, and the time
of gradient descent on embeddings for 8 runs trained as one tensor program, through
``training.train`` (``train_embeddings``) against the hand-written full-batch Adam loop it
replaced (same bits; CPU seconds per step).  Then the
recovery-threshold search of the chapter's Experiment 1 (smallest S that recovers an
instance, to 2%): one incremental solver with activation literals
(``recovery_threshold``) against the same search with a fresh CNF and solver per
prefix.  Building and loading the CNF in Python, not the SAT search, dominated the fresh
version; measured 2026-11-23 on this CPU (shared, loaded), N = 128: 0.99 s CPU per
instance fresh, 0.11 s incremental (9x); N = 32: 0.20 s vs 0.05 s.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from seqtheory.partitions import (
    _predict_all,
    planted_problem,
    recovery_threshold,
    same_partition,
    sample,
    samples_for,
    solve_partitions,
    train_embeddings,
)


def fresh_threshold(pb, s_max: int, seed: int, rel_tol: float = 0.02) -> int:
    """The same search, but a new CNF and solver for every prefix (the old way)."""
    x, y = sample(pb, s_max, seed=seed)

    def ok(S):
        res = solve_partitions(x[:S], y[:S], pb.N, pb.K, g=pb.g)
        return res.status == "unique" and same_partition(res.labels, pb.labels)

    lo, hi = 0, s_max
    while hi - lo > max(1.0, rel_tol * hi):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def adam_loop(xs, ys, N: int, I: int, steps: int, lr: float, m: int = 3) -> None:  # noqa: E741
    """The dense full-batch Adam loop that train_embeddings had before it used train()."""
    from seqtheory.core.seeds import make_generator

    R, S = len(xs), max(len(x) for x in xs)
    X, Y, W = torch.zeros(R, S, I, dtype=torch.long), torch.zeros(R, S), torch.zeros(R, S)
    for r, (x, y) in enumerate(zip(xs, ys, strict=True)):
        y = (y - y.mean()) / (y.std() + 1e-8)
        X[r, : len(x)], W[r, : len(y)] = torch.as_tensor(x), 1.0 / len(y)
        Y[r, : len(y)] = torch.as_tensor(y, dtype=torch.float32)
    gen = make_generator(0)
    E = (0.1 * torch.randn(R, I, N, m, generator=gen)).requires_grad_()
    T = (0.1 * torch.randn(R, *([m] * I), generator=gen)).requires_grad_()
    opt = torch.optim.Adam([E, T], lr=lr)
    flat = torch.zeros(R, S, dtype=torch.long)
    for i in range(I):
        flat = flat * N + X[:, :, i]
    C = torch.zeros(R, N**I).scatter_add_(1, flat, W)
    Ysum = torch.zeros(R, N**I).scatter_add_(1, flat, W * Y)
    const = (W * Y**2).sum(1)
    for _ in range(steps):
        f = _predict_all(E, T)
        loss_r = ((C * f - 2 * Ysum) * f).sum(1) + const
        opt.zero_grad()
        loss_r.sum().backward()
        opt.step()


def main() -> None:
    torch.set_num_threads(1)
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
    xs, ys = [d[0] for d in data], [d[1] for d in data]
    cpu = {}
    for name, fn in [
        ("hand-written Adam loop", lambda: adam_loop(xs, ys, N, 3, 1500, 0.03)),
        (
            "train_embeddings (training.train)",
            lambda: train_embeddings(xs, ys, N, 3, steps=1500, lr=0.03),
        ),
    ]:
        fn()  # warm up (lazy imports)
        start = time.process_time()
        for _ in range(2):
            fn()
        cpu[name] = (time.process_time() - start) / 2
    for name, sec in cpu.items():
        print(
            f"gradient descent, 8 runs x {S} samples x 1500 steps (N = {N}), {name}: "
            f"{sec:.2f} s CPU ({sec / 1500 * 1e3:.2f} ms/step)"
        )
    print(f"\n{'N':>4} {'fresh s/instance':>17} {'incremental s/instance':>23}")
    for N in (32, 64, 128):
        pbs = [planted_problem(N, 3, 3, seed=t) for t in range(5)]
        times = []
        for fn in (fresh_threshold, lambda p, s, seed: recovery_threshold(p, s, seed=seed)):
            start = time.process_time()
            for t, pb in enumerate(pbs):
                fn(pb, samples_for(16, N), seed=10_000 + t)
            times.append((time.process_time() - start) / len(pbs))
        print(f"{N:4d} {times[0]:17.3f} {times[1]:23.3f}")


if __name__ == "__main__":
    main()

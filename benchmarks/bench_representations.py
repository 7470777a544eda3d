"""Speed of the universality chapter's routines (seqtheory.similarity and
seqtheory.kinship): CKA, affine stitching, batched training.

Run:  python benchmarks/bench_representations.py

Prints (one torch thread, as in CI):
1. linear and debiased CKA for n examples x d features;
2. affine stitching of M maps trained as one tensor program (300 steps each) against
   stitching the same M maps one at a time;
3. training the chapter's zoo (8 sizes x 4 seeds, 1000 steps) as one program against
   training each model on its own, on the chapter's family forest.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from seqtheory.kinship import train_kinship
from seqtheory.similarity import debiased_cka, linear_cka, stitch
from seqtheory.sources.knowledge_graphs import FamilyForest, kinship_data


def timed(fn, repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'n':>6} {'d':>4} {'linear CKA ms':>14} {'debiased CKA ms':>16}")
    for n, d in [(44, 8), (500, 64), (2000, 128), (5000, 256)]:
        X, Y = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        rep = 20 if n <= 500 else 2
        t_lin = timed(lambda X=X, Y=Y: linear_cka(X, Y), rep)
        t_deb = timed(lambda X=X, Y=Y: debiased_cka(X, Y), rep)
        print(f"{n:6d} {d:4d} {t_lin * 1e3:14.2f} {t_deb * 1e3:16.2f}")

    forest = FamilyForest.generate(n_families=2, generations=4, children=(2, 2), seed=0)
    data = kinship_data(forest, 0.8, seed=0)
    dims, seeds = (1, 2, 3, 4, 6, 8, 16, 32), (0, 1, 2, 3)
    start = time.perf_counter()
    zoo, _ = train_kinship(data, dims, seeds, progress=False)
    batched = time.perf_counter() - start
    start = time.perf_counter()
    for d in dims[:2]:  # two sizes alone, scaled up to all eight
        for s in seeds:
            train_kinship(data, d, (s,), progress=False)
    alone = (time.perf_counter() - start) * len(dims) / 2
    print(
        f"\ntraining {len(dims) * len(seeds)} models x 1000 steps ({forest.n} people): "
        f"one program {batched:.1f} s, one model at a time ~{alone:.1f} s "
        f"({alone / batched:.1f}x)"
    )

    M = zoo.n_models
    src = [zoo.embedding((m + 1) % M) for m in range(M)]
    t_batch = timed(lambda: stitch(src, zoo, data))
    t_single = timed(lambda: [stitch(src[m], zoo.select(m), data) for m in range(8)]) * M / 8
    print(
        f"stitching {M} affine maps x 300 steps: one program {t_batch:.1f} s, "
        f"one map at a time ~{t_single:.1f} s ({t_single / t_batch:.1f}x)"
    )


if __name__ == "__main__":
    main()

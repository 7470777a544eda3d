"""Intrinsic-dimension estimation speed: seqtheory's MLE against scikit-dimension's.

Run:  python benchmarks/bench_intrinsic_dimension.py [--n 20000] [--D 768] [--d 32]
                                                     [--repeats 3] [--threads 2]

Points: n samples of the sphere S^d in R^D, in two versions:
* "linear": randomly rotated into R^D (rank d + 1: what a linear map of a d-dimensional
  manifold gives; ``knn_distances`` searches in the span of the data);
* "full rank": the same plus isotropic Gaussian noise of standard deviation 1e-3 in every
  one of the D directions (rank D, like real activations: no shortcut; the estimate moves
  only slightly).
Both estimators use K = 20 neighbours and the harmonic-mean combination; the table reports
both estimates, median wall-clock seconds of interleaved runs, and the speed-up
(scikit-dimension's seconds / ours) measured in this run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from seqtheory.sources.dimension import mle_dimension, sample_sphere


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--D", type=int, default=768)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import skdim  # in requirements.txt: the comparison must not skip
    import threadpoolctl

    X = sample_sphere(args.n, args.d, D=args.D, seed=0)
    noisy = X + 1e-3 * np.random.default_rng(1).standard_normal(X.shape)
    print(
        f"S^{args.d} in R^{args.D}, n = {args.n:,}, K = 20, {args.threads} thread(s); "
        f"median of {args.repeats} interleaved runs"
    )
    print(
        f"{'points':10s} {'ours':>9s} {'skdim':>9s} {'ours s':>7s} {'skdim s':>8s} {'speed-up':>8s}"
    )
    with threadpoolctl.threadpool_limits(args.threads):
        for name, Z in (("linear", X), ("full rank", noisy)):
            ours, theirs = [], []
            for _ in range(args.repeats):
                est, t = timed(lambda Z=Z: mle_dimension(Z, 20))
                ours.append(t)
                ref, t = timed(lambda Z=Z: skdim.id.MLE().fit(Z, n_neighbors=20).dimension_)
                theirs.append(t)
            a, b = float(np.median(ours)), float(np.median(theirs))
            print(f"{name:10s} {est:9.4f} {ref:9.4f} {a:7.2f} {b:8.2f} {b / a:7.2f}x")


if __name__ == "__main__":
    main()

"""Intrinsic-dimension estimation speed: seqtheory's MLE against scikit-dimension's.

Run:  python benchmarks/bench_intrinsic_dimension.py [--n 20000] [--D 768] [--d 32]

Points: n samples of the sphere S^d, randomly rotated into R^D (like model activations:
high ambient, lower intrinsic dimension). Both estimators use K = 20 neighbours and the
harmonic-mean combination; the table reports the estimates and wall-clock seconds.
"""
from __future__ import annotations

import argparse
import time

import torch

from seqtheory.dimension import mle_dimension, sample_sphere


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--D", type=int, default=768)
    parser.add_argument("--d", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(2)
    X = sample_sphere(args.n, args.d, D=args.D, seed=0)
    start = time.perf_counter()
    ours = mle_dimension(X, 20)
    t_ours = time.perf_counter() - start
    print(f"S^{args.d} in R^{args.D}, n = {args.n:,}")
    print(f"{'estimator':26s} {'estimate':>9s} {'seconds':>8s}")
    print(f"{'seqtheory mle_dimension':26s} {ours:9.3f} {t_ours:8.1f}")
    try:
        import skdim
    except ImportError:
        print("scikit-dimension not installed: pip install scikit-dimension")
        return
    start = time.perf_counter()
    ref = skdim.id.MLE().fit(X, n_neighbors=20).dimension_
    t_ref = time.perf_counter() - start
    print(f"{'scikit-dimension MLE':26s} {ref:9.3f} {t_ref:8.1f}")
    print(f"speed-up: {t_ref / t_ours:.1f}x")


if __name__ == "__main__":
    main()

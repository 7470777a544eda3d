"""Several seeds as one batched program (seqtheory.Ensemble) vs one seed after another.

For each model, times ``--steps`` training steps of M seeds trained (a) one after the
other and (b) as one :class:`seqtheory.Ensemble` (stacked weights, ``torch.func.vmap``),
interleaved, one torch thread, and prints the speed-up (a)/(b). Tiny, overhead-bound
models gain most; a model whose step is already dominated by arithmetic (matrix products
that fill the core) gains little, because batching saves launches, not arithmetic.

    python benchmarks/bench_ensemble.py [--seeds 3] [--steps 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from seqtheory import Ensemble, Transformer, TransformerConfig, make_generator, seeded
from seqtheory.copying import SETUP, copy_batch, copy_model
from seqtheory.core.training import train


def cases():
    cfg = SETUP.cpu
    L = cfg.max_len

    def copy_data(M, g):
        def batch(step):
            xs, ys = zip(
                *(copy_batch(cfg.batch_size, cfg.min_len, L, generator=g) for _ in range(M)),
                strict=True,
            )
            return (torch.stack(xs), torch.stack(ys)) if M > 1 else (xs[0], ys[0])

        return batch

    def icl_data(B, T, V):
        def make(M, g):
            def batch(step):
                shape = (M, B, T) if M > 1 else (B, T)
                x = torch.randint(0, V, shape, generator=g)
                return x, x.roll(-1, dims=-1)

            return batch

        return make

    tiny = TransformerConfig(vocab_size=3, max_len=32, n_layers=2, d_model=16, attn_only=True)
    icl = TransformerConfig(vocab_size=3, max_len=100, n_layers=2, d_model=16, attn_only=True)
    return {
        "tiny attention-only, B=8, T=32": (lambda: Transformer(tiny), icl_data(8, 32, 3)),
        "ICL-MC default, B=64, T=100": (lambda: Transformer(icl), icl_data(64, 100, 3)),
        "copying transformer, B=32": (lambda: copy_model("transformer", cfg), copy_data),
        "copying linear recurrence, B=32": (
            lambda: copy_model("linear recurrence", cfg),
            copy_data,
        ),
    }


def time_sequential(build, data, seeds, steps):
    start = time.perf_counter()
    for s in seeds:
        with seeded(s):
            model = build()
        train(model, data(1, make_generator(s)), steps=steps, progress=False)
    return time.perf_counter() - start


def time_ensemble(build, data, seeds, steps):
    start = time.perf_counter()
    ens = Ensemble(build, seeds)
    train(ens, data(len(seeds), make_generator(0)), steps=steps, progress=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = list(range(args.seeds))
    print(f"{args.seeds} seeds x {args.steps} steps, 1 thread, median of {args.repeats}")
    print("| model | one after another (s) | Ensemble (s) | speed-up |\n|---|---|---|---|")
    for name, (build, data) in cases().items():
        seq, ens = [], []
        for _ in range(args.repeats):
            seq.append(time_sequential(build, data, seeds, args.steps))
            ens.append(time_ensemble(build, data, seeds, args.steps))
        a, b = statistics.median(seq), statistics.median(ens)
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()

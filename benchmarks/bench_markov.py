"""Speed of the ICL-MC pieces: sampling, reference predictors, and the main training run.

Run:  python benchmarks/bench_markov.py [--repeats 20]

Configuration of the induction-heads chapter: k = 3 states, T = 100, batch 64,
2-layer attention-only transformer with d_model = 16.  Prints a table with
  - tokens/s of `icl_mc_batch` (vectorised over batch and time by doubling) and, for
    comparison, of a step-by-step loop over time with the same tensors;
  - tokens/s of the bigram predictor and of the evaluator;
  - training steps/s of the main configuration (batch sampling included), 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import time

import torch

from seqtheory import seed_everything, train
from seqtheory.incontext import SETUP, ICLEvaluator
from seqtheory.sources.markov import (
    bigram_predictor,
    icl_mc_batch,
    sample_transition_matrices,
    stationary_distribution,
)


def timeit(fn, repeats: int) -> float:
    """Seconds per call (median of `repeats`, after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def loop_sampler(batch: int, k: int, T: int) -> torch.Tensor:
    """The obvious implementation: one multinomial draw per time step (for comparison)."""
    P = sample_transition_matrices(batch, k)
    x = torch.empty(batch, T, dtype=torch.long)
    x[:, 0] = torch.multinomial(stationary_distribution(P), 1)[:, 0]
    rows = torch.arange(batch)
    for t in range(1, T):
        x[:, t] = torch.multinomial(P[rows, x[:, t - 1]], 1)[:, 0]
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    cfg = SETUP.pick("cpu")
    B, k, T = cfg.batch_size, cfg.k, cfg.T
    tokens = B * T
    seed_everything(0)
    x, _ = icl_mc_batch(B, k, T)
    evaluator = ICLEvaluator(cfg, n=512)
    rows = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        t_vec = timeit(lambda: icl_mc_batch(B, k, T), args.repeats)
        t_loop = timeit(lambda: loop_sampler(B, k, T), args.repeats)
        t_bigram = timeit(lambda: bigram_predictor(x, k), args.repeats)
        model = cfg.model()
        t_eval = timeit(lambda m=model: evaluator(m, 0), max(3, args.repeats // 4))
        steps = 100
        hist = train(model, cfg.batch, steps=steps, lr=cfg.lr, progress=False)
        rows += [
            (threads, "icl_mc_batch (doubling)", f"{tokens / t_vec:,.0f} tokens/s"),
            (threads, "step-by-step sampling loop", f"{tokens / t_loop:,.0f} tokens/s"),
            (threads, "bigram_predictor", f"{tokens / t_bigram:,.0f} tokens/s"),
            (threads, "ICLEvaluator (512 sequences)", f"{t_eval * 1e3:.0f} ms per call"),
            (threads, "training, main config", f"{steps / hist.seconds:.1f} steps/s"),
        ]
    print(f"k={k}, T={T}, batch={B}, d_model={cfg.d_model}, {cfg.n_layers} layers attention-only")
    print(f"{'threads':>7}  {'what':32s} {'speed':>22s}")
    for threads, what, speed in rows:
        print(f"{threads:>7}  {what:32s} {speed:>22s}")


if __name__ == "__main__":
    main()

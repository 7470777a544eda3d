"""Training-step speed of the book's transformer at a few sizes.

Run:  python benchmarks/bench_models.py [--steps 30] [--threads 1 2]

Each configuration runs in a fresh process (so peak memory is its own) and reports
optimisation steps per second, tokens per second and the process's peak resident memory.
It also times the two attention paths: the fused kernel used in training and the explicit
one that returns attention patterns (``return_cache=True``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time

CONFIGS = {
    # name: (model config, batch size, sequence length)
    "meet-the-model (1L d32, T24)": (
        dict(vocab_size=8, n_layers=1, d_model=32, attn_only=True),
        64,
        24,
    ),
    "induction heads (2L d16 attn-only, T100, relative)": (
        dict(vocab_size=3, n_layers=2, d_model=16, attn_only=True, pos_encoding="relative"),
        64,
        100,
    ),
    "induction heads (2L d16 attn-only, T100, learned)": (
        dict(vocab_size=3, n_layers=2, d_model=16, attn_only=True),
        64,
        100,
    ),
    "small GPT (2L d64 4h MLP, T128)": (
        dict(vocab_size=64, n_layers=2, n_heads=4, d_model=64),
        32,
        128,
    ),
    "tokenization: characters (2L d32 2h MLP, T256)": (
        dict(vocab_size=2, n_layers=2, n_heads=2, d_model=32),
        32,
        256,
    ),
    "tokenization: BPE-64 tokens (2L d32 2h MLP, T96)": (
        dict(vocab_size=64, n_layers=2, n_heads=2, d_model=32),
        32,
        96,
    ),
    "GPT (4L d128 4h MLP, T256)": (
        dict(vocab_size=256, n_layers=4, n_heads=4, d_model=128),
        16,
        256,
    ),
}


def _measure(name: str, threads: int, steps: int, patterns: bool, queue) -> None:
    import torch

    from seqtheory import Transformer, TransformerConfig, seed_everything
    from seqtheory.core.training import next_token_loss

    torch.set_num_threads(threads)
    seed_everything(0)
    model_kw, batch, seq_len = CONFIGS[name]
    model = Transformer(TransformerConfig(max_len=seq_len, **model_kw))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    vocab = model_kw["vocab_size"]

    def step():
        x = torch.randint(vocab, (batch, seq_len))
        out = model(x, return_cache=patterns)
        logits = out[0] if patterns else out
        loss = next_token_loss(logits[:, :-1], x[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):  # warm-up
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put((steps / seconds, steps * batch * seq_len / seconds, peak_mb, model.num_params()))


def measure(name: str, threads: int, steps: int, patterns: bool = False):
    """(steps/s, tokens/s, peak MB, parameters) of one configuration, in a fresh process."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(name, threads, steps, patterns, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per configuration")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", default="", help="run configurations whose name contains this")
    args = parser.parse_args()

    header = (
        f"{'configuration':52s} {'params':>8s} {'thr':>3s} {'attention':>9s} "
        f"{'steps/s':>8s} {'tokens/s':>10s} {'peak MB':>8s}"
    )
    print(header)
    print("-" * len(header))
    for name in [n for n in CONFIGS if args.only in n]:
        for threads in args.threads:
            for patterns in (False, True):
                sps, tps, mb, n = measure(name, threads, args.steps, patterns)
                path = "explicit" if patterns else "fused"
                print(
                    f"{name:52s} {n:8,d} {threads:3d} {path:>9s} {sps:8.1f} {tps:10,.0f} {mb:8.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

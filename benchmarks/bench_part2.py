"""Speed of Part II's training loops: batched parity networks, copy models, chain models.

Run:  python benchmarks/bench_part2.py

Prints (one torch thread, as in CI):
1. online SGD on sparse parities: M width-1000 networks as one tensor program against
   training them one at a time (milliseconds per network-step);
2. one training step of each copying model (batch 32, strings of 5-16 letters);
3. a step of the chain-of-thought models, linear and MLP, on the threshold chain.
"""

from __future__ import annotations

import time

import torch

from seqtheory.chain_of_thought import SETUP as COT_SETUP
from seqtheory.chain_of_thought import all_bit_strings, train_chain_models
from seqtheory.copying import SETUP as COPY_SETUP
from seqtheory.copying import copy_models, train_copier
from seqtheory.core.validate import dataclass_replace
from seqtheory.parity import ParityMLPs, train_online


def per_step(fn, steps: int) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / steps * 1000


def main() -> None:
    torch.set_num_threads(1)
    steps = 200
    print("1. online SGD, n=30, k=3, width 1000, batch 32 (ms per network-step)")
    for M in (1, 4, 8):

        def batched(M=M):
            g = torch.Generator().manual_seed(0)
            train_online(
                ParityMLPs(30, [1000] * M, generator=g),
                [0, 1, 2],
                steps=steps,
                eval_every=steps,
                generator=g,
                progress=False,
            )

        note = "  (one network on its own)" if M == 1 else ""
        print(f"   M={M}: {per_step(batched, steps * M):.2f}{note}")

    print("2. copying models, one step (ms), batch 32")
    cfg = COPY_SETUP.cpu
    for name, model in copy_models(cfg, seed=0).items():
        t = per_step(
            lambda model=model: train_copier(
                model, dataclass_replace(cfg, eval_every=10_000), steps=50, progress=False
            ),
            50,
        )
        print(f"   {name:>18}: {t:.1f}")

    print("3. chain-of-thought models (threshold chain, n=12, 3 seeds), one step (ms)")
    x = all_bit_strings(12)[:512]
    for name, hidden in (("linear", None), ("MLP", 32)):
        setup = dataclass_replace(COT_SETUP.cpu, steps=100)
        t = per_step(
            lambda hidden=hidden, setup=setup: train_chain_models(
                "threshold",
                hidden,
                x,
                setup,
                generator=torch.Generator().manual_seed(0),
                progress=False,
            ),
            100,
        )
        print(f"   {name:>6}: {t:.1f}")


if __name__ == "__main__":
    main()

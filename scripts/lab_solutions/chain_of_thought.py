"""Reference solutions of the chain of thought chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``chain_of_thought.labs.json`` next to this file.
"""

from __future__ import annotations

import torch

from seqtheory.chain_of_thought import (
    all_bit_strings,
    parity_chain,
)
from seqtheory.chapters.chain_of_thought import (
    BLOCKS,
    LABS,
    binary_count_by_thresholds,
    block_chain,
    chain_answer_accuracy,
    split_strings,
    token_accuracy,
    train_on_chains,
)
from seqtheory.core.seeds import make_generator


@LABS.solves(
    "ex-chain-of-thought-3",
    mistakes=(
        ("[S >= 2^j] without subtracting the digits already written", 0.250244140625),
        (
            "the digits computed least significant first, each after subtracting the lower ones",
            0.000244140625,
        ),
    ),
)
def _thresholds(seed: int) -> float:
    x = all_bit_strings(12)
    chain = parity_chain(x, "binary")[:, 12:]
    return float((binary_count_by_thresholds(x) == chain).all(dim=1).float().mean())


@LABS.solves(
    "ex-chain-of-thought-4",
    mistakes=(
        ("the digits not reversed (both models on the same order)", [0.933, 0.947]),
        ("the last token read in both orders (b_3 in the reversed one)", [0.933, 1.0]),
    ),
)
def _digit_order(seed: int) -> list[float]:
    g = make_generator(21, base=seed)
    train_x, test_x = split_strings(12, 512, g)
    out = []
    for flip in (False, True):
        seqs = [parity_chain(x, "binary") for x in (train_x, test_x)]
        if flip:
            seqs = [torch.cat([s[:, :12], s[:, 12:].flip(1)], dim=1) for s in seqs]
        model = train_on_chains(seqs[0], 12, steps=400, generator=g)
        acc = token_accuracy(model, seqs[1], 12).mean(axis=0)  # (4,)
        out.append(float(acc[0] if flip else acc[-1]))
    return out


@LABS.solves(
    "ex-chain-of-thought-5",
    mistakes=(
        ("both measured on the 64 training strings", [1.0, 1.0]),
        ("no chain (one token: both numbers the same)", [0.5, 0.5]),
    ),
)
def _compound(seed: int) -> list[float]:
    g = make_generator(22, base=seed)
    train_x, test_x = split_strings(12, 64, g)
    train_seqs, test_seqs = parity_chain(train_x, "threshold"), parity_chain(test_x, "threshold")
    model = train_on_chains(train_seqs, 12, steps=300, generator=g)
    return [
        float(token_accuracy(model, test_seqs, 12).mean()),
        float(chain_answer_accuracy(model, test_seqs, 12).mean()),
    ]


@LABS.solves(
    "ex-chain-of-thought-6",
    mistakes=(
        ("accuracy on the 512 training strings", [1.0, 0.996, 0.973, 0.833]),
        ("the same k = 2 chain for every k", [1.0, 1.0, 1.0, 1.0]),
    ),
)
def _block_steps(seed: int) -> list[float]:
    g = make_generator(23, base=seed)
    train_x, test_x = split_strings(12, 512, g)
    out = []
    for k in BLOCKS:
        model = train_on_chains(block_chain(train_x, k), 12, hidden=32, steps=300, generator=g)
        out.append(float(chain_answer_accuracy(model, block_chain(test_x, k), 12).mean()))
    return out

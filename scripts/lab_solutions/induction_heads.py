"""Reference solutions of the induction heads chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``induction_heads.labs.json`` next to this file.
"""

from __future__ import annotations

import numpy as np
import torch

from seqtheory.chapters.induction_heads import LABS
from seqtheory.core.seeds import make_generator
from seqtheory.incontext import (
    SETUP as ICL_SETUP,
)
from seqtheory.incontext import (
    ICLEvaluator,
    MinimalICL,
)
from seqtheory.sources.markov import (
    icl_mc_batch,
    sequence_loss,
    strategies,
)


def set_circuit(net: MinimalICL, c: float) -> MinimalICL:
    """The statistical induction head in the minimal model, by hand: layer 1's logit ``c``
    on distance 1 (the previous token) and layer 2's ``W = c I`` (match the query's token
    with the token before the key)."""
    with torch.no_grad():
        net.w.zero_()
        net.w[1] = c
        net.W.copy_(c * torch.eye(net.k))
    return net.requires_grad_(False)


@LABS.solves(
    "ex-induction-heads-6",
    mistakes=(
        ("a uniformly drawn first state instead of the stationary one", 0.3321),
        ("k = 2 instead of the chapter's k = 3", 0.5912),
        ("the share of chains with x_2 = 0", 0.3329),
    ),
)
def _first_token(seed: int) -> float:
    cpu = ICL_SETUP.cpu
    x2, _ = icl_mc_batch(100_000, cpu.k, 2, cpu.alpha, generator=make_generator(6, base=seed))
    return (x2[:, 1] == x2[:, 0]).double().mean().item()


@LABS.solves(
    "ex-induction-heads-7",
    mistakes=(
        ("layer 1 on distance 0 (the key's own token)", 2.2102),
        ("W = c 11^T, equal scores for every key (the unigram rule again)", 0.1426),
        ("layer 1 left uniform (w = 0), only W = c I", 0.4637),
        ("c = 2, too small for a sharp match", 0.1106),
    ),
)
def _circuit_by_hand(seed: int) -> float:
    cpu = ICL_SETUP.cpu
    evaluator = ICLEvaluator(cpu, n=512, base=seed)  # the main run's held-out sequences
    hand = set_circuit(MinimalICL(cpu.k, cpu.T), c=10.0)
    return evaluator(hand)["KL(bigram||model) @last"]


@LABS.solves(
    "ex-induction-heads-8",
    mistakes=(
        ("the unigram rule instead of the bigram rule", 12.95),
        ("the excess without the factor t", 0.0356),
        ("k = 2 instead of the chapter's k = 3", 0.9295),
        ("all positions t = 1..99 instead of 50..99", 2.2034),
    ),
)
def _price_of_not_knowing(seed: int) -> float:
    cpu = ICL_SETUP.cpu
    x, P = icl_mc_batch(8000, cpu.k, cpu.T, cpu.alpha, generator=make_generator(8, base=seed))
    rules = strategies(x, P, cpu.alpha)
    excess = (sequence_loss(rules["bigram"], x) - sequence_loss(rules["oracle"], x)).mean(0)
    t = np.arange(cpu.T)
    return float((t[50:] * excess[50:].numpy()).mean())

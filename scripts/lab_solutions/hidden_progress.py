"""Reference solutions of the hidden progress chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``hidden_progress.labs.json`` next to this file.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from seqtheory.chapters.hidden_progress import (
    GAP_KS,
    LABS,
    fourier_gap,
    lab_settings,
    parity_trials,
)
from seqtheory.core.seeds import make_generator
from seqtheory.parity import (
    SETUP,
    ParityMLPs,
    hypercube,
    run_k_sweep,
)


def solve_gf2(A, b) -> np.ndarray:
    """A 0/1 vector s with A @ s = b (mod 2), by Gaussian elimination (free variables 0)."""
    M = np.concatenate([A, b[:, None]], axis=1).astype(np.uint8) % 2  # (m, n + 1)
    n, row, pivots = A.shape[1], 0, []
    for col in range(n):
        hits = np.flatnonzero(M[row:, col])
        if hits.size == 0:
            continue
        M[[row, row + hits[0]]] = M[[row + hits[0], row]]  # pivot up
        others = M[:, col].astype(bool)
        others[row] = False
        M[others] ^= M[row]  # clear the column
        pivots.append(col)
        row += 1
        if row == len(M):
            break
    s = np.zeros(n, dtype=np.uint8)
    s[pivots] = M[: len(pivots), n]
    return s


def gf2_recovered(supports, x, y) -> float:
    """Fraction of trials whose support :func:`solve_gf2` recovers exactly from the bits of
    ``x`` and ``y`` (bit 1 where the sign is -1, so a parity of signs is a sum mod 2)."""
    found = [
        set(np.flatnonzero(solve_gf2(xt < 0, yt < 0))) == set(st.tolist())
        for st, xt, yt in zip(supports, x, y, strict=True)
    ]
    return float(np.mean(found))


@LABS.solves(
    "ex-hidden-progress-4",
    mistakes=(
        (
            "the batch doubled and the rate halved listed in swapped order",
            [[750, 850, 750], [1300, 1350, 1250], [800, 800, 700]],
        ),
        (
            "the rate doubled instead of halved",
            [[750, 850, 750], [800, 800, 700], [450, 500, 450]],
        ),
    ),
)
def _batch_and_rate(seed: int) -> list:
    small = replace(SETUP.cpu, n=20, ks=(3,), max_steps=6000)
    return [
        run_k_sweep(
            replace(small, batch_size=bs, lr=lr), seed=seed, progress=False
        ).steps_to_success[3]
        for bs, lr in lab_settings(small)
    ]


@LABS.solves(
    "ex-hidden-progress-5",
    mistakes=(
        (
            "the label left out (correlations of the gate with x_i alone)",
            [1.01, 1.02, 1.02, 1.01],
        ),
        ("support and off-support swapped", [0.072, 0.35, 0.34, 0.75]),
    ),
)
def _gap_against_k(seed: int) -> list:
    net = ParityMLPs(12, [SETUP.cpu.width], generator=make_generator(62, base=seed))
    x_all = hypercube(12)  # (4096, 12)
    gate = ((x_all @ net.w1[0].detach().T + net.b1[0].detach()) > 0).float()  # (4096, W)
    return [fourier_gap(gate, x_all, k) for k in GAP_KS]


@LABS.solves(
    "ex-hidden-progress-6",
    mistakes=(
        ("least squares over the reals, rounded to 0/1", 0.0),
        ("the label's bit set where y = +1 instead of -1", 0.0),
    ),
)
def _gaussian_elimination(seed: int) -> float:
    return gf2_recovered(*parity_trials(200, m=35, n=30, k=3, seed=seed))

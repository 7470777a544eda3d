"""Reference solutions of the partitions chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``partitions.labs.json`` next to this file.
"""

from __future__ import annotations

import numpy as np

from seqtheory.chapters.partitions import LABS
from seqtheory.core.seeds import (
    make_generator,
    make_rng,
)
from seqtheory.partitions import (
    STREAMS,
    planted_problem,
    recovery_threshold,
    sample,
    samples_for,
    single_token_moves,
    survival_prediction,
    train_embeddings,
)


@LABS.solves(
    "ex-partitions-4",
    mistakes=(
        ("m = 6 instead of m = 2", 4.5e-07),
        ("m = K = 3, Experiment 3's own run", 3.0e-08),
    ),
)
def _smaller_embeddings(seed: int) -> float:
    problems = [planted_problem(32, 3, 3, seed=make_rng(r, base=seed)) for r in range(8)]
    data = [
        sample(pb, samples_for(16, 32), seed=make_rng(STREAMS.seed("gd_samples", r), base=seed))
        for r, pb in enumerate(problems)
    ]
    fit = train_embeddings(
        [d[0] for d in data],
        [d[1] for d in data],
        32,
        3,
        m=2,
        steps=1500,
        lr=0.03,
        seed=make_generator(0, base=seed),
    )
    return float(np.median(fit.final_loss))


@LABS.solves(
    "ex-partitions-5",
    mistakes=(
        ("the true class counted as a survivor too (totals)", [[2112], [197.3]]),
        ("survival_prediction at S = c = 2 instead of S (totals)", [[192], [3717.0]]),
    ),
)
def _survivors(seed: int) -> list:
    S = samples_for(2, 32)
    counted, predicted = [], []
    for r in range(20):
        pb = planted_problem(32, 3, 3, seed=make_rng(300 + r, base=seed))
        x, y = sample(pb, S, seed=make_rng(400 + r, base=seed))
        counted.append(int(single_token_moves(pb, x, y).sum()))
        predicted.append(float(survival_prediction(pb, S)))
    return [counted, predicted]


# the thresholds of base seed 0's instances (recovery_threshold), for the mistakes below
_TERNARY = [379, 236, 418, 282, 299, 282, 209, 574, 250, 343, 305, 490, 634, 240, 647, 282]
_BINARY = [379, 330, 609, 444, 480, 462, 1775, 574, 647, 1194, 586, 586, 836, 444, 673, 586]


@LABS.solves(
    "ex-partitions-6",
    mistakes=(
        ("binary over ternary (the ratio inverted)", [_TERNARY, _BINARY]),
        ("binary instances in both lists", [_BINARY, _BINARY]),
    ),
)
def _ternary(seed: int) -> list:
    s_max = samples_for(16, 32)
    out = []
    for kind in ("binary", "ternary"):
        out.append(
            [
                recovery_threshold(
                    planted_problem(32, 3, 3, kind=kind, seed=make_rng(100 + r, base=seed)),
                    s_max,
                    seed=make_rng(200 + r, base=seed),
                )
                for r in range(16)
            ]
        )
    return out

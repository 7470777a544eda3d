"""Reference solutions of the representations chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``representations.labs.json`` next to this file.
"""

from __future__ import annotations

import numpy as np
import torch

from seqtheory.chapters.representations import (
    LABS,
    _lab_models,
    top_directions,
)
from seqtheory.core.seeds import (
    make_generator,
    make_rng,
)
from seqtheory.kinship import accuracy
from seqtheory.representations import (
    SETUP,
    kinship_task,
)
from seqtheory.similarity import (
    linear_cka,
    stitch,
)
from seqtheory.sources.knowledge_graphs import KinshipData


@LABS.solves(
    "ex-representations-2",
    mistakes=(
        ("debiased CKA instead of plain CKA", [-0.005, 0.044, -0.027]),
        ("the same draw on both sides, linear_cka(U, U)", [1.0, 1.0, 1.0]),
        ("the list in the opposite order (d = 32 first)", [0.406, 0.188, 0.037]),
    ),
)
def _cka_baseline(seed: int) -> list[float]:
    n = kinship_task(SETUP.cpu, seed=seed).forest.n
    rng = make_rng(1, base=seed)
    out = []
    for d in (2, 8, 32):
        U, V = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        out.append(linear_cka(U, V))
    return out


@LABS.solves(
    "ex-representations-3",
    mistakes=(
        ("the zoo's weight decay 0.1 instead of 1.0", [0.989, 0.997, 0.999, 0.999]),
        ("size d = 1 instead of 2", [0.643, 0.643, 0.629, 0.663]),
    ),
)
def _moving_zone(seed: int) -> np.ndarray:
    task = kinship_task(SETUP.cpu, seed=seed)
    return accuracy(_lab_models(seed, 2, 1.0, task.data), task.data, "train")


@LABS.solves(
    "ex-representations-4",
    mistakes=(
        (
            "only the pairs with p first held out (p's inverse facts still seen)",
            [1.0, 1.0, 1.0, 1.0],
        ),
        ("the chapter's split instead of the new one", [0.929, 0.988, 0.929, 0.976]),
    ),
)
def _facts_vs_people(seed: int) -> np.ndarray:
    data = kinship_task(SETUP.cpu, seed=seed).data
    p = 0  # a founder
    train = (data.pairs[:, 0] != p) & (data.pairs[:, 1] != p)
    data_p = KinshipData(data.pairs, data.labels, train, data.n_people)
    return accuracy(_lab_models(seed, 8, 0.1, data_p), data_p)


@LABS.solves(
    "ex-representations-5",
    mistakes=(
        ("all 32 dimensions kept on both sides", [0.786, 0.583]),
        ("the random control left at 32 dimensions", [0.881, 0.583]),
    ),
)
def _surviving_control(seed: int) -> list[float]:
    setup = SETUP.cpu
    task = kinship_task(setup, seed=seed)
    B = _lab_models(seed, 32, 0.1, task.data)
    m = len(setup.seeds)
    src = [top_directions(B.embedding((i + 1) % m), 8) for i in range(m)]
    gen = make_generator(5, base=seed)
    rnd = [torch.randn(task.forest.n, 8, generator=gen) / np.sqrt(8) for _ in range(m)]
    res = stitch(src + rnd, B.select(list(range(m)) * 2), task.data, steps=setup.stitch_steps)
    return [float(np.median(res.test_acc[:m])), float(np.median(res.test_acc[m:]))]

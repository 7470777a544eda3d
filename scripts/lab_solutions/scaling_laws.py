"""Reference solutions of the scaling laws chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``scaling_laws.labs.json`` next to this file.
"""

from __future__ import annotations

from seqtheory.chapters.scaling_laws import (
    LAB_SIZES,
    LABS,
    floor_losses,
)
from seqtheory.scaling import (
    TorusTask,
    fit_power_law,
    fit_power_law_floor,
    learning_curve,
)
from seqtheory.sources.dimension import (
    mle_dimension,
    sample_sphere,
)


@LABS.solves(
    "ex-scaling-laws-1",
    mistakes=(
        ("the estimates listed from K = 50 down to K = 5", [7.42, 7.55, 7.65, 7.72]),
        (
            "a fresh sample for each K and n = 200 (noise swamps the trend)",
            [7.1, 7.9, 7.3, 8.4],
        ),
    ),
)
def _neighbours(seed: int) -> list[float]:
    points = sample_sphere(5000, 8, D=80, seed=seed)
    return [mle_dimension(points, K=k) for k in (5, 10, 20, 50)]


@LABS.solves(
    "ex-scaling-laws-2",
    mistakes=(
        ("Experiment 2's cutoff M = 8 instead of 32", [0.716, 0.686]),
        ("the two exponents listed in the opposite order", [0.710, 0.444]),
    ),
)
def _smoothness(seed: int) -> list[float]:
    return [
        fit_power_law(
            LAB_SIZES,
            learning_curve(
                TorusTask(d=2, D=16, beta=beta, max_freq=32, base=seed),
                LAB_SIZES,
                "knn",
                progress=False,
            ),
        ).exponent
        for beta in (0.5, 2.0)
    ]


@LABS.solves(
    "ex-scaling-laws-3",
    mistakes=(
        ("the label noise left at 0.5", 0.704),
        ("the noise-free task at d = 4 instead of d = 2", 0.396),
    ),
)
def _no_noise(seed: int) -> float:
    task = TorusTask(d=2, D=16, max_freq=8, noise=0.0, base=seed)
    return fit_power_law(LAB_SIZES, learning_curve(task, LAB_SIZES, "knn", progress=False)).exponent


@LABS.solves(
    "ex-scaling-laws-5",
    mistakes=(
        ("the true floor subtracted before the plain fit", [0.333, 0.333]),
        ("the two exponents listed in the opposite order", [0.33, 0.095]),
    ),
)
def _loss_floor(seed: int) -> list[float]:
    n, loss = floor_losses(seed)
    return [fit_power_law(n, loss).exponent, fit_power_law_floor(n, loss).exponent]

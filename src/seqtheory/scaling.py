"""Scaling laws: how error falls with data and model size, and what intrinsic dimension
predicts (the scaling-laws chapter; the dimension estimators are in
:mod:`seqtheory.sources.dimension`).

Scaling laws:

* :func:`fit_power_law` — a log-log least-squares fit ``err ~ c * n^(-alpha)`` with an
  uncertainty (the spread over seeds, or the regression's standard error).
* :func:`predicted_exponents` — the exponents theory predicts from d and the smoothness.
* :class:`TorusTask` — regression of a random smooth target on the flat d-torus embedded
  in R^D, with noisy training labels and a clean test target.
* learners: :func:`knn_error` (k-nearest-neighbour regression, k by leave-one-out),
  :func:`net_error` (an MLP or the shared transformer reading the point as tokens, trained
  with checkpoint selection on a validation split); :func:`learning_curves` sweeps tasks,
  n and seeds, training every network of the sweep as one batched program
  (:func:`fit_regressors`, through :func:`seqtheory.core.training.train`).

The chapter's experiments follow :mod:`seqtheory.core.experiment` (``run(setup, seed=...,
device=..., progress=...)``, a result that extends :class:`~seqtheory.core.experiment.RunInfo`):
:func:`run_data_sweep` (Experiment 2), :func:`run_beta_sweep` (2b), :func:`run_model_sweep`
(3); sizes in :class:`ScalingSetup` / ``SETUP``; random streams in ``STREAMS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

from .book.archive import load_data
from .book.plotting import log_ticks, palette
from .core.ensemble import Ensemble
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import Transformer, TransformerConfig, num_params
from .core.runtime import Sizes, check_device, evaluating, progress_bar, to_numpy
from .core.seeds import derive_seed, experiment_seed, make_generator, make_rng, seeded
from .core.training import train as train_loop
from .core.validate import check_choice, check_float, check_int

__all__ = [
    "PowerLawFit",
    "fit_power_law",
    "FloorFit",
    "fit_power_law_floor",
    "predicted_exponents",
    "relu_square",
    "TorusTask",
    "PointMLP",
    "PointTransformer",
    "make_learner",
    "knn_error",
    "net_error",
    "learning_curve",
    "learning_curves",
    "fit_regressors",
    "approximation_error",
    "plot_product_tree",
    "load_text_sweep",
    "load_text_width_sweep",
    "learner_params",
    "ScalingSetup",
    "SETUP",
    "torus_tasks",
    "DataSweepResult",
    "run_data_sweep",
    "plot_learning_curves",
    "BetaSweepResult",
    "run_beta_sweep",
    "ModelSweepResult",
    "run_model_sweep",
    "plot_model_sweep",
    "STREAMS",
]

# The logical seeds of the module (each under a base seed, see seqtheory.core.seeds.derive_seed):
STREAMS = Streams(
    targets=0,  # a torus task's random target and embedding (TorusTask.seed)
    samples=0,  # learner seed s: its noisy training samples (TorusTask.sample)
    tests=10_000,  # learner seed s: its clean test set
    networks=0,  # a network's initialisation and mini-batch order (_network_seed)
    pool_tests=20_000,  # approximation_error: a task's clean test set
    pool=30_000,  # approximation_error: a task's pool of clean training points
)


# ----------------------------------------------------------------------------- power laws


@dataclass(frozen=True)
class PowerLawFit:
    """``y ~ coef * x^(-exponent)``; ``stderr`` is the exponent's standard error."""

    exponent: float
    coef: float
    stderr: float

    def __call__(self, x) -> np.ndarray:
        return self.coef * np.asarray(x, float) ** (-self.exponent)

    def __str__(self) -> str:
        return f"{self.exponent:.3f} +/- {self.stderr:.3f}"


def _ols_slope(lx: np.ndarray, ly: np.ndarray) -> tuple[float, float, float]:
    """Slope, intercept and the slope's standard error of a least-squares line."""
    A = np.stack([lx, np.ones_like(lx)], 1)
    (slope, icpt), *_ = np.linalg.lstsq(A, ly, rcond=None)
    dof = len(lx) - 2
    if dof > 0:
        resid = ly - A @ np.array([slope, icpt])
        se = float(np.sqrt(resid @ resid / dof / ((lx - lx.mean()) ** 2).sum()))
    else:
        se = float("nan")
    return float(slope), float(icpt), se


def fit_power_law(x, y) -> PowerLawFit:
    """Fit ``y = coef * x^(-exponent)`` by least squares on log-log axes.

    ``y`` has one value per ``x`` or one row per ``x`` and one column per seed.  With
    several seeds the exponent is the mean of the per-seed fits and its standard error is
    their spread / sqrt(seeds) (or the pooled regression's standard error, whichever is
    larger); with one seed it is the regression's standard error.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.ndim != 1 or len(x) < 2:
        raise ValueError(f"x must be 1-D with at least 2 values, got shape {x.shape}")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != len(x):
        raise ValueError(f"y must have shape ({len(x)},) or ({len(x)}, seeds), got {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or (x <= 0).any() or (y <= 0).any():
        raise ValueError("x and y must be finite and positive for a log-log fit")
    lx, ly = np.log(x), np.log(y)
    slopes = np.array([_ols_slope(lx, ly[:, j])[0] for j in range(y.shape[1])])
    pooled_slope, pooled_icpt, pooled_se = _ols_slope(np.repeat(lx, y.shape[1]), ly.ravel())
    se = pooled_se
    if y.shape[1] > 1:
        se = float(max(slopes.std(ddof=1) / np.sqrt(len(slopes)), pooled_se))
    return PowerLawFit(exponent=-float(slopes.mean()), coef=float(np.exp(pooled_icpt)), stderr=se)


def predicted_exponents(d: float, beta: float = 1.0) -> dict:
    """Exponents predicted from intrinsic dimension ``d`` and Hölder smoothness ``beta``.

    ``alpha_data = 2 beta / (2 beta + d)``: squared error vs training-set size n;
    ``alpha_model = 2 beta / d``: squared approximation error vs number of parameters N;
    ``sharma_kaplan = 4 / d``: Sharma & Kaplan's model-size exponent for the loss.
    (Kaplan et al. write alpha_D and alpha_N; here D is the ambient dimension, so the
    keys spell out data and model.)  Constants and logarithmic factors are dropped.
    """
    d = check_float("d", d, low=0.0, low_open=True)
    beta = check_float("beta", beta, low=0.0, low_open=True)
    return {
        "alpha_data": 2 * beta / (2 * beta + d),
        "alpha_model": 2 * beta / d,
        "sharma_kaplan": 4.0 / d,
    }


@dataclass(frozen=True)
class FloorFit:
    """``y ~ floor + coef * x^(-exponent)``: a power law above an irreducible floor."""

    exponent: float
    coef: float
    floor: float

    def __call__(self, x) -> np.ndarray:
        return self.floor + self.coef * np.asarray(x, float) ** (-self.exponent)


def fit_power_law_floor(x, y, *, grid: int = 400) -> FloorFit:
    """Fit ``y = floor + coef * x^(-exponent)`` (one value of y per x, at least 3 points).

    For each candidate floor in [0, min(y)) the exponent and coefficient come from a
    log-log least-squares line through ``y - floor``; the floor whose fitted curve is
    closest to y on a log scale wins.  The candidates are ``grid`` gaps ``min(y) - floor``
    spaced geometrically from min(y) (no floor) down to 1e-9 min(y), then a finer pass of
    ``grid`` between the best one's neighbours.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    grid = check_int("grid", grid, minimum=3)
    if x.ndim != 1 or y.shape != x.shape or len(x) < 3:
        raise ValueError(f"x and y must be 1-D of one length >= 3, got {x.shape}, {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or (x <= 0).any() or (y <= 0).any():
        raise ValueError("x and y must be finite and positive")
    lx, ly0 = np.log(x), np.log(y)
    xc = lx - lx.mean()

    def best(floors):
        ly = np.log(y[None, :] - floors[:, None])  # (G, n)
        slope = (ly - ly.mean(1, keepdims=True)) @ xc / (xc @ xc)  # (G,)
        icpt = ly.mean(1) - slope * lx.mean()
        pred = floors[:, None] + np.exp(icpt[:, None] + slope[:, None] * lx)  # (G, n)
        loss = ((np.log(pred) - ly0) ** 2).sum(1)
        return int(np.argmin(loss)), slope, icpt

    floors = y.min() * (1.0 - np.geomspace(1.0, 1e-9, grid))  # (G,)
    g, *_ = best(floors)
    lo, hi = floors[max(g - 1, 0)], floors[min(g + 1, grid - 1)]
    floors = np.linspace(lo, hi, grid)
    g, slope, icpt = best(floors)
    return FloorFit(exponent=-float(slope[g]), coef=float(np.exp(icpt[g])), floor=float(floors[g]))


def relu_square(x, depth: int):
    """Yarotsky's ReLU approximation of x^2 on [0, 1] with ``depth`` sawtooth compositions.

    ``x - sum_{s=1}^{depth} g_s(x) / 4^s``, where ``g_s`` is the hat function
    ``g(x) = 2 min(x, 1 - x)`` (two ReLUs) composed s times: a ReLU network of depth about
    ``depth`` whose largest error on [0, 1] is ``4^-(depth + 1)`` -- so accuracy eps costs
    depth ~ log4(1/eps).
    """
    depth = check_int("depth", depth, minimum=0)
    x = np.asarray(x, float)
    if ((x < 0) | (x > 1)).any():
        raise ValueError("x must lie in [0, 1]")
    relu = lambda z: np.maximum(z, 0.0)  # noqa: E731
    out, g = x.copy(), x.copy()
    for s in range(1, depth + 1):  # one loop step per layer of the network
        g = 2 * relu(g) - 4 * relu(g - 0.5)  # hat function, from two ReLUs
        out = out - g / 4.0**s
    return out


# ----------------------------------------------------------------- synthetic regression


@dataclass
class TorusTask:
    """Regression on the flat d-torus in R^D: y = f(theta) + noise.

    A point is ``theta`` in [0, 2pi)^d, embedded isometrically as the 2d numbers
    (cos theta_i, sin theta_i) and rotated at random into R^D.  The target is a random
    Fourier series ``f(theta) = sum_k a_k cos(k . theta + phi_k)`` over integer frequency
    vectors with |k_i| <= M, one of each pair {k, -k} (M = max_freq, lowered until there
    are at most n_modes of them; the value used is ``cutoff``), amplitudes
    ``a_k ~ N(0, 1) (1 + |k|^2)^(-(beta + d/2)/2)``
    (a Gaussian field whose samples are Hölder-smooth of order just below ``beta``),
    scaled to unit variance.  Training labels carry Gaussian noise of std ``noise``;
    errors are measured against the clean f.
    """

    d: int = 2  # intrinsic dimension of the torus
    D: int = 16  # ambient dimension (at least 2d)
    beta: float = 1.0  # smoothness of the target
    noise: float = 0.5  # std of the label noise (the target has unit std)
    max_freq: int = 32  # largest |k_i| in the Fourier series (if n_modes allows)
    n_modes: int = 4096  # at most this many frequency vectors
    seed: int = 0  # draws the target and the embedding (a logical seed)
    base: int | None = None  # base seed of ``seed`` and of the samples' seeds (None: the
    #                          book's base seed, see seqtheory.core.seeds.derive_seed)

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=1)
        check_int("D", self.D, minimum=1)
        if self.D < 2 * self.d:
            raise ValueError(f"D must be >= 2d = {2 * self.d} to embed the torus, got {self.D}")
        check_float("beta", self.beta, low=0.0, low_open=True)
        check_float("noise", self.noise, low=0.0)
        check_int("max_freq", self.max_freq, minimum=1)
        check_int("n_modes", self.n_modes, minimum=1)
        check_int("seed", self.seed, minimum=0)
        rng = make_rng(self.seed, base=self.base)
        M = self.max_freq  # all k with |k_i| <= M, M as large as n_modes allows
        while M > 1 and ((2 * M + 1) ** self.d - 1) // 2 > self.n_modes:
            M -= 1
        self.cutoff = M
        grid = np.indices((2 * M + 1,) * self.d).reshape(self.d, -1).T - M
        nonzero = grid != 0  # keep one of each pair {k, -k}: the
        first = grid[np.arange(len(grid)), nonzero.argmax(1)]  # first non-zero entry > 0
        grid = grid[nonzero.any(1) & (first > 0)]
        k2 = (grid**2).sum(1)
        amp = rng.standard_normal(len(grid)) * (1.0 + k2) ** (-(self.beta + self.d / 2) / 2)
        amp /= np.sqrt((amp**2).sum() / 2)  # Var f = sum a_k^2 / 2 = 1
        self.freqs = grid.astype(np.float64)  # (m, d)
        self.amps = amp  # (m,)
        self.phases = rng.uniform(0, 2 * np.pi, len(grid))  # (m,)
        Q, _ = np.linalg.qr(rng.standard_normal((self.D, self.D)))
        self.rotation = Q[:, : 2 * self.d]  # (D, 2d)

    def target(self, theta, *, device=None) -> np.ndarray:
        """The clean target f at angles ``theta`` (n, d), 4,096 points at a time (a pool of
        65,536 points on the 4-torus would otherwise hold two (n, modes) arrays of 1.7 GB),
        in float64 on ``device`` if it is a CUDA GPU, else on the CPU (the FULL sweeps
        evaluate about 10^10 point-modes: minutes on one CPU thread)."""
        device = _compute_device(device)
        theta = torch.as_tensor(np.asarray(theta, float))  # torch's cos is
        freqs, phases = torch.from_numpy(self.freqs).T, torch.from_numpy(self.phases)
        amps = torch.from_numpy(self.amps)  # 3x NumPy's
        if device.type != "cpu":
            theta, freqs, phases, amps = (t.to(device) for t in (theta, freqs, phases, amps))
        return (
            torch.cat(
                [
                    torch.cos(th @ freqs + phases) @ amps  # (rows,)
                    for th in theta.split(4096)
                ]
            )
            .cpu()
            .numpy()
        )  # (n,)

    def embed(self, theta) -> np.ndarray:
        """Points of R^D for angles ``theta`` (n, d)."""
        theta = np.asarray(theta, float)
        flat = np.concatenate([np.cos(theta), np.sin(theta)], 1) / np.sqrt(self.d)
        return flat @ self.rotation.T  # (n, D)

    def sample(self, n: int, seed: int = 0, *, noisy: bool = True, device=None):
        """``(X, y, theta)``: n points (float32 tensor (n, D)), labels (n,), angles; drawn
        from the logical sample seed ``seed`` under the task's base seed.  The target is
        computed on ``device`` (see :meth:`target`); the tensors are on the CPU."""
        n = check_int("n", n, minimum=1)
        rng = np.random.default_rng(
            [derive_seed(self.seed, self.base), derive_seed(seed, self.base), 1]
        )
        theta = rng.uniform(0, 2 * np.pi, (n, self.d))
        y = self.target(theta, device=device)
        if noisy:
            y = y + self.noise * rng.standard_normal(n)
        X = torch.from_numpy(self.embed(theta)).float()
        return X, torch.from_numpy(y).float(), theta


def knn_error(
    task: TorusTask,
    n: int,
    seed: int = 0,
    *,
    n_test: int = 2048,
    ks: Sequence[int] | None = None,
    block: int = 4096,
    device=None,
) -> float:
    """Test MSE (vs the clean target) of k-NN regression on n noisy samples (stream
    ``samples``, index ``seed``) against a clean test set (stream ``tests``, index ``seed``).

    k is chosen from ``ks`` (default: powers of 2 up to n/8) by leave-one-out error on the training
    set, so the learner adapts to the data as theory's rate-optimal k ~ n^(2b/(2b+d)) does.
    The neighbour search runs ``block`` query points at a time (memory ~ block * n), on
    ``device`` if it is a CUDA GPU, else on the CPU; the result does not depend on ``block``.
    """
    n = check_int("n", n, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    n_test = check_int("n_test", n_test, minimum=1)
    block = check_int("block", block, minimum=1)
    where = _compute_device(device)
    X, y, _ = task.sample(n, STREAMS.seed("samples", seed), device=where)
    Xt, yt, _ = task.sample(n_test, STREAMS.seed("tests", seed), noisy=False, device=where)
    return _knn_error(X, y, Xt, yt, ks, block=block, device=where)


def _compute_device(device) -> torch.device:
    """Where the k-NN search and the targets run: ``device`` if it is a CUDA GPU, else the
    CPU (an Apple GPU has no float64 for the targets)."""
    device = check_device("device", device)
    return device if device.type == "cuda" else torch.device("cpu")


def _knn_error(
    X: torch.Tensor,
    y: torch.Tensor,
    Xt: torch.Tensor,
    yt: torch.Tensor,
    ks: Sequence[int] | None = None,
    *,
    block: int = 4096,
    device=None,
) -> float:
    """k-NN regression's test MSE on (Xt, yt), k chosen by leave-one-out on (X, y).

    The search runs on ``device`` (None: where X is), ``block`` query rows at a time: one
    (block, n) distance matrix and its top-k at a time, so the peak memory is about
    block * n * 4 bytes for the distances plus block * kmax * 20 bytes for the top-k and the
    neighbours' running sums, not n^2.  Each row's distances, neighbours and running sums
    are those of the whole matrix, so the result does not depend on ``block``.
    """
    n = len(X)
    # default: powers of 2 up to n/8 (the leave-one-out choice sits far below: at most
    # n/32 on the chapter's tasks), so the neighbour search stays a cheap top-k
    if ks:
        ks = [k for k in ks if k < n]
        if not ks:
            raise ValueError(f"ks must contain a k below the training-set size n={n}")
    else:
        ks = [2**i for i in range(16) if 2**i <= max(n // 8, 1)]
    kmax = max(ks)
    device = X.device if device is None else device
    X, y, Xt, yt = (t.to(device) for t in (X, y, Xt, yt))
    cols = torch.tensor([k - 1 for k in ks], device=device)
    sums = []  # running sums at each k of ks (rows, len(ks))
    for start in range(0, n, block):
        d_tr = torch.cdist(X[start : start + block], X)  # (rows, n)
        rows = torch.arange(len(d_tr), device=device)
        d_tr[rows, start + rows] = float("inf")  # leave the point out
        nb = d_tr.topk(kmax, largest=False).indices  # (rows, kmax)
        del d_tr
        sums.append(y[nb].cumsum(1)[:, cols])  # (rows, len(ks))
    csum = torch.cat(sums)  # (n, len(ks))
    loo = torch.stack([((csum[:, i] / k - y) ** 2).mean() for i, k in enumerate(ks)]).tolist()
    k = ks[int(np.argmin(loo))]
    pred = torch.cat(
        [
            y[torch.cdist(Xt[s : s + block], X).topk(k, largest=False).indices].mean(1)
            for s in range(0, len(Xt), block)
        ]
    )  # (n_test,)
    return float(((pred - yt) ** 2).mean())


class PointMLP(nn.Module):
    """A ReLU MLP R^D -> R with ``depth`` hidden layers of ``width`` units."""

    def __init__(self, D: int, width: int = 64, depth: int = 2):
        super().__init__()
        check_int("D", D, minimum=1)
        check_int("width", width, minimum=1)
        check_int("depth", depth, minimum=1)
        layers, fan_in = [], D
        for _ in range(depth):
            layers += [nn.Linear(fan_in, width), nn.ReLU()]
            fan_in = width
        self.net = nn.Sequential(*layers, nn.Linear(fan_in, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)  # (B,)


class PointTransformer(nn.Module):
    """The shared :class:`~seqtheory.core.models.Transformer` reading a point of R^D as tokens.

    The D coordinates are cut into ``n_tokens`` chunks; each chunk is mapped linearly to
    a d_model-dimensional token, the transformer (causal, learned positions, MLPs) runs
    over the tokens, and its 1-dimensional "unembedding" at the last token is the output.
    """

    def __init__(
        self, D: int, n_tokens: int = 4, d_model: int = 32, n_layers: int = 2, n_heads: int = 2
    ):
        super().__init__()
        check_int("D", D, minimum=1)
        check_int("n_tokens", n_tokens, minimum=1)
        if D % n_tokens:
            raise ValueError(f"D={D} must be divisible by n_tokens={n_tokens}")
        self.n_tokens = n_tokens
        self.embed = nn.Linear(D // n_tokens, d_model)
        self.body = Transformer(
            TransformerConfig(
                vocab_size=1,
                max_len=n_tokens,
                n_layers=n_layers,
                n_heads=n_heads,
                d_model=d_model,
                init_std=0.05,
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x.view(x.shape[0], self.n_tokens, -1))  # (B, T, C)
        return self.body(embeds=tokens)[:, -1, 0]  # (B,)


def make_learner(kind: str, D: int, size: int = 32) -> nn.Module:
    """A fresh regressor: ``"mlp"`` (2 hidden layers of ``size``) or ``"transformer"``
    (d_model = ``size``, 2 layers, 4 tokens)."""
    check_choice("kind", kind, ("mlp", "transformer"))
    if kind == "mlp":
        return PointMLP(D, width=size)
    return PointTransformer(D, n_tokens=4, d_model=size, n_heads=2 if size % 2 == 0 else 1)


def _pad(tensors: Sequence[torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack tensors of different lengths along a new first dimension, zero-padded, on
    ``device``; returns ``(stacked (M, n_max, ...), lengths (M,))``."""
    n_max = max(len(t) for t in tensors)
    out = tensors[0].new_zeros((len(tensors), n_max, *tensors[0].shape[1:]))
    for m, t in enumerate(tensors):
        out[m, : len(t)] = t
    lengths = torch.tensor([len(t) for t in tensors])
    return out.to(device), lengths.to(device)


def _masked_mse(model, X: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each member's mean squared error on its own first ``lengths[m]`` points (M,)."""
    err = (model(X) - y) ** 2  # (M, n_max)
    mask = torch.arange(X.shape[1], device=X.device) < lengths[:, None]
    return (err * mask).sum(1) / lengths


class _Members(nn.Module):
    """An :class:`~seqtheory.core.ensemble.Ensemble` seen by :func:`~seqtheory.core.training.train`
    as one batched network whose loss is an (M,) vector: the members' squared errors are
    one vectorised computation instead of M per-member calls (``ensemble_loss``)."""

    def __init__(self, ensemble: nn.Module):
        super().__init__()
        self.ensemble = ensemble

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ensemble(x)  # (M, B)


def _member_mse(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-member mean squared error (M,) of predictions (M, B) against targets (M, B)."""
    return ((pred - y) ** 2).mean(1)


_DRAW_STEPS = 256  # steps whose mini-batch indices fit_regressors draws at once


def fit_regressors(
    kind: str,
    D: int,
    size: int,
    train: Sequence,
    test: Sequence,
    val: Sequence | None = None,
    *,
    init_seeds: Sequence[int],
    steps: int,
    batch: int = 128,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    eval_every: int = 100,
    progress: bool = False,
    desc: str = "training",
    device=None,
    base: int | None = None,
) -> np.ndarray:
    """Train M regressors of one architecture as one batched program; their test MSEs (M,).

    Member ``m`` (initialised under the logical seed ``init_seeds[m]`` of base seed
    ``base``, None: the book's base seed; the same seed also draws its mini-batches)
    minimises the squared error on its own training set ``train[m] = (X, y)``
    with AdamW and cosine decay (:func:`seqtheory.core.training.train`, no gradient clipping),
    on mini-batches of ``batch`` points drawn with replacement from that set, so its run
    does not depend on the other members.  With ``val`` given, the members are evaluated
    every ``eval_every`` steps and at the end, and each reports its error on ``test[m]`` at
    the evaluation where its error on ``val[m]`` was lowest (early stopping; the untrained
    networks at step 0 do not compete); without ``val``, its final test error.  The members
    are stacked into one :class:`~seqtheory.core.ensemble.Ensemble` on ``device`` (None: the CPU),
    so M networks cost far less than M runs.
    """
    check_choice("kind", kind, ("mlp", "transformer"))
    device = check_device("device", device)
    steps = check_int("steps", steps, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    _check_members(train, test, val, init_seeds)
    model = _Members(Ensemble(lambda: make_learner(kind, D, size), list(init_seeds), base=base))
    return _fit_members(
        model,
        train,
        test,
        val,
        init_seeds=init_seeds,
        steps=steps,
        batch=batch,
        lr=lr,
        weight_decay=weight_decay,
        eval_every=eval_every,
        progress=progress,
        desc=desc,
        device=device,
        base=base,
    )


def _check_members(
    train: Sequence, test: Sequence, val: Sequence | None, init_seeds: Sequence[int]
) -> None:
    """A ValueError unless ``train``, ``test``, ``val`` (if given) and ``init_seeds`` of
    :func:`fit_regressors` have one entry per member, for at least one member."""
    M = len(train)
    if M == 0 or len(test) != M or (val is not None and len(val) != M) or len(init_seeds) != M:
        raise ValueError(
            "train, test, val and init_seeds must have one entry per member "
            f"(got {M}, {len(test)}, {None if val is None else len(val)}, "
            f"{len(init_seeds)})"
        )


def _fit_members(
    model: nn.Module,
    train: Sequence,
    test: Sequence,
    val: Sequence | None,
    *,
    init_seeds: Sequence[int],
    steps: int,
    batch: int,
    lr: float,
    weight_decay: float,
    eval_every: int,
    progress: bool,
    desc: str,
    device: torch.device,
    base: int | None,
) -> np.ndarray:
    """:func:`fit_regressors` on its checked arguments, for a built ``_Members`` model."""
    model = model.to(device)
    batch_fn = _member_batches(
        train, init_seeds, steps=steps, batch=batch, device=device, base=base
    )
    Xte, nte = _pad([x for x, _ in test], device)
    yte, _ = _pad([y for _, y in test], device)
    eval_fn, best = None, None
    if val is not None:
        eval_fn, best = _best_checkpoint(val, (Xte, yte, nte), device)
    train_loop(
        model,
        batch_fn,
        steps=steps,
        lr=lr,
        weight_decay=weight_decay,
        schedule="cosine",
        grad_clip=None,
        eval_every=eval_every if val is not None else steps,
        eval_fn=eval_fn,
        loss_fn=_member_mse,
        progress=progress,
        desc=desc,
    )
    if val is None:
        with evaluating(model):
            return to_numpy(_masked_mse(model, Xte, yte, nte)).astype(float)
    return to_numpy(best["test"]).astype(float)


def _member_batches(
    train: Sequence,
    init_seeds: Sequence[int],
    *,
    steps: int,
    batch: int,
    device: torch.device,
    base: int | None,
) -> Callable:
    """``batch_fn(step)`` of :func:`_fit_members`: member m's ``batch`` points of the step,
    drawn with replacement from ``train[m]`` by a generator of logical seed
    ``init_seeds[m]`` under ``base``; ``(X (M, batch, D), y (M, batch))``."""
    Xtr, ntr = _pad([x for x, _ in train], device)
    ytr, _ = _pad([y for _, y in train], device)
    gens = [make_generator(s, device, base=base) for s in init_seeds]  # batch orders
    rows = torch.arange(len(train), device=device)[:, None]
    counts = ntr.tolist()
    # each member's indices of _DRAW_STEPS steps come from one draw of its own generator:
    # M launches per block of steps instead of M per step (on the CPU the numbers are those
    # of step-by-step draws; on a GPU they are other numbers of the same generator)
    drawn = {"first": None, "idx": None}

    def batch_fn(step: int):
        first = (step - 1) // _DRAW_STEPS * _DRAW_STEPS + 1
        if drawn["first"] != first:
            span = min(_DRAW_STEPS, steps - first + 1)
            drawn["first"] = first
            drawn["idx"] = torch.stack(
                [
                    torch.randint(n, (span, batch), generator=g, device=device)
                    for n, g in zip(counts, gens, strict=True)
                ],
                1,
            )
        idx = drawn["idx"][step - first]  # (M, batch)
        return Xtr[rows, idx], ytr[rows, idx]  # (M, batch, D), (M, batch)

    return batch_fn


def _best_checkpoint(val: Sequence, test: tuple, device: torch.device) -> tuple[Callable, dict]:
    """``(eval_fn, best)`` of :func:`_fit_members` with validation sets ``val``: at each
    evaluation after step 0, ``best["test"]`` takes each member's error on the padded
    ``test = (X, y, lengths)`` where its error on ``val[m]`` is lower than at every earlier
    evaluation (``best["val"]``); the untrained networks at step 0 do not compete."""
    Xte, yte, nte = test
    Xv, nv = _pad([x for x, _ in val], device)
    yv, _ = _pad([y for _, y in val], device)
    M = len(val)
    best = {
        "val": torch.full((M,), float("inf"), device=device),
        "test": torch.full((M,), float("nan"), device=device),
    }

    def eval_fn(net, step: int) -> dict:
        v = _masked_mse(net, Xv, yv, nv)  # (M,)
        if step > 0:
            better = v < best["val"]
            if better.any():
                best["test"] = torch.where(better, _masked_mse(net, Xte, yte, nte), best["test"])
                best["val"] = torch.minimum(v, best["val"])
        return {"val mse": v}

    return eval_fn, best


def _padded_mlps(
    D: int, widths: Sequence[int], init_seeds: Sequence[int], base: int | None
) -> nn.Module:
    """The MLPs of every width in ``widths`` and seed in ``init_seeds`` (width-major) as one
    ``_Members`` of MLPs of the largest width: member (w, s) holds ``make_learner("mlp", D,
    w)`` under seed s in its first w units and zeros elsewhere.  A zero unit stays zero in
    training (its pre-activation is 0, ReLU'(0) = 0, so every weight into or out of it gets
    a zero gradient, and AdamW and weight decay keep a zero weight with a zero gradient at
    zero), so each member computes its width-w network: one batched program for all widths,
    the same optimisation up to floating-point rounding (longer sums in the products)."""
    seeds = list(init_seeds)
    parts = [Ensemble(lambda w=w: make_learner("mlp", D, w), seeds, base=base) for w in widths]
    padded = Ensemble(
        lambda: make_learner("mlp", D, max(widths)),
        list(range(len(widths) * len(seeds))),
        base=base,
    )
    S = len(seeds)
    with torch.no_grad():
        for name, p in padded.stacked.items():
            p.zero_()
            for i, part in enumerate(parts):
                q = part.stacked[name]  # (S, *width-w shape)
                p[(slice(i * S, (i + 1) * S), *(slice(0, n) for n in q.shape[1:]))] = q
    return _Members(padded)


# device types on which approximation_error trains all MLP widths as one padded program
# (on the CPU each width trains alone: its compute grows with the padding, and the
# book's CPU numbers come from the width-by-width runs)
_PADDED_MLP_DEVICES = ("cuda",)


def _network_seed(seed: int, task: int, size: int = 0) -> int:
    """The logical seed (stream ``networks``) of the network of learner seed ``seed`` on
    task number ``task`` at size number ``size``: one seed per member of a sweep (up to
    1,000 sizes per task and 1,000 tasks per learner seed)."""
    return STREAMS.seed("networks", 1_000_000 * seed + 1000 * task + size)


def _check_tasks(tasks: list, message: str) -> list:
    """``tasks`` if it is a non-empty list of :class:`TorusTask` of one ambient dimension D;
    else a TypeError with ``message`` or a ValueError."""
    if not tasks or not all(isinstance(t, TorusTask) for t in tasks):
        raise TypeError(message)
    if len({t.D for t in tasks}) > 1:
        raise ValueError(f"tasks must share the ambient dimension D, got {[t.D for t in tasks]}")
    return tasks


def learning_curves(
    tasks: Sequence[TorusTask],
    sizes: Sequence[int],
    learner: str = "knn",
    seeds: Sequence[int] = (0,),
    *,
    size: int = 32,
    steps: int = 1500,
    batch: int = 128,
    lr: float = 3e-3,
    n_test: int = 2048,
    eval_every: int = 100,
    progress: bool = True,
    device=None,
    base: int | None = None,
) -> np.ndarray:
    """Test errors (len(tasks), len(sizes), len(seeds)) of ``learner`` ("knn", "mlp" or
    "transformer") trained on n = each size noisy samples of each task with each seed.

    Seed s draws the n training samples (stream ``samples``, index s, under the task's base
    seed) and the clean test set (stream ``tests``, index s); the networks' initialisations
    and batch orders are stream ``networks`` (one index per seed, task and size) under
    ``base`` (None: the book's base seed).  Networks: the first fifth of the n samples is a
    validation set that picks the checkpoint (:func:`fit_regressors`; every network of the
    sweep trains in one batched program on ``device``, each with its own data and
    initialisation).  The targets and the k-NN search are computed on ``device`` if it is a
    CUDA GPU, else on the CPU (:func:`knn_error`).  The tasks must share the ambient
    dimension D.
    """
    check_choice("learner", learner, ("knn", "mlp", "transformer"))
    device = check_device("device", device)
    tasks, sizes, seeds = _check_sweep(tasks, sizes, seeds)
    jobs = list(product(range(len(tasks)), range(len(sizes)), range(len(seeds))))
    where = _compute_device(device)
    test_sets = _test_sets(tasks, seeds, n_test, where)
    if learner == "knn":  # the same numbers as knn_error(task, n, seed, n_test=n_test)
        err = _knn_members(tasks, sizes, seeds, jobs, test_sets, where, progress)
    else:
        steps = check_int("steps", steps, minimum=1)
        train, val, test, init = _network_members(tasks, sizes, seeds, jobs, test_sets, where)
        fit = dict(steps=steps, batch=batch, lr=lr, eval_every=eval_every, progress=progress)
        err = fit_regressors(
            learner,
            tasks[0].D,
            size,
            train,
            test,
            val,
            init_seeds=init,
            weight_decay=1e-4,
            device=device,
            base=base,
            desc=f"{len(jobs)} {learner}s in one batch",
            **fit,
        )
    # jobs run over (task, size, seed) in row-major order
    return np.array(err, dtype=float).reshape(len(tasks), len(sizes), len(seeds))


def _check_sweep(tasks, sizes, seeds) -> tuple[list, list, list]:
    """The ``tasks``, ``sizes`` and ``seeds`` of :func:`learning_curves` as checked lists."""
    tasks = _check_tasks(list(tasks), "tasks must be a non-empty sequence of TorusTask")
    sizes = [check_int("n", int(n), minimum=5) for n in sizes]
    seeds = [check_int("seed", int(s), minimum=0) for s in seeds]
    if not sizes or not seeds:
        raise ValueError("sizes and seeds must be non-empty")
    return tasks, sizes, seeds


def _test_sets(tasks: list, seeds: list, n_test: int, where: torch.device) -> dict:
    """The clean test set ``(X, y)`` of :func:`learning_curves` for each (task number, seed
    number): ``n_test`` points of stream ``tests``, index the seed, on ``where``."""
    sets = {}
    for t, task in enumerate(tasks):
        for j, seed in enumerate(seeds):
            test = task.sample(n_test, STREAMS.seed("tests", seed), noisy=False, device=where)
            sets[t, j] = test[:2]
    return sets


def _knn_members(
    tasks: list,
    sizes: list,
    seeds: list,
    jobs: list,
    test_sets: dict,
    where: torch.device,
    progress: bool,
) -> list:
    """k-NN test errors of the jobs ``(task, size, seed)`` of :func:`learning_curves`."""
    err = []
    for t, i, j in progress_bar(jobs, desc="kNN", disable=not progress, leave=False):
        X, y, _ = tasks[t].sample(sizes[i], STREAMS.seed("samples", seeds[j]), device=where)
        err.append(_knn_error(X, y, *test_sets[t, j], device=where))
    return err


def _network_members(
    tasks: list, sizes: list, seeds: list, jobs: list, test_sets: dict, where: torch.device
) -> tuple[list, list, list, list]:
    """``(train, val, test, init_seeds)`` of the jobs ``(task, size, seed)`` of
    :func:`learning_curves`: the first fifth of each sample validates, the rest trains, and
    every (seed, task, size) has its own initialisation."""
    train, val, test, init = [], [], [], []
    for t, i, j in jobs:
        X, y, _ = tasks[t].sample(sizes[i], STREAMS.seed("samples", seeds[j]), device=where)
        n_val = max(1, sizes[i] // 5)
        val.append((X[:n_val], y[:n_val]))
        train.append((X[n_val:], y[n_val:]))
        test.append(test_sets[t, j])
        init.append(_network_seed(seeds[j], t, i))
    return train, val, test, init


def learning_curve(
    task: TorusTask,
    sizes: Sequence[int],
    learner: str = "knn",
    seeds: Sequence[int] = (0,),
    **kwargs,
) -> np.ndarray:
    """Test errors (len(sizes), len(seeds)) of ``learner`` on one task
    (see :func:`learning_curves`)."""
    return learning_curves([task], sizes, learner, seeds, **kwargs)[0]


def net_error(
    task: TorusTask,
    n: int,
    kind: str = "mlp",
    seed: int = 0,
    *,
    size: int = 32,
    steps: int = 1500,
    batch: int = 128,
    lr: float = 3e-3,
    n_test: int = 2048,
    eval_every: int = 100,
    device=None,
) -> float:
    """Test MSE (vs the clean target) of a network trained on n noisy samples.

    80% of the n samples train the network (AdamW, mini-batches, cosine decay); the other
    20% pick the checkpoint (evaluated every ``eval_every`` steps) -- early stopping, so
    small training sets are not judged by how badly they overfit the noise.
    """
    check_choice("kind", kind, ("mlp", "transformer"))
    return float(
        learning_curves(
            [task],
            [n],
            kind,
            [seed],
            size=size,
            steps=steps,
            batch=batch,
            lr=lr,
            n_test=n_test,
            eval_every=eval_every,
            progress=False,
            device=device,
        )[0, 0, 0]
    )


def learner_params(kind: str, D: int, size: int) -> int:
    """Parameter count of :func:`make_learner` ``(kind, D, size)`` (built without touching
    torch's global random state)."""
    with seeded(0):
        return num_params(make_learner(kind, D, size))


def approximation_error(
    tasks,
    kind: str = "transformer",
    sizes: Sequence[int] = (8, 16, 32),
    seeds: Sequence[int] = (0,),
    *,
    steps: int = 2000,
    batch: int = 128,
    lr: float = 3e-3,
    n_test: int = 4096,
    pool: int = 65_536,
    progress: bool = True,
    device=None,
    base: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(parameter counts (len(sizes),), test MSEs)`` of networks of each size (width or
    d_model), trained on clean samples drawn from a pool far larger than the networks
    (``pool`` points, one pool per task, stream ``pool``; the test set is stream
    ``pool_tests``) -- effectively unlimited data, so what remains is approximation (and
    optimisation) error.  A seed (stream ``networks`` under ``base``, None: the book's base
    seed) draws the initialisation and the order of the mini-batches.

    ``tasks`` is one :class:`TorusTask` (errors of shape (len(sizes), len(seeds))) or a
    sequence of them with one D (errors (len(tasks), len(sizes), len(seeds))).  All tasks
    and seeds of one size train as one batched program on ``device``
    (:func:`fit_regressors`); on a CUDA GPU the MLPs of all sizes train as one program,
    each width zero-padded to the largest (the same networks and optimisation up to
    floating-point rounding).
    """
    one = isinstance(tasks, TorusTask)
    tasks = _check_tasks(
        [tasks] if one else list(tasks), "tasks must be a TorusTask or a non-empty sequence of them"
    )
    device = check_device("device", device)
    steps = check_int("steps", steps, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    pool = check_int("pool", pool, minimum=batch)
    seeds = [check_int("seed", int(s), minimum=0) for s in seeds]
    sizes = [check_int("size", int(s), minimum=1) for s in sizes]
    if not sizes or not seeds:
        raise ValueError("sizes and seeds must be non-empty")
    jobs = [(t, j) for t in range(len(tasks)) for j in range(len(seeds))]
    train, test = _pool_members(tasks, jobs, pool, n_test, device)
    init = [_network_seed(seeds[j], t) for t, j in jobs]
    params = np.array([learner_params(kind, tasks[0].D, size) for size in sizes])
    fit = dict(steps=steps, batch=batch, lr=lr, progress=progress, device=device, base=base)
    if kind == "mlp" and device.type in _PADDED_MLP_DEVICES:
        err = _fit_padded_mlps(tasks[0].D, sizes, train, test, init, **fit)
    else:
        err = _fit_size_by_size(kind, tasks[0].D, sizes, train, test, init, **fit)
    errs = np.empty((len(tasks), len(sizes), len(seeds)))
    for k, (i, (t, j)) in enumerate((i, job) for i in range(len(sizes)) for job in jobs):
        errs[t, i, j] = err[k]
    return params, (errs[0] if one else errs)


def _pool_members(
    tasks: list, jobs: list, pool: int, n_test: int, device: torch.device
) -> tuple[list, list]:
    """``(train, test)`` of the jobs ``(task, seed)`` of :func:`approximation_error`: one
    pool (stream ``pool``) and one test set (stream ``pool_tests``) per task, shared by the
    seeds (which draw the initialisation and the order of the mini-batches)."""
    pools = [t.sample(pool, STREAMS.seed("pool"), noisy=False, device=device)[:2] for t in tasks]
    tests = [
        t.sample(n_test, STREAMS.seed("pool_tests"), noisy=False, device=device)[:2] for t in tasks
    ]
    return [pools[t] for t, _ in jobs], [tests[t] for t, _ in jobs]


def _fit_padded_mlps(
    D: int,
    sizes: list,
    train: list,
    test: list,
    init: list,
    *,
    steps: int,
    batch: int,
    lr: float,
    progress: bool,
    device: torch.device,
    base: int | None,
) -> np.ndarray:
    """Test MSEs (len(sizes) * len(init),), size-major, of the MLPs of every width in
    ``sizes`` trained as one zero-padded program (:func:`_padded_mlps`)."""
    return _fit_members(
        _padded_mlps(D, sizes, init, base),
        train * len(sizes),
        test * len(sizes),
        None,
        init_seeds=init * len(sizes),
        steps=steps,
        batch=batch,
        lr=lr,
        weight_decay=0.01,
        eval_every=100,
        progress=progress,
        desc=f"{len(sizes) * len(init)} mlps of {len(sizes)} widths",
        device=device,
        base=base,
    )


def _fit_size_by_size(
    kind: str,
    D: int,
    sizes: list,
    train: list,
    test: list,
    init: list,
    *,
    steps: int,
    batch: int,
    lr: float,
    progress: bool,
    device: torch.device,
    base: int | None,
) -> np.ndarray:
    """Test MSEs (len(sizes) * len(init),), size-major: the networks of each size train as
    one batched program (:func:`fit_regressors`)."""
    return np.concatenate(
        [
            fit_regressors(
                kind,
                D,
                size,
                train,
                test,
                init_seeds=init,
                steps=steps,
                batch=batch,
                lr=lr,
                device=device,
                base=base,
            )
            for size in progress_bar(sizes, desc=f"{kind}s", disable=not progress, leave=False)
        ]
    )


def plot_product_tree(d: int = 8, ax=None, op: str = "product"):
    """Diagram: combining d numbers pairwise (``op`` "product" or "sum") takes
    ceil(log2 d) layers."""
    d = check_int("d", d, minimum=2)
    check_choice("op", op, ("product", "sum"))
    sign = "$\\times$" if op == "product" else "$+$"
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.8 * d, 3.2))
    level = [(float(i), f"$x_{{{i + 1}}}$") for i in range(d)]
    depth = 0
    ax.scatter([p for p, _ in level], [0] * d, s=500, color="#dddddd", zorder=2)
    for p, label in level:
        ax.text(p, 0, label, ha="center", va="center", zorder=3)
    while len(level) > 1:
        depth += 1
        nxt = []
        for i in range(0, len(level), 2):
            pair = level[i : i + 2]
            pos = float(np.mean([p for p, _ in pair]))
            for p, _ in pair:
                ax.plot([p, pos], [depth - 1, depth], color="0.5", zorder=1)
            nxt.append((pos, sign if len(pair) == 2 else "$=$"))
        level = nxt
        ax.scatter([p for p, _ in level], [depth] * len(level), s=500, color="#9ecae1", zorder=2)
        for p, label in level:
            ax.text(p, depth, label, ha="center", va="center", zorder=3)
    ax.set_yticks(range(depth + 1), ["inputs"] + [f"layer {i}" for i in range(1, depth + 1)])
    ax.set_xticks([])
    ax.set_title(f"{op} of d = {d} numbers in {depth} = ceil(log2 d) layers")
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    return ax


def load_text_sweep(name: str = "scaling_text.json") -> dict:
    """The archived character-level sweep written by ``scripts/scaling_text.py``, as arrays.

    Keys: ``meta`` (script, date, device, settings), ``seeds`` (S,), ``sizes`` (N,),
    ``test_loss``, ``best_step`` and ``id`` (S, N) for the d_model-32 model at each size;
    ``widths`` (W,) and ``width_id`` (S, W) at n = ``meta["ablation_n"]``; ``layer_id``
    (S, 3: embeddings, after block 1, after block 2), ``positions`` (P,) and
    ``position_id`` (S, P) of the d_model-32 model at that n.
    """
    data = load_data(name)
    meta, runs = data["meta"], data["runs"]
    seeds, sizes = list(meta["seeds"]), list(meta["sizes"])
    width0 = meta["train_char_model"]["d_model"]
    widths = sorted({width0, *meta["widths"]})
    n_ab = meta["ablation_n"]

    def run(seed, n, width):
        for r in runs:
            if r["seed"] == seed and r["n"] == n and r["d_model"] == width:
                return r
        raise ValueError(f"{name} has no run with seed={seed}, n={n}, d_model={width}")

    grid = [[run(s, n, width0) for n in sizes] for s in seeds]
    return {
        "meta": meta,
        "seeds": np.array(seeds),
        "sizes": np.array(sizes),
        "test_loss": np.array([[r["test_loss"] for r in row] for row in grid]),
        "best_step": np.array([[r["best_step"] for r in row] for row in grid]),
        "id": np.array([[r["id"] for r in row] for row in grid]),
        "widths": np.array(widths),
        "width_id": np.array([[run(s, n_ab, w)["id"] for w in widths] for s in seeds]),
        "width_best_step": np.array(
            [[run(s, n_ab, w)["best_step"] for w in widths] for s in seeds]
        ),
        "layer_id": np.array([run(s, n_ab, width0)["layer_id"] for s in seeds]),
        "positions": np.array(meta["positions"]),
        "position_id": np.array([run(s, n_ab, width0)["position_id"] for s in seeds]),
    }


def load_text_width_sweep(name: str = "scaling_text_width.json") -> dict:
    """The archived model-size sweep written by ``scripts/scaling_text_width.py``, as arrays.

    Keys: ``meta``, ``seeds`` (S,), ``widths`` (W,), and (S, W) arrays ``params``
    (non-embedding parameters), ``test_loss``, ``best_step`` and ``id`` (final-layer
    activations, MLE with K = 20); ``check_loss`` (S,): test losses of the short runs
    described by ``meta["check"]``, which the chapter repeats live.
    """
    data = load_data(name)
    meta, runs = data["meta"], data["runs"]
    seeds, widths = list(meta["seeds"]), list(meta["widths"])
    table = {(r["seed"], r["d_model"]): r for r in runs}
    missing = [(s, w) for s in seeds for w in widths if (s, w) not in table]
    if missing:
        raise ValueError(f"{name} has no runs for (seed, d_model) = {missing}")
    grid = [[table[s, w] for w in widths] for s in seeds]
    out = {"meta": meta, "seeds": np.array(seeds), "widths": np.array(widths)}
    for key in ("params", "test_loss", "best_step", "id"):
        out[key] = np.array([[r[key] for r in row] for row in grid])
    checks = {r["seed"]: r for r in data.get("checks", [])}
    out["check_loss"] = np.array([checks[s]["test_loss"] for s in seeds if s in checks])
    return out


@dataclass(frozen=True)
class ScalingSetup:
    """Sizes of the scaling-laws chapter's experiments (CPU default; FULL=1 is larger).

    Seeds listed here are indices into the module's ``STREAMS`` (``samples``, ``tests``,
    ``networks``); a run with base seed ``b`` maps each logical seed under ``b`` through
    :func:`~seqtheory.core.seeds.derive_seed` (base 0 keeps them as written).
    """

    id_points: int = 5000  # points per manifold for the ID table
    sphere_dims: tuple = (2, 4, 8, 16, 32)  # spheres S^d whose dimension is estimated
    torus_dims: tuple = (1, 2, 4)  # intrinsic dimensions of the regression task
    ambient: int = 16  # ambient dimension D of the torus data
    max_freq: int = 8  # Fourier cutoff of the random target
    sizes: tuple = (128, 256, 512, 1024, 2048, 4096)  # training-set sizes n
    knn_seeds: tuple = (0, 1, 2)  # seeds of the k-NN learning curves
    mlp_seeds: tuple = (0, 1, 2)  # seeds of the MLP learning curves
    data_learners: tuple = ("kNN", "MLP")  # Experiment 2 (FULL adds the transformer)
    net_sizes: tuple = (256, 512, 1024, 2048, 4096)  # sizes for the transformer
    tf_seeds: tuple = (0, 1, 2)  # seeds of the transformer learning curves
    approx_kinds: tuple = ("mlp",)  # Experiment 3 (FULL adds the transformer)
    approx_seeds: tuple = (0, 1, 2)  # seeds of the model-size sweep
    net_steps: int = 600  # optimisation steps per network
    beta_dim: int = 2  # torus dimension of the smoothness sweep
    betas: tuple = (0.5, 1.0, 1.5, 2.0)  # smoothness values of the sweep
    beta_max_freq: int = 32  # Fourier cutoff there (8 would hide beta)
    beta_seeds: tuple = (0, 1, 2)  # seeds of the smoothness sweep
    widths: tuple = (8, 16, 32, 64)  # MLP widths for model scaling
    tf_widths: tuple = (8, 16, 32)  # transformer d_model for model scaling
    width_dims: tuple = (2, 4)  # d for the model-scaling experiment
    text_sizes: tuple = (2_000, 4_000, 8_000, 16_000, 32_000, 64_000)  # characters
    text_steps: int = 1000  # steps of each character model
    text_widths: tuple = (16, 32, 64)  # d_model for ID vs model size
    text_docs: int = 450  # held-out documents for activation ID
    text_seeds: tuple = (0, 1, 2)  # seeds of the archived text sweep
    text_ablation_n: int = 16_000  # characters for the layer/width/position runs

    def __post_init__(self) -> None:
        for name in (
            "id_points",
            "ambient",
            "max_freq",
            "net_steps",
            "beta_dim",
            "beta_max_freq",
            "text_steps",
            "text_docs",
            "text_ablation_n",
        ):
            check_int(name, getattr(self, name), minimum=1)
        ints = {
            "sphere_dims": 1,
            "torus_dims": 1,
            "sizes": 5,
            "knn_seeds": 0,
            "mlp_seeds": 0,
            "net_sizes": 5,
            "tf_seeds": 0,
            "approx_seeds": 0,
            "beta_seeds": 0,
            "widths": 1,
            "tf_widths": 1,
            "width_dims": 1,
            "text_sizes": 1,
            "text_widths": 1,
            "text_seeds": 0,
        }
        for name, low in ints.items():
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values:
                raise TypeError(f"{name} must be a non-empty tuple, got {values!r}")
            for v in values:
                check_int(name, v, minimum=low)
        if not isinstance(self.betas, tuple) or not self.betas:
            raise TypeError(f"betas must be a non-empty tuple, got {self.betas!r}")
        for b in self.betas:
            check_float("betas", b, low=0.0, low_open=True)
        if self.ambient < 2 * max(*self.torus_dims, *self.width_dims, self.beta_dim):
            raise ValueError(
                f"ambient must be >= 2 * the largest torus dimension, got {self.ambient}"
            )
        for name, allowed in (
            ("data_learners", ("kNN", "MLP", "transformer")),
            ("approx_kinds", ("mlp", "transformer")),
        ):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values:
                raise TypeError(f"{name} must be a non-empty tuple, got {values!r}")
            for v in values:
                check_choice(name, v, allowed)

    def text_kwargs(self, **changes) -> dict:
        """Keyword arguments of :func:`seqtheory.text.train_char_model` for the chapter's
        character model (2 layers, d_model 32, 2 heads, context 32), with ``changes``."""
        return {
            **dict(
                d_model=32,
                n_heads=2,
                context=32,
                batch=32,
                lr=1e-2,
                steps=self.text_steps,
                progress=False,
            ),
            **changes,
        }


SETUP = Sizes(
    cpu=ScalingSetup(),
    full=ScalingSetup(
        id_points=20_000,
        torus_dims=(1, 2, 3, 4, 6),
        sizes=tuple(2**k for k in range(7, 16)),
        knn_seeds=(0, 1, 2, 3, 4),
        mlp_seeds=(0, 1, 2, 3, 4),
        net_sizes=tuple(2**k for k in range(8, 16)),
        data_learners=("kNN", "MLP", "transformer"),
        approx_kinds=("mlp", "transformer"),
        approx_seeds=(0, 1, 2, 3, 4),
        tf_seeds=(0, 1, 2, 3, 4),
        beta_seeds=(0, 1, 2, 3, 4),
        net_steps=4000,
        widths=(8, 16, 32, 64, 128, 256),
        tf_widths=(8, 16, 32, 64, 128),
        width_dims=(2, 3, 4),
        text_sizes=tuple(2_000 * 2**k for k in range(10)),
        text_steps=8000,
        text_widths=(16, 32, 64, 128, 256),
        # 4,000 held-out documents x 32 positions, as the official code's
        # README runs embeddings.py (--num_dataset_subsample 4000
        # --max_embeddings_per_sample 32)
        text_docs=4000,
    ),
)


# ----------------------------------------------------------------------------- experiments


def torus_tasks(
    setup: ScalingSetup,
    dims: Sequence[int] | None = None,
    *,
    seed: int | None = None,
    beta: float = 1.0,
    max_freq: int | None = None,
) -> dict:
    """``{d: TorusTask}`` for each torus dimension (default ``setup.torus_dims``) in
    ``setup.ambient`` dimensions, their targets drawn from stream ``targets`` under the base
    seed ``seed`` (None: the book's base seed), which the tasks keep for their samples."""
    if not isinstance(setup, ScalingSetup):
        raise TypeError(f"setup must be a ScalingSetup, got {type(setup).__name__}")
    seed = experiment_seed(seed)
    dims = setup.torus_dims if dims is None else tuple(dims)
    max_freq = setup.max_freq if max_freq is None else max_freq
    return {
        d: TorusTask(
            d=d,
            D=setup.ambient,
            beta=beta,
            max_freq=max_freq,
            seed=STREAMS.seed("targets"),
            base=seed,
        )
        for d in dims
    }


class SweepCurves:
    """The curves of a sweep's result (:class:`DataSweepResult`, :class:`ModelSweepResult`):
    ``errors[name]`` (len(dims), X, seeds) against the x values ``getattr(self, X_FIELD)[name]``
    (X,), one curve per name (a learner, a kind of network) and torus dimension d in ``dims``.
    """

    NAME: ClassVar[str]  # what a curve's name is, as its error message says ("learner")
    X_FIELD: ClassVar[str]  # the field of x values per name ("sizes")

    def curve(self, name: str, d: int) -> tuple[np.ndarray, np.ndarray]:
        """``(x (X,), errors (X, seeds))`` of ``name`` on the d-torus."""
        if name not in self.errors:
            raise ValueError(f"{self.NAME} must be one of {list(self.errors)}, got {name!r}")
        if d not in self.dims:
            raise ValueError(f"d must be one of {list(self.dims)}, got {d!r}")
        return getattr(self, self.X_FIELD)[name], self.errors[name][list(self.dims).index(d)]

    def fit(self, name: str, d: int) -> PowerLawFit:
        """Power law fitted to all seeds of ``name`` on the d-torus."""
        return fit_power_law(*self.curve(name, d))

    def seed_exponents(self, name: str, d: int) -> np.ndarray:
        """The fitted exponent of each seed's curve alone (seeds,)."""
        x, err = self.curve(name, d)
        return np.array([fit_power_law(x, e).exponent for e in err.T])


@dataclass
class DataSweepResult(SweepCurves, RunInfo):
    """Experiment 2: test errors of each learner against the training-set size n
    (:meth:`~SweepCurves.curve`, :meth:`~SweepCurves.fit` and
    :meth:`~SweepCurves.seed_exponents` of a learner on the d-torus)."""

    NAME, X_FIELD = "learner", "sizes"

    dims: tuple  # torus dimensions d, one task each
    sizes: dict  # learner name -> training-set sizes n (N,)
    errors: dict  # learner name -> test MSEs (len(dims), N, seeds)

    @property
    def learners(self) -> list:
        """Learner names, in the order they ran."""
        return list(self.errors)


@experiment(ScalingSetup, STREAMS)
def run_data_sweep(setup: ScalingSetup, ctx: Experiment) -> DataSweepResult:
    """Experiment 2: learning curves of ``setup.data_learners`` on the tori
    :func:`torus_tasks` ``(setup, seed=ctx.seed)``; networks train as one batched program per
    learner on ``ctx.device``; the targets and the k-NN search run there too if it is a
    CUDA GPU, else on the CPU.

    Under the base seed ``ctx.seed`` the targets are stream ``targets``, and learner seed
    ``s`` of the setup is the index of a learner's training sample (stream ``samples``) and
    test set (stream ``tests``); its networks' initialisations and batch orders are stream
    ``networks`` (one index per seed, torus and size).
    """
    specs = {
        "kNN": dict(learner="knn", seeds=setup.knn_seeds),
        "MLP": dict(learner="mlp", seeds=setup.mlp_seeds, size=64, steps=setup.net_steps),
        "transformer": dict(
            learner="transformer",
            seeds=setup.tf_seeds,
            size=32,
            steps=setup.net_steps,
            eval_every=200,
        ),
    }
    with ctx.timer() as t:
        tasks = list(torus_tasks(setup, seed=ctx.seed).values())
        sizes, errors = {}, {}
        for name, kw in specs.items():
            if name not in setup.data_learners:
                continue
            n = setup.net_sizes if name == "transformer" else setup.sizes
            errors[name] = learning_curves(
                tasks, n, **kw, progress=ctx.progress, device=ctx.device, base=ctx.seed
            )
            sizes[name] = np.array(n)
    return DataSweepResult(
        **ctx.header(setup, t.seconds), dims=tuple(setup.torus_dims), sizes=sizes, errors=errors
    )


def plot_learning_curves(result: DataSweepResult, axes=None):
    """One panel per learner: errors (mean and spread over seeds) against n on log axes,
    with the fitted power law and the predicted exponent of each torus in the legend."""
    learners = result.learners
    if axes is None:  # at most two panels a row, 7.5 in wide
        cols = min(len(learners), 2)
        rows = (len(learners) + cols - 1) // cols
        _, grid = plt.subplots(
            rows,
            cols,
            figsize=(3.75 * cols, 3.9 * rows),
            sharey=True,
            constrained_layout=True,
            squeeze=False,
        )
        grid = grid.ravel()
        for ax in grid[len(learners) :]:
            ax.axis("off")
        axes = grid[: len(learners)]
    for ax, name in zip(axes, learners, strict=True):
        for c, d in zip(palette(len(result.dims)), result.dims, strict=True):
            n, err = result.curve(name, d)
            fit = result.fit(name, d)
            ax.errorbar(
                n,
                err.mean(1),
                yerr=err.std(1) if err.shape[1] > 1 else None,
                fmt="o",
                color=c,
                capsize=2,
                label=f"d={d}: fitted {fit.exponent:.2f}, "
                f"predicted {predicted_exponents(d)['alpha_data']:.2f}",
            )
            ax.plot(n, fit(n), color=c, lw=1.5)
        ax.set(yscale="log", xlabel="training samples n", title=name)
        log_ticks(ax, n[::2] if len(n) > 6 else n)
        ax.legend(fontsize=8, title="slope of squared error")
    axes[0].set_ylabel("test squared error vs clean target")
    return axes


@dataclass
class BetaSweepResult(RunInfo):
    """Experiment 2b: k-NN exponents on the ``setup.beta_dim``-torus against smoothness."""

    betas: np.ndarray  # smoothness values (B,)
    exponents: np.ndarray  # (B, seeds): each seed's fitted exponent, cutoff M
    #                               = setup.beta_max_freq
    control_betas: np.ndarray  # (2,): the smallest and largest beta
    control_exponents: np.ndarray  # (2, seeds): the same at Experiment 2's cutoff
    predicted: np.ndarray  # (B,): 2 beta / (2 beta + d)
    modes: int  # Fourier modes of a target at the sweep's cutoff
    top_dim: int | None = None  # the largest torus of Experiment 2 ...
    top_cutoff: int | None = None  # ... the cutoff its targets have there (n_modes caps it)
    top_exponents: np.ndarray | None = None  # (2, seeds): control_betas on that torus at
    #                                          Experiment 2's cutoff


@experiment(ScalingSetup, STREAMS)
def run_beta_sweep(setup: ScalingSetup, ctx: Experiment) -> BetaSweepResult:
    """Experiment 2b: k-NN learning curves (sizes ``setup.sizes``) on ``setup.beta_dim``-tori
    of each smoothness in ``setup.betas`` with cutoff ``setup.beta_max_freq``, and for the
    smallest and largest beta at Experiment 2's cutoff ``setup.max_freq`` (the control),
    on the ``beta_dim``-torus and on Experiment 2's largest torus.  The targets and the
    k-NN search run on ``ctx.device`` if it is a CUDA GPU, else on the CPU.  Streams as in
    :func:`run_data_sweep`."""
    with ctx.timer() as t:
        betas = np.array(setup.betas, float)
        control = np.array([betas.min(), betas.max()])
        exps = _knn_slopes(setup, ctx, setup.beta_max_freq, betas)
        control_exps = _knn_slopes(setup, ctx, setup.max_freq, control)
        modes = len(
            TorusTask(
                d=setup.beta_dim,
                max_freq=setup.beta_max_freq,
                seed=ctx.logical("targets"),
                base=ctx.seed,
            ).amps
        )
        top = max(setup.torus_dims)
        top_exps = _knn_slopes(setup, ctx, setup.max_freq, control, top)
        pred = np.array([predicted_exponents(setup.beta_dim, b)["alpha_data"] for b in betas])
    return BetaSweepResult(
        **ctx.header(setup, t.seconds),
        betas=betas,
        exponents=exps,
        control_betas=control,
        control_exponents=control_exps,
        predicted=pred,
        modes=modes,
        top_dim=top,
        top_cutoff=TorusTask(d=top, D=setup.ambient, max_freq=setup.max_freq).cutoff,
        top_exponents=top_exps,
    )


def _knn_slopes(
    setup: ScalingSetup, ctx: Experiment, max_freq: int, betas: np.ndarray, dim: int | None = None
) -> np.ndarray:
    """Each seed's fitted k-NN exponent (len(betas), len(setup.beta_seeds)) on
    ``dim``-tori (default ``setup.beta_dim``) of smoothness ``betas`` and cutoff
    ``max_freq``, their targets stream ``targets``."""
    dim = setup.beta_dim if dim is None else dim
    tasks = [
        TorusTask(
            d=dim,
            D=setup.ambient,
            beta=float(b),
            max_freq=max_freq,
            seed=ctx.logical("targets"),
            base=ctx.seed,
        )
        for b in betas
    ]
    err = learning_curves(
        tasks,
        setup.sizes,
        "knn",
        seeds=setup.beta_seeds,
        progress=ctx.progress,
        device=ctx.device,
        base=ctx.seed,
    )
    return np.array(
        [[fit_power_law(setup.sizes, e).exponent for e in err_b.T] for err_b in err]
    )  # (betas, seeds)


@dataclass
class ModelSweepResult(SweepCurves, RunInfo):
    """Experiment 3: test errors of networks of growing size on effectively unlimited data
    (:meth:`~SweepCurves.curve`, :meth:`~SweepCurves.fit` and
    :meth:`~SweepCurves.seed_exponents` of a kind against its parameter counts N)."""

    NAME, X_FIELD = "kind", "params"

    dims: tuple  # torus dimensions d
    params: dict  # kind -> parameter counts N (W,)
    errors: dict  # kind -> test MSEs (len(dims), W, seeds)

    @property
    def kinds(self) -> list:
        """Network kinds, in the order they ran."""
        return list(self.errors)


@experiment(ScalingSetup, STREAMS)
def run_model_sweep(setup: ScalingSetup, ctx: Experiment) -> ModelSweepResult:
    """Experiment 3: :func:`approximation_error` of each kind in ``setup.approx_kinds``
    (MLP widths ``setup.widths``, transformer d_model ``setup.tf_widths``) on the tori of
    dimensions ``setup.width_dims``, ``setup.net_steps`` steps, on ``ctx.device``.  Under
    the base seed ``ctx.seed`` the targets are stream ``targets``, a task's pool and test
    set streams ``pool`` and ``pool_tests``, and seed ``s`` of ``setup.approx_seeds`` the
    index of a network's initialisation and batch order (stream ``networks``)."""
    with ctx.timer() as t:
        tasks = list(torus_tasks(setup, setup.width_dims, seed=ctx.seed).values())
        params, errors = {}, {}
        for kind in setup.approx_kinds:
            widths = setup.widths if kind == "mlp" else setup.tf_widths
            params[kind], errors[kind] = approximation_error(
                tasks,
                kind,
                widths,
                setup.approx_seeds,
                steps=setup.net_steps,
                progress=ctx.progress,
                device=ctx.device,
                base=ctx.seed,
            )
    return ModelSweepResult(
        **ctx.header(setup, t.seconds), dims=tuple(setup.width_dims), params=params, errors=errors
    )


def plot_model_sweep(result: ModelSweepResult, axes=None):
    """One panel per kind: error against parameter count (one thin line per seed, the
    median as dots), with the fitted power law and 2/d in the legend."""
    kinds = result.kinds
    if axes is None:  # at most 8 in wide
        _, axes = plt.subplots(
            1,
            len(kinds),
            figsize=(min(5.5 * len(kinds), 8.0), 4),
            constrained_layout=True,
            squeeze=False,
        )
        axes = axes[0]
    for ax, kind in zip(axes, kinds, strict=True):
        for c, d in zip(palette(len(result.dims)), result.dims, strict=True):
            params, errs = result.curve(kind, d)
            fit = result.fit(kind, d)
            ax.plot(params, errs, color=c, lw=0.6, alpha=0.5)  # one thin line per seed
            ax.plot(
                params,
                np.median(errs, 1),
                "o",
                color=c,
                label=f"d={d}: fitted {fit.exponent:.2f}, "
                f"2/d = {predicted_exponents(d)['alpha_model']:.2f}",
            )
            ax.plot(params, fit(params), color=c)
        log_ticks(ax, params, fmt="{:,.0f}")
        ax.tick_params(axis="x", labelrotation=30)
        ax.set(
            yscale="log",
            xlabel="parameters N",
            ylabel="test squared error",
            title=f"{kind}: error vs size",
        )
        ax.legend(fontsize=9)
    return axes

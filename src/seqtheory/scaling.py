"""Intrinsic dimension of data (groundwork for the scaling-laws chapter).

* :func:`knn_distances` — exact distances to the K nearest neighbours: candidates from a
  float32 Gram-matrix search in chunks, then the selected distances recomputed in float64
  (the Gram trick alone returns spurious zeros on low-dimensional data).
* :func:`mle_dimension` — Levina & Bickel's maximum-likelihood estimate with K neighbours,
  combined over points by the harmonic mean (MacKay & Ghahramani's correction); with
  ``batch_size`` it averages estimates over random batches of that size, as is done for
  model activations (batches of 3,600 points).
* :func:`twonn_dimension` — Facco et al.'s TwoNN: the ratio of second to first
  neighbour distances, fitted through the origin after discarding the largest ratios.
* :func:`sample_sphere`, :func:`sample_cube` — known manifolds embedded in R^D.

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
  (:func:`fit_regressors`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from .utils import (
    Sizes,
    check_choice,
    check_float,
    check_int,
    derive_seed,
    make_generator,
    make_rng,
    progress_bar,
)

__all__ = [
    "knn_distances",
    "mle_dimension",
    "twonn_dimension",
    "sample_sphere",
    "sample_cube",
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
    "ScalingSetup",
    "SETUP",
]


def _check_points(X, name: str = "X") -> np.ndarray:
    X = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape (n_points, n_features), got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return X


def _drop_duplicates(X: np.ndarray) -> np.ndarray:
    """X without repeated rows (first occurrences kept, in their order).

    Exact comparison of whole rows (a random-projection hash is not enough: a matrix-vector
    product may round identical rows differently, depending on where they sit in X)."""
    _, first = np.unique(X, axis=0, return_index=True)
    if len(first) == len(X):
        return X
    return X[np.sort(first)]


def knn_distances(X, K: int, *, unique: bool = True, chunk: int = 2048) -> np.ndarray:
    """Sorted distances (n, K) from every point to its K nearest other points (float64).

    With ``unique=True`` duplicate points are removed first (a zero distance would make
    the estimators infinite).
    """
    import torch

    X = _check_points(X)
    if unique:
        X = _drop_duplicates(X)
    n = X.shape[0]
    K = check_int("K", K, minimum=1)
    if K >= n:
        raise ValueError(f"K must be < the number of (distinct) points, got K={K}, n={n}")
    extra = min(n - 1, K + 2)                     # spare candidates for float32 near-ties
    Xc = X - X.mean(0)
    Xt = torch.from_numpy(Xc.astype(np.float32))
    sq = (Xt * Xt).sum(1)
    out = np.empty((n, K))
    for start in range(0, n, chunk):
        block = Xt[start:start + chunk]
        d2 = torch.addmm(sq[None, :], block, Xt.T, alpha=-2.0)   # (b, n): ranks x_j
        rows = torch.arange(block.shape[0])
        d2[rows, rows + start] = float("inf")                                    # not self
        cand = torch.topk(d2, extra, dim=1, largest=False).indices.numpy()      # (b, extra)
        for s in range(0, cand.shape[0], 256):   # exact float64 distances, cache-sized
            a = Xc[start + s:start + s + 256]
            diff = np.take(Xc, cand[s:s + 256], axis=0)
            diff -= a[:, None, :]
            exact = np.sqrt(np.einsum("bkd,bkd->bk", diff, diff))
            out[start + s:start + s + a.shape[0]] = np.sort(exact, axis=1)[:, :K]
    return out


def _mle_from_distances(dist: np.ndarray) -> np.ndarray:
    """Pointwise Levina-Bickel estimates (K - 1) / sum_{j<K} log(T_K / T_j)."""
    K = dist.shape[1]
    logs = np.log(dist[:, -1:] / dist[:, :-1]).sum(1)
    return (K - 1) / logs


def mle_dimension(X, K: int = 20, *, batch_size: int | None = None, seed: int = 0,
                  pointwise: bool = False):
    """Maximum-likelihood intrinsic dimension (harmonic mean over points).

    ``batch_size``: split the points into random batches of this size, estimate on each,
    and return the mean (the last, smaller batch is dropped).  ``pointwise=True`` returns
    the per-point estimates instead (no batching).
    """
    X = _check_points(X)
    K = check_int("K", K, minimum=2)
    if pointwise:
        return _mle_from_distances(knn_distances(X, K))
    if batch_size is None:
        return float(1.0 / np.mean(1.0 / _mle_from_distances(knn_distances(X, K))))
    batch_size = check_int("batch_size", batch_size, minimum=K + 1)
    order = make_rng(seed).permutation(len(X))
    batches = [order[i:i + batch_size] for i in range(0, len(X) - batch_size + 1, batch_size)]
    if not batches:
        raise ValueError(f"batch_size={batch_size} exceeds the {len(X)} points")
    return float(np.mean([mle_dimension(X[b], K) for b in batches]))


def twonn_dimension(X, discard: float = 0.1) -> float:
    """TwoNN estimate: fit log(1 - F(mu)) = -d log(mu) through the origin, mu = r2 / r1,
    after discarding the fraction ``discard`` of largest ratios."""
    discard = check_float("discard", discard, low=0.0, high=1.0, high_open=True)
    dist = knn_distances(X, 2)
    mu = np.sort(dist[:, 1] / dist[:, 0])
    n = mu.size
    keep = int(np.floor(n * (1 - discard)))
    F = np.arange(1, n + 1) / n
    x, y = np.log(mu[:keep]), -np.log(1 - F[:keep])
    return float((x * y).sum() / (x * x).sum())


def _embed(Y: np.ndarray, D: int, rng, embedding: str) -> np.ndarray:
    n, k = Y.shape
    if D < k:
        raise ValueError(f"ambient dimension D={D} is smaller than the manifold's {k}")
    if embedding == "nonlinear":   # a smooth injective map: append sines of the coordinates
        Y = np.concatenate([Y, np.sin(2.0 * Y)], axis=1)[:, : max(k, min(D, 2 * k))]
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))       # random rotation of R^D
    padded = np.zeros((n, D))
    padded[:, : Y.shape[1]] = Y
    return padded @ Q.T


def sample_sphere(n: int, d: int, D: int | None = None, *, embedding: str = "linear",
                  seed: int = 0) -> np.ndarray:
    """n points uniform on the unit sphere S^d (in R^{d+1}), embedded in R^D (default
    d + 1) by a random rotation ("linear") or a smooth non-linear map then a rotation."""
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    check_choice("embedding", embedding, ("linear", "nonlinear"))
    rng = make_rng(seed)
    Y = rng.standard_normal((n, d + 1))
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    return _embed(Y, d + 1 if D is None else check_int("D", D, minimum=1), rng, embedding)


def sample_cube(n: int, d: int, D: int | None = None, *, embedding: str = "linear",
                seed: int = 0) -> np.ndarray:
    """n points uniform in [0, 1]^d, embedded in R^D like :func:`sample_sphere`."""
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    check_choice("embedding", embedding, ("linear", "nonlinear"))
    rng = make_rng(seed)
    Y = rng.random((n, d))
    return _embed(Y, d if D is None else check_int("D", D, minimum=1), rng, embedding)


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
    return PowerLawFit(exponent=-float(slopes.mean()), coef=float(np.exp(pooled_icpt)),
                       stderr=se)


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
    return {"alpha_data": 2 * beta / (2 * beta + d), "alpha_model": 2 * beta / d,
            "sharma_kaplan": 4.0 / d}


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
        ly = np.log(y[None, :] - floors[:, None])                             # (G, n)
        slope = (ly - ly.mean(1, keepdims=True)) @ xc / (xc @ xc)             # (G,)
        icpt = ly.mean(1) - slope * lx.mean()
        pred = floors[:, None] + np.exp(icpt[:, None] + slope[:, None] * lx)  # (G, n)
        loss = ((np.log(pred) - ly0) ** 2).sum(1)
        return int(np.argmin(loss)), slope, icpt

    floors = y.min() * (1.0 - np.geomspace(1.0, 1e-9, grid))                 # (G,)
    g, *_ = best(floors)
    lo, hi = floors[max(g - 1, 0)], floors[min(g + 1, grid - 1)]
    floors = np.linspace(lo, hi, grid)
    g, slope, icpt = best(floors)
    return FloorFit(exponent=-float(slope[g]), coef=float(np.exp(icpt[g])),
                    floor=float(floors[g]))


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
    for s in range(1, depth + 1):          # one loop step per layer of the network
        g = 2 * relu(g) - 4 * relu(g - 0.5)            # hat function, from two ReLUs
        out = out - g / 4.0 ** s
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

    d: int = 2              # intrinsic dimension of the torus
    D: int = 16             # ambient dimension (at least 2d)
    beta: float = 1.0       # smoothness of the target
    noise: float = 0.5      # std of the label noise (the target has unit std)
    max_freq: int = 32      # largest |k_i| in the Fourier series (if n_modes allows)
    n_modes: int = 4096     # at most this many frequency vectors
    seed: int = 0           # draws the target and the embedding

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
        rng = make_rng(self.seed)
        M = self.max_freq            # all k with |k_i| <= M, M as large as n_modes allows
        while M > 1 and ((2 * M + 1) ** self.d - 1) // 2 > self.n_modes:
            M -= 1
        self.cutoff = M
        grid = np.indices((2 * M + 1,) * self.d).reshape(self.d, -1).T - M
        nonzero = grid != 0                      # keep one of each pair {k, -k}: the
        first = grid[np.arange(len(grid)), nonzero.argmax(1)]   # first non-zero entry > 0
        grid = grid[nonzero.any(1) & (first > 0)]
        k2 = (grid ** 2).sum(1)
        amp = rng.standard_normal(len(grid)) * (1.0 + k2) ** (-(self.beta + self.d / 2) / 2)
        amp /= np.sqrt((amp ** 2).sum() / 2)        # Var f = sum a_k^2 / 2 = 1
        self.freqs = grid.astype(np.float64)                           # (m, d)
        self.amps = amp                                                # (m,)
        self.phases = rng.uniform(0, 2 * np.pi, len(grid))             # (m,)
        Q, _ = np.linalg.qr(rng.standard_normal((self.D, self.D)))
        self.rotation = Q[:, : 2 * self.d]                             # (D, 2d)

    def target(self, theta) -> np.ndarray:
        """The clean target f at angles ``theta`` (n, d)."""
        theta = torch.as_tensor(np.asarray(theta, float))              # torch's cos is
        phase = theta @ torch.from_numpy(self.freqs).T + torch.from_numpy(self.phases)
        return (torch.cos(phase) @ torch.from_numpy(self.amps)).numpy()  # 3x NumPy's: (n,)

    def embed(self, theta) -> np.ndarray:
        """Points of R^D for angles ``theta`` (n, d)."""
        theta = np.asarray(theta, float)
        flat = np.concatenate([np.cos(theta), np.sin(theta)], 1) / np.sqrt(self.d)
        return flat @ self.rotation.T                                  # (n, D)

    def sample(self, n: int, seed: int = 0, *, noisy: bool = True):
        """``(X, y, theta)``: n points (float32 tensor (n, D)), labels (n,), angles."""
        n = check_int("n", n, minimum=1)
        rng = np.random.default_rng([derive_seed(self.seed), derive_seed(seed), 1])
        theta = rng.uniform(0, 2 * np.pi, (n, self.d))
        y = self.target(theta)
        if noisy:
            y = y + self.noise * rng.standard_normal(n)
        X = torch.from_numpy(self.embed(theta)).float()
        return X, torch.from_numpy(y).float(), theta


def knn_error(task: TorusTask, n: int, seed: int = 0, *, n_test: int = 2048,
              ks: Sequence[int] | None = None) -> float:
    """Test MSE (vs the clean target) of k-NN regression on n noisy samples.

    k is chosen from ``ks`` (default: powers of 2 up to n/8) by leave-one-out error on the training
    set, so the learner adapts to the data as theory's rate-optimal k ~ n^(2b/(2b+d)) does.
    """
    n = check_int("n", n, minimum=2)
    X, y, _ = task.sample(n, seed)
    Xt, yt, _ = task.sample(n_test, 10_000 + seed, noisy=False)
    return _knn_error(X, y, Xt, yt, ks)


def _knn_error(X: torch.Tensor, y: torch.Tensor, Xt: torch.Tensor, yt: torch.Tensor,
               ks: Sequence[int] | None = None) -> float:
    """k-NN regression's test MSE on (Xt, yt), k chosen by leave-one-out on (X, y)."""
    n = len(X)
    # default: powers of 2 up to n/8 (the leave-one-out choice sits far below: at most
    # n/32 on the chapter's tasks), so the neighbour search stays a cheap top-k
    if ks:
        ks = [k for k in ks if k < n]
    else:
        ks = [2 ** i for i in range(16) if 2 ** i <= max(n // 8, 1)]
    kmax = max(ks)
    d_tr = torch.cdist(X, X)                                           # (n, n)
    d_tr.fill_diagonal_(float("inf"))
    nb = d_tr.topk(kmax, largest=False).indices                        # (n, kmax)
    csum = y[nb].cumsum(1)                                             # (n, kmax)
    loo = [float(((csum[:, k - 1] / k - y) ** 2).mean()) for k in ks]
    k = ks[int(np.argmin(loo))]
    nt = torch.cdist(Xt, X).topk(k, largest=False).indices             # (n_test, k)
    return float(((y[nt].mean(1) - yt) ** 2).mean())


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
        return self.net(x).squeeze(-1)                                 # (B,)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class PointTransformer(nn.Module):
    """The shared :class:`~seqtheory.models.Transformer` reading a point of R^D as tokens.

    The D coordinates are cut into ``n_tokens`` chunks; each chunk is mapped linearly to
    a d_model-dimensional token, the transformer (causal, learned positions, MLPs) runs
    over the tokens, and its 1-dimensional "unembedding" at the last token is the output.
    """

    def __init__(self, D: int, n_tokens: int = 4, d_model: int = 32, n_layers: int = 2,
                 n_heads: int = 2):
        super().__init__()
        from .models import Transformer, TransformerConfig

        check_int("D", D, minimum=1)
        check_int("n_tokens", n_tokens, minimum=1)
        if D % n_tokens:
            raise ValueError(f"D={D} must be divisible by n_tokens={n_tokens}")
        self.n_tokens = n_tokens
        self.embed = nn.Linear(D // n_tokens, d_model)
        self.body = Transformer(TransformerConfig(
            vocab_size=1, max_len=n_tokens, n_layers=n_layers, n_heads=n_heads,
            d_model=d_model, init_std=0.05))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x.view(x.shape[0], self.n_tokens, -1))    # (B, T, C)
        return self.body(embeds=tokens)[:, -1, 0]                      # (B,)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def make_learner(kind: str, D: int, size: int = 32) -> nn.Module:
    """A fresh regressor: ``"mlp"`` (2 hidden layers of ``size``) or ``"transformer"``
    (d_model = ``size``, 2 layers, 4 tokens)."""
    check_choice("kind", kind, ("mlp", "transformer"))
    if kind == "mlp":
        return PointMLP(D, width=size)
    return PointTransformer(D, n_tokens=4, d_model=size, n_heads=2 if size % 2 == 0 else 1)


def _pad(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack tensors of different lengths along a new first dimension, zero-padded;
    returns ``(stacked (M, n_max, ...), lengths (M,))``."""
    n_max = max(len(t) for t in tensors)
    out = tensors[0].new_zeros((len(tensors), n_max, *tensors[0].shape[1:]))
    for m, t in enumerate(tensors):
        out[m, : len(t)] = t
    return out, torch.tensor([len(t) for t in tensors])


def _masked_mse(ens, X: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each member's mean squared error on its own first ``lengths[m]`` points (M,)."""
    err = (ens(X) - y) ** 2                                            # (M, n_max)
    mask = torch.arange(X.shape[1]) < lengths[:, None]
    return (err * mask).sum(1) / lengths


def fit_regressors(kind: str, D: int, size: int, train: Sequence, test: Sequence,
                   val: Sequence | None = None, *, init_seeds: Sequence[int], steps: int,
                   batch: int = 128, lr: float = 3e-3, weight_decay: float = 0.01,
                   eval_every: int = 100, progress: bool = False,
                   desc: str = "training") -> np.ndarray:
    """Train M regressors of one architecture as one batched program; their test MSEs.

    Member ``m`` (initialised under seed ``init_seeds[m]``, which also draws its
    mini-batches) minimises the squared error on its own training set ``train[m] = (X, y)``
    with AdamW and cosine decay, on mini-batches of ``batch`` points drawn with replacement
    from that set, so its run does not depend on the other members.  With ``val`` given, the
    members are evaluated every ``eval_every`` steps and at the end, and each reports its
    error on ``test[m]`` at the evaluation where its error on ``val[m]`` was lowest (early
    stopping); without ``val``, its final test error.  The members are stacked into one
    :class:`~seqtheory.ensemble.Ensemble`, so M networks cost far less than M runs.
    """
    from .ensemble import Ensemble

    check_choice("kind", kind, ("mlp", "transformer"))
    steps = check_int("steps", steps, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    M = len(train)
    if M == 0 or len(test) != M or (val is not None and len(val) != M) \
            or len(init_seeds) != M:
        raise ValueError("train, test, val and init_seeds must have one entry per member "
                         f"(got {M}, {len(test)}, {None if val is None else len(val)}, "
                         f"{len(init_seeds)})")
    ens = Ensemble(lambda: make_learner(kind, D, size), list(init_seeds))
    Xtr, ntr = _pad([x for x, _ in train])
    ytr, _ = _pad([y for _, y in train])
    Xte, nte = _pad([x for x, _ in test])
    yte, _ = _pad([y for _, y in test])
    if val is not None:
        Xv, nv = _pad([x for x, _ in val])
        yv, _ = _pad([y for _, y in val])
    opt = torch.optim.AdamW(ens.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gens = [make_generator(s) for s in init_seeds]      # each member's own batch order
    rows = torch.arange(M)[:, None]
    best_val = torch.full((M,), float("inf"))
    best_test = torch.full((M,), float("nan"))
    for step in progress_bar(range(1, steps + 1), desc=desc, disable=not progress,
                             leave=False):
        idx = torch.stack([torch.randint(n, (batch,), generator=g)
                           for n, g in zip(ntr.tolist(), gens, strict=True)])  # (M, batch)
        loss = ((ens(Xtr[rows, idx]) - ytr[rows, idx]) ** 2).mean(1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if val is not None and (step % eval_every == 0 or step == steps):
            with torch.no_grad():
                v = _masked_mse(ens, Xv, yv, nv)
                better = v < best_val
                if better.any():
                    best_test = torch.where(better, _masked_mse(ens, Xte, yte, nte), best_test)
                    best_val = torch.minimum(v, best_val)
    if val is None:
        with torch.no_grad():
            best_test = _masked_mse(ens, Xte, yte, nte)
    return best_test.numpy().astype(float)


def learning_curves(tasks: Sequence[TorusTask], sizes: Sequence[int], learner: str = "knn",
                    seeds: Sequence[int] = (0,), *, size: int = 32, steps: int = 1500,
                    batch: int = 128, lr: float = 3e-3, n_test: int = 2048,
                    eval_every: int = 100, progress: bool = True) -> np.ndarray:
    """Test errors (len(tasks), len(sizes), len(seeds)) of ``learner`` ("knn", "mlp" or
    "transformer") trained on n = each size noisy samples of each task with each seed.

    Seed s draws the n training samples (``task.sample(n, s)``) and the clean test set
    (``task.sample(n_test, 10_000 + s)``).  Networks: the first fifth of the n samples is
    a validation set that picks the checkpoint (:func:`fit_regressors`; every network of
    the sweep trains in one batched program, each with its own data and initialisation).
    The tasks must share the ambient dimension D.
    """
    check_choice("learner", learner, ("knn", "mlp", "transformer"))
    tasks = list(tasks)
    if not tasks or not all(isinstance(t, TorusTask) for t in tasks):
        raise TypeError("tasks must be a non-empty sequence of TorusTask")
    if len({t.D for t in tasks}) > 1:
        raise ValueError(f"tasks must share the ambient dimension D, got {[t.D for t in tasks]}")
    sizes = [check_int("n", int(n), minimum=5) for n in sizes]
    seeds = [check_int("seed", int(s), minimum=0) for s in seeds]
    if not sizes or not seeds:
        raise ValueError("sizes and seeds must be non-empty")
    jobs = [(t, i, j) for t in range(len(tasks)) for i in range(len(sizes))
            for j in range(len(seeds))]
    out = np.empty((len(tasks), len(sizes), len(seeds)))
    test_sets = {(t, j): tasks[t].sample(n_test, 10_000 + seeds[j], noisy=False)[:2]
                 for t in range(len(tasks)) for j in range(len(seeds))}
    if learner == "knn":     # the same numbers as knn_error(task, n, seed, n_test=n_test)
        for t, i, j in progress_bar(jobs, desc="kNN", disable=not progress, leave=False):
            X, y, _ = tasks[t].sample(sizes[i], seeds[j])
            out[t, i, j] = _knn_error(X, y, *test_sets[t, j])
        return out
    steps = check_int("steps", steps, minimum=1)
    train, val, test, init = [], [], [], []
    for t, i, j in jobs:
        X, y, _ = tasks[t].sample(sizes[i], seeds[j])
        n_val = max(1, sizes[i] // 5)
        val.append((X[:n_val], y[:n_val]))
        train.append((X[n_val:], y[n_val:]))
        test.append(test_sets[t, j])
        # one initialisation per (seed, task, size): distinct members of one ensemble
        init.append(1_000_000 * seeds[j] + 1000 * t + i)
    err = fit_regressors(learner, tasks[0].D, size, train, test, val, init_seeds=init,
                         steps=steps, batch=batch, lr=lr, weight_decay=1e-4,
                         eval_every=eval_every, progress=progress,
                         desc=f"{len(jobs)} {learner}s in one batch")
    for k, (t, i, j) in enumerate(jobs):
        out[t, i, j] = err[k]
    return out


def learning_curve(task: TorusTask, sizes: Sequence[int], learner: str = "knn",
                   seeds: Sequence[int] = (0,), **kwargs) -> np.ndarray:
    """Test errors (len(sizes), len(seeds)) of ``learner`` on one task
    (see :func:`learning_curves`)."""
    return learning_curves([task], sizes, learner, seeds, **kwargs)[0]


def net_error(task: TorusTask, n: int, kind: str = "mlp", seed: int = 0, *, size: int = 32,
              steps: int = 1500, batch: int = 128, lr: float = 3e-3, n_test: int = 2048,
              eval_every: int = 100) -> float:
    """Test MSE (vs the clean target) of a network trained on n noisy samples.

    80% of the n samples train the network (AdamW, mini-batches, cosine decay); the other
    20% pick the checkpoint (evaluated every ``eval_every`` steps) -- early stopping, so
    small training sets are not judged by how badly they overfit the noise.
    """
    check_choice("kind", kind, ("mlp", "transformer"))
    return float(learning_curves([task], [n], kind, [seed], size=size, steps=steps,
                                 batch=batch, lr=lr, n_test=n_test, eval_every=eval_every,
                                 progress=False)[0, 0, 0])


def approximation_error(tasks, kind: str = "transformer", sizes: Sequence[int] = (8, 16, 32),
                        seeds: Sequence[int] = (0,), *, steps: int = 2000, batch: int = 128,
                        lr: float = 3e-3, n_test: int = 4096, pool: int = 65_536,
                        progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(parameter counts (len(sizes),), test MSEs)`` of networks of each size (width or
    d_model), trained on clean samples drawn from a pool far larger than the networks
    (``pool`` points, one pool per task) -- effectively unlimited data, so what remains is
    approximation (and optimisation) error.  A seed draws the initialisation and the order
    of the mini-batches.

    ``tasks`` is one :class:`TorusTask` (errors of shape (len(sizes), len(seeds))) or a
    sequence of them with one D (errors (len(tasks), len(sizes), len(seeds))).  All tasks
    and seeds of one size train as one batched program (:func:`fit_regressors`).
    """
    one = isinstance(tasks, TorusTask)
    tasks = [tasks] if one else list(tasks)
    if not tasks or not all(isinstance(t, TorusTask) for t in tasks):
        raise TypeError("tasks must be a TorusTask or a non-empty sequence of them")
    if len({t.D for t in tasks}) > 1:
        raise ValueError(f"tasks must share the ambient dimension D, got {[t.D for t in tasks]}")
    steps = check_int("steps", steps, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    pool = check_int("pool", pool, minimum=batch)
    seeds = [check_int("seed", int(s), minimum=0) for s in seeds]
    sizes = [check_int("size", int(s), minimum=1) for s in sizes]
    if not sizes or not seeds:
        raise ValueError("sizes and seeds must be non-empty")
    jobs = [(t, j) for t in range(len(tasks)) for j in range(len(seeds))]
    # one pool and one test set per task, shared by the seeds (which draw the
    # initialisation and the order of the mini-batches)
    pools = [t.sample(pool, 30_000, noisy=False)[:2] for t in tasks]
    tests = [t.sample(n_test, 20_000, noisy=False)[:2] for t in tasks]
    train = [pools[t] for t, _ in jobs]
    test = [tests[t] for t, _ in jobs]
    init = [1_000_000 * seeds[j] + 1000 * t for t, j in jobs]
    params, errs = [], np.empty((len(tasks), len(sizes), len(seeds)))
    for i, size in enumerate(progress_bar(sizes, desc=f"{kind}s", disable=not progress,
                                          leave=False)):
        err = fit_regressors(kind, tasks[0].D, size, train, test, init_seeds=init,
                             steps=steps, batch=batch, lr=lr)
        for k, (t, j) in enumerate(jobs):
            errs[t, i, j] = err[k]
        params.append(make_learner(kind, tasks[0].D, size).num_params())
    return np.array(params), (errs[0] if one else errs)


def plot_product_tree(d: int = 8, ax=None, op: str = "product"):
    """Diagram: combining d numbers pairwise (``op`` "product" or "sum") takes
    ceil(log2 d) layers."""
    import matplotlib.pyplot as plt

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
            pair = level[i:i + 2]
            pos = float(np.mean([p for p, _ in pair]))
            for p, _ in pair:
                ax.plot([p, pos], [depth - 1, depth], color="0.5", zorder=1)
            nxt.append((pos, sign if len(pair) == 2 else "$=$"))
        level = nxt
        ax.scatter([p for p, _ in level], [depth] * len(level), s=500, color="#9ecae1",
                   zorder=2)
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
    from .utils import load_data

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
        "meta": meta, "seeds": np.array(seeds), "sizes": np.array(sizes),
        "test_loss": np.array([[r["test_loss"] for r in row] for row in grid]),
        "best_step": np.array([[r["best_step"] for r in row] for row in grid]),
        "id": np.array([[r["id"] for r in row] for row in grid]),
        "widths": np.array(widths),
        "width_id": np.array([[run(s, n_ab, w)["id"] for w in widths] for s in seeds]),
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
    from .utils import load_data

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
    """Sizes of the scaling-laws chapter's experiments (CPU default; FULL=1 is larger)."""

    id_points: int = 5000                     # points per manifold for the ID table
    sphere_dims: tuple = (2, 4, 8, 16, 32)    # spheres S^d whose dimension is estimated
    torus_dims: tuple = (1, 2, 4)             # intrinsic dimensions of the regression task
    ambient: int = 16                         # ambient dimension D of the torus data
    max_freq: int = 8                         # Fourier cutoff of the random target
    sizes: tuple = (128, 256, 512, 1024, 2048, 4096)   # training-set sizes n
    knn_seeds: tuple = (0, 1, 2)
    mlp_seeds: tuple = (0, 1, 2)
    data_learners: tuple = ("kNN", "MLP")     # Experiment 2 (FULL adds the transformer)
    net_sizes: tuple = (256, 512, 1024, 2048, 4096)     # sizes for the transformer
    tf_seeds: tuple = (0, 1, 2)
    approx_kinds: tuple = ("mlp",)            # Experiment 3 (FULL adds the transformer)
    approx_seeds: tuple = (0, 1, 2)
    net_steps: int = 600                      # optimisation steps per network
    beta_dim: int = 2                         # torus dimension of the smoothness sweep
    betas: tuple = (0.5, 1.0, 1.5, 2.0)       # smoothness values of the sweep
    beta_max_freq: int = 32                   # Fourier cutoff there (8 would hide beta)
    beta_seeds: tuple = (0, 1, 2)
    widths: tuple = (8, 16, 32, 64)           # MLP widths for model scaling
    tf_widths: tuple = (8, 16, 32)            # transformer d_model for model scaling
    width_dims: tuple = (2, 4)                # d for the model-scaling experiment
    text_sizes: tuple = (2_000, 4_000, 8_000, 16_000, 32_000, 64_000)  # characters
    text_steps: int = 1000
    text_widths: tuple = (16, 32, 64)         # d_model for ID vs model size
    text_docs: int = 450                      # held-out documents for activation ID
    text_seeds: tuple = (0, 1, 2)             # seeds of the archived text sweep
    text_ablation_n: int = 16_000             # characters for the layer/width/position runs

    def text_kwargs(self, **changes) -> dict:
        """Keyword arguments of :func:`seqtheory.text.train_char_model` for the chapter's
        character model (2 layers, d_model 32, 2 heads, context 32), with ``changes``."""
        return {**dict(d_model=32, n_heads=2, context=32, batch=32, lr=1e-2,
                       steps=self.text_steps, progress=False), **changes}


SETUP = Sizes(
    cpu=ScalingSetup(),
    full=ScalingSetup(id_points=20_000, torus_dims=(1, 2, 3, 4, 6),
                      sizes=tuple(2 ** k for k in range(7, 16)), knn_seeds=(0, 1, 2, 3, 4),
                      mlp_seeds=(0, 1, 2), net_sizes=tuple(2 ** k for k in range(8, 16)),
                      data_learners=("kNN", "MLP", "transformer"),
                      approx_kinds=("mlp", "transformer"), approx_seeds=(0, 1, 2, 3, 4),
                      tf_seeds=(0, 1, 2), net_steps=4000, widths=(8, 16, 32, 64, 128, 256),
                      tf_widths=(8, 16, 32, 64, 128), width_dims=(2, 3, 4),
                      text_sizes=tuple(2_000 * 2 ** k for k in range(10)), text_steps=8000,
                      text_widths=(16, 32, 64, 128, 256), text_docs=2000),
)

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
  with checkpoint selection on a validation split); :func:`learning_curve` sweeps n.
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
    "predicted_exponents",
    "TorusTask",
    "PointMLP",
    "PointTransformer",
    "make_learner",
    "knn_error",
    "net_error",
    "learning_curve",
    "approximation_error",
    "plot_product_tree",
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
    """X without repeated rows (first occurrence kept); rows are hashed by a random
    projection, and only rows with equal hashes are compared exactly."""
    h = X @ np.random.default_rng(0).standard_normal(X.shape[1])
    order = np.argsort(h, kind="stable")
    same_hash = np.flatnonzero(np.diff(h[order]) == 0)
    if same_hash.size == 0:
        return X
    drop = [order[i + 1] for i in same_hash if np.array_equal(X[order[i]], X[order[i + 1]])]
    return np.delete(X, drop, axis=0)


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

    ``alpha_D = 2 beta / (2 beta + d)``: squared error vs training-set size n;
    ``alpha_N = 2 beta / d``: squared approximation error vs number of parameters N;
    ``sharma_kaplan = 4 / d``: Sharma & Kaplan's model-size exponent for the loss.
    """
    d = check_float("d", d, low=0.0, low_open=True)
    beta = check_float("beta", beta, low=0.0, low_open=True)
    return {"alpha_D": 2 * beta / (2 * beta + d), "alpha_N": 2 * beta / d,
            "sharma_kaplan": 4.0 / d}


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
        theta = np.asarray(theta, float)
        return np.cos(theta @ self.freqs.T + self.phases) @ self.amps  # (n,)

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

    k is chosen from ``ks`` (default: powers of 2) by leave-one-out error on the training
    set, so the learner adapts to the data as theory's rate-optimal k ~ n^(2b/(2b+d)) does.
    """
    n = check_int("n", n, minimum=2)
    X, y, _ = task.sample(n, seed)
    Xt, yt, _ = task.sample(n_test, 10_000 + seed, noisy=False)
    ks = [k for k in (ks or [2 ** i for i in range(12)]) if k < n]
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


def _fit_regressor(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, steps: int,
                   batch: int, lr: float, seed: int, weight_decay: float = 0.01,
                   eval_every: int = 0, on_eval=None) -> None:
    """Mean-squared-error training on random mini-batches of (X, y): AdamW with cosine
    decay; ``on_eval(model)`` runs without gradients every ``eval_every`` steps and at the
    end.  The one training loop behind :func:`net_error` and :func:`approximation_error`."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = make_generator(seed)
    b = min(batch, len(X))
    for step in range(1, steps + 1):
        idx = torch.randint(len(X), (b,), generator=gen)
        loss = ((model(X[idx]) - y[idx]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if on_eval is not None and (step % eval_every == 0 or step == steps):
            with torch.no_grad():
                on_eval(model)


def net_error(task: TorusTask, n: int, kind: str = "mlp", seed: int = 0, *, size: int = 32,
              steps: int = 1500, batch: int = 128, lr: float = 3e-3, n_test: int = 2048,
              eval_every: int = 100) -> float:
    """Test MSE (vs the clean target) of a network trained on n noisy samples.

    80% of the n samples train the network (AdamW, mini-batches, cosine decay); the other
    20% pick the checkpoint (evaluated every ``eval_every`` steps) -- early stopping, so
    small training sets are not judged by how badly they overfit the noise.
    """
    n = check_int("n", n, minimum=5)
    steps = check_int("steps", steps, minimum=1)
    X, y, _ = task.sample(n, seed)
    Xt, yt, _ = task.sample(n_test, 10_000 + seed, noisy=False)
    n_val = max(1, n // 5)
    Xv, yv, Xtr, ytr = X[:n_val], y[:n_val], X[n_val:], y[n_val:]
    torch.manual_seed(derive_seed(seed))
    model = make_learner(kind, task.D, size)
    best = {"val": float("inf"), "test": float("nan")}

    def on_eval(m: nn.Module) -> None:
        val = float(((m(Xv) - yv) ** 2).mean())
        if val < best["val"]:
            best.update(val=val, test=float(((m(Xt) - yt) ** 2).mean()))

    _fit_regressor(model, Xtr, ytr, steps=steps, batch=batch, lr=lr, seed=seed,
                   weight_decay=1e-4, eval_every=eval_every, on_eval=on_eval)
    return best["test"]


def learning_curve(task: TorusTask, sizes: Sequence[int], learner: str = "knn",
                   seeds: Sequence[int] = (0,), *, progress: bool = True,
                   **kwargs) -> np.ndarray:
    """Test errors (len(sizes), len(seeds)) of ``learner`` ("knn", "mlp" or
    "transformer") trained on each size n with each seed."""
    check_choice("learner", learner, ("knn", "mlp", "transformer"))
    sizes = [check_int("n", int(n), minimum=5) for n in sizes]
    seeds = list(seeds)
    out = np.empty((len(sizes), len(seeds)))
    jobs = [(i, j) for i in range(len(sizes)) for j in range(len(seeds))]
    bar = progress_bar(jobs, desc=f"{learner}, d={task.d}", disable=not progress, leave=False)
    for i, j in bar:
        if learner == "knn":
            out[i, j] = knn_error(task, sizes[i], seeds[j], **kwargs)
        else:
            out[i, j] = net_error(task, sizes[i], learner, seeds[j], **kwargs)
    return out


def approximation_error(task: TorusTask, kind: str = "transformer",
                        sizes: Sequence[int] = (8, 16, 32), seed: int = 0, *,
                        steps: int = 2000, batch: int = 128, lr: float = 3e-3,
                        n_test: int = 4096, pool: int = 65_536,
                        progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(parameter counts, test MSEs)`` of networks of each size (width or d_model),
    trained on clean samples drawn from a pool far larger than the networks (``pool``
    points) -- effectively unlimited data, so what remains is approximation (and
    optimisation) error."""
    steps = check_int("steps", steps, minimum=1)
    pool = check_int("pool", pool, minimum=batch)
    X, y, _ = task.sample(pool, 30_000 + seed, noisy=False)
    Xt, yt, _ = task.sample(n_test, 20_000 + seed, noisy=False)
    params, errs = [], []
    for size in progress_bar(list(sizes), desc=f"{kind}, d={task.d}", disable=not progress,
                     leave=False):
        torch.manual_seed(derive_seed(seed))
        model = make_learner(kind, task.D, check_int("size", size, minimum=1))
        _fit_regressor(model, X, y, steps=steps, batch=batch, lr=lr, seed=seed)
        with torch.no_grad():
            errs.append(float(((model(Xt) - yt) ** 2).mean()))
        params.append(model.num_params())
    return np.array(params), np.array(errs)


def plot_product_tree(d: int = 8, ax=None):
    """Diagram: multiplying d numbers pairwise takes ceil(log2 d) layers."""
    import matplotlib.pyplot as plt

    d = check_int("d", d, minimum=2)
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
            nxt.append((pos, "$\\times$" if len(pair) == 2 else "$=$"))
        level = nxt
        ax.scatter([p for p, _ in level], [depth] * len(level), s=500, color="#9ecae1",
                   zorder=2)
        for p, label in level:
            ax.text(p, depth, label, ha="center", va="center", zorder=3)
    ax.set_yticks(range(depth + 1), ["inputs"] + [f"layer {i}" for i in range(1, depth + 1)])
    ax.set_xticks([])
    ax.set_title(f"product of d = {d} numbers in {depth} = ceil(log2 d) layers")
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    return ax


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
    mlp_seeds: tuple = (0, 1)
    net_sizes: tuple = (256, 512, 1024, 2048, 4096)     # sizes for the transformer
    tf_seeds: tuple = (0,)
    net_steps: int = 600                      # optimisation steps per network
    widths: tuple = (8, 16, 32, 64)           # MLP widths for model scaling
    tf_widths: tuple = (8, 16, 32)            # transformer d_model for model scaling
    width_dims: tuple = (2, 4)                # d for the model-scaling experiment
    text_sizes: tuple = (2_000, 4_000, 8_000, 16_000, 32_000, 64_000)  # characters
    text_steps: int = 1000
    text_widths: tuple = (16, 32, 64)         # d_model for ID vs model size
    text_docs: int = 450                      # held-out documents for activation ID


SETUP = Sizes(
    cpu=ScalingSetup(),
    full=ScalingSetup(id_points=20_000, torus_dims=(1, 2, 3, 4, 6),
                      sizes=tuple(2 ** k for k in range(7, 16)), knn_seeds=(0, 1, 2, 3, 4),
                      mlp_seeds=(0, 1, 2), net_sizes=tuple(2 ** k for k in range(8, 16)),
                      tf_seeds=(0, 1, 2), net_steps=4000, widths=(8, 16, 32, 64, 128, 256),
                      tf_widths=(8, 16, 32, 64, 128), width_dims=(2, 3, 4),
                      text_sizes=tuple(2_000 * 2 ** k for k in range(10)), text_steps=8000,
                      text_widths=(16, 32, 64, 128, 256), text_docs=2000),
)

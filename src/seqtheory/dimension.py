"""Intrinsic dimension of data: estimators and manifolds of known dimension.

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

The scaling experiments that use these estimates live in :mod:`seqtheory.scaling`.
"""
from __future__ import annotations

import numpy as np
import torch

from .utils import check_choice, check_float, check_int, make_rng, to_numpy

__all__ = ["knn_distances", "mle_dimension", "twonn_dimension", "sample_sphere", "sample_cube"]


def _check_points(X, name: str = "X") -> np.ndarray:
    """``X`` (an array or a tensor on any device) as a float64 (n, D) array, checked."""
    X = np.asarray(to_numpy(X), dtype=np.float64)
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
    # the largest ratio has F = 1 (log(1 - F) = -inf): it is never part of the fit
    keep = min(int(np.floor(n * (1 - discard))), n - 1)
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

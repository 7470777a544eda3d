"""Intrinsic dimension of data: estimators and manifolds of known dimension.

* :func:`knn_distances` — exact distances to the K nearest neighbours: candidates from a
  float32 Gram-matrix search (in the span of the data, each pair of chunks once), then
  the selected distances recomputed in float64 (the Gram trick alone returns spurious
  zeros on low-dimensional data).
* :func:`mle_dimension` — Levina & Bickel's maximum-likelihood estimate with K neighbours,
  combined over points by the harmonic mean (MacKay & Ghahramani's correction); with
  ``batch_size`` it averages estimates over random batches of that size, as is done for
  model activations (batches of 3,600 points); Euclidean or cosine distances.
* :func:`twonn_dimension` — Facco et al.'s TwoNN: the ratio of second to first
  neighbour distances, fitted through the origin after discarding the largest ratios.
* :func:`sample_sphere`, :func:`sample_cube` — known manifolds embedded in R^D.

The scaling experiments that use these estimates live in :mod:`seqtheory.scaling`.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.runtime import to_numpy
from ..core.seeds import make_rng
from ..core.validate import check_choice, check_float, check_int

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

    Rows are hashed by their bits with integer arithmetic (exact, so a row hashes the same
    wherever it sits; a floating-point projection may round identical rows differently);
    only if two hashes collide are the rows compared exactly (a sort of whole rows)."""
    X = np.ascontiguousarray(X)
    mult = np.random.default_rng(0).integers(1, 2**62, X.shape[1], dtype=np.uint64) * 2 + 1
    h = X.view(np.uint64) @ mult  # wraps mod 2**64
    zeros = np.flatnonzero((X == 0).any(1))  # -0.0 hashes as 0.0
    h[zeros] = (X[zeros] + 0.0).view(np.uint64) @ mult
    if np.unique(h).size == len(h):
        return X
    _, first = np.unique(X, axis=0, return_index=True)
    if len(first) == len(X):
        return X
    return X[np.sort(first)]


def _span(Xc: np.ndarray) -> np.ndarray | None:
    """Orthonormal basis (D, r) of the span of centred points of rank r < 0.8 D, else None.

    Distances do not change under a rotation, so on data of low rank (points embedded
    linearly in a larger space, activations after a normalisation) the neighbour search
    can run in r coordinates instead of D.  Directions with variance below 1e-12 of the
    largest count as absent; :func:`knn_distances` checks afterwards that what they
    carried is negligible next to the distances found."""
    n, D = Xc.shape
    if D < 16 or n < D:
        return None
    head = Xc[: 2 * D]  # rank of a few rows <= rank of all: full rank is cheap
    var = np.linalg.eigvalsh(head.T @ head)
    if (var > 1e-12 * var[-1]).sum() >= 0.8 * D:
        return None
    var, basis = np.linalg.eigh(Xc.T @ Xc)  # ascending variances
    keep = var > 1e-12 * var[-1]
    return basis[:, keep] if keep.sum() < 0.8 * D else None


def _exact_distances(Z: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Float64 distances from each point of Z to its candidates (n, e), by differences."""
    out = np.empty(cand.shape)
    for s in range(0, len(Z), 16):  # 16 points at a time: cache-sized
        diff = np.take(Z, cand[s : s + 16], axis=0)  # (16, e, D)
        diff -= Z[s : s + 16, None, :]
        out[s : s + 16] = np.sqrt(np.einsum("bkd,bkd->bk", diff, diff))
    return out


def _fold(best_val, best_idx, rows, vals, cols) -> None:
    """Fold candidates (point ``rows[i]``, neighbour ``cols[i]``, squared distance
    ``vals[i]``) into the running lists ``best_val``/``best_idx`` (n, e), in place."""
    if rows.numel() == 0:
        return
    order = torch.argsort(rows, stable=True)
    rows, vals, cols = rows[order], vals[order], cols[order]
    points, counts = torch.unique_consecutive(rows, return_counts=True)
    slot = torch.arange(rows.numel()) - torch.repeat_interleave(
        torch.cumsum(counts, 0) - counts, counts
    )  # rank within its point
    which = torch.repeat_interleave(torch.arange(points.numel()), counts)
    new_val = torch.full((points.numel(), int(counts.max())), float("inf"))
    new_idx = torch.full(new_val.shape, -1, dtype=torch.long)
    new_val[which, slot], new_idx[which, slot] = vals, cols
    _keep_best(best_val, best_idx, points, new_val, new_idx)


def _keep_best(best_val, best_idx, points, new_val, new_idx) -> None:
    """best lists of ``points`` := the e smallest of their old and new candidates."""
    val = torch.cat([best_val[points], new_val], 1)
    idx = torch.cat([best_idx[points], new_idx], 1)
    top = torch.topk(val, best_val.shape[1], dim=1, largest=False)
    best_val[points] = top.values
    best_idx[points] = torch.gather(idx, 1, top.indices)


def _candidates(Y: torch.Tensor, extra: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (n, extra) of each point's ``extra`` nearest others by float32 squared
    distances, and those squared distances (every other point's is at least the row's
    largest).  Each pair of chunks is compared once (the distance matrix is symmetric)
    and feeds both chunks' lists; a point's first block goes through ``topk``, later
    ones only contribute entries below its current ``extra``-th best distance (few,
    once a block has been seen), so selection costs far less than the products."""
    n = Y.shape[0]
    sq = (Y * Y).sum(1)  # (n,)
    best_val = torch.full((n, extra), float("inf"))  # (n, extra)
    best_idx = torch.full((n, extra), -1, dtype=torch.long)
    worst = torch.full((n,), float("inf"))  # each point's extra-th best
    starts = list(range(0, n, chunk))
    for i, a in enumerate(starts):
        for b in starts[i:]:
            d2 = torch.addmm(
                sq[None, b : b + chunk], Y[a : a + chunk], Y[b : b + chunk].T, alpha=-2.0
            ).add_(sq[a : a + chunk, None])  # (ca, cb)
            if a == b:
                d2.fill_diagonal_(float("inf"))  # not self
            for rows_side in (True, False) if a != b else (True,):
                # rows side: points a.. (rows of d2); columns side: points b.. (columns)
                p0, q0 = (a, b) if rows_side else (b, a)
                seg = slice(p0, p0 + d2.shape[0 if rows_side else 1])
                if torch.isinf(worst[seg]).any():  # first look at these points
                    dim = 1 if rows_side else 0
                    top = torch.topk(d2, min(extra, d2.shape[dim]), dim=dim, largest=False)
                    val, idx = (
                        (top.values, top.indices) if rows_side else (top.values.T, top.indices.T)
                    )
                    _keep_best(best_val, best_idx, torch.arange(seg.start, seg.stop), val, idx + q0)
                else:  # only entries below the point's current worst (row-major scans)
                    below = d2 < (worst[seg, None] if rows_side else worst[None, seg])
                    r, c = below.nonzero().unbind(1)
                    p, q = (r, c) if rows_side else (c, r)
                    _fold(best_val, best_idx, p + p0, d2[r, c], q + q0)
                worst[seg] = best_val[seg].max(1).values
    return best_idx.numpy(), best_val.numpy()  # (n, extra) x2


def _search(Z: np.ndarray, X: np.ndarray, K: int, extra: int, chunk: int) -> np.ndarray:
    """Sorted exact distances (n, K) to the K nearest other points (float64).

    ``Z`` holds the points in the coordinates searched (centred, perhaps rotated), ``X``
    as given: candidates come from float32 squared distances between rows of ``Z``
    (scaled to at most 1 first: no overflow or underflow), their distances are recomputed
    by differences of the rows of ``X`` in float64 (no rounding from centring).  A row is
    certified when every point outside its candidates is provably farther than its K-th
    neighbour: the float32 values err by at most 2 (D + 2) 2^-24 (|a|^2 + |b|^2), and every
    other point's value is at least the row's largest candidate value.  Rows that are not
    certified (near-ties, tight clusters far from the others) are searched again in
    float64 against all points (:func:`_exact_rows`)."""
    n, D = Z.shape
    scale = max(float(Z.max()), -float(Z.min())) or 1.0
    Zs = torch.empty(Z.shape, dtype=torch.float32)
    for s in range(0, n, 4096):  # scaled, cast in pieces
        Zs[s : s + 4096] = torch.from_numpy(Z[s : s + 4096] / scale)
    cand, val = _candidates(Zs, extra, chunk)
    out = np.sort(_exact_distances(X, cand), axis=1)[:, :K]
    if extra < n - 1:
        sq = np.einsum("ij,ij->i", Z, Z) / scale**2
        err = 2 * (D + 2) * 2.0**-24 * (sq + sq.max())
        kth = (out[:, K - 1] / scale) ** 2
        bad = np.flatnonzero(val.max(1).astype(np.float64) - err <= kth)
        if bad.size:
            out[bad] = _exact_rows(Z, X, bad, K)
    return out


def _exact_rows(Z: np.ndarray, X: np.ndarray, rows: np.ndarray, K: int) -> np.ndarray:
    """Sorted exact distances (len(rows), K) of the given points: float64 Gram distances
    over all points (error at most 2 (D + 2) 2^-53 (|a|^2 + |b|^2)) pick candidates,
    differences of ``X`` give the distances; a row still not certified is compared with
    every point by differences."""
    n, D = Z.shape
    sq = np.einsum("ij,ij->i", Z, Z)
    out = np.empty((len(rows), K))
    m = min(n - 1, 2 * K + 8)
    for s in range(0, len(rows), 64):
        r = rows[s : s + 64]
        d2 = sq[r, None] + sq[None, :] - 2 * (Z[r] @ Z.T)  # (b, n)
        d2[np.arange(len(r)), r] = np.inf
        cand = np.argpartition(d2, m - 1, axis=1)[:, :m]  # (b, m)
        exact = np.sort(_exact_distances_of(X, r, cand), axis=1)
        err = 2 * (D + 2) * 2.0**-53 * (sq[r] + sq.max())
        worst = np.take_along_axis(d2, cand, 1).max(1)
        for i in range(len(r)):
            if m < n - 1 and worst[i] - err[i] <= exact[i, K - 1] ** 2:
                d = np.concatenate(
                    [
                        np.sqrt(np.sum((X[j : j + 2048] - X[r[i]]) ** 2, axis=1))
                        for j in range(0, n, 2048)
                    ]
                )
                d[r[i]] = np.inf
                exact[i, :K] = np.sort(d)[:K]
        out[s : s + 64] = exact[:, :K]
    return out


def _exact_distances_of(X: np.ndarray, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Float64 distances from points ``rows`` of X to their candidates (len(rows), e)."""
    diff = np.take(X, cand, axis=0) - X[rows, None, :]
    return np.sqrt(np.einsum("bkd,bkd->bk", diff, diff))


def knn_distances(X, K: int, *, unique: bool = True, chunk: int = 2048) -> np.ndarray:
    """Sorted distances (n, K) from every point to its K nearest other points (float64).

    Exact (the distances of a brute-force search): candidates come from float32 squared
    distances (in the span of the data when its rank is low, each pair of chunks once),
    the K nearest are recomputed in float64, and rows that float32 cannot settle are
    searched exactly (see ``_search``).  With ``unique=True`` duplicate points are
    removed first (a zero distance would make the estimators infinite); the rows are then
    those of the distinct points, in order.
    """
    X = _check_points(X)
    K = check_int("K", K, minimum=1)
    chunk = check_int("chunk", chunk, minimum=1)
    if unique:
        X = _drop_duplicates(X)
    n = X.shape[0]
    if K >= n:
        raise ValueError(f"K must be < the number of (distinct) points, got K={K}, n={n}")
    extra = min(n - 1, K + 2)  # spare candidates for float32 near-ties
    Xc = X - X.mean(0)
    basis = _span(Xc)
    if basis is not None:
        Y = Xc @ basis  # (n, r): same distances ...
        out = _search(Y, X, K, extra, chunk)
        # ... up to the dropped directions: |residual_i - residual_j| <= 2 max |residual|.
        # Negligible (1e-13 of the smallest squared distance), or search again in R^D
        lost = 2 * np.sqrt(
            max(
                np.einsum("ij,ij->i", R, R).max()
                for R in (Xc[s : s + 1024] - Y[s : s + 1024] @ basis.T for s in range(0, n, 1024))
            )
        )
        if lost**2 <= 1e-13 * out[:, 0].min() ** 2:
            return out
    return _search(Xc, X, K, extra, chunk)


def _mle_from_distances(dist: np.ndarray) -> np.ndarray:
    """Pointwise Levina-Bickel estimates (K - 1) / sum_{j<K} log(T_K / T_j)."""
    K = dist.shape[1]
    logs = np.log(dist[:, -1:] / dist[:, :-1]).sum(1)
    return (K - 1) / logs


def _metric_distances(X: np.ndarray, K: int, metric: str) -> np.ndarray:
    """Sorted distances (n, K) to the K nearest other points under ``metric``:
    ``"euclidean"``, or ``"cosine"`` (1 - cosine similarity, as scikit-learn defines it:
    half the squared Euclidean distance between the unit-normalised points)."""
    if metric == "euclidean":
        return knn_distances(X, K)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("X has a zero row: the cosine distance is undefined there")
    return knn_distances(X / norms, K) ** 2 / 2


def mle_dimension(
    X,
    K: int = 20,
    *,
    batch_size: int | None = None,
    seed: int = 0,
    pointwise: bool = False,
    metric: str = "euclidean",
):
    """Maximum-likelihood intrinsic dimension (harmonic mean over points).

    ``batch_size``: split the points into random batches of this size, estimate on each,
    and return the mean (the last, smaller batch is dropped).  ``pointwise=True`` returns
    the per-point estimates instead (no batching).  ``metric``: ``"euclidean"`` or
    ``"cosine"`` (1 - cosine similarity, a squared distance: on the unit-normalised points
    it halves every estimate).
    """
    X = _check_points(X)
    K = check_int("K", K, minimum=2)
    metric = check_choice("metric", metric, ("euclidean", "cosine"))
    if pointwise:
        return _mle_from_distances(_metric_distances(X, K, metric))
    if batch_size is None:
        return float(1.0 / np.mean(1.0 / _mle_from_distances(_metric_distances(X, K, metric))))
    batch_size = check_int("batch_size", batch_size, minimum=K + 1)
    order = make_rng(seed).permutation(len(X))
    batches = [order[i : i + batch_size] for i in range(0, len(X) - batch_size + 1, batch_size)]
    if not batches:
        raise ValueError(f"batch_size={batch_size} exceeds the {len(X)} points")
    return float(np.mean([mle_dimension(X[b], K, metric=metric) for b in batches]))


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
    if embedding == "nonlinear":  # a smooth injective map: append sines of the coordinates
        Y = np.concatenate([Y, np.sin(2.0 * Y)], axis=1)[:, : max(k, min(D, 2 * k))]
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))  # random rotation of R^D
    padded = np.zeros((n, D))
    padded[:, : Y.shape[1]] = Y
    return padded @ Q.T


def sample_sphere(
    n: int, d: int, D: int | None = None, *, embedding: str = "linear", seed: int = 0
) -> np.ndarray:
    """n points uniform on the unit sphere S^d (in R^{d+1}), embedded in R^D (default
    d + 1) by a random rotation ("linear") or a smooth non-linear map then a rotation."""
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    check_choice("embedding", embedding, ("linear", "nonlinear"))
    rng = make_rng(seed)
    Y = rng.standard_normal((n, d + 1))
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    return _embed(Y, d + 1 if D is None else check_int("D", D, minimum=1), rng, embedding)


def sample_cube(
    n: int, d: int, D: int | None = None, *, embedding: str = "linear", seed: int = 0
) -> np.ndarray:
    """n points uniform in [0, 1]^d, embedded in R^D like :func:`sample_sphere`."""
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    check_choice("embedding", embedding, ("linear", "nonlinear"))
    rng = make_rng(seed)
    Y = rng.random((n, d))
    return _embed(Y, d if D is None else check_int("D", D, minimum=1), rng, embedding)

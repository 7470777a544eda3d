"""Unit tests for seqtheory.sources.dimension: intrinsic-dimension estimators and the exact k-NN
search on known manifolds."""

import numpy as np
import pytest

from seqtheory.sources.dimension import (
    knn_distances,
    mle_dimension,
    sample_cube,
    sample_sphere,
    twonn_dimension,
)


@pytest.mark.parametrize("d", [2, 4])
def test_estimators_recover_sphere_dimension(d):
    """Measured over seeds 0-4 (MLE, n = 5,000) and 0-7 (TwoNN, n = 20,000): MLE within
    1.2% of d, TwoNN within 2.2%; normalising the MLE by K instead of K - 1 moves it +5%."""
    X = sample_sphere(5000, d, D=d + 5, seed=0)
    assert abs(mle_dimension(X, 20) - d) < 0.025 * d
    X = sample_sphere(20_000, d, D=d + 5, seed=0)
    assert abs(twonn_dimension(X) - d) < 0.04 * d


def test_matches_scikit_dimension_on_the_same_points():
    # a cross-check must not skip: scikit-dimension is in requirements.txt
    import skdim

    X = sample_sphere(3000, 6, D=20, seed=1)
    assert mle_dimension(X, 20) == pytest.approx(
        skdim.id.MLE().fit(X, n_neighbors=20).dimension_, rel=1e-6
    )
    assert twonn_dimension(X) == pytest.approx(skdim.id.TwoNN().fit(X).dimension_, rel=1e-6)


def test_invariant_to_rotation_and_translation():
    X = sample_cube(2000, 3, D=10, seed=2)
    Q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((10, 10)))
    moved = X @ Q.T + 100.0
    assert mle_dimension(moved, 20) == pytest.approx(mle_dimension(X, 20), rel=1e-6)
    assert twonn_dimension(moved) == pytest.approx(twonn_dimension(X), rel=1e-6)


def test_exact_distances_and_duplicates():
    X = sample_sphere(500, 2, seed=4)
    brute = np.sort(np.linalg.norm(X[:, None] - X[None], axis=-1), axis=1)[:, 1:6]
    assert np.allclose(knn_distances(X, 5), brute, rtol=1e-12, atol=0)
    tiny = sample_sphere(2000, 1, D=3, seed=5) * 1e-3 + 1e3  # far from the origin
    assert (knn_distances(tiny, 5) > 0).all()  # no float32 zeros
    doubled = np.concatenate([X, X[:50]])
    assert knn_distances(doubled, 5).shape == (500, 5) and (knn_distances(doubled, 5) > 0).all()
    signed = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [2.0, 3.0]])  # -0.0 is 0.0
    assert knn_distances(signed, 1).shape == (3, 1)


def test_exact_distances_in_the_span_of_low_rank_data():
    """Low-rank points (a search in their span), an off-span direction too small to matter,
    a direction of the data, the small direction next to a near-repeat (where it matters:
    the exact distances then come from R^D), repeated points, small chunks: the distances
    of a brute-force search every time."""

    def brute(Z, K):
        d = np.linalg.norm(Z[:, None] - Z[None], axis=-1)
        np.fill_diagonal(d, np.inf)
        return np.sort(d, axis=1)[:, :K]

    rng = np.random.default_rng(6)
    X = sample_sphere(600, 3, D=40, seed=6) + 5.0  # rank 4 in R^40
    tiny = X.copy()
    tiny[:, 7] += 1e-9 * rng.standard_normal(600)  # below the span's cut
    bump = X.copy()
    bump[:, 7] += 1e-4 * rng.standard_normal(600)  # part of the data
    close = np.concatenate([tiny, tiny[:1] + 1e-6 * (X[1:2] - X[:1])])  # a near-repeat:
    for Z in (X, tiny, bump, close):  # its 1e-9 off-span part matters: found in R^D
        assert np.allclose(knn_distances(Z, 6), brute(Z, 6), rtol=1e-12, atol=0)
        assert np.allclose(knn_distances(Z, 6, chunk=97), brute(Z, 6), rtol=1e-12, atol=0)
    doubled = np.concatenate([X, X[:40]])
    assert np.allclose(knn_distances(doubled, 6), brute(X, 6), rtol=1e-12, atol=0)
    assert mle_dimension(X, 20) == pytest.approx(
        float(1 / np.mean(1 / ((19) / np.log(brute(X, 20)[:, -1:] / brute(X, 20)[:, :-1]).sum(1)))),
        rel=1e-12,
    )


def test_exact_distances_where_float32_cannot_rank():
    """Cases a float32 search gets wrong unless it checks itself (review of this code):
    tight clusters far from the rest (spread 1e-4 and 1e-9 at 100 and 1e3: the float64
    Gram fallback cannot settle the second either), repeated points inside such a cluster,
    coordinates that overflow (1e20) or underflow (1e-23) float32, a grid of near-ties."""

    def brute(Z, K):
        _, first = np.unique(Z, axis=0, return_index=True)
        Z = Z[np.sort(first)]
        d = np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))
        np.fill_diagonal(d, np.inf)
        return np.sort(d, axis=1)[:, :K]

    rng = np.random.default_rng(8)
    base = rng.standard_normal((200, 5))
    far = np.r_[base, 100 + 1e-4 * rng.standard_normal((12, 5))]
    farther = np.r_[base, 1e3 + 1e-9 * rng.standard_normal((12, 5))]
    repeated = np.r_[base, 1e3 + 1e-6 * rng.standard_normal((30, 5))]
    repeated[-1] = repeated[-2]
    grid = np.stack(np.meshgrid(np.arange(20.0), np.arange(20.0)), -1).reshape(-1, 2)
    grid += 1e-7 * rng.standard_normal(grid.shape)
    for Z in (far, farther, repeated, base * 1e20, base * 1e-23, grid):
        for K in (1, 4):
            got, want = knn_distances(Z, K), brute(Z, K)
            assert got.shape == want.shape
            assert np.allclose(got, want, rtol=1e-12, atol=0)


def test_batched_estimate_and_nonlinear_embedding():
    X = sample_sphere(8000, 2, D=6, embedding="nonlinear", seed=6)
    assert abs(mle_dimension(X, 20, batch_size=3600) - 2) < 0.1
    assert mle_dimension(X, 10, pointwise=True).shape == (8000,)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (
            lambda: mle_dimension(np.zeros((10, 3)) + np.arange(10)[:, None], 20),
            ValueError,
            "K must be < the number",
        ),
        (lambda: mle_dimension(np.array([[0.0, np.nan]] * 30), 5), ValueError, "NaN"),
        (lambda: mle_dimension(np.zeros(30), 5), ValueError, "shape"),
        (lambda: mle_dimension(sample_sphere(100, 2), 5, batch_size=500), ValueError, "exceeds"),
        (lambda: sample_sphere(10, 3, D=2), ValueError, "smaller than"),
        (lambda: sample_cube(10, 2, embedding="twisted"), ValueError, "embedding must be"),
    ],
)
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_cosine_mle_is_half_the_estimate_on_normalised_points():
    X = sample_sphere(2000, 3, D=10, seed=1) * np.linspace(1, 3, 2000)[:, None]
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = mle_dimension(X, 10, metric="cosine")
    assert cos == pytest.approx(mle_dimension(unit, 10) / 2, rel=1e-9)
    assert np.allclose(
        mle_dimension(X, 10, metric="cosine", pointwise=True),
        mle_dimension(unit, 10, pointwise=True) / 2,
    )
    assert mle_dimension(X, 10, metric="cosine", batch_size=500) == pytest.approx(
        mle_dimension(unit, 10, batch_size=500) / 2, rel=1e-9
    )
    with pytest.raises(ValueError, match="metric"):
        mle_dimension(X, 10, metric="manhattan")
    with pytest.raises(ValueError, match="zero row"):
        mle_dimension(np.vstack([X, np.zeros((1, 10))]), 10, metric="cosine")


def test_duplicates_dropped_exactly_wherever_they_sit():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((300, 128))
    X = base[rng.integers(0, 300, 3000)]  # every row repeated ~10 times, anywhere
    dist = knn_distances(X, 5)
    assert dist.shape[0] == len(np.unique(X, axis=0)) and (dist > 0).all()


# ------------------------------------------- tests added for mutants that survived
@pytest.mark.parametrize("n", [17, 33, 49])
def test_knn_distances_every_row_exact_when_n_is_one_more_than_a_multiple_of_16(n):
    # D5 (_exact_distances: `range(0, len(Z), 16)` -> `range(0, len(Z) - 1, 16)`):
    # the last point's row must be computed too.
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 5))
    got = knn_distances(X, 3)
    full = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(full, np.inf)
    want = np.sort(full, axis=1)[:, :3]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)


def test_mle_dimension_uses_every_full_batch():
    # D8 (mle_dimension: batches over `range(0, len(X) - batch_size, ...)`): a batch that
    # ends exactly at the last point is a full batch and must be used.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    # batch_size = n: one batch, the whole (permuted) set = the unbatched estimate
    assert mle_dimension(X, 10, batch_size=200) == pytest.approx(mle_dimension(X, 10), rel=1e-9)
    # n = 2 * batch_size: the mean over both halves of the permutation
    from seqtheory.core.seeds import make_rng

    order = make_rng(0).permutation(200)
    want = np.mean([mle_dimension(X[order[:100]], 10), mle_dimension(X[order[100:]], 10)])
    assert mle_dimension(X, 10, batch_size=100) == pytest.approx(want, rel=1e-9)

"""Unit tests for seqtheory.scaling: intrinsic-dimension estimators on known manifolds."""
import numpy as np
import pytest

from seqtheory.scaling import (
    knn_distances,
    mle_dimension,
    sample_cube,
    sample_sphere,
    twonn_dimension,
)


@pytest.mark.parametrize("d", [2, 4])
def test_mle_recovers_sphere_dimension_within_5_percent(d):
    X = sample_sphere(5000, d, D=d + 5, seed=0)
    assert abs(mle_dimension(X, 20) - d) < 0.05 * d
    assert abs(twonn_dimension(X) - d) < 0.1 * d


def test_matches_scikit_dimension_on_the_same_points():
    skdim = pytest.importorskip("skdim")
    X = sample_sphere(3000, 6, D=20, seed=1)
    assert mle_dimension(X, 20) == pytest.approx(
        skdim.id.MLE().fit(X, n_neighbors=20).dimension_, rel=1e-6)
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
    tiny = sample_sphere(2000, 1, D=3, seed=5) * 1e-3 + 1e3      # far from the origin
    assert (knn_distances(tiny, 5) > 0).all()                     # no float32 zeros
    doubled = np.concatenate([X, X[:50]])
    assert knn_distances(doubled, 5).shape == (500, 5) and (knn_distances(doubled, 5) > 0).all()


def test_batched_estimate_and_nonlinear_embedding():
    X = sample_sphere(8000, 2, D=6, embedding="nonlinear", seed=6)
    assert abs(mle_dimension(X, 20, batch_size=3600) - 2) < 0.1
    assert mle_dimension(X, 10, pointwise=True).shape == (8000,)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: mle_dimension(np.zeros((10, 3)) + np.arange(10)[:, None], 20), ValueError,
         "K must be < the number"),
        (lambda: mle_dimension(np.array([[0.0, np.nan]] * 30), 5), ValueError, "NaN"),
        (lambda: mle_dimension(np.zeros(30), 5), ValueError, "shape"),
        (lambda: mle_dimension(sample_sphere(100, 2), 5, batch_size=500), ValueError,
         "exceeds"),
        (lambda: sample_sphere(10, 3, D=2), ValueError, "smaller than"),
        (lambda: sample_cube(10, 2, embedding="twisted"), ValueError, "embedding must be"),
    ],
)
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()

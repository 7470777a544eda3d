"""Unit tests for seqtheory.similarity: CKA, affine stitching and its controls."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.kinship import KinshipModels, accuracy, train_kinship
from seqtheory.similarity import (
    affine_r2,
    cka_across_seeds,
    compare_models,
    debiased_cka,
    linear_cka,
    pca_2d,
    stitch,
    stitch_controls,
    stitch_restarts,
)
from seqtheory.sources.knowledge_graphs import FamilyForest, kinship_data


def test_cka_reference_values():
    np.random.seed(1337)
    X = np.random.randn(100, 10)
    Y = np.random.randn(100, 10) + X
    assert linear_cka(X, Y) == pytest.approx(0.55761, abs=5e-6)
    assert debiased_cka(X, Y) == pytest.approx(0.51346, abs=5e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 100.0))
def test_property_cka_invariances(seed, scale):
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((40, 6)), rng.standard_normal((40, 5))
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    for cka in (linear_cka, debiased_cka):
        base = cka(X, Y)
        assert cka(X @ Q, Y) == pytest.approx(base, rel=1e-7, abs=1e-9)  # orthogonal
        assert cka(scale * X, Y) == pytest.approx(base, rel=1e-7, abs=1e-9)  # isotropic
        assert cka(Y, X) == pytest.approx(base, rel=1e-9, abs=1e-12)  # symmetric
        assert cka(X, X) == pytest.approx(1.0)
    A = rng.standard_normal((6, 6))  # a general linear map changes CKA
    assert abs(linear_cka(X @ A, Y) - linear_cka(X, Y)) > 1e-6


def test_cka_errors():
    with pytest.raises(ValueError, match="same examples"):
        linear_cka(np.ones((5, 2)), np.ones((6, 2)))
    with pytest.raises(ValueError, match="2-D"):
        linear_cka(np.ones(5), np.ones((5, 2)))
    with pytest.raises(ValueError, match="at least 4"):
        debiased_cka(np.ones((3, 2)), np.ones((3, 2)))


def _gram_unbiased_hsic(K, L):
    """The textbook Gram-matrix form of the unbiased HSIC, for checking the fast one."""
    n = K.shape[0]
    K, L = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    return (
        np.trace(K @ L)
        + (one @ K @ one) * (one @ L @ one) / ((n - 1) * (n - 2))
        - 2 * (one @ K @ L @ one) / (n - 2)
    ) / (n * (n - 3))


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000), n=st.integers(5, 60), p=st.integers(1, 12), q=st.integers(1, 12)
)
def test_property_debiased_cka_matches_gram_form(seed, n, p, q):
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, q)) + 0.3
    K, L = X @ X.T, Y @ Y.T
    slow = _gram_unbiased_hsic(K, L) / np.sqrt(
        _gram_unbiased_hsic(K, K) * _gram_unbiased_hsic(L, L)
    )
    assert debiased_cka(X, Y) == pytest.approx(slow, rel=1e-8, abs=1e-10)


def test_pca_2d():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    coords = pca_2d(X)
    assert coords.shape == (30, 2)
    assert np.var(coords[:, 0]) >= np.var(coords[:, 1])
    assert pca_2d(X[:, :1]).shape == (30, 2)
    with pytest.raises(ValueError, match="equal widths"):
        pca_2d(X, X[:, :2])


def test_affine_r2():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    assert affine_r2(X, X @ rng.standard_normal((3, 4)) + 2.0) == pytest.approx(1.0)
    assert affine_r2(X, np.sin(3 * X) ** 2) < 0.5
    with pytest.raises(ValueError, match="constant"):
        affine_r2(X, np.ones((50, 2)))
    with pytest.raises(ValueError, match="same examples"):
        affine_r2(X, X[:10])


@pytest.fixture(scope="module")
def small():
    forest = FamilyForest.generate(n_families=2, generations=3, children=(2, 2), seed=0)
    return forest, kinship_data(forest, 0.8, seed=0)


def test_training_fits_and_stitching_controls(small):
    forest, data = small
    models, hist = train_kinship(data, (6,), (0, 1), steps=400, weight_decay=0.1, progress=False)
    assert hist.final("train acc").mean() > 0.95
    assert hist.metric("held-out acc")[1].shape == (5, 2)  # (evals, models)
    assert hist.losses().shape == (400, 2)  # one loss per model
    own = accuracy(models, data)
    # stitching a model into itself recovers its own accuracy (least-squares start)
    self_st = stitch([models.embedding(0), models.embedding(1)], models, data, steps=20)
    assert np.allclose(self_st.test_acc, own, atol=0.03)
    # an invertible linear distortion changes CKA but not the stitched accuracy
    E = models.embedding(0)
    A = torch.diag(torch.tensor([1.0, 0.05, 1.0, 0.1, 1.0, 0.5]))
    st = stitch(E @ A, models.select(0), data, steps=20)
    assert st.test_acc[0] >= own[0] - 0.03
    assert linear_cka(E @ A, E) < 0.95
    res = stitch_controls(models, data, steps=100)
    assert set(res) == {"own", "across seeds", "random"}
    assert (res["random"] < res["own"]).all()
    cka = cka_across_seeds(models)
    assert set(cka) == {6} and cka[6].shape == (1,)  # one pair of seeds
    assert cka[6][0] == pytest.approx(debiased_cka(models.embedding(0), models.embedding(1)))
    out = compare_models(models, 1, models, 0, data, steps=50)
    assert out["mapped"].shape == (forest.n, 6)
    mapped = torch.as_tensor(out["mapped"], dtype=torch.float32)[None]  # (1, n, 6)
    assert out["stitched"] == pytest.approx(  # B's decoder on A's mapped
        accuracy(models.select(0), data, embed=mapped)[0]
    )  # embedding, recomputed
    assert out["stitched train"] == pytest.approx(
        accuracy(models.select(0), data, "train", embed=mapped)[0]
    )


def test_stitch_errors(small):
    forest, data = small
    m = KinshipModels(forest.n, 3, seeds=(0, 1))
    with pytest.raises(ValueError, match="people"):
        stitch(torch.zeros(forest.n + 1, 3), m.select(0), data)
    with pytest.raises(ValueError, match="sources but"):
        stitch(torch.zeros(3, forest.n, 3), m, data)
    with pytest.raises(ValueError, match="2-D"):
        stitch([torch.zeros(forest.n)], m.select(0), data)
    with pytest.raises(ValueError, match="init must be one of"):
        stitch(torch.zeros(forest.n, 3), m.select(0), data, init="identity")
    with pytest.raises(TypeError, match="KinshipModels"):
        stitch(torch.zeros(forest.n, 3), "model", data)


def test_nonlinear_stitch_and_restarts(small):
    forest, data = small
    models, _ = train_kinship(data, (4,), (0, 1), steps=300, weight_decay=0.1, progress=False)
    E = [models.embedding(1), models.embedding(0)]
    nl = stitch(E, models, data, steps=5, kind="mlp", hidden=4, lr=1e-9)
    aff = stitch(E, models, data, steps=5, lr=1e-9)
    # the residual MLP starts at zero: before training it is the affine stitch
    assert torch.allclose(nl.mapped, aff.mapped, atol=1e-4)
    rs = stitch_restarts(E, models, data, restarts=2, steps=40, seed=3)
    again = stitch_restarts(E, models, data, restarts=2, steps=40, seed=3)
    assert np.array_equal(rs.test_acc, again.test_acc)  # deterministic
    lstsq = stitch(E, models, data, steps=40)
    assert (rs.loss <= lstsq.loss + 1e-6).all()  # best by training loss
    with pytest.raises(ValueError, match="kind must be one of"):
        stitch(E, models, data, kind="kernel")
    with pytest.raises(ValueError, match="restarts must be >= 1"):
        stitch_restarts(E, models, data, restarts=0)


def test_stitching_trains_the_map_beyond_its_least_squares_start():
    # random source embeddings: the least-squares affine match is far from what the frozen
    # decoder needs, so 100 steps of training must lower every map's loss well below the
    # start's (measured: about 5.4 nats after 1 step, 2.1 after 300); a map that is never
    # trained keeps its starting loss
    data = kinship_data(FamilyForest.generate(2, 3, (2, 3), seed=0), 0.8, seed=0)
    zoo, _ = train_kinship(data, (4,), (0,), steps=100, progress=False)
    src = [
        torch.randn(data.n_people, 4, generator=torch.Generator().manual_seed(s)) for s in range(3)
    ]
    start = stitch(src, zoo, data, steps=1)
    trained = stitch(src, zoo, data, steps=100)
    assert np.all(trained.loss < 0.75 * start.loss), (start.loss, trained.loss)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_device_is_a_clear_error(small):
    forest, data = small
    m = KinshipModels(forest.n, 2)
    with pytest.raises(ValueError, match="device"):
        stitch(m.embedding(0), m, data, device="cuda")

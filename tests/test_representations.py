"""Unit tests for seqtheory.representations: CKA and the family-tree knowledge graph."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.representations import RELATIONS, FamilyForest, debiased_cka, linear_cka


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
        assert cka(X @ Q, Y) == pytest.approx(base, rel=1e-7, abs=1e-9)     # orthogonal
        assert cka(scale * X, Y) == pytest.approx(base, rel=1e-7, abs=1e-9)  # isotropic
        assert cka(Y, X) == pytest.approx(base, rel=1e-9, abs=1e-12)         # symmetric
        assert cka(X, X) == pytest.approx(1.0)
    A = rng.standard_normal((6, 6))                 # a general linear map changes CKA
    assert abs(linear_cka(X @ A, Y) - linear_cka(X, Y)) > 1e-6


def test_cka_errors():
    with pytest.raises(ValueError, match="same examples"):
        linear_cka(np.ones((5, 2)), np.ones((6, 2)))
    with pytest.raises(ValueError, match="2-D"):
        linear_cka(np.ones(5), np.ones((5, 2)))
    with pytest.raises(ValueError, match="at least 4"):
        debiased_cka(np.ones((3, 2)), np.ones((3, 2)))


def test_family_relations_are_consistent():
    f = FamilyForest.generate(n_families=2, generations=4, seed=3)
    M = {r: f.matrix(r) for r in RELATIONS}
    P = M["parent"].astype(int)
    for sym in ("sibling", "spouse", "cousin"):
        assert (M[sym] == M[sym].T).all(), sym
    assert (M["grandparent"] == ((P @ P) > 0)).all()
    A = M["ancestor"].astype(int)
    assert (((A @ A) > 0) <= M["ancestor"]).all()               # transitive
    assert (M["child"] == M["parent"].T).all() and (M["descendant"] == M["ancestor"].T).all()
    assert not any(np.diag(M[r]).any() for r in RELATIONS)      # nobody relates to self
    assert (P.sum(0) <= 2).all()                                 # at most two parents
    assert not (M["sibling"] & M["cousin"]).any()


def test_split_is_over_facts():
    f = FamilyForest.generate(seed=0)
    train, test = f.split(0.25, seed=1)
    every = {tuple(r) for r in f.all_facts()}
    assert {tuple(r) for r in train} | {tuple(r) for r in test} == every
    assert not {tuple(r) for r in train} & {tuple(r) for r in test}
    assert len(test) == round(0.25 * len(every))
    with pytest.raises(ValueError, match="relation must be one of"):
        f.matrix("friend")
    with pytest.raises(ValueError, match="min <= max"):
        FamilyForest.generate(children=(3, 2))

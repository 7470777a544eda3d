"""Unit tests for seqtheory.representations: the family-tree knowledge graph, CKA, the
kinship models and affine stitching."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.representations import (
    KINSHIP,
    RELATIONS,
    FamilyForest,
    KinshipModels,
    accuracy,
    affine_align,
    cka_across_seeds,
    compare_models,
    debiased_cka,
    kinship_data,
    linear_cka,
    pca_2d,
    stitch,
    stitch_controls,
    train_kinship,
)


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


# --------------------------------------------------------------------------- kinship terms


@pytest.fixture(scope="module")
def small():
    forest = FamilyForest.generate(n_families=2, generations=3, children=(2, 2), seed=0)
    return forest, kinship_data(forest, 0.8, seed=0)


def test_kinship_terms_match_relations():
    f = FamilyForest.generate(n_families=2, generations=4, children=(2, 3), seed=1)
    K = f.kinship()
    for term in KINSHIP[1:10]:
        assert (K[f.matrix(term)] == KINSHIP.index(term)).all(), term
    anc = f.matrix("ancestor")
    great = anc & ~f.matrix("parent") & ~f.matrix("grandparent")
    assert (K[great] == KINSHIP.index("great_ancestor")).all()
    assert (K[great.T] == KINSHIP.index("great_descendant")).all()
    assert (np.diag(K) == 0).all()
    # inverse terms are transposes of each other
    for t, inv in [("parent", "child"), ("grandparent", "grandchild"),
                   ("uncle_aunt", "niece_nephew"), ("great_ancestor", "great_descendant")]:
        assert ((K == KINSHIP.index(t)) == (K == KINSHIP.index(inv)).T).all()


def test_shuffled_forest_is_isomorphic_but_different():
    f = FamilyForest.generate(n_families=2, generations=4, seed=0)
    g = f.shuffled(seed=1)
    assert (np.sort(f.family) == np.sort(g.family)).all() and (f.family == g.family).all()
    assert sorted(np.bincount(f.kinship().ravel())) == sorted(np.bincount(g.kinship().ravel()))
    assert (f.kinship() != g.kinship()).any()


def test_kinship_data_split_and_relabel(small):
    forest, data = small
    P = len(data.labels)
    a, b = data.pairs[:, 0].numpy(), data.pairs[:, 1].numpy()
    assert (a != b).all() and (forest.family[a] == forest.family[b]).all()
    assert len({(x, y) for x, y in zip(a, b, strict=True)}) == P
    tr, te = data.select("train")[1], data.select("test")[1]
    assert len(tr) + len(te) == P
    assert (data.select("test_facts")[1] > 0).all() and (data.select("test_none")[1] == 0).all()
    other = data.relabelled(forest.shuffled(2))
    assert torch.equal(other.pairs, data.pairs) and torch.equal(other.train, data.train)
    with pytest.raises(ValueError, match="which must be one of"):
        data.select("validation")
    with pytest.raises(ValueError, match="train_fraction"):
        kinship_data(forest, 1.0)
    with pytest.raises(TypeError, match="FamilyForest"):
        kinship_data("forest")
    with pytest.raises(ValueError, match="people"):
        data.relabelled(FamilyForest.generate(n_families=1, generations=2, seed=0))


def test_batched_models_match_single_models(small):
    forest, data = small
    both, _ = train_kinship(data, (2, 5), (0, 1), steps=30, progress=False)
    alone, _ = train_kinship(data, 5, (1,), steps=30, progress=False)
    i = both.index(5, 1)
    assert both.dims == (2, 2, 5, 5) and both.seeds == (0, 1, 0, 1)
    assert torch.allclose(both.embedding(i), alone.embedding(0), atol=1e-5)
    assert np.allclose(accuracy(both.select(i), data), accuracy(alone, data))
    assert both.embedding(0).shape == (forest.n, 2)
    assert (both.embed[0, :, 2:] == 0).all()               # padding stays zero


def test_models_errors(small):
    forest, data = small
    with pytest.raises(ValueError, match="one embedding size per seed"):
        KinshipModels(forest.n, (2, 3), seeds=(0,))
    with pytest.raises(ValueError, match="embed_dim must be >= 1"):
        KinshipModels(forest.n, 0)
    m = KinshipModels(forest.n, 3, seeds=(0, 1))
    with pytest.raises(ValueError, match="embed must have shape"):
        m(data.pairs, torch.zeros(1, forest.n, 3))
    with pytest.raises(ValueError, match="no model with"):
        m.index(4, 0)
    with pytest.raises(ValueError, match="model index"):
        m.select(5)
    with pytest.raises(TypeError, match="KinshipData"):
        train_kinship("data", 2)


def test_training_fits_and_stitching_controls(small):
    forest, data = small
    models, hist = train_kinship(data, (6,), (0, 1), steps=400, weight_decay=0.1,
                                 progress=False)
    assert hist.final("train acc") > 0.95
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
    assert set(cka_across_seeds(models)) == {6}
    out = compare_models(models, 1, models, 0, data, steps=50)
    assert out["mapped"].shape == (forest.n, 6) and 0 <= out["stitched"] <= 1


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


def test_alignment_helpers():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    A, c = rng.standard_normal((4, 3)), rng.standard_normal(3)
    assert np.allclose(affine_align(X, X @ A + c), X @ A + c)
    coords = pca_2d(X)
    assert coords.shape == (30, 2)
    assert np.var(coords[:, 0]) >= np.var(coords[:, 1])
    assert pca_2d(X[:, :1]).shape == (30, 2)
    with pytest.raises(ValueError, match="equal widths"):
        pca_2d(X, X[:, :2])


def _gram_unbiased_hsic(K, L):
    """The textbook Gram-matrix form of the unbiased HSIC, for checking the fast one."""
    n = K.shape[0]
    K, L = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    return (np.trace(K @ L) + (one @ K @ one) * (one @ L @ one) / ((n - 1) * (n - 2))
            - 2 * (one @ K @ L @ one) / (n - 2)) / (n * (n - 3))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), p=st.integers(1, 12),
       q=st.integers(1, 12))
def test_property_debiased_cka_matches_gram_form(seed, n, p, q):
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, q)) + 0.3
    K, L = X @ X.T, Y @ Y.T
    slow = _gram_unbiased_hsic(K, L) / np.sqrt(_gram_unbiased_hsic(K, K)
                                               * _gram_unbiased_hsic(L, L))
    assert debiased_cka(X, Y) == pytest.approx(slow, rel=1e-8, abs=1e-10)


# --------------------------------------------------------------------------- issue 18 additions
def _brute_automorphisms(f):
    import itertools
    count = 0
    for perm in itertools.permutations(range(f.n)):
        p = np.array(perm)
        if (f.parent[np.ix_(p, p)] == f.parent).all() and \
                (f.spouse[np.ix_(p, p)] == f.spouse).all():
            count += 1
    return count


def test_automorphism_count():
    from seqtheory.representations import automorphism_count
    f = FamilyForest.generate(n_families=2, generations=4, children=(2, 2), seed=0)
    assert automorphism_count(f) == 2**17
    for args in [(2, 2, (2, 2), 0), (1, 3, (1, 2), 5)]:         # brute force on tiny forests
        g = FamilyForest.generate(n_families=args[0], generations=args[1],
                                  children=args[2], seed=args[3])
        assert automorphism_count(g) == _brute_automorphisms(g)
    with pytest.raises(TypeError, match="FamilyForest"):
        automorphism_count("forest")


@pytest.mark.parametrize("fraction, seed", [(0.8, 0), (0.5, 1), (0.3, 2)])
def test_seen_closure_is_sound_and_complete_on_full_data(fraction, seed):
    from seqtheory.representations import KinshipData, seen_closure
    f = FamilyForest.generate(n_families=2, generations=4, children=(2, 3), seed=seed)
    data = kinship_data(f, fraction, seed=seed)
    K, truth = seen_closure(data), f.kinship()
    assert (truth[K > 0] == K[K > 0]).all()                     # sound: never a wrong term
    everything = KinshipData(data.pairs, data.labels, torch.ones_like(data.train), f.n)
    K_all = seen_closure(everything)
    a, b = data.pairs[:, 0].numpy(), data.pairs[:, 1].numpy()
    assert (K_all[a, b] == truth[a, b]).all()                   # all seen -> all implied
    with pytest.raises(TypeError, match="KinshipData"):
        seen_closure(f)


def test_seen_closure_uses_rules_not_just_inverses():
    from seqtheory.representations import KinshipData, seen_closure
    f = FamilyForest.generate(n_families=1, generations=3, children=(2, 2), seed=0)
    data = kinship_data(f, 0.5, seed=0)
    P = f.parent
    par, kid = np.argwhere(P)[0]
    assert P[par].sum() == 2                                    # kid has a sibling
    a, b = data.pairs[:, 0].numpy(), data.pairs[:, 1].numpy()
    # hide the link par -> kid both ways; show par -> sib and sib ~ kid
    train = np.ones(len(a), dtype=bool)
    train[((a == par) & (b == kid)) | ((a == kid) & (b == par))] = False
    d = KinshipData(data.pairs, data.labels, torch.from_numpy(train), f.n)
    assert seen_closure(d)[par, kid] == KINSHIP.index("parent")


def test_bilinear_decoder_trains_and_stitches(small):
    forest, data = small
    models, hist = train_kinship(data, (4, 6), (0, 1), steps=300, weight_decay=0.1,
                                 decoder="bilinear", progress=False)
    assert models.decoder == "bilinear" and hist.final("train acc") > 0.9
    one, _ = train_kinship(data, 6, (1,), steps=300, weight_decay=0.1, decoder="bilinear",
                           progress=False)
    assert torch.allclose(models.embedding(models.index(6, 1)), one.embedding(0), atol=1e-4)
    sub = models.select([3, 2])
    assert sub.decoder == "bilinear" and sub.rel.shape[-1] == 6
    assert np.allclose(accuracy(sub, data), accuracy(models, data)[[3, 2]])
    mlp, _ = train_kinship(data, 6, (0,), steps=300, weight_decay=0.1, progress=False)
    res = stitch(mlp.embedding(0), models.select(2), data, steps=50)
    assert res.mapped.shape == (1, forest.n, 6) and 0 <= res.test_acc[0] <= 1
    with pytest.raises(ValueError, match="decoder must be one of"):
        KinshipModels(forest.n, 3, decoder="transformer")


def test_nonlinear_stitch_and_restarts(small):
    from seqtheory.representations import stitch_restarts
    forest, data = small
    models, _ = train_kinship(data, (4,), (0, 1), steps=300, weight_decay=0.1,
                              progress=False)
    E = [models.embedding(1), models.embedding(0)]
    nl = stitch(E, models, data, steps=5, kind="mlp", hidden=4, lr=1e-9)
    aff = stitch(E, models, data, steps=5, lr=1e-9)
    # the residual MLP starts at zero: before training it is the affine stitch
    assert torch.allclose(nl.mapped, aff.mapped, atol=1e-4)
    rs = stitch_restarts(E, models, data, restarts=2, steps=40, seed=3)
    again = stitch_restarts(E, models, data, restarts=2, steps=40, seed=3)
    assert np.array_equal(rs.test_acc, again.test_acc)          # deterministic
    lstsq = stitch(E, models, data, steps=40)
    assert (rs.loss <= lstsq.loss + 1e-6).all()                 # best by training loss
    with pytest.raises(ValueError, match="kind must be one of"):
        stitch(E, models, data, kind="kernel")
    with pytest.raises(ValueError, match="restarts must be >= 1"):
        stitch_restarts(E, models, data, restarts=0)


def test_affine_r2():
    from seqtheory.representations import affine_r2
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    assert affine_r2(X, X @ rng.standard_normal((3, 4)) + 2.0) == pytest.approx(1.0)
    assert affine_r2(X, np.sin(3 * X) ** 2) < 0.5
    with pytest.raises(ValueError, match="constant"):
        affine_r2(X, np.ones((50, 2)))

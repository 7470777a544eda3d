"""Unit tests for the universality chapter's modules: seqtheory.knowledge_graphs (the
family-tree knowledge graph and the kinship models), seqtheory.similarity (CKA and affine
stitching) and seqtheory.representations (the experiment: setup, run, result)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from seqtheory.knowledge_graphs import (  # noqa: E402
    KINSHIP,
    RELATIONS,
    FamilyForest,
    KinshipData,
    KinshipModels,
    accuracy,
    automorphism_count,
    kinship_data,
    per_model_loss,
    plot_embedding,
    plot_forest,
    seen_closure,
    train_kinship,
)
from seqtheory.representations import (  # noqa: E402
    SETUP,
    RepresentationResult,
    RepresentationSetup,
    affine_fits,
    kinship_task,
    plot_stitching,
    plot_zone,
    run,
)
from seqtheory.similarity import (  # noqa: E402
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
    assert hist.final("train acc").mean() > 0.95
    assert hist.metric("held-out acc")[1].shape == (5, 2)         # (evals, models)
    assert hist.losses().shape == (400, 2)                          # one loss per model
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
    assert set(cka) == {6} and cka[6].shape == (1,)                 # one pair of seeds
    assert cka[6][0] == pytest.approx(debiased_cka(models.embedding(0), models.embedding(1)))
    out = compare_models(models, 1, models, 0, data, steps=50)
    assert out["mapped"].shape == (forest.n, 6)
    mapped = torch.as_tensor(out["mapped"], dtype=torch.float32)[None]       # (1, n, 6)
    assert out["stitched"] == pytest.approx(                   # B's decoder on A's mapped
        accuracy(models.select(0), data, embed=mapped)[0])     # embedding, recomputed
    assert out["stitched train"] == pytest.approx(
        accuracy(models.select(0), data, "train", embed=mapped)[0])


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


def test_pca_2d():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
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
    assert models.decoder == "bilinear" and hist.final("train acc").mean() > 0.9
    one, _ = train_kinship(data, 6, (1,), steps=300, weight_decay=0.1, decoder="bilinear",
                           progress=False)
    assert torch.allclose(models.embedding(models.index(6, 1)), one.embedding(0), atol=1e-4)
    sub = models.select([3, 2])
    assert sub.decoder == "bilinear" and sub.rel.shape[-1] == 6
    assert np.allclose(accuracy(sub, data), accuracy(models, data)[[3, 2]])
    mlp, _ = train_kinship(data, 6, (0,), steps=300, weight_decay=0.1, progress=False)
    res = stitch(mlp.embedding(0), models.select(2), data, steps=50)
    assert res.mapped.shape == (1, forest.n, 6)
    assert res.test_acc[0] == pytest.approx(
        accuracy(models.select(2), data, embed=res.mapped)[0])
    with pytest.raises(ValueError, match="decoder must be one of"):
        KinshipModels(forest.n, 3, decoder="transformer")


def test_nonlinear_stitch_and_restarts(small):
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
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    assert affine_r2(X, X @ rng.standard_normal((3, 4)) + 2.0) == pytest.approx(1.0)
    assert affine_r2(X, np.sin(3 * X) ** 2) < 0.5
    with pytest.raises(ValueError, match="constant"):
        affine_r2(X, np.ones((50, 2)))
    with pytest.raises(ValueError, match="same examples"):
        affine_r2(X, X[:10])


def test_affine_fits_sees_an_affine_image(small):
    forest, data = small
    models = KinshipModels(forest.n, 3, seeds=(0, 1))
    with torch.no_grad():   # seed 1's embedding an affine image of seed 0's
        models.embed[1] = models.embed[0] @ torch.randn(3, 3) + 1.0
    fits = affine_fits(models, (3,), (0, 1), torch.Generator().manual_seed(123))
    assert fits["across seeds"] == pytest.approx(np.ones((1, 2)))
    assert fits["random"].shape == (1, 2) and (fits["random"] < 0.99).all()
    with pytest.raises(TypeError, match="models"):
        affine_fits("not models", (3,), (0, 1), torch.Generator())
    with pytest.raises(ValueError, match="seeds"):
        affine_fits(models, (3,), (0,), torch.Generator())


# --------------------------------------------------------------------------- issue 19: shape
TINY = RepresentationSetup(generations=3, dims=(2, 4), seeds=(0, 1), steps=40,
                           stitch_steps=10, bilinear_dims=(3,))


@pytest.fixture(scope="module")
def tiny_result():
    return run(TINY, seed=0, device="cpu", progress=False)


def test_per_model_loss_is_each_models_mean():
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(3, 7, 5, generator=g), torch.randint(0, 5, (7,), generator=g)
    losses = per_model_loss(logits, labels)
    assert losses.shape == (3,)
    for m in range(3):
        assert losses[m] == pytest.approx(float(F.cross_entropy(logits[m], labels)))


def test_run_is_deterministic_and_returns_the_result(tiny_result):
    again = run(TINY, seed=0, device="cpu", progress=False)
    r = tiny_result
    assert isinstance(r, RepresentationResult) and r.setup is TINY and r.seed == 0
    assert r.device == "cpu" and r.seconds > 0
    for wd in TINY.weight_decays:
        assert torch.equal(r.zoo[wd].embed, again.zoo[wd].embed)
        assert torch.equal(r.other_zoo[wd].embed, again.other_zoo[wd].embed)
        assert np.array_equal(r.held_out[wd], again.held_out[wd])
        assert r.held_out[wd].shape == r.train_acc[wd].shape == (2, 2)
        for name in ("own", "across seeds", "random", "other graph"):
            assert np.array_equal(r.stitched[wd][name], again.stitched[wd][name]), name
        assert np.array_equal(r.cka[wd], again.cka[wd]) and r.cka[wd].shape == (2, 1)
        assert np.array_equal(r.cka_random[wd], again.cka_random[wd])
        for name in ("across seeds", "random"):
            fit = r.affine_fit[wd][name]
            assert np.array_equal(fit, again.affine_fit[wd][name]) and fit.shape == (2, 2)
            assert ((fit > -1e-9) & (fit <= 1 + 1e-9)).all()
        assert r.zoo[wd].embed.device.type == "cpu"
    assert torch.equal(r.bilinear.embed, again.bilinear.embed)
    assert r.bilinear.decoder == "bilinear" and r.bilinear.dims == (3, 3)
    assert set(r.starved) == {0.5, TINY.train_fraction}
    assert np.array_equal(r.starved[0.5], again.starved[0.5])
    assert r.histories["zoo, wd 0.0"].losses().shape == (TINY.steps, 4)
    # the models are the ones train_kinship makes from the same seeds
    alone, _ = train_kinship(r.data, 4, (1,), hidden=TINY.hidden, steps=TINY.steps,
                             progress=False)
    Z = r.zoo[0.0]
    assert torch.allclose(Z.embedding(Z.index(4, 1)), alone.embedding(0), atol=1e-5)


def test_run_seed_draws_everything(tiny_result):
    task = kinship_task(TINY, seed=0)
    assert torch.equal(task.data.train, tiny_result.data.train)
    assert (task.forest.parent == tiny_result.forest.parent).all()
    assert torch.equal(kinship_task(TINY).data.train, task.data.train)  # None: base seed 0
    other = run(TINY, seed=5, device="cpu", progress=False)
    assert not torch.equal(other.zoo[0.0].embed, tiny_result.zoo[0.0].embed)
    assert not torch.equal(other.data.train, tiny_result.data.train)


def test_run_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    KinshipModels(10, (2, 3), seeds=(0, 1))
    KinshipModels(10, 3, seeds=(0,), decoder="bilinear", base=4)
    kinship_task(TINY, seed=1)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_device_is_a_clear_error(small):
    forest, data = small
    with pytest.raises(ValueError, match="device"):
        run(TINY, seed=0, device="cuda", progress=False)
    with pytest.raises(ValueError, match="device"):
        KinshipModels(forest.n, 2, device="cuda")
    with pytest.raises(ValueError, match="device"):
        train_kinship(data, 2, device="cuda", progress=False)
    m = KinshipModels(forest.n, 2)
    with pytest.raises(ValueError, match="device"):
        stitch(m.embedding(0), m, data, device="cuda")
    with pytest.raises(ValueError, match="device"):
        data.to("cuda")


def test_explicit_cpu_device_gives_the_same_bits(small):
    forest, data = small
    a, _ = train_kinship(data, 3, (0,), steps=20, progress=False)
    b, _ = train_kinship(data, 3, (0,), steps=20, device="cpu", progress=False)
    assert torch.equal(a.embed, b.embed)
    assert data.to("cpu") is data and data.device.type == "cpu"


def test_setup_validation():
    assert SETUP.pick("cpu") == RepresentationSetup()
    assert len(SETUP.pick("full").seeds) > len(SETUP.pick("cpu").seeds)
    with pytest.raises(ValueError, match="children"):
        RepresentationSetup(children=(3, 2))
    with pytest.raises(ValueError, match="train_fraction"):
        RepresentationSetup(train_fraction=1.0)
    with pytest.raises(ValueError, match="fractions"):
        RepresentationSetup(fractions=(0.0,))
    with pytest.raises(ValueError, match="dims"):
        RepresentationSetup(dims=())
    with pytest.raises(ValueError, match="seeds must not repeat"):
        RepresentationSetup(seeds=(0, 0))
    with pytest.raises(TypeError, match="dims must be a tuple"):
        RepresentationSetup(dims=[2, 4])
    with pytest.raises(ValueError, match="lr"):
        RepresentationSetup(lr=0.0)
    with pytest.raises(ValueError, match="steps"):
        RepresentationSetup(steps=0)
    with pytest.raises(TypeError, match="RepresentationSetup"):
        run({"dims": (2,)}, seed=0, device="cpu")
    with pytest.raises(ValueError, match="seed"):
        run(TINY, seed=-1, device="cpu")


def test_plots_take_the_result(tiny_result):
    a, b = plot_zone(tiny_result)
    assert a.get_xlabel() == "embedding size d" and len(a.get_lines()) >= 2
    axes = plot_stitching(tiny_result)
    assert len(axes) == len(TINY.weight_decays) + 1
    ax = plot_forest(tiny_result.forest)
    assert len(ax.collections) > 0
    coords = pca_2d(tiny_result.zoo[0.1].embedding(0))
    plot_embedding(coords, tiny_result.forest, title="B")
    with pytest.raises(ValueError, match="coords"):
        plot_embedding(coords[:3], tiny_result.forest)
    with pytest.raises(TypeError, match="RepresentationResult"):
        plot_zone("result")
    plt.close("all")


def test_stitching_trains_the_map_beyond_its_least_squares_start():
    # random source embeddings: the least-squares affine match is far from what the frozen
    # decoder needs, so 100 steps of training must lower every map's loss well below the
    # start's (measured: about 5.4 nats after 1 step, 2.1 after 300); a map that is never
    # trained keeps its starting loss
    data = kinship_data(FamilyForest.generate(2, 3, (2, 3), seed=0), 0.8, seed=0)
    zoo, _ = train_kinship(data, (4,), (0,), steps=100, progress=False)
    src = [torch.randn(data.n_people, 4, generator=torch.Generator().manual_seed(s))
           for s in range(3)]
    start = stitch(src, zoo, data, steps=1)
    trained = stitch(src, zoo, data, steps=100)
    assert np.all(trained.loss < 0.75 * start.loss), (start.loss, trained.loss)

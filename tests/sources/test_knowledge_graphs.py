"""Unit tests for seqtheory.sources.knowledge_graphs (the family-tree knowledge graph and its
kinship data) and for the kinship models of seqtheory.kinship."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqtheory.kinship import KinshipModels, accuracy, per_model_loss, train_kinship
from seqtheory.similarity import stitch
from seqtheory.sources.knowledge_graphs import (
    KINSHIP,
    RELATIONS,
    FamilyForest,
    KinshipData,
    automorphism_count,
    kinship_data,
    seen_closure,
)


def test_family_relations_are_consistent():
    f = FamilyForest.generate(n_families=2, generations=4, seed=3)
    M = {r: f.matrix(r) for r in RELATIONS}
    P = M["parent"].astype(int)
    for sym in ("sibling", "spouse", "cousin"):
        assert (M[sym] == M[sym].T).all(), sym
    assert (M["grandparent"] == ((P @ P) > 0)).all()
    A = M["ancestor"].astype(int)
    assert (((A @ A) > 0) <= M["ancestor"]).all()  # transitive
    assert (M["child"] == M["parent"].T).all() and (M["descendant"] == M["ancestor"].T).all()
    assert not any(np.diag(M[r]).any() for r in RELATIONS)  # nobody relates to self
    assert (P.sum(0) <= 2).all()  # at most two parents
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
    for t, inv in [
        ("parent", "child"),
        ("grandparent", "grandchild"),
        ("uncle_aunt", "niece_nephew"),
        ("great_ancestor", "great_descendant"),
    ]:
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
    assert (both.embed[0, :, 2:] == 0).all()  # padding stays zero


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


def test_per_model_loss_is_each_models_mean():
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(3, 7, 5, generator=g), torch.randint(0, 5, (7,), generator=g)
    losses = per_model_loss(logits, labels)
    assert losses.shape == (3,)
    for m in range(3):
        assert losses[m] == pytest.approx(float(F.cross_entropy(logits[m], labels)))


def _brute_automorphisms(f):
    import itertools

    count = 0
    for perm in itertools.permutations(range(f.n)):
        p = np.array(perm)
        if (f.parent[np.ix_(p, p)] == f.parent).all() and (
            f.spouse[np.ix_(p, p)] == f.spouse
        ).all():
            count += 1
    return count


def test_automorphism_count():
    f = FamilyForest.generate(n_families=2, generations=4, children=(2, 2), seed=0)
    assert automorphism_count(f) == 2**17
    for args in [(2, 2, (2, 2), 0), (1, 3, (1, 2), 5)]:  # brute force on tiny forests
        g = FamilyForest.generate(
            n_families=args[0], generations=args[1], children=args[2], seed=args[3]
        )
        assert automorphism_count(g) == _brute_automorphisms(g)
    with pytest.raises(TypeError, match="FamilyForest"):
        automorphism_count("forest")


@pytest.mark.parametrize("fraction, seed", [(0.8, 0), (0.5, 1), (0.3, 2)])
def test_seen_closure_is_sound_and_complete_on_full_data(fraction, seed):
    f = FamilyForest.generate(n_families=2, generations=4, children=(2, 3), seed=seed)
    data = kinship_data(f, fraction, seed=seed)
    K, truth = seen_closure(data), f.kinship()
    assert (truth[K > 0] == K[K > 0]).all()  # sound: never a wrong term
    everything = KinshipData(data.pairs, data.labels, torch.ones_like(data.train), f.n)
    K_all = seen_closure(everything)
    a, b = data.pairs[:, 0].numpy(), data.pairs[:, 1].numpy()
    assert (K_all[a, b] == truth[a, b]).all()  # all seen -> all implied
    with pytest.raises(TypeError, match="KinshipData"):
        seen_closure(f)


def test_seen_closure_uses_rules_not_just_inverses():
    f = FamilyForest.generate(n_families=1, generations=3, children=(2, 2), seed=0)
    data = kinship_data(f, 0.5, seed=0)
    P = f.parent
    par, kid = np.argwhere(P)[0]
    assert P[par].sum() == 2  # kid has a sibling
    a, b = data.pairs[:, 0].numpy(), data.pairs[:, 1].numpy()
    # hide the link par -> kid both ways; show par -> sib and sib ~ kid
    train = np.ones(len(a), dtype=bool)
    train[((a == par) & (b == kid)) | ((a == kid) & (b == par))] = False
    d = KinshipData(data.pairs, data.labels, torch.from_numpy(train), f.n)
    assert seen_closure(d)[par, kid] == KINSHIP.index("parent")


def test_bilinear_decoder_trains_and_stitches(small):
    forest, data = small
    models, hist = train_kinship(
        data, (4, 6), (0, 1), steps=300, weight_decay=0.1, decoder="bilinear", progress=False
    )
    assert models.decoder == "bilinear" and hist.final("train acc").mean() > 0.9
    one, _ = train_kinship(
        data, 6, (1,), steps=300, weight_decay=0.1, decoder="bilinear", progress=False
    )
    assert torch.allclose(models.embedding(models.index(6, 1)), one.embedding(0), atol=1e-4)
    sub = models.select([3, 2])
    assert sub.decoder == "bilinear" and sub.rel.shape[-1] == 6
    assert np.allclose(accuracy(sub, data), accuracy(models, data)[[3, 2]])
    mlp, _ = train_kinship(data, 6, (0,), steps=300, weight_decay=0.1, progress=False)
    res = stitch(mlp.embedding(0), models.select(2), data, steps=50)
    assert res.mapped.shape == (1, forest.n, 6)
    assert res.test_acc[0] == pytest.approx(accuracy(models.select(2), data, embed=res.mapped)[0])
    with pytest.raises(ValueError, match="decoder must be one of"):
        KinshipModels(forest.n, 3, decoder="transformer")


def test_explicit_cpu_device_gives_the_same_bits(small):
    forest, data = small
    a, _ = train_kinship(data, 3, (0,), steps=20, progress=False)
    b, _ = train_kinship(data, 3, (0,), steps=20, device="cpu", progress=False)
    assert torch.equal(a.embed, b.embed)
    assert data.to("cpu") is data and data.device.type == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_device_is_a_clear_error(small):
    forest, data = small
    with pytest.raises(ValueError, match="device"):
        KinshipModels(forest.n, 2, device="cuda")
    with pytest.raises(ValueError, match="device"):
        train_kinship(data, 2, device="cuda", progress=False)
    with pytest.raises(ValueError, match="device"):
        data.to("cuda")

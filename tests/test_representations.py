"""Unit tests for seqtheory.representations: the universality chapter's experiment (setup,
run, result, figures)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from seqtheory.kinship import KinshipModels, plot_embedding, plot_forest, train_kinship
from seqtheory.representations import (  # noqa: E402
    SETUP,
    STREAMS,
    RepresentationResult,
    RepresentationSetup,
    affine_fits,
    kinship_task,
    plot_stitching,
    plot_zone,
    run,
)
from seqtheory.similarity import pca_2d  # noqa: E402
from seqtheory.sources.knowledge_graphs import FamilyForest, kinship_data


@pytest.fixture(scope="module")
def small():
    forest = FamilyForest.generate(n_families=2, generations=3, children=(2, 2), seed=0)
    return forest, kinship_data(forest, 0.8, seed=0)


def test_affine_fits_sees_an_affine_image(small):
    forest, data = small
    models = KinshipModels(forest.n, 3, seeds=(0, 1))
    with torch.no_grad():  # seed 1's embedding an affine image of seed 0's
        models.embed[1] = models.embed[0] @ torch.randn(3, 3) + 1.0
    fits = affine_fits(models, (3,), (0, 1), torch.Generator().manual_seed(123))
    assert fits["across seeds"] == pytest.approx(np.ones((1, 2)))
    assert fits["random"].shape == (1, 2) and (fits["random"] < 0.99).all()
    with pytest.raises(TypeError, match="models"):
        affine_fits("not models", (3,), (0, 1), torch.Generator())
    with pytest.raises(ValueError, match="seeds"):
        affine_fits(models, (3,), (0,), torch.Generator())


TINY = RepresentationSetup(
    generations=3, dims=(2, 4), seeds=(0, 1), steps=40, stitch_steps=10, bilinear_dims=(3,)
)


@pytest.fixture(scope="module")
def tiny_result():
    return run(TINY, seed=0, device="cpu", progress=False)


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
    alone, _ = train_kinship(r.data, 4, (1,), hidden=TINY.hidden, steps=TINY.steps, progress=False)
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
def test_unavailable_device_is_a_clear_error():
    with pytest.raises(ValueError, match="device"):
        run(TINY, seed=0, device="cuda", progress=False)


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


def test_streams_name_the_logical_seeds_of_a_run():
    assert run.streams is STREAMS
    assert [
        STREAMS.seed(name)
        for name in (
            "forest",
            "split",
            "relabel",
            "weights",
            "other_graph",
            "stitch_random",
            "cka_random",
            "affine_random",
        )
    ] == [0, 0, 1, 0, 100, 0, 7, 9]
    assert STREAMS.seed("forest", TINY.forest_seed) == TINY.forest_seed

"""Unit tests for seqtheory.scaling: power laws, the torus task, the learners and the
chapter's experiments (the dimension estimators are in tests/sources/test_dimension.py)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.core.experiment import Experiment, RunInfo
from seqtheory.scaling import (
    SETUP,
    STREAMS,
    BetaSweepResult,
    DataSweepResult,
    ModelSweepResult,
    PointMLP,
    PointTransformer,
    ScalingSetup,
    TorusTask,
    approximation_error,
    fit_power_law,
    fit_regressors,
    knn_error,
    learner_params,
    learning_curve,
    learning_curves,
    load_text_sweep,
    net_error,
    plot_learning_curves,
    plot_model_sweep,
    plot_product_tree,
    predicted_exponents,
    run_beta_sweep,
    run_data_sweep,
    run_model_sweep,
    torus_tasks,
)
from seqtheory.sources.dimension import mle_dimension

# ------------------------------------------------------------------ power laws and tasks


@settings(max_examples=25, deadline=None)
@given(alpha=st.floats(0.05, 3.0), coef=st.floats(0.01, 100.0))
def test_power_law_fit_recovers_exact_exponent(alpha, coef):
    n = np.array([100, 200, 400, 800, 1600])
    fit = fit_power_law(n, coef * n**-alpha)
    assert fit.exponent == pytest.approx(alpha, abs=1e-9)
    assert fit.coef == pytest.approx(coef, rel=1e-6)
    assert fit(n) == pytest.approx(coef * n**-alpha, rel=1e-6)


def test_power_law_fit_uncertainty_from_seeds():
    rng = np.random.default_rng(0)
    n = np.array([128, 256, 512, 1024, 2048])
    noisy = (n**-0.5)[:, None] * np.exp(0.1 * rng.standard_normal((5, 8)))
    fit = fit_power_law(n, noisy)
    assert abs(fit.exponent - 0.5) < 3 * fit.stderr + 0.02
    assert 0 < fit.stderr < 0.1
    assert "+/-" in str(fit)


@pytest.mark.parametrize(
    "x, y, msg",
    [
        ([1.0], [1.0], "at least 2"),
        ([1, 2, 3], [1, 2], "shape"),
        ([1, 2, 3], [1, 0, 2], "positive"),
        ([1, 2, np.nan], [1, 2, 3], "finite"),
    ],
)
def test_power_law_fit_rejects_bad_input(x, y, msg):
    with pytest.raises(ValueError, match=msg):
        fit_power_law(x, y)


def test_predicted_exponents():
    p = predicted_exponents(2, 1.0)
    assert p == {"alpha_data": 0.5, "alpha_model": 1.0, "sharma_kaplan": 2.0}
    assert predicted_exponents(4, 2.0)["alpha_data"] == pytest.approx(0.5)
    # the model-size band [1/d, 2/d] of beta in [0.5, 1]
    assert predicted_exponents(4, 0.5)["alpha_model"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="d"):
        predicted_exponents(0)
    with pytest.raises(ValueError, match="beta"):
        predicted_exponents(2, -1.0)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_torus_task_geometry_and_target(d):
    task = TorusTask(d=d, D=16, max_freq=8)
    X, y, theta = task.sample(3000, seed=1, noisy=False)
    assert X.shape == (3000, 16) and y.shape == (3000,)
    # isometric embedding: every point at the same distance from the origin
    assert np.allclose(np.linalg.norm(X.numpy(), axis=1), 1.0, atol=1e-5)
    assert abs(mle_dimension(X.numpy(), 20) - d) < 0.1 * d
    assert abs(float(y.var()) - 1.0) < 0.25  # unit-variance target
    # the target is periodic in every angle
    assert np.allclose(task.target(theta + 2 * np.pi), y.numpy(), atol=1e-4)
    _, y_noisy, _ = task.sample(3000, seed=1)
    assert float((y_noisy - y).std()) == pytest.approx(task.noise, rel=0.1)
    same = task.sample(10, seed=5)[0]
    assert torch.equal(same, task.sample(10, seed=5)[0])


def test_torus_task_rejects_bad_settings():
    with pytest.raises(ValueError, match="2d"):
        TorusTask(d=4, D=6)
    with pytest.raises(ValueError):
        TorusTask(beta=0)
    with pytest.raises(TypeError):
        TorusTask(d=2.5)


def test_knn_learning_curve_falls_faster_in_low_dimension():
    sizes = [128, 512, 2048]
    slope = {}
    for d in (1, 4):
        task = TorusTask(d=d, D=16, max_freq=8)
        err = learning_curve(task, sizes, "knn", seeds=(0, 1), progress=False)
        assert (np.diff(err.mean(1)) < 0).all()
        slope[d] = fit_power_law(sizes, err).exponent
    assert slope[1] > slope[4] > 0


def test_knn_error_is_deterministic_and_beats_the_mean():
    task = TorusTask(d=2, D=16, max_freq=8)
    e = knn_error(task, 1000, seed=3)
    assert e == knn_error(task, 1000, seed=3)
    assert e < 0.5  # the target has variance 1: predicting 0 scores ~1


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_networks_learn_and_are_deterministic(kind):
    task = TorusTask(d=1, D=16, max_freq=4)
    e = net_error(task, 512, kind, seed=0, size=16, steps=200, eval_every=50)
    assert e < 0.5
    assert e == net_error(task, 512, kind, seed=0, size=16, steps=200, eval_every=50)


def test_point_models_shapes_and_errors():
    x = torch.randn(5, 16)
    assert PointMLP(16, 8).forward(x).shape == (5,)
    tf = PointTransformer(16, n_tokens=4, d_model=8, n_heads=2)
    assert tf(x).shape == (5,)
    with pytest.raises(ValueError, match="divisible"):
        PointTransformer(15, n_tokens=4)


def test_approximation_error_improves_with_width():
    task = TorusTask(d=1, D=16, max_freq=4)
    params, errs = approximation_error(task, "mlp", (4, 32), steps=300, progress=False)
    assert errs.shape == (2, 1)
    assert params[1] > params[0] and errs[1, 0] < errs[0, 0]
    # several tasks and seeds in one batched program: (tasks, sizes, seeds)
    tasks = [task, TorusTask(d=2, D=16, max_freq=4)]
    _, errs = approximation_error(
        tasks, "mlp", (4, 32), (0, 1), steps=300, pool=1024, progress=False
    )
    assert errs.shape == (2, 2, 2) and (errs[:, 1] < errs[:, 0]).all()
    with pytest.raises(ValueError, match="ambient"):
        approximation_error([task, TorusTask(d=1, D=8)], "mlp", (4,), progress=False)


def test_learning_curves_batch_members_with_their_own_data():
    tasks = [TorusTask(d=1, D=16, max_freq=4), TorusTask(d=2, D=16, max_freq=4)]
    err = learning_curves(
        tasks, [64, 512], "mlp", (0, 1), size=16, steps=150, eval_every=50, progress=False
    )
    assert err.shape == (2, 2, 2) and np.isfinite(err).all()
    # each member trains on its own samples: more data, lower error (mean over seeds)
    assert (err[:, 1].mean(-1) < err[:, 0].mean(-1)).all()
    assert np.array_equal(
        err,
        learning_curves(
            tasks, [64, 512], "mlp", (0, 1), size=16, steps=150, eval_every=50, progress=False
        ),
    )
    # k-NN through the sweep is exactly knn_error
    knn = learning_curves(tasks, [300], "knn", (4,), progress=False)
    assert knn[1, 0, 0] == knn_error(tasks[1], 300, seed=4)
    # a member's run does not depend on the other members (up to batched rounding)
    a, b = tasks[0].sample(200, 1)[:2], tasks[1].sample(300, 2)[:2]
    test = tasks[0].sample(500, 3, noisy=False)[:2]
    both = fit_regressors("mlp", 16, 8, [a, b], [test, test], init_seeds=[5, 6], steps=50)
    alone = fit_regressors("mlp", 16, 8, [a], [test], init_seeds=[5], steps=50)
    assert both[0] == pytest.approx(alone[0], rel=1e-3)
    with pytest.raises(TypeError, match="TorusTask"):
        learning_curves([], [64], "mlp")
    with pytest.raises(ValueError, match="one entry per member"):
        fit_regressors("mlp", 16, 8, [tasks[0].sample(10)[:2]], [], init_seeds=[0], steps=1)


def test_archived_text_sweep_loads_as_arrays():
    sweep = load_text_sweep()
    S, N = len(sweep["seeds"]), len(sweep["sizes"])
    assert S >= 3 and sweep["test_loss"].shape == sweep["best_step"].shape == (S, N)
    assert sweep["layer_id"].shape == (S, 3)
    assert sweep["position_id"].shape == (S, len(sweep["positions"]))
    assert sweep["width_id"].shape == (S, len(sweep["widths"]))
    assert {"script", "date", "device"} <= set(sweep["meta"])


def test_product_tree_depth_and_setup_sizes():
    import matplotlib.pyplot as plt

    ax = plot_product_tree(8)
    assert "3 = ceil(log2 d)" in ax.get_title()
    plt.close("all")
    cpu, full = SETUP.pick("cpu"), SETUP.pick("full")
    assert max(full.sizes) > max(cpu.sizes) and full.net_steps > cpu.net_steps


def test_product_tree_sum_and_bad_op():
    import matplotlib.pyplot as plt

    ax = plot_product_tree(5, op="sum")
    assert ax.get_title().startswith("sum of d = 5") and "3 = ceil(log2 d)" in ax.get_title()
    plt.close("all")
    with pytest.raises(ValueError, match="op"):
        plot_product_tree(4, op="max")


@pytest.mark.parametrize("depth", [0, 1, 3, 6])
def test_relu_square_error_is_four_to_the_minus_depth_plus_one(depth):
    from seqtheory.scaling import relu_square

    x = np.linspace(0, 1, 4097)
    err = np.abs(relu_square(x, depth) - x**2)
    assert err.max() == pytest.approx(4.0 ** -(depth + 1), rel=1e-6)
    assert relu_square(x, depth)[0] == 0 and relu_square(x, depth)[-1] == pytest.approx(1)


def test_relu_square_rejects_bad_input():
    from seqtheory.scaling import relu_square

    with pytest.raises(ValueError, match="x must lie"):
        relu_square([1.5], 2)
    with pytest.raises(ValueError, match="depth"):
        relu_square([0.5], -1)


@given(alpha=st.floats(0.1, 1.0), floor=st.floats(0.0, 2.0), coef=st.floats(0.5, 5.0))
@settings(max_examples=25, deadline=None)
def test_floor_fit_recovers_floor_and_exponent(alpha, floor, coef):
    from seqtheory.scaling import fit_power_law_floor

    n = np.geomspace(100, 1e6, 12)
    fit = fit_power_law_floor(n, floor + coef * n**-alpha, grid=2000)
    assert fit.exponent == pytest.approx(alpha, abs=0.05)
    assert fit.floor == pytest.approx(floor, abs=0.02 * (floor + coef * 1e6**-alpha) + 1e-3)
    assert np.allclose(fit(n), floor + coef * n**-alpha, rtol=0.02)


@pytest.mark.parametrize(
    "x, y, msg",
    [
        ([1, 2], [1, 2], "length >= 3"),
        ([1, 2, 3], [1, 2], "length >= 3"),
        ([1, 2, 3], [1, -2, 3], "positive"),
    ],
)
def test_floor_fit_rejects_bad_input(x, y, msg):
    from seqtheory.scaling import fit_power_law_floor

    with pytest.raises(ValueError, match=msg):
        fit_power_law_floor(x, y)


def test_torus_target_in_chunks_is_the_target_at_once():
    task = TorusTask(d=4, max_freq=8, seed=0)
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, (9000, 4))
    at_once = np.cos(theta @ task.freqs.T + task.phases) @ task.amps
    assert np.allclose(task.target(theta), at_once, rtol=0, atol=1e-12)
    assert np.array_equal(task.target(theta)[5000:], task.target(theta[5000:]))


def test_beta_sweep_settings():
    cpu = SETUP.pick("cpu")
    assert cpu.beta_max_freq > cpu.max_freq and len(cpu.betas) >= 3
    task = TorusTask(d=cpu.beta_dim, beta=cpu.betas[0], max_freq=cpu.beta_max_freq)
    assert task.cutoff == cpu.beta_max_freq  # the cutoff is not lowered by n_modes
    # on the 4-torus the cap of 4,096 modes lowers Experiment 2's cutoff of 8 to 4
    top = TorusTask(d=4, max_freq=cpu.max_freq)
    assert top.cutoff == 4 and len(top.amps) == (9**4 - 1) // 2


def test_archived_width_sweep_loads_as_arrays():
    from seqtheory.scaling import load_text_width_sweep

    sweep = load_text_width_sweep()
    S, W = len(sweep["seeds"]), len(sweep["widths"])
    assert S >= 3 and W >= 4
    for key in ("params", "test_loss", "best_step", "id"):
        assert sweep[key].shape == (S, W)
    assert (np.diff(sweep["params"], axis=1) > 0).all()
    assert sweep["check_loss"].shape == (S,)
    assert {"script", "date", "device", "check"} <= set(sweep["meta"])


# ------------------------------------------------------------------ the experiment shape

TINY = ScalingSetup(
    torus_dims=(1, 2),
    sizes=(32, 64, 128),
    knn_seeds=(0, 1),
    mlp_seeds=(0, 1),
    net_steps=20,
    betas=(0.5, 2.0),
    beta_seeds=(0,),
    widths=(4, 8),
    width_dims=(1, 2),
    approx_seeds=(0, 1),
)


def test_experiments_are_deterministic_on_the_cpu():
    a = run_data_sweep(TINY, seed=0, device="cpu", progress=False)
    b = run_data_sweep(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(a, DataSweepResult) and a.device == "cpu" and a.seed == 0
    assert a.learners == ["kNN", "MLP"] and a.errors["MLP"].shape == (2, 3, 2)
    for name in a.learners:
        assert np.array_equal(a.errors[name], b.errors[name])
    assert a.seed_exponents("MLP", 1).shape == (2,)
    # another base seed draws other samples and networks
    assert not np.array_equal(
        a.errors["kNN"], run_data_sweep(TINY, seed=1, device="cpu", progress=False).errors["kNN"]
    )
    m1 = run_model_sweep(TINY, seed=0, device="cpu", progress=False)
    m2 = run_model_sweep(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(m1, ModelSweepResult) and m1.kinds == ["mlp"]
    assert np.array_equal(m1.errors["mlp"], m2.errors["mlp"])
    assert list(m1.params["mlp"]) == [learner_params("mlp", 16, w) for w in TINY.widths]
    beta = run_beta_sweep(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(beta, BetaSweepResult) and beta.exponents.shape == (2, 1)
    assert beta.top_dim == max(TINY.torus_dims) and beta.top_exponents.shape == (2, 1)
    assert beta.top_cutoff == TorusTask(d=beta.top_dim, max_freq=TINY.max_freq).cutoff
    assert np.array_equal(beta.exponents, run_beta_sweep(TINY, seed=0, progress=False).exponents)
    import matplotlib.pyplot as plt

    assert len(plot_learning_curves(a)) == 2 and len(plot_model_sweep(m1)) == 1
    plt.close("all")
    with pytest.raises(ValueError, match="learner"):
        a.curve("SVM", 1)


def test_base_seed_zero_keeps_the_logical_seeds():
    # seed 0 is the book's default run: the sweep is learning_curves with the setup's seeds
    tasks = list(torus_tasks(TINY, seed=0).values())
    knn = run_data_sweep(
        ScalingSetup(torus_dims=(1, 2), sizes=(32, 64), knn_seeds=(0, 1), data_learners=("kNN",)),
        seed=0,
        progress=False,
    )
    assert np.array_equal(
        knn.errors["kNN"], learning_curves(tasks, [32, 64], "knn", (0, 1), progress=False)
    )


def test_streams_name_the_logical_seeds_of_the_sweeps():
    # learner seed s: samples s, test set 10_000 + s; approximation_error's pool 30_000 and
    # its test set 20_000; one network per (seed, task, size)
    from seqtheory.scaling import _network_seed

    assert [STREAMS.seed(name, 3) for name in ("targets", "samples", "tests", "networks")] == [
        3,
        3,
        10_003,
        3,
    ]
    assert (STREAMS.seed("pool"), STREAMS.seed("pool_tests")) == (30_000, 20_000)
    assert _network_seed(2, 1, 4) == 2_001_004 and _network_seed(1, 3) == 1_003_000
    assert all(run.streams is STREAMS for run in (run_data_sweep, run_beta_sweep, run_model_sweep))


def test_experiments_take_a_context_and_start_with_the_run_header():
    setup = ScalingSetup(torus_dims=(1,), sizes=(32, 64), knn_seeds=(0,), data_learners=("kNN",))
    a = run_data_sweep(setup, seed=3, progress=False)
    b = run_data_sweep(setup, Experiment.make(seed=3, progress=False))
    assert isinstance(a, RunInfo) and (a.setup, a.seed, a.device) == (setup, 3, "cpu")
    assert a.seconds > 0 and np.array_equal(a.errors["kNN"], b.errors["kNN"])
    with pytest.raises(TypeError, match="not both"):
        run_data_sweep(setup, Experiment.make(seed=3), seed=3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize(
    "call",
    [
        lambda: run_data_sweep(TINY, device="cuda", progress=False),
        lambda: run_beta_sweep(TINY, device="cuda", progress=False),
        lambda: run_model_sweep(TINY, device="cuda", progress=False),
        lambda: approximation_error(
            TorusTask(d=1), "mlp", (4,), steps=1, progress=False, device="cuda"
        ),
    ],
)
def test_unavailable_device_is_a_clear_error(call):
    with pytest.raises(ValueError, match="device"):
        call()


def test_training_and_building_leave_the_global_rng_alone():
    state = torch.random.get_rng_state()
    learner_params("transformer", 16, 8)
    task = TorusTask(d=1, D=16, max_freq=4)
    approximation_error(task, "mlp", (4,), steps=5, pool=256, progress=False)
    net_error(task, 64, "mlp", steps=5, eval_every=5)
    assert torch.equal(state, torch.random.get_rng_state())


def test_scaling_setup_is_frozen_and_validated():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        TINY.net_steps = 5
    with pytest.raises(ValueError, match="data_learners"):
        ScalingSetup(data_learners=("SVM",))
    with pytest.raises(ValueError, match="net_steps"):
        ScalingSetup(net_steps=0)
    with pytest.raises(TypeError, match="sizes"):
        ScalingSetup(sizes=[128, 256])
    with pytest.raises(ValueError, match="ambient"):
        ScalingSetup(ambient=4)
    with pytest.raises(TypeError, match="setup"):
        run_data_sweep({"sizes": (1,)})

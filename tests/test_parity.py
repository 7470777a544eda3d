"""Unit tests for seqtheory.parity: task, batched networks, training loops, lottery odds,
and the hidden-progress experiments (setup, run, result)."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory import make_generator
from seqtheory.core.experiment import Experiment
from seqtheory.core.training import History
from seqtheory.parity import (
    SETUP,
    STREAMS,
    HiddenProgressResult,
    HiddenProgressSetup,
    ParityMLPs,
    ParityRun,
    WaitingTimeResult,
    expected_lucky_neurons,
    hinge_loss,
    lucky_neuron_probability,
    parity_labels,
    placebo_ratios,
    plot_waiting_times,
    run,
    run_k_sweep,
    run_n_sweep,
    sparse_parity,
    steps_to_success,
    train_offline,
    train_online,
)

# a hidden-progress setup small enough for a unit test (n = 8, k = 2 learns in ~100 steps)
TINY = HiddenProgressSetup(
    n=8,
    k=2,
    width=32,
    seeds=2,
    steps=60,
    eval_every=20,
    ks=(2, 3),
    k_seeds=2,
    max_steps=80,
    ns=(6, 8),
    n_seeds=2,
    n_eval_every=20,
    gradient_ns=(6,),
    test_size=200,
)


@given(n=st.integers(2, 12), k=st.integers(1, 4), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_sparse_parity_labels_are_products_on_the_support(n, k, seed):
    k = min(k, n)
    g = torch.Generator().manual_seed(seed)
    support = torch.randperm(n, generator=g)[:k].tolist()
    x, y = sparse_parity(50, n, support, generator=g)
    assert set(x.unique().tolist()) <= {-1.0, 1.0} and x.shape == (50, n)
    assert torch.equal(y, x[:, support].prod(dim=1))
    flipped = x.clone()
    flipped[:, support[0]] *= -1  # flipping a support bit flips y
    assert torch.equal(parity_labels(flipped, support), -y)


def test_no_single_bit_correlates_with_a_parity_of_two_or_more():
    x, y = sparse_parity(200_000, 8, [0, 3, 5], generator=torch.Generator().manual_seed(0))
    corr = (x * y[:, None]).mean(dim=0)
    assert corr.abs().max() < 0.01


@pytest.mark.parametrize(
    "support, match", [([], "non-empty"), ([0, 9], "lie in 0..7"), ([1, 1], "distinct")]
)
def test_bad_supports(support, match):
    with pytest.raises(ValueError, match=match):
        sparse_parity(4, 8, support, generator=make_generator(0))


def test_batched_networks_are_independent_and_narrow_ones_stay_narrow():
    """Network 0's gradient ignores network 1's data; padded units of the narrower
    network stay exactly zero through training."""
    nets = ParityMLPs(10, [6, 4], sparsity=[None, 3], generator=torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(2)
    x, y = sparse_parity(8, 10, [0, 1], models=2, generator=g)

    def grads(x):
        nets.zero_grad()
        hinge_loss(nets(x), y).sum().backward()
        return [p.grad.clone() for p in nets.parameters()]

    other = x.clone()
    other[1] = -other[1]  # change only network 1's inputs
    for a, b in zip(grads(x), grads(other), strict=True):
        assert torch.equal(a[0], b[0])
    opt = torch.optim.SGD(nets.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        hinge_loss(nets(x), y).sum().backward()
        opt.step()
    assert torch.all(nets.w1[1, 4:] == 0) and torch.all(nets.a[1, 4:] == 0)
    assert torch.all(nets.hidden(x)[1, :, 4:] == 0)


def test_sparse_initialisation_gives_each_neuron_s_inputs():
    nets = ParityMLPs(20, [50, 50], sparsity=[4, None], generator=torch.Generator().manual_seed(0))
    nonzero = (nets.w1 != 0).sum(dim=2)  # (M, W)
    assert torch.all(nonzero[0] == 4) and torch.all(nonzero[1] == 20)


def test_parity_mlps_bad_inputs():
    g = make_generator(0)
    with pytest.raises(ValueError, match="sparsity must be in 1..n"):
        ParityMLPs(5, [3], sparsity=9, generator=g)
    with pytest.raises(ValueError, match="entries for 2 networks"):
        ParityMLPs(5, [3, 3], sparsity=[2], generator=g)
    with pytest.raises(TypeError, match="width must be an int"):
        ParityMLPs(5, [3.5], generator=g)
    with pytest.raises(ValueError, match="n=5 coordinates"):
        ParityMLPs(5, [3], generator=g)(torch.ones(2, 4))


def test_online_sgd_learns_a_2_sparse_parity_and_records_progress():
    g = torch.Generator().manual_seed(0)
    nets = ParityMLPs(10, [200, 200], generator=g)
    run = train_online(
        nets,
        [0, 1],
        steps=600,
        eval_every=50,
        stop_at=0.99,
        generator=g,
        progress=False,
        test_size=500,
    )
    assert run.accuracy[0].max() < 0.7 and run.accuracy[-1].min() >= 0.99
    assert np.all(np.isfinite(steps_to_success(run)))
    assert run.weight.shape == (len(run.steps), 2, 10)
    assert np.all(run.support_ratio[-1] > 1.2) and run.distance[0].max() == 0
    # the largest change per input coordinate: its maximum over inputs is the distance
    assert run.column_distance.shape == (len(run.steps), 2, 10)
    assert np.allclose(run.column_distance.max(-1), run.distance)
    # the placebo: all 28 off-support pairs of 8 bits, each 1 at step 0, below the support
    placebo = placebo_ratios(run)
    assert placebo.shape == (28, len(run.steps), 2) and np.allclose(placebo[:, 0], 1.0)
    support = run.subset_ratio([0, 1])
    assert np.allclose(support, run.support_ratio / run.support_ratio[0])
    assert np.all(support[-1] > placebo[:, -1].max(axis=0))


def test_placebo_ratios_samples_distinct_subsets_when_there_are_many():
    rng = np.random.default_rng(0)
    weight = rng.uniform(0.5, 1.5, size=(3, 2, 20))
    run = ParityRun(
        np.arange(3),
        np.zeros((3, 2)),
        np.zeros((3, 2)),
        weight,
        np.zeros((3, 2)),
        support=(0, 1, 2, 3),
    )
    placebo = placebo_ratios(run, max_subsets=50, generator=np.random.default_rng(1))
    assert placebo.shape == (50, 3, 2) and np.allclose(placebo[:, 0], 1.0)
    assert len({tuple(np.round(p[-1], 12)) for p in placebo}) == 50  # distinct subsets
    with pytest.raises(ValueError, match="off-support"):
        placebo_ratios(
            ParityRun(
                np.arange(1),
                np.zeros((1, 1)),
                np.zeros((1, 1)),
                np.ones((1, 1, 3)),
                np.zeros((1, 1)),
                support=(0, 1),
            )
        )


def test_offline_training_per_network_sample_sizes():
    g = torch.Generator().manual_seed(0)
    nets = ParityMLPs(8, [64, 64], generator=g)
    run = train_offline(
        nets,
        [0, 1],
        [16, 400],
        steps=800,
        eval_every=400,
        generator=g,
        progress=False,
        test_size=500,
    )
    # 400 examples suffice for a 2-parity of 8 bits; 16 examples do not
    assert run.accuracy[-1, 1] >= 0.95 and run.accuracy[-1, 0] < 0.9
    with pytest.raises(ValueError, match="positive ints"):
        train_offline(nets, [0, 1], [0, 5], steps=1, generator=g, progress=False)


def test_steps_to_success_nan_when_never_reached():
    acc = np.array([[0.5, 0.5], [0.7, 1.0], [0.99, 1.0]])
    run = ParityRun(np.array([0, 10, 20]), acc, acc, np.zeros((3, 2, 4)), acc)
    assert steps_to_success(run, 0.99).tolist() == [20, 10]
    assert np.isnan(steps_to_success(run, 0.999)[0])


def test_lucky_neuron_probability_matches_counting_and_simulation():
    assert lucky_neuron_probability(30, 3, 6) == pytest.approx(math.comb(27, 3) / math.comb(30, 6))
    assert lucky_neuron_probability(10, 3, 10) == 1.0
    assert lucky_neuron_probability(30, 3, 6, overlap=0) == pytest.approx(1.0)
    g = torch.Generator().manual_seed(0)
    subsets = torch.rand(200_000, 30, generator=g).argsort(dim=1)[:, :6]
    hits = (subsets < 3).sum(dim=1)
    assert (hits == 3).float().mean() == pytest.approx(
        lucky_neuron_probability(30, 3, 6), abs=0.001
    )
    assert (hits >= 2).float().mean() == pytest.approx(
        lucky_neuron_probability(30, 3, 6, overlap=2), abs=0.003
    )
    w = np.array([1, 10, 1000])
    assert np.all(np.diff(expected_lucky_neurons(w, 30, 3, 6)) > 0)
    with pytest.raises(ValueError, match="k <= n"):
        lucky_neuron_probability(5, 6, 2)


def test_hypercube_enumerates_every_sign_vector_once():
    from seqtheory.parity import hypercube

    x = hypercube(5)
    assert x.shape == (32, 5) and set(x.unique().tolist()) == {-1.0, 1.0}
    assert torch.unique(x, dim=0).shape[0] == 32
    with pytest.raises(ValueError, match="n must be <= 20"):
        hypercube(21)
    with pytest.raises(ValueError, match="n must be >= 1"):
        hypercube(0)


def test_population_gradient_is_minus_a_times_a_fourier_coefficient_of_the_gate():
    # while |f| < 1 everywhere the hinge loss is 1 - y f, so dL/dw_ji = -a_j E[y 1{gate} x_i]
    # = -a_j * (Fourier coefficient of the gate on S xor {i}): degree k-1 on the support,
    # k+1 off it -- and the off-support one is not zero
    from seqtheory.parity import hypercube, population_gradient

    g = torch.Generator().manual_seed(3)
    net = ParityMLPs(8, [50, 30], generator=g)
    support = [1, 4, 6]
    grad = population_gradient(net, support)
    x = hypercube(8)
    y = x[:, support].prod(-1)
    with torch.no_grad():
        assert net(x).abs().max() < 1
        gate = ((torch.einsum("mwn,bn->mbw", net.w1, x) + net.b1[:, None]) > 0).float()
    coef = torch.einsum("mbw,b,bn->mwn", gate, y, x) / 2**8
    assert torch.allclose(grad, -net.a.detach()[:, :, None] * coef, atol=1e-6)
    off = [i for i in range(8) if i not in support]
    assert grad[0][:, off].abs().max() > 1e-3  # off the support: small, not zero
    assert torch.all(grad[1, 30:] == 0)  # padded units of the narrower net
    with pytest.raises(TypeError, match="model must be a ParityMLPs"):
        population_gradient(torch.nn.Linear(8, 1), support)
    with pytest.raises(ValueError, match="support coordinates"):
        population_gradient(net, [0, 9])


def test_parity_mlps_need_a_generator_and_leave_the_global_rng_alone():
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        ParityMLPs(5, [3], generator=None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sparse_parity(4, 5, [0], generator=0)
    state = torch.random.get_rng_state()
    a = ParityMLPs(10, [8, 4], sparsity=[3, None], generator=make_generator(5))
    sparse_parity(16, 10, [0, 1], models=2, generator=make_generator(6))
    run(TINY, seed=0, device="cpu", progress=False)
    assert torch.equal(torch.random.get_rng_state(), state)
    b = ParityMLPs(10, [8, 4], sparsity=[3, None], generator=make_generator(5))
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert torch.equal(a.w1_init, a.w1) and "w1_init" not in a.state_dict()


def test_training_goes_through_train_and_keeps_the_history():
    g = make_generator(0)
    nets = ParityMLPs(8, [16, 16], generator=g)
    rec = train_online(
        nets, [0, 1], steps=30, eval_every=10, generator=g, progress=False, test_size=100
    )
    assert isinstance(rec.history, History) and rec.history.steps == list(range(1, 31))
    assert rec.steps.tolist() == [0, 10, 20, 30]
    assert rec.accuracy.dtype == np.float32 and rec.weight.shape == (4, 2, 8)
    assert np.all(np.isnan(rec.loss[0]))
    # the recorded loss at an evaluation is that step's per-network training loss
    assert np.array_equal(rec.loss[1:], rec.history.losses()[[9, 19, 29]])
    with pytest.raises(ValueError, match="stop_at"):
        train_online(nets, [0, 1], steps=1, stop_at=1.5, generator=g, progress=False)
    with pytest.raises(TypeError, match="model must be a ParityMLPs"):
        train_online(torch.nn.Linear(8, 1), [0], steps=1, generator=g, progress=False)


def test_streams_name_the_logical_seeds_of_the_experiments():
    assert [
        STREAMS.seed("online"),
        STREAMS.seed("per_k", 3),
        STREAMS.seed("per_n", 30),
        STREAMS.seed("per_width", 512),
    ] == [0, 103, 230, 512]
    assert run.streams is run_k_sweep.streams is run_n_sweep.streams is STREAMS
    # draw k of stream per_k under base seed 3 is make_generator(100 + k, base=3)
    small = dataclasses.replace(TINY, ks=(2,))
    sweep = run_k_sweep(small, Experiment.make(seed=3, progress=False))
    g = make_generator(102, base=3)
    rec = train_online(
        ParityMLPs(8, [32, 32], generator=g),
        [0, 1],
        steps=80,
        eval_every=20,
        test_size=200,
        stop_at=TINY.success,
        generator=g,
        progress=False,
    )
    assert np.array_equal(sweep.records[2].weight, rec.weight)
    assert sweep.seed == 3 and sweep.variable == "k"
    with pytest.raises(ValueError, match="seed must be >= 0"):
        run(TINY, seed=-1, progress=False)


def test_hidden_progress_setup_is_frozen_and_validated():
    assert SETUP.pick("cpu") == HiddenProgressSetup() and SETUP.pick("full").seeds == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        TINY.steps = 5
    with pytest.raises(ValueError, match="k must be <= n"):
        HiddenProgressSetup(n=4, k=5)
    with pytest.raises(ValueError, match="lr must be > 0"):
        HiddenProgressSetup(lr=0.0)
    with pytest.raises(ValueError, match="ns must be >= 3"):
        HiddenProgressSetup(ns=(2, 30))
    with pytest.raises(ValueError, match="gradient_ns entries must be <= 20"):
        HiddenProgressSetup(gradient_ns=(21,))
    with pytest.raises(TypeError, match="ks must be a non-empty tuple"):
        HiddenProgressSetup(ks=())
    with pytest.raises(TypeError, match="setup must be a HiddenProgressSetup"):
        run({"n": 8}, seed=0, device="cpu")


def test_run_is_deterministic_and_matches_the_hand_written_experiment():
    a = run(TINY, seed=0, device="cpu", progress=False)
    b = run(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(a, HiddenProgressResult) and a.device == "cpu" and a.seed == 0
    for f in ("steps", "accuracy", "loss", "weight", "distance"):
        assert np.array_equal(getattr(a.record, f), getattr(b.record, f), equal_nan=True), f
    assert np.array_equal(a.success, b.success, equal_nan=True)
    assert a.support == [0, 1] and a.model.w1.device.type == "cpu"
    # the same as building and training by hand from generator stream 0 of base seed 0
    g = make_generator(0)
    nets = ParityMLPs(8, [32, 32], generator=g)
    rec = train_online(
        nets, [0, 1], steps=60, eval_every=20, test_size=200, generator=g, progress=False
    )
    assert np.array_equal(rec.accuracy, a.record.accuracy)
    assert torch.equal(nets.w1, a.model.w1)
    other = run(TINY, seed=1, device="cpu", progress=False)
    assert not np.array_equal(other.record.weight, a.record.weight)


def test_seed_none_is_the_base_seed(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_SEED", "2")
    a = run(TINY, device="cpu", progress=False)
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    b = run(TINY, seed=2, device="cpu", progress=False)
    assert a.seed == b.seed == 2 and np.array_equal(a.record.weight, b.record.weight)


def test_sweeps_record_steps_to_success_per_value():
    ks = run_k_sweep(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(ks, WaitingTimeResult) and ks.variable == "k"
    assert list(ks.steps_to_success) == [2, 3] and ks.values.tolist() == [2.0, 3.0]
    for k, v in ks.steps_to_success.items():
        assert v.shape == (2,)
        assert np.array_equal(v, steps_to_success(ks.records[k], TINY.success), equal_nan=True)
    again = run_k_sweep(TINY, seed=0, device="cpu", progress=False)
    for k in TINY.ks:
        assert np.array_equal(again.records[k].weight, ks.records[k].weight)
    ns = run_n_sweep(TINY, seed=0, device="cpu", progress=False)
    assert list(ns.steps_to_success) == [6, 8]
    assert ns.records[6].weight.shape[-1] == 6 and ns.records[6].steps[1] == 20
    medians = np.array(
        [np.median(np.where(np.isnan(v), np.inf, v)) for v in ns.steps_to_success.values()]
    )
    assert np.array_equal(ns.medians, medians)
    if np.all(np.isfinite(medians)):
        slope, icpt = ns.power_law()
        assert np.allclose([slope, icpt], np.polyfit(np.log([6.0, 8.0]), np.log(medians), 1))


def test_plot_waiting_times_draws_one_dot_per_network():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = WaitingTimeResult(
        setup=TINY,
        seed=0,
        device="cpu",
        seconds=0.0,
        variable="n",
        steps_to_success={10: np.array([100.0, 120.0]), 20: np.array([200.0, 260.0])},
    )
    fig, ax = plt.subplots()
    slope = plot_waiting_times(res, ax, fit=True)
    assert slope == pytest.approx(np.polyfit(np.log([10, 20]), np.log([110, 230]), 1)[0])
    assert len(ax.collections) == 2 and ax.get_xscale() == "log"
    plt.close(fig)
    with pytest.raises(TypeError, match="WaitingTimeResult"):
        plot_waiting_times("no", ax)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_device_is_a_clear_error():
    for fn in (run, run_k_sweep, run_n_sweep):
        with pytest.raises(ValueError, match="device"):
            fn(TINY, seed=0, device="cuda", progress=False)
    with pytest.raises(ValueError, match="device"):
        ParityMLPs(5, [3], generator=make_generator(0), device="cuda")


def test_medians_count_networks_that_never_succeed_as_slowest():
    # a network that never succeeds must not turn the median into nan (a FULL sweep with one
    # stuck network of 25 lost its whole point): it counts as slower than all others, the
    # median is inf only when most never succeed, and the power law skips such values
    from seqtheory.parity import WaitingTimeResult

    r = WaitingTimeResult(
        setup=TINY,
        seed=0,
        device="cpu",
        seconds=0.0,
        variable="n",
        steps_to_success={
            10: np.array([100.0, 120.0, np.nan]),
            20: np.array([400.0, 500.0, 460.0]),
            40: np.array([np.nan, np.nan, 900.0]),
        },
    )
    assert r.medians.tolist() == [120.0, 460.0, np.inf]
    slope, _ = r.power_law()
    assert slope == pytest.approx(np.log(460 / 120) / np.log(2))
    r.steps_to_success[20] = np.array([np.nan, np.nan, 1.0])
    with pytest.raises(ValueError, match="two values"):
        r.power_law()


def test_accuracy_in_chunks_of_examples_equals_one_pass(monkeypatch):
    import seqtheory.parity as parity

    nets = ParityMLPs(12, [16, 9, 16], generator=torch.Generator().manual_seed(5))
    x, y = sparse_parity(300, 12, [0, 1, 2], generator=torch.Generator().manual_seed(6))
    whole = nets.accuracy(x, y)
    monkeypatch.setattr(parity, "_EVAL_NUMBERS", 3 * 16 * 7)  # 7 examples a chunk
    assert torch.equal(nets.accuracy(x, y), whole)
    assert torch.equal(nets.accuracy(x[None].expand(3, -1, -1), y[None].expand(3, -1)), whole)
    assert len(set(whole.tolist())) > 1  # not a constant

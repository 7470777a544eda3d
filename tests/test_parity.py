"""Unit tests for seqtheory.parity: task, batched networks, training loops, lottery odds."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.parity import (
    ParityMLPs,
    expected_lucky_neurons,
    hinge_loss,
    lucky_neuron_probability,
    parity_labels,
    placebo_ratios,
    sparse_parity,
    steps_to_success,
    train_offline,
    train_online,
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
    flipped[:, support[0]] *= -1                      # flipping a support bit flips y
    assert torch.equal(parity_labels(flipped, support), -y)


def test_no_single_bit_correlates_with_a_parity_of_two_or_more():
    x, y = sparse_parity(200_000, 8, [0, 3, 5], generator=torch.Generator().manual_seed(0))
    corr = (x * y[:, None]).mean(dim=0)
    assert corr.abs().max() < 0.01


@pytest.mark.parametrize("support, match", [([], "non-empty"), ([0, 9], "lie in 0..7"),
                                            ([1, 1], "distinct")])
def test_bad_supports(support, match):
    with pytest.raises(ValueError, match=match):
        sparse_parity(4, 8, support)


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
    other[1] = -other[1]                               # change only network 1's inputs
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
    nets = ParityMLPs(20, [50, 50], sparsity=[4, None],
                      generator=torch.Generator().manual_seed(0))
    nonzero = (nets.w1 != 0).sum(dim=2)                                   # (M, W)
    assert torch.all(nonzero[0] == 4) and torch.all(nonzero[1] == 20)


def test_parity_mlps_bad_inputs():
    with pytest.raises(ValueError, match="sparsity must be in 1..n"):
        ParityMLPs(5, [3], sparsity=9)
    with pytest.raises(ValueError, match="entries for 2 networks"):
        ParityMLPs(5, [3, 3], sparsity=[2])
    with pytest.raises(TypeError, match="width must be an int"):
        ParityMLPs(5, [3.5])
    with pytest.raises(ValueError, match="n=5 coordinates"):
        ParityMLPs(5, [3])(torch.ones(2, 4))


def test_online_sgd_learns_a_2_sparse_parity_and_records_progress():
    g = torch.Generator().manual_seed(0)
    nets = ParityMLPs(10, [200, 200], generator=g)
    run = train_online(nets, [0, 1], steps=600, eval_every=50, stop_at=0.99, generator=g,
                       progress=False, test_size=500)
    assert run.accuracy[0].max() < 0.7 and run.accuracy[-1].min() >= 0.99
    assert np.all(np.isfinite(steps_to_success(run)))
    assert run.weight.shape == (len(run.steps), 2, 10)
    assert np.all(run.support_ratio[-1] > 1.2) and run.distance[0].max() == 0
    # the placebo: all 28 off-support pairs of 8 bits, each 1 at step 0, below the support
    placebo = placebo_ratios(run)
    assert placebo.shape == (28, len(run.steps), 2) and np.allclose(placebo[:, 0], 1.0)
    support = run.subset_ratio([0, 1])
    assert np.allclose(support, run.support_ratio / run.support_ratio[0])
    assert np.all(support[-1] > placebo[:, -1].max(axis=0))


def test_placebo_ratios_samples_distinct_subsets_when_there_are_many():
    from seqtheory.parity import ParityRun
    rng = np.random.default_rng(0)
    weight = rng.uniform(0.5, 1.5, size=(3, 2, 20))
    run = ParityRun(np.arange(3), np.zeros((3, 2)), np.zeros((3, 2)), weight, np.zeros((3, 2)),
                    support=(0, 1, 2, 3))
    placebo = placebo_ratios(run, max_subsets=50, generator=np.random.default_rng(1))
    assert placebo.shape == (50, 3, 2) and np.allclose(placebo[:, 0], 1.0)
    assert len({tuple(np.round(p[-1], 12)) for p in placebo}) == 50     # distinct subsets
    with pytest.raises(ValueError, match="off-support"):
        placebo_ratios(ParityRun(np.arange(1), np.zeros((1, 1)), np.zeros((1, 1)),
                                 np.ones((1, 1, 3)), np.zeros((1, 1)), support=(0, 1)))


def test_offline_training_per_network_sample_sizes():
    g = torch.Generator().manual_seed(0)
    nets = ParityMLPs(8, [64, 64], generator=g)
    run = train_offline(nets, [0, 1], [16, 400], steps=800, eval_every=400, generator=g,
                        progress=False, test_size=500)
    # 400 examples suffice for a 2-parity of 8 bits; 16 examples do not
    assert run.accuracy[-1, 1] >= 0.95 and run.accuracy[-1, 0] < 0.9
    with pytest.raises(ValueError, match="positive ints"):
        train_offline(nets, [0, 1], [0, 5], steps=1, progress=False)


def test_steps_to_success_nan_when_never_reached():
    from seqtheory.parity import ParityRun
    acc = np.array([[0.5, 0.5], [0.7, 1.0], [0.99, 1.0]])
    run = ParityRun(np.array([0, 10, 20]), acc, acc, np.zeros((3, 2, 4)), acc)
    assert steps_to_success(run, 0.99).tolist() == [20, 10]
    assert np.isnan(steps_to_success(run, 0.999)[0])


def test_lucky_neuron_probability_matches_counting_and_simulation():
    assert lucky_neuron_probability(30, 3, 6) == pytest.approx(
        math.comb(27, 3) / math.comb(30, 6))
    assert lucky_neuron_probability(10, 3, 10) == 1.0
    assert lucky_neuron_probability(30, 3, 6, overlap=0) == pytest.approx(1.0)
    g = torch.Generator().manual_seed(0)
    subsets = torch.rand(200_000, 30, generator=g).argsort(dim=1)[:, :6]
    hits = (subsets < 3).sum(dim=1)
    assert (hits == 3).float().mean() == pytest.approx(lucky_neuron_probability(30, 3, 6),
                                                        abs=0.001)
    assert (hits >= 2).float().mean() == pytest.approx(
        lucky_neuron_probability(30, 3, 6, overlap=2), abs=0.003)
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
    coef = torch.einsum("mbw,b,bn->mwn", gate, y, x) / 2 ** 8
    assert torch.allclose(grad, -net.a.detach()[:, :, None] * coef, atol=1e-6)
    off = [i for i in range(8) if i not in support]
    assert grad[0][:, off].abs().max() > 1e-3          # off the support: small, not zero
    assert torch.all(grad[1, 30:] == 0)                # padded units of the narrower net
    with pytest.raises(TypeError, match="model must be a ParityMLPs"):
        population_gradient(torch.nn.Linear(8, 1), support)
    with pytest.raises(ValueError, match="support coordinates"):
        population_gradient(net, [0, 9])

"""Unit tests of the width-and-luck helpers in seqtheory.parity (coverage, support weight,
Fisher's exact test, training on the model's device, the experiment's setup, run and
result) and of the archived frontier."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory import make_generator
from seqtheory.book.archive import load_data
from seqtheory.parity import (
    WIDTH_LUCK_SETUP,
    ParityMLPs,
    WidthLuckResult,
    WidthLuckSetup,
    coverage_distribution,
    fisher_two_sided,
    lucky_neuron_probability,
    plot_success_rates,
    run_width_luck,
    support_coverage,
    support_weight,
    train_offline,
)

# a width-and-luck grid small enough for a unit test: 2 widths x 2 m x 2 inits x 2 seeds
TINY = WidthLuckSetup(
    n=10,
    k=2,
    samples=(16, 200),
    widths=(8, 32),
    sparsity=4,
    seeds=2,
    steps=100,
    eval_every=50,
    test_size=200,
)


@given(st.integers(3, 40), st.integers(1, 5), st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_coverage_distribution_is_a_distribution_with_the_lucky_tail(n, k, s):
    k, s = min(k, n), min(s, n)
    p = coverage_distribution(n, k, s)
    assert p.shape == (k + 1,) and np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    assert p[k:].sum() == pytest.approx(lucky_neuron_probability(n, k, s))
    assert p[k - 1 :].sum() == pytest.approx(lucky_neuron_probability(n, k, s, overlap=k - 1))
    mean = sum(j * q for j, q in enumerate(p))
    assert mean == pytest.approx(k * s / n)  # hypergeometric mean


def test_coverage_probability_grows_with_fan_in():
    p = [lucky_neuron_probability(30, 3, s) for s in range(3, 31)]
    assert np.all(np.diff(p) > 0) and p[-1] == 1.0
    assert p[3] == pytest.approx(6 * 5 * 4 / (30 * 29 * 28))  # s = 6


def test_support_coverage_matches_sampled_initialisation():
    g = torch.Generator().manual_seed(0)
    nets = ParityMLPs(30, [2000, 2000, 7], sparsity=[6, None, 6], generator=g)
    cov = support_coverage(nets, [0, 1, 2])
    assert cov.shape == (3, 2000)
    assert (cov[1] == 3).all() and (cov[2, 7:] == -1).all() and (cov[2, :7] >= 0).all()
    freq = torch.bincount(cov[0], minlength=4).numpy() / 2000
    expected = coverage_distribution(30, 3, 6)
    se = np.sqrt(expected * (1 - expected) / 2000)
    assert np.all(np.abs(freq - expected) <= 4 * se + 1e-9), (freq, expected)


def test_support_weight_initial_and_after_training():
    g = torch.Generator().manual_seed(1)
    nets = ParityMLPs(8, [5, 3], sparsity=[3, None], generator=g)
    w0 = support_weight(nets, [0, 1], initial=True)
    assert torch.allclose(w0, nets.w1.detach()[:, :, :2].norm(dim=-1))
    assert (w0[1, 3:] == 0).all()
    assert ((w0[0] > 0) == (support_coverage(nets, [0, 1])[0] > 0)).all()
    train_offline(nets, [0, 1], 64, steps=20, generator=g, progress=False)
    assert not torch.allclose(support_weight(nets, [0, 1]), w0)
    assert torch.equal(support_weight(nets, [0, 1], initial=True), w0)


def test_coverage_helpers_bad_inputs():
    with pytest.raises(TypeError, match="model"):
        support_coverage("net", [0])
    with pytest.raises(TypeError, match="model"):
        support_weight(None, [0])
    nets = ParityMLPs(5, [2], generator=make_generator(0))
    with pytest.raises(ValueError, match="support"):
        support_coverage(nets, [0, 9])
    with pytest.raises(ValueError, match="need k <= n"):
        coverage_distribution(5, 6, 2)


def test_fisher_two_sided_known_values_and_symmetry():
    assert fisher_two_sided(0, 10, 0, 10) == 1.0
    # 3 of 12 against 7 of 12 (scipy.stats.fisher_exact: 0.21375689864046304)
    assert fisher_two_sided(3, 12, 7, 12) == pytest.approx(0.21375689864046304)
    assert fisher_two_sided(0, 48, 1, 12) == pytest.approx(0.2)
    assert fisher_two_sided(12, 12, 0, 48) == pytest.approx(1 / math.comb(60, 12))
    assert fisher_two_sided(5, 9, 2, 11) == pytest.approx(fisher_two_sided(2, 11, 5, 9))
    with pytest.raises(ValueError, match="a <= n1"):
        fisher_two_sided(5, 4, 0, 3)
    with pytest.raises(ValueError, match="n2"):
        fisher_two_sided(0, 4, 0, 0)


def test_offline_training_is_deterministic_on_the_cpu():
    def run():
        g = torch.Generator().manual_seed(3)
        nets = ParityMLPs(10, [4, 4], sparsity=[3, None], generator=g)
        return train_offline(
            nets, [0, 1], [16, 32], steps=10, eval_every=5, generator=g, progress=False
        )

    a, b = run(), run()
    assert np.array_equal(a.accuracy, b.accuracy) and np.array_equal(a.weight, b.weight)
    assert a.accuracy.shape == (3, 2)


def test_archived_frontier_is_complete_and_monotone_in_samples_at_the_end():
    d = load_data("width_frontier.json")
    meta = d["meta"]
    assert meta["script"] == "scripts/width_frontier.py" and meta["seeds"] >= 8
    steps = d["eval_steps"]
    assert steps[0] == 0 and steps[-1] == meta["steps"]
    for init in meta["inits"]:
        for w in meta["widths"]:
            counts = np.array([d["successes"][init][str(w)][str(m)] for m in meta["samples"]])
            assert counts.shape == (len(meta["samples"]), len(steps))
            assert counts.min() >= 0 and counts.max() <= meta["seeds"]
            assert counts[:, 0].sum() == 0  # nothing learned at step 0


def test_width_luck_setup_is_frozen_and_validated():
    assert WIDTH_LUCK_SETUP.pick("cpu") == WidthLuckSetup()
    assert WIDTH_LUCK_SETUP.pick("full").eval_every == 5000
    with pytest.raises(dataclasses.FrozenInstanceError):
        TINY.seeds = 3
    with pytest.raises(ValueError, match="sparsity must be <= n"):
        WidthLuckSetup(n=10, sparsity=11)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        WidthLuckSetup(weight_decay=-1.0)
    with pytest.raises(ValueError, match="widths must be >= 1"):
        WidthLuckSetup(widths=(0, 8))
    with pytest.raises(ValueError, match="samples must not repeat"):
        WidthLuckSetup(samples=(10, 10))
    with pytest.raises(TypeError, match="setup must be a WidthLuckSetup"):
        run_width_luck(TINY.__dict__, seed=0, device="cpu")


def test_run_width_luck_is_deterministic_and_counts_successes():
    state = torch.random.get_rng_state()
    a = run_width_luck(TINY, seed=0, device="cpu", progress=False)
    assert torch.equal(torch.random.get_rng_state(), state)
    b = run_width_luck(TINY, seed=0, device="cpu", progress=False)
    assert isinstance(a, WidthLuckResult) and a.device == "cpu" and len(a.combos) == 8
    for w in TINY.widths:
        assert np.array_equal(a.records[w].accuracy, b.records[w].accuracy)
        assert np.array_equal(a.records[w].weight, b.records[w].weight)
        assert torch.equal(a.models[w].w1, b.models[w].w1)
        assert a.records[w].steps.tolist() == [0, 50, 100]
    # the result's bookkeeping against the raw (E, M) accuracies
    for w in TINY.widths:
        final = a.records[w].accuracy[-1]
        for m in TINY.samples:
            for init in ("dense", "sparse"):
                cols = [j for j, c in enumerate(a.combos) if c[:2] == (m, init)]
                assert np.array_equal(a.final_accuracy(w, m, init), final[cols])
                assert a.success_rate(w, m, init) == np.mean(final[cols] >= TINY.success)
    total = sum(int((a.records[w].accuracy[-1] >= TINY.success).sum()) for w in TINY.widths)
    assert a.count(TINY.samples, ("dense", "sparse")) == total
    assert a.count([200], ["dense"], [8]) == int(a.successes(8, 200, "dense").sum())
    # sparse networks are sparse at initialisation, dense ones are not
    cov = support_coverage(a.models[32], [0, 1])
    sparse = [j for j, c in enumerate(a.combos) if c[1] == "sparse"]
    assert (a.models[32].w1_init[sparse] != 0).sum(-1).max() == 4 and cov.shape == (8, 32)
    with pytest.raises(ValueError, match="width must be one of"):
        a.final_accuracy(64, 16, "dense")
    with pytest.raises(ValueError, match="no networks with m=17"):
        a.success_rate(8, 17, "dense")


def test_plot_success_rates_draws_one_line_per_width():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = run_width_luck(
        dataclasses.replace(TINY, steps=10, eval_every=10), seed=0, device="cpu", progress=False
    )
    axes = plot_success_rates(res)
    assert [len(ax.lines) for ax in axes] == [2, 2]
    plt.close("all")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_width_luck_on_an_unavailable_device_is_a_clear_error():
    with pytest.raises(ValueError, match="device"):
        run_width_luck(TINY, seed=0, device="cuda", progress=False)

"""Unit tests of the width-and-luck helpers in seqtheory.parity (coverage, support weight,
Fisher's exact test, training on the model's device) and of the archived frontier."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.parity import (
    ParityMLPs,
    coverage_distribution,
    fisher_two_sided,
    lucky_neuron_probability,
    support_coverage,
    support_weight,
    train_offline,
)
from seqtheory.utils import load_data


@given(st.integers(3, 40), st.integers(1, 5), st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_coverage_distribution_is_a_distribution_with_the_lucky_tail(n, k, s):
    k, s = min(k, n), min(s, n)
    p = coverage_distribution(n, k, s)
    assert p.shape == (k + 1,) and np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    assert p[k:].sum() == pytest.approx(lucky_neuron_probability(n, k, s))
    assert p[k - 1:].sum() == pytest.approx(lucky_neuron_probability(n, k, s, overlap=k - 1))
    mean = sum(j * q for j, q in enumerate(p))
    assert mean == pytest.approx(k * s / n)                 # hypergeometric mean


def test_coverage_probability_grows_with_fan_in():
    p = [lucky_neuron_probability(30, 3, s) for s in range(3, 31)]
    assert np.all(np.diff(p) > 0) and p[-1] == 1.0
    assert p[3] == pytest.approx(6 * 5 * 4 / (30 * 29 * 28))      # s = 6


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
    nets = ParityMLPs(5, [2])
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
        return train_offline(nets, [0, 1], [16, 32], steps=10, eval_every=5, generator=g,
                             progress=False)
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
            assert counts[:, 0].sum() == 0                   # nothing learned at step 0

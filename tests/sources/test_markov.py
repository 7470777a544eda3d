"""Unit tests for seqtheory.sources.markov: sampling, stationary law, predictors, reference
losses."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory import seed_everything
from seqtheory.sources.markov import (
    bigram_predictor,
    icl_mc_batch,
    kl_divergence,
    lift,
    ngram_predictor,
    oracle_predictor,
    reference_losses,
    sample_chains,
    sample_ngram_chains,
    sample_transition_matrices,
    sequence_loss,
    stationary_distribution,
    strategies,
    uniform_predictor,
    unigram_predictor,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("k, alpha", [(2, 1.0), (5, 0.3), (3, 10.0)])
def test_rows_are_distributions_with_dirichlet_moments(k, alpha):
    P = sample_transition_matrices(20_000, k, alpha, generator=gen())
    assert (P >= 0).all() and torch.allclose(P.sum(-1), torch.ones(20_000, k))
    mean, var = 1 / k, (1 / k) * (1 - 1 / k) / (k * alpha + 1)
    assert abs(P[..., 0].mean().item() - mean) < 0.01
    assert abs(P[..., 0].var().item() - var) < 0.1 * var


def test_stationary_distribution_is_stationary():
    P = sample_transition_matrices(100, 4, 0.5, generator=gen(1), dtype=torch.float64)
    pi = stationary_distribution(P)
    assert torch.allclose(pi.sum(-1), torch.ones(100, dtype=torch.float64))
    assert torch.allclose((pi[:, None, :] @ P)[:, 0], pi, atol=1e-10)
    # and it is what a long power of P converges to
    assert torch.allclose(torch.linalg.matrix_power(P, 2000)[:, 0], pi, atol=1e-6)


def test_chains_follow_P_and_start_stationary():
    P = sample_transition_matrices(1, 3, 1.0, generator=gen(2))
    x = sample_chains(P.expand(4000, 3, 3).contiguous(), 50, generator=gen(3))
    counts = torch.zeros(3, 3)
    counts.index_put_(
        (x[:, :-1].reshape(-1), x[:, 1:].reshape(-1)), torch.ones(x[:, 1:].numel()), accumulate=True
    )
    assert torch.allclose(counts / counts.sum(1, keepdim=True), P[0], atol=0.02)
    first = torch.bincount(x[:, 0], minlength=3) / 4000
    assert torch.allclose(first, stationary_distribution(P)[0], atol=0.03)


def test_vectorised_sampler_equals_a_step_by_step_walk():
    """The doubling composition gives the same path as applying f_1, f_2, ... in turn."""
    P = sample_transition_matrices(6, 4, 1.0, generator=gen(4))
    start = torch.tensor([0, 1, 2, 3, 0, 1])
    x = sample_chains(P, 37, start=start, generator=gen(5))
    u = torch.rand(6, 36, 1, 1, generator=gen(5), dtype=torch.float64)  # same draws
    cdf = P.double().cumsum(-1)
    cdf[..., -1] = 1.0 + 1e-9
    state = start.clone()
    for t in range(36):
        state = (cdf[torch.arange(6), state] <= u[:, t, 0]).sum(-1).clamp_max(3)
        assert torch.equal(state, x[:, t + 1])


def test_same_seed_same_batch():
    a, pa = icl_mc_batch(8, 3, 20, generator=gen(7))
    b, pb = icl_mc_batch(8, 3, 20, generator=gen(7))
    assert torch.equal(a, b) and torch.equal(pa, pb)
    seed_everything(3)
    c, _ = icl_mc_batch(8, 3, 20)
    seed_everything(3)
    d, _ = icl_mc_batch(8, 3, 20)
    assert torch.equal(c, d)


def brute_force(x, k, alpha):
    """Per-position loops over a tiny batch: the definitions, written the slow way."""
    B, T = x.shape
    uni = torch.zeros(B, T, k, dtype=torch.float64)
    bi = torch.zeros(B, T, k, dtype=torch.float64)
    for b in range(B):
        seq = x[b].tolist()
        for t in range(T):
            seen = seq[: t + 1]
            for j in range(k):
                uni[b, t, j] = (seen.count(j) + 1) / (t + 1 + k)
                n_from = sum(1 for s in range(1, t + 1) if seq[s - 1] == seq[t])
                n_to = sum(1 for s in range(1, t + 1) if seq[s - 1] == seq[t] and seq[s] == j)
                bi[b, t, j] = (n_to + alpha) / (n_from + k * alpha)
    return uni, bi


@pytest.mark.parametrize("alpha", [1.0, 0.25])
def test_predictors_match_brute_force_counts(alpha):
    x, _ = icl_mc_batch(3, 3, 15, generator=gen(8))
    uni, bi = brute_force(x, 3, alpha)
    assert torch.allclose(unigram_predictor(x, 3), uni)
    assert torch.allclose(bigram_predictor(x, 3, alpha), bi)


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(2, 6),
    T=st.integers(1, 30),
    alpha=st.floats(0.05, 5.0),
    seed=st.integers(0, 10_000),
)
def test_property_predictions_are_distributions(k, T, alpha, seed):
    x, P = icl_mc_batch(3, k, T, alpha, generator=gen(seed))
    for probs in (
        uniform_predictor(x, k),
        unigram_predictor(x, k),
        bigram_predictor(x, k, alpha),
        oracle_predictor(x, P),
    ):
        assert probs.shape == (3, T, k) and (probs >= 0).all()
        assert torch.allclose(probs.sum(-1), torch.ones(3, T, dtype=torch.float64))
    # estimators never rule a token out (the oracle may: tiny Dirichlet draws underflow)
    assert (bigram_predictor(x, k, alpha) > 0).all() and (unigram_predictor(x, k) > 0).all()


def test_sequence_loss_and_kl():
    x = torch.tensor([[0, 1, 1]])
    probs = torch.tensor([[[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]]], dtype=torch.float64)
    loss = sequence_loss(probs, x)
    assert torch.allclose(
        loss, torch.tensor([[math.log(2), math.log(2), -math.log(0.75)]], dtype=torch.float64)
    )
    p = torch.tensor([0.5, 0.5])
    assert kl_divergence(p, p).item() == pytest.approx(0.0, abs=1e-12)
    assert kl_divergence(p, torch.tensor([0.9, 0.1])).item() > 0


# Reference values (nats, T = 100, alpha = 1, mean over positions)
REFERENCE = {
    2: dict(uniform=0.693, unigram=0.579, bigram=0.511, oracle=0.482),
    3: dict(uniform=1.099, unigram=1.006, bigram=0.888, oracle=0.821),
}


@pytest.mark.parametrize("k", [2, 3])
def test_reference_losses_reproduce_the_table(k):
    got = reference_losses(k, T=100, alpha=1.0, n=20_000, seed=0)
    for name, expected in REFERENCE[k].items():
        mean, se = got[name]
        # Monte-Carlo error (4 standard errors) plus the table's rounding
        assert abs(mean - expected) < 4 * se + 0.0015, (name, mean, se, expected)
    # the strategies are ordered: more context, lower loss
    means = [got[n][0] for n in ("uniform", "unigram", "bigram", "oracle")]
    assert means == sorted(means, reverse=True)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: sample_transition_matrices(4, 1), ValueError, "k must be >= 2"),
        (lambda: sample_transition_matrices(4, 3, alpha=0.0), ValueError, "alpha must be >"),
        (lambda: sample_transition_matrices(0, 3), ValueError, "batch must be >= 1"),
        (lambda: stationary_distribution(torch.ones(2, 3, 3)), ValueError, "probability"),
        (lambda: stationary_distribution(torch.ones(3, 3) / 3), ValueError, "(batch, k, k)"),
        (lambda: sample_chains(torch.full((1, 2, 2), 0.5), 0), ValueError, "T must be >= 1"),
        (lambda: unigram_predictor(torch.tensor([[0, 3]]), 3), ValueError, "states 0..2"),
        (lambda: unigram_predictor(torch.tensor([[0.0, 1.0]]), 3), TypeError, "integer"),
        (
            lambda: oracle_predictor(torch.tensor([[0, 1]]), torch.full((2, 2, 2), 0.5)),
            ValueError,
            "2 matrices",
        ),
        (lambda: kl_divergence(torch.ones(2), torch.ones(3)), ValueError, "same shape"),
    ],
)
def test_bad_arguments_raise_clear_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def brute_force_ngram(x, k, n, alpha):
    B, T = x.shape
    out = torch.full((B, T, k), 1.0 / k, dtype=torch.float64)
    for b in range(B):
        seq = x[b].tolist()
        for t in range(n - 2, T):
            ctx = seq[t - n + 2 : t + 1] if n > 1 else []
            for j in range(k):
                hits = [s for s in range(n - 1, t + 1) if seq[s - n + 1 : s] == ctx]
                out[b, t, j] = (sum(seq[s] == j for s in hits) + alpha) / (len(hits) + k * alpha)
    return out


@pytest.mark.parametrize("k, n", [(2, 3), (3, 3), (2, 4), (3, 1)])
def test_ngram_predictor_matches_brute_force(k, n):
    x, _ = icl_mc_batch(2, k, 14, generator=gen(9))
    assert torch.allclose(ngram_predictor(x, k, n, 0.5), brute_force_ngram(x, k, n, 0.5))


def test_order_two_chains_follow_their_contexts():
    P = sample_transition_matrices(1, 2, 1.0, order=2, generator=gen(10))
    assert P.shape == (1, 4, 2)
    x = sample_ngram_chains(P.expand(3000, 4, 2).contiguous(), 40, generator=gen(11))
    ctx = x[:, :-2] * 2 + x[:, 1:-1]  # context (x_{t-1}, x_t)
    for c in range(4):
        nxt = x[:, 2:][ctx == c]
        assert abs(nxt.float().mean().item() - P[0, c, 1].item()) < 0.03
    # the oracle reads P at the current context
    probs = oracle_predictor(x[:2], P.expand(2, 4, 2))
    assert torch.allclose(probs[:, 1:-1], P[0].double()[ctx[:2]])


def test_lift_is_a_stochastic_matrix_on_contexts():
    P = sample_transition_matrices(3, 3, 1.0, order=2, generator=gen(12))
    Q = lift(P)
    assert Q.shape == (3, 9, 9) and torch.allclose(Q.sum(-1), torch.ones(3, 9))


def test_doubly_stochastic_prior_has_uniform_stationary_law():
    P = sample_transition_matrices(50, 4, 1.0, prior="doubly_stochastic", generator=gen(13))
    assert torch.allclose(P.sum(-2), torch.ones(50, 4), atol=1e-4)
    assert torch.allclose(stationary_distribution(P), torch.full((50, 4), 0.25), atol=1e-4)
    with pytest.raises(ValueError, match="order=1"):
        sample_transition_matrices(2, 3, order=2, prior="doubly_stochastic")
    with pytest.raises(ValueError, match="prior must be one of"):
        sample_transition_matrices(2, 3, prior="uniform")
    with pytest.raises(ValueError, match="order m = 3"):
        sample_ngram_chains(sample_transition_matrices(1, 2, order=3), 2)


@pytest.mark.parametrize("p, q, H, unigram", [(0.8, 0.8, 0.7219, 1.0), (0.2, 0.3, 0.7857, 0.9710)])
def test_switching_entropy_rates_match_closed_forms(p, q, H, unigram):
    from seqtheory.sources.markov import switching_entropy_rate, switching_unigram_entropy

    assert switching_entropy_rate(p, q) == pytest.approx(H, abs=5e-5)
    assert switching_unigram_entropy(p, q) == pytest.approx(unigram, abs=5e-5)
    assert switching_entropy_rate(0.8, 0.8, base=math.e) == pytest.approx(0.5004, abs=5e-5)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_switching_process_depends_on_the_bit_k_back(k):
    from seqtheory.sources.markov import sample_switching

    x = sample_switching(400, 200, 0.2, 0.3, order=k, generator=gen(20)).double()
    prev, nxt = x[:, :-k], x[:, k:]
    assert abs(nxt[prev == 0].mean().item() - 0.2) < 0.01  # leave 0 w.p. p
    assert abs(1 - nxt[prev == 1].mean().item() - 0.3) < 0.01  # leave 1 w.p. q
    assert abs(x.mean().item() - 0.2 / 0.5) < 0.01  # stationary pi1 = p / (p + q)
    if k > 1:  # the bit right before carries no information
        a, b = x[:, :-1], x[:, 1:]
        assert abs(b[a == 0].mean().item() - b[a == 1].mean().item()) < 0.02


def test_switching_errors():
    from seqtheory.sources.markov import sample_switching, switching_matrix

    with pytest.raises(ValueError, match="p must be >"):
        switching_matrix(0.0, 0.5)
    with pytest.raises(ValueError, match="q must be <"):
        switching_matrix(0.5, 1.0)
    with pytest.raises(ValueError, match="order must be >= 1"):
        sample_switching(2, 10, 0.5, 0.5, order=0)


def test_graded_prior_mixes_doubly_stochastic_and_iid_chains():
    from seqtheory.sources.markov import graded_batch, sample_graded_matrices

    for k in (2, 3):
        P = sample_graded_matrices(2000, k, 0.3, generator=gen(1), dtype=torch.float64)
        assert torch.allclose(P.sum(-1), torch.ones(2000, k, dtype=P.dtype))
        ds = torch.allclose  # doubly stochastic iff columns sum to 1 as well
        is_ds = torch.tensor([ds(m.sum(0), torch.ones(k, dtype=P.dtype), atol=1e-6) for m in P])
        iid = (P - P[:, :1]).abs().amax((1, 2)) < 1e-12  # identical rows
        assert (is_ds | iid).all() and abs(is_ds.double().mean().item() - 0.3) < 0.04
    P0 = sample_graded_matrices(50, 2, 0.0, generator=gen(2))
    assert torch.equal(P0[:, 0], P0[:, 1])
    P1 = sample_graded_matrices(50, 2, 1.0, generator=gen(2))
    assert torch.allclose(P1.sum(1), torch.ones(50, 2))
    x, P = graded_batch(4, 2, 30, 0.5, generator=gen(3))
    assert x.shape == (4, 30) and P.shape == (4, 2, 2)
    x2, _ = graded_batch(4, 2, 30, 0.5, generator=gen(3))
    assert torch.equal(x, x2)
    with pytest.raises(ValueError, match="p must be"):
        sample_graded_matrices(3, 2, 1.5)


@pytest.mark.parametrize("T", [2, 3, 4, 5, 6, 9, 10, 17, 18, 33, 34, 66])
def test_doubling_sampler_equals_a_step_by_step_walk_for_every_length(T):
    """Lengths around powers of two (T - 1 and T - 2 a power of two) catch an off-by-one in
    the doubling loop's bound, which only shows there."""
    P = sample_transition_matrices(5, 3, 1.0, generator=gen(T))
    start = torch.tensor([0, 1, 2, 0, 1])
    x = sample_chains(P, T, start=start, generator=gen(100 + T))
    u = torch.rand(5, T - 1, 1, 1, generator=gen(100 + T), dtype=torch.float64)
    cdf = P.double().cumsum(-1)
    cdf[..., -1] = 1.0 + 1e-9
    state = start.clone()
    assert x.shape == (5, T) and torch.equal(x[:, 0], start)
    for t in range(T - 1):
        state = (cdf[torch.arange(5), state] <= u[:, t, 0]).sum(-1).clamp_max(2)
        assert torch.equal(state, x[:, t + 1]), f"T={T}, step {t + 1}"


@pytest.mark.parametrize("alpha", [0.25, 3.0])
def test_strategies_use_the_prior_alpha_for_the_bayes_rule_only(alpha):
    """The Bayes n-gram (n = order + 1) uses the prior's alpha; lower n-grams use alpha = 1."""
    x, P = icl_mc_batch(4, 3, 20, alpha, generator=gen(9))
    out = strategies(x, P, alpha)
    assert torch.allclose(out["bigram"], bigram_predictor(x, 3, alpha))
    assert not torch.allclose(out["bigram"], bigram_predictor(x, 3, 1.0))
    assert torch.allclose(out["unigram"], unigram_predictor(x, 3))


def test_samplers_draw_where_the_generator_lives():
    # every sampler makes its tensors on the generator's device (a CUDA generator gives CUDA
    # batches; here the CPU); a generator on another device than the chains is refused with
    # a ValueError naming the generator, not a deep torch error
    from seqtheory.sources.markov import (
        _check_generator_device,
        graded_batch,
        icl_mc_batch,
        sample_switching,
    )

    g = torch.Generator().manual_seed(0)
    for x, P in (
        icl_mc_batch(3, 3, 8, generator=g),
        icl_mc_batch(3, 2, 8, order=2, generator=g),
        graded_batch(3, 3, 8, 0.5, generator=g),
    ):
        assert x.device == P.device == g.device
    assert sample_switching(2, 9, 0.3, 0.6, order=2, generator=g).device == g.device
    with pytest.raises(ValueError, match="generator is on cpu"):
        _check_generator_device(g, torch.device("meta"))

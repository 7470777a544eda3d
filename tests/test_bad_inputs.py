"""Bad input meets a clear library error (ValueError/TypeError naming the argument), never a
silent wrong answer, a hang, a huge allocation or an error from deep inside torch/NumPy.

Each case: (a call with bad input, the error type, a phrase the message must contain)."""
from __future__ import annotations

import pytest
import torch

from seqtheory import markov, models, tokenization, training
from seqtheory.incontext import ICLSetup
from seqtheory.utils import check_device, seed_everything

ids = torch.zeros(2, 5, dtype=torch.long)
small = models.TransformerConfig(vocab_size=3, max_len=10, n_layers=1, d_model=8)

CASES = {
    "kl_divergence, unnormalised p": (
        lambda: markov.kl_divergence(torch.tensor([0.5, 0.9]), torch.tensor([0.5, 0.5])),
        ValueError, "p must hold distributions"),
    "kl_divergence, negative q": (
        lambda: markov.kl_divergence(torch.tensor([0.5, 0.5]), torch.tensor([1.5, -0.5])),
        ValueError, "q must hold distributions"),
    "kl_divergence, not tensors": (
        lambda: markov.kl_divergence([0.5, 0.5], [0.5, 0.5]), TypeError, "torch tensors"),
    "sample_chains, start out of range": (
        lambda: markov.sample_chains(torch.full((2, 3, 3), 1 / 3), 5, start=torch.tensor([5, 0])),
        ValueError, "start must hold integer states in 0..2"),
    "sample_chains, float start": (
        lambda: markov.sample_chains(torch.full((2, 3, 3), 1 / 3), 5,
                                     start=torch.tensor([0.5, 1.0])),
        ValueError, "start must hold integer states"),
    "sample_chains, reducible chain without start": (
        lambda: markov.sample_chains(torch.eye(3)[None], 5), ValueError, "reducible"),
    "BPE.decode, float ids": (
        lambda: tokenization.BPE(2).decode([0.7, 1.2]), TypeError, "integer token ids"),
    "ngram_predictor, huge n": (
        lambda: markov.ngram_predictor(torch.zeros(64, 100, dtype=torch.long), 3, n=10),
        ValueError, "smaller n"),
    "unigram_cross_entropy, negative test id": (
        lambda: tokenization.unigram_cross_entropy([0, 1], [-1, 0], 2, 2),
        ValueError, "test_ids must be integer token ids in 0..1"),
    "unigram_cross_entropy, train id >= vocab_size": (
        lambda: tokenization.unigram_cross_entropy([0, 5], [0, 1], 2, 2),
        ValueError, "train_ids must be integer token ids in 0..1"),
    "unigram_cross_entropy, float ids": (
        lambda: tokenization.unigram_cross_entropy([0.0, 1.0], [0, 1], 2, 2),
        ValueError, "train_ids must be integer"),
    "unigram_cross_entropy, negative smoothing": (
        lambda: tokenization.unigram_cross_entropy([0, 1], [0, 1], 2, 2, smoothing=-1.0),
        ValueError, "smoothing"),
    "FixedBlocks, r too large": (
        lambda: tokenization.FixedBlocks(24), ValueError, "at most 2**16"),
    "TrainConfig, warmup beyond steps": (
        lambda: training.TrainConfig(steps=10, warmup=100), ValueError, "warmup (100)"),
    "TrainConfig, beta1 >= 1": (
        lambda: training.TrainConfig(betas=(1.2, 0.9)), ValueError, "betas[0]"),
    "TrainConfig, one beta": (
        lambda: training.TrainConfig(betas=(0.9,)), TypeError, "betas must be a pair"),
    "ICLSetup, k = 1": (lambda: ICLSetup(k=1), ValueError, "k must be >= 2"),
    "ICLSetup, unknown prior": (lambda: ICLSetup(prior="foo"), ValueError, "prior must be"),
    "ICLSetup, graded prior of order 2": (
        lambda: ICLSetup(prior="graded", order=2), ValueError, "needs order=1"),
    "ICLSetup, ds_fraction > 1": (
        lambda: ICLSetup(prior="graded", ds_fraction=1.5), ValueError, "ds_fraction"),
    "ICLSetup, heads do not divide d_model": (
        lambda: ICLSetup(d_model=15, n_heads=2), ValueError, "divisible by n_heads"),
    "ICLSetup, lr 0": (lambda: ICLSetup(lr=0.0), ValueError, "lr"),
    "Transformer, empty batch": (
        lambda: models.Transformer(small)(torch.zeros(0, 5, dtype=torch.long)),
        ValueError, "at least one sequence"),
    "TransformerConfig, max_len too large": (
        lambda: models.TransformerConfig(vocab_size=3, max_len=20000,
                                         pos_encoding="relative"),
        ValueError, "max_len must be at most"),
    "seed_everything, seed beyond 2**63": (
        lambda: seed_everything(2**64), ValueError, "seed"),
    "check_device, unknown device": (
        lambda: check_device("device", "gpu0"), ValueError, "device must name"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_gets_a_clear_error(name):
    call, kind, phrase = CASES[name]
    with pytest.raises(kind) as err:
        call()
    assert phrase in str(err.value), str(err.value)


def test_small_alpha_dirichlet_rows_are_peaked_not_uniform():
    """alpha = 1e-4: Gamma draws underflow; rows must still be (nearly) one-hot with the
    Dirichlet's mean, not clamped to uniform."""
    g = torch.Generator().manual_seed(0)
    P = markov.sample_transition_matrices(2000, 3, alpha=1e-4, generator=g).double()
    assert torch.allclose(P.sum(-1), torch.ones(()).double(), atol=1e-6)
    assert float(P.max(-1).values.mean()) > 0.99            # was 0.46: 81% uniform rows
    assert abs(float(P.mean()) - 1 / 3) < 0.02


def test_dirichlet_moments_for_alpha_below_one():
    """E[P_ij] = 1/k and Var = (1/k)(1 - 1/k) / (k alpha + 1) for Dirichlet(alpha) rows."""
    g = torch.Generator().manual_seed(1)
    P = markov.sample_transition_matrices(20000, 3, alpha=0.5, generator=g).double()
    var = (1 / 3) * (2 / 3) / (3 * 0.5 + 1)
    assert abs(float(P.mean()) - 1 / 3) < 0.005
    assert abs(float(P.var()) - var) < 0.005 * 3

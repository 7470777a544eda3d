"""Bad input meets a clear library error (ValueError/TypeError naming the argument), never a
silent wrong answer, a hang, a huge allocation or an error from deep inside torch/NumPy.

Each case: (a call with bad input, the error type, a phrase the message must contain)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqtheory import chain_of_thought, parity, partitions, similarity, tokenization
from seqtheory.core import models, training
from seqtheory.core.runtime import check_device
from seqtheory.core.seeds import seed_everything
from seqtheory.incontext import ICLSetup
from seqtheory.sources import markov

ids = torch.zeros(2, 5, dtype=torch.long)
small = models.TransformerConfig(vocab_size=3, max_len=10, n_layers=1, d_model=8)

CASES = {
    "kl_divergence, unnormalised p": (
        lambda: markov.kl_divergence(torch.tensor([0.5, 0.9]), torch.tensor([0.5, 0.5])),
        ValueError,
        "p must hold distributions",
    ),
    "kl_divergence, negative q": (
        lambda: markov.kl_divergence(torch.tensor([0.5, 0.5]), torch.tensor([1.5, -0.5])),
        ValueError,
        "q must hold distributions",
    ),
    "kl_divergence, not tensors": (
        lambda: markov.kl_divergence([0.5, 0.5], [0.5, 0.5]),
        TypeError,
        "torch tensors",
    ),
    "sample_chains, start out of range": (
        lambda: markov.sample_chains(torch.full((2, 3, 3), 1 / 3), 5, start=torch.tensor([5, 0])),
        ValueError,
        "start must hold integer states in 0..2",
    ),
    "sample_chains, float start": (
        lambda: markov.sample_chains(
            torch.full((2, 3, 3), 1 / 3), 5, start=torch.tensor([0.5, 1.0])
        ),
        ValueError,
        "start must hold integer states",
    ),
    "sample_chains, reducible chain without start": (
        lambda: markov.sample_chains(torch.eye(3)[None], 5),
        ValueError,
        "reducible",
    ),
    "BPE.decode, float ids": (
        lambda: tokenization.BPE(2).decode([0.7, 1.2]),
        TypeError,
        "integer token ids",
    ),
    "ngram_predictor, huge n": (
        lambda: markov.ngram_predictor(torch.zeros(64, 100, dtype=torch.long), 3, n=10),
        ValueError,
        "smaller n",
    ),
    "unigram_cross_entropy, negative test id": (
        lambda: tokenization.unigram_cross_entropy([0, 1], [-1, 0], 2, 2),
        ValueError,
        "test_ids must be integer token ids in 0..1",
    ),
    "unigram_cross_entropy, train id >= vocab_size": (
        lambda: tokenization.unigram_cross_entropy([0, 5], [0, 1], 2, 2),
        ValueError,
        "train_ids must be integer token ids in 0..1",
    ),
    "unigram_cross_entropy, float ids": (
        lambda: tokenization.unigram_cross_entropy([0.0, 1.0], [0, 1], 2, 2),
        ValueError,
        "train_ids must be integer",
    ),
    "unigram_cross_entropy, negative smoothing": (
        lambda: tokenization.unigram_cross_entropy([0, 1], [0, 1], 2, 2, smoothing=-1.0),
        ValueError,
        "smoothing",
    ),
    "FixedBlocks, r too large": (lambda: tokenization.FixedBlocks(24), ValueError, "at most 2**16"),
    "TrainConfig, warmup beyond steps": (
        lambda: training.TrainConfig(steps=10, warmup=100),
        ValueError,
        "warmup (100)",
    ),
    "TrainConfig, beta1 >= 1": (
        lambda: training.TrainConfig(betas=(1.2, 0.9)),
        ValueError,
        "betas[0]",
    ),
    "TrainConfig, one beta": (
        lambda: training.TrainConfig(betas=(0.9,)),
        TypeError,
        "betas must be a pair",
    ),
    "ICLSetup, k = 1": (lambda: ICLSetup(k=1), ValueError, "k must be >= 2"),
    "ICLSetup, unknown prior": (lambda: ICLSetup(prior="foo"), ValueError, "prior must be"),
    "ICLSetup, graded prior of order 2": (
        lambda: ICLSetup(prior="graded", order=2),
        ValueError,
        "needs order=1",
    ),
    "ICLSetup, ds_fraction > 1": (
        lambda: ICLSetup(prior="graded", ds_fraction=1.5),
        ValueError,
        "ds_fraction",
    ),
    "ICLSetup, heads do not divide d_model": (
        lambda: ICLSetup(d_model=15, n_heads=2),
        ValueError,
        "divisible by n_heads",
    ),
    "ICLSetup, lr 0": (lambda: ICLSetup(lr=0.0), ValueError, "lr"),
    "Transformer, empty batch": (
        lambda: models.Transformer(small)(torch.zeros(0, 5, dtype=torch.long)),
        ValueError,
        "at least one sequence",
    ),
    "TransformerConfig, max_len too large": (
        lambda: models.TransformerConfig(vocab_size=3, max_len=20000, pos_encoding="relative"),
        ValueError,
        "max_len must be at most",
    ),
    "seed_everything, seed beyond 2**63": (lambda: seed_everything(2**64), ValueError, "seed"),
    "check_device, unknown device": (
        lambda: check_device("device", "gpu0"),
        ValueError,
        "device must name",
    ),
    "kmeans, a NaN point": (
        lambda: partitions.kmeans(np.array([[0.0, 1.0], [np.nan, 1.0], [3.0, 3.0]]), 2),
        ValueError,
        "points must be finite",
    ),
    "kmeans, 1-D points": (
        lambda: partitions.kmeans(np.array([0.0, 1.0, 2.0]), 2),
        ValueError,
        "(N, m)",
    ),
    "encode_cnf, float token ids": (
        lambda: partitions.encode_cnf(np.array([[0.5, 1.5]]), np.array([1]), 4, 2),
        TypeError,
        "integer token ids",
    ),
    "linear_cka, constant X": (
        lambda: similarity.linear_cka(np.ones((10, 3)), np.arange(30.0).reshape(10, 3) ** 2),
        ValueError,
        "constant",
    ),
    "debiased_cka, constant Y": (
        lambda: similarity.debiased_cka(np.arange(30.0).reshape(10, 3) ** 2, np.ones((10, 2))),
        ValueError,
        "constant",
    ),
    "parity_labels, 0/1 inputs": (
        lambda: parity.parity_labels(torch.tensor([[0.0, 1.0, 1.0]]), [0, 1]),
        ValueError,
        "+1 or -1",
    ),
    "ParityMLPs, no widths": (
        lambda: parity.ParityMLPs(10, [], generator=torch.Generator()),
        ValueError,
        "at least one network",
    ),
    "NextTokenNet, token beyond the vocabulary": (
        lambda: chain_of_thought.NextTokenNet(4, vocab=2, hidden=4, models=1)(
            torch.tensor([[[0, 1, 5, 0]]])
        ),
        ValueError,
        "token ids in 0..1",
    ),
    "next_token_loss, targets of another shape": (
        lambda: training.next_token_loss(torch.zeros(2, 5, 3), torch.zeros(2, 4).long()),
        ValueError,
        "shape of logits",
    ),
    "next_token_loss, target beyond the vocabulary": (
        lambda: training.next_token_loss(torch.zeros(2, 5, 3), torch.full((2, 5), 7)),
        ValueError,
        "token ids in 0..2",
    ),
    "LZW.train, more entries than the data fill": (
        lambda: tokenization.LZW.train(np.array([0, 1] * 10), 1000),
        ValueError,
        "more than the data can fill",
    ),
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
    assert float(P.max(-1).values.mean()) > 0.99  # clamped rows would give about 0.46
    assert abs(float(P.mean()) - 1 / 3) < 0.02


def test_dirichlet_moments_for_alpha_below_one():
    """E[P_ij] = 1/k and Var = (1/k)(1 - 1/k) / (k alpha + 1) for Dirichlet(alpha) rows."""
    g = torch.Generator().manual_seed(1)
    P = markov.sample_transition_matrices(20000, 3, alpha=0.5, generator=g).double()
    var = (1 / 3) * (2 / 3) / (3 * 0.5 + 1)
    assert abs(float(P.mean()) - 1 / 3) < 0.005
    assert abs(float(P.var()) - var) < 0.005 * 3


def test_twonn_keeps_every_ratio_but_the_last_without_discard():
    # discard=0 used to fit log(1 - F) = -inf at the largest ratio and return inf
    from seqtheory.sources.dimension import sample_sphere, twonn_dimension

    X = sample_sphere(2000, 2, 5, seed=0)
    d = twonn_dimension(X, discard=0.0)
    assert np.isfinite(d) and abs(d - 2) < 0.3, d


def test_stitch_refuses_a_nan_source():
    # a NaN source ended in an MKL error and a PyTorch INTERNAL ASSERT
    from seqtheory.kinship import train_kinship
    from seqtheory.sources.knowledge_graphs import FamilyForest, kinship_data

    data = kinship_data(FamilyForest.generate(1, 3, (2, 2)), 0.8)
    zoo, _ = train_kinship(data, (2,), (0,), steps=2, progress=False)
    with pytest.raises(ValueError, match="finite"):
        similarity.stitch([torch.full((data.n_people, 2), float("nan"))], zoo, data, steps=2)

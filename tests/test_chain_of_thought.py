"""Unit tests for seqtheory.chain_of_thought: chain formats, the linear AR model."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.chain_of_thought import (
    FORMATS,
    CoTSetup,
    NextTokenNet,
    all_bit_strings,
    answer_accuracy,
    chain_length,
    generate,
    multiplication_chain,
    parity_chain,
    train_chain_models,
)


@given(n=st.integers(1, 10), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_every_chain_ends_in_the_parity_and_has_its_length(n, seed):
    x = torch.randint(0, 2, (20, n), generator=torch.Generator().manual_seed(seed))
    for fmt in FORMATS:
        seq = parity_chain(x, fmt)
        assert seq.shape == (20, n + chain_length(n, fmt))
        assert torch.equal(seq[:, -1], x.sum(dim=1) % 2)
        assert torch.equal(seq[:, :n], x)


def test_threshold_chain_steps_are_threshold_gates():
    x = all_bit_strings(6)
    seq = parity_chain(x, "threshold")[:, 6:]
    c, p = seq[:, 0::2], seq[:, 1::2]
    prev = torch.cat([torch.zeros_like(p[:, :1]), p[:, :-1]], dim=1)
    assert torch.equal(c, ((prev + x) >= 2).long())
    assert torch.equal(p, ((prev + x - 2 * c) >= 1).long())


def test_linear_model_is_causal_and_batched_models_are_independent():
    torch.manual_seed(0)
    model = NextTokenNet(8, models=2)
    x = torch.randint(0, 2, (4, 8))
    x2 = x.clone()
    x2[:, 5:] = 1 - x2[:, 5:]
    assert torch.allclose(model(x)[:, :, :5], model(x2)[:, :, :5])
    single = NextTokenNet(8, models=1)
    with torch.no_grad():
        single.w.copy_(model.w[1:])
        single.b.copy_(model.b[1:])
    assert torch.allclose(single(x)[0], model(x)[1])
    with pytest.raises(ValueError, match="idx must be"):
        model(torch.zeros(2, 9, dtype=torch.long))


def test_a_linear_model_learns_the_threshold_chain_of_a_short_parity():
    x = all_bit_strings(4)
    setup = CoTSetup(n=4, seeds=2, steps=300, batch_size=64)
    model = train_chain_models("threshold", None, x, setup,
                               generator=torch.Generator().manual_seed(0), progress=False)
    assert answer_accuracy(model, x, "threshold").min() == 1.0
    assert generate(model, x[:3], 8).shape == (2, 3, 8)


def test_helpers_and_errors():
    assert all_bit_strings(3).tolist()[5] == [1, 0, 1]
    assert "answer: 5535" in multiplication_chain(123, 45)
    with pytest.raises(ValueError, match="fmt must be one of"):
        chain_length(4, "scratchpad")
    with pytest.raises(ValueError, match="n must be <= 20"):
        all_bit_strings(25)

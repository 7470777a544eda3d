"""Unit tests for the multiplication part of seqtheory.chain_of_thought."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.chain_of_thought import (
    MULT_FORMATS,
    MultSetup,
    NextTokenNet,
    multiplication_accuracy,
    multiplication_length,
    multiplication_split,
    multiplication_step_accuracy,
    multiplication_tokens,
    train_multiplication_models,
)


def _number(digits: torch.Tensor) -> torch.Tensor:
    """(B,) value of (B, w) decimal digits, most significant first."""
    return (digits * 10 ** torch.arange(digits.shape[1] - 1, -1, -1)).sum(dim=1)


def test_worked_example():
    a, b = torch.tensor([47]), torch.tensor([86])
    assert multiplication_tokens(a, b, 2, "none").tolist() == [[4, 7, 8, 6, 4, 0, 4, 2]]
    assert multiplication_tokens(a, b, 2, "products").tolist() == [
        [4, 7, 8, 6, 4, 2, 5, 6, 2, 4, 3, 2, 4, 0, 4, 2]
    ]
    # 42, 56, 42 + 560 = 602, 24, 602 + 240 = 842, 32, 842 + 3200 = 4042
    assert multiplication_tokens(a, b, 2, "sums").tolist() == [
        [4, 7, 8, 6, 4, 2, 5, 6, 6, 0, 2, 2, 4, 0, 8, 4, 2, 3, 2, 4, 0, 4, 2]
    ]


@given(digits=st.integers(1, 3), seed=st.integers(0, 1000))
@settings(max_examples=25, deadline=None)
def test_sequences_hold_the_prompt_the_products_and_the_answer(digits, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, 10**digits, (30,), generator=g)
    b = torch.randint(0, 10**digits, (30,), generator=g)
    D = digits
    for fmt in MULT_FORMATS:
        seq = multiplication_tokens(a, b, D, fmt)
        assert seq.shape == (30, 2 * D + multiplication_length(D, fmt))
        assert seq.min() >= 0 and seq.max() <= 9
        assert torch.equal(_number(seq[:, :D]), a) and torch.equal(_number(seq[:, D : 2 * D]), b)
        assert torch.equal(_number(seq[:, -2 * D :]), a * b)
    prod = multiplication_tokens(a, b, D, "products")[:, 2 * D : -2 * D]  # (B, 2 D*D)
    pairs = [(a // 10**i % 10) * (b // 10**j % 10) for i in range(D) for j in range(D)]
    for k, p in enumerate(pairs):
        assert torch.equal(_number(prod[:, 2 * k : 2 * k + 2]), p)
    # the running sums add one shifted product at a time
    sums = multiplication_tokens(a, b, D, "sums")[:, 2 * D : -2 * D]
    pos, total = 0, torch.zeros_like(a)
    scales = [10 ** (i + j) for i in range(D) for j in range(D)]
    for k, (p, s) in enumerate(zip(pairs, scales, strict=True)):
        assert torch.equal(_number(sums[:, pos : pos + 2]), p)
        pos, total = pos + 2, total + p * s
        if 1 <= k < D * D - 1:
            width = len(str(sum(81 * t for t in scales[: k + 1])))
            assert torch.equal(_number(sums[:, pos : pos + width]), total)
            pos += width
    assert pos == sums.shape[1]


def test_lengths():
    assert [multiplication_length(2, f) for f in MULT_FORMATS] == [4, 12, 19]
    assert multiplication_length(1, "sums") == multiplication_length(1, "products") == 4


def test_split_covers_every_pair_once():
    setup = MultSetup(digits=2)
    a, b, at, bt = multiplication_split(setup, generator=torch.Generator().manual_seed(0))
    assert len(a) == 6075 and len(at) == 2025
    keys = torch.cat([a * 100 + b, at * 100 + bt])
    assert len(torch.unique(keys)) == 8100 and a.min() >= 10 and a.max() <= 99
    again = multiplication_split(setup, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again[0], a) and torch.equal(again[3], bt)


def test_training_is_seeded_and_learns_one_digit_products():
    setup = MultSetup(digits=1, train_frac=0.9, seeds=2, hidden=16, batch_size=64, steps=300)
    a = torch.arange(10).repeat_interleave(10)
    b = torch.arange(10).repeat(10)
    runs = [
        train_multiplication_models(
            a, b, setup, "products", generator=torch.Generator().manual_seed(0), progress=False
        )[0]
        for _ in range(2)
    ]
    assert torch.equal(runs[0].w, runs[1].w)  # same seed, same bits
    assert multiplication_accuracy(runs[0], a, b, 1, "products").min() >= 0.95
    steps = multiplication_step_accuracy(runs[0], a, b, 1, "products")
    assert steps.shape == (2, multiplication_length(1, "products"))


def test_errors():
    a = torch.tensor([12, 34])
    with pytest.raises(ValueError, match="fmt must be one of"):
        multiplication_tokens(a, a, 2, "scratchpad")
    with pytest.raises(ValueError, match="a and b must lie in"):
        multiplication_tokens(torch.tensor([123]), torch.tensor([1]), 2)
    with pytest.raises(TypeError, match="a and b must be"):
        multiplication_tokens(a, torch.tensor([1]), 2)
    with pytest.raises(ValueError, match="train_frac must be in"):
        MultSetup(train_frac=1.0)
    with pytest.raises(ValueError, match="hidden must be"):
        MultSetup(hidden=0)
    with pytest.raises(TypeError, match="setup must be a MultSetup"):
        multiplication_split(dict(digits=2))
    with pytest.raises(ValueError, match="model must be a 10-token NextTokenNet"):
        multiplication_accuracy(NextTokenNet(7, vocab=10), a, a, 2, "products")
    with pytest.raises(TypeError, match="model must be a NextTokenNet"):
        multiplication_step_accuracy(torch.nn.Linear(2, 2), a, a, 2, "none")


def test_generator_draws_the_initial_weights():
    g = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    m1, m2 = NextTokenNet(5, hidden=4, generator=g()), NextTokenNet(5, hidden=4, generator=g())
    assert torch.equal(m1.w, m2.w) and torch.equal(m1.out, m2.out)


@pytest.mark.parametrize("fmt", MULT_FORMATS)
def test_step_accuracy_of_a_constant_model_is_each_positions_token_frequency(fmt):
    # a linear model that ignores its input and always predicts token k (model m: k = m):
    # its teacher-forced accuracy at written position p is the frequency of k among the
    # p-th tokens after the prompt -- column 0 is the first token after the prompt
    g = torch.Generator().manual_seed(1)
    a = torch.randint(10, 100, (400,), generator=g)
    b = torch.randint(10, 100, (400,), generator=g)
    seqs = multiplication_tokens(a, b, 2, fmt)
    model = NextTokenNet(seqs.shape[1] - 1, vocab=10, models=10)
    with torch.no_grad():
        model.w.zero_()
        model.b.zero_()
        model.b[torch.arange(10), :, torch.arange(10)] = 1.0  # model m always says m
    got = multiplication_step_accuracy(model, a, b, 2, fmt)  # (10, written tokens)
    written = seqs[:, 4:]  # (B, written tokens)
    want = (written[None] == torch.arange(10)[:, None, None]).float().mean(dim=1)
    assert got.shape == (10, multiplication_length(2, fmt))
    assert torch.allclose(got, want)
    # the prompt's tokens (never 0 in the leading digits) would give other numbers
    shifted = (seqs[None, :, 3:-1] == torch.arange(10)[:, None, None]).float().mean(dim=1)
    assert not torch.allclose(got, shifted)


TINY = MultSetup(digits=1, train_frac=0.8, seeds=2, hidden=4, batch_size=16, steps=5)


def test_run_multiplication_is_deterministic_and_leaves_the_global_rng_alone():
    from seqtheory.chain_of_thought import MultResult, run_multiplication

    state = torch.random.get_rng_state()
    r1 = run_multiplication(TINY, seed=2, device="cpu", progress=False)
    assert torch.equal(torch.random.get_rng_state(), state)
    r2 = run_multiplication(TINY, seed=2, device="cpu", progress=False)
    assert isinstance(r1, MultResult) and r1.device == "cpu" and r1.seed == 2
    assert len(r1.a_train) == 65 and len(r1.a_test) == 16  # 81 pairs of 1..9
    for fmt in MULT_FORMATS:
        assert torch.equal(r1.models[fmt].w, r2.models[fmt].w)
        assert (r1.test_acc[fmt] == r2.test_acc[fmt]).all() and r1.train_acc[fmt].shape == (2,)
        assert r1.step_acc[fmt].shape == (2, multiplication_length(1, fmt))
    assert torch.equal(r1.a_test, r2.a_test)


def test_run_multiplication_draws_from_its_named_stream():
    from seqtheory.chain_of_thought import STREAMS, run_multiplication
    from seqtheory.core.experiment import Experiment, RunInfo
    from seqtheory.core.seeds import make_generator

    assert STREAMS.seed("products") == 1
    r = run_multiplication(TINY, Experiment.make(seed=2, progress=False))
    assert isinstance(r, RunInfo) and (r.setup, r.seed, r.device) == (TINY, 2, "cpu")
    split = multiplication_split(TINY, generator=make_generator(1, base=2))
    assert all(
        torch.equal(x, y)
        for x, y in zip((r.a_train, r.b_train, r.a_test, r.b_test), split, strict=True)
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_run_multiplication_refuses_an_unavailable_device():
    from seqtheory.chain_of_thought import run_multiplication

    with pytest.raises(ValueError, match="device"):
        run_multiplication(TINY, seed=0, device="cuda", progress=False)

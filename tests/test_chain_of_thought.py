"""Unit tests for seqtheory.chain_of_thought: chain formats, the linear AR model."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.chain_of_thought import (
    FORMATS,
    SUPPORT_FORMATS,
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


def test_binary_and_unary_chains_are_threshold_gates():
    n = 7
    x = all_bit_strings(n)
    count = x.sum(dim=1)
    b = parity_chain(x, "binary")[:, n:]  # MSB first, 3 digits for n=7
    assert chain_length(n, "binary") == 3 == b.shape[1]
    assert chain_length(12, "binary") == 4 and chain_length(15, "binary") == 4
    assert chain_length(16, "binary") == 5
    assert torch.equal(b[:, 0] * 4 + b[:, 1] * 2 + b[:, 2], count)
    assert torch.equal(b[:, 1], ((count - 4 * b[:, 0]) >= 2).long())
    u = parity_chain(x, "unary")[:, n:]
    signs = torch.tensor([(-1) ** j for j in range(n)])  # u_1 - u_2 + u_3 - ...
    assert torch.equal(u[:, :n], (count[:, None] >= torch.arange(1, n + 1)).long())
    assert torch.equal(u[:, -1], ((u[:, :n] * signs).sum(dim=1) >= 1).long())


def test_shared_weights_depend_only_on_the_distance():
    torch.manual_seed(0)
    model = NextTokenNet(6, models=2, shared=True)  # linear, tied weights
    assert model.w.shape == (2, 6, 2, 2) and model.b.shape == (2, 1, 2)
    x = torch.randint(0, 2, (5, 6))
    onehot = torch.nn.functional.one_hot(x, 2).float()  # (B, T, V)
    with torch.no_grad():
        want = torch.stack(
            [
                torch.stack(
                    [
                        model.b[m, 0] + sum(onehot[:, s] @ model.w[m, t - s] for s in range(t + 1))
                        for t in range(6)
                    ],
                    dim=1,
                )
                for m in range(2)
            ]
        )  # (M, B, T, V)
    assert torch.allclose(model(x), want, atol=1e-6)
    mlp = NextTokenNet(6, hidden=3, models=2, shared=True)
    assert mlp.out.shape == (2, 1, 3, 2) and mlp(x).shape == (2, 5, 6, 2)
    with pytest.raises(TypeError, match="shared must be a bool"):
        NextTokenNet(6, shared=1)


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
    setup = CoTSetup(n=4, seeds=2, steps=300, batch_size=64, train_size=8)
    model, hist = train_chain_models(
        "threshold", None, x, setup, generator=torch.Generator().manual_seed(0), progress=False
    )
    assert answer_accuracy(model, x, "threshold").min() == 1.0
    assert generate(model, x[:3], 8).shape == (2, 3, 8)
    assert len(hist.loss) == 300


def test_generate_is_the_shared_greedy_decoder():
    from seqtheory.core.decode import greedy_decode

    model = NextTokenNet(9, hidden=4, models=2, generator=torch.Generator().manual_seed(1))
    x = all_bit_strings(5)[:7]
    # the same loop by hand: append each model's argmax at the last position
    seqs = x[None].expand(2, -1, -1)
    with torch.no_grad():
        for _ in range(4):
            seqs = torch.cat([seqs, model(seqs)[:, :, -1].argmax(-1, keepdim=True)], dim=2)
    assert torch.equal(generate(model, x, 4), seqs[:, :, 5:])
    assert model.training  # mode restored
    assert greedy_decode(model, x[None].expand(2, -1, -1), 4, stop=0).shape[-1] <= 4
    with pytest.raises(TypeError, match="model must be a NextTokenNet"):
        generate(torch.nn.Linear(2, 2), x, 2)


@pytest.mark.parametrize("hidden", [None, 6])
@pytest.mark.parametrize("shared", [False, True])
def test_next_logits_are_the_forward_pass_at_the_last_position(hidden, shared):
    model = NextTokenNet(
        9,
        vocab=3,
        hidden=hidden,
        models=2,
        shared=shared,
        generator=torch.Generator().manual_seed(2),
    )
    with torch.no_grad():
        model.b.normal_(generator=torch.Generator().manual_seed(3))  # position-dependent
        for T in (1, 4, 9):
            ids = torch.randint(0, 3, (2, 5, T), generator=torch.Generator().manual_seed(T))
            torch.testing.assert_close(
                model.next_logits(ids), model(ids)[:, :, -1], rtol=1e-6, atol=1e-6
            )
            torch.testing.assert_close(
                model.next_logits(ids[0]), model(ids[0])[:, :, -1], rtol=1e-6, atol=1e-6
            )
    with pytest.raises(ValueError, match="idx must be"):
        model.next_logits(torch.zeros(2, 5, 10, dtype=torch.long))  # longer than seq_len
    with pytest.raises(ValueError, match="idx must be"):
        model.next_logits(torch.zeros(3, 5, 4, dtype=torch.long))  # 3 models, not 2


def test_answer_accuracy_in_chunks_equals_one_batch(monkeypatch):
    import seqtheory.chain_of_thought as cot

    model = NextTokenNet(12, hidden=5, models=3, generator=torch.Generator().manual_seed(4))
    x = all_bit_strings(6)
    whole = answer_accuracy(model, x, "running")
    monkeypatch.setattr(cot, "_EVAL_CHUNK", 7)  # 64 strings in 10 chunks
    assert torch.equal(answer_accuracy(model, x, "running"), whole)
    assert 0 < whole.max() and whole.min() < 1  # not a constant answer


TINY = CoTSetup(n=4, seeds=2, hidden=4, train_size=10, batch_size=8, steps=5, long_factor=2)


def test_chain_models_are_seeded_and_leave_the_global_rng_alone():
    state = torch.random.get_rng_state()
    x = all_bit_strings(4)
    m1, _ = train_chain_models(
        "binary", 3, x, TINY, generator=torch.Generator().manual_seed(2), progress=False
    )
    m2, _ = train_chain_models(
        "binary", 3, x, TINY, generator=torch.Generator().manual_seed(2), progress=False
    )
    assert torch.equal(m1.w, m2.w) and torch.equal(m1.out, m2.out)
    NextTokenNet(6, hidden=3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(torch.random.get_rng_state(), state)


def test_run_is_deterministic_and_returns_every_row():
    from seqtheory.chain_of_thought import CoTResult, run

    state = torch.random.get_rng_state()
    r1 = run(TINY, seed=3, device="cpu", progress=False)
    assert torch.equal(torch.random.get_rng_state(), state)
    r2 = run(TINY, seed=3, device="cpu", progress=False)
    assert isinstance(r1, CoTResult) and r1.device == "cpu" and r1.seed == 3
    assert set(r1.models) == {(f, k) for f in FORMATS for k in ("linear", "MLP")}
    assert r1.train_x.shape == (10, 4) and r1.test_x.shape == (6, 4)
    assert torch.equal(
        torch.sort(torch.cat([r1.train_x, r1.test_x]) @ (2 ** torch.arange(4)))[0], torch.arange(16)
    )
    for key, model in r1.models.items():
        assert torch.equal(model.w, r2.models[key].w)
        assert r1.test_acc[key].shape == (2,)
        assert (r1.test_acc[key] == r2.test_acc[key]).all()
        assert len(r1.histories[key].loss) == 5
    assert r1.binary_long_test.shape == (2,)
    assert set(r1.shared_test) == {("threshold", "MLP")} | {(f, "linear") for f in FORMATS}
    assert r1.support.shape == (TINY.subset_size,) == (2,) and (np.diff(r1.support) > 0).all()
    assert set(r1.support_test) == set(SUPPORT_FORMATS)
    assert (r1.support == r2.support).all() and all(
        (r1.support_test[f] == r2.support_test[f]).all() for f in SUPPORT_FORMATS
    )
    r3 = run(TINY, seed=4, progress=False)
    assert not torch.equal(r3.models[("none", "linear")].w, r1.models[("none", "linear")].w)


def test_run_draws_from_its_named_stream():
    from seqtheory.chain_of_thought import STREAMS, run
    from seqtheory.core.experiment import Experiment, RunInfo
    from seqtheory.core.seeds import make_generator

    assert {n: STREAMS.seed(n) for n in STREAMS.names} == {"parity": 0, "products": 1}
    r = run(TINY, Experiment.make(seed=3, progress=False))
    assert isinstance(r, RunInfo) and (r.setup, r.seed, r.device) == (TINY, 3, "cpu")
    order = torch.randperm(16, generator=make_generator(0, base=3))
    assert torch.equal(r.train_x, all_bit_strings(4)[order][:10])


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_run_refuses_an_unavailable_device():
    from seqtheory.chain_of_thought import run

    with pytest.raises(ValueError, match="device"):
        run(TINY, seed=0, device="cuda", progress=False)


def test_setup_validation():
    from seqtheory.chain_of_thought import run

    with pytest.raises(ValueError, match="train_size must leave test strings"):
        CoTSetup(n=4, train_size=16)
    with pytest.raises(ValueError, match="lr must be"):
        CoTSetup(lr=0.0)
    with pytest.raises(TypeError, match="seeds must be an int"):
        CoTSetup(seeds=2.0)
    with pytest.raises(TypeError, match="setup must be a CoTSetup"):
        run({}, seed=0)
    with pytest.raises(ValueError, match="support_size must be <= n"):
        CoTSetup(n=4, train_size=8, support_size=5)
    assert CoTSetup().subset_size == 6
    assert CoTSetup(n=5, train_size=8, support_size=5).subset_size == 5


def test_chains_over_a_support_are_the_chains_of_those_bits():
    x = all_bit_strings(6)
    a = [4, 1, 3]  # any order; used sorted
    for fmt in FORMATS:
        seq = parity_chain(x, fmt, support=a)
        assert torch.equal(seq[:, :6], x)  # the prompt: every bit
        assert torch.equal(seq[:, 6:], parity_chain(x[:, [1, 3, 4]], fmt)[:, 3:])
        assert seq.shape[1] == 6 + chain_length(3, fmt)
        assert torch.equal(seq[:, -1], x[:, [1, 3, 4]].sum(dim=1) % 2)
    for bad in ([], [1, 1], [6], [-1]):
        with pytest.raises(ValueError, match="support must hold distinct bit indices"):
            parity_chain(x, "binary", support=bad)


def test_a_linear_model_learns_the_parity_of_a_hidden_subset_with_a_chain():
    x = all_bit_strings(6)
    setup = CoTSetup(n=6, seeds=2, steps=300, batch_size=64, train_size=32)
    a = torch.tensor([0, 2, 5])
    model, _ = train_chain_models(
        "threshold",
        None,
        x,
        setup,
        support=a,
        generator=torch.Generator().manual_seed(0),
        progress=False,
    )
    assert model.seq_len == 6 + 2 * 3 - 1
    assert answer_accuracy(model, x, "threshold", a).min() == 1.0
    # the same model scored against the parity of every bit is right only by chance
    assert answer_accuracy(model, x, "threshold", [0, 1, 2]).max() < 0.8


def test_helpers_and_errors():
    assert all_bit_strings(3).tolist()[5] == [1, 0, 1]
    assert "answer: 5535" in multiplication_chain(123, 45)
    with pytest.raises(ValueError, match="fmt must be one of"):
        chain_length(4, "scratchpad")
    with pytest.raises(ValueError, match="n must be <= 20"):
        all_bit_strings(25)

"""Unit tests for seqtheory.copying: the task, accuracy, the fixed-state models."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.copying import (
    BOS,
    EOS,
    PAD,
    SEP,
    SETUP,
    VOCAB_SIZE,
    CopyLSTM,
    DiagonalRecurrence,
    GatedRecurrence,
    copy_batch,
    copy_models,
    decode,
    encode,
    greedy_copy,
    linear_scan,
    max_copy_length,
    state_bits,
    string_accuracy,
)
from seqtheory.core.training import IGNORE_INDEX


@given(lo=st.integers(1, 8), extra=st.integers(0, 8), seed=st.integers(0, 100))
@settings(max_examples=25, deadline=None)
def test_copy_batch_layout(lo, extra, seed):
    hi = lo + extra
    x, y = copy_batch(16, lo, hi, generator=torch.Generator().manual_seed(seed))
    seq = torch.cat([x, y[:, -1:].clamp(min=0)], dim=1)
    assert x.shape == y.shape == (16, 2 * hi + 2)
    for row, tgt in zip(x.tolist(), y.tolist(), strict=True):
        L = row.index(SEP) - 1
        assert lo <= L <= hi and row[0] == BOS
        s = row[1 : L + 1]
        assert row[L + 2 : 2 * L + 2] == s  # the second copy
        counted = [t for t in tgt if t != IGNORE_INDEX]
        assert counted == s + [EOS]  # only the copy and EOS count
        assert all(t == PAD for t in row[2 * L + 3 :])
    assert seq.shape[1] == 2 * hi + 3


def test_string_accuracy_of_an_oracle_and_of_a_one_letter_mistake():
    x, y = copy_batch(8, 4, 6, generator=torch.Generator().manual_seed(0))

    class Oracle(torch.nn.Module):
        def forward(self, idx):
            logits = torch.zeros(*idx.shape, 30)
            target = y[:, : idx.shape[1]].clamp(min=0)
            return logits.scatter(2, target[..., None], 1.0)

    assert string_accuracy(Oracle(), x, y) == 1.0
    y_bad = y.clone()
    first = (y_bad[0] != IGNORE_INDEX).nonzero()[0]
    y_bad[0, first] = (y_bad[0, first] + 1) % 26
    assert string_accuracy(Oracle(), x, y_bad) == pytest.approx(7 / 8)


def test_diagonal_recurrence_matches_its_sequential_definition():
    torch.manual_seed(0)
    model = DiagonalRecurrence(d_model=16, d_state=8, layers=1)
    block = model.blocks[0]
    x = torch.randn(3, 9, 16)
    u = block.inp(block.ln1(x))
    a = (-block.log_rate.exp()).exp()
    h, hs = torch.zeros(3, 8), []
    for t in range(9):
        h = a * h + u[:, t]
        hs.append(h)
    ref = x + block.out(torch.nn.functional.gelu(torch.stack(hs, 1)))
    ref = ref + block.mlp(block.ln2(ref))
    assert torch.allclose(block(x), ref, atol=1e-5)


@given(T=st.integers(1, 40), seed=st.integers(0, 50))
@settings(max_examples=20, deadline=None)
def test_linear_scan_matches_the_sequential_recurrence(T, seed):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.rand(2, T, 3, generator=g), torch.randn(2, T, 3, generator=g)
    h, hs = torch.zeros(2, 3), []
    for t in range(T):
        h = a[:, t] * h + b[:, t]
        hs.append(h)
    torch.testing.assert_close(linear_scan(a, b), torch.stack(hs, 1), rtol=1e-5, atol=1e-5)


def test_linear_scan_refuses_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        linear_scan(torch.ones(2, 3), torch.ones(2, 4))
    with pytest.raises(TypeError, match="torch.Tensors"):
        linear_scan([1.0], torch.ones(1, 1))


def test_gated_recurrence_matches_its_sequential_definition():
    torch.manual_seed(0)
    model = GatedRecurrence(d_model=16, d_state=8, layers=1)
    block = model.blocks[0]
    x = torch.randn(3, 9, 16)
    z = block.ln1(x)
    a = torch.sigmoid(block.gate(z))  # input-dependent decay
    u = block.inp(z)
    h, hs = torch.zeros(3, 8), []
    for t in range(9):
        h = a[:, t] * h + (1 - a[:, t]) * u[:, t]
        hs.append(h)
    ref = x + block.out(torch.nn.functional.gelu(torch.stack(hs, 1)))
    ref = ref + block.mlp(block.ln2(ref))
    assert torch.allclose(block(x), ref, atol=1e-5)
    # the decay depends on the token: two different inputs give two different decays
    assert not torch.allclose(a[0, 0], a[0, 1])
    with pytest.raises(ValueError, match="d_state"):
        GatedRecurrence(d_state=0)


def test_gated_decay_is_mambas_zero_order_hold_step_with_a_minus_one():
    """The chapter's reading of the gate: a_t = exp(Delta_t A), write (exp(Delta_t A) - 1)/A
    times the input, with A = -1 and Delta_t = softplus(-gate)."""
    torch.manual_seed(1)
    block = GatedRecurrence(d_model=8, d_state=6, layers=1).blocks[0]
    x = torch.randn(2, 7, 8)
    z = block.ln1(x)
    delta = torch.nn.functional.softplus(-block.gate(z))  # (B, T, N)
    A = -1.0
    a, write = torch.exp(delta * A), (torch.exp(delta * A) - 1) / A * block.inp(z)
    h, hs = torch.zeros(2, 6), []
    for t in range(7):
        h = a[:, t] * h + write[:, t]
        hs.append(h)
    assert torch.allclose(block.states(x), torch.stack(hs, 1), atol=1e-5)


def test_hard_alibi_windows_include_the_position_itself():
    """First-layer head h of the chapter's hard-ALiBi model sees itself and h previous tokens
    (windows 1..4), so a key can encode at most the trigram before its own letter."""
    torch.manual_seed(0)
    model = copy_models(SETUP.cpu)["hard-ALiBi"]
    idx = copy_batch(2, 6, generator=torch.Generator().manual_seed(0))[0]
    pat = model.attention_patterns(idx)[0][0]  # (H, T, T) layer 1
    q, k = torch.meshgrid(torch.arange(idx.shape[1]), torch.arange(idx.shape[1]), indexing="ij")
    for h, w in enumerate((1, 2, 3, 4)):
        assert (pat[h][(q - k >= w) | (k > q)] == 0).all()
        assert (pat[h][(q - k >= 0) & (q - k < w)] > 0).all()
    assert torch.allclose(pat[0].diagonal(), torch.ones(idx.shape[1]))


@pytest.mark.parametrize("cls", [CopyLSTM, DiagonalRecurrence, GatedRecurrence])
def test_fixed_state_models_are_causal(cls):
    torch.manual_seed(0)
    model = cls()
    x = torch.randint(30, (2, 12))
    x2 = x.clone()
    x2[:, 8:] = (x2[:, 8:] + 1) % 30
    assert torch.allclose(model(x)[:, :8], model(x2)[:, :8], atol=1e-5)


def test_copy_models_have_about_100k_parameters():
    for name, m in copy_models(SETUP.cpu).items():
        n = sum(p.numel() for p in m.parameters())
        assert 80_000 <= n <= 130_000, (name, n)


def test_encode_decode_greedy_copy_and_bounds():
    assert decode(encode("abc")[0]) == "^abc|"
    with pytest.raises(ValueError, match="letters a-z"):
        encode("Abc")

    class Echo(torch.nn.Module):  # a perfect copier: after SEP the letters, then EOS
        def forward(self, idx):  # (1, t)
            sep = int((idx[0] == SEP).nonzero()[0])
            out = torch.full((*idx.shape, VOCAB_SIZE), -10.0)
            for t in range(sep, idx.shape[1]):
                j = t - sep + 1  # letter to write next
                out[0, t, idx[0, j] if j < sep else EOS] = 10.0
            return out

    assert greedy_copy(Echo(), "hello") == "hello$"
    assert state_bits(256) == 8192
    assert max_copy_length(47) == pytest.approx(47 / 4.70044, rel=1e-4)
    with pytest.raises(ValueError, match="max_len must be >= min_len"):
        copy_batch(2, 5, 3)


TINY = dict(
    min_len=2,
    max_len=3,
    test_len=4,
    d_model=8,
    batch_size=4,
    steps=6,
    warmup=2,
    eval_every=3,
    eval_size=5,
    seeds=(0, 3),
)


def test_run_trains_every_seed_and_matches_a_single_run():
    """Seeds train as one program; seed s of the ensemble follows the model trained alone."""
    from seqtheory.copying import STREAMS, CopyResult, CopySetup, copy_model, run, train_copier
    from seqtheory.core.seeds import make_generator

    setup = CopySetup(
        **TINY,
        lrs=(("LSTM", 1e-2), ("gated recurrence", 2e-3)),
        names=("transformer", "LSTM", "gated recurrence"),
    )
    assert setup.lr_for("LSTM") == 1e-2 and setup.lr_for("transformer") == setup.lr
    result = run(setup, seed=0, device="cpu", progress=False)
    assert isinstance(result, CopyResult) and result.device == "cpu" and result.seed == 0
    assert list(result.runs) == list(setup.names) and result.seconds > 0
    assert set(result.models(1)) == set(setup.names)
    for name, r in result.runs.items():
        assert r.seeds == (0, 3) and list(r.steps) == [0, 3, 6]
        assert r.acc_train_len.shape == (3, 2) and r.acc_test_len.shape == (2,)
        assert len(r.models) == 2 and len(r.histories) == (2 if name == "LSTM" else 1)
        assert all(not m.training for m in r.models)
        alone = copy_model(name, setup, seed=3)
        hist = train_copier(
            alone,
            setup,
            lr=setup.lr_for(name),
            seed=0,
            generator=make_generator(STREAMS.seed("data", 3)),
            progress=False,
        )
        np.testing.assert_allclose(r.acc_train_len[:, 1], hist.metric("acc_train_len")[1])
        for k, v in alone.state_dict().items():
            torch.testing.assert_close(r.models[1].state_dict()[k], v, rtol=1e-4, atol=1e-5)


def test_streams_name_the_logical_seeds():
    from seqtheory.copying import STREAMS, run

    assert run.streams is STREAMS
    assert [
        STREAMS.seed(name, 7)
        for name in ("weights", "by_length", "tests", "planted", "strings", "data")
    ] == [7, 7, 1007, 2007, 3007, 10_007]


def test_stacked_lstm_runs_each_member_as_it_runs_alone():
    """The wide block-diagonal LSTM gives every member the logits it gives alone, for one
    batch per member and for a shared batch, and its members are the seeded CopyLSTMs."""
    from seqtheory.copying import CopySetup, StackedLSTM, copy_model

    setup = CopySetup(**TINY)
    state = torch.random.get_rng_state()
    ens = StackedLSTM(lambda: copy_model("LSTM", setup), [0, 3, 5], base=2)
    assert torch.equal(torch.random.get_rng_state(), state)
    alone = [copy_model("LSTM", setup, seed=s, base=2) for s in (0, 3, 5)]
    for a, m in zip(alone, ens.members(), strict=True):
        for k, v in a.state_dict().items():
            assert torch.equal(v, m.state_dict()[k]), k
    g = torch.Generator().manual_seed(1)
    x = torch.stack([copy_batch(4, 2, 6, generator=g)[0] for _ in range(3)])  # (3, 4, T)
    out = ens(x)
    assert out.shape == (3, 4, x.shape[-1], VOCAB_SIZE)
    shared = ens(x[0], shared=True)
    for m, model in enumerate(alone):
        torch.testing.assert_close(out[m], model(x[m]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(shared[m], model(x[0]), rtol=1e-5, atol=1e-6)
    wide = ens.wide_weights()["weight_hh_l0"].view(4, 3, 16, 3, 16)
    assert not wide[:, 0, :, 1].any() and wide[:, 1, :, 1].any()  # block-diagonal
    out.sum().backward()  # gradients reach every member's own parameters
    assert all(
        p.grad is not None and p.grad.flatten(1).norm(dim=1).min() > 0 for p in ens.parameters()
    )


def test_run_with_the_stacked_lstm_matches_the_lstm_seed_by_seed(monkeypatch):
    """run()'s batched LSTM program (its path off the CPU) gives each seed the accuracies,
    losses and weights of the seed-by-seed path (its path on the CPU), up to rounding."""
    import seqtheory.copying as copying

    assert copying._stacks_lstm(torch.device("cpu")) is False
    assert copying._stacks_lstm(torch.device("cuda")) is True
    setup = copying.CopySetup(**TINY, names=("LSTM",))
    alone = copying.run(setup, seed=1, progress=False).runs["LSTM"]
    monkeypatch.setattr(copying, "_stacks_lstm", lambda device: True)
    stacked = copying.run(setup, seed=1, progress=False).runs["LSTM"]
    assert len(alone.histories) == 2 and len(stacked.histories) == 1
    np.testing.assert_array_equal(stacked.acc_train_len, alone.acc_train_len)
    np.testing.assert_array_equal(stacked.acc_test_len, alone.acc_test_len)
    np.testing.assert_allclose(
        stacked.histories[0].losses(), np.stack([h.losses() for h in alone.histories], 1), rtol=1e-5
    )
    for m1, m2 in zip(stacked.models, alone.models, strict=True):
        assert not m1.training and isinstance(m1, copying.CopyLSTM)
        for k, v in m2.state_dict().items():
            torch.testing.assert_close(m1.state_dict()[k], v, rtol=1e-4, atol=1e-5)


def test_stacked_lstm_refuses_bad_input():
    from seqtheory.copying import CopySetup, StackedLSTM, copy_model

    setup = CopySetup(**TINY)
    ens = StackedLSTM(lambda: copy_model("LSTM", setup), [0, 1])
    with pytest.raises(ValueError, match="idx must have shape"):
        ens(torch.zeros(3, 2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids in 0..29"):
        ens(torch.full((2, 2, 5), VOCAB_SIZE))
    with pytest.raises(ValueError, match="token ids"):
        ens(torch.full((2, 2, 5), -1))
    with pytest.raises(TypeError, match="integer token ids"):
        ens(torch.zeros(2, 2, 5))
    with pytest.raises(TypeError, match="idx must be a torch.Tensor"):
        ens([[1, 2]])
    with pytest.raises(ValueError, match="one-layer CopyLSTM"):
        StackedLSTM(lambda: copy_model("gated recurrence", setup), [0, 1])
    with pytest.raises(ValueError, match="one-layer CopyLSTM"):
        StackedLSTM(lambda: CopyLSTM(layers=2), [0, 1])


def test_run_is_deterministic_and_leaves_the_global_rng_alone():
    from seqtheory.copying import CopySetup, run

    setup = CopySetup(**TINY, names=("hard-ALiBi", "gated recurrence"))
    state = torch.random.get_rng_state()
    first = run(setup, seed=5, device="cpu", progress=False)
    assert torch.equal(torch.random.get_rng_state(), state)
    again = run(setup, seed=5, device="cpu", progress=False)
    other = run(setup, seed=6, device="cpu", progress=False)
    for name in setup.names:
        a, b = first.runs[name], again.runs[name]
        np.testing.assert_array_equal(a.acc_train_len, b.acc_train_len)
        np.testing.assert_array_equal(a.histories[0].losses(), b.histories[0].losses())
        for m1, m2 in zip(a.models, b.models, strict=True):
            for k, v in m1.state_dict().items():
                assert torch.equal(v, m2.state_dict()[k]), (name, k)
        w = next(iter(a.models[0].state_dict()))
        assert not torch.equal(
            a.models[0].state_dict()[w], other.runs[name].models[0].state_dict()[w]
        )


def test_building_a_model_leaves_the_global_rng_alone_and_is_reproducible():
    from seqtheory.copying import copy_model

    state = torch.random.get_rng_state()
    for name in ("transformer", "gated recurrence", "LSTM"):
        m1, m2 = copy_model(name, SETUP.cpu, seed=4), copy_model(name, SETUP.cpu, seed=4)
        for k, v in m1.state_dict().items():
            assert torch.equal(v, m2.state_dict()[k]), (name, k)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_run_refuses_an_unavailable_device():
    from seqtheory.copying import CopySetup, run

    with pytest.raises(ValueError, match="device"):
        run(CopySetup(**TINY), seed=0, device="cuda", progress=False)


def test_plot_learning_curves_takes_the_result():
    import matplotlib

    matplotlib.use("Agg")
    from seqtheory.copying import CopySetup, plot_learning_curves, run

    result = run(CopySetup(**TINY, names=("hard-ALiBi",)), seed=0, progress=False)
    ax = plot_learning_curves(result)
    assert len(ax.lines) == 3  # two seeds and the median
    with pytest.raises(TypeError, match="result must be a CopyResult"):
        plot_learning_curves({})


def test_copy_setup_and_run_refuse_bad_input():
    from seqtheory.copying import CopySetup, copy_model, run

    with pytest.raises(ValueError, match="max_len"):
        CopySetup(min_len=5, max_len=4)
    with pytest.raises(ValueError, match="seeds"):
        CopySetup(seeds=(1, 1))
    with pytest.raises(ValueError, match="multiple of 4"):
        CopySetup(d_model=10)
    with pytest.raises(ValueError, match="lrs must hold"):
        CopySetup(lrs=(("GRU", 1e-3),))
    with pytest.raises(ValueError, match="lrs must hold"):
        CopySetup(lrs=(("LSTM", -1.0),))
    with pytest.raises(TypeError, match="lrs must be a tuple"):
        CopySetup(lrs={"LSTM": 1e-3})
    with pytest.raises(ValueError, match="name must be one of"):
        CopySetup().lr_for("GRU")
    with pytest.raises(ValueError, match="names must be"):
        CopySetup(names=("GRU",))
    with pytest.raises(TypeError, match="names must be a tuple"):
        CopySetup(names="LSTM")
    with pytest.raises(ValueError, match="name must be one of"):
        copy_model("GRU", CopySetup())
    with pytest.raises(TypeError, match="setup must be a CopySetup"):
        run({}, seed=0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        run(CopySetup(), seed=-1)
    with pytest.raises(ValueError, match="device"):
        run(CopySetup(), device="tpu")


def test_greedy_copy_writes_until_eos_through_the_shared_decoder():
    text = "copy"

    class Oracle(torch.nn.Module):  # writes the text, then EOS, then junk
        def forward(self, idx):  # (B, T) -> (B, T, V)
            answer = encode(text)[0].tolist()[1:-1] + [EOS, 0, 0, 0]
            nxt = answer[idx.shape[1] - len(text) - 2]
            logits = torch.zeros(*idx.shape, 30)
            logits[:, -1, nxt] = 1.0
            return logits

    assert greedy_copy(Oracle(), text) == text + "$"


# ----------------------------------------------------------------- repeated n-grams
class _Oracle(torch.nn.Module):
    """Predicts every next token of ``<BOS> s <SEP> s <EOS>`` right."""

    def forward(self, idx):  # (B, T)
        B, T = idx.shape
        L = (T - 2) // 2
        s = idx[:, 1 : L + 1]
        nxt = torch.cat([idx[:, 1:], torch.full((B, 1), EOS)], dim=1)
        nxt[:, L + 1 : 2 * L + 1] = s
        nxt[:, 2 * L + 1] = EOS
        return torch.nn.functional.one_hot(nxt, VOCAB_SIZE).float()


class _BigramLookup(torch.nn.Module):
    """Copies by looking up the last two letters written in the first copy (first match):
    wrong exactly where a bigram repeats ambiguously."""

    def forward(self, idx):  # (B, T)
        B, T = idx.shape
        L = (T - 2) // 2
        out = torch.full((B, T), EOS)
        for b in range(B):
            s = idx[b, 1 : L + 1].tolist()
            for i in range(L):  # position L + 1 + i writes letter i
                if i < 2:
                    out[b, L + 1 + i] = s[i]
                    continue
                key = s[i - 2 : i]
                j = next(k for k in range(2, L + 1) if s[k - 2 : k] == key)
                out[b, L + 1 + i] = s[j] if j < L else EOS
        return torch.nn.functional.one_hot(out, VOCAB_SIZE).float()


def test_copy_rows_matches_copy_batch_at_one_length():
    from seqtheory.copying import copy_rows

    x, y = copy_batch(6, 7, generator=torch.Generator().manual_seed(3))
    x2, y2 = copy_rows(x[:, 1:8])
    assert torch.equal(x, x2) and torch.equal(y, y2)
    with pytest.raises(ValueError, match="strings must"):
        copy_rows(torch.tensor([[0, 26]]))
    with pytest.raises(ValueError, match="strings must"):
        copy_rows(torch.tensor([1, 2]))


def test_has_repeated_ngram_and_its_probability():
    from seqtheory.copying import has_repeated_ngram, repeat_probability

    s = torch.tensor([[0, 1, 2, 0, 1, 3], [0, 1, 2, 3, 4, 5], [0, 0, 1, 2, 3, 4]])
    assert has_repeated_ngram(s, 1).tolist() == [True, False, True]
    assert has_repeated_ngram(s, 2).tolist() == [True, False, False]
    assert has_repeated_ngram(s, 3).tolist() == [False, False, False]
    assert has_repeated_ngram(s, 7).tolist() == [False] * 3
    with pytest.raises(ValueError, match="n must be >= 1"):
        has_repeated_ngram(s, 0)
    # birthday bound: 1 - exp(-C(L-1, 2) / 26^2), about 0.05 at L = 10 and 0.40 at L = 28
    for L in (10, 28):
        approx = 1 - np.exp(-(L - 1) * (L - 2) / 2 / 26**2)
        assert repeat_probability(L, 2, size=20_000) == pytest.approx(approx, abs=0.02)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_planted_repeat_batch_plants_an_ambiguous_ngram(n):
    from seqtheory.copying import planted_repeat_batch

    x, y = planted_repeat_batch(50, 10, n, generator=torch.Generator().manual_seed(n))
    assert x.shape == (50, 22)
    s = x[:, 1:11]
    if n:
        assert torch.equal(s[:, 5 : 5 + n], s[:, 1 : 1 + n])
        assert (s[:, 5 + n] != s[:, 1 + n]).all()
    assert (x[:, 11] == SEP).all() and torch.equal(x[:, 12:22], s)
    with pytest.raises(ValueError, match="n must be <= length // 2 - 1 = 4"):
        planted_repeat_batch(5, 10, 5)


def test_repeat_accuracy_tells_a_bigram_lookup_from_an_exact_copier():
    from seqtheory.copying import accuracy_by_repeats, repeat_accuracy

    assert repeat_accuracy(_Oracle(), 10, [0, 2, 3], size=40, seed=0) == [1.0, 1.0, 1.0]
    acc = repeat_accuracy(_BigramLookup(), 10, [1, 2, 3], size=40, seed=0)
    assert acc[1] == acc[2] == 0.0 and acc[0] > 0.5
    split = accuracy_by_repeats(_BigramLookup(), [12], n=2, size=200, seed=0)
    assert split["without"][0] == 1.0 and split["with"][0] < 0.5
    assert 0 < split["frac_with"][0] < 0.3


def test_lookup_rows_hold_the_string_the_query_and_the_first_answer():
    from seqtheory.copying import lookup_batch
    from seqtheory.core.seeds import make_generator
    from seqtheory.core.training import IGNORE_INDEX

    for key in ("suffix", "prefix"):
        x, y = lookup_batch(200, 5, 12, n=2, key=key, generator=make_generator(3))
        assert x.shape == y.shape == (200, 12 + 2 + 3)
        for row, target in zip(x.tolist(), y.tolist(), strict=True):
            counted = [(i, t) for i, t in enumerate(target) if t != IGNORE_INDEX]
            assert len(counted) == 1
            end, answer = counted[0]
            assert row[0] == BOS and row[end] == SEP
            parts = decode(row[1:end]).split("|")
            s, q = (parts[0], parts[1]) if key == "suffix" else (parts[1], parts[0])
            assert len(q) == 2 and 5 <= len(s) <= 12 and q in s[:-1]
            first = next(i for i in range(len(s) - 2) if s[i : i + 2] == q)
            assert decode([answer]) == s[first + 2]  # after the first occurrence
            assert all(t == PAD for t in row[end + 2 :])


def test_lookup_refuses_bad_arguments():
    from seqtheory.copying import lookup_batch

    with pytest.raises(ValueError, match="key"):
        lookup_batch(4, 5, key="middle")
    with pytest.raises(ValueError, match="min_len"):
        lookup_batch(4, 2, n=2)
    with pytest.raises(ValueError, match="max_len"):
        lookup_batch(4, 6, 5)
    with pytest.raises(TypeError, match="generator"):
        lookup_batch(4, 5, generator=3)

"""Unit tests for seqtheory.tokenization: round trips, BPE vs HuggingFace, LZW greedy parse."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory.sources.markov import sample_switching
from seqtheory.tokenization import (
    BPE,
    LZW,
    FixedBlocks,
    block_unigram_entropy,
    token_lengths,
    unigram_cross_entropy,
)

symbols = st.lists(st.integers(0, 2), min_size=0, max_size=300).map(np.array)


def source(n=20_000, order=2, seed=1):
    return sample_switching(
        1, n, 0.8, 0.8, order=order, generator=torch.Generator().manual_seed(seed)
    )[0]


@settings(max_examples=40, deadline=None)
@given(train=symbols, test=symbols, d=st.integers(3, 40))
def test_property_bpe_round_trips(train, test, d):
    bpe = BPE.train(train.astype(np.int64), d, alphabet=3)
    assert np.array_equal(bpe.decode(bpe.encode(test.astype(np.int64))), test)


@settings(max_examples=40, deadline=None)
@given(train=symbols, test=symbols, d=st.integers(3, 40))
def test_property_lzw_round_trips(train, test, d):
    lzw = LZW.train(train.astype(np.int64), d, alphabet=3, partial=True)
    assert np.array_equal(lzw.decode(lzw.encode(test.astype(np.int64))), test)


@settings(max_examples=40, deadline=None)
@given(test=symbols, r=st.integers(1, 5))
def test_property_blocks_round_trip(test, r):
    blocks = FixedBlocks(r, alphabet=3)
    assert np.array_equal(blocks.decode(blocks.encode(test.astype(np.int64))), test)


def greedy_longest_prefix(lzw, seq):
    """The definition, one token at a time."""
    table = {tuple(t.tolist()): i for i, t in enumerate(lzw.tokens)}
    out, i, seq = [], 0, seq.tolist()
    while i < len(seq):
        j = i + 1
        while j < len(seq) and tuple(seq[i : j + 1]) in table:
            j += 1
        out.append(table[tuple(seq[i:j])])
        i = j
    return np.array(out)


def test_lzw_dictionary_is_prefix_closed_and_parse_is_greedy():
    x = source(5000).numpy()
    lzw = LZW.train(x, 128)
    strings = {lzw.token_string(i) for i in range(lzw.vocab_size)}
    assert len(strings) == 128 and all(s[:-1] in strings for s in strings if len(s) > 1)
    y = source(3000, seed=2).numpy()
    assert np.array_equal(lzw.encode(y), greedy_longest_prefix(lzw, y))
    assert lzw.truncate(16).vocab_size == 16


def test_lzw_parses_lz78_style_not_the_textbook_lzw_restart():
    """LZ78: each new phrase (longest known phrase + next symbol) consumes that symbol; the
    next phrase starts after it.  On 0101...: 01, 010, 10, 101, ...  (The textbook LZW parse
    restarts at the extra symbol instead: 01, 10, 010, 0101, ...)"""
    lzw = LZW.train(np.array([0, 1] * 8), 6)
    assert [lzw.token_string(i) for i in range(6)] == ["0", "1", "01", "010", "10", "101"]


def test_bpe_matches_huggingface_tokenizers_on_a_chunked_corpus():
    import tokenizers  # a cross-check must not skip: tokenizers is in requirements.txt

    x = source().numpy()
    chunks = [x[i : i + 200] for i in range(0, x.size, 200)]
    text = ["".join(map(str, c.tolist())) for c in chunks]
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=64, initial_alphabet=["0", "1"], show_progress=False, special_tokens=[]
    )
    hf.train_from_iterator(text, trainer)
    ours = BPE.train(chunks, 64)
    assert {ours.token_string(i) for i in range(64)} == set(hf.get_vocab())
    test = [c for c in chunks[:15]]
    hf_tokens = [t for c in test for t in hf.encode("".join(map(str, c.tolist()))).tokens]
    assert [ours.token_string(i) for i in ours.encode(test)] == hf_tokens


def test_bpe_on_empty_data():
    assert BPE.train([], 8).merges == [] and BPE.train(np.zeros(0, np.int64), 8).merges == []
    assert BPE(2, [(0, 1)]).encode([]).size == 0 and LZW.train([], 4, partial=True).vocab_size == 2


def test_bpe_details():
    x = source(10_000).numpy()
    bpe, seen = BPE.train(x, 32, snapshots=[2, 8, 32])
    assert np.array_equal(seen[32], bpe.encode(x))  # training = encoding
    assert np.array_equal(seen[8], bpe.truncate(8).encode(x))  # prefixes of the merges
    pairs = np.bincount(x[:-1] * 2 + x[1:], minlength=4)  # the most frequent pair
    assert bpe.merges[0] == divmod(int(np.argmax(pairs)), 2) and pairs.max() > pairs.min()
    enc = bpe.encode(x, snapshots=[8, 32])
    assert np.array_equal(enc[8], seen[8])
    assert np.array_equal(
        BPE.train(np.array([0, 0, 0]), 3).encode(np.array([0, 0, 0])), np.array([2, 0])
    )  # runs merge left to right
    assert token_lengths(bpe).max() > 1


def test_unigram_cross_entropy_per_symbol():
    # tokens 0 and 1, each standing for 2 symbols; the model puts 3/4 on token 0
    bits = unigram_cross_entropy(
        [0, 0, 0, 1], [0, 1], vocab_size=2, n_test_symbols=4, smoothing=0.0
    )
    assert bits == pytest.approx((-np.log2(0.75) - np.log2(0.25)) / 4)
    blocks = FixedBlocks(2)
    x = source(4000, order=2).numpy()  # order 2: pairs of bits carry no information together
    ce = unigram_cross_entropy(
        blocks.encode(x[:2000]), blocks.encode(x[2000:]), blocks.vocab_size, 2000
    )
    assert abs(ce - 1.0) < 0.02


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: BPE.train(np.array([0, 1]), 1), ValueError, "d must be >= 2"),
        (lambda: BPE.train(np.array([0, 2]), 4), ValueError, "outside 0..1"),
        (lambda: BPE.train(np.zeros((2, 2), int), 4), ValueError, "1-D"),
        (lambda: LZW.train(np.array([0.5]), 4), TypeError, "integer"),
        (lambda: FixedBlocks(0), ValueError, "r must be >= 1"),
        (lambda: BPE(2).decode([5]), ValueError, "token ids"),
        (lambda: BPE(2, [(0, 1)]).encode(np.array([0, 1]), snapshots=[8]), ValueError, "no merges"),
    ],
)
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_encode_rows_and_token_batch():
    from seqtheory.tokenization import encode_rows, token_batch

    x = source(20_000, order=4).numpy()
    bpe = BPE.train(x, 32)
    rows = source(4 * 300, order=4, seed=3).view(4, 300)
    encoded = encode_rows(bpe, rows)
    assert all(np.array_equal(e, bpe.encode(r.numpy())) for e, r in zip(encoded, rows, strict=True))
    inputs, targets, symbols = token_batch(bpe, rows, 20)
    assert inputs.shape == targets.shape == symbols.shape == (4, 20)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    assert torch.equal(symbols, torch.from_numpy(token_lengths(bpe))[targets])
    short = token_batch(bpe, rows[:, :10], 20)[1]  # rows run out of tokens
    assert (short == -100).any() and (
        token_batch(bpe, rows[:, :10], 20)[2][short == -100] == 0
    ).all()
    blocks = FixedBlocks(3)
    assert np.array_equal(encode_rows(blocks, rows)[1], blocks.encode(rows[1].numpy()))


def test_unigram_sweep_rows():
    from seqtheory.tokenization import unigram_sweep

    x, y = source(30_000, order=2).numpy(), source(30_000, order=2, seed=5).numpy()
    rows = unigram_sweep(x, y, (4, 16, 12))
    got = {(r["tokenizer"], r["d"]) for r in rows}
    assert ("blocks", 12) not in got and ("blocks", 16) in got  # blocks need d = 2^r
    assert {("BPE", 4), ("BPE", 16), ("LZW", 12)} <= got
    bpe16 = BPE.train(x, 16)
    direct = unigram_cross_entropy(bpe16.encode(x), bpe16.encode(y), 16, y.size)
    (row,) = [r for r in rows if (r["tokenizer"], r["d"]) == ("BPE", 16)]
    assert row["bits_per_symbol"] == pytest.approx(direct)
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        unigram_sweep(x, y, (4,), tokenizers=("WordPiece",))


@pytest.mark.parametrize("batch,T,k", [(32, 65, 1), (8, 700, 4), (5, 10, 3)])
def test_switching_sampler_matches_sample_switching(batch, T, k):
    from seqtheory.tokenization import switching_sampler

    sample = switching_sampler(batch, T, 0.5, 0.8, order=k)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(3):  # the same stream, draw by draw
        assert torch.equal(sample(g1), sample_switching(batch, T, 0.5, 0.8, order=k, generator=g2))
    with pytest.raises(ValueError, match="batch must be"):
        switching_sampler(0, T, 0.5, 0.8)


def test_switching_sampler_reads_nothing_back_from_the_device():
    """A draw makes no scalar copy to the host (aten._local_scalar_dense: .item(), int(),
    bool()), so on a GPU the host does not wait at every training batch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from seqtheory.tokenization import switching_sampler

    class Reads(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    sample = switching_sampler(6, 33, 0.5, 0.8, order=2)
    g = torch.Generator().manual_seed(0)
    sample(g)  # the first draw may set things up
    with Reads() as reads:
        sample(g)
    assert reads.ops and torch.ops.aten._local_scalar_dense.default not in reads.ops
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample(3)


def trap_ensemble(M=3, T=12, tie=True):
    from seqtheory.core.ensemble import Ensemble
    from seqtheory.core.models import Transformer, TransformerConfig

    cfg = TransformerConfig(
        vocab_size=2,
        max_len=T,
        n_layers=1,
        n_heads=1,
        d_model=8,
        attn_only=True,
        layer_norm=False,
        tie_weights=tie,
    )
    return Ensemble(lambda: Transformer(cfg), seeds=list(range(M)), base=0).eval()


@pytest.mark.parametrize("chunk", [1, 5, 16, 40])
def test_trap_eval_loss_in_chunks_equals_the_whole_batch_at_once(chunk):
    """Chunked evaluation gives the bits of one pass over all 40 sequences, which is each
    member's mean cross-entropy."""
    from seqtheory.tokenization import trap_eval_loss

    ens = trap_ensemble(T=12, tie=chunk % 2 == 0)
    held = sample_switching(40, 13, 0.5, 0.8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logits = ens(held[:, :-1], shared=True)  # (3, 40, 12, 2)
        whole = [
            torch.nn.functional.cross_entropy(m.flatten(0, 1), held[:, 1:].flatten()).item()
            for m in logits
        ]
    got = trap_eval_loss(ens, held, chunk)
    assert got == whole and trap_eval_loss(ens, held) == whole
    assert len(set(got)) == 3 and all(0.3 < v < 1.5 for v in got)


def test_trap_eval_loss_default_chunk_keeps_the_scores_within_the_budget(monkeypatch):
    """The default chunk holds at most TRAP_EVAL_SCORES attention scores (64 sequences of
    1024 symbols for 4 members); with a budget of 3 x (members T^2), 10 sequences go
    through the models in 4 passes."""
    import seqtheory.tokenization as tok

    assert tok.TRAP_EVAL_SCORES // (4 * 1024 * 1024) == 64
    ens = trap_ensemble(M=2, T=6)
    held = sample_switching(10, 7, 0.5, 0.8, generator=torch.Generator().manual_seed(1))
    whole = tok.trap_eval_loss(ens, held)
    calls = []
    forward = ens.forward
    monkeypatch.setattr(
        ens, "forward", lambda *a, **k: calls.append(a[0].shape[0]) or forward(*a, **k)
    )
    monkeypatch.setattr(tok, "TRAP_EVAL_SCORES", 3 * 2 * 6 * 6)
    assert tok.trap_eval_loss(ens, held) == whole and calls == [3, 3, 3, 1]


def test_trap_eval_loss_refuses_bad_input():
    from seqtheory.tokenization import trap_eval_loss

    ens = trap_ensemble(M=2, T=6)
    held = sample_switching(4, 7, 0.5, 0.8, generator=torch.Generator().manual_seed(1))
    with pytest.raises(TypeError, match="ensemble must be an Ensemble"):
        trap_eval_loss(ens.member(0), held)
    with pytest.raises(TypeError, match="held_out must be a torch.Tensor"):
        trap_eval_loss(ens, held.numpy())
    with pytest.raises(ValueError, match="held_out must be a"):
        trap_eval_loss(ens, held[0])
    with pytest.raises(ValueError, match="held_out must be a"):
        trap_eval_loss(ens, held[:, :1])
    with pytest.raises(ValueError, match="chunk"):
        trap_eval_loss(ens, held, 0)


def textbook_bpe(chunks, d, alphabet):
    """BPE the textbook way, one full recount per merge: every chunk as a list of ids; the
    most frequent adjacent pair within a chunk (ties: the smallest (a, b)) merges left to
    right, without overlaps.  Returns the merges and the text after each merge."""
    chunks = [list(map(int, c)) for c in chunks]
    merges, texts = [], {alphabet: [t for c in chunks for t in c]}
    while alphabet + len(merges) < d:
        counts = {}
        for c in chunks:
            for pair in zip(c[:-1], c[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts or max(counts.values()) < 2:
            break
        top = max(counts.values())
        a, b = min(p for p, n in counts.items() if n == top)
        new = alphabet + len(merges)
        for j, c in enumerate(chunks):
            out, i = [], 0
            while i < len(c):
                if i + 1 < len(c) and c[i] == a and c[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(c[i])
                    i += 1
            chunks[j] = out
        merges.append((a, b))
        texts[new + 1] = [t for c in chunks for t in c]
    return merges, texts


corpora = st.integers(2, 4).flatmap(
    lambda A: st.tuples(
        st.just(A),
        st.lists(
            st.lists(st.integers(0, A - 1), max_size=60).map(np.array), min_size=1, max_size=5
        ),
        st.integers(A, A + 30),
    )
)


@settings(max_examples=150, deadline=None)
@given(corpus=corpora)
def test_property_bpe_equals_the_textbook_loop(corpus):
    """Incremental pair counts (training) and the linked-list merges (encoding) give the
    textbook loop's merges, tie-breaks, texts at every size, with chunk boundaries."""
    A, chunks, d = corpus
    merges, texts = textbook_bpe(chunks, d, A)
    bpe, seen = BPE.train(chunks, d, A, snapshots=list(texts))
    assert bpe.merges == merges
    for size, text in texts.items():
        assert seen[size].tolist() == text
    encoded = bpe.encode(chunks, snapshots=list(texts))
    for size, text in texts.items():
        assert encoded[size].tolist() == text


def test_bpe_train_matches_textbook_on_runs_and_a_markov_source():
    """Long runs (a a a a a: overlapping pairs, counted twice, merged left to right) and a
    4th-order switching source, where hundreds of merges depend on earlier ones."""
    runs = [np.array([0] * 7 + [1] * 5 + [0] * 4 + [1, 0] * 3), np.array([1] * 9)]
    merges, texts = textbook_bpe(runs, 12, 2)
    bpe, seen = BPE.train(runs, 12, snapshots=list(texts))
    assert bpe.merges == merges and len(merges) >= 4
    assert all(seen[s].tolist() == t for s, t in texts.items())
    x = source(6_000, order=4).numpy()
    chunks = [x[i : i + 300] for i in range(0, x.size, 300)]
    merges, _ = textbook_bpe(chunks, 120, 2)
    assert BPE.train(chunks, 120).merges == merges and len(merges) == 118


# ------------------------------------------------------------ exact loss of fixed blocks
def empirical_block_entropy(x, r):
    """Plug-in entropy per symbol of the r-bit blocks of a long stream (Monte Carlo)."""
    blocks = FixedBlocks(r).encode(x[: x.size // r * r])
    counts = np.bincount(blocks, minlength=2**r).astype(float)
    freq = counts[counts > 0] / counts.sum()
    return float(-(freq * np.log2(freq)).sum() / r)


@pytest.mark.parametrize("k,p,q", [(1, 0.8, 0.8), (2, 0.2, 0.3), (3, 0.5, 0.8)])
def test_block_unigram_entropy_matches_monte_carlo(k, p, q):
    x = sample_switching(1, 600_000, p, q, order=k, generator=torch.Generator().manual_seed(7))[
        0
    ].numpy()
    r = np.arange(1, 9)
    exact = block_unigram_entropy(p, q, k, r)
    mc = np.array([empirical_block_entropy(x, int(ri)) for ri in r])
    # plug-in bias ~ 2^r / (2 N ln 2) per block, sampling sd ~ 1e-3: within 0.004
    assert np.abs(exact - mc).max() < 0.004, (exact, mc)


def test_block_unigram_entropy_closed_form():
    from seqtheory.sources.markov import switching_entropy_rate, switching_unigram_entropy

    H, U = switching_entropy_rate(0.8, 0.8), switching_unigram_entropy(0.8, 0.8)
    # a reference value: k = 4, r = 6
    assert abs(block_unigram_entropy(0.8, 0.8, 4, 6) - 0.9073) < 1e-4
    # r <= k: the character-level unigram loss h(pi_1), for p != q too
    for r in (1, 2, 3):
        assert block_unigram_entropy(0.2, 0.3, 3, r) == pytest.approx(
            switching_unigram_entropy(0.2, 0.3)
        )
    # r >= k: H + k (U - H) / r, vectorised over r; tends to H
    r = np.array([4, 8, 100])
    assert np.allclose(block_unigram_entropy(0.8, 0.8, 4, r), H + 4 * (U - H) / r)
    assert isinstance(block_unigram_entropy(0.8, 0.8, 4, 6), float)
    assert block_unigram_entropy(0.8, 0.8, 1, 10, base=np.e) == pytest.approx(
        block_unigram_entropy(0.8, 0.8, 1, 10) * np.log(2)
    )


def test_block_unigram_entropy_validates():
    with pytest.raises(ValueError, match="r must be >= 1"):
        block_unigram_entropy(0.8, 0.8, 2, 0)
    with pytest.raises(TypeError, match="r must be"):
        block_unigram_entropy(0.8, 0.8, 2, 2.5)
    with pytest.raises(ValueError, match="order"):
        block_unigram_entropy(0.8, 0.8, 0, 3)


def test_race_is_seeded_and_counts_characters():
    from seqtheory.tokenization import SETUP, race

    small = SETUP.cpu.__class__(n_symbols=20_000, char_length=32, token_length=8, batch_size=4)
    a = race(small, steps=4, seeds=(0,), eval_every=2, progress=False)
    b = race(small, steps=4, seeds=(0,), eval_every=2, progress=False)
    for kind in ("characters", "tokens"):
        assert np.array_equal(
            a.histories[kind][0].metric("bits/char")[1], b.histories[kind][0].metric("bits/char")[1]
        )
        assert a.chars_seen[kind][0].shape == (5,)
    assert np.all(np.diff(a.chars_seen["characters"][0]) == 4 * 32)
    assert np.all(a.chars_seen["tokens"][0][1:] >= 4 * 8)
    assert 0.5 < a.unigram_bits < 1.5
    assert (a.seed, a.device, a.setup, a.seeds) == (0, "cpu", small, (0,)) and a.seconds > 0
    c = race(small, seed=1, device="cpu", steps=4, seeds=(0,), eval_every=2, progress=False)
    assert not np.array_equal(
        a.histories["tokens"][0].metric("bits/char")[1],
        c.histories["tokens"][0].metric("bits/char")[1],
    )
    with pytest.raises(ValueError, match="kind"):
        race(small, steps=1, seeds=(0,), kinds=("words",), progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device"):
            race(small, steps=1, seeds=(0,), device="cuda", progress=False)
    with pytest.raises(TypeError, match="setup must be a TokenizationSetup"):
        race({"n_symbols": 10}, steps=1, progress=False)


def test_trap_is_seeded_and_leaves_the_global_rng_alone():
    from seqtheory.tokenization import SETUP, TRAP_CONDITIONS, run_trap

    small = SETUP.cpu.__class__(
        trap_steps=4, control_steps=2, trap_length=8, batch_size=4, trap_seeds=(0, 1)
    )
    state = torch.random.get_rng_state()
    a = run_trap(small, seed=0, device="cpu", progress=False)
    assert torch.equal(state, torch.random.get_rng_state())
    b = run_trap(small, seed=0, device="cpu", progress=False)
    assert list(a.histories) == list(TRAP_CONDITIONS)
    for label in TRAP_CONDITIONS:
        steps, losses = a.losses(label)
        assert np.array_equal(losses, b.losses(label)[1]) and losses.shape[1] == 2
    assert a.losses("p+q>1, tied")[0].tolist() == [0, 4]
    assert a.losses("p+q<1, tied")[0].tolist() == [0, 2]
    with pytest.raises(ValueError, match="label"):
        a.losses("tied")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device"):
            run_trap(small, device="cuda", progress=False)


def test_streams_name_the_logical_seeds():
    from seqtheory.tokenization import STREAMS, race, run_trap

    assert race.streams is STREAMS and run_trap.streams is STREAMS
    assert [
        STREAMS.seed(name, 2)
        for name in ("weights", "race_heldout", "race_data", "trap_heldout", "trap_data")
    ] == [2, 2, 102, 11, 12]


def test_tokenization_setup_validates():
    from seqtheory.tokenization import TokenizationSetup

    with pytest.raises(ValueError, match="lm_steps"):
        TokenizationSetup(lm_steps=0)
    with pytest.raises(TypeError, match="race_seeds"):
        TokenizationSetup(race_seeds=[0, 1])
    with pytest.raises(ValueError, match="trap_seeds entry"):
        TokenizationSetup(trap_seeds=(-1,))


# ------------------------------------------- tests added for mutants that survived
def _lz78_reference(seq, d, alphabet=2):
    """Textbook LZ78: non-overlapping phrases, each = longest known phrase + next symbol."""
    phrases = {(s,): s for s in range(alphabet)}
    i, n = 0, len(seq)
    while len(phrases) < d and i < n:
        j = i + 1
        while j < n and tuple(seq[i : j + 1]) in phrases:
            j += 1
        if j >= n:
            break
        phrases[tuple(seq[i : j + 1])] = len(phrases)
        i = j + 1  # the next phrase starts after the added symbol
    return sorted(phrases, key=phrases.get)


def test_lzw_train_phrases_do_not_overlap():
    # T4 (LZW.train: `i = j + 1` -> `i = j`): the parse must restart after the new phrase.
    seq = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1]
    # hand parse: 0 | 1 1 0 ... -> phrases 01, 10, 100, 11, 1000, 101
    want = [[0], [1], [0, 1], [1, 0], [1, 0, 0], [1, 1], [1, 0, 0, 0], [1, 0, 1]]
    got = [t.tolist() for t in LZW.train(np.array(seq), 8).tokens]
    assert got == want
    rng = np.random.default_rng(3)
    for _ in range(5):
        s = rng.integers(0, 2, 400)
        got = [tuple(t.tolist()) for t in LZW.train(s, 24).tokens]
        assert got == _lz78_reference(s.tolist(), 24)


def test_unigram_cross_entropy_smooths_tokens_never_seen_in_training():
    # T7 (dropped `minlength=vocab_size`): unseen high ids must still get smoothing mass.
    got = unigram_cross_entropy([0, 0, 1], [0, 1], vocab_size=4, n_test_symbols=2)
    p = np.array([2.5, 1.5, 0.5, 0.5]) / 5.0
    assert got == pytest.approx(-(math.log2(p[0]) + math.log2(p[1])) / 2)
    # a test token absent from training (and above the largest training id)
    got = unigram_cross_entropy([0, 1], [3], vocab_size=4, n_test_symbols=1)
    assert got == pytest.approx(-math.log2(0.5 / 4.0))


def test_lzw_encodes_tokens_longer_than_an_int64_code():
    """A near-deterministic source grows phrases of more than 63 binary symbols, which do not
    fit an integer code; the parse must still cover the data with dictionary tokens."""
    rng = np.random.default_rng(0)
    x = (rng.random(100_000) < 0.02).astype(int)
    lzw = LZW.train(x, 1024, 2)
    assert max(t.size for t in lzw.tokens) > 63
    ids = lzw.encode(x[:20_000])
    assert np.array_equal(np.concatenate([lzw.tokens[i] for i in ids]), x[:20_000])

"""Unit tests for seqtheory.core.models: shapes, causal masking, patterns, tying, config errors."""

import pytest
import torch

from seqtheory import Transformer, TransformerConfig, attention_to_offset, seed_everything
from seqtheory.core.models import POS_ENCODINGS

VARIANTS = [
    dict(pos_encoding=p, attn_only=a, layer_norm=ln, tie_weights=tie)
    for p in POS_ENCODINGS
    for a, ln, tie in [(True, False, False), (False, True, True)]
]


def make(**kw):
    seed_everything(0)
    base = dict(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8)
    return Transformer(TransformerConfig(**{**base, **kw}))


@pytest.mark.parametrize("kw", VARIANTS)
def test_shapes_and_cache(kw):
    model = make(**kw)
    x = torch.randint(7, (3, 10))
    logits, cache = model(x, return_cache=True)
    assert logits.shape == (3, 10, 7)
    assert len(cache.attn) == 2 and all(a.shape == (3, 2, 10, 10) for a in cache.attn)
    assert len(cache.resid) == 3 and all(r.shape == (3, 10, 8) for r in cache.resid)
    assert torch.allclose(model(x), logits)


@pytest.mark.parametrize("kw", VARIANTS)
def test_causal_masking_future_tokens_do_not_change_the_past(kw):
    model = make(**kw)
    x = torch.randint(7, (4, 12))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1 + torch.randint(5, y[:, 6:].shape)) % 7  # change every future token
    assert (y[:, 6:] != x[:, 6:]).all()
    lx, ly = model(x), model(y)
    assert torch.allclose(lx[:, :6], ly[:, :6], atol=1e-6)
    assert not torch.allclose(lx[:, 6:], ly[:, 6:])


@pytest.mark.parametrize("pos", POS_ENCODINGS)
def test_attention_patterns_are_causal_distributions(pos):
    model = make(pos_encoding=pos)
    for a in model.attention_patterns(torch.randint(7, (2, 9))):
        assert torch.allclose(a.sum(-1), torch.ones(2, 2, 9))
        assert (a.triu(diagonal=1) == 0).all()


def test_positional_information_matters_except_for_none():
    """One layer without positions sees its prefix as a set: swapping two earlier tokens is
    invisible to a later query, while every positional encoding notices."""
    x = torch.tensor([[1, 2, 3, 1, 2, 3]])
    swapped = torch.tensor([[2, 1, 3, 1, 2, 3]])  # same multiset before position 2
    for pos in POS_ENCODINGS:
        windows = (2, 0) if pos == "hard_alibi" else ()  # window cuts the swapped pair
        model = make(pos_encoding=pos, n_layers=1, windows=windows)
        with torch.no_grad():
            new = torch.randn_like(model.blocks[0].attn.qkv.weight)
            model.blocks[0].attn.qkv.weight.copy_(new)
            if pos == "relative":
                model.blocks[0].attn.rel_bias.normal_()
        same = torch.allclose(model(x)[0, 2], model(swapped)[0, 2], atol=1e-5)
        assert same == (pos == "none"), pos


def test_relative_bias_can_make_a_previous_token_head():
    model = make(pos_encoding="relative", n_layers=1, n_heads=1)
    with torch.no_grad():
        model.blocks[0].attn.qkv.weight.zero_()
        model.blocks[0].attn.rel_bias.zero_()
        model.blocks[0].attn.rel_bias[0, 1] = 20.0
    a = model.attention_patterns(torch.randint(7, (1, 10)))[0]
    assert attention_to_offset(a, 1).item() > 0.99


def test_weight_tying():
    tied, untied = make(tie_weights=True), make(tie_weights=False)
    assert tied.unembed.weight is tied.tok_emb.weight
    assert untied.unembed.weight is not untied.tok_emb.weight
    assert untied.num_params() - tied.num_params() == 7 * 8


def test_attn_only_has_no_mlp_and_per_layer_heads():
    model = make(attn_only=True, n_heads=(2, 1))
    assert all(b.mlp is None for b in model.blocks)
    shapes = [a.shape[1] for a in model.attention_patterns(torch.randint(7, (1, 5)))]
    assert shapes == [2, 1]


def test_determinism_under_seed():
    a, b = make(), make()
    x = torch.randint(7, (2, 8))
    assert torch.equal(a(x), b(x))


@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(d_model=10, n_heads=3), ValueError, "divisible"),
        (dict(pos_encoding="sinusoid"), ValueError, "pos_encoding must be one of"),
        (dict(n_layers=0), ValueError, "n_layers must be >= 1"),
        (dict(n_heads=(1, 2, 3)), ValueError, "one per layer"),
        (dict(d_model=6, n_heads=2, pos_encoding="rotary"), ValueError, "even head size"),
        (dict(vocab_size=2.5), TypeError, "vocab_size must be an int"),
        (dict(dropout=1.0), ValueError, "dropout must be <"),
        (dict(layer_norm="yes"), TypeError, "layer_norm must be a bool"),
    ],
)
def test_bad_configs_raise_clear_errors(kw, err, match):
    with pytest.raises(err, match=match):
        make(**kw)


@pytest.mark.parametrize(
    "x, err, match",
    [
        (torch.zeros(3, dtype=torch.long), ValueError, "shape"),
        (torch.zeros(1, 13, dtype=torch.long), ValueError, "max_len=12"),
        (torch.full((1, 4), 7), ValueError, "0..6"),
        (torch.zeros(1, 4), TypeError, "integer token ids"),
        ([[1, 2]], TypeError, "torch.Tensor"),
    ],
)
def test_bad_inputs_raise_clear_errors(x, err, match):
    with pytest.raises(err, match=match):
        make()(x)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(
    pos=st.sampled_from(POS_ENCODINGS),
    heads=st.sampled_from([1, 2, 4]),
    layers=st.integers(1, 3),
    attn_only=st.booleans(),
    T=st.integers(2, 12),
    cut=st.integers(1, 11),
    seed=st.integers(0, 2**16),
)
def test_property_causal_and_normalised_for_any_config(pos, heads, layers, attn_only, T, cut, seed):
    """For any configuration: attention rows are distributions over the past, and tokens
    after position `cut` never change the logits before it."""
    cut = min(cut, T - 1)
    torch.manual_seed(seed)
    model = Transformer(
        TransformerConfig(
            vocab_size=5,
            max_len=12,
            n_layers=layers,
            n_heads=heads,
            d_model=8,
            attn_only=attn_only,
            pos_encoding=pos,
        )
    )
    x = torch.randint(5, (2, T))
    y = x.clone()
    y[:, cut:] = (y[:, cut:] + 1) % 5
    logits, cache = model(x, return_cache=True)
    assert torch.allclose(logits[:, :cut], model(y)[:, :cut], atol=1e-5)
    for a in cache.attn:
        assert torch.allclose(a.sum(-1), torch.ones_like(a[..., 0]), atol=1e-5)
        assert (a.triu(diagonal=1) == 0).all()


def test_embeds_input_replaces_token_embedding():
    from seqtheory.core.models import Transformer, TransformerConfig

    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=5, max_len=8, d_model=8, n_heads=2))
    idx = torch.randint(5, (3, 6))
    assert torch.allclose(model(embeds=model.tok_emb(idx)), model(idx), atol=1e-6)
    with pytest.raises(TypeError, match="exactly one"):
        model()
    with pytest.raises(TypeError, match="exactly one"):
        model(idx, embeds=model.tok_emb(idx))
    with pytest.raises(ValueError, match="d_model"):
        model(embeds=torch.randn(3, 6, 4))
    with pytest.raises(ValueError, match="max_len"):
        model(embeds=torch.randn(3, 9, 8))
    with pytest.raises(TypeError, match="floating"):
        model(embeds=idx[..., None].expand(3, 6, 8))


def test_hard_alibi_heads_see_only_their_window():
    model = make(pos_encoding="hard_alibi", n_layers=1, n_heads=2, windows=(2, 0))
    pattern = model.attention_patterns(torch.tensor([[1, 2, 3, 4, 5, 6]]))[0][0]  # (H, T, T)
    dist = torch.arange(6)[:, None] - torch.arange(6)[None, :]
    assert torch.all(pattern[0][dist >= 2] == 0) and torch.all(pattern[0][dist == 1] > 0)
    assert torch.all(pattern[1][dist >= 0] > 0)  # the global head sees every key
    # windowed heads make the model's outputs independent of absolute position
    x = torch.randint(7, (1, 6))
    long = torch.cat([torch.randint(7, (1, 5)), x], dim=1)
    local = make(pos_encoding="hard_alibi", n_layers=2, n_heads=2, windows=(2, 3))
    assert torch.allclose(local(x)[0, -1], local(long)[0, -1], atol=1e-5)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(pos_encoding="hard_alibi", n_heads=2, windows=(1,)), "one window per head"),
        (dict(pos_encoding="hard_alibi", n_heads=(1, 2), windows=(1,)), "one window per head"),
        (dict(pos_encoding="hard_alibi", n_layers=2, windows=((1, 0),)), "one per layer"),
        (dict(pos_encoding="learned", windows=(1, 2)), "only apply to pos_encoding"),
    ],
)
def test_hard_alibi_config_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        make(**kw)


def test_a_seeded_transformer_is_reproducible_and_leaves_the_global_rng_alone():
    cfg = TransformerConfig(vocab_size=5, max_len=8, n_layers=1, n_heads=1, d_model=8)
    state = torch.random.get_rng_state()
    a, b = Transformer(cfg, seed=3), Transformer(cfg, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (na, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(pa, pb), na
    c = Transformer(cfg, seed=4)
    assert not torch.equal(a.tok_emb.weight, c.tok_emb.weight)
    with pytest.raises(ValueError, match="seed"):
        Transformer(cfg, seed=-1)


def test_rotary_scores_depend_only_on_the_offset():
    """On a constant input, queries and keys differ only by their rotation, so a rotary
    head's score for (i, j) depends on i - j alone: A[i, i-d] / A[i, i] must not depend on
    i.  A sign error in the rotation (keys turned the other way) makes it depend on i + j."""
    cfg = TransformerConfig(
        vocab_size=3,
        max_len=16,
        n_layers=1,
        n_heads=2,
        d_model=16,
        pos_encoding="rotary",
        init_std=0.5,
    )
    model = Transformer(cfg, seed=0)
    _, cache = model(torch.full((1, 16), 2), return_cache=True)
    A = cache.attn[0][0].double()  # (heads, T, T)
    for d in (1, 3, 7):
        ratios = torch.stack([A[:, i, i - d] / A[:, i, i] for i in range(d, 16)], dim=1)
        assert torch.allclose(ratios, ratios[:, :1].expand_as(ratios), rtol=1e-4), d
        assert (ratios - 1).abs().max() > 1e-3  # the scores do depend on the offset


def test_config_keeps_its_fields_and_derives_heads_and_windows():
    cfg = TransformerConfig(
        n_layers=2,
        n_heads=[2, 4],
        d_model=8,
        pos_encoding="hard_alibi",
        windows=[[1, 0], [1, 2, 3, 0]],
    )
    assert cfg.n_heads == [2, 4] and cfg.windows == [[1, 0], [1, 2, 3, 0]]  # as given
    assert cfg.heads == (2, 4) and cfg.layer_windows == ((1, 0), (1, 2, 3, 0))
    flat = TransformerConfig(
        n_layers=3, n_heads=2, d_model=8, pos_encoding="hard_alibi", windows=(2, 0)
    )
    assert flat.windows == (2, 0) and flat.layer_windows == ((2, 0),) * 3
    default = TransformerConfig(n_layers=2, n_heads=4, d_model=8, pos_encoding="hard_alibi")
    assert default.windows == () and default.layer_windows == ((1, 2, 3, 0),) * 2
    assert TransformerConfig(n_layers=3, n_heads=2, d_model=8).heads == (2, 2, 2)


def test_seed_builds_the_weights_under_seeded_and_num_params_counts_them_once():
    from dataclasses import replace

    from seqtheory import seeded
    from seqtheory.core.models import num_params

    cfg = TransformerConfig(
        vocab_size=5, max_len=8, n_layers=2, n_heads=2, d_model=8, tie_weights=True
    )
    with seeded(5, base=2):
        want = Transformer(cfg)
    got = Transformer(cfg, seed=5, base=2)
    for (name, a), (_, b) in zip(want.state_dict().items(), got.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    untied = Transformer(replace(cfg, tie_weights=False))
    assert num_params(got) == got.num_params() == num_params(untied) - 5 * 8  # V x C once
    with pytest.raises(ValueError, match="pass seed as well"):
        Transformer(cfg, base=2)
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        num_params(cfg)

"""Tests of the transformer's interventions (head masks, attention overrides) and the
attention-by-offset statistic used to read a circuit off a trained model."""
import copy

import pytest
import torch

from seqtheory import Ensemble, Transformer, TransformerConfig, seed_everything
from seqtheory.models import POS_ENCODINGS, attention_by_offset, uniform_causal_pattern


def make(**kw):
    seed_everything(0)
    base = dict(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **kw}))


X = torch.randint(7, (3, 10), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("pos", POS_ENCODINGS)
def test_off_by_default_and_identity_interventions_change_nothing(pos):
    model = make(pos_encoding=pos)
    logits, cache = model(X, return_cache=True)
    # empty interventions, and overriding a head by its own pattern, give the same function
    assert torch.allclose(model(X, head_mask={}, attn_override={}), logits, atol=1e-6)
    own = model(X, attn_override={(0, 1): lambda p: p, 1: lambda p: p})
    assert torch.allclose(own, logits, atol=1e-6)
    fixed = model(X, attn_override={(1, 0): cache.attn[1][:, 0]})
    assert torch.allclose(fixed, logits, atol=1e-6)


def test_uniform_override_equals_zero_query_key_weights():
    """Zero queries and keys give equal scores, hence the uniform causal pattern."""
    model = make(pos_encoding="none")
    C = model.cfg.d_model
    blank = copy.deepcopy(model)
    with torch.no_grad():
        blank.blocks[1].attn.qkv.weight[: 2 * C] = 0.0            # q and k rows
    want = blank(X)
    got, cache = model(X, return_cache=True, attn_override={1: uniform_causal_pattern(10)})
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(cache.attn[1], uniform_causal_pattern(10).expand(3, 2, 10, 10))
    # the other layer's pattern is the model's own
    assert torch.allclose(cache.attn[0], model(X, return_cache=True)[1].attn[0])


def test_override_of_one_head_leaves_the_other_and_accepts_per_sequence_patterns():
    model = make()
    _, cache = model(X, return_cache=True)
    per_seq = cache.attn[0][:, 0].flip(0)                         # (B, T, T), other sequences
    _, new = model(X, return_cache=True, attn_override={(0, 0): per_seq})
    assert torch.allclose(new.attn[0][:, 0], per_seq)
    assert torch.allclose(new.attn[0][:, 1], cache.attn[0][:, 1])
    # a (1, T, T) pattern broadcasts over the batch
    mean = cache.attn[0][:, 0].mean(0, keepdim=True)
    _, new = model(X, return_cache=True, attn_override={(0, 0): mean})
    assert torch.allclose(new.attn[0][:, 0], mean.expand(3, 10, 10))


@pytest.mark.parametrize("attn_only", [True, False])
def test_masking_every_head_of_a_layer_equals_zeroing_its_output(attn_only):
    model = make(attn_only=attn_only)
    zeroed = copy.deepcopy(model)
    with torch.no_grad():
        zeroed.blocks[0].attn.out.weight.zero_()
    assert torch.allclose(model(X, head_mask={0: [0, 1]}), zeroed(X), atol=1e-6)
    # one head: zero the columns of the output projection that read that head
    half = copy.deepcopy(model)
    with torch.no_grad():
        half.blocks[1].attn.out.weight[:, 4:] = 0.0                # head 1 of 2, d_head 4
    assert torch.allclose(model(X, head_mask={1: 1}), half(X), atol=1e-6)
    assert not torch.allclose(model(X, head_mask={1: 1}), model(X))


def test_interventions_are_differentiable_and_pass_through_an_ensemble():
    model = make()
    out = model(X, head_mask={0: 0}, attn_override={(1, 1): uniform_causal_pattern(10)})
    out.sum().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None
    ens = Ensemble(lambda: make(), seeds=[0, 1])
    kw = dict(head_mask={0: 1}, attn_override={(1, 0): uniform_causal_pattern(10)})
    both = ens(X, shared=True, **kw)
    for m in range(2):
        assert torch.allclose(both[m], ens.member(m)(X, **kw), atol=1e-5)


@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(head_mask=[0]), TypeError, "head_mask must be a dict"),
        (dict(head_mask={2: 0}), ValueError, "head_mask layer must be in 0..1"),
        (dict(head_mask={0: 2}), ValueError, "head_mask head must be in 0..1"),
        (dict(head_mask={0: "a"}), TypeError, "head_mask head must be an int"),
        (dict(attn_override=uniform_causal_pattern(10)), TypeError, "attn_override must be"),
        (dict(attn_override={(0, 5): uniform_causal_pattern(10)}), ValueError, "head must"),
        (dict(attn_override={-1: uniform_causal_pattern(10)}), ValueError, "layer must be"),
        (dict(attn_override={"0": uniform_causal_pattern(10)}), TypeError, "keys must be"),
        (dict(attn_override={0: 0.5}), TypeError, "values must be tensors or functions"),
        (dict(attn_override={0: uniform_causal_pattern(9)}), ValueError, r"shape \(10, 10\)"),
        (dict(attn_override={0: torch.ones(2, 10, 10).tril() / 10}), ValueError, "shape"),
        (dict(attn_override={0: torch.ones(10, 10) / 10}), ValueError, "future keys"),
        (dict(attn_override={0: 2 * uniform_causal_pattern(10)}), ValueError, "sum to 1"),
        (dict(attn_override={0: torch.eye(10, dtype=torch.long)}), TypeError, "floating"),
        (dict(attn_override={0: lambda p: p[:, :5]}), ValueError, "shape"),
        (dict(attn_override={0: lambda p: None}), TypeError, "floating-point tensor"),
    ],
)
def test_bad_interventions_raise_clear_errors(kw, err, match):
    with pytest.raises(err, match=match):
        make()(X, **kw)


def test_negative_weights_are_rejected():
    bad = uniform_causal_pattern(10).clone()
    bad[3, 0], bad[3, 1] = -0.25, bad[3, 1] + 0.5
    with pytest.raises(ValueError, match="non-negative"):
        make()(X, attn_override={(0, 0): bad})


def test_uniform_causal_pattern():
    u = uniform_causal_pattern(5)
    assert torch.allclose(u.sum(-1), torch.ones(5)) and (u.triu(1) == 0).all()
    assert torch.allclose(u[4], torch.full((5,), 0.2))
    with pytest.raises(ValueError, match="T must be >= 1"):
        uniform_causal_pattern(0)
    with pytest.raises(TypeError, match="T must be an int"):
        uniform_causal_pattern(2.0)


def test_attention_by_offset():
    T = 6
    prev = torch.zeros(T, T)
    prev[0, 0] = 1.0
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0              # previous-token head
    assert torch.allclose(attention_by_offset(prev, 2), torch.tensor([0.0, 1.0, 0.0, 0.0]))
    u = uniform_causal_pattern(T)
    got = attention_by_offset(u, 1)                                  # queries t = 1..5
    t = torch.arange(1, T, dtype=torch.float)
    assert torch.allclose(got, torch.stack([(1 / (t + 1)).mean(), (1 / (t + 1)).mean(),
                                            ((t - 1) / (t + 1)).mean()]))
    # the bins of any causal pattern sum to 1; leading dimensions are kept
    p = make().attention_patterns(X)[0]                              # (B, H, T, T)
    by = attention_by_offset(p, 3)
    assert by.shape == (3, 2, 5) and torch.allclose(by.sum(-1), torch.ones(3, 2))
    assert (by >= -1e-6).all()
    with pytest.raises(ValueError, match="max_offset must be in 0..5"):
        attention_by_offset(u, 6)
    with pytest.raises(ValueError, match="ending in"):
        attention_by_offset(torch.ones(3, 4), 1)
    with pytest.raises(ValueError, match="ending in"):
        attention_by_offset([[1.0]], 0)


def test_attention_without_offset():
    from seqtheory.models import attention_without_offset

    u = uniform_causal_pattern(4)
    got = attention_without_offset(u, 1)
    want = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0], [0.5, 0, 0.5, 0], [1 / 3, 1 / 3, 0, 1 / 3]])
    assert torch.allclose(got, want)
    p = make().attention_patterns(X)[0]
    for o in (0, 1, 3):
        q = attention_without_offset(p, o)
        assert torch.allclose(q.sum(-1), torch.ones(3, 2, 10), atol=1e-6)
        assert torch.allclose(attention_by_offset(q, 3)[..., o], torch.zeros(3, 2), atol=1e-6)
    # usable as an override, and then the cache shows no weight at that offset
    _, cache = make()(X, return_cache=True,
                      attn_override={(0, 0): lambda a: attention_without_offset(a, 1)})
    assert cache.attn[0][:, 0].diagonal(offset=-1, dim1=-2, dim2=-1).abs().max() < 1e-6
    with pytest.raises(ValueError, match="offset must be in 0..3"):
        attention_without_offset(u, 4)
    with pytest.raises(ValueError, match="ending in"):
        attention_without_offset(torch.ones(2, 3), 0)


def test_circuit_ablations_on_an_untrained_icl_model():
    from seqtheory.incontext import ABLATIONS, SETUP, ICLEvaluator, circuit_ablations

    setup = SETUP.pick("cpu").replace(T=20)
    ev = ICLEvaluator(setup, n=8)
    seed_everything(0)
    model = setup.model().train()
    out = circuit_ablations(model, ev)
    assert list(out) == ["none", *ABLATIONS] and model.training     # mode restored
    assert abs(out["none"] - ev(model)["loss"]) < 1e-6
    # at initialisation every pattern is close to uniform: ablations change little
    assert all(abs(v - out["none"]) < 0.01 for v in out.values()), out
    with pytest.raises(TypeError, match="model must be a seqtheory Transformer"):
        circuit_ablations(torch.nn.Linear(2, 2), ev)
    with pytest.raises(TypeError, match="evaluator must be an ICLEvaluator"):
        circuit_ablations(model, None)


def _by_hand(model, x, patterns, keep):
    """The forward pass of a 1-layer attention-only model without LayerNorm, written out:
    logits = W_U (e + sum_h keep_h * W_O^h (A^h (e W_V^h))), with e = token + position
    embeddings, A^h the given (B, T, T) pattern of head h and keep_h 0 or 1."""
    W = model.blocks[0].attn
    H, C = W.n_heads, model.cfg.d_model
    d = C // H
    e = model.tok_emb.weight[x] + model.pos_emb.weight[: x.shape[1]]     # (B, T, C)
    v = e @ W.qkv.weight[2 * C:].T                                         # (B, T, C)
    out = torch.zeros_like(e)
    for h in range(H):
        z = patterns[h] @ v[..., h * d:(h + 1) * d]                        # (B, T, d)
        out = out + keep[h] * z @ W.out.weight[:, h * d:(h + 1) * d].T    # (B, T, C)
    return (e + out) @ model.unembed.weight.T                              # (B, T, V)


def test_interventions_match_a_hand_computation():
    """attn_override and head_mask against the forward pass written out by hand: the
    model's own patterns reproduce its logits; an overridden head uses exactly the given
    pattern; a masked head contributes nothing."""
    model = make(n_layers=1, attn_only=True, layer_norm=False)
    with torch.no_grad():
        _, cache = model(X, return_cache=True)
        own = [cache.attn[0][:, h] for h in range(2)]
        assert torch.allclose(model(X), _by_hand(model, X, own, [1, 1]), atol=1e-5)
        u = uniform_causal_pattern(10).expand(3, 10, 10)
        got = model(X, attn_override={(0, 1): uniform_causal_pattern(10)})
        assert torch.allclose(got, _by_hand(model, X, [own[0], u], [1, 1]), atol=1e-5)
        got = model(X, head_mask={0: 0})
        assert torch.allclose(got, _by_hand(model, X, own, [0, 1]), atol=1e-5)
        got = model(X, head_mask={0: 1}, attn_override={0: uniform_causal_pattern(10)})
        assert torch.allclose(got, _by_hand(model, X, [u, u], [1, 0]), atol=1e-5)

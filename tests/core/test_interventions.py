"""Tests of the transformer's hooks and the interventions built on them (head masks,
attention overrides, caching)."""

import copy

import pytest
import torch

from seqtheory import Ensemble, Transformer, TransformerConfig, seed_everything
from seqtheory.core.attention import mask_heads, override_pattern, uniform_causal_pattern
from seqtheory.core.models import POS_ENCODINGS, cache_into


def make(**kw):
    seed_everything(0)
    base = dict(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **kw}))


LAYER_POINTS = ("q", "k", "v", "scores", "pattern", "heads", "attn_out", "resid_mid", "mlp_out")
X = torch.randint(7, (3, 10), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("pos", POS_ENCODINGS)
def test_off_by_default_and_identity_interventions_change_nothing(pos):
    model = make(pos_encoding=pos)
    logits, cache = model(X, return_cache=True)
    # empty hooks, hooks that keep the tensor, and overriding a head by its own pattern,
    # give the same function
    assert torch.allclose(
        model(X, hooks={**mask_heads({}), **override_pattern({})}), logits, atol=1e-6
    )
    keep = {name: lambda t: None for name in model.hook_points}
    assert torch.allclose(model(X, hooks=keep), logits, atol=1e-6)
    own = model(X, hooks=override_pattern({(0, 1): lambda p: p, 1: lambda p: p}))
    assert torch.allclose(own, logits, atol=1e-6)
    fixed = model(X, hooks=override_pattern({(1, 0): cache.attn[1][:, 0]}))
    assert torch.allclose(fixed, logits, atol=1e-6)


def test_uniform_override_equals_zero_query_key_weights():
    """Zero queries and keys give equal scores, hence the uniform causal pattern."""
    model = make(pos_encoding="none")
    C = model.cfg.d_model
    blank = copy.deepcopy(model)
    with torch.no_grad():
        blank.blocks[1].attn.qkv.weight[: 2 * C] = 0.0  # q and k rows
    want = blank(X)
    got, cache = model(
        X, return_cache=True, hooks=override_pattern({1: uniform_causal_pattern(10)})
    )
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(cache.attn[1], uniform_causal_pattern(10).expand(3, 2, 10, 10))
    # the other layer's pattern is the model's own
    assert torch.allclose(cache.attn[0], model(X, return_cache=True)[1].attn[0])


def test_override_of_one_head_leaves_the_other_and_accepts_per_sequence_patterns():
    model = make()
    _, cache = model(X, return_cache=True)
    per_seq = cache.attn[0][:, 0].flip(0)  # (B, T, T), other sequences
    _, new = model(X, return_cache=True, hooks=override_pattern({(0, 0): per_seq}))
    assert torch.allclose(new.attn[0][:, 0], per_seq)
    assert torch.allclose(new.attn[0][:, 1], cache.attn[0][:, 1])
    # a (1, T, T) pattern broadcasts over the batch
    mean = cache.attn[0][:, 0].mean(0, keepdim=True)
    _, new = model(X, return_cache=True, hooks=override_pattern({(0, 0): mean}))
    assert torch.allclose(new.attn[0][:, 0], mean.expand(3, 10, 10))


@pytest.mark.parametrize("attn_only", [True, False])
def test_masking_every_head_of_a_layer_equals_zeroing_its_output(attn_only):
    model = make(attn_only=attn_only)
    zeroed = copy.deepcopy(model)
    with torch.no_grad():
        zeroed.blocks[0].attn.out.weight.zero_()
    assert torch.allclose(model(X, hooks=mask_heads({0: [0, 1]})), zeroed(X), atol=1e-6)
    # one head: zero the columns of the output projection that read that head
    half = copy.deepcopy(model)
    with torch.no_grad():
        half.blocks[1].attn.out.weight[:, 4:] = 0.0  # head 1 of 2, d_head 4
    assert torch.allclose(model(X, hooks=mask_heads({1: 1})), half(X), atol=1e-6)
    assert not torch.allclose(model(X, hooks=mask_heads({1: 1})), model(X))


def test_interventions_are_differentiable_and_pass_through_an_ensemble():
    model = make()
    hooks = {**mask_heads({0: 0}), **override_pattern({(1, 1): uniform_causal_pattern(10)})}
    model(X, hooks=hooks).sum().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None
    ens = Ensemble(lambda: make(), seeds=[0, 1])
    kw = dict(
        hooks={**mask_heads({0: 1}), **override_pattern({(1, 0): uniform_causal_pattern(10)})}
    )
    both = ens(X, shared=True, **kw)
    for m in range(2):
        assert torch.allclose(both[m], ens.member(m)(X, **kw), atol=1e-5)


U = uniform_causal_pattern(10)


@pytest.mark.parametrize(
    "build, err, match",
    [
        (lambda: mask_heads([0]), TypeError, "heads must be a dict"),
        (lambda: mask_heads({2: 0}), ValueError, "no point 'heads.2'"),
        (lambda: mask_heads({0: 2}), ValueError, "mask_heads head must be in 0..1"),
        (lambda: mask_heads({0: "a"}), TypeError, "mask_heads head must be an int"),
        (lambda: mask_heads({-1: 0}), ValueError, "mask_heads layer must be >= 0"),
        (lambda: override_pattern(U), TypeError, "patterns must be a dict"),
        (lambda: override_pattern({(0, 5): U}), ValueError, "head must be in 0..1"),
        (lambda: override_pattern({-1: U}), ValueError, "layer must be"),
        (lambda: override_pattern({2: U}), ValueError, "no point 'pattern.2'"),
        (lambda: override_pattern({"0": U}), TypeError, "keys must be"),
        (lambda: override_pattern({0: 0.5}), TypeError, "values must be tensors or functions"),
        (lambda: override_pattern({0: uniform_causal_pattern(9)}), ValueError, r"shape \(10, 10\)"),
        (lambda: override_pattern({0: torch.ones(2, 10, 10).tril() / 10}), ValueError, "shape"),
        (lambda: override_pattern({0: torch.ones(10, 10) / 10}), ValueError, "future keys"),
        (lambda: override_pattern({0: 2 * U}), ValueError, "sum to 1"),
        (lambda: override_pattern({0: torch.eye(10, dtype=torch.long)}), TypeError, "floating"),
        (lambda: override_pattern({0: lambda p: p[:, :5]}), ValueError, "shape"),
        (lambda: override_pattern({0: lambda p: None}), TypeError, "floating-point tensor"),
        (lambda: [0], TypeError, "hooks must be a dict"),
        (lambda: {"attn.0": lambda t: t}, ValueError, "no point 'attn.0'.*resid.0, q.0, k.0"),
        (lambda: {"pattern.0": 3}, TypeError, "must be a function or a list of functions"),
        (lambda: {"resid.1": lambda t: t[:, :2]}, ValueError, "resid.1 must return None or"),
        (lambda: {"scores.1": lambda t: 0.0}, ValueError, "must return None or a tensor"),
    ],
)
def test_bad_hooks_raise_clear_errors(build, err, match):
    with pytest.raises(err, match=match):
        make()(X, hooks=build())


def test_negative_weights_are_rejected():
    bad = uniform_causal_pattern(10).clone()
    bad[3, 0], bad[3, 1] = -0.25, bad[3, 1] + 0.5
    with pytest.raises(ValueError, match="non-negative"):
        make()(X, hooks=override_pattern({(0, 0): bad}))


def test_hooks_see_every_point_in_order_and_can_replace_the_residual_stream():
    model = make()
    seen = []
    model(
        X,
        hooks={
            name: lambda t, name=name: seen.append((name, t.shape)) for name in model.hook_points
        },
    )
    assert (
        [name for name, _ in seen]
        == list(model.hook_points)
        == ["resid.0"]
        + [f"{p}.0" for p in LAYER_POINTS]
        + ["resid.1"]
        + [f"{p}.1" for p in LAYER_POINTS]
        + ["resid.2"]
    )
    shapes = dict(seen)
    assert shapes["scores.1"] == shapes["pattern.1"] == (3, 2, 10, 10)
    assert shapes["heads.0"] == (3, 2, 10, 4) and shapes["resid.2"] == (3, 10, 8)
    # the cache is a hook that stores: it holds what the model computed, after other hooks
    store = {}
    logits, cache = model(X, return_cache=True, hooks=cache_into(store, model.hook_points))
    assert torch.equal(store["pattern.1"], cache.attn[1])
    assert all(torch.equal(store[f"resid.{i}"], cache.resid[i]) for i in range(3))
    assert torch.equal(logits, model(X, return_cache=True)[0])  # storing changes nothing
    # replacing the residual stream after the last block by zeros leaves only the biases
    # of the final LayerNorm: every position gets the same logits
    out = model(X, hooks={"resid.2": lambda r: torch.zeros_like(r)})
    assert torch.allclose(out, out[:1, :1].expand_as(out))
    # scores with every key but the first masked out give a pattern on key 0 only
    first = model(
        X,
        return_cache=True,
        hooks={"scores.0": lambda s: s.masked_fill(torch.arange(10) > 0, float("-inf"))},
    )[1]
    assert torch.equal(first.attn[0][..., 0], torch.ones(3, 2, 10))
    # a list of functions runs in order
    twice = model(X, hooks={"resid.0": [lambda r: 2 * r, lambda r: r + 1]})
    assert torch.allclose(twice, model(X, hooks={"resid.0": lambda r: 2 * r + 1}))
    with pytest.raises(TypeError, match="store must be a dict"):
        cache_into([], ["resid.0"])


def test_circuit_ablations_on_an_untrained_icl_model():
    from seqtheory.incontext import ABLATIONS, SETUP, ICLEvaluator, circuit_ablations

    setup = SETUP.pick("cpu").replace(T=20)
    ev = ICLEvaluator(setup, n=8)
    seed_everything(0)
    model = setup.model().train()
    out = circuit_ablations(model, ev)
    assert list(out) == ["none", *ABLATIONS] and model.training  # mode restored
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
    e = model.tok_emb.weight[x] + model.pos_emb.weight[: x.shape[1]]  # (B, T, C)
    v = e @ W.qkv.weight[2 * C :].T  # (B, T, C)
    out = torch.zeros_like(e)
    for h in range(H):
        z = patterns[h] @ v[..., h * d : (h + 1) * d]  # (B, T, d)
        out = out + keep[h] * z @ W.out.weight[:, h * d : (h + 1) * d].T  # (B, T, C)
    return (e + out) @ model.unembed.weight.T  # (B, T, V)


def test_interventions_match_a_hand_computation():
    """override_pattern and mask_heads against the forward pass written out by hand: the
    model's own patterns reproduce its logits; an overridden head uses exactly the given
    pattern; a masked head contributes nothing."""
    model = make(n_layers=1, attn_only=True, layer_norm=False)
    with torch.no_grad():
        _, cache = model(X, return_cache=True)
        own = [cache.attn[0][:, h] for h in range(2)]
        assert torch.allclose(model(X), _by_hand(model, X, own, [1, 1]), atol=1e-5)
        u = uniform_causal_pattern(10).expand(3, 10, 10)
        got = model(X, hooks=override_pattern({(0, 1): uniform_causal_pattern(10)}))
        assert torch.allclose(got, _by_hand(model, X, [own[0], u], [1, 1]), atol=1e-5)
        got = model(X, hooks=mask_heads({0: 0}))
        assert torch.allclose(got, _by_hand(model, X, own, [0, 1]), atol=1e-5)
        got = model(
            X, hooks={**mask_heads({0: 1}), **override_pattern({0: uniform_causal_pattern(10)})}
        )
        assert torch.allclose(got, _by_hand(model, X, [u, u], [1, 0]), atol=1e-5)

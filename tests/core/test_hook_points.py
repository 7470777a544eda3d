"""The hook points TransformerLens readers expect (q, k, v, per-head output, attention out,
mid-residual, MLP out), combine(), the cache of every point, and which attention kernel runs:
the fused F.scaled_dot_product_attention unless a hook reads the scores or the pattern."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqtheory import Ensemble, Transformer, TransformerConfig, seed_everything, train
from seqtheory.core.attention import mask_heads, override_pattern, uniform_causal_pattern
from seqtheory.core.models import cache_into, combine, explicit_attention, unchecked_inputs
from seqtheory.tasks import previous_token_batch


def make(**kw):
    seed_everything(0)
    base = dict(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **kw}))


X = torch.randint(7, (3, 10), generator=torch.Generator().manual_seed(0))


def test_the_cache_holds_every_point_and_they_add_up():
    # fails if a point held the wrong tensor: each identity below recomputes one from others
    model = make().eval()
    _, cache = model(X, return_cache=True)
    assert set(model.hook_points) == set(cache.points)
    q, k, v = cache["q.0"], cache["k.0"], cache["v.0"]
    assert q.shape == k.shape == v.shape == (3, 2, 10, 4)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(4)).masked_fill(
        ~torch.ones(10, 10, dtype=torch.bool).tril(), -math.inf
    )
    assert torch.allclose(cache["scores.0"], scores, atol=1e-6)
    assert torch.allclose(cache["heads.0"], cache["pattern.0"] @ v, atol=1e-6)
    block = model.blocks[0]
    z = cache["heads.0"].transpose(1, 2).reshape(3, 10, 8)
    assert torch.allclose(cache["attn_out.0"], block.attn.out(z), atol=1e-6)
    assert torch.allclose(cache["resid_mid.0"], cache["resid.0"] + cache["attn_out.0"])
    assert torch.allclose(cache["mlp_out.0"], block.mlp(block.ln2(cache["resid_mid.0"])))
    assert torch.allclose(cache["resid.1"], cache["resid_mid.0"] + cache["mlp_out.0"])
    with pytest.raises(KeyError, match="no hook point 'hook_q'"):
        cache["hook_q"]


def test_an_attention_only_model_has_no_mlp_points():
    model = make(attn_only=True)
    assert not any(p.startswith(("resid_mid", "mlp_out")) for p in model.hook_points)
    with pytest.raises(ValueError, match="no point 'mlp_out.0'"):
        model(X, hooks={"mlp_out.0": lambda t: t})


def test_zeroing_the_values_leaves_only_the_mlp_and_the_stream():
    # a knock-out at v: fails if the v hook did not reach the attention
    model = make().eval()
    out = model(X, hooks={"v.0": torch.zeros_like, "v.1": torch.zeros_like})
    same = model(X, hooks={"attn_out.0": torch.zeros_like, "attn_out.1": torch.zeros_like})
    assert torch.allclose(out, same, atol=1e-6)
    assert not torch.allclose(out, model(X), atol=1e-3)


def test_combine_keeps_every_hook_on_a_point_in_order():
    # a dict merge would keep only the second override: fails if combine dropped one
    model = make().eval()
    T = X.shape[1]
    first = override_pattern({(0, 0): uniform_causal_pattern(T)})
    second = mask_heads({0: [1]})
    merged = {**first, **cache_into(store := {}, ["pattern.0"])}
    assert list(merged) == ["pattern.0"]  # the merge lost the override
    both = combine(first, second, cache_into(store, ["pattern.0"]))
    assert list(both) == ["pattern.0", "heads.0"] and len(both["pattern.0"]) == 2
    model(X, hooks=both)
    assert torch.allclose(store["pattern.0"][:, 0], uniform_causal_pattern(T).expand(3, T, T))
    with pytest.raises(TypeError, match="argument 1 of combine must be a hooks dict"):
        combine(first, [print])


class _Spy:
    def __init__(self, monkeypatch):
        self.calls, real = 0, F.scaled_dot_product_attention

        def spy(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(F, "scaled_dot_product_attention", spy)


def _train(model, steps=3):
    return train(model, lambda s: previous_token_batch(4, 10, 7), steps=steps, progress=False)


def test_training_calls_the_fused_kernel_inside_and_outside_unchecked_inputs(monkeypatch):
    # a GPU run trains inside unchecked_inputs() from step 2: fails if that context also
    # switched the kernel off, as it once did
    spy = _Spy(monkeypatch)
    _train(make(), steps=3)
    assert spy.calls == 3 * 2  # 3 steps x 2 layers
    spy.calls = 0
    with unchecked_inputs():
        _train(make(), steps=3)
    assert spy.calls == 3 * 2


def test_hooks_on_scores_or_patterns_take_the_explicit_path(monkeypatch):
    spy = _Spy(monkeypatch)
    model = make().eval()
    fused = model(X)
    assert spy.calls == 2
    spy.calls = 0
    seen = {}
    explicit = model(X, hooks={"pattern.0": lambda p: seen.setdefault("p", p)})
    assert spy.calls == 1 and "p" in seen  # layer 0 explicit, layer 1 fused
    spy.calls = 0
    model(X, hooks={"scores.1": lambda s: None, "q.0": lambda q: None})
    assert spy.calls == 1  # a q hook keeps the kernel; a scores hook does not
    spy.calls = 0
    with explicit_attention():
        step_by_step = model(X)
    assert spy.calls == 0
    assert torch.allclose(fused, explicit, atol=1e-6)
    assert torch.allclose(fused, step_by_step, atol=1e-6)


def test_an_ensemble_runs_the_explicit_path_inside_vmap(monkeypatch):
    spy = _Spy(monkeypatch)
    cfg = TransformerConfig(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8)
    ens = Ensemble(lambda: Transformer(cfg), seeds=[0, 1]).eval()
    out = ens(X, shared=True)
    assert spy.calls == 0
    assert torch.allclose(out[1], ens.member(1).eval()(X), atol=1e-5)

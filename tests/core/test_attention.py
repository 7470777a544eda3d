"""Tests of the attention statistics and replacement patterns of seqtheory.core.attention."""

import pytest
import torch

from seqtheory import Transformer, TransformerConfig, seed_everything
from seqtheory.core.attention import (
    attention_by_offset,
    attention_to_offset,
    attention_without_offset,
    override_pattern,
    uniform_causal_pattern,
)


def make(**kw):
    seed_everything(0)
    base = dict(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8, init_std=0.3)
    return Transformer(TransformerConfig(**{**base, **kw}))


X = torch.randint(7, (3, 10), generator=torch.Generator().manual_seed(0))


def test_attention_to_offset():
    T = 5
    prev = torch.diag(torch.ones(T - 1), -1)
    prev[0, 0] = 1.0
    assert attention_to_offset(prev, 1).item() == pytest.approx(1.0)
    assert attention_to_offset(prev, 0).item() == pytest.approx(1 / T)
    with pytest.raises(ValueError, match="offset"):
        attention_to_offset(prev, 5)


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
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0  # previous-token head
    assert torch.allclose(attention_by_offset(prev, 2), torch.tensor([0.0, 1.0, 0.0, 0.0]))
    u = uniform_causal_pattern(T)
    got = attention_by_offset(u, 1)  # queries t = 1..5
    t = torch.arange(1, T, dtype=torch.float)
    assert torch.allclose(
        got, torch.stack([(1 / (t + 1)).mean(), (1 / (t + 1)).mean(), ((t - 1) / (t + 1)).mean()])
    )
    # the bins of any causal pattern sum to 1; leading dimensions are kept
    p = make().attention_patterns(X)[0]  # (B, H, T, T)
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
    hooks = override_pattern({(0, 0): lambda a: attention_without_offset(a, 1)})
    _, cache = make()(X, return_cache=True, hooks=hooks)
    assert cache.attn[0][:, 0].diagonal(offset=-1, dim1=-2, dim2=-1).abs().max() < 1e-6
    with pytest.raises(ValueError, match="offset must be in 0..3"):
        attention_without_offset(u, 4)
    with pytest.raises(ValueError, match="ending in"):
        attention_without_offset(torch.ones(2, 3), 0)

"""The base seed (SEQTHEORY_SEED), the thread default, and seeds trained as one Ensemble."""

import numpy as np
import pytest
import torch

from seqtheory import (
    Ensemble,
    Transformer,
    TransformerConfig,
    base_seed,
    derive_seed,
    make_generator,
    make_rng,
    seed_everything,
    seeded,
    train,
)
from seqtheory.core.ensemble import ensemble_loss, member_eval
from seqtheory.core.runtime import default_threads
from seqtheory.core.training import next_token_loss

CFG = TransformerConfig(vocab_size=7, max_len=12, n_layers=2, n_heads=2, d_model=8)


# ----------------------------------------------------------------------------- base seed
def test_base_seed_zero_keeps_seeds(monkeypatch):
    monkeypatch.delenv("SEQTHEORY_SEED", raising=False)
    assert base_seed() == 0
    assert [derive_seed(k) for k in (0, 1, 17, 10**6)] == [0, 1, 17, 10**6]


def test_other_base_seeds_give_new_distinct_seeds(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_SEED", "1")
    one = [derive_seed(k) for k in range(2000)]
    assert len(set(one)) == 2000
    assert one[:5] != list(range(5))
    assert all(0 <= s < 2**63 for s in one)
    assert one == [derive_seed(k) for k in range(2000)]  # deterministic
    monkeypatch.setenv("SEQTHEORY_SEED", "2")
    two = [derive_seed(k) for k in range(2000)]
    assert not set(one) & set(two)


def test_generators_and_global_seeding_follow_the_base(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    a0 = torch.rand(3, generator=make_generator(5))
    r0 = make_rng(5).random(3)
    assert torch.equal(a0, torch.rand(3, generator=torch.Generator().manual_seed(5)))
    monkeypatch.setenv("SEQTHEORY_SEED", "3")
    a3 = torch.rand(3, generator=make_generator(5))
    assert not torch.equal(a0, a3)
    assert not np.array_equal(r0, make_rng(5).random(3))
    used = seed_everything(5)
    assert used == derive_seed(5) and used != 5
    x = torch.rand(2)
    seed_everything(5)
    assert torch.equal(x, torch.rand(2))


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", str(2**64)])
def test_bad_base_seed_is_refused(monkeypatch, value):
    monkeypatch.setenv("SEQTHEORY_SEED", value)
    with pytest.raises(ValueError, match="SEQTHEORY_SEED"):
        derive_seed(0)


def test_bad_seeds_are_refused():
    with pytest.raises(ValueError, match="seed"):
        derive_seed(-1)
    with pytest.raises(ValueError, match="seed"):
        seed_everything(2**64)
    with pytest.raises(TypeError, match="seed"):
        make_generator(1.5)


def test_seeded_is_reproducible_and_restores_the_global_state():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    with seeded(4):
        a = Transformer(CFG)
    assert torch.equal(torch.random.get_rng_state(), before)
    with seeded(4):
        b = Transformer(CFG)
    with seeded(5):
        c = Transformer(CFG)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


# ----------------------------------------------------------------------------- threads
def test_default_threads_is_one_and_env_overrides(monkeypatch):
    monkeypatch.delenv("SEQTHEORY_NUM_THREADS", raising=False)
    assert default_threads() == 1
    monkeypatch.setenv("SEQTHEORY_NUM_THREADS", "2")
    assert default_threads() == 2
    for bad in ("0", "two"):
        monkeypatch.setenv("SEQTHEORY_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="SEQTHEORY_NUM_THREADS"):
            default_threads()


# ----------------------------------------------------------------------------- ensemble
def _batches(M, n, seed=0, B=6, T=10):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, CFG.vocab_size, (n, M, B, T), generator=g)
    return x, x.roll(-1, dims=-1)


def test_members_start_as_their_seeded_models_and_compute_the_same_function():
    ens = Ensemble(lambda: Transformer(CFG), seeds=[3, 1, 4])
    x = torch.randint(0, CFG.vocab_size, (5, 9))
    out = ens(x, shared=True)  # (M, B, T, V)
    assert out.shape == (3, 5, 9, CFG.vocab_size)
    for m, s in enumerate([3, 1, 4]):
        with seeded(s):
            alone = Transformer(CFG)
        member = ens.member(m)
        assert all(torch.equal(v, member.state_dict()[k]) for k, v in alone.state_dict().items())
        torch.testing.assert_close(out[m], alone(x), rtol=1e-5, atol=1e-6)
    per = ens(x.expand(3, -1, -1))
    torch.testing.assert_close(per, out)


def test_training_an_ensemble_equals_training_each_seed_alone():
    """Each member's loss is its own mean, clipping is per member, AdamW is element-wise."""
    seeds, steps = [0, 1, 2], 12
    x, y = _batches(3, steps)
    ens = Ensemble(lambda: Transformer(CFG), seeds)
    # a big learning rate and tight clipping make clipping active in every step
    kw = dict(steps=steps, lr=3e-2, grad_clip=0.05, weight_decay=0.1, progress=False)
    hist = train(ens, lambda s: (x[s - 1], y[s - 1]), **kw)
    assert hist.losses().shape == (steps, 3)
    for m, s in enumerate(seeds):
        with seeded(s):
            alone = Transformer(CFG)
        h = train(alone, lambda step, m=m: (x[step - 1, m], y[step - 1, m]), **kw)
        np.testing.assert_allclose(hist.losses()[:, m], h.loss, rtol=1e-4)
        # batched kernels add in another order: after 12 steps at lr 3e-2 weights differ by
        # up to ~1.3e-5 on an AMD EPYC (AVX512); a bug (clipping or decay shared across
        # members) moves them by ~lr * |update| ~ 1e-2
        for k, v in alone.state_dict().items():
            torch.testing.assert_close(ens.member(m).state_dict()[k], v, rtol=1e-3, atol=1e-4)


def test_weight_decay_on_linear_weights_only_is_per_member_as_alone():
    seeds, steps = [0, 1], 8
    x, y = _batches(2, steps, seed=3)
    ens = Ensemble(lambda: Transformer(CFG), seeds)
    kw = dict(steps=steps, lr=3e-2, weight_decay=0.5, decay="linear", progress=False)
    train(ens, lambda s: (x[s - 1], y[s - 1]), **kw)
    decayed = {id(p) for p in ens.stacked_linear_weights()}
    assert decayed and len(decayed) < len(list(ens.parameters()))
    for m, s in enumerate(seeds):
        with seeded(s):
            alone = Transformer(CFG)
        train(alone, lambda step, m=m: (x[step - 1, m], y[step - 1, m]), **kw)
        # decay on every parameter (or none) moves the embeddings by ~lr * 0.5 ~ 1e-2
        for k, v in alone.state_dict().items():
            torch.testing.assert_close(ens.member(m).state_dict()[k], v, rtol=1e-3, atol=1e-4)


def test_clipping_is_per_member():
    ens = Ensemble(lambda: torch.nn.Linear(3, 1, bias=False), seeds=[0, 1])
    for p in ens.parameters():
        p.grad = torch.tensor([[[3.0, 4.0, 0.0]], [[0.03, 0.04, 0.0]]])  # norms 5 and 0.05
    norms = ens.clip_grad_norm_(1.0)
    torch.testing.assert_close(norms, torch.tensor([5.0, 0.05]))
    g = next(iter(ens.parameters())).grad
    torch.testing.assert_close(g[0].norm(), torch.tensor(1.0), rtol=1e-4, atol=0)
    torch.testing.assert_close(g[1], torch.tensor([[0.03, 0.04, 0.0]]))  # untouched


def test_ensemble_metrics_have_one_value_per_member():
    x, y = _batches(2, 4)

    def acc(model, step):
        return {"acc": (model(x[0, 0]).argmax(-1) == y[0, 0]).float().mean()}

    hist = train(
        Ensemble(lambda: Transformer(CFG), [0, 1]),
        lambda s: (x[s - 1], y[s - 1]),
        steps=4,
        eval_every=2,
        eval_fn=member_eval(acc),
        progress=False,
    )
    steps, values = hist.metric("acc")
    assert list(steps) == [0, 2, 4] and values.shape == (3, 2)
    assert hist.final("acc").shape == (2,)
    with pytest.raises(ValueError, match="2 values per metric"):
        train(
            Ensemble(lambda: Transformer(CFG), [0, 1]),
            lambda s: (x[s - 1], y[s - 1]),
            steps=2,
            eval_fn=lambda m, s: {"acc": 0.5},
            progress=False,
        )


def test_ensemble_loss_accepts_shared_and_per_member_targets():
    out = torch.randn(2, 4, 5, 7)
    y = torch.randint(0, 7, (4, 5))
    shared = ensemble_loss(next_token_loss, out, y)
    per = ensemble_loss(next_token_loss, out, y.expand(2, -1, -1))
    torch.testing.assert_close(shared, per)
    torch.testing.assert_close(shared[1], next_token_loss(out[1], y))


def test_ensemble_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        Ensemble(lambda: Transformer(CFG), [])
    with pytest.raises(ValueError, match="distinct"):
        Ensemble(lambda: Transformer(CFG), [1, 1])
    with pytest.raises(TypeError, match="seeds"):
        Ensemble(lambda: Transformer(CFG), 3)
    with pytest.raises(TypeError, match="build"):
        Ensemble(lambda: 3, [0])
    ens = Ensemble(lambda: Transformer(CFG), [0, 1])
    with pytest.raises(ValueError, match="leading member dimension of size 2"):
        ens(torch.zeros(3, 4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids must lie in"):
        ens(torch.full((2, 4, 5), 99))
    with pytest.raises(ValueError, match="m must be in 0..1"):
        ens.member(2)


def test_tied_weights_stay_tied_in_an_ensemble():
    cfg = TransformerConfig(vocab_size=7, max_len=12, n_layers=1, d_model=8, tie_weights=True)
    x = torch.randint(0, 7, (2, 4, 10), generator=torch.Generator().manual_seed(0))
    ens = Ensemble(lambda: Transformer(cfg), [0, 1])
    hist = train(ens, lambda s: (x, x.roll(-1, -1)), steps=5, progress=False)
    with seeded(1):
        alone = Transformer(cfg)
    h = train(alone, lambda s: (x[1], x[1].roll(-1, -1)), steps=5, progress=False)
    np.testing.assert_allclose(hist.losses()[:, 1], h.loss, rtol=1e-4)
    member = ens.member(1)
    assert member.unembed.weight is member.tok_emb.weight
    torch.testing.assert_close(member.tok_emb.weight, alone.tok_emb.weight, rtol=1e-4, atol=1e-5)


def test_ensemble_validates_inputs_unless_the_caller_has(monkeypatch):
    """An ensemble checks its token ids once per call (a host sync on a GPU), and not inside
    unchecked_inputs(), where train() has validated the batch already."""
    from seqtheory.core.models import unchecked_inputs

    ens = Ensemble(lambda: Transformer(CFG), seeds=[0, 1])
    calls = []
    template = ens._template[0]
    original = template.validate_input
    monkeypatch.setattr(
        template, "validate_input", lambda *a, **k: (calls.append(1), original(*a, **k))[1]
    )
    x = torch.randint(0, CFG.vocab_size, (3, 9))
    ens(x, shared=True)
    assert calls == [1]
    with pytest.raises(ValueError):
        ens(torch.full((3, 9), CFG.vocab_size), shared=True)
    calls.clear()
    with unchecked_inputs():
        ens(x, shared=True)
    assert calls == []

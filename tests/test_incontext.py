"""Unit tests for seqtheory.incontext: evaluator, attention statistics, switch, minimal model."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from seqtheory.core.training import History
from seqtheory.incontext import (
    SETUP,
    ICLEvaluator,
    ICLSetup,
    MinimalICL,
    induction_attention,
    run,
    switch_step,
)
from seqtheory.sources.markov import bigram_predictor

SMALL = ICLSetup(k=3, T=20, steps=4, eval_every=2, batch_size=8)


class BigramModel(nn.Module):
    """A 'model' that returns the in-context bigram rule as log-probabilities."""

    def forward(self, x):
        return bigram_predictor(x, 3).log().float()


def test_setup_batches_and_model():
    x, y = SMALL.batch(0, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 19) and torch.equal(x[:, 1:], y[:, :-1])
    logits = SMALL.model()(x)
    assert logits.shape == (8, 19, 3)
    assert SETUP.pick("full").steps > SETUP.pick("cpu").steps


def test_evaluator_is_zero_distance_from_the_strategy_a_model_implements():
    ev = ICLEvaluator(SMALL, n=64)
    out = ev(BigramModel())
    assert out["KL(bigram||model)"] < 1e-5 and out["KL(unigram||model)"] > 0.01
    assert out["loss"] == pytest.approx(ev.reference_loss["bigram"], abs=1e-4)
    assert "KL(P||model) @last" in out and "layer-2 induction attention" not in out


def test_evaluator_on_a_transformer_reports_attention():
    """Layer 1's weight on the previous token and layer 2's on matching keys, best head,
    mean over sequences: recomputed here by explicit loops over the model's patterns."""
    setup = SMALL.replace(n_heads=2)
    model = setup.model()
    with torch.no_grad():  # patterns far from uniform, heads unlike
        for p in model.parameters():
            p.mul_(4.0)
    ev = ICLEvaluator(setup, n=16)
    out = ev(model)
    A1, A2 = (a.double() for a in model.attention_patterns(ev.x))  # (B, H, T, T)
    x, (B, H, T, _) = ev.x, A1.shape
    prev = torch.zeros(B, H, dtype=torch.float64)
    match = torch.zeros(B, H, dtype=torch.float64)
    for b in range(B):
        prev[b] = sum(A1[b, :, t, t - 1] for t in range(1, T)) / (T - 1)
        rows = [[s for s in range(1, t + 1) if x[b, s - 1] == x[b, t]] for t in range(T)]
        used = [t for t in range(T) if rows[t]]
        match[b] = sum(A2[b, :, t, rows[t]].sum(-1) for t in used) / len(used)
    assert out["layer-1 previous-token attention"] == pytest.approx(
        prev.max(1).values.mean().item(), abs=1e-6
    )
    assert out["layer-2 induction attention"] == pytest.approx(
        match.max(1).values.mean().item(), abs=1e-6
    )
    assert (
        abs(out["layer-2 induction attention"] - out["layer-1 previous-token attention"]) > 1e-3
    )  # the two are not one number


def test_induction_attention_counts_matching_keys():
    x = torch.tensor([[0, 1, 0, 2, 0]])
    # query 4 (token 0): keys whose previous token is 0 are s = 1 and s = 3
    A = torch.zeros(1, 1, 5, 5)
    A[0, 0, :, 0] = 1.0
    A[0, 0, 4] = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0])
    A[0, 0, 2] = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])  # query 2 (token 0): s = 1 matches
    score = induction_attention(A, x)
    # queries with a match: t = 2 (mass 0) and t = 4 (mass 1); others have no matching key
    assert score.item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="shape"):
        induction_attention(A[0], x)


def test_switch_step():
    h = History(
        evals=[
            {"step": 0, "KL(bigram||model)": 0.2, "KL(unigram||model)": 0.1},
            {"step": 10, "KL(bigram||model)": 0.1, "KL(unigram||model)": 0.02},
            {"step": 20, "KL(bigram||model)": 0.05, "KL(unigram||model)": 0.06},
            {"step": 30, "KL(bigram||model)": 0.01, "KL(unigram||model)": 0.09},
        ]
    )
    assert switch_step(h) == 20
    h.evals[-1]["KL(bigram||model)"] = 0.5
    assert switch_step(h) is None


def test_minimal_model_starts_at_unigram_and_can_express_bigram():
    torch.manual_seed(0)
    m = MinimalICL(3, 30, eps=1e-6)
    x = torch.randint(3, (4, 30))
    p0 = m(x).exp()
    freq = torch.nn.functional.one_hot(x, 3).float().cumsum(1)
    freq = freq / freq.sum(-1, keepdim=True)
    assert torch.allclose(p0, freq, atol=1e-4)  # w = 0, W = 0: prefix frequencies
    with torch.no_grad():  # the induction solution
        m.w.fill_(-30.0)
        m.w[1] = 30.0
        m.W.copy_(40.0 * torch.eye(3))
    logp, (A1, A2) = m(x, return_attn=True)
    assert A1.diagonal(offset=-1).min() > 0.99
    d = m.diagnostics()
    assert d["layer-1 weight on distance 1"] > 0.99 and d["W diagonal contrast"] == 40.0
    # where the current token was seen before (with a successor), the prediction puts its
    # mass on the tokens that followed it; key 0 has no predecessor (h_0 = e(x_0)), so it
    # matches when x_0 = x_t and counts x_0 as one more follower
    checked = 0
    for t in range(5, x.shape[1]):
        followers = [x[0, s].item() for s in range(1, t + 1) if x[0, s - 1] == x[0, t]]
        followers += [x[0, 0].item()] * int(x[0, 0] == x[0, t])
        if followers:
            expect = torch.bincount(torch.tensor(followers), minlength=3).float() / len(followers)
            assert torch.allclose(logp[0, t].exp(), expect, atol=1e-3), t
            checked += 1
    assert checked >= 10


def test_run_keeps_snapshots():
    res = run(SMALL, snapshot_every=2, progress=False, eval_n=8)
    assert sorted(res.history.snapshots) == [0, 2, 4]
    assert res.history.metric("loss")[0].tolist() == [0, 2, 4]


def test_plot_phases_draws_one_curve_per_strategy():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqtheory.incontext import plot_phases

    h = History(
        evals=[
            {"step": s, "KL(uniform||model)": u, "KL(unigram||model)": g, "KL(bigram||model)": b}
            for s, u, g, b in [(0, 0.01, 0.1, 0.2), (10, 0.1, 0.02, 0.1), (20, 0.2, 0.1, 0.01)]
        ]
    )
    ax = plot_phases(h)
    assert [line.get_label() for line in ax.lines] == ["uniform", "unigram", "bigram"]
    assert ax.get_yscale() == "log" and len(ax.patches) == 3
    plt.close("all")


def test_phases_and_rise_step():
    import numpy as np

    from seqtheory.incontext import phases, rise_step

    steps = np.array([0, 50, 100, 150, 200])
    curves = {
        "uniform": np.array([0.0, 0.2, 0.3, 0.4, 0.5]),
        "unigram": np.array([0.1, 0.01, 0.02, 0.3, 0.4]),
        "bigram": np.array([0.3, 0.2, 0.1, 0.01, 0.005]),
    }
    assert phases(steps, curves) == [("uniform", 0, 0), ("unigram", 50, 100), ("bigram", 150, 200)]
    values = np.array([0.1, 0.1, 0.2, 0.5, 0.6])
    assert rise_step(steps, values, start=1) == 150  # half-way: 0.35
    assert rise_step(steps, values, start=1, frac=0.2) == 100
    assert rise_step(steps, values[::-1], start=0) is None
    with pytest.raises(ValueError):
        phases(steps, {})


def test_evaluator_induction_attention_matches_the_public_function():
    ev = ICLEvaluator(SMALL, n=16)
    model = SMALL.model().eval()
    with torch.no_grad():
        out = ev(model)
        _, cache = model(ev.x, return_cache=True)
    direct = induction_attention(cache.attn[-1], ev.x).max(-1).values.mean().item()
    assert out["layer-2 induction attention"] == pytest.approx(direct, abs=1e-6)


def test_trigram_setup_is_second_order_with_two_layer_one_heads():
    from seqtheory.incontext import TRIGRAM_SETUP

    cpu = TRIGRAM_SETUP.pick("cpu")
    assert cpu.order == 2 and cpu.k == 2 and cpu.n_heads == (2, 1)
    assert TRIGRAM_SETUP.pick("full").steps > cpu.steps
    assert ICLEvaluator(cpu.replace(T=20), n=4).bayes == "trigram"


def test_history_from_record_round_trips_and_validates():
    from seqtheory.incontext import history_from_record

    rec = {
        "steps": [0, 50, 100],
        "loss": [1.1, 1.0, 0.9],
        "KL(uniform||model)": [0.0, 0.1, 0.2],
        "KL(unigram||model)": [0.1, 0.01, 0.1],
        "KL(bigram||model)": [0.2, 0.1, 0.01],
    }
    h = history_from_record(rec)
    assert h.metric("loss")[0].tolist() == [0, 50, 100]
    assert switch_step(h) == 100
    with pytest.raises(ValueError, match="lacks"):
        history_from_record(rec, names=("trigram",))
    with pytest.raises(ValueError, match="one value per step"):
        history_from_record({**rec, "loss": [1.0]})
    with pytest.raises(TypeError, match="dict"):
        history_from_record([rec])


def test_paper_setup_is_the_authors_configuration_and_full_uses_it():
    from seqtheory.incontext import PAPER

    assert SETUP.pick("full") == PAPER
    cfg = PAPER.train_config(snapshot_steps=(0,))
    assert (cfg.lr, cfg.betas, cfg.weight_decay, cfg.decay, cfg.grad_clip) == (
        5e-4,
        (0.9, 0.95),
        0.1,
        "linear",
        None,
    )
    mc = PAPER.model_config()
    assert (mc.pos_encoding, mc.dropout, mc.n_layers, mc.d_model) == ("relative", 0.1, 2, 16)
    # the CPU default keeps the library defaults
    cpu = SETUP.pick("cpu").train_config()
    assert (cpu.lr, cpu.betas, cpu.weight_decay, cpu.grad_clip) == (1e-3, (0.9, 0.999), 0.0, 1.0)


def test_graded_setup_samples_its_prior_and_evaluates_elsewhere():
    g = SMALL.replace(k=2, prior="graded", ds_fraction=0.0)
    x, P = g.sample(16, torch.Generator().manual_seed(0))
    assert torch.equal(P[:, 0], P[:, 1])  # i.i.d. tokens
    res = run(g, seed=0, eval_n=8, progress=False, eval_setup=SMALL.replace(k=2))
    assert res.evaluator.setup.prior == "dirichlet"
    with pytest.raises(TypeError, match="eval_setup"):
        run(g, progress=False, eval_setup="dirichlet")


def test_predict_next_only_at_trained_positions():
    from seqtheory.incontext import predict_next

    s = SMALL.replace(steps=3)
    res = run(s, seed=0, eval_n=8, progress=False)
    assert s.input_len == s.T - 1 == 19  # training inputs: the first T - 1 tokens
    x, _ = s.sample(4, torch.Generator().manual_seed(1))
    p = predict_next(res.model, s, x[:, : s.input_len])
    assert p.shape == (4, 3) and torch.allclose(p.sum(-1), torch.ones(4, dtype=p.dtype))
    with pytest.raises(ValueError, match="1..19 tokens"):
        predict_next(res.model, s, x)  # T tokens: position T - 1 is untrained


def test_last_position_embedding_gets_no_gradient():
    s = SMALL.replace(steps=3)
    res = run(s, seed=0, eval_n=8, progress=False, snapshot_every=3)
    w0 = res.history.snapshots[0]["pos_emb.weight"]
    w3 = res.history.snapshots[3]["pos_emb.weight"]
    assert torch.equal(w0[s.T - 1], w3[s.T - 1])  # position T - 1: untouched
    assert not torch.equal(w0[s.T - 2], w3[s.T - 2])  # position T - 2: trained


def test_run_can_stop_once_the_switch_has_held(monkeypatch):
    def always_bigram(self, model, step=0):
        return {"loss": 1.0, "KL(bigram||model)": 0.01, "KL(unigram||model)": 0.1}

    monkeypatch.setattr(ICLEvaluator, "__call__", always_bigram)
    s = SMALL.replace(steps=40, eval_every=2)
    res = run(s, seed=0, eval_n=8, progress=False, stop_after_switch=4)
    assert 4 < res.history.steps[-1] < 10  # stopped long before 40
    full = run(s, seed=0, eval_n=8, progress=False)
    assert full.history.steps[-1] == 40
    with pytest.raises(ValueError, match="stop_after_switch"):
        run(s, progress=False, stop_after_switch=0)


def test_run_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a = run(SMALL, seed=0, device="cpu", progress=False, eval_n=8)
    assert torch.equal(state, torch.random.get_rng_state())
    b = run(SMALL, seed=0, device="cpu", progress=False, eval_n=8)
    c = run(SMALL, seed=1, device="cpu", progress=False, eval_n=8)
    assert a.history.loss == b.history.loss and a.history.evals == b.history.evals
    assert a.history.loss != c.history.loss
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert all(torch.equal(sa[name], sb[name]) for name in sa)
    assert (a.seed, a.device, a.setup) == (0, "cpu", SMALL) and a.seconds > 0


def test_run_is_the_old_seed_everything_stream():
    """run() draws weights, then batches, from one seeded stream: the bits of the book's
    runs before the global seeding moved inside seeded()."""
    from seqtheory import derive_seed, seed_everything, train

    seed_everything(0)  # base seed 0: logical seed 0 is the seed itself
    model = SMALL.model()
    hist = train(model, SMALL.batch, SMALL.train_config(), progress=False)
    assert run(SMALL, seed=0, progress=False, eval_n=8).history.loss == hist.loss
    torch.manual_seed(derive_seed(0, base=3))  # base seed 3: logical seed 0 under it
    model = SMALL.model()
    hist = train(model, SMALL.batch, SMALL.train_config(), progress=False)
    assert run(SMALL, seed=3, progress=False, eval_n=8).history.loss == hist.loss


def test_run_refuses_bad_devices_and_setups():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device"):
            run(SMALL, device="cuda", progress=False)
    with pytest.raises(ValueError, match="device"):
        run(SMALL, device="tpu-ish", progress=False)
    with pytest.raises(TypeError, match="setup must be an? ICLSetup"):
        run({"k": 3}, progress=False)
    with pytest.raises(ValueError, match="seed"):
        run(SMALL, seed=-1, progress=False)


def test_run_takes_a_context_and_draws_from_its_named_streams():
    from seqtheory.core.experiment import Experiment, RunInfo
    from seqtheory.incontext import STREAMS

    assert {n: STREAMS.seed(n) for n in STREAMS.names} == {
        "training": 0,
        "weights": 0,
        "heldout": 1234,
        "data": 10_000,
        "dropout": 20_000,
    }
    a = run(SMALL, Experiment.make(seed=3, progress=False), eval_n=8)
    assert isinstance(a, RunInfo) and (a.setup, a.seed, a.device) == (SMALL, 3, "cpu")
    assert a.history.loss == run(SMALL, seed=3, progress=False, eval_n=8).history.loss
    assert torch.equal(a.evaluator.x, ICLEvaluator(SMALL, n=8, seed=1234, base=3).x)
    with pytest.raises(TypeError, match="not both"):
        run(SMALL, Experiment.make(seed=3), seed=3)


def test_building_a_model_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = SMALL.model(seed=5), SMALL.model(seed=5)
    assert torch.equal(state, torch.random.get_rng_state())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_run_seeds_trains_members_as_one_program():
    # member s starts from the weights of logical seed s (member 0: where run() starts), each
    # member trains the same whichever others train with it (fails if the members shared a
    # data stream or an optimiser state), the same call gives the same bits, and the result
    # has (M,) losses and per-member switch steps
    from seqtheory.core.experiment import RunInfo
    from seqtheory.incontext import run_seeds

    tiny = ICLSetup(k=3, T=12, steps=6, eval_every=3, batch_size=4)
    a = run_seeds(tiny, seeds=(0, 1), progress=False, eval_n=8)
    b = run_seeds(tiny, seeds=(1,), progress=False, eval_n=8)
    assert a.history.losses().shape == (6, 2)
    np.testing.assert_allclose(a.history.losses()[:, 1], b.history.losses()[:, 0], rtol=1e-4)
    again = run_seeds(tiny, seeds=(0, 1), progress=False, eval_n=8)
    assert np.array_equal(a.history.losses(), again.history.losses())
    assert len(a.switch_steps()) == 2
    untrained = run_seeds(tiny.replace(steps=1, lr=1e-12), seeds=(0,), progress=False, eval_n=8)
    torch.testing.assert_close(
        untrained.ensemble.member(0).tok_emb.weight,
        tiny.model(seed=0).tok_emb.weight,
        rtol=1e-6,
        atol=1e-9,
    )
    with pytest.raises(ValueError, match="seeds"):
        run_seeds(tiny, seeds=(0, 0), progress=False)
    with pytest.raises(TypeError, match="seeds"):
        run_seeds(tiny, seeds=3, progress=False)
    assert isinstance(a, RunInfo) and a.seeds == (0, 1)


def test_induction_attention_uses_the_token_before_the_key():
    # x = 0 1 1 2 0: for query t = 4 (token 0) the matching key is s = 1 (x[0] = 0 precedes
    # it), not s = 3 (which is followed by a 0): the two definitions differ here, so all the
    # mass on s = 1 scores 1 and all on s = 3 scores 0
    x = torch.tensor([[0, 1, 1, 2, 0]])
    for key, want in ((1, 1.0), (3, 0.0)):
        A = torch.zeros(1, 1, 5, 5)
        A[0, 0, :, 0] = 1.0
        A[0, 0, 4] = 0.0
        A[0, 0, 4, key] = 1.0
        A[0, 0, 2] = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])  # query 2 (token 1): s = 2 matches
        # queries with a match: t = 2 (mass 1 on s = 2) and t = 4
        assert induction_attention(A, x).item() == pytest.approx((1.0 + want) / 2)

"""Unit tests for seqtheory.core.training: learning happens, seeding reproduces, snapshots,
errors."""

import numpy as np
import pytest
import torch

from seqtheory import TrainConfig, Transformer, TransformerConfig, seed_everything, train
from seqtheory.core.settings import settings
from seqtheory.core.training import History, load_snapshot, lr_at, next_token_loss
from seqtheory.tasks import previous_token_batch


def run(seed=0, steps=60, **kw):
    seed_everything(seed)
    model = Transformer(
        TransformerConfig(
            vocab_size=5, max_len=8, n_layers=1, d_model=16, attn_only=True, pos_encoding="relative"
        )
    )

    def batch(step):
        return previous_token_batch(32, 8, 5)

    def evaluate(m, step):
        x, y = previous_token_batch(64, 8, 5)
        return {"accuracy": (m(x)[:, 1:].argmax(-1) == y[:, 1:]).float().mean()}

    hist = train(
        model,
        batch,
        TrainConfig(steps=steps, lr=3e-2, eval_every=20, **kw),
        eval_fn=evaluate,
        progress=False,
    )
    return model, hist


def test_loss_decreases_and_metrics_are_recorded():
    _, hist = run(steps=150)
    assert len(hist.loss) == 150 and hist.steps[0] == 1
    assert sum(hist.loss[-10:]) / 10 < 0.5 * hist.loss[0]
    steps, acc = hist.metric("accuracy")
    assert list(steps) == [0, 20, 40, 60, 80, 100, 120, 140, 150]
    assert acc[-1] > 0.9 > acc[0]
    assert hist.metric_names == ["accuracy"]


def test_same_seed_same_numbers_different_seed_different_numbers():
    _, a = run(seed=1)
    _, b = run(seed=1)
    _, c = run(seed=2)
    assert a.loss == b.loss and a.evals == b.evals
    assert a.loss != c.loss


def test_snapshots_are_copies_taken_at_the_requested_steps():
    model, hist = run(steps=30, snapshot_steps=(0, 10, 30))
    assert sorted(hist.snapshots) == [0, 10, 30]
    w = "blocks.0.attn.rel_bias"
    assert not torch.equal(hist.snapshots[0][w], hist.snapshots[30][w])
    assert torch.equal(hist.snapshots[30][w], model.state_dict()[w])
    load_snapshot(model, hist, 0)
    assert torch.equal(model.state_dict()[w], hist.snapshots[0][w])
    with pytest.raises(KeyError, match="available"):
        load_snapshot(model, hist, 5)


def test_stop_when_is_asked_at_each_evaluation_but_step_0s():
    # fails if the rule were asked after every step, or at step 0, or its True ignored
    seed_everything(0)
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    asked = []
    hist = train(
        model,
        lambda s: previous_token_batch(8, 8, 5),
        steps=100,
        eval_every=10,
        eval_fn=lambda m, s: {"s": s},
        stop_when=lambda row: asked.append(row["step"]) or row["step"] >= 30,
        progress=False,
    )
    assert asked == [10, 20, 30] and hist.steps[-1] == 30 and len(hist.loss) == 30


def test_max_steps_caps_every_training_loop(monkeypatch):
    # settings.max_steps (the book's smoke runs): fails if the cap were ignored, if the
    # last step were not evaluated, or if later snapshots were missing or not the last weights
    seed_everything(0)
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    monkeypatch.setattr(settings, "max_steps", 3)
    hist = train(
        model,
        lambda s: previous_token_batch(8, 8, 5),
        steps=100,
        eval_every=50,
        eval_fn=lambda m, s: {"s": s},
        snapshot_steps=(0, 2, 60, 100),
        progress=False,
    )
    assert hist.steps == [1, 2, 3]
    assert sorted(hist.snapshots) == [0, 2, 60, 100]
    assert all(torch.equal(hist.snapshots[60][k], v) for k, v in model.state_dict().items())
    assert [e["step"] for e in hist.evals] == [0, 3]  # evaluated where it stopped
    monkeypatch.setattr(settings, "max_steps", None)
    assert (
        len(train(model, lambda s: previous_token_batch(8, 8, 5), steps=6, progress=False).steps)
        == 6
    )


def test_train_reads_no_callbacks():
    # one stop mechanism: an old-style callbacks= argument is refused, not ignored
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    with pytest.raises(ValueError, match="unknown field"):
        train(model, lambda s: previous_token_batch(4, 8, 5), steps=5, callbacks=[print])


def test_schedules():
    cfg = TrainConfig(steps=100, lr=1.0, warmup=10, schedule="cosine")
    assert lr_at(5, cfg) == pytest.approx(0.5)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(100, cfg) == pytest.approx(0.0, abs=1e-12)
    assert lr_at(55, TrainConfig(steps=100, lr=1.0, warmup=10, schedule="linear")) == pytest.approx(
        0.5
    )


@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(steps=0), ValueError, "steps must be >= 1"),
        (dict(lr=-1.0), ValueError, "lr must be >"),
        (dict(schedule="step"), ValueError, "schedule must be one of"),
        (dict(steps=10, snapshot_steps=(20,)), ValueError, "beyond steps=10"),
        (dict(optimizer="adam"), ValueError, "optimizer must be one of"),
    ],
)
def test_bad_train_config(kw, err, match):
    with pytest.raises(err, match=match):
        TrainConfig(**kw)


def test_train_rejects_bad_arguments():
    model = Transformer(vocab_size=5, max_len=8)
    with pytest.raises(TypeError, match="nn.Module"):
        train("model", lambda s: None, steps=1, progress=False)
    with pytest.raises(TypeError, match="batch_fn must be callable"):
        train(model, None, steps=1, progress=False)
    with pytest.raises(ValueError, match="unknown field"):
        train(model, lambda s: previous_token_batch(2, 8, 5), TrainConfig(steps=1), stepz=3)
    with pytest.raises(TypeError, match="dict of metrics"):
        train(
            model,
            lambda s: previous_token_batch(2, 8, 5),
            steps=1,
            progress=False,
            eval_fn=lambda m, s: 0.5,
        )


def test_history_metric_errors_name_what_exists():
    h = History(evals=[{"step": 0, "kl": 1.0}])
    with pytest.raises(KeyError, match="kl"):
        h.metric("loss")
    assert h.final("kl") == 1.0


def test_previous_token_batch():
    x, y = previous_token_batch(4, 6, 3)
    assert x.shape == y.shape == (4, 6)
    assert (y[:, 0] == -100).all() and torch.equal(y[:, 1:], x[:, :-1])
    with pytest.raises(ValueError, match="seq_len must be >= 2"):
        previous_token_batch(4, 1, 3)


def test_previous_token_batch_offset():
    x, y = previous_token_batch(3, 7, 4, offset=2)
    assert (y[:, :2] == -100).all() and torch.equal(y[:, 2:], x[:, :-2])
    with pytest.raises(ValueError, match="offset must be < seq_len=7"):
        previous_token_batch(3, 7, 4, offset=7)


def test_previous_token_sizes():
    from seqtheory.tasks import SETUP

    cpu, full = SETUP.pick("cpu"), SETUP.pick("full")
    assert cpu.steps < full.steps and cpu.steps // cpu.eval_every <= 60


def test_metric_names_may_clash_with_progress_bar_fields():
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    hist = train(
        model,
        lambda s: previous_token_batch(4, 8, 5),
        steps=3,
        eval_every=1,
        eval_fn=lambda m, s: {"loss": 1.0, "refresh": 2.0},
        progress=True,
    )
    assert hist.final("loss") == 1.0


def test_decay_linear_leaves_embeddings_and_norms_alone():
    seed_everything(0)
    model = Transformer(
        TransformerConfig(vocab_size=5, max_len=8, n_layers=1, d_model=16, attn_only=True)
    )
    before = {n: p.detach().clone() for n, p in model.named_parameters()}

    def batch(step):  # lr tiny and decay huge: the update is the decay alone
        return previous_token_batch(16, 8, 5)

    train(
        model,
        batch,
        TrainConfig(steps=1, lr=1e-12, weight_decay=1e9, decay="linear"),
        progress=False,
    )
    after = dict(model.named_parameters())
    # decayed by (1 - lr * wd) = 0.999: only the weights of nn.Linear layers
    assert torch.allclose(after["unembed.weight"], 0.999 * before["unembed.weight"])
    assert torch.allclose(after["tok_emb.weight"], before["tok_emb.weight"])
    assert torch.allclose(after["pos_emb.weight"], before["pos_emb.weight"])
    with pytest.raises(ValueError, match="decay must be one of"):
        TrainConfig(decay="embeddings")


class _TwoNets(torch.nn.Module):
    """Two independent linear regressions in one module (a batched model, not an Ensemble)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2, 3))

    def forward(self, x):  # x (B, 3) -> (2, B)
        return self.w @ x.T


def _two_net_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    y = torch.stack([x @ torch.tensor([1.0, -2.0, 0.5]), x @ torch.tensor([0.0, 3.0, 1.0])])
    return x, y


def test_per_network_losses_train_each_network_on_its_own_loss():
    x, y = _two_net_data()
    model = _TwoNets()
    truth = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    hist = train(
        model,
        lambda step: (x, y),
        steps=300,
        lr=0.05,
        grad_clip=None,
        progress=False,
        eval_every=100,
        optimizer="sgd",
        loss_fn=lambda out, t: ((out - t) ** 2).mean(1),
        eval_fn=lambda m, s: {"err": (m.w - truth).abs().amax(1)},
    )
    losses = hist.losses()
    assert losses.shape == (300, 2)  # one loss per network per step
    assert np.allclose(hist.loss, losses.mean(1))
    steps, err = hist.metric("err")
    assert err.shape == (4, 2) and list(steps) == [0, 100, 200, 300]
    assert (err[-1] < 1e-3).all() and (err[0] > 0.4).all()
    # the same as training each network alone: the sum couples nothing under plain SGD
    alone = _TwoNets()
    train(
        alone,
        lambda step: (x, y[:1]),
        steps=300,
        lr=0.05,
        grad_clip=None,
        progress=False,
        optimizer="sgd",
        loss_fn=lambda out, t: ((out[:1] - t) ** 2).mean(),
    )
    assert torch.allclose(alone.w[0], model.w[0], atol=1e-6)


def test_per_network_losses_refuse_a_global_clip_and_matrices():
    x, y = _two_net_data()
    with pytest.raises(ValueError, match="grad_clip=None"):
        train(
            _TwoNets(),
            lambda step: (x, y),
            steps=2,
            progress=False,
            loss_fn=lambda out, t: ((out - t) ** 2).mean(1),
        )
    with pytest.raises(ValueError, match="per-network losses"):
        train(
            _TwoNets(),
            lambda step: (x, y),
            steps=2,
            progress=False,
            grad_clip=None,
            loss_fn=lambda out, t: (out - t) ** 2,
        )


def test_stop_when_stops_at_the_first_evaluation_that_satisfies_it():
    x, y = _two_net_data()
    hist = train(
        _TwoNets(),
        lambda step: (x, y),
        steps=1000,
        lr=0.05,
        grad_clip=None,
        progress=False,
        eval_every=25,
        optimizer="sgd",
        loss_fn=lambda out, t: ((out - t) ** 2).mean(1),
        eval_fn=lambda m, s: {"loss": ((m(x) - y) ** 2).mean(1)},
        stop_when=lambda row: bool((row["loss"] < 0.01).all()),
    )
    steps, loss = hist.metric("loss")
    assert steps[-1] < 1000 and steps[-1] % 25 == 0 and len(hist.steps) == steps[-1]
    assert (loss[-1] < 0.01).all() and not (loss[-2] < 0.01).all()
    with pytest.raises(TypeError, match="stop_when"):
        train(_TwoNets(), lambda step: (x, y), steps=2, progress=False, stop_when=3)


def test_a_run_stopped_by_its_rule_ends_its_bar_with_a_note(monkeypatch, capsys):
    # fails if the static bar of a run that stopped early were left at a percentage
    from seqtheory.book.session import StaticBar

    monkeypatch.setattr(settings, "progress_bar", StaticBar)
    x, y = _two_net_data()
    hist = train(
        _TwoNets(),
        lambda step: (x, y),
        steps=1000,
        lr=0.05,
        grad_clip=None,
        eval_every=25,
        optimizer="sgd",
        desc="demo",
        loss_fn=lambda out, t: ((out - t) ** 2).mean(1),
        eval_fn=lambda m, s: {"loss": ((m(x) - y) ** 2).mean(1)},
        stop_when=lambda row: bool((row["loss"] < 0.01).all()),
    )
    out = capsys.readouterr().out
    last = hist.steps[-1]
    assert f"demo: stopped at {last:,} of 1,000 [" in out and "stopped=stop_when" in out
    assert "%|" not in out


def test_bf16_autocast_learns_like_fp32():
    # precision="bf16" runs the forward pass in bfloat16 (the bits differ from fp32: fails if
    # autocast were not applied) and learns the task as well (fails if bf16 broke training)
    _, fp32 = run(steps=150)
    _, bf16 = run(steps=150, precision="bf16")
    assert fp32.loss != bf16.loss
    assert bf16.final("accuracy") > 0.9
    assert abs(np.mean(bf16.loss[-10:]) - np.mean(fp32.loss[-10:])) < 0.1 * fp32.loss[0]
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp16")


def test_record_losses_copies_pending_losses_to_the_host_at_once():
    hist = History(steps=[1, 2])
    pending = [torch.tensor([1.0, 3.0]), torch.tensor([2.0, 4.0])]
    hist.record_losses(pending)
    assert hist.loss == [2.0, 3.0] and pending == []  # the list is emptied
    assert [list(r) for r in hist.member_loss] == [[1.0, 3.0], [2.0, 4.0]]
    # each row its own array: a view would keep the whole copied block alive
    assert all(r.base is None for r in hist.member_loss)
    hist.record_losses([])  # nothing pending: nothing recorded
    assert len(hist.loss) == 2


def test_record_losses_keeps_scalars_as_floats():
    hist = History(steps=[1])
    hist.record_losses([torch.tensor(0.5)])
    assert hist.loss == [0.5] and type(hist.loss[0]) is float and hist.member_loss == []


def test_record_losses_names_the_step_whose_loss_is_not_finite():
    hist = History(steps=[11, 12, 13])
    with pytest.raises(FloatingPointError, match="nan at step 12"):
        hist.record_losses([torch.tensor(v) for v in (1.0, float("nan"), 2.0)])
    assert hist.loss == [1.0]


def test_per_network_losses_are_recorded_in_fp32_per_network():
    # a loss_fn returning (M,) losses in bfloat16: recorded per network as fp32 values
    x, y = _two_net_data()
    hist = train(
        _TwoNets(),
        lambda step: (x, y),
        steps=3,
        grad_clip=None,
        progress=False,
        optimizer="sgd",
        loss_fn=lambda out, t: ((out - t) ** 2).mean(1).bfloat16(),
    )
    assert np.asarray(hist.member_loss).shape == (3, 2)
    assert hist.loss == [float(np.float32(r).mean()) for r in hist.member_loss]


def test_an_ensemble_clips_each_member_to_its_own_norm():
    from seqtheory.core.ensemble import Ensemble

    ens = Ensemble(lambda: torch.nn.Linear(3, 3), seeds=[0, 1])

    def member_norms():
        return sum(p.grad.pow(2).flatten(1).sum(1) for p in ens.parameters()).sqrt()

    for p in ens.parameters():  # member 0 inside the clip, member 1 far outside
        p.grad = torch.stack([torch.full(p.shape[1:], 0.01), torch.full(p.shape[1:], 10.0)])
    before = member_norms()
    ens.clip_grad_norm_(1.0)
    after = member_norms()
    assert before[0] < 1 < before[1]
    assert after[0] == before[0] and after[1].item() == pytest.approx(1.0, abs=1e-4)


def test_record_eval_stores_floats_and_arrays_and_checks_an_ensembles_rows():
    hist = History()
    row = hist.record_eval(5, {"acc": torch.tensor(0.25), "per_net": torch.tensor([1.0, 2.0])})
    assert type(row["acc"]) is float and isinstance(row["per_net"], np.ndarray)
    assert hist.evals == [{"step": 5, **row}] and list(hist.evals[0]) == ["step", "acc", "per_net"]
    row = hist.record_eval(6, {"acc": [0.5, 0.75]}, members=2)
    assert row["acc"].shape == (2,)
    with pytest.raises(ValueError, match="must return 3 values per metric.*wrong: \\['acc'\\]"):
        hist.record_eval(7, {"acc": [0.5, 0.75]}, members=3)
    with pytest.raises(TypeError, match="dict of metrics"):
        hist.record_eval(7, [0.5])
    with pytest.raises(ValueError, match="step must be >= 0"):
        hist.record_eval(-1, {"acc": 1.0})
    assert len(hist.evals) == 2


def test_eval_fn_runs_in_eval_mode_without_gradients_and_the_mode_comes_back():
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    seen = []

    def evaluate(m, step):
        seen.append((step, m.training, torch.is_grad_enabled()))
        return {"s": step}

    model.eval()
    train(
        model,
        lambda s: previous_token_batch(4, 8, 5),
        steps=2,
        eval_every=1,
        eval_fn=evaluate,
        progress=False,
    )
    assert seen == [(0, False, False), (1, False, False), (2, False, False)]
    assert model.training  # trained in train mode, left there

    def fails(m, step):
        if step:
            raise RuntimeError("eval failed")
        return {}

    with pytest.raises(RuntimeError, match="eval failed"):
        train(
            model,
            lambda s: previous_token_batch(4, 8, 5),
            steps=2,
            eval_every=1,
            eval_fn=fails,
            progress=False,
        )
    assert model.training  # restored although eval_fn raised


def test_on_the_cpu_every_batch_is_checked():
    # fails if train() skipped the input checks on the CPU (where they cost nothing)
    from seqtheory.core.models import checking_inputs

    seen = []

    def loss(out, t):
        seen.append(checking_inputs())
        return next_token_loss(out, t)

    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    train(model, lambda s: previous_token_batch(4, 8, 5), steps=3, loss_fn=loss, progress=False)
    assert seen == [True, True, True]

"""Unit tests for seqtheory.tasks: the "meet the model" experiment's setup and run."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from seqtheory.tasks import SETUP, PreviousTokenSetup, evaluate, previous_token_batch, run

TINY = replace(
    SETUP.cpu, steps=6, eval_every=3, seeds_eval_every=3, eval_n=16, batch_size=8, seeds=(1, 2)
)


def test_run_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a = run(TINY, seed=0, device="cpu", progress=False)
    assert torch.equal(state, torch.random.get_rng_state())
    b = run(TINY, seed=0, device="cpu", progress=False)
    assert a.history.loss == b.history.loss and a.history.evals == b.history.evals
    assert np.array_equal(a.ensemble_history.losses(), b.ensemble_history.losses())
    assert torch.equal(a.eval_x, b.eval_x)
    c = run(TINY, seed=1, device="cpu", progress=False)
    assert a.history.loss != c.history.loss
    assert (a.seed, a.device, a.setup) == (0, "cpu", TINY) and a.seconds > 0
    assert sorted(a.history.snapshots) == [0, 3, 6]
    assert a.ensemble_history.metric("accuracy")[1].shape == (3, 2)  # (evals, seeds)
    assert a.eval_x.device.type == "cpu" and a.eval_x.shape == (16, TINY.seq_len)


def test_run_takes_a_context_and_draws_from_its_named_streams():
    from seqtheory.core.experiment import Experiment, RunInfo
    from seqtheory.core.seeds import make_generator
    from seqtheory.tasks import STREAMS

    assert {n: STREAMS.seed(n) for n in STREAMS.names} == {
        "weights": 0,
        "heldout": 50,
        "data": 200,
        "member_data": 100,
    }
    a = run(TINY, Experiment.make(seed=2, progress=False))
    assert isinstance(a, RunInfo) and (a.seed, a.device) == (2, "cpu")
    assert a.history.loss == run(TINY, seed=2, progress=False).history.loss
    x, _ = TINY.batch(TINY.eval_n, make_generator(50, base=2))
    assert torch.equal(a.eval_x, x)


def test_run_refuses_bad_devices_and_setups():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device"):
            run(TINY, device="cuda", progress=False)
    with pytest.raises(TypeError, match="setup must be a PreviousTokenSetup"):
        run({"steps": 3}, progress=False)


def test_setup_validates_and_sizes():
    cpu, full = SETUP.pick("cpu"), SETUP.pick("full")
    assert cpu.steps < full.steps and cpu.steps // cpu.eval_every <= 60
    with pytest.raises(ValueError, match="offset must be < seq_len"):
        PreviousTokenSetup(seq_len=4, offset=4)
    with pytest.raises(TypeError, match="seeds"):
        PreviousTokenSetup(seeds=[1, 2])
    with pytest.raises(ValueError, match="seeds must be distinct"):
        PreviousTokenSetup(seeds=(1, 1))
    with pytest.raises(ValueError, match="pos_encoding"):
        PreviousTokenSetup(pos_encoding="sinusoidal")


def test_evaluate_scores_a_perfect_copier():
    """A 'model' whose logits put everything on the previous token: accuracy 1, loss ~0."""
    x, y = previous_token_batch(4, 10, 5, generator=torch.Generator().manual_seed(0))

    class Copier(torch.nn.Module):
        def forward(self, idx, return_cache=False):
            logits = torch.full((*idx.shape, 5), -30.0)
            logits[:, 1:].scatter_(-1, idx[:, :-1, None], 30.0)
            cache = type(
                "C",
                (),
                {"attn": [torch.eye(10).roll(-1, 1).tril()[None, None].expand(4, 1, 10, 10)]},
            )()
            return logits, cache

    out = evaluate(Copier(), x, y)
    assert float(out["accuracy"]) == 1.0 and float(out["held-out loss"]) < 1e-6
    assert float(out["previous-token attention"]) == pytest.approx(1.0)


def test_previous_token_batch_draws_where_the_generator_lives():
    # device None follows the generator; a device other than the generator's is refused by
    # name (torch's own error would be cryptic)
    from seqtheory.tasks import previous_token_batch

    g = torch.Generator().manual_seed(0)
    x, y = previous_token_batch(4, 6, 5, generator=g)
    assert x.device == g.device == y.device
    with pytest.raises(ValueError, match="generator's device"):
        previous_token_batch(4, 6, 5, generator=g, device="meta")

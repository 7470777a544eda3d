"""The library's one seed convention (``seqtheory.core.seeds.experiment_seed``).

An experiment function's ``seed`` is the run's base seed; ``seed=None`` takes the book's base
seed from ``SEQTHEORY_SEED``.  So ``run(setup, seed=b)`` under any environment and
``run(setup)`` under ``SEQTHEORY_SEED=b`` must give the same bits, and two base seeds must give
different runs.  Each test fails if a module reads the environment where its ``seed`` argument
should rule (the bits would differ between the two calls), or if it offsets logical seeds by
the base seed and derives them under the environment again (``seed + k`` under base ``b``: the
two calls then draw different streams), or if the base seed is ignored (same bits for 0 and 3).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from seqtheory.core.seeds import derive_seed, experiment_seed, make_generator, seeded

BASE = 3


def test_experiment_seed_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_SEED", "7")
    assert experiment_seed(None) == 7
    assert experiment_seed(2) == 2
    with pytest.raises(ValueError, match="seed"):
        experiment_seed(-1)
    with pytest.raises(ValueError, match="seed"):
        experiment_seed(2**63)


def test_base_argument_ignores_the_environment(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_SEED", "7")
    a = torch.randint(100, (5,), generator=make_generator(4, base=BASE))
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    b = torch.randint(100, (5,), generator=make_generator(4, base=BASE))
    assert torch.equal(a, b)
    with seeded(4, base=BASE):
        c = torch.rand(3)
    torch.manual_seed(derive_seed(4, BASE))
    assert torch.equal(c, torch.rand(3))


def _same_run(monkeypatch, fn, arrays):
    """fn(seed) under SEQTHEORY_SEED=0 with seed=BASE, and fn(None) under SEQTHEORY_SEED=BASE:
    identical arrays; fn(0) differs."""
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    explicit = fn(BASE)
    other = fn(0)
    monkeypatch.setenv("SEQTHEORY_SEED", str(BASE))
    from_env = fn(None)
    assert explicit.seed == from_env.seed == BASE
    for a, b in zip(arrays(explicit), arrays(from_env), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert any(
        not np.array_equal(np.asarray(a), np.asarray(c))
        for a, c in zip(arrays(explicit), arrays(other), strict=True)
    )


def test_tasks_run(monkeypatch):
    from seqtheory.tasks import SETUP, run

    tiny = replace(
        SETUP.cpu, steps=4, eval_every=2, seeds_eval_every=2, eval_n=8, batch_size=4, seeds=(0, 1)
    )
    _same_run(
        monkeypatch,
        lambda s: run(tiny, seed=s, progress=False),
        lambda r: [r.history.loss, r.ensemble_history.loss, r.eval_x],
    )


def test_copying_run(monkeypatch):
    from seqtheory.copying import CopySetup, run

    tiny = CopySetup(
        min_len=2,
        max_len=3,
        test_len=4,
        d_model=8,
        batch_size=4,
        steps=4,
        warmup=2,
        eval_every=2,
        eval_size=5,
        seeds=(0, 1),
        names=("transformer", "LSTM"),
    )
    _same_run(
        monkeypatch,
        lambda s: run(tiny, seed=s, progress=False),
        lambda r: [h.loss for run_ in r.runs.values() for h in run_.histories],
    )


def test_chain_of_thought_run(monkeypatch):
    from seqtheory.chain_of_thought import CoTSetup, run

    tiny = CoTSetup(n=4, seeds=2, hidden=4, train_size=10, batch_size=8, steps=3, long_factor=1)
    _same_run(
        monkeypatch,
        lambda s: run(tiny, seed=s, progress=False),
        lambda r: [r.train_x, *[h.loss for h in r.histories.values()]],
    )


def test_tokenization_trap(monkeypatch):
    from seqtheory.tokenization import SETUP, run_trap

    tiny = replace(
        SETUP.cpu, trap_steps=3, control_steps=3, trap_length=8, batch_size=4, trap_seeds=(0, 1)
    )
    _same_run(
        monkeypatch,
        lambda s: run_trap(tiny, seed=s, progress=False),
        lambda r: [h.loss for h in r.histories.values()],
    )


def test_scaling_beta_sweep(monkeypatch):
    from seqtheory.scaling import ScalingSetup, run_beta_sweep

    tiny = ScalingSetup(sizes=(32, 64, 128), betas=(0.5, 2.0), beta_seeds=(0, 1))
    _same_run(
        monkeypatch,
        lambda s: run_beta_sweep(tiny, seed=s, progress=False),
        lambda r: [r.exponents, r.control_exponents],
    )


def test_representations_task(monkeypatch):
    from seqtheory.representations import RepresentationSetup, kinship_task

    tiny = RepresentationSetup(generations=3, dims=(2,), seeds=(0,), steps=2)

    class Task:  # kinship_task returns no seed: wrap it for _same_run
        def __init__(self, seed):
            self.task = kinship_task(tiny, seed=seed)
            self.seed = experiment_seed(seed)

    _same_run(
        monkeypatch,
        Task,
        lambda t: [t.task.forest.parent, t.task.data.train, t.task.other_forest.parent],
    )


def test_incontext_run(monkeypatch):
    from seqtheory.incontext import ICLSetup, run

    tiny = ICLSetup(k=3, T=12, steps=3, eval_every=3, batch_size=4)
    _same_run(
        monkeypatch,
        lambda s: run(tiny, seed=s, progress=False, eval_n=4),
        lambda r: [r.history.loss, r.evaluator.x],
    )


def test_incontext_run_seeds(monkeypatch):
    from seqtheory.incontext import ICLSetup, run_seeds

    tiny = ICLSetup(k=3, T=12, steps=4, eval_every=2, batch_size=4)
    _same_run(
        monkeypatch,
        lambda s: run_seeds(tiny, seeds=(0, 1), seed=s, progress=False, eval_n=8),
        lambda r: [r.history.losses()],
    )

"""The experiment contract: named streams, the context, the result header, the decorator."""

import inspect
from dataclasses import dataclass

import pytest
import torch

from seqtheory.core.experiment import Experiment, RunInfo, Streams, Timer, experiment
from seqtheory.core.seeds import make_generator, make_rng

STREAMS = Streams(weights=0, heldout=1234, data=10_000)


@dataclass(frozen=True)
class _Setup:
    n: int = 3


@dataclass
class _Run(RunInfo):
    draws: torch.Tensor


@experiment(_Setup, STREAMS)
def _run(setup, ctx, *, scale=1.0):
    with ctx.timer() as t:
        draws = scale * torch.rand(setup.n, generator=ctx.generator("data", 2))
    return _Run(**ctx.header(setup, t.seconds), draws=draws)


def test_stream_seed_is_offset_plus_index():
    assert STREAMS.seed("heldout") == 1234
    assert STREAMS.seed("data", 7) == 10_007
    ctx = Experiment.make(seed=5, streams=STREAMS)
    a = torch.rand(4, generator=ctx.generator("data", 3))
    b = torch.rand(4, generator=make_generator(10_003, base=5))
    assert torch.equal(a, b)
    assert ctx.rng("weights").integers(1 << 30) == make_rng(0, base=5).integers(1 << 30)


def test_seeded_stream_matches_global_draws():
    ctx = Experiment.make(seed=3, streams=STREAMS)
    with ctx.seeded("heldout"):
        a = torch.rand(3)
    with ctx.seeded("heldout"):
        b = torch.rand(3)
    with ctx.seeded("weights"):
        c = torch.rand(3)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_friendly_call_equals_context_call():
    a = _run(_Setup(), seed=4, progress=False)
    b = _run(_Setup(), Experiment.make(seed=4, progress=False))
    assert torch.equal(a.draws, b.draws)
    assert (a.setup, a.seed, a.device) == (_Setup(), 4, "cpu") and a.seconds >= 0
    assert not torch.equal(a.draws, _run(_Setup(), seed=5).draws)
    assert torch.equal(_run(_Setup(), seed=4, scale=2.0).draws, 2 * a.draws)


def test_help_shows_the_friendly_call():
    shown = list(inspect.signature(_run).parameters)
    assert shown == ["setup", "ctx", "seed", "device", "progress", "scale"]


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="setup must be a _Setup"):
        _run(3)
    with pytest.raises(TypeError, match=r"ctx must be an Experiment, got int \(give a seed as"):
        _run(_Setup(), 3)
    with pytest.raises(TypeError, match="not both"):
        _run(_Setup(), Experiment.make(), seed=1)
    with pytest.raises(ValueError, match="stream must be one of"):
        Experiment.make(streams=STREAMS).generator("nope")
    with pytest.raises(ValueError, match="index"):
        STREAMS.seed("data", -1)
    with pytest.raises(ValueError, match="Streams"):
        Streams(data=-1)
    with pytest.raises(TypeError, match="progress"):
        Experiment.make(progress="yes")
    with pytest.raises(ValueError, match="device"):
        Experiment.make(device="nonsense")
    with pytest.raises(TypeError, match="streams must be a Streams"):
        experiment(_Setup, {"data": 1})


def test_timer_counts_the_block():
    with Timer() as t:
        sum(range(10_000))
    s = t.seconds
    assert 0 <= s == t.seconds

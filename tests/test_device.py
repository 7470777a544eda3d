"""Devices: check_device, and training off the CPU (the CUDA tests run only where a GPU is).

On a GPU machine without the notebook-test plugins (nbval, pytest-xdist), which the
repository's pytest options name: ``python -m pytest -o addopts="" tests/test_device.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seqtheory import Transformer, TransformerConfig, seed_everything, train
from seqtheory.core.runtime import check_device
from seqtheory.incontext import PAPER, run

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_check_device_accepts_and_refuses():
    assert check_device("device", None) == torch.device("cpu")
    assert check_device("device", "cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device must name a torch device"):
        check_device("device", "gpu0")
    with pytest.raises(TypeError, match="device must be None"):
        check_device("device", 0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            check_device("device", "cuda")


def test_icl_run_refuses_bad_device():
    with pytest.raises(ValueError, match="device"):
        run(PAPER.replace(steps=2), device="tpu-ish", progress=False)


def _batch(step):
    g = torch.Generator().manual_seed(step)
    x = torch.randint(5, (8, 12), generator=g)
    return x[:, :-1], x[:, 1:]


def test_cpu_losses_recorded_every_step():
    seed_everything(0)
    model = Transformer(TransformerConfig(vocab_size=5, max_len=12, n_layers=1, d_model=8))
    hist = train(model, _batch, steps=7, eval_every=3, progress=False)
    assert hist.steps == list(range(1, 8)) and len(hist.loss) == 7
    assert all(type(v) is float for v in hist.loss)


@cuda
def test_gpu_training_matches_cpu_batches_and_records_all_losses():
    """On a GPU: the same batches as on the CPU (no dropout), every step's loss recorded
    (copied to the host at evaluations, as floats), and the first loss equals the CPU's up
    to rounding."""
    cfg = dict(steps=9, eval_every=4, progress=False)
    runs = {}
    for device in ("cpu", "cuda"):
        seed_everything(0)
        model = Transformer(TransformerConfig(vocab_size=5, max_len=12, n_layers=1, d_model=8)).to(
            device
        )
        runs[device] = train(model, _batch, **cfg)
    cpu, gpu = runs["cpu"], runs["cuda"]
    assert gpu.steps == cpu.steps and len(gpu.loss) == 9
    assert all(type(v) is float for v in gpu.loss)
    assert abs(gpu.loss[0] - cpu.loss[0]) < 1e-4
    assert np.allclose(gpu.loss, cpu.loss, atol=1e-2)


@cuda
def test_icl_run_on_gpu():
    result = run(
        PAPER.replace(steps=60, eval_every=20), seed=0, eval_n=32, progress=False, device="cuda"
    )
    assert next(result.model.parameters()).device.type == "cuda"
    steps, loss = result.history.metric("loss")
    assert steps.tolist() == [0, 20, 40, 60] and all(math.isfinite(v) for v in loss)
    assert len(result.history.loss) == 60

"""seqtheory.core.runtime: devices, threads, run mode, sizes, evaluation mode, data."""

import numpy as np
import pytest
import torch

from seqtheory.core.runtime import Sizes, get_device, run_mode, setup_threads


def test_get_device_falls_back_to_cpu_and_says_so(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert get_device("cuda").type == "cpu"
    assert "not available" in capsys.readouterr().out
    with pytest.raises(ValueError, match="prefer must be one of"):
        get_device("tpu")


def test_run_mode_reads_full(monkeypatch):
    monkeypatch.delenv("FULL", raising=False)
    assert run_mode() == "cpu"
    monkeypatch.setenv("FULL", "1")
    assert run_mode() == "full"
    assert Sizes(cpu=1, full=2).pick() == 2
    assert Sizes(cpu=1, full=2).pick("cpu") == 1


def test_setup_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("SEQTHEORY_NUM_THREADS", "1")
        assert setup_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("SEQTHEORY_NUM_THREADS", "two")
        with pytest.raises(ValueError, match="SEQTHEORY_NUM_THREADS"):
            setup_threads()
    finally:
        torch.set_num_threads(before)


def test_load_data_names_available_files():
    from seqtheory.book.archive import load_data

    with pytest.raises(ValueError, match="no data file 'nope.json'"):
        load_data("nope.json")


def test_shipped_depth_data_covers_the_chapter_grid():
    """book/induction_heads.md plots this file; scripts/icl_depth.py writes it."""
    from seqtheory.book.archive import load_data

    data = load_data("icl_depth.json")
    assert data["meta"]["script"] == "scripts/icl_depth.py"
    grid = {(r["order"], r["architecture"]) for r in data["runs"]}
    archs = {
        "3 layers, MLP",
        "2 layers, attention-only",
        "4 layers, attention-only",
        "2 layers, attention-only, no LayerNorm",
        "4 layers, attention-only, no LayerNorm",
    }
    assert grid == {(m, a) for m in (1, 2, 3) for a in archs}
    for r in data["runs"]:
        assert len(r["steps"]) == len(r["kl_bayes"]) == len(r["loss"]) > 1


def test_run_device_is_the_cpu_unless_full(monkeypatch, capsys):
    from seqtheory.core.runtime import run_device

    monkeypatch.setenv("FULL", "0")
    assert run_device() == torch.device("cpu")
    assert "CPU" in capsys.readouterr().out
    monkeypatch.setenv("FULL", "1")
    want = torch.device("cuda") if torch.cuda.is_available() else None
    got = run_device(verbose=False)
    assert got == want if want is not None else got.type in ("cpu", "mps")


def test_evaluating_restores_the_mode_and_turns_off_gradients():
    from seqtheory.core.runtime import evaluating, to_numpy

    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    net.train()
    with evaluating(net) as m:
        assert m is net and not net.training and not torch.is_grad_enabled()
        out = net(torch.ones(1, 2))
    assert net.training and torch.is_grad_enabled() and not out.requires_grad
    net.eval()
    with evaluating(net):
        pass
    assert not net.training
    with pytest.raises(TypeError, match="model"):
        evaluating(3)
    arr = to_numpy(torch.ones(2, requires_grad=True) * 2)
    assert isinstance(arr, np.ndarray) and arr.tolist() == [2.0, 2.0]
    assert to_numpy([1, 2]).tolist() == [1, 2]

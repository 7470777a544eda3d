"""``start``: the first lines of every chapter."""

import matplotlib.pyplot as plt
import pytest
import torch

from seqtheory.chapters import start
from seqtheory.core.runtime import Sizes


def test_start_seeds_picks_and_styles(monkeypatch):
    monkeypatch.delenv("FULL", raising=False)
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    plt.rcParams["figure.figsize"] = (1.0, 1.0)
    torch.rand(5)
    setup, device = start(Sizes(cpu="small", full="large"), verbose=False)
    first = torch.rand(3)
    assert start(verbose=False) == device == torch.device("cpu")
    assert torch.equal(torch.rand(3), first)  # the same global stream each time
    assert setup == "small"
    assert tuple(plt.rcParams["figure.figsize"]) == (6.4, 3.8)


def test_start_refuses_what_is_not_sizes():
    with pytest.raises(TypeError, match="sizes must be a Sizes"):
        start({"cpu": 1})

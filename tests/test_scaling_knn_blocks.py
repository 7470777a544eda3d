"""The k-NN learner's blocked neighbour search, the targets on a device, and the block-wise
draw of the networks' mini-batches (seqtheory.scaling)."""

import numpy as np
import pytest
import torch

from seqtheory import scaling
from seqtheory.scaling import TorusTask, fit_regressors, knn_error, learning_curves


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny programs: one torch thread (the book's default), restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _unblocked_knn_error(X, y, Xt, yt, ks=None):
    """The search on the whole (n, n) distance matrix at once."""
    n = len(X)
    if ks:
        ks = [k for k in ks if k < n]
    else:
        ks = [2**i for i in range(16) if 2**i <= max(n // 8, 1)]
    d_tr = torch.cdist(X, X)
    d_tr.fill_diagonal_(float("inf"))
    csum = y[d_tr.topk(max(ks), largest=False).indices].cumsum(1)
    loo = [float(((csum[:, k - 1] / k - y) ** 2).mean()) for k in ks]
    k = ks[int(np.argmin(loo))]
    nt = torch.cdist(Xt, X).topk(k, largest=False).indices
    return float(((y[nt].mean(1) - yt) ** 2).mean())


@pytest.mark.parametrize(
    "d, n, ks", [(1, 50, None), (2, 300, None), (4, 203, (1, 3, 9, 40)), (2, 64, (2, 5, 64, 100))]
)
def test_blocked_knn_equals_the_search_on_the_whole_matrix(d, n, ks):
    task = TorusTask(d=d, D=16, max_freq=8, seed=1)
    X, y, _ = task.sample(n, 3)
    Xt, yt, _ = task.sample(61, scaling.STREAMS.seed("tests", 3), noisy=False)
    want = _unblocked_knn_error(X, y, Xt, yt, ks)
    for block in (1, 7, 50, n - 1, n, 4096):
        assert scaling._knn_error(X, y, Xt, yt, ks, block=block) == want
    assert knn_error(task, n, 3, n_test=61, ks=ks, block=7) == want


def test_knn_sweep_is_the_same_for_every_block_size_and_device_cpu():
    task = TorusTask(d=2, D=16, max_freq=8)
    a = knn_error(task, 500, seed=2, block=7)
    assert a == knn_error(task, 500, seed=2) == knn_error(task, 500, seed=2, device="cpu")
    assert learning_curves([task], [500], "knn", (2,), progress=False, device="cpu")[0, 0, 0] == a


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(block=0), ValueError, "block"),
        (dict(block=2.5), TypeError, "block"),
        (dict(block=True), TypeError, "block"),
        (dict(device="tpu-of-dreams"), ValueError, "device"),
        (dict(device=3), TypeError, "device"),
        (dict(n_test=0), ValueError, "n_test"),
        (dict(ks=(100, 200)), ValueError, "ks"),
    ],
)
def test_knn_error_rejects_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        knn_error(TorusTask(d=1, max_freq=4), 50, **kwargs)


def test_target_and_sample_take_a_device_and_reject_bad_ones():
    task = TorusTask(d=3, max_freq=8)
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, (5000, 3))
    assert np.array_equal(task.target(theta, device="cpu"), task.target(theta))
    X, y, th = task.sample(300, 4, device=torch.device("cpu"))
    X0, y0, th0 = task.sample(300, 4)
    assert torch.equal(X, X0) and torch.equal(y, y0) and np.array_equal(th, th0)
    with pytest.raises(ValueError, match="device"):
        task.target(theta, device="nowhere")
    with pytest.raises(TypeError, match="device"):
        task.sample(10, device=1.0)


def test_mini_batches_drawn_in_blocks_of_steps_are_those_drawn_step_by_step(monkeypatch):
    task = TorusTask(d=1, D=16, max_freq=4)
    train = [task.sample(n, s)[:2] for n, s in ((40, 1), (90, 2))]
    test = [task.sample(64, 9, noisy=False)[:2]] * 2

    def run():
        return fit_regressors("mlp", 16, 4, train, test, init_seeds=[3, 4], steps=23, batch=8)

    want = run()
    for draw in (1, 5, 23, 1000):
        monkeypatch.setattr(scaling, "_DRAW_STEPS", draw)
        assert np.array_equal(run(), want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_targets_and_knn_on_a_gpu_agree_with_the_cpu():
    task = TorusTask(d=4, max_freq=8)
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, (9000, 4))
    assert np.allclose(task.target(theta, device="cuda"), task.target(theta), rtol=0, atol=1e-9)
    X, y, _ = task.sample(3000, 1)
    Xt, yt, _ = task.sample(500, scaling.STREAMS.seed("tests", 1), noisy=False)
    cpu = scaling._knn_error(X, y, Xt, yt)
    gpu = scaling._knn_error(X, y, Xt, yt, block=700, device=torch.device("cuda"))
    assert gpu == pytest.approx(cpu, rel=0.05)


def test_mlps_of_all_widths_padded_into_one_program_match_the_width_by_width_runs(monkeypatch):
    """The padded program (used on a GPU) against the width-by-width runs (the CPU's): the
    same errors up to rounding, the padding units still exactly zero after training."""
    from seqtheory.scaling import approximation_error

    tasks = [TorusTask(d=1, D=16, max_freq=4), TorusTask(d=2, D=16, max_freq=4)]
    kw = dict(steps=40, batch=32, pool=256, n_test=128, progress=False)
    params, alone = approximation_error(tasks, "mlp", (4, 8, 12), (0, 1), **kw)
    monkeypatch.setattr(scaling, "_PADDED_MLP_DEVICES", ("cpu",))
    padded_params, padded = approximation_error(tasks, "mlp", (4, 8, 12), (0, 1), **kw)
    assert np.array_equal(params, padded_params) and padded.shape == alone.shape == (2, 3, 2)
    assert np.allclose(padded, alone, rtol=1e-5, atol=0)
    one_params, one = approximation_error(tasks[1], "mlp", (8, 4), (3,), **kw)
    assert one.shape == (2, 1)
    monkeypatch.setattr(scaling, "_PADDED_MLP_DEVICES", ("cuda",))
    assert np.allclose(
        one, approximation_error(tasks[1], "mlp", (8, 4), (3,), **kw)[1], rtol=1e-5, atol=0
    )


def test_padded_mlps_hold_each_width_in_its_first_units():
    from seqtheory.core.ensemble import Ensemble

    model = scaling._padded_mlps(16, (4, 8), [5, 6], base=0).ensemble
    alone = Ensemble(lambda: scaling.make_learner("mlp", 16, 4), [5, 6], base=0)
    for name, p in model.stacked.items():
        q = alone.stacked[name]
        head = (slice(0, 2), *(slice(0, n) for n in q.shape[1:]))
        assert torch.equal(p[head], q)
        rest = p[:2].detach().clone()
        rest[head] = 0
        assert not rest.any()  # zeros outside the width-4 units
    x = torch.randn(4, 3, 16)
    wide = model(x)  # (4, 3)
    assert torch.allclose(wide[:2], alone(x[:2]), rtol=1e-6, atol=1e-7)

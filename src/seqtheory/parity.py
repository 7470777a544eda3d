"""Sparse parities: the task, batched two-layer ReLU networks, and their experiments.

An ``(n, k)``-sparse parity labels ``x`` in ``{-1, +1}^n`` by the product of ``k`` hidden
coordinates (the *support*). It is statistically easy (``O(k log n)`` samples pin the
support down) but hard for statistical-query learners, and the population gradient of a
network only carries a weak signal about the support (a Fourier gap, see
:func:`population_gradient`).
Two chapters use this module: *hidden progress* (online SGD: :data:`SETUP`, :func:`run`,
:func:`run_k_sweep`, :func:`run_n_sweep`) and *width and luck* (a fixed sample:
:data:`WIDTH_LUCK_SETUP`, :func:`run_width_luck`).

Many networks -- different seeds, widths or initialisations -- are trained as one tensor
program, :class:`ParityMLPs`: network ``m`` has its own weights and, with plain SGD and a
loss summed over networks, its own gradient, so it learns exactly as if trained alone.
Training goes through :func:`seqtheory.core.training.train` (``optimizer="sgd"``, the per-network
hinge losses as an (M,) vector, early stopping with ``stop_when``).

Randomness: every network and data set is drawn from an explicit ``torch.Generator``; the
experiments take theirs from the named streams of :data:`STREAMS` under the base seed
(see :mod:`seqtheory.core.experiment`; ``seed=None`` is the book's base seed).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

from .book.plotting import palette
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.runtime import Sizes, check_device
from .core.training import History, train
from .core.validate import check_float, check_int

__all__ = [
    "ParityMLPs",
    "ParityRun",
    "HiddenProgressSetup",
    "SETUP",
    "HiddenProgressResult",
    "WaitingTimeResult",
    "run",
    "run_k_sweep",
    "run_n_sweep",
    "WidthLuckSetup",
    "WIDTH_LUCK_SETUP",
    "WidthLuckResult",
    "run_width_luck",
    "sparse_parity",
    "parity_labels",
    "hinge_loss",
    "train_online",
    "train_offline",
    "steps_to_success",
    "placebo_ratios",
    "lucky_neuron_probability",
    "expected_lucky_neurons",
    "hypercube",
    "population_gradient",
    "coverage_distribution",
    "support_coverage",
    "support_weight",
    "fisher_two_sided",
    "STREAMS",
    "plot_waiting_times",
    "plot_success_rates",
]

#: The experiments' random streams. Each draw seeds one generator that draws, in order, a
#: batch of networks' initial weights, their test set and their training data: ``online``
#: for :func:`run` (draw 0), ``per_k`` and ``per_n`` for the sweeps (draw ``k`` or ``n``),
#: ``per_width`` for :func:`run_width_luck` (draw ``width``).
STREAMS = Streams(online=0, per_k=100, per_n=200, per_width=0)

INITS = ("dense", "sparse")


def check_support(support, n: int, *, sort: bool = False) -> torch.Tensor:
    """``support`` as a long tensor (k,) of distinct bit indices (coordinates) in 0..n-1, in
    the order given, or sorted (``sort``); also :mod:`seqtheory.chain_of_thought`'s check."""
    a = torch.as_tensor(support, dtype=torch.long)
    rule = f"support must hold distinct bit indices in 0..{n - 1}"
    if a.dim() != 1 or a.numel() < 1:
        raise ValueError(f"{rule} (a non-empty list of coordinates), got {a.tolist()}")
    if int(a.min()) < 0 or int(a.max()) >= n:
        raise ValueError(f"{rule}, got {a.tolist()}: support coordinates must lie in 0..{n - 1}")
    if a.unique().numel() != a.numel():
        raise ValueError(f"{rule}, got {a.tolist()}: support coordinates must be distinct")
    return a.sort().values if sort else a


def _check_generator(generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            "generator must be a torch.Generator (e.g. "
            f"seqtheory.make_generator(seed, device)), got {type(generator).__name__}"
        )
    return generator


def parity_labels(x: torch.Tensor, support) -> torch.Tensor:
    """Labels ``prod_{i in support} x_i`` in ``{-1, +1}`` for inputs ``x`` (..., n) of +-1."""
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise TypeError("x must be a torch.Tensor of shape (..., n) with entries +-1")
    if not bool(((x == 1) | (x == -1)).all()):
        raise ValueError(
            "x must have entries +1 or -1 (the parity of 0/1 inputs is their "
            "sum mod 2: map them with 1 - 2 * x first)"
        )
    support = check_support(support, x.shape[-1]).to(x.device)
    return x[..., support].prod(dim=-1)


def sparse_parity(
    num: int,
    n: int,
    support,
    *,
    models: int | None = None,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``num`` uniform inputs in ``{-1,+1}^n`` and their parity labels on ``support``.

    Returns ``x`` (num, n) and ``y`` (num,), floats on ``generator``'s device; with
    ``models=M`` every network gets its own sample: ``x`` (M, num, n), ``y`` (M, num).
    """
    num = check_int("num", num, minimum=1)
    n = check_int("n", n, minimum=1)
    support = check_support(support, n)
    g = _check_generator(generator)
    shape = (num, n) if models is None else (check_int("models", models, minimum=1), num, n)
    return _draw(shape, support.to(g.device), g)


def _draw(shape: tuple, support: torch.Tensor, g: torch.Generator):
    """:func:`sparse_parity` without the checks (the training loops' hot path)."""
    x = torch.randint(0, 2, shape, generator=g, device=g.device).float() * 2 - 1
    return x, x[..., support].prod(dim=-1)


def hinge_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Hinge loss ``max(0, 1 - y f(x))`` averaged over samples, per network: (M,).

    ``out`` and ``y`` are (M, B). Back-propagating the *sum* over networks gives each
    network its own gradient (so a batch of networks trains like separate runs).
    """
    return (1 - y * out).clamp(min=0).mean(dim=-1)


def hypercube(n: int) -> torch.Tensor:
    """All ``2**n`` points of ``{-1, +1}^n`` as a float tensor (2**n, n), for ``n <= 20``."""
    n = check_int("n", n, minimum=1)
    if n > 20:
        raise ValueError(f"n must be <= 20 to enumerate {{-1, +1}}^n, got {n}")
    bits = (torch.arange(2**n)[:, None] >> torch.arange(n)) & 1  # (2^n, n)
    return 1 - 2 * bits.float()


def population_gradient(model: ParityMLPs, support) -> torch.Tensor:
    """Exact gradient of the population hinge loss w.r.t. the first-layer weights: (M, W, n).

    The expectation over uniform ``x`` is an exact average over all ``2**n`` inputs
    (``model.n <= 20``), so no sampling noise enters; the model is left unchanged.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    x = hypercube(model.n).to(model.w1.device)  # (2^n, n)
    y = parity_labels(x, support)  # (2^n,)
    loss = hinge_loss(model(x), y[None, :]).sum()
    (grad,) = torch.autograd.grad(loss, model.w1)
    return grad.detach()


#: hidden activations (numbers) an evaluation holds at once: 1 GiB in float32
_EVAL_NUMBERS = 2**28


class ParityMLPs(nn.Module):
    """``M`` independent two-layer ReLU networks ``f(x) = a . relu(W x + b) + c``.

    ``widths`` gives each network's number of hidden units (narrower ones are zero-padded
    and masked, so they behave exactly like networks of that width); ``sparsity`` gives
    each network's number of inputs per neuron at initialisation (``None``: dense). The
    initialisation is PyTorch's default for ``nn.Linear`` (uniform with bound
    ``1/sqrt(fan_in)``, where a sparse neuron's fan-in is ``s``); after it, every weight
    trains, including those that started at zero. The weights are drawn from ``generator``
    on its device (never from torch's global generator) and the networks live on
    ``device`` (default: the generator's device).
    """

    def __init__(self, n: int, widths, *, sparsity=None, generator: torch.Generator, device=None):
        super().__init__()
        self.n = check_int("n", n, minimum=1)
        widths = [check_int("width", w, minimum=1) for w in np.atleast_1d(widths).tolist()]
        if not widths:
            raise ValueError("widths must name at least one network, got none")
        M, W = len(widths), max(widths)
        if sparsity is None or isinstance(sparsity, (int, np.integer)):
            sparsity = [sparsity] * M
        sparsity = list(sparsity)
        if len(sparsity) != M:
            raise ValueError(f"sparsity has {len(sparsity)} entries for {M} networks")
        for s in sparsity:
            if s is not None and not 1 <= check_int("sparsity", s) <= n:
                raise ValueError(f"sparsity must be in 1..n={n} (or None for dense), got {s}")
        g = _check_generator(generator)
        device = g.device if device is None else check_device("device", device)
        self.widths, self.sparsity = widths, sparsity
        dev = g.device

        def unit(*shape):  # U(-1, 1)
            return torch.rand(*shape, generator=g, device=dev) * 2 - 1

        fan_in = torch.tensor([float(n if s is None else s) for s in sparsity], device=dev)
        w1 = unit(M, W, n) / fan_in.sqrt()[:, None, None]  # (M, W, n)
        for m, s in enumerate(sparsity):
            if s is not None:  # keep s random inputs per neuron
                keep = torch.rand(W, n, generator=g, device=dev).argsort(dim=1)[:, :s]
                mask = torch.zeros(W, n, device=dev).scatter_(1, keep, 1.0)
                w1[m] *= mask
        b1 = unit(M, W) / fan_in.sqrt()[:, None]  # (M, W)
        width_t = torch.tensor(widths, dtype=torch.float, device=dev)
        a = unit(M, W) / width_t.sqrt()[:, None]  # (M, W)
        c = unit(M) / width_t.sqrt()  # (M,)
        live = (torch.arange(W, device=dev)[None, :] < width_t[:, None]).float()  # (M, W)
        self.register_buffer("live", live)
        self.w1 = nn.Parameter(w1 * live[:, :, None])
        self.b1 = nn.Parameter(b1 * live)
        self.a = nn.Parameter(a * live)
        self.c = nn.Parameter(c)
        # the initial first layer, moved along with the model (not part of its state_dict)
        self.register_buffer("w1_init", self.w1.detach().clone(), persistent=False)
        self.to(device)

    @property
    def num_models(self) -> int:
        return len(self.widths)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """Hidden activations (M, B, W); ``x`` is (B, n) shared or (M, B, n) per network."""
        if x.shape[-1] != self.n:
            raise ValueError(f"inputs must have n={self.n} coordinates, got {x.shape[-1]}")
        pre = (
            torch.einsum("mwn,...bn->mbw", self.w1, x)
            if x.dim() == 2
            else torch.einsum("mwn,mbn->mbw", self.w1, x)
        )
        return torch.relu(pre + self.b1[:, None, :]) * self.live[:, None, :]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs (M, B) for inputs (B, n) or (M, B, n)."""
        return torch.einsum("mbw,mw->mb", self.hidden(x), self.a) + self.c[:, None]

    @torch.no_grad()
    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Fraction of signs right, per network (M,); examples in chunks that keep the
        hidden activations under ``_EVAL_NUMBERS`` numbers."""
        y = y if y.dim() == 2 else y[None, :]
        B = x.shape[-2]
        chunk = max(1, _EVAL_NUMBERS // (self.num_models * max(self.widths)))
        if B <= chunk:
            return ((self(x) * y) > 0).float().mean(dim=-1)
        right = sum(
            ((self(x[..., i : i + chunk, :]) * y[:, i : i + chunk]) > 0).float().sum(-1)
            for i in range(0, B, chunk)
        )
        return right / B

    @torch.no_grad()
    def coordinate_weight(self) -> torch.Tensor:
        """Mean |w_i| over each network's neurons, per input coordinate i: (M, n).

        The hidden progress: during the plateau every coordinate's weight shrinks, but those
        on the support shrink less, so their share grows while accuracy sits at chance.
        """
        per_neuron = torch.tensor(self.widths, dtype=torch.float, device=self.w1.device)
        return self.w1.abs().sum(dim=1) / per_neuron[:, None]

    @torch.no_grad()
    def distance_from_init(self) -> torch.Tensor:
        """``max |W_t - W_0|`` over first-layer weights, per network (M,)."""
        return (self.w1 - self.w1_init).abs().flatten(1).max(dim=1).values

    @torch.no_grad()
    def column_distance(self) -> torch.Tensor:
        """``max_j |W_t - W_0|_{ji}`` over each network's neurons, per input i: (M, n)."""
        return (self.w1 - self.w1_init).abs().max(dim=1).values


@dataclass
class ParityRun:
    """What :func:`train_online` / :func:`train_offline` record every ``eval_every`` steps
    (arrays in the networks' float32, read from the loop's
    :class:`~seqtheory.core.training.History`)."""

    steps: np.ndarray  # (E,) evaluation steps
    accuracy: np.ndarray  # (E, M) test accuracy per network
    loss: np.ndarray  # (E, M) training hinge loss per network (last batch)
    weight: np.ndarray  # (E, M, n) mean |w_i| per input coordinate
    distance: np.ndarray  # (E, M) max |W_t - W_0| of the first layer
    support: tuple = ()  # the parity's support
    seconds: float = 0.0  # wall-clock time of the loop
    history: History | None = field(default=None, repr=False)  # every step's losses
    column_distance: np.ndarray | None = field(default=None, repr=False)  # (E, M, n) max over
    #                                            neurons of |W_t - W_0| per input coordinate

    @classmethod
    def from_history(cls, hist: History, support) -> ParityRun:
        """The record of one :func:`seqtheory.core.training.train` run of :class:`ParityMLPs`
        whose ``eval_fn`` returned ``accuracy``, ``weight``, ``distance`` and
        ``column_distance``."""
        steps, acc = hist.metric("accuracy")
        f32 = np.float32  # the networks' dtype, as recorded
        losses = hist.losses()  # (steps, M), one row per step 1..N
        loss = np.full(acc.shape, np.nan)  # no training loss before step 1
        loss[1:] = losses[steps[1:] - 1]
        return cls(
            steps.astype(np.int64),
            acc.astype(f32),
            loss,
            hist.metric("weight")[1].astype(f32),
            hist.metric("distance")[1].astype(f32),
            support=tuple(int(i) for i in support),
            seconds=hist.seconds,
            history=hist,
            column_distance=hist.metric("column_distance")[1].astype(f32),
        )

    @property
    def support_ratio(self) -> np.ndarray:
        """(E, M): mean |w| on the support over mean |w| off it (1 = no preference)."""
        on = np.zeros(self.weight.shape[-1], bool)
        on[list(self.support)] = True
        return self.weight[..., on].mean(-1) / self.weight[..., ~on].mean(-1)

    def subset_ratio(self, subset) -> np.ndarray:
        """(E, M): mean |w| on ``subset`` over mean |w| off the support, divided by its
        value at the first evaluation (so every subset starts at 1)."""
        on = np.zeros(self.weight.shape[-1], bool)
        on[list(self.support)] = True
        r = self.weight[..., list(subset)].mean(-1) / self.weight[..., ~on].mean(-1)
        return r / r[0]


def placebo_ratios(
    run: ParityRun, *, max_subsets: int = 5000, generator: np.random.Generator | None = None
) -> np.ndarray:
    """The support ratio's placebo: :meth:`ParityRun.subset_ratio` for off-support subsets
    of the support's size, (P, E, M).

    These subsets carry no signal, so their spread is what noise alone gives the support
    ratio. All of them are used when there are at most ``max_subsets`` (3-subsets of 27
    off-support bits: 2,925); otherwise ``max_subsets`` distinct random ones, drawn with
    ``generator`` (default: NumPy's ``default_rng(0)``).
    """
    if not isinstance(run, ParityRun):
        raise TypeError(f"run must be a ParityRun, got {type(run).__name__}")
    max_subsets = check_int("max_subsets", max_subsets, minimum=1)
    n, k = run.weight.shape[-1], len(run.support)
    off = [i for i in range(n) if i not in set(run.support)]
    if k > len(off):
        raise ValueError(f"no off-support subset of size {k} among {len(off)} coordinates")
    if math.comb(len(off), k) <= max_subsets:
        subsets = [list(t) for t in itertools.combinations(off, k)]
    else:
        rng = generator if generator is not None else np.random.default_rng(0)
        chosen: set = set()
        while len(chosen) < max_subsets:
            chosen.add(tuple(sorted(rng.choice(off, size=k, replace=False).tolist())))
        subsets = [list(t) for t in sorted(chosen)]
    return np.stack([run.subset_ratio(t) for t in subsets])


def _fit(
    model: ParityMLPs,
    support,
    batch_fn,
    test,
    *,
    steps,
    lr,
    weight_decay,
    eval_every,
    stop_at,
    progress,
    desc,
) -> ParityRun:
    """Both chapters' SGD: :func:`seqtheory.core.training.train` with the per-network hinge
    losses, evaluating test accuracy, coordinate weight and distance from init."""
    x_test, y_test = test

    def eval_fn(net, step):
        return {
            "accuracy": net.accuracy(x_test, y_test),
            "weight": net.coordinate_weight(),
            "distance": net.distance_from_init(),
            "column_distance": net.column_distance(),
        }

    def solved(row) -> bool:  # every network at stop_at (as float32 compares)
        return bool(row["accuracy"].astype(np.float32).min() >= stop_at)

    hist = train(
        model,
        batch_fn,
        optimizer="sgd",
        steps=steps,
        lr=lr,
        weight_decay=weight_decay,
        grad_clip=None,
        eval_every=eval_every,
        loss_fn=hinge_loss,
        eval_fn=eval_fn,
        stop_when=None if stop_at is None else solved,
        progress=progress,
        desc=desc,
    )
    return ParityRun.from_history(hist, support)


def train_online(
    model: ParityMLPs,
    support,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 0.1,
    eval_every: int = 50,
    test_size: int = 2000,
    stop_at: float | None = None,
    generator: torch.Generator,
    progress: bool = True,
    desc: str = "online SGD",
) -> ParityRun:
    """Online SGD: a fresh batch of ``batch_size`` samples per network at every step.

    Stops early once every network's test accuracy reaches ``stop_at`` (if given). The data
    are drawn with ``generator`` on its device (best: the model's; a CPU generator for a
    model elsewhere draws on the CPU and the loop moves every batch over).
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = check_support(support, model.n)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if stop_at is not None:
        stop_at = check_float("stop_at", stop_at, low=0.0, high=1.0)
    g = _check_generator(generator)
    dev = model.w1.device
    x_test, y_test = sparse_parity(
        check_int("test_size", test_size, minimum=1), model.n, support, generator=g
    )
    shape, on_g = (model.num_models, batch_size, model.n), support.to(g.device)
    return _fit(
        model,
        support,
        lambda step: _draw(shape, on_g, g),
        (x_test.to(dev), y_test.to(dev)),
        steps=steps,
        lr=lr,
        weight_decay=0.0,
        eval_every=eval_every,
        stop_at=stop_at,
        progress=progress,
        desc=desc,
    )


def train_offline(
    model: ParityMLPs,
    support,
    samples,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 0.1,
    weight_decay: float = 0.01,
    eval_every: int = 250,
    test_size: int = 2000,
    generator: torch.Generator,
    progress: bool = True,
    desc: str = "offline SGD",
) -> ParityRun:
    """Mini-batch SGD on a fixed training set of ``samples[m]`` examples for network ``m``.

    Each network draws its own training set once; every step it sees ``batch_size``
    examples sampled from it with replacement. Test accuracy is on fresh samples. The
    random numbers are drawn with ``generator`` on its device and the data moved to the
    model's device once; with a CPU generator a model on a GPU sees the same data and
    batches as on the CPU (the batch indices then cross over at every step).
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = check_support(support, model.n)
    M = model.num_models
    samples = torch.as_tensor(np.broadcast_to(np.asarray(samples), (M,)).copy())
    if samples.dtype not in (torch.int32, torch.int64) or int(samples.min()) < 1:
        raise ValueError(f"samples must be positive ints (one, or one per network), got {samples}")
    batch_size = check_int("batch_size", batch_size, minimum=1)
    g = _check_generator(generator)
    dev = model.w1.device
    X, Y = sparse_parity(int(samples.max()), model.n, support, models=M, generator=g)
    test = sparse_parity(
        check_int("test_size", test_size, minimum=1), model.n, support, generator=g
    )
    X, Y, test = X.to(dev), Y.to(dev), tuple(t.to(dev) for t in test)
    samples = samples.to(g.device)

    def batches(step):
        idx = (torch.rand(M, batch_size, generator=g, device=g.device) * samples[:, None]).long()
        idx = idx.to(dev)  # (M, B)
        return X.gather(1, idx[:, :, None].expand(-1, -1, model.n)), Y.gather(1, idx)

    return _fit(
        model,
        support,
        batches,
        test,
        steps=steps,
        lr=lr,
        weight_decay=weight_decay,
        eval_every=eval_every,
        stop_at=None,
        progress=progress,
        desc=desc,
    )


def steps_to_success(run: ParityRun, threshold: float = 0.99) -> np.ndarray:
    """First evaluation step at which each network's test accuracy reaches ``threshold``
    (``nan`` if it never does): (M,)."""
    if not isinstance(run, ParityRun):
        raise TypeError(f"run must be a ParityRun, got {type(run).__name__}")
    threshold = check_float("threshold", threshold, low=0.0, high=1.0)
    hit = run.accuracy >= threshold  # (E, M)
    first = hit.argmax(axis=0)
    return np.where(hit.any(axis=0), run.steps[first], np.nan)


def lucky_neuron_probability(n: int, k: int, s: int, overlap: int | None = None) -> float:
    """Probability that a neuron seeing ``s`` of ``n`` random inputs sees at least
    ``overlap`` (default: all ``k``) of the parity's support (a hypergeometric tail)."""
    n = check_int("n", n, minimum=1)
    k, s = check_int("k", k, minimum=1), check_int("s", s, minimum=1)
    if k > n or s > n:
        raise ValueError(f"need k <= n and s <= n, got n={n}, k={k}, s={s}")
    overlap = k if overlap is None else check_int("overlap", overlap, minimum=0)
    return sum(
        math.comb(k, j) * math.comb(n - k, s - j) for j in range(overlap, min(k, s) + 1)
    ) / math.comb(n, s)


def expected_lucky_neurons(width, n: int, k: int, s: int) -> np.ndarray:
    """``P(at least one lucky neuron)`` in a layer of ``width`` neurons (array-friendly)."""
    p = lucky_neuron_probability(n, k, s)
    return 1 - (1 - p) ** np.asarray(width, dtype=float)


def coverage_distribution(n: int, k: int, s: int) -> np.ndarray:
    """``P(J = j)`` for ``j = 0..k``: how many of the ``k`` support coordinates a neuron that
    sees ``s`` of ``n`` inputs (a uniformly random subset) covers -- hypergeometric,
    ``C(k, j) C(n-k, s-j) / C(n, s)``."""
    n = check_int("n", n, minimum=1)
    k, s = check_int("k", k, minimum=1), check_int("s", s, minimum=1)
    if k > n or s > n:
        raise ValueError(f"need k <= n and s <= n, got n={n}, k={k}, s={s}")
    return np.array(
        [math.comb(k, j) * math.comb(n - k, s - j) if j <= s else 0 for j in range(k + 1)],
        dtype=float,
    ) / math.comb(n, s)


def support_coverage(model: ParityMLPs, support) -> torch.Tensor:
    """How many support coordinates each neuron's *initial* weights touch: (M, W) ints.

    A sparse neuron covers the support coordinates among its ``s`` non-zero inputs; a dense
    neuron covers all of them. Padding units of narrower networks get ``-1``.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = check_support(support, model.n)
    touched = (model.w1_init[:, :, support.to(model.w1_init.device)] != 0).sum(-1)  # (M, W)
    return torch.where(model.live.to(touched.device) > 0, touched, -1).cpu()


@torch.no_grad()
def support_weight(model: ParityMLPs, support, *, initial: bool = False) -> torch.Tensor:
    """Each neuron's first-layer weight on the support, ``||w_S||_2``: (M, W) (0 for padding).

    ``initial=True`` reads the weights at initialisation instead of the current ones.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = check_support(support, model.n)
    w = model.w1_init if initial else model.w1
    return w[:, :, support.to(w.device)].norm(dim=-1).cpu()


def fisher_two_sided(a: int, n1: int, b: int, n2: int) -> float:
    """Fisher's exact test that ``a`` successes of ``n1`` runs and ``b`` of ``n2`` share one
    success rate: the two-sided p-value (``scipy.stats.fisher_exact``'s), the probability,
    given ``a + b`` successes in all, of a split no more likely than the one observed."""
    n1, n2 = check_int("n1", n1, minimum=1), check_int("n2", n2, minimum=1)
    a, b = check_int("a", a, minimum=0), check_int("b", b, minimum=0)
    if a > n1 or b > n2:
        raise ValueError(f"need a <= n1 and b <= n2, got a={a}, n1={n1}, b={b}, n2={n2}")
    total = a + b
    lo, hi = max(0, total - n2), min(total, n1)
    pmf = np.array(
        [math.comb(n1, j) * math.comb(n2, total - j) for j in range(lo, hi + 1)], dtype=float
    ) / math.comb(n1 + n2, total)
    return float(min(1.0, pmf[pmf <= pmf[a - lo] * (1 + 1e-7)].sum()))


def _check_sizes(name: str, values, low: int, high: int | None = None) -> tuple:
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list)) or not values:
        raise TypeError(f"{name} must be a non-empty tuple of ints, got {values!r}")
    for v in values:
        check_int(name, v, minimum=low)
        if high is not None and v > high:
            raise ValueError(f"{name} entries must be <= {high}, got {v}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat a value, got {values!r}")
    return tuple(values)


# --------------------------------------------------------------------------- hidden progress
@dataclass(frozen=True)
class HiddenProgressSetup:
    """Sizes of the hidden-progress chapter (see :data:`SETUP`)."""

    n: int = 30  # input bits
    k: int = 3  # support size (coordinates 0..k-1) of experiments 1 and 3
    width: int = 1000  # hidden ReLU units
    batch_size: int = 32  # fresh samples per SGD step
    lr: float = 0.1  # SGD learning rate
    test_size: int = 2000  # fresh test examples for the accuracy
    success: float = 0.99  # test accuracy that counts as solved (stops the sweeps)
    seeds: int = 4  # networks trained at once in experiment 1 (run)
    steps: int = 2000  # steps of experiment 1
    eval_every: int = 50  # evaluate every this many steps (experiments 1 and 2)
    ks: tuple = (2, 3, 4, 5)  # support sizes of the steps-vs-k sweep (run_k_sweep)
    k_seeds: int = 3  # networks per k
    max_steps: int = 15000  # give up on a k (or an n) after this many steps
    ns: tuple = (15, 20, 30, 40, 50)  # input sizes of the steps-vs-n sweep (run_n_sweep)
    n_seeds: int = 4  # networks per n
    n_eval_every: int = 25  # evaluation interval of the steps-vs-n sweep
    gradient_ns: tuple = (10, 12, 14)  # input sizes of the exact population gradient

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=1)
        check_int("k", self.k, minimum=1)
        if self.k > self.n:
            raise ValueError(f"k must be <= n={self.n}, got {self.k}")
        for name in (
            "width",
            "batch_size",
            "test_size",
            "seeds",
            "steps",
            "eval_every",
            "k_seeds",
            "max_steps",
            "n_seeds",
            "n_eval_every",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_float("success", self.success, low=0.0, high=1.0)
        _check_sizes("ks", self.ks, 1, self.n)
        _check_sizes("ns", self.ns, self.k)
        _check_sizes("gradient_ns", self.gradient_ns, self.k, 20)


#: CPU-sized default and the ``FULL=1`` size of the hidden-progress chapter.
#: ``FULL=1`` follows Barak et al. (2022) where they state it: their width-1000 ReLU MLP
#: (setting (iii)), online SGD with B = 32, eta = 0.1 and the hinge loss (App. D.1.6, C.5),
#: 25 random trials per (n, k) and a test batch of 2^13 examples (Sec. 3); k = 2..6 at
#: n = 30 and n up to 100 at k = 3 cover their App. D.1.6 sweep (30, 3..6), (60, 3), (90, 3).
#: Kept from the chapter: success at 99% test accuracy (the paper: 100%), PyTorch's default
#: initialisation. Estimated (not measured) on one H100: a few minutes, about 25 minutes if
#: k = 6, n = 90 and n = 100 all ran to ``max_steps``.
SETUP = Sizes(
    cpu=HiddenProgressSetup(),
    full=HiddenProgressSetup(
        test_size=8192,
        seeds=8,
        steps=3000,
        ks=(2, 3, 4, 5, 6),
        k_seeds=25,
        max_steps=200000,
        ns=(15, 20, 30, 40, 50, 60, 70, 90, 100),
        n_seeds=25,
        gradient_ns=(10, 12, 14, 16, 18),
    ),
)


@dataclass
class HiddenProgressResult(RunInfo):
    """Experiment 1 of the hidden-progress chapter (:func:`run`)."""

    record: ParityRun  # every evaluation: accuracy, weights, distance, losses
    success: np.ndarray  # (seeds,) first evaluation step at setup.success accuracy
    model: ParityMLPs  # the trained networks (on the CPU)

    @property
    def support(self) -> list[int]:
        return list(self.record.support)


@dataclass
class WaitingTimeResult(RunInfo):
    """Steps to solve the parity as ``variable`` (``"k"`` or ``"n"``) varies
    (:func:`run_k_sweep`, :func:`run_n_sweep`)."""

    variable: str  # "k" (support size) or "n" (input bits)
    steps_to_success: dict  # value -> (networks,) steps to setup.success (nan: never)
    records: dict = field(default_factory=dict, repr=False)  # value -> ParityRun

    @property
    def values(self) -> np.ndarray:
        """The values of the variable, in the order run."""
        return np.array(list(self.steps_to_success), dtype=float)

    @property
    def medians(self) -> np.ndarray:
        """Median steps over networks, per value. A network that never succeeded (within
        ``max_steps``) counts as slower than every one that did, so the median stays
        defined while fewer than half of them failed; it is ``inf`` otherwise."""
        return np.array(
            [np.median(np.where(np.isnan(v), np.inf, v)) for v in self.steps_to_success.values()]
        )

    def power_law(self) -> tuple[float, float]:
        """Least-squares line through (log value, log median steps): ``(slope, intercept)``,
        i.e. ``steps ~ exp(intercept) * value**slope``, over the values with a finite median
        (a ValueError if fewer than two have one)."""
        med = self.medians
        ok = np.isfinite(med)
        if ok.sum() < 2:
            raise ValueError(
                f"a power law needs two values of {self.variable} where most "
                f"networks succeeded; medians: {med.tolist()}"
            )
        slope, icpt = np.polyfit(np.log(self.values[ok]), np.log(med[ok]), 1)
        return float(slope), float(icpt)


@experiment(HiddenProgressSetup, STREAMS)
def run(setup: HiddenProgressSetup, ctx: Experiment) -> HiddenProgressResult:
    """Experiment 1: ``setup.seeds`` width-``setup.width`` networks learn the ``(n, k)``
    parity with online SGD for ``setup.steps`` steps (stream ``online``)."""
    with ctx.timer() as t:
        g = ctx.generator("online", 0)
        nets = ParityMLPs(setup.n, [setup.width] * setup.seeds, generator=g)
        record = train_online(
            nets,
            list(range(setup.k)),
            steps=setup.steps,
            batch_size=setup.batch_size,
            lr=setup.lr,
            eval_every=setup.eval_every,
            test_size=setup.test_size,
            generator=g,
            progress=ctx.progress,
            desc=f"n={setup.n}, k={setup.k}",
        )
    return HiddenProgressResult(
        **ctx.header(setup, t.seconds),
        record=record,
        success=steps_to_success(record, setup.success),
        model=nets.cpu(),
    )


def _sweep(setup: HiddenProgressSetup, ctx: Experiment, variable: str) -> WaitingTimeResult:
    """Steps to success for every k (``variable="k"``, stream ``per_k``) or every n
    (``"n"``, stream ``per_n``) of ``setup``."""
    by_k = variable == "k"
    values = setup.ks if by_k else setup.ns
    networks = setup.k_seeds if by_k else setup.n_seeds
    every = setup.eval_every if by_k else setup.n_eval_every
    with ctx.timer() as t:
        steps, records = {}, {}
        for v in values:
            n, k = (setup.n, v) if by_k else (v, setup.k)
            g = ctx.generator("per_k" if by_k else "per_n", v)
            nets = ParityMLPs(n, [setup.width] * networks, generator=g)
            rec = train_online(
                nets,
                list(range(k)),
                steps=setup.max_steps,
                batch_size=setup.batch_size,
                lr=setup.lr,
                eval_every=every,
                test_size=setup.test_size,
                stop_at=setup.success,
                generator=g,
                progress=ctx.progress,
                desc=f"{variable}={v}",
            )
            steps[v], records[v] = steps_to_success(rec, setup.success), rec
    return WaitingTimeResult(
        **ctx.header(setup, t.seconds), variable=variable, steps_to_success=steps, records=records
    )


@experiment(HiddenProgressSetup, STREAMS)
def run_k_sweep(setup: HiddenProgressSetup, ctx: Experiment) -> WaitingTimeResult:
    """Experiment 2: steps to ``setup.success`` for each support size in ``setup.ks``
    (``n = setup.n``, ``setup.k_seeds`` networks per k, at most ``setup.max_steps``; draw
    ``k`` of stream ``per_k``)."""
    return _sweep(setup, ctx, "k")


@experiment(HiddenProgressSetup, STREAMS)
def run_n_sweep(setup: HiddenProgressSetup, ctx: Experiment) -> WaitingTimeResult:
    """Experiment 3: steps to ``setup.success`` for each input size in ``setup.ns``
    (``k = setup.k``, ``setup.n_seeds`` networks per n, at most ``setup.max_steps``; draw
    ``n`` of stream ``per_n``)."""
    return _sweep(setup, ctx, "n")


def plot_waiting_times(result: WaitingTimeResult, ax=None, *, color=None, fit: bool = False):
    """Steps to success against k or n: one dot per network, a line through the medians
    (``fit=True``: a least-squares power law ``steps ∝ n^slope`` on log-log axes instead).
    Returns the slope when ``fit``, else ``None`` (also when fewer than two values have a
    median, as in a run too short for most networks to succeed: then no line is drawn)."""
    if not isinstance(result, WaitingTimeResult):
        raise TypeError(f"result must be a WaitingTimeResult, got {type(result).__name__}")
    ax = plt.gca() if ax is None else ax
    color = palette(1)[0] if color is None else color
    for v, s in result.steps_to_success.items():
        ax.scatter([v] * len(s), s, color=color, s=18, zorder=3)
    x, med = result.values, result.medians
    slope = None
    if fit:
        ax.plot(x, med, "o", color="black", ms=4, label="median over seeds")
        if np.isfinite(med).sum() >= 2:
            slope, icpt = result.power_law()
            ax.plot(
                x,
                np.exp(icpt) * x**slope,
                color="gray",
                lw=1,
                label=f"fit: steps ∝ ${result.variable}^{{{slope:.2f}}}$",
            )
        ax.set(xscale="log")
        ax.legend(fontsize=8)
    else:
        ax.plot(x, med, color="gray", lw=1)
        ax.set(xticks=list(result.steps_to_success))
    label = "support size k" if result.variable == "k" else "number of input bits n"
    ax.set(yscale="log", xlabel=label, ylabel=f"SGD steps to {result.setup.success:.0%} accuracy")
    return slope


# --------------------------------------------------------------------------- width and luck
@dataclass(frozen=True)
class WidthLuckSetup:
    """Sizes of the width-and-luck chapter (see :data:`WIDTH_LUCK_SETUP`)."""

    n: int = 30  # input bits
    k: int = 3  # support size (coordinates 0..k-1)
    samples: tuple = (200, 400, 600, 800)  # training-set sizes m
    widths: tuple = (32, 128, 512)  # hidden widths
    sparsity: int = 6  # inputs per neuron under sparse initialisation
    seeds: int = 4  # runs per (m, width, initialisation)
    steps: int = 6000  # SGD steps
    batch_size: int = 32  # examples per step, drawn from the training set
    lr: float = 0.1  # SGD learning rate
    weight_decay: float = 0.01  # keeps the networks from settling on memorisation
    eval_every: int = 1500  # evaluate every this many steps
    test_size: int = 2000  # fresh test examples for the accuracy
    success: float = 0.9  # test accuracy that counts as learning the parity

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=1)
        check_int("k", self.k, minimum=1)
        if self.k > self.n:
            raise ValueError(f"k must be <= n={self.n}, got {self.k}")
        check_int("sparsity", self.sparsity, minimum=1)
        if self.sparsity > self.n:
            raise ValueError(f"sparsity must be <= n={self.n}, got {self.sparsity}")
        for name in ("seeds", "steps", "batch_size", "eval_every", "test_size"):
            check_int(name, getattr(self, name), minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_float("weight_decay", self.weight_decay, low=0.0)
        check_float("success", self.success, low=0.0, high=1.0)
        _check_sizes("samples", self.samples, 1)
        _check_sizes("widths", self.widths, 1)


#: CPU-sized default and the ``FULL=1`` size of the width-and-luck chapter.
#: ``FULL=1`` is bounded by the chapter, not by time (about 5 minutes on one H100, an
#: estimate): ``steps`` must be a recorded step of the archived frontier
#: (``width_frontier.json``: every 250 up to 20,000), ``samples`` must hold 200, 400, 600
#: and 800 and ``widths`` one of the archive's; the 7 x 2 x 16 networks of width 8,192
#: hold 1.8 million hidden units (evaluated in chunks of examples, about 1 GiB at a
#: time). Edelman et al. (2023)'s grid (widths 10..10^5, m 100..10^6, sparsity s = 2 < k)
#: is not followed.
WIDTH_LUCK_SETUP = Sizes(
    cpu=WidthLuckSetup(),
    full=WidthLuckSetup(
        samples=(100, 200, 300, 400, 600, 800, 1200),
        widths=(32, 128, 512, 2048, 8192),
        seeds=16,
        steps=20000,
        eval_every=5000,
    ),
)


@dataclass
class WidthLuckResult(RunInfo):
    """The width-and-luck grid (:func:`run_width_luck`): per width, one batched run of the
    networks ``combos`` = every (m, initialisation, seed)."""

    combos: list  # (m, init, r) of network j of every width
    records: dict = field(repr=False)  # width -> ParityRun
    models: dict = field(repr=False)  # width -> trained ParityMLPs (on the CPU)

    def columns(self, m: int, init: str) -> list[int]:
        """Indices of the networks (seeds 0, 1, ...) with ``m`` examples and ``init``."""
        cols = [j for j, c in enumerate(self.combos) if c[0] == m and c[1] == init]
        if not cols:
            raise ValueError(
                f"no networks with m={m} and init={init!r}; samples "
                f"{self.setup.samples}, inits {INITS}"
            )
        return cols

    def final_accuracy(self, width: int, m: int, init: str) -> np.ndarray:
        """Final test accuracy of each seed of one cell: (seeds,)."""
        if width not in self.records:
            raise ValueError(f"width must be one of {list(self.records)}, got {width}")
        return self.records[width].accuracy[-1, self.columns(m, init)]

    def successes(self, width: int, m: int, init: str) -> np.ndarray:
        """Which seeds of one cell reached ``setup.success``: (seeds,) bools."""
        return self.final_accuracy(width, m, init) >= self.setup.success

    def success_rate(self, width: int, m: int, init: str) -> float:
        """Fraction of the cell's seeds that reached ``setup.success``."""
        return float(np.mean(self.successes(width, m, init)))

    def count(self, samples, inits, widths=None) -> int:
        """Successful runs, summed over seeds and the given samples, inits and widths
        (default: all widths)."""
        widths = self.setup.widths if widths is None else widths
        return sum(
            int(self.successes(w, m, i).sum()) for w in widths for m in samples for i in inits
        )


@experiment(WidthLuckSetup, STREAMS)
def run_width_luck(setup: WidthLuckSetup, ctx: Experiment) -> WidthLuckResult:
    """Train every (m, initialisation, seed) network of each width in ``setup.widths`` as
    one batched program (draw ``width`` of stream ``per_width``) with :func:`train_offline`."""
    combos = [(m, init, r) for m in setup.samples for init in INITS for r in range(setup.seeds)]
    with ctx.timer() as t:
        records, models = {}, {}
        for w in setup.widths:
            g = ctx.generator("per_width", w)
            nets = ParityMLPs(
                setup.n,
                [w] * len(combos),
                generator=g,
                sparsity=[setup.sparsity if i == "sparse" else None for _, i, _ in combos],
            )
            records[w] = train_offline(
                nets,
                list(range(setup.k)),
                [m for m, _, _ in combos],
                steps=setup.steps,
                batch_size=setup.batch_size,
                lr=setup.lr,
                weight_decay=setup.weight_decay,
                eval_every=setup.eval_every,
                test_size=setup.test_size,
                generator=g,
                progress=ctx.progress,
                desc=f"width {w}",
            )
            models[w] = nets.cpu()
    return WidthLuckResult(
        **ctx.header(setup, t.seconds), combos=combos, records=records, models=models
    )


def plot_success_rates(result: WidthLuckResult, axes=None):
    """Success rate against m, one line per width: dense (left) and sparse (right) panels."""
    if not isinstance(result, WidthLuckResult):
        raise TypeError(f"result must be a WidthLuckResult, got {type(result).__name__}")
    s = result.setup
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(7.2, 3.2), sharey=True, constrained_layout=True)
    for ax, init in zip(axes, INITS, strict=True):
        for c, w in zip(palette(len(s.widths)), s.widths, strict=True):
            ax.plot(
                s.samples,
                [result.success_rate(w, m, init) for m in s.samples],
                "o-",
                color=c,
                label=f"width {w}",
            )
        ax.set(
            xlabel="training examples m",
            xticks=list(s.samples),
            title="dense init" if init == "dense" else f"sparse init (s = {s.sparsity})",
        )
    axes[0].set_ylabel(f"success rate (test acc ≥ {s.success})")
    axes[1].legend()
    return axes

"""Sparse parities: the task, batched two-layer ReLU networks, and their training.

An ``(n, k)``-sparse parity labels ``x`` in ``{-1, +1}^n`` by the product of ``k`` hidden
coordinates (the *support*). It is statistically easy (``O(k log n)`` samples pin the
support down) but hard for statistical-query learners, and the population gradient of a
network only carries a weak signal about the support (a Fourier gap, see
:func:`population_gradient`).
Two chapters use this module: *hidden progress* (online SGD, :func:`train_online`) and
*width and luck* (a fixed sample, :func:`train_offline`).

Many networks -- different seeds, widths or initialisations -- are trained as one tensor
program, :class:`ParityMLPs`: network ``m`` has its own weights and, with plain SGD and a
loss summed over networks, its own gradient, so it learns exactly as if trained alone.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from .utils import Sizes, check_float, check_int, progress_bar

__all__ = [
    "ParityMLPs", "ParityRun", "HiddenProgressSetup", "HIDDEN_PROGRESS", "WidthLuckSetup",
    "WIDTH_LUCK", "sparse_parity", "parity_labels", "hinge_loss", "train_online",
    "train_offline", "steps_to_success", "placebo_ratios", "lucky_neuron_probability",
    "expected_lucky_neurons", "hypercube", "population_gradient", "coverage_distribution",
    "support_coverage", "support_weight", "fisher_two_sided",
]


def _check_support(n: int, support) -> torch.Tensor:
    support = torch.as_tensor(support, dtype=torch.long)
    if support.dim() != 1 or support.numel() < 1:
        raise ValueError(f"support must be a non-empty list of coordinates, got {support.tolist()}")
    if int(support.min()) < 0 or int(support.max()) >= n:
        raise ValueError(f"support coordinates must lie in 0..{n - 1}, got {support.tolist()}")
    if support.unique().numel() != support.numel():
        raise ValueError(f"support coordinates must be distinct, got {support.tolist()}")
    return support


def parity_labels(x: torch.Tensor, support) -> torch.Tensor:
    """Labels ``prod_{i in support} x_i`` in ``{-1, +1}`` for inputs ``x`` (..., n) of +-1."""
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise TypeError("x must be a torch.Tensor of shape (..., n) with entries +-1")
    support = _check_support(x.shape[-1], support).to(x.device)
    return x[..., support].prod(dim=-1)


def sparse_parity(
    num: int,
    n: int,
    support,
    *,
    models: int | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``num`` uniform inputs in ``{-1,+1}^n`` and their parity labels on ``support``.

    Returns ``x`` (num, n) and ``y`` (num,), floats; with ``models=M`` every network gets
    its own sample: ``x`` (M, num, n), ``y`` (M, num).
    """
    num = check_int("num", num, minimum=1)
    n = check_int("n", n, minimum=1)
    support = _check_support(n, support)
    shape = (num, n) if models is None else (check_int("models", models, minimum=1), num, n)
    x = torch.randint(0, 2, shape, generator=generator).float() * 2 - 1
    return x, parity_labels(x, support)


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
    bits = (torch.arange(2 ** n)[:, None] >> torch.arange(n)) & 1         # (2^n, n)
    return 1 - 2 * bits.float()


def population_gradient(model: ParityMLPs, support) -> torch.Tensor:
    """Exact gradient of the population hinge loss w.r.t. the first-layer weights: (M, W, n).

    The expectation over uniform ``x`` is an exact average over all ``2**n`` inputs
    (``model.n <= 20``), so no sampling noise enters; the model is left unchanged.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    x = hypercube(model.n)                                               # (2^n, n)
    y = parity_labels(x, support)                                        # (2^n,)
    loss = hinge_loss(model(x), y[None, :]).sum()
    (grad,) = torch.autograd.grad(loss, model.w1)
    return grad.detach()


class ParityMLPs(nn.Module):
    """``M`` independent two-layer ReLU networks ``f(x) = a . relu(W x + b) + c``.

    ``widths`` gives each network's number of hidden units (narrower ones are zero-padded
    and masked, so they behave exactly like networks of that width); ``sparsity`` gives
    each network's number of inputs per neuron at initialisation (``None``: dense). The
    initialisation is PyTorch's default for ``nn.Linear`` (uniform with bound
    ``1/sqrt(fan_in)``, where a sparse neuron's fan-in is ``s``); after it, every weight
    trains, including those that started at zero.
    """

    def __init__(self, n: int, widths, *, sparsity=None,
                 generator: torch.Generator | None = None):
        super().__init__()
        self.n = check_int("n", n, minimum=1)
        widths = [check_int("width", w, minimum=1) for w in np.atleast_1d(widths).tolist()]
        M, W = len(widths), max(widths)
        if sparsity is None or isinstance(sparsity, (int, np.integer)):
            sparsity = [sparsity] * M
        sparsity = list(sparsity)
        if len(sparsity) != M:
            raise ValueError(f"sparsity has {len(sparsity)} entries for {M} networks")
        for s in sparsity:
            if s is not None and not 1 <= check_int("sparsity", s) <= n:
                raise ValueError(f"sparsity must be in 1..n={n} (or None for dense), got {s}")
        self.widths, self.sparsity = widths, sparsity
        g = generator

        def unit(*shape):                                                # U(-1, 1)
            return torch.rand(*shape, generator=g) * 2 - 1

        fan_in = torch.tensor([float(n if s is None else s) for s in sparsity])   # (M,)
        w1 = unit(M, W, n) / fan_in.sqrt()[:, None, None]                # (M, W, n)
        for m, s in enumerate(sparsity):
            if s is not None:                       # keep s random inputs per neuron
                keep = torch.rand(W, n, generator=g).argsort(dim=1)[:, :s]
                mask = torch.zeros(W, n).scatter_(1, keep, 1.0)
                w1[m] *= mask
        b1 = unit(M, W) / fan_in.sqrt()[:, None]                         # (M, W)
        width_t = torch.tensor(widths, dtype=torch.float)
        a = unit(M, W) / width_t.sqrt()[:, None]                         # (M, W)
        c = unit(M) / width_t.sqrt()                                      # (M,)
        live = (torch.arange(W)[None, :] < width_t[:, None]).float()      # (M, W)
        self.register_buffer("live", live)
        self.w1 = nn.Parameter(w1 * live[:, :, None])
        self.b1 = nn.Parameter(b1 * live)
        self.a = nn.Parameter(a * live)
        self.c = nn.Parameter(c)
        self.w1_init = self.w1.detach().clone()

    @property
    def num_models(self) -> int:
        return len(self.widths)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """Hidden activations (M, B, W); ``x`` is (B, n) shared or (M, B, n) per network."""
        if x.shape[-1] != self.n:
            raise ValueError(f"inputs must have n={self.n} coordinates, got {x.shape[-1]}")
        pre = torch.einsum("mwn,...bn->mbw", self.w1, x) if x.dim() == 2 else \
            torch.einsum("mwn,mbn->mbw", self.w1, x)
        return torch.relu(pre + self.b1[:, None, :]) * self.live[:, None, :]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs (M, B) for inputs (B, n) or (M, B, n)."""
        return torch.einsum("mbw,mw->mb", self.hidden(x), self.a) + self.c[:, None]

    @torch.no_grad()
    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Fraction of signs right, per network (M,)."""
        y = y if y.dim() == 2 else y[None, :]
        return ((self(x) * y) > 0).float().mean(dim=-1)

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
        return (self.w1 - self.w1_init.to(self.w1.device)).abs().flatten(1).max(dim=1).values


@dataclass
class ParityRun:
    """What :func:`train_online` / :func:`train_offline` record every ``eval_every`` steps."""

    steps: np.ndarray            # (E,) evaluation steps
    accuracy: np.ndarray         # (E, M) test accuracy per network
    loss: np.ndarray             # (E, M) training hinge loss per network (last batch)
    weight: np.ndarray           # (E, M, n) mean |w_i| per input coordinate
    distance: np.ndarray         # (E, M) max |W_t - W_0| of the first layer
    support: tuple = ()          # the parity's support
    seconds: float = 0.0         # wall-clock time of the loop

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


def placebo_ratios(run: ParityRun, *, max_subsets: int = 5000,
                   generator: np.random.Generator | None = None) -> np.ndarray:
    """The support ratio's placebo: :meth:`ParityRun.subset_ratio` for off-support subsets
    of the support's size, (P, E, M).

    These subsets carry no signal, so their spread is what noise alone gives the support
    ratio. All of them are used when there are at most ``max_subsets`` (3-subsets of 27
    off-support bits: 2,925); otherwise ``max_subsets`` distinct random ones, drawn with
    ``generator``.
    """
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


def _train(model, support, batches, steps, lr, weight_decay, eval_every, test, progress, desc,
           stop_at):
    """The one SGD loop of both chapters: hinge loss, per-network evaluation, early stop."""
    support = _check_support(model.n, support)
    steps = check_int("steps", steps, minimum=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    rows: list = []

    def record(step, loss):
        rows.append((step, model.accuracy(*test).cpu().numpy(), loss,
                     model.coordinate_weight().cpu().numpy(),
                     model.distance_from_init().cpu().numpy()))

    start = time.perf_counter()
    record(0, np.full(model.num_models, np.nan))
    for step in progress_bar(range(1, steps + 1), desc=desc, disable=not progress, mininterval=0.5):
        x, y = batches(step)
        per_model = hinge_loss(model(x), y)                              # (M,)
        opt.zero_grad(set_to_none=True)
        per_model.sum().backward()        # a sum: each network gets its own gradient
        opt.step()                        # (padded units get zero gradient: they stay 0)
        if step % eval_every == 0 or step == steps:
            record(step, per_model.detach().cpu().numpy())
            if stop_at is not None and rows[-1][1].min() >= stop_at:
                break
    cols = list(zip(*rows, strict=True))
    return ParityRun(np.array(cols[0]), *(np.stack(c) for c in cols[1:]),
                     support=tuple(support.tolist()), seconds=time.perf_counter() - start)


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
    generator: torch.Generator | None = None,
    progress: bool = True,
    desc: str = "online SGD",
) -> ParityRun:
    """Online SGD: a fresh batch of ``batch_size`` samples per network at every step.

    Stops early once every network's test accuracy reaches ``stop_at`` (if given).
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    test = sparse_parity(check_int("test_size", test_size, minimum=1), model.n, support,
                         generator=generator)
    M = model.num_models
    return _train(model, support,
                  lambda step: sparse_parity(batch_size, model.n, support, models=M,
                                             generator=generator),
                  steps, lr, 0.0, eval_every, test, progress, desc, stop_at)


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
    generator: torch.Generator | None = None,
    progress: bool = True,
    desc: str = "offline SGD",
) -> ParityRun:
    """Mini-batch SGD on a fixed training set of ``samples[m]`` examples for network ``m``.

    Each network draws its own training set once; every step it sees ``batch_size``
    examples sampled from it with replacement. Test accuracy is on fresh samples. The
    random numbers are drawn on the CPU with ``generator`` and then moved to the model's
    device, so a model moved to a GPU (``model.to("cuda")``) sees the same data and batches.
    """
    M = model.num_models
    samples = torch.as_tensor(np.broadcast_to(np.asarray(samples), (M,)).copy())
    if samples.dtype not in (torch.int32, torch.int64) or int(samples.min()) < 1:
        raise ValueError(f"samples must be positive ints (one, or one per network), got {samples}")
    batch_size = check_int("batch_size", batch_size, minimum=1)
    dev = model.w1.device
    X, Y = sparse_parity(int(samples.max()), model.n, support, models=M, generator=generator)
    test = sparse_parity(check_int("test_size", test_size, minimum=1), model.n, support,
                         generator=generator)
    X, Y, test = X.to(dev), Y.to(dev), tuple(t.to(dev) for t in test)

    def batches(step):
        idx = (torch.rand(M, batch_size, generator=generator) * samples[:, None]).long()
        idx = idx.to(dev)
        return X.gather(1, idx[:, :, None].expand(-1, -1, model.n)), Y.gather(1, idx)

    return _train(model, support, batches, steps, lr, weight_decay, eval_every, test,
                  progress, desc, None)


def steps_to_success(run: ParityRun, threshold: float = 0.99) -> np.ndarray:
    """First evaluation step at which each network's test accuracy reaches ``threshold``
    (``nan`` if it never does): (M,)."""
    threshold = check_float("threshold", threshold, low=0.0, high=1.0)
    hit = run.accuracy >= threshold                                       # (E, M)
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
    return sum(math.comb(k, j) * math.comb(n - k, s - j)
               for j in range(overlap, min(k, s) + 1)) / math.comb(n, s)


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
    return np.array([math.comb(k, j) * math.comb(n - k, s - j) if j <= s else 0
                     for j in range(k + 1)], dtype=float) / math.comb(n, s)


def support_coverage(model: ParityMLPs, support) -> torch.Tensor:
    """How many support coordinates each neuron's *initial* weights touch: (M, W) ints.

    A sparse neuron covers the support coordinates among its ``s`` non-zero inputs; a dense
    neuron covers all of them. Padding units of narrower networks get ``-1``.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = _check_support(model.n, support)
    touched = (model.w1_init[:, :, support.to(model.w1_init.device)] != 0).sum(-1)  # (M, W)
    return torch.where(model.live.to(touched.device) > 0, touched, -1).cpu()


@torch.no_grad()
def support_weight(model: ParityMLPs, support, *, initial: bool = False) -> torch.Tensor:
    """Each neuron's first-layer weight on the support, ``||w_S||_2``: (M, W) (0 for padding).

    ``initial=True`` reads the weights at initialisation instead of the current ones.
    """
    if not isinstance(model, ParityMLPs):
        raise TypeError(f"model must be a ParityMLPs, got {type(model).__name__}")
    support = _check_support(model.n, support)
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
    pmf = np.array([math.comb(n1, j) * math.comb(n2, total - j) for j in range(lo, hi + 1)],
                   dtype=float) / math.comb(n1 + n2, total)
    return float(min(1.0, pmf[pmf <= pmf[a - lo] * (1 + 1e-7)].sum()))


@dataclass(frozen=True)
class HiddenProgressSetup:
    """Sizes of the hidden-progress chapter (see :data:`HIDDEN_PROGRESS`)."""

    n: int = 30                   # input bits
    k: int = 3                    # support size of the main experiment
    width: int = 1000             # hidden ReLU units
    batch_size: int = 32          # fresh samples per SGD step
    lr: float = 0.1               # SGD learning rate
    seeds: int = 4                # networks trained at once in the main experiment
    steps: int = 2000             # steps of the main experiment
    ks: tuple = (2, 3, 4, 5)      # support sizes of the steps-vs-k experiment
    k_seeds: int = 3              # networks per k
    max_steps: int = 15000        # give up on a k after this many steps
    eval_every: int = 50          # evaluate every this many steps
    ns: tuple = (15, 20, 30, 40, 50)  # input sizes of the steps-vs-n experiment (k fixed)
    n_seeds: int = 4              # networks per n
    n_eval_every: int = 25        # evaluation interval of the steps-vs-n experiment
    gradient_ns: tuple = (10, 12, 14)  # input sizes of the exact population gradient


#: CPU-sized default and the ``FULL=1`` size of the hidden-progress chapter.
HIDDEN_PROGRESS = Sizes(
    cpu=HiddenProgressSetup(),
    full=HiddenProgressSetup(seeds=8, ks=(2, 3, 4, 5, 6), k_seeds=5, max_steps=200000,
                             ns=(15, 20, 30, 40, 50, 70, 100), n_seeds=8,
                             gradient_ns=(10, 12, 14, 16, 18)),
)


@dataclass(frozen=True)
class WidthLuckSetup:
    """Sizes of the width-and-luck chapter (see :data:`WIDTH_LUCK`)."""

    n: int = 30                       # input bits
    k: int = 3                        # support size
    samples: tuple = (200, 400, 600, 800)  # training-set sizes m
    widths: tuple = (32, 128, 512)    # hidden widths
    sparsity: int = 6                 # inputs per neuron under sparse initialisation
    seeds: int = 4                    # runs per (m, width, initialisation)
    steps: int = 6000                 # SGD steps (batch 32)
    lr: float = 0.1                   # SGD learning rate
    weight_decay: float = 0.01        # keeps the networks from settling on memorisation
    success: float = 0.9              # test accuracy that counts as learning the parity


#: CPU-sized default and the ``FULL=1`` size of the width-and-luck chapter.
WIDTH_LUCK = Sizes(
    cpu=WidthLuckSetup(),
    full=WidthLuckSetup(samples=(100, 200, 300, 400, 600, 800, 1200),
                        widths=(32, 128, 512, 2048, 8192), seeds=16, steps=20000),
)

"""Chain of thought for next-token predictors that are linear (Malach, 2024).

A *linear* auto-regressive model predicts each token from a linear function of the
one-hot context; alone it cannot even compute the XOR of two bits. Trained on a chain of
thought whose every step is a linear threshold of earlier tokens, it computes parity of
any number of bits. The price is the chain's length; Malach's *length complexity* of a
class of functions is the fewest tokens with which every function of the class can be
computed by the model class.

Formats for the parity of ``n`` bits ``x_1..x_n`` (tokens 0/1), all ending in the answer:

* ``"none"``: ``x_1..x_n  p``  -- the answer right away (chain length 1);
* ``"binary"``: the binary digits of the count ``S = x_1 + .. + x_n``, most significant
  first (length ``ceil(log2(n + 1))``): ``b_j = [S - sum_{l>j} 2^l b_l >= 2^j]``, the
  last one ``b_0`` being the parity;
* ``"unary"``: ``u_1 .. u_n  p`` with ``u_j = [S >= j]`` and
  ``p = [u_1 - u_2 + u_3 - .. >= 1]`` (length n + 1);
* ``"running"``: ``x_1..x_n  p_1 .. p_n`` with ``p_i = x_1 xor .. xor x_i`` (length n);
* ``"threshold"``: ``x_1..x_n  c_1 p_1 .. c_n p_n`` with ``c_i = [p_{i-1} + x_i >= 2]``
  (an AND) and ``p_i = [p_{i-1} + x_i - 2 c_i >= 1]`` -- every token a threshold of two or
  three earlier ones (length 2n).

``support=A`` (indices of the bits) builds every chain over the bits in ``A`` only: the
parity ``chi_A(x) = sum_{i in A} x_i mod 2`` of an unknown subset, the learning problem of
Malach's parity class; the prompt is still all ``n`` bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from .core.decode import greedy_decode
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import checking_inputs
from .core.runtime import Sizes, check_device, evaluating, to_numpy
from .core.training import IGNORE_INDEX, SCHEDULES, History, train
from .core.validate import check_choice, check_float, check_int
from .parity import check_support

__all__ = [
    "FORMATS",
    "parity_chain",
    "chain_length",
    "NextTokenNet",
    "generate",
    "answer_accuracy",
    "multiplication_chain",
    "CoTSetup",
    "SETUP",
    "CoTResult",
    "run",
    "all_bit_strings",
    "train_chain_models",
    "MULT_FORMATS",
    "multiplication_tokens",
    "multiplication_length",
    "MultSetup",
    "MULTIPLICATION_SETUP",
    "MultResult",
    "run_multiplication",
    "multiplication_split",
    "train_multiplication_models",
    "multiplication_accuracy",
    "multiplication_step_accuracy",
    "SUPPORT_FORMATS",
    "STREAMS",
]

#: the random streams of the two experiments (logical seeds under the base seed), one
#: generator each: ``parity`` draws :func:`run`'s split of the strings, then every model's
#: initial weights and batches in turn, then the random subset; ``products`` draws
#: :func:`run_multiplication`'s split of the pairs, then every chain's weights and batches
STREAMS = Streams(parity=0, products=1)

FORMATS = ("none", "binary", "running", "unary", "threshold")
#: Chains trained on the parity of an unknown subset of the bits (:func:`run`).
SUPPORT_FORMATS = ("none", "binary", "threshold")


def chain_length(n: int, fmt: str) -> int:
    """Tokens the model writes after the ``n`` input bits (the answer included)."""
    n = check_int("n", n, minimum=1)
    check_choice("fmt", fmt, FORMATS)
    return {"none": 1, "binary": n.bit_length(), "running": n, "unary": n + 1, "threshold": 2 * n}[
        fmt
    ]


def parity_chain(x: torch.Tensor, fmt: str, support=None) -> torch.Tensor:
    """Full sequences (B, n + chain) for bits ``x`` (B, n) of 0/1 in the format ``fmt``;
    ``support``: the chain (and answer) over those bits only, its length that of
    ``len(support)`` bits."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise TypeError("x must be a (batch, n) tensor of 0/1 bits")
    check_choice("fmt", fmt, FORMATS)
    x = x.long()
    a = None if support is None else check_support(support, x.shape[1], sort=True)
    if a is not None:
        return _support_chain(x, fmt, a.to(x.device))
    p = x.cumsum(dim=1) % 2  # (B, n) running xor
    if fmt == "none":
        chain = p[:, -1:]
    elif fmt == "binary":
        count = x.sum(dim=1, keepdim=True)  # (B, 1)
        shifts = torch.arange(chain_length(x.shape[1], fmt) - 1, -1, -1, device=x.device)
        chain = (count >> shifts) & 1  # (B, m) MSB first
    elif fmt == "unary":
        count = x.sum(dim=1, keepdim=True)
        u = (count >= torch.arange(1, x.shape[1] + 1, device=x.device)).long()  # (B, n)
        chain = torch.cat([u, p[:, -1:]], dim=1)
    elif fmt == "running":
        chain = p
    else:
        prev = torch.cat([torch.zeros_like(p[:, :1]), p[:, :-1]], dim=1)  # p_{i-1}
        c = ((prev + x) >= 2).long()  # AND
        chain = torch.stack([c, p], dim=2).flatten(1)  # c_1 p_1 c_2 p_2 ..
    return torch.cat([x, chain], dim=1)


def _support_chain(x: torch.Tensor, fmt: str, a: torch.Tensor) -> torch.Tensor:
    """:func:`parity_chain` over the bits ``a`` (checked, sorted, on ``x``'s device)."""
    return torch.cat([x, parity_chain(x[:, a], fmt)[:, len(a) :]], dim=1)


def multiplication_chain(a: int, b: int) -> str:
    """The long-multiplication chain of thought for ``a * b`` as text (an illustration)."""
    a, b = check_int("a", a, minimum=0), check_int("b", b, minimum=0)
    lines, total = [f"{a} * {b} ="], 0
    for i, digit in enumerate(reversed(str(b))):
        part = a * int(digit) * 10**i
        total += part
        lines.append(f"  {a} * {digit} * 10^{i} = {part}  (running sum {total})")
    lines.append(f"  answer: {total}")
    return "\n".join(lines)


class NextTokenNet(nn.Module):
    """Auto-regressive next-token model over a fixed-length one-hot context.

    ``hidden=None``: linear -- the logits at position ``t`` are
    ``b_t + sum_{s<=t} W[t, s, x_s]``, one causal linear map over the embedded context.
    ``hidden=h``: the same map into ``h`` ReLU units per position, then a linear read-out
    (an MLP over the context). ``models=M`` trains M independent copies at once.
    ``generator`` draws the initial weights (default: torch's global RNG; pass one for a
    reproducible model that leaves the global state alone). The model is built on
    ``device`` (default: the generator's device, else the CPU).

    ``shared=False`` (the setting of Malach's theorem) gives every position its own
    weights, a *time-inhomogeneous* model. ``shared=True`` ties them across positions:
    ``W[t, s]`` depends only on the distance ``t - s`` and every position has the same
    bias and read-out, like a causal convolution over the whole context.
    """

    def __init__(
        self,
        seq_len: int,
        vocab: int = 2,
        hidden: int | None = None,
        models: int = 1,
        init_std: float = 0.1,
        shared: bool = False,
        generator: torch.Generator | None = None,
        device: str | torch.device | None = None,
    ):
        super().__init__()
        self.seq_len = check_int("seq_len", seq_len, minimum=1)
        self.vocab = check_int("vocab", vocab, minimum=2)
        self.models = check_int("models", models, minimum=1)
        if hidden is not None:
            check_int("hidden", hidden, minimum=1)
        if not isinstance(shared, bool):
            raise TypeError(f"shared must be a bool, got {shared!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        dev = (
            check_device("device", device)
            if device is not None
            else (generator.device if generator is not None else torch.device("cpu"))
        )
        self.hidden, self.shared = hidden, shared
        T, V = seq_len, vocab
        width = V if hidden is None else hidden
        P = 1 if shared else T  # positions with their own weights
        self.register_buffer("causal", torch.tril(torch.ones(T, T, device=dev)))  # (T, T)
        # shared: weights per distance t - s, gathered into (T, T) by this index
        pos = torch.arange(T, device=dev)
        self.register_buffer("distance", (pos[:, None] - pos).clamp(min=0))  # (T, T)
        self.w = nn.Parameter(
            torch.randn(
                models, T, *([] if shared else [T]), V, width, generator=generator, device=dev
            )
            * init_std
        )  # (M,T,T,V,H) or (M,T,V,H)
        self.b = nn.Parameter(torch.zeros(models, P, width, device=dev))
        if hidden is not None:
            self.out = nn.Parameter(
                torch.randn(models, P, hidden, V, generator=generator, device=dev) / hidden**0.5
            )
            self.out_b = nn.Parameter(torch.zeros(models, P, V, device=dev))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (M, B, T, vocab) for token ids ``idx``: (B, T) shared or (M, B, T)."""
        if (
            idx.dim() not in (2, 3)
            or idx.shape[-1] > self.seq_len
            or (idx.dim() == 3 and idx.shape[0] != self.models)
        ):
            raise ValueError(
                f"idx must be (batch, T) or ({self.models}, batch, T) with "
                f"T <= {self.seq_len}, got {tuple(idx.shape)}"
            )
        if (
            checking_inputs()
            and idx.numel()
            and (int(idx.min()) < 0 or int(idx.max()) >= self.vocab)
        ):
            raise ValueError(
                f"idx must hold token ids in 0..{self.vocab - 1}, got values in "
                f"{int(idx.min())}..{int(idx.max())}"
            )
        if idx.dim() == 2:
            idx = idx[None].expand(self.models, -1, -1)
        T = idx.shape[-1]
        onehot = nn.functional.one_hot(idx, self.vocab).float()  # (M, B, T, V)
        w = self.w[:, self.distance[:T, :T]] if self.shared else self.w[:, :T, :T]
        w = w * self.causal[:T, :T, None, None]  # (M,T,T,V,H)
        b = self.b.expand(-1, T, -1) if self.shared else self.b[:, :T]  # (M,T,H)
        z = torch.einsum("mtsvh,mbsv->mbth", w, onehot) + b[:, None]  # (M,B,T,H)
        if self.hidden is None:
            return z
        out = self.out.expand(-1, T, -1, -1) if self.shared else self.out[:, :T]
        out_b = self.out_b.expand(-1, T, -1) if self.shared else self.out_b[:, :T]
        return torch.einsum("mbth,mthv->mbtv", torch.relu(z), out) + out_b[:, None]

    def next_logits(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits at the last position only, (M, B, vocab): ``forward(idx)[..., -1, :]``
        without the other positions (what greedy decoding needs; memory O(M B H), not
        O(M B T H))."""
        if (
            idx.dim() not in (2, 3)
            or not 1 <= idx.shape[-1] <= self.seq_len
            or (idx.dim() == 3 and idx.shape[0] != self.models)
        ):
            raise ValueError(
                f"idx must be (batch, T) or ({self.models}, batch, T) with "
                f"1 <= T <= {self.seq_len}, got {tuple(idx.shape)}"
            )
        if idx.dim() == 2:
            idx = idx[None].expand(self.models, -1, -1)
        t = idx.shape[-1] - 1
        p = 0 if self.shared else t  # the last position's own weights
        onehot = nn.functional.one_hot(idx, self.vocab).float()  # (M, B, T, V)
        w = self.w[:, self.distance[t, : t + 1]] if self.shared else self.w[:, t, : t + 1]
        z = torch.einsum("msvh,mbsv->mbh", w, onehot) + self.b[:, p, None]  # (M, B, H)
        if self.hidden is None:
            return z
        return torch.einsum("mbh,mhv->mbv", torch.relu(z), self.out[:, p]) + self.out_b[:, p, None]


def generate(model: NextTokenNet, x: torch.Tensor, steps: int) -> torch.Tensor:
    """Greedy continuation of prompts ``x`` (B, n) by ``steps`` tokens, per model: (M, B, steps)."""
    if not isinstance(model, NextTokenNet):
        raise TypeError(f"model must be a NextTokenNet, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise TypeError("x must be a (batch, n) tensor of prompts")
    return greedy_decode(model, x.long()[None].expand(model.models, -1, -1), steps)


def answer_accuracy(model: NextTokenNet, x: torch.Tensor, fmt: str, support=None) -> torch.Tensor:
    """Fraction of prompts whose generated chain ends in the right parity (of the bits in
    ``support``, default all), per model (M,)."""
    a = None if support is None else check_support(support, x.shape[1], sort=True)
    bits = x.long() if a is None else x.long()[:, a.to(x.device)]
    steps = chain_length(bits.shape[1], fmt)
    right = torch.zeros(model.models, device=x.device)
    for xs, bs in zip(x.split(_EVAL_CHUNK), bits.split(_EVAL_CHUNK), strict=True):
        chain = generate(model, xs, steps)  # (M, b, L)
        right += (chain[:, :, -1] == bs.sum(dim=1) % 2).float().sum(dim=1)
    return right / len(x)


def all_bit_strings(n: int) -> torch.Tensor:
    """Every string of ``n`` bits, (2**n, n), in binary counting order."""
    n = check_int("n", n, minimum=1)
    if n > 20:
        raise ValueError(f"n must be <= 20 to list all 2**n strings, got {n}")
    return (torch.arange(2**n)[:, None] >> torch.arange(n)) & 1


def _summed_loss(M: int):
    """Cross-entropy of M models' logits (M, B, T, V) against shared targets (B, T), summed
    over the models (each model's mean): one backward pass, independent gradients."""

    def loss(logits, y):
        return (
            nn.functional.cross_entropy(
                logits.flatten(0, 2), y[None].expand(M, -1, -1).flatten(), ignore_index=IGNORE_INDEX
            )
            * M
        )

    return loss


def train_chain_models(
    fmt: str,
    hidden: int | None,
    train_x: torch.Tensor,
    setup: CoTSetup,
    *,
    generator: torch.Generator | None = None,
    progress: bool = True,
    shared: bool = False,
    steps: int | None = None,
    support=None,
) -> tuple[NextTokenNet, History]:
    """Train ``setup.seeds`` models of one kind on the chains of the strings ``train_x``
    (``shared=True``: weights tied across positions, see :class:`NextTokenNet`); return
    the models (one :class:`NextTokenNet`) and the training :class:`History`.

    ``generator`` draws the initial weights and then every batch, in that order (one
    generator can be shared in sequence across several calls); the models are built and
    trained on its device, where ``train_x`` must be too. ``generator=None`` takes both
    from torch's global RNG (not reproducible from a seed -- pass a generator).
    Batches are drawn with replacement from ``train_x`` (a fixed training set); the loss
    is the cross-entropy of every chain token (the input bits are given, not predicted).
    ``steps`` overrides ``setup.steps``; ``support``: the chains of the parity of those
    bits (see :func:`parity_chain`).
    """
    if not isinstance(setup, CoTSetup):
        raise TypeError(f"setup must be a CoTSetup, got {type(setup).__name__}")
    if not isinstance(train_x, torch.Tensor) or train_x.dim() != 2:
        raise TypeError("train_x must be a (strings, n) tensor of 0/1 bits")
    steps = setup.steps if steps is None else check_int("steps", steps, minimum=1)
    n = train_x.shape[1]
    support = None if support is None else check_support(support, n, sort=True)
    if support is not None:
        support = support.to(train_x.device)
    k = n if support is None else len(support)  # bits the parity reads
    M = setup.seeds
    g = generator
    model = NextTokenNet(
        n + chain_length(k, fmt) - 1,
        hidden=hidden,
        models=M,
        shared=shared,
        generator=g,
        device=train_x.device,
    )
    hist = train(
        model,
        _chain_batches(train_x, fmt, support, setup.batch_size, g),
        steps=steps,
        lr=setup.lr,
        grad_clip=None,
        loss_fn=_summed_loss(M),
        eval_every=steps,
        progress=progress,
        desc=f"{fmt}, {'linear' if hidden is None else 'MLP'}{', shared' if shared else ''}",
    )
    return model, hist


def _chain_batches(
    train_x: torch.Tensor,
    fmt: str,
    support: torch.Tensor | None,
    batch_size: int,
    generator: torch.Generator | None,
):
    """``batch(step)`` of :func:`train_chain_models`: ``batch_size`` strings drawn with
    replacement from ``train_x`` by ``generator``, as chain inputs and targets (the chains of
    the parity of the bits in ``support``: checked, on ``train_x``'s device; None: all)."""
    n = train_x.shape[1]

    def batch(step):
        rows = torch.randint(
            len(train_x), (batch_size,), generator=generator, device=train_x.device
        )
        x = train_x[rows]
        seq = parity_chain(x, fmt) if support is None else _support_chain(x, fmt, support)
        return chain_targets(seq, n)

    return batch


def chain_targets(seq: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``seq[:, :-1]`` and targets ``seq[:, 1:]`` with the input bits masked."""
    y = seq[:, 1:].clone()
    y[:, : n - 1] = IGNORE_INDEX
    return seq[:, :-1], y


@dataclass(frozen=True)
class CoTSetup:
    """Sizes of the chain-of-thought chapter's parity experiment (see :data:`SETUP`)."""

    n: int = 12  # input bits
    seeds: int = 3  # independent models per row, trained at once
    hidden: int = 32  # ReLU units per position of the MLP variant
    train_size: int = 512  # training strings (of 2**n); the rest are for testing
    batch_size: int = 256  # strings per step, drawn from the training set
    steps: int = 800  # AdamW steps
    lr: float = 1e-2  # AdamW learning rate
    long_factor: int = 3  # the follow-up linear run on the binary chain trains
    #                               this many times longer
    support_size: int | None = None  # bits in the random subset whose parity the
    #                                  follow-up learns (unknown to the model); None: n // 2

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=2)
        if self.n > 20:
            raise ValueError(f"n must be <= 20 (all 2**n strings are listed), got {self.n}")
        for name in ("seeds", "hidden", "batch_size", "steps", "long_factor"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("train_size", self.train_size, minimum=1)
        if self.train_size >= 2**self.n:
            raise ValueError(
                f"train_size must leave test strings (< 2**n = {2**self.n}), got {self.train_size}"
            )
        check_float("lr", self.lr, low=0.0, low_open=True)
        if self.support_size is not None:
            check_int("support_size", self.support_size, minimum=1)
            if self.support_size > self.n:
                raise ValueError(f"support_size must be <= n = {self.n}, got {self.support_size}")

    @property
    def subset_size(self) -> int:
        """Bits in the follow-up's random subset: ``support_size``, default ``n // 2``."""
        return self.n // 2 if self.support_size is None else self.support_size


#: CPU-sized default and the ``FULL=1`` size of the chain-of-thought chapter.
SETUP = Sizes(cpu=CoTSetup(), full=CoTSetup(n=16, seeds=5, train_size=4096, steps=4000))

#: (chain format, model) rows of the parity experiment: model "linear" or "MLP".
_KINDS = ("linear", "MLP")


@dataclass
class CoTResult(RunInfo):
    """The parity experiment of :func:`run`: every (chain format, model) row, trained once
    (``seconds``: the whole run)."""

    train_x: torch.Tensor  # (train_size, n) training strings (CPU)
    test_x: torch.Tensor  # (2**n - train_size, n) the other strings (CPU)
    models: dict  # (fmt, "linear" | "MLP") -> NextTokenNet of setup.seeds models
    histories: dict  # same keys -> training History
    train_acc: dict  # same keys -> (seeds,) answer accuracy on train_x
    test_acc: dict  # same keys -> (seeds,) answer accuracy on test_x
    binary_long_test: np.ndarray  # (seeds,) linear, binary chain, long_factor x the steps
    shared_test: dict  # (fmt, kind) -> (seeds,) tied weights: the threshold chain for
    #                           both models, every other chain for the linear model
    support: np.ndarray  # (setup.subset_size,) the random subset of bits (0-based), sorted
    support_test: dict  # fmt in SUPPORT_FORMATS -> (seeds,) linear, parity of `support`


@experiment(CoTSetup, STREAMS)
def run(setup: CoTSetup, ctx: Experiment) -> CoTResult:
    """Train the chapter's chain models on the parity of ``setup.n`` bits.

    The 2**n strings are split at random (``setup.train_size`` for training, the rest for
    testing); for every chain format and each of a linear model and an MLP, ``setup.seeds``
    models are trained together (one :class:`NextTokenNet`) and their answer accuracy is
    measured by greedy generation. Then three follow-ups: the linear model on the binary
    chain trained ``setup.long_factor`` times longer; weights tied across positions
    (``shared=True``): both models on the threshold chain, then the linear model on every
    other chain; and the linear model on the parity of a random subset of
    ``setup.subset_size`` bits (drawn by the same generator), for each chain of
    :data:`SUPPORT_FORMATS`. One generator, ``ctx.generator("parity")`` (:data:`STREAMS`
    under the base seed ``ctx.seed``), draws the split, then each model's initial weights
    and batches in turn; models train on ``ctx.device`` (default: the CPU) and come back
    on the CPU.
    """
    dev = ctx.device
    with ctx.timer() as t:
        g = ctx.generator("parity")
        strings = all_bit_strings(setup.n).to(dev)
        strings = strings[torch.randperm(2**setup.n, generator=g, device=dev)]
        train_x, test_x = strings[: setup.train_size], strings[setup.train_size :]

        def fit(fmt, kind, **kw):
            hidden = None if kind == "linear" else setup.hidden
            return train_chain_models(
                fmt, hidden, train_x, setup, generator=g, progress=ctx.progress, **kw
            )

        rows = _parity_rows(fit, train_x, test_x)
        followups = _parity_followups(fit, setup, test_x, g)
    return CoTResult(
        **ctx.header(setup, t.seconds),
        train_x=train_x.cpu(),
        test_x=test_x.cpu(),
        **rows,
        **followups,
    )


def _parity_rows(fit, train_x: torch.Tensor, test_x: torch.Tensor) -> dict:
    """Every (chain format, model) row of :func:`run`, trained in turn by ``fit``: its
    models (CPU), histories and answer accuracies on ``train_x`` and ``test_x``."""
    models, histories, train_acc, test_acc = {}, {}, {}, {}
    for fmt in FORMATS:
        for kind in _KINDS:
            model, hist = fit(fmt, kind)
            train_acc[(fmt, kind)] = to_numpy(answer_accuracy(model, train_x, fmt))
            test_acc[(fmt, kind)] = to_numpy(answer_accuracy(model, test_x, fmt))
            models[(fmt, kind)], histories[(fmt, kind)] = model.cpu(), hist
    return {"models": models, "histories": histories, "train_acc": train_acc, "test_acc": test_acc}


def _parity_followups(fit, setup: CoTSetup, test_x: torch.Tensor, g: torch.Generator) -> dict:
    """The follow-ups of :func:`run`, in turn: longer training, tied weights, then the
    parity of a random subset of the bits (drawn by ``g``)."""
    long_model, _ = fit("binary", "linear", steps=setup.long_factor * setup.steps)
    binary_long_test = to_numpy(answer_accuracy(long_model, test_x, "binary"))
    shared_test = {}
    tied = [("threshold", kind) for kind in _KINDS]
    tied += [(fmt, "linear") for fmt in FORMATS if fmt != "threshold"]
    for fmt, kind in tied:
        model, _ = fit(fmt, kind, shared=True)
        shared_test[(fmt, kind)] = to_numpy(answer_accuracy(model, test_x, fmt))
    support = torch.randperm(setup.n, generator=g, device=g.device)[: setup.subset_size]
    support = support.sort().values
    support_test = {}
    for fmt in SUPPORT_FORMATS:
        model, _ = fit(fmt, "linear", support=support)
        support_test[fmt] = to_numpy(answer_accuracy(model, test_x, fmt, support))
    return {
        "binary_long_test": binary_long_test,
        "shared_test": shared_test,
        "support": to_numpy(support),
        "support_test": support_test,
    }


# ---------------------------------------------------------------------------------------
# Multiplication with and without a chain of thought (the paper's arithmetic task, toy size)
# ---------------------------------------------------------------------------------------

#: Chains for products: none, the digit-pair products (a simplified version of Malach's
#: chain: no decomposition into powers of ten, and each product written as its bare two
#: digits, not with its place-value zeros), and the products with running sums between them.
MULT_FORMATS = ("none", "products", "sums")


def _digits_of(x: torch.Tensor, width: int) -> torch.Tensor:
    """(B, width) decimal digits of ``x`` (B,), zero-padded, most significant first."""
    return x[:, None] // 10 ** torch.arange(width - 1, -1, -1, device=x.device) % 10


def _sum_widths(digits: int) -> list[int]:
    """Digits of each running sum of the ``"sums"`` chain (enough for its largest value)."""
    pairs = [(i, j) for i in range(digits) for j in range(digits)]
    largest = [sum(81 * 10 ** (i + j) for i, j in pairs[: k + 1]) for k in range(len(pairs))]
    return [len(str(v)) for v in largest[1:-1]]  # after pairs 2 .. D*D - 1


def _check_factors(a, b, digits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` and ``b`` as long tensors, checked: 1-d, same length, in 0..10**digits - 1."""
    if (
        not isinstance(a, torch.Tensor)
        or not isinstance(b, torch.Tensor)
        or a.dim() != 1
        or a.shape != b.shape
    ):
        raise TypeError("a and b must be 1-d integer tensors of the same length")
    a, b = a.long(), b.long()
    if (a < 0).any() or (b < 0).any() or (a >= 10**digits).any() or (b >= 10**digits).any():
        raise ValueError(f"a and b must lie in 0..{10**digits - 1} for digits={digits}")
    return a, b


def multiplication_tokens(
    a: torch.Tensor, b: torch.Tensor, digits: int = 2, fmt: str = "products"
) -> torch.Tensor:
    """Token sequences (B, L) for the products ``a * b`` of ``digits``-digit numbers.

    Tokens are the digits 0-9. A sequence is the prompt -- the digits of ``a`` then of
    ``b``, most significant first -- then the chain, then the answer: the ``2 * digits``
    digits of ``a * b``, zero-padded, most significant first (always the last tokens).
    Chains (``fmt``): ``"none"``; ``"products"``: every digit-pair product ``a_i * b_j``
    as two digits, pairs in the order ``(i, j)`` = (0, 0), (0, 1), .. (digit 0 the least
    significant, the order of Malach's data) -- a simplified version of Malach's chain,
    which also writes each pair with its powers of ten and each product's value with its
    place-value zeros, zero-padded (``7 x 8 x 10`` -> ``5 6 0``); ``"sums"``: the same
    products, each one after the second followed by the running sum
    ``sum a_i b_j 10**(i + j)`` of the pairs so far (the last running sum is the answer
    itself, so it is not repeated).
    """
    digits = check_int("digits", digits, minimum=1)
    check_choice("fmt", fmt, MULT_FORMATS)
    a, b = _check_factors(a, b, digits)
    return _multiplication_tokens(a, b, digits, fmt)


def _multiplication_tokens(a: torch.Tensor, b: torch.Tensor, digits: int, fmt: str) -> torch.Tensor:
    """:func:`multiplication_tokens` of factors already checked (no host synchronisation:
    a training step calls it on every batch)."""
    powers = 10 ** torch.arange(digits, device=a.device)  # (D,) LSB first
    da, db = a[:, None] // powers % 10, b[:, None] // powers % 10  # (B, D) a_0 ..
    parts = [da.flip(1), db.flip(1)]  # prompt, MSB first
    pairs = (da[:, :, None] * db[:, None, :]).flatten(1)  # (B, D*D), (i, j)
    if fmt != "none":
        scale = (powers[:, None] * powers[None, :]).flatten()  # (D*D,) 10**(i+j)
        running = (pairs * scale).cumsum(dim=1)  # (B, D*D)
        widths = _sum_widths(digits)
        for k in range(digits * digits):  # D*D chain items, not a loop over tokens
            parts.append(_digits_of(pairs[:, k], 2))
            if fmt == "sums" and 1 <= k < digits * digits - 1:
                parts.append(_digits_of(running[:, k], widths[k - 1]))
    parts.append(_digits_of(a * b, 2 * digits))  # the answer
    return torch.cat(parts, dim=1)


def multiplication_length(digits: int = 2, fmt: str = "products") -> int:
    """Tokens a model writes after the prompt of two ``digits``-digit numbers."""
    digits = check_int("digits", digits, minimum=1)
    check_choice("fmt", fmt, MULT_FORMATS)
    chain = {
        "none": 0,
        "products": 2 * digits * digits,
        "sums": 2 * digits * digits + sum(_sum_widths(digits)),
    }[fmt]
    return chain + 2 * digits


@dataclass(frozen=True)
class MultSetup:
    """Sizes of the multiplication experiment (see :data:`MULTIPLICATION_SETUP`)."""

    digits: int = 2  # digits per factor; factors run over 10**(d-1)..10**d - 1
    train_frac: float = 0.75  # fraction of all pairs used for training (the paper's 75%)
    seeds: int = 3  # independent models per chain format, trained at once
    hidden: int = 32  # ReLU units per position of the MLP
    batch_size: int = 256  # pairs per step, drawn from the training pairs
    steps: int = 600  # AdamW steps
    lr: float = 1e-2  # AdamW learning rate
    weight_decay: float = 0.0  # AdamW's decoupled weight decay
    schedule: str = "constant"  # learning rate after warm-up: "constant" | "cosine" |
    #                               "linear" decay to 0 (the paper's code: "linear")
    warmup: int = 0  # steps of linear warm-up (the paper's code: 1)
    eval_pairs: int | None = None  # measure on at most this many training and as many
    #                                test pairs (the first of the random split); None: all

    def __post_init__(self) -> None:
        for name in ("digits", "seeds", "hidden", "batch_size", "steps"):
            check_int(name, getattr(self, name), minimum=1)
        if not 0.0 < self.train_frac < 1.0:
            raise ValueError(f"train_frac must be in (0, 1), got {self.train_frac}")
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_float("weight_decay", self.weight_decay, low=0.0)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_int("warmup", self.warmup, minimum=0)
        if self.warmup > self.steps:
            raise ValueError(f"warmup ({self.warmup}) must not exceed steps ({self.steps})")
        if self.eval_pairs is not None:
            check_int("eval_pairs", self.eval_pairs, minimum=1)


#: CPU-sized default and the ``FULL=1`` size of the multiplication experiment. ``full``
#: follows the paper's run (its released code, emalach/LinearLM,
#: configs/config_linear_prod.json): 4-digit factors, 75% of all pairs for training,
#: width 128, batch 2,048, AdamW at lr 1e-3 with weight decay 0.1, linear decay after one
#: warm-up step, one pass over 10**8 sequences = ceil(10**8 / 2048) = 48,829 steps. Not the
#: paper's: our one-hot MLP and simplified chains, 3 models per chain, no gradient
#: clipping (the models train as one batch), factors from 1000 (the paper's from 1111),
#: and accuracies measured on 100,000 training and 100,000 test pairs.
MULTIPLICATION_SETUP = Sizes(
    cpu=MultSetup(),
    full=MultSetup(
        digits=4,
        seeds=3,
        hidden=128,
        batch_size=2048,
        steps=48_829,
        lr=1e-3,
        weight_decay=0.1,
        schedule="linear",
        warmup=1,
        eval_pairs=100_000,
    ),
)


def multiplication_split(
    setup: MultSetup, *, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """All pairs of ``setup.digits``-digit factors, split at random: ``(a_train, b_train,
    a_test, b_test)``, a fraction ``setup.train_frac`` of the pairs for training.

    ``generator`` draws the permutation, on its device (where the pairs are made); with
    ``generator=None`` it comes from torch's global RNG (not reproducible from a seed --
    pass a generator).
    """
    if not isinstance(setup, MultSetup):
        raise TypeError(f"setup must be a MultSetup, got {type(setup).__name__}")
    dev = generator.device if generator is not None else torch.device("cpu")
    lo, hi = 10 ** (setup.digits - 1), 10**setup.digits
    nums = torch.arange(lo, hi, device=dev)
    a, b = nums.repeat_interleave(len(nums)), nums.repeat(len(nums))  # every (a, b) pair
    order = torch.randperm(len(a), generator=generator, device=dev)
    cut = int(round(setup.train_frac * len(a)))
    tr, te = order[:cut], order[cut:]
    return a[tr], b[tr], a[te], b[te]


def train_multiplication_models(
    a: torch.Tensor,
    b: torch.Tensor,
    setup: MultSetup,
    fmt: str,
    *,
    generator: torch.Generator | None = None,
    progress: bool = True,
) -> tuple[NextTokenNet, History]:
    """Train ``setup.seeds`` time-inhomogeneous MLPs (:class:`NextTokenNet`, vocabulary
    0-9, ``setup.hidden`` units per position) on the products of the training pairs
    ``(a, b)`` written in the chain format ``fmt``; return the models and the
    :class:`History`.

    The loss is the cross-entropy of every token after the prompt (the chain and the
    answer); batches are drawn with replacement from the training pairs. ``generator``
    draws the initial weights and then every batch, in that order (so one generator can be
    shared in sequence across several calls); the models train where ``a`` and ``b`` are
    (the generator's device). With ``generator=None`` both come from torch's global RNG
    (not reproducible from a seed -- pass a generator).
    """
    if not isinstance(setup, MultSetup):
        raise TypeError(f"setup must be a MultSetup, got {type(setup).__name__}")
    D = setup.digits
    a, b = _check_factors(a, b, D)
    prompt, M = 2 * D, setup.seeds
    length = prompt + multiplication_length(D, fmt)  # tokens per sequence
    g = generator
    model = NextTokenNet(
        length - 1, vocab=10, hidden=setup.hidden, models=M, generator=g, device=a.device
    )

    def batch(step):
        # each batch's sequences are written on the fly (the same tokens as indexing the
        # sequences of all pairs, without holding them: 4-digit factors have ~10**8 pairs)
        rows = torch.randint(len(a), (setup.batch_size,), generator=g, device=a.device)
        return chain_targets(_multiplication_tokens(a[rows], b[rows], D, fmt), prompt)

    hist = train(
        model,
        batch,
        steps=setup.steps,
        lr=setup.lr,
        weight_decay=setup.weight_decay,
        schedule=setup.schedule,
        warmup=setup.warmup,
        grad_clip=None,
        loss_fn=_summed_loss(M),
        eval_every=setup.steps,
        progress=progress,
        desc=f"{D}-digit products, chain: {fmt}",
    )
    return model, hist


_EVAL_CHUNK = 4096  # pairs per forward pass when evaluating


def _check_mult_model(model: NextTokenNet, length: int, digits: int, fmt: str) -> None:
    if not isinstance(model, NextTokenNet):
        raise TypeError(f"model must be a NextTokenNet, got {type(model).__name__}")
    if model.vocab != 10 or model.seq_len != length - 1:
        raise ValueError(
            f"model must be a 10-token NextTokenNet over {length - 1} positions "
            f"(digits={digits}, fmt={fmt!r}), got vocab={model.vocab}, "
            f"seq_len={model.seq_len}"
        )


def multiplication_accuracy(
    model: NextTokenNet, a: torch.Tensor, b: torch.Tensor, digits: int = 2, fmt: str = "products"
) -> torch.Tensor:
    """Fraction of the pairs ``(a, b)`` whose answer, generated greedily after the prompt
    (chain included), is exactly ``a * b``, per model: (M,)."""
    seqs = multiplication_tokens(a, b, digits, fmt)
    _check_mult_model(model, seqs.shape[1], digits, fmt)
    prompt, width = 2 * digits, 2 * digits
    right = torch.zeros(model.models, device=seqs.device)
    for chunk in seqs.split(_EVAL_CHUNK):  # bounded memory for large test sets
        got = generate(model, chunk[:, :prompt], chunk.shape[1] - prompt)[:, :, -width:]
        right += (got == chunk[None, :, -width:]).all(dim=2).float().sum(dim=1)
    return right / len(seqs)


def multiplication_step_accuracy(
    model: NextTokenNet, a: torch.Tensor, b: torch.Tensor, digits: int = 2, fmt: str = "products"
) -> torch.Tensor:
    """Accuracy of every written token given the correct tokens before it (teacher
    forcing), per model and position after the prompt: (M, chain + answer length);
    column 0 is the first token after the prompt, the last ``2 * digits`` columns are the
    answer's digits."""
    seqs = multiplication_tokens(a, b, digits, fmt)
    _check_mult_model(model, seqs.shape[1], digits, fmt)
    right = torch.zeros(model.models, seqs.shape[1] - 1, device=seqs.device)
    with evaluating(model):
        for chunk in seqs.split(_EVAL_CHUNK):  # bounded memory for large test sets
            pred = model(chunk[:, :-1]).argmax(dim=-1)  # (M, B, L-1)
            right += (pred == chunk[None, :, 1:]).float().sum(dim=1)  # (M, L-1)
    return right[:, 2 * digits - 1 :] / len(seqs)


@dataclass
class MultResult(RunInfo):
    """The multiplication experiment of :func:`run_multiplication`, one row per chain
    (``seconds``: the whole run)."""

    a_train: torch.Tensor  # (pairs,) training factors a (CPU); b_train the other factor
    b_train: torch.Tensor
    a_test: torch.Tensor  # (pairs,) test factors
    b_test: torch.Tensor
    models: dict  # chain format -> NextTokenNet of setup.seeds MLPs (CPU)
    histories: dict  # chain format -> training History
    train_acc: dict  # chain format -> (seeds,) exact answers on the training pairs
    test_acc: dict  # chain format -> (seeds,) exact answers on the test pairs
    step_acc: dict  # chain format -> (seeds, tokens written) teacher-forced
    #                           accuracy of every written token on the test pairs
    #                           (all three on the first setup.eval_pairs pairs of each set)


@experiment(MultSetup, STREAMS)
def run_multiplication(setup: MultSetup, ctx: Experiment) -> MultResult:
    """Train ``setup.seeds`` MLPs on ``setup.digits``-digit products for every chain format
    of :data:`MULT_FORMATS` and measure them on the held-out pairs.

    One generator, ``ctx.generator("products")`` (:data:`STREAMS` under the base seed
    ``ctx.seed``), draws the split of all pairs, then the initial weights and the batches
    of each chain's models in turn (so each chain's run depends on the ones before).
    Models train on ``ctx.device`` (default: the CPU) and come back on the CPU with the
    accuracies as NumPy arrays, measured on every pair or, with ``setup.eval_pairs``, on
    the first that many of each set (a uniform sample: the split is a random permutation).
    """
    with ctx.timer() as t:
        g = ctx.generator("products")
        a_tr, b_tr, a_te, b_te = multiplication_split(setup, generator=g)
        rows = _multiplication_rows(setup, (a_tr, b_tr, a_te, b_te), g, ctx.progress)
    return MultResult(
        **ctx.header(setup, t.seconds),
        a_train=a_tr.cpu(),
        b_train=b_tr.cpu(),
        a_test=a_te.cpu(),
        b_test=b_te.cpu(),
        **rows,
    )


def _multiplication_rows(
    setup: MultSetup, split: tuple, g: torch.Generator, progress: bool
) -> dict:
    """Every chain of :func:`run_multiplication`, trained in turn from ``g`` on the training
    pairs of ``split`` ``(a_train, b_train, a_test, b_test)``: its models (CPU), histories
    and accuracies."""
    a_tr, b_tr, a_te, b_te = split
    k = setup.eval_pairs  # the split is a random permutation: its first k pairs
    #                                 are a uniform sample (None: every pair)
    models, histories, train_acc, test_acc, step_acc = {}, {}, {}, {}, {}
    for fmt in MULT_FORMATS:
        model, histories[fmt] = train_multiplication_models(
            a_tr, b_tr, setup, fmt, generator=g, progress=progress
        )
        d = setup.digits
        train_acc[fmt] = to_numpy(multiplication_accuracy(model, a_tr[:k], b_tr[:k], d, fmt))
        test_acc[fmt] = to_numpy(multiplication_accuracy(model, a_te[:k], b_te[:k], d, fmt))
        step_acc[fmt] = to_numpy(multiplication_step_accuracy(model, a_te[:k], b_te[:k], d, fmt))
        models[fmt] = model.cpu()
    return {
        "models": models,
        "histories": histories,
        "train_acc": train_acc,
        "test_acc": test_acc,
        "step_acc": step_acc,
    }

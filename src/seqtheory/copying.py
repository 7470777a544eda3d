"""Copying a string: transformers against models with a fixed-size state.

The task: ``<BOS> s <SEP> s <EOS>`` with ``s`` a random string of letters; the loss and
the accuracy count only the second copy (and ``<EOS>``). A model with a state of ``b`` bits
cannot copy strings that carry more than ``b`` bits, whatever it learns; a transformer
keeps the whole context and can look back (Jelassi et al., 2024).

Two fixed-state models sit next to the book's :class:`~seqtheory.models.Transformer`:
:class:`CopyLSTM` and :class:`DiagonalRecurrence`, a minimal state-space model (a diagonal
linear recurrence per layer, computed in parallel over time in pure torch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .models import Transformer, TransformerConfig
from .training import IGNORE_INDEX, History, train
from .utils import Sizes, check_int, make_generator

__all__ = [
    "NUM_LETTERS", "BOS", "SEP", "EOS", "PAD", "VOCAB_SIZE", "copy_batch", "decode",
    "string_accuracy", "CopyLSTM", "DiagonalRecurrence", "CopySetup", "COPYING",
    "state_bits", "max_copy_length", "copy_models", "train_copier", "encode", "greedy_copy",
    "accuracy_by_length",
]

NUM_LETTERS = 26
BOS, SEP, EOS, PAD = 26, 27, 28, 29
VOCAB_SIZE = 30
_SYMBOLS = "abcdefghijklmnopqrstuvwxyz^|$."


def copy_batch(
    batch_size: int,
    min_len: int,
    max_len: int | None = None,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets for copying strings of length ``min_len..max_len`` (uniform).

    Each row is ``<BOS> s <SEP> s <EOS>`` padded with ``<PAD>`` to ``2*max_len + 3``
    tokens; inputs are all but the last token, targets all but the first, and only the
    targets of the second copy and ``<EOS>`` count (the others are ``-100``).
    Returns ``(x, y)``, both (batch_size, 2*max_len + 2).
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    min_len = check_int("min_len", min_len, minimum=1)
    max_len = min_len if max_len is None else check_int("max_len", max_len, minimum=1)
    if max_len < min_len:
        raise ValueError(f"max_len must be >= min_len={min_len}, got {max_len}")
    g = generator
    L = torch.randint(min_len, max_len + 1, (batch_size, 1), generator=g)   # (B, 1)
    s = torch.randint(NUM_LETTERS, (batch_size, max_len), generator=g)      # (B, Lmax)
    T = 2 * max_len + 3
    t = torch.arange(T)[None, :]                                            # (1, T)
    first = (t >= 1) & (t <= L)
    second = (t >= L + 2) & (t <= 2 * L + 1)
    seq = torch.full((batch_size, T), PAD)
    seq[:, :1] = BOS
    seq = torch.where(first, s.gather(1, (t - 1).clamp(0, max_len - 1).expand_as(seq)), seq)
    seq = torch.where(t == L + 1, SEP, seq)
    seq = torch.where(second, s.gather(1, (t - L - 2).clamp(0, max_len - 1)), seq)
    seq = torch.where(t == 2 * L + 2, EOS, seq)
    x, y = seq[:, :-1], seq[:, 1:].clone()                                  # (B, T-1)
    counted = (t[:, 1:] >= L + 2) & (t[:, 1:] <= 2 * L + 2)
    y[~counted] = IGNORE_INDEX
    return x, y


def encode(text: str) -> torch.Tensor:
    """The prompt ``<BOS> text <SEP>`` as token ids (1, len + 2); lower-case letters only."""
    if not isinstance(text, str) or not text or not all("a" <= c <= "z" for c in text):
        raise ValueError(f"text must be a non-empty string of letters a-z, got {text!r}")
    return torch.tensor([[BOS] + [ord(c) - ord("a") for c in text] + [SEP]])


@torch.no_grad()
def greedy_copy(model: nn.Module, text: str) -> str:
    """What ``model`` writes after ``<BOS> text <SEP>`` (greedy, up to ``<EOS>``)."""
    idx = encode(text)
    was_training = model.training
    model.eval()
    try:
        for _ in range(len(text) + 1):             # generation is sequential by nature
            nxt = model(idx)[:, -1].argmax(dim=-1, keepdim=True)          # (1, 1)
            idx = torch.cat([idx, nxt], dim=1)
            if int(nxt) == EOS:
                break
    finally:
        model.train(was_training)
    return decode(idx[0, len(text) + 2:])


def accuracy_by_length(model: nn.Module, lengths, size: int = 300, seed: int = 0) -> list:
    """String accuracy on ``size`` random strings of each length (fixed test sets)."""
    return [string_accuracy(model, *copy_batch(
        size, check_int("length", L, minimum=1),
        generator=make_generator(seed + L))) for L in lengths]


def decode(tokens) -> str:
    """Readable form of a row of tokens: letters, ``^`` BOS, ``|`` SEP, ``$`` EOS, ``.`` PAD."""
    return "".join(_SYMBOLS[int(t)] for t in tokens)


@torch.no_grad()
def string_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose whole copy (and ``<EOS>``) is predicted right.

    With teacher forcing every counted position must be the argmax; when all of them are,
    greedy decoding writes exactly the same string, so this is the exact-match accuracy
    of greedy generation.
    """
    was_training = model.training
    model.eval()
    try:
        pred = model(x).argmax(dim=-1)                                      # (B, T)
    finally:
        model.train(was_training)
    counted = y != IGNORE_INDEX
    return float(((pred == y) | ~counted).all(dim=1).float().mean())


class CopyLSTM(nn.Module):
    """Embedding -> LSTM -> linear read-out; ``logits = model(idx)`` for ``idx`` (B, T)."""

    def __init__(self, vocab_size: int = VOCAB_SIZE, d_embed: int = 64, hidden: int = 128,
                 layers: int = 1):
        super().__init__()
        for name, v in [("vocab_size", vocab_size), ("d_embed", d_embed), ("hidden", hidden),
                        ("layers", layers)]:
            check_int(name, v, minimum=1)
        self.emb = nn.Embedding(vocab_size, d_embed)
        self.lstm = nn.LSTM(d_embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)
        self.state_floats = 2 * hidden * layers           # cell and hidden state per layer

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(idx))                                     # (B, T, hidden)
        return self.head(h)                                                 # (B, T, V)


class _RecurrentBlock(nn.Module):
    """x + out(h), h_t = a * h_{t-1} + in(x_t) (diagonal, per channel), then x + MLP(x)."""

    def __init__(self, d_model: int, d_state: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.inp = nn.Linear(d_model, d_state)
        self.out = nn.Linear(d_state, d_model)
        # decay rates a = exp(-exp(log_rate)) spread over time scales of 1..100 steps
        self.log_rate = nn.Parameter(torch.linspace(0.0, -4.6, d_state))
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        u = self.inp(self.ln1(x)).permute(2, 0, 1)                          # (N, B, T)
        log_a = -self.log_rate.exp()                                        # (N,) log decay
        lag = torch.arange(T)[:, None] - torch.arange(T)[None, :]           # (T, T): t - s
        # h_t = sum_{s<=t} a^(t-s) u_s: one lower-triangular (T, T) matrix per channel,
        # applied as a batched matmul over channels (faster than einsum's layout on CPU)
        kernel = (lag.clamp(min=0)[None] * log_a[:, None, None]).exp() * (lag >= 0)  # (N,T,T)
        h = (u @ kernel.transpose(1, 2)).permute(1, 2, 0)                   # (B, T, N)
        x = x + self.out(F.gelu(h))
        return x + self.mlp(self.ln2(x))


class DiagonalRecurrence(nn.Module):
    """A minimal state-space model: blocks of a diagonal linear recurrence and an MLP.

    Each layer keeps ``d_state`` numbers ``h_t = a * h_{t-1} + W x_t`` (``0 < a < 1``
    learned per channel); the sum over the past is computed in parallel over time as a
    causal convolution with kernel ``a^(t-s)``, the way S4-style models train.
    """

    def __init__(self, vocab_size: int = VOCAB_SIZE, d_model: int = 64, d_state: int = 128,
                 layers: int = 2):
        super().__init__()
        for name, v in [("vocab_size", vocab_size), ("d_model", d_model),
                        ("d_state", d_state), ("layers", layers)]:
            check_int(name, v, minimum=1)
        self.emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(_RecurrentBlock(d_model, d_state) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.state_floats = d_state * layers

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)                                                   # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))                                      # (B, T, V)


def state_bits(state_floats: int, bits_per_float: int = 32) -> int:
    """Bits in a fixed-size state of ``state_floats`` numbers."""
    return check_int("state_floats", state_floats, minimum=1) * \
        check_int("bits_per_float", bits_per_float, minimum=1)


def max_copy_length(bits: int, alphabet: int = NUM_LETTERS) -> float:
    """Longest string a ``bits``-bit state can copy: ``L log2(alphabet) <= bits``."""
    bits = check_int("bits", bits, minimum=1)
    alphabet = check_int("alphabet", alphabet, minimum=2)
    return bits / math.log2(alphabet)


@dataclass(frozen=True)
class CopySetup:
    """Sizes of the copying chapter (see :data:`COPYING`)."""

    min_len: int = 5              # shortest training string
    max_len: int = 16             # longest training string
    test_len: int = 32            # length-generalisation test (twice the training length)
    d_model: int = 64             # width of every model
    batch_size: int = 32          # strings per step
    steps: int = 1500             # optimisation steps for each model
    lstm_factor: int = 3          # the LSTM also gets this many times the steps
    lr: float = 3e-3              # peak AdamW learning rate (warm-up, then cosine decay)
    warmup: int = 100             # warm-up steps
    eval_every: int = 250         # evaluate every this many steps
    eval_size: int = 300          # strings per evaluation and length


#: CPU-sized default and the ``FULL=1`` size of the copying chapter.
COPYING = Sizes(cpu=CopySetup(), full=CopySetup(steps=5000, eval_size=2000))


def copy_models(setup: CopySetup) -> dict[str, nn.Module]:
    """The four models of the chapter, each of about 100k parameters.

    ``transformer``: two layers, four heads, learned absolute positions. ``hard-ALiBi``:
    the same, but the first layer's heads see only the last 1, 2, 3 and 4 tokens and the
    second layer's heads see everything with no position information. ``LSTM`` and
    ``linear recurrence`` (:class:`DiagonalRecurrence`) keep a fixed-size state.
    """
    if not isinstance(setup, CopySetup):
        raise TypeError(f"setup must be a CopySetup, got {type(setup).__name__}")
    d, T = setup.d_model, 2 * max(setup.max_len, setup.test_len) + 2
    base = dict(vocab_size=VOCAB_SIZE, max_len=T, n_layers=2, n_heads=4, d_model=d)
    return {
        "transformer": Transformer(TransformerConfig(**base)),
        "hard-ALiBi": Transformer(TransformerConfig(
            **base, pos_encoding="hard_alibi", windows=((1, 2, 3, 4), (0, 0, 0, 0)))),
        "LSTM": CopyLSTM(VOCAB_SIZE, d_embed=d, hidden=2 * d),
        "linear recurrence": DiagonalRecurrence(VOCAB_SIZE, d_model=d, d_state=2 * d),
    }


def train_copier(
    model: nn.Module,
    setup: CopySetup,
    *,
    steps: int | None = None,
    generator: torch.Generator | None = None,
    progress: bool = True,
    desc: str = "copying",
) -> History:
    """Train ``model`` to copy strings of ``min_len..max_len`` letters with the book's loop.

    Every ``eval_every`` steps it records the string accuracy at the longest training
    length (``acc_train_len``); at the end also at ``test_len`` (``acc_test_len``). Both
    use fixed test sets.
    """
    if not isinstance(setup, CopySetup):
        raise TypeError(f"setup must be a CopySetup, got {type(setup).__name__}")
    steps = setup.steps if steps is None else check_int("steps", steps, minimum=1)
    g = generator if generator is not None else make_generator(0)
    tests = {name: copy_batch(setup.eval_size, length, generator=make_generator(1000 + length))
             for name, length in [("acc_train_len", setup.max_len),
                                  ("acc_test_len", setup.test_len)]}

    def evaluate(m, step):
        names = list(tests) if step == steps else ["acc_train_len"]
        return {name: string_accuracy(m, *tests[name]) for name in names}

    return train(model, lambda step: copy_batch(setup.batch_size, setup.min_len,
                                                setup.max_len, generator=g),
                 steps=steps, lr=setup.lr, warmup=min(setup.warmup, steps),
                 schedule="cosine", eval_every=setup.eval_every, eval_fn=evaluate,
                 progress=progress, desc=desc)

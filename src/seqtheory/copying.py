"""Copying a string: transformers against models with a fixed-size state.

The task: ``<BOS> s <SEP> s <EOS>`` with ``s`` a random string of letters; the loss and
the accuracy count only the second copy (and ``<EOS>``). A model with a state of ``b`` bits
cannot copy strings that carry more than ``b`` bits, whatever it learns; a transformer
keeps the whole context and can look back (Jelassi et al., 2024).

Three fixed-state models sit next to the book's :class:`~seqtheory.core.models.Transformer`:
:class:`CopyLSTM`; :class:`DiagonalRecurrence`, a minimal S4D-like state-space model (a
diagonal linear recurrence whose decay does not depend on the input); and
:class:`GatedRecurrence`, a minimal *selective* recurrence in the spirit of Mamba (decay
and write gate computed from the current token; without Mamba's input-dependent B and C,
state expansion, convolution and output gate, so closer to a minimal GRU). Both
recurrences are computed in parallel over time in pure torch.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .book.plotting import palette
from .core.decode import greedy_decode
from .core.ensemble import Ensemble, member_eval
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import Transformer, TransformerConfig, checking_inputs
from .core.runtime import Sizes, evaluating
from .core.seeds import experiment_seed, make_generator, seeded
from .core.settings import settings
from .core.training import IGNORE_INDEX, History, train
from .core.validate import check_int

__all__ = [
    "NUM_LETTERS",
    "BOS",
    "SEP",
    "EOS",
    "PAD",
    "VOCAB_SIZE",
    "copy_batch",
    "decode",
    "string_accuracy",
    "CopyLSTM",
    "StackedLSTM",
    "DiagonalRecurrence",
    "GatedRecurrence",
    "linear_scan",
    "CopySetup",
    "SETUP",
    "LIVE_MODELS",
    "state_bits",
    "max_copy_length",
    "copy_models",
    "train_copier",
    "encode",
    "greedy_copy",
    "accuracy_by_length",
    "MODEL_NAMES",
    "copy_model",
    "CopyRun",
    "CopyResult",
    "run",
    "plot_learning_curves",
    "copied",
    "copy_rows",
    "has_repeated_ngram",
    "planted_repeat_batch",
    "repeat_accuracy",
    "accuracy_by_repeats",
    "repeat_probability",
    "lookup_batch",
    "LOOKUP_KEYS",
    "STREAMS",
]

NUM_LETTERS = 26
BOS, SEP, EOS, PAD = 26, 27, 28, 29
VOCAB_SIZE = 30
_SYMBOLS = "abcdefghijklmnopqrstuvwxyz^|$."

#: The random streams of this module (logical seeds under the base seed): ``weights`` s
#: the initialisation of seed s's model, ``data`` s its training strings (the same for
#: every architecture), ``tests`` L the fixed test strings of length L of :func:`run` and
#: :func:`train_copier`, ``by_length`` L those of :func:`accuracy_by_length`, ``planted``
#: 10 L + n the planted-repeat test sets of :func:`repeat_accuracy`, ``strings`` L the
#: random strings of :func:`accuracy_by_repeats`.
STREAMS = Streams(weights=0, by_length=0, tests=1000, planted=2000, strings=3000, data=10_000)


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
    Returns ``(x, y)``, both (batch_size, 2*max_len + 2), on the generator's device (the
    CPU without one).
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    min_len = check_int("min_len", min_len, minimum=1)
    max_len = min_len if max_len is None else check_int("max_len", max_len, minimum=1)
    if max_len < min_len:
        raise ValueError(f"max_len must be >= min_len={min_len}, got {max_len}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    g = generator
    dev = g.device if g is not None else torch.device("cpu")
    L = torch.randint(min_len, max_len + 1, (batch_size, 1), generator=g, device=dev)  # (B,1)
    s = torch.randint(NUM_LETTERS, (batch_size, max_len), generator=g, device=dev)  # (B,Lmax)
    T = 2 * max_len + 3
    t = torch.arange(T, device=dev)[None, :]  # (1, T)
    first = (t >= 1) & (t <= L)
    second = (t >= L + 2) & (t <= 2 * L + 1)
    seq = torch.full((batch_size, T), PAD, device=dev)
    seq[:, :1] = BOS
    seq = torch.where(first, s.gather(1, (t - 1).clamp(0, max_len - 1).expand_as(seq)), seq)
    seq = torch.where(t == L + 1, SEP, seq)
    seq = torch.where(second, s.gather(1, (t - L - 2).clamp(0, max_len - 1)), seq)
    seq = torch.where(t == 2 * L + 2, EOS, seq)
    counted = (t[:, 1:] >= L + 2) & (t[:, 1:] <= 2 * L + 2)
    x, y = seq[:, :-1], seq[:, 1:].masked_fill(~counted, IGNORE_INDEX)  # (B, T-1)
    return x, y


#: Where the n-gram to look up stands: after the string (``suffix``: ``^ s | q | a``) or
#: before it (``prefix``: ``^ q | s | a``).
LOOKUP_KEYS = ("suffix", "prefix")


def lookup_batch(
    batch_size: int,
    min_len: int,
    max_len: int | None = None,
    *,
    n: int = 2,
    key: str = "suffix",
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of the n-gram lookup task on strings of ``min_len..max_len``
    random letters (uniform length).

    Each row holds a string ``s``, a query ``q`` (the n-gram of ``s`` at a uniformly drawn
    position that has a letter after it) and the answer ``a``, the letter that follows the
    first occurrence of ``q`` in ``s``: ``<BOS> s <SEP> q <SEP> a`` for ``key="suffix"``
    (the query comes after the string, so a model must keep all of ``s``), ``<BOS> q <SEP>
    s <SEP> a`` for ``key="prefix"`` (the query comes first, so a model can watch for
    it). Rows are padded with ``<PAD>`` to ``max_len + n + 4`` tokens; inputs are all but
    the last token, targets all but the first, and only the answer counts (the others are
    ``-100``), so :func:`string_accuracy` is the fraction of queries answered right.
    Returns ``(x, y)``, both (batch_size, max_len + n + 3), on the generator's device.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n = check_int("n", n, minimum=1)
    min_len = check_int("min_len", min_len, minimum=n + 1)
    max_len = min_len if max_len is None else check_int("max_len", max_len, minimum=n + 1)
    if max_len < min_len:
        raise ValueError(f"max_len must be >= min_len={min_len}, got {max_len}")
    if key not in LOOKUP_KEYS:
        raise ValueError(f"key must be one of {LOOKUP_KEYS}, got {key!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    g = generator
    dev = g.device if g is not None else torch.device("cpu")
    B = batch_size
    L = torch.randint(min_len, max_len + 1, (B, 1), generator=g, device=dev)  # (B, 1)
    s = torch.randint(NUM_LETTERS, (B, max_len), generator=g, device=dev)  # (B, Lmax)
    at = (torch.rand(B, 1, generator=g, device=dev) * (L - n)).long()  # < L - n
    q = s.gather(1, at + torch.arange(n, device=dev))  # (B, n)
    windows = s.unfold(1, n, 1)  # (B, K, n)
    pos = torch.arange(windows.shape[1], device=dev)[None]  # (1, K)
    match = (windows == q[:, None]).all(-1) & (pos + n < L)
    first = torch.where(match, pos, max_len).min(1, keepdim=True).values  # (B, 1)
    answer = s.gather(1, first + n)  # (B, 1)
    T = max_len + n + 4
    t = torch.arange(T, device=dev)[None]  # (1, T)
    s_start, q_start = (1, L + 2) if key == "suffix" else (n + 2, 1)
    in_s = (t >= s_start) & (t < s_start + L)
    in_q = (t >= q_start) & (t < q_start + n)
    end = L + n + 2  # last SEP
    seq = torch.full((B, T), PAD, device=dev)
    seq = torch.where(in_s, s.gather(1, (t - s_start).clamp(0, max_len - 1).expand(B, T)), seq)
    seq = torch.where(in_q, q.gather(1, (t - q_start).clamp(0, n - 1).expand(B, T)), seq)
    seq = torch.where(t == 0, BOS, seq)
    seq = torch.where((t == s_start + L) if key == "suffix" else (t == n + 1), SEP, seq)
    seq = torch.where(t == end, SEP, seq)
    seq = torch.where(t == end + 1, answer, seq)
    x, y = seq[:, :-1], seq[:, 1:].masked_fill(t[:, 1:] != end + 1, IGNORE_INDEX)  # (B, T-1)
    return x, y


def encode(text: str) -> torch.Tensor:
    """The prompt ``<BOS> text <SEP>`` as token ids (1, len + 2); lower-case letters only."""
    if not isinstance(text, str) or not text or not all("a" <= c <= "z" for c in text):
        raise ValueError(f"text must be a non-empty string of letters a-z, got {text!r}")
    return torch.tensor([[BOS] + [ord(c) - ord("a") for c in text] + [SEP]])


def _device_of(model: nn.Module) -> torch.device:
    """Where ``model``'s parameters live (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def greedy_copy(model: nn.Module, text: str) -> str:
    """What ``model`` writes after ``<BOS> text <SEP>`` (greedy, up to ``<EOS>``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    prompt = encode(text).to(_device_of(model))  # (1, len + 2)
    return decode(greedy_decode(model, prompt, len(text) + 1, stop=EOS)[0])


def accuracy_by_length(model: nn.Module, lengths, size: int = 300, seed: int | None = None) -> list:
    """String accuracy on ``size`` random strings of each length ``L`` (fixed test sets,
    drawn from stream ``by_length`` L of :data:`STREAMS` under the base ``seed`` on the
    model's device; ``seed`` None: the book's base seed).
    """
    dev, seed = _device_of(model), experiment_seed(seed)
    return [
        string_accuracy(
            model,
            *copy_batch(
                size,
                check_int("length", L, minimum=1),
                generator=make_generator(STREAMS.seed("by_length", L), dev, base=seed),
            ),
        )
        for L in lengths
    ]


def decode(tokens) -> str:
    """Readable form of a row of tokens: letters, ``^`` BOS, ``|`` SEP, ``$`` EOS, ``.`` PAD."""
    return "".join(_SYMBOLS[int(t)] for t in tokens)


def copied(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(B,) bool: whether each row's whole copy (and ``<EOS>``) is predicted right.

    With teacher forcing every counted position must be the argmax; when all of them are,
    greedy decoding writes exactly the same string, so this is exact-match greedy copying.
    """
    with evaluating(model):
        pred = model(x).argmax(dim=-1)  # (B, T)
    return ((pred == y) | (y == IGNORE_INDEX)).all(dim=1)


def string_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose whole copy (and ``<EOS>``) is predicted right (:func:`copied`):
    the exact-match accuracy of greedy decoding."""
    return float(copied(model, x, y).float().mean())


def _check_strings(strings) -> torch.Tensor:
    if not isinstance(strings, torch.Tensor) or strings.dim() != 2 or strings.shape[1] < 1:
        raise ValueError("strings must be a (B, L) tensor of letter ids, L >= 1")
    if (
        strings.dtype not in (torch.int32, torch.int64)
        or strings.numel()
        and (int(strings.min()) < 0 or int(strings.max()) >= NUM_LETTERS)
    ):
        raise ValueError(f"strings must hold integer letter ids 0..{NUM_LETTERS - 1}")
    return strings


def copy_rows(strings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of :func:`copy_batch` for given strings (B, L) of letter ids:
    ``<BOS> s <SEP> s <EOS>``, only the second copy and ``<EOS>`` counted."""
    s = _check_strings(strings)
    B, L = s.shape
    col = torch.full((B, 1), 0, dtype=s.dtype, device=s.device)
    seq = torch.cat([col + BOS, s, col + SEP, s, col + EOS], dim=1)  # (B, 2L + 3)
    x, y = seq[:, :-1], seq[:, 1:].clone()  # (B, 2L + 2)
    y[:, : L + 1] = IGNORE_INDEX
    return x, y


def has_repeated_ngram(strings: torch.Tensor, n: int) -> torch.Tensor:
    """(B,) bool: whether some n-gram occurs twice in each string (B, L) of letter ids."""
    s = _check_strings(strings)
    n = check_int("n", n, minimum=1)
    if n > s.shape[1]:
        return torch.zeros(s.shape[0], dtype=torch.bool, device=s.device)
    powers = NUM_LETTERS ** torch.arange(n, device=s.device)  # (n,)
    code = s.unfold(1, n, 1).long() @ powers  # (B, L - n + 1)
    same = code[:, :, None] == code[:, None, :]  # (B, K, K)
    return torch.triu(same, diagonal=1).any(dim=(1, 2))


def repeat_probability(length: int, n: int, size: int = 100_000, seed: int = 0) -> float:
    """Monte-Carlo chance that a uniform string of ``length`` letters repeats some n-gram
    (``size`` strings from :func:`~seqtheory.core.seeds.make_generator` ``(seed)``)."""
    length, size = check_int("length", length, minimum=1), check_int("size", size, minimum=1)
    g = make_generator(check_int("seed", seed, minimum=0))
    s = torch.randint(NUM_LETTERS, (size, length), generator=g)
    return float(has_repeated_ngram(s, n).float().mean())


def planted_repeat_batch(
    size: int, length: int, n: int, *, generator: torch.Generator | None = None
):
    """:func:`copy_batch` rows of ``length`` random letters with one planted repeat: the
    n-gram at letters ``1..n`` (0-based) occurs again at ``length // 2``, and the letters
    right after the two occurrences differ, so an n-gram lookup cannot tell which to copy.
    ``n = 0``: plain random strings. Needs ``n <= length // 2 - 1`` and ``length >= 4``."""
    size, length = check_int("size", size, minimum=1), check_int("length", length, minimum=4)
    n = check_int("n", n, minimum=0)
    p = length // 2
    if n > p - 1:
        raise ValueError(f"n must be <= length // 2 - 1 = {p - 1}, got {n}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    dev = generator.device if generator is not None else torch.device("cpu")
    s = torch.randint(NUM_LETTERS, (size, length), generator=generator, device=dev)
    shift = torch.randint(1, NUM_LETTERS, (size,), generator=generator, device=dev)
    if n:
        s[:, p : p + n] = s[:, 1 : 1 + n]
        s[:, p + n] = (s[:, 1 + n] + shift) % NUM_LETTERS  # the next letters differ
    return copy_rows(s)


def repeat_accuracy(
    model: nn.Module, length: int, ns, size: int = 600, seed: int | None = None
) -> list:
    """String accuracy on ``size`` strings of ``length`` letters with a planted repeated
    n-gram (:func:`planted_repeat_batch`), for each ``n`` of ``ns`` (0: random strings);
    test sets from stream ``planted`` ``10 * length + n`` of :data:`STREAMS` under the base
    ``seed``."""
    dev, seed = _device_of(model), experiment_seed(seed)
    return [
        string_accuracy(
            model,
            *planted_repeat_batch(
                size,
                length,
                n,
                generator=make_generator(STREAMS.seed("planted", 10 * length + n), dev, base=seed),
            ),
        )
        for n in ns
    ]


def accuracy_by_repeats(
    model: nn.Module, lengths, n: int = 2, size: int = 1000, seed: int | None = None
) -> dict:
    """On ``size`` random strings of each length ``L`` (stream ``strings`` L of
    :data:`STREAMS` under the base ``seed``):
    ``{"without", "with"}``, the string accuracy on the strings with no repeated n-gram and
    on those with one (nan where there are none), and ``"frac_with"``, their share."""
    dev, seed = _device_of(model), experiment_seed(seed)
    n = check_int("n", n, minimum=1)
    out = {"without": [], "with": [], "frac_with": []}
    for L in lengths:
        g = make_generator(
            STREAMS.seed("strings", check_int("length", L, minimum=1)), dev, base=seed
        )
        s = torch.randint(
            NUM_LETTERS, (check_int("size", size, minimum=1), L), generator=g, device=dev
        )
        ok, rep = copied(model, *copy_rows(s)), has_repeated_ngram(s, n)
        for key, rows in (("without", ~rep), ("with", rep)):
            out[key].append(float(ok[rows].float().mean()) if rows.any() else math.nan)
        out["frac_with"].append(float(rep.float().mean()))
    return {k: np.array(v) for k, v in out.items()}


class CopyLSTM(nn.Module):
    """Embedding -> LSTM -> linear read-out; ``logits = model(idx)`` for ``idx`` (B, T)."""

    def __init__(
        self, vocab_size: int = VOCAB_SIZE, d_embed: int = 64, hidden: int = 128, layers: int = 1
    ):
        super().__init__()
        for name, v in [
            ("vocab_size", vocab_size),
            ("d_embed", d_embed),
            ("hidden", hidden),
            ("layers", layers),
        ]:
            check_int(name, v, minimum=1)
        self.emb = nn.Embedding(vocab_size, d_embed)
        self.lstm = nn.LSTM(d_embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)
        self.state_floats = 2 * hidden * layers  # cell and hidden state per layer

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(idx))  # (B, T, hidden)
        return self.head(h)  # (B, T, V)


class StackedLSTM(Ensemble):
    """An :class:`~seqtheory.core.ensemble.Ensemble` of :class:`CopyLSTM` members (one layer)
    whose forward pass runs every member in one call of torch's fused LSTM kernel.

    The members' LSTMs stand side by side as one LSTM ``M`` times as wide with
    block-diagonal weights: member ``m``'s units read only member ``m``'s embeddings and
    units, so each member computes what it computes alone (up to floating-point rounding:
    the wide products add the zero blocks in). Weights, gradients, per-member clipping,
    :meth:`~seqtheory.core.ensemble.Ensemble.member` and evaluation are the Ensemble's: the
    stacked parameters are the members' own, and the wide weights are built from them at
    every call. Inputs (M, B, T) (one batch per member) or (B, T) with ``shared=True``;
    logits (M, B, T, V).
    """

    def __init__(self, build, seeds, *, base: int | None = None):
        super().__init__(build, seeds, base=base)
        member = self._template[0]
        if not isinstance(member, CopyLSTM) or member.lstm.num_layers != 1:
            raise ValueError("build() must return a one-layer CopyLSTM for a StackedLSTM")
        lstm = member.lstm
        self._sizes = (member.emb.num_embeddings, lstm.input_size, lstm.hidden_size)

    def wide_weights(self) -> dict:
        """The wide LSTM's parameters (``weight_ih_l0`` ...; ``nn.LSTM``'s names and layout),
        built from the members': gate ``g`` of member ``m``'s unit ``h`` is the wide LSTM's
        unit ``m * hidden + h``."""
        p, _ = self._state()
        M, (_, E, H) = self.num_members, self._sizes

        def block_diagonal(w, cols):  # (M, 4H, cols) -> (4 M H, M cols)
            w = w.view(M, 4, H, cols).permute(1, 2, 3, 0)  # (4, H, cols, M)
            return torch.diag_embed(w, dim1=1, dim2=3).reshape(4 * M * H, M * cols)

        def side_by_side(b):  # (M, 4H) -> (4 M H)
            return b.view(M, 4, H).transpose(0, 1).reshape(4 * M * H)

        return {
            "weight_ih_l0": block_diagonal(p["lstm.weight_ih_l0"], E),
            "weight_hh_l0": block_diagonal(p["lstm.weight_hh_l0"], H),
            "bias_ih_l0": side_by_side(p["lstm.bias_ih_l0"]),
            "bias_hh_l0": side_by_side(p["lstm.bias_hh_l0"]),
        }

    def forward(self, idx: torch.Tensor, shared: bool = False) -> torch.Tensor:
        """Logits (M, B, T, V) of every member for token ids (M, B, T) (or shared (B, T))."""
        M, (V, E, H) = self.num_members, self._sizes
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx must be a torch.Tensor, got {type(idx).__name__}")
        if shared:
            idx = idx.expand(M, *idx.shape)
        if idx.dim() != 3 or idx.shape[0] != M:
            raise ValueError(
                f"idx must have shape ({M}, B, T) (one batch per member; "
                f"shared=True for (B, T)), got {tuple(idx.shape)}"
            )
        if idx.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"idx must hold integer token ids, got {idx.dtype}")
        # checked unless the caller has (train() on a GPU after its first batch): the
        # gather below would take a negative id from the end of the table
        if checking_inputs() and idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= V):
            raise ValueError(f"idx must hold token ids in 0..{V - 1}")
        p, _ = self._state()
        _, B, T = idx.shape
        member = torch.arange(M, device=idx.device)[:, None, None]
        x = p["emb.weight"][member, idx]  # (M, B, T, E)
        x = x.permute(1, 2, 0, 3).reshape(B, T, M * E)  # (B, T, M E)
        w = self.wide_weights()
        zero = x.new_zeros(1, B, M * H)  # h_0 = c_0 = 0
        with warnings.catch_warnings():  # cuDNN packs the wide weights at every call
            warnings.filterwarnings("ignore", message="RNN module weights are not part")
            # what nn.LSTM.forward calls, given the weights (none of its flattening into
            # cuDNN's buffer, which would rewrite the computed weights in place)
            h, _, _ = torch.lstm(
                x,
                (zero, zero),
                [w["weight_ih_l0"], w["weight_hh_l0"], w["bias_ih_l0"], w["bias_hh_l0"]],
                True,
                1,
                0.0,
                self.training,
                False,
                True,
            )  # (B, T, M H)
        h = h.view(B, T, M, H).permute(2, 0, 1, 3).reshape(M, B * T, H)  # (M, B T, H)
        w, b = p["head.weight"], p["head.bias"]  # (M, V, H), (M, V)
        return torch.baddbmm(b[:, None], h, w.transpose(1, 2)).view(M, B, T, V)


class _RecurrentBlock(nn.Module):
    """x + out(h), h_t = a * h_{t-1} + in(x_t) (diagonal, per channel), then x + MLP(x)."""

    def __init__(self, d_model: int, d_state: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.inp = nn.Linear(d_model, d_state)
        self.out = nn.Linear(d_state, d_model)
        # decay rates a = exp(-exp(log_rate)) spread over time scales of 1..100 steps
        self.log_rate = nn.Parameter(torch.linspace(0.0, -4.6, d_state))
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        u = self.inp(self.ln1(x)).permute(2, 0, 1)  # (N, B, T)
        log_a = -self.log_rate.exp()  # (N,) log decay
        pos = torch.arange(T, device=x.device)
        lag = pos[:, None] - pos[None, :]  # (T, T): t - s
        # h_t = sum_{s<=t} a^(t-s) u_s: one lower-triangular (T, T) matrix per channel,
        # applied as a batched matmul over channels (faster than einsum's layout on CPU)
        kernel = (lag.clamp(min=0)[None] * log_a[:, None, None]).exp() * (lag >= 0)  # (N,T,T)
        h = F.gelu(u @ kernel.transpose(1, 2))  # (N, B, T)
        # GELU before the permute: on the permuted (strided) tensor it and its backward
        # take several times longer than on contiguous memory
        x = x + self.out(h.permute(1, 2, 0))  # (B, T, C)
        return x + self.mlp(self.ln2(x))


class _RecurrentStack(nn.Module):
    """Embedding, ``layers`` recurrent blocks of ``d_state`` numbers each (``BLOCK``), a final
    LayerNorm and the output head: what the fixed-state copiers share."""

    BLOCK: type[nn.Module]

    def __init__(
        self, vocab_size: int = VOCAB_SIZE, d_model: int = 64, d_state: int = 128, layers: int = 2
    ):
        super().__init__()
        for name, v in [
            ("vocab_size", vocab_size),
            ("d_model", d_model),
            ("d_state", d_state),
            ("layers", layers),
        ]:
            check_int(name, v, minimum=1)
        self.emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(self.BLOCK(d_model, d_state) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.state_floats = d_state * layers

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))  # (B, T, V)


class DiagonalRecurrence(_RecurrentStack):
    """A minimal state-space model: blocks of a diagonal linear recurrence and an MLP.

    Each layer keeps ``d_state`` numbers ``h_t = a * h_{t-1} + W x_t`` (``0 < a < 1``
    learned per channel); the sum over the past is computed in parallel over time as a
    causal convolution with kernel ``a^(t-s)``, the way S4-style models train.
    """

    BLOCK = _RecurrentBlock


def linear_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """All states of ``h_t = a_t * h_{t-1} + b_t`` (``h_{-1} = 0``) along dim 1, in parallel.

    A Hillis-Steele scan: ``ceil(log2 T)`` rounds, each composing every step with the one
    ``k`` places earlier (``k = 1, 2, 4, ...``), so the Python loop runs over doublings, not
    tokens. ``a`` and ``b`` have the same shape (B, T, ...); returns that shape. Every
    partial product of the ``a_t`` is formed directly (no division), so decays in [0, 1]
    stay stable.
    """
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError("a and b must be torch.Tensors")
    if a.shape != b.shape or a.dim() < 2:
        raise ValueError(
            f"a and b must have the same shape (B, T, ...), got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    k, T = 1, a.shape[1]
    pad = [0, 0] * (a.dim() - 2) + [k, 0]  # pads dim 1 at the front
    while k < T:
        pad[-2] = k
        b = b + a * F.pad(b[:, :-k], pad)  # b_t + a_t b_{t-k}
        if 2 * k < T:
            a = a * F.pad(a[:, :-k], pad, value=1.0)  # a_t a_{t-k}
        k *= 2
    return b


class _GatedBlock(nn.Module):
    """x + out(h), h_t = a_t * h_{t-1} + (1 - a_t) * u_t with a_t = sigmoid(W_a x_t + b),
    u_t = W_u x_t (diagonal, per channel; the decay a_t depends on the input), then x + MLP(x).
    """

    def __init__(self, d_model: int, d_state: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.inp = nn.Linear(d_model, d_state)
        self.gate = nn.Linear(d_model, d_state)
        with torch.no_grad():  # initial decays 0.5..0.99: memories of about 1..100 steps
            self.gate.bias.copy_(torch.logit(torch.linspace(0.5, 0.99, d_state)))
        self.out = nn.Linear(d_state, d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def states(self, x: torch.Tensor) -> torch.Tensor:
        """The recurrent states h_t of this block for its input x (B, T, C): (B, T, N),
        computed by a parallel scan over time (:func:`linear_scan`)."""
        z = self.ln1(x)
        g = self.gate(z)  # (B, T, N)
        return linear_scan(F.sigmoid(g), F.sigmoid(-g) * self.inp(z))  # a_t, (1-a_t) u_t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.out(F.gelu(self.states(x)))  # (B, T, C)
        return x + self.mlp(self.ln2(x))


class GatedRecurrence(_RecurrentStack):
    """A minimal selective (input-gated) recurrence: blocks of a gated diagonal recurrence
    and an MLP.

    Each layer keeps ``d_state`` numbers ``h_t = a_t * h_{t-1} + (1 - a_t) * W x_t`` where
    the decay ``a_t = sigmoid(W_a x_t + b)`` is computed from the current input, so the model
    can choose per token what to keep and what to overwrite. This is Mamba's "selection"
    of the step size only: ``a_t = exp(-Delta_t)`` with ``Delta_t = softplus(-W_a x_t - b)``,
    Mamba's zero-order-hold discretisation with ``A = -1``. Mamba's input-dependent ``B``
    and ``C``, its state expansion (``d_state`` = 16 numbers per channel; here one), its
    short causal convolution and its output gate are left out: closer to a minimal GRU
    whose gates see only the current token. Computed in parallel over time.
    """

    BLOCK = _GatedBlock


def state_bits(state_floats: int, bits_per_float: int = 32) -> int:
    """Bits in a fixed-size state of ``state_floats`` numbers."""
    return check_int("state_floats", state_floats, minimum=1) * check_int(
        "bits_per_float", bits_per_float, minimum=1
    )


def max_copy_length(bits: int, alphabet: int = NUM_LETTERS) -> float:
    """``bits / log2(alphabet)``: a ``bits``-bit state copies every string of length ``L``
    only if ``L`` is below this (Jelassi et al., 2024, Theorem 2.7); pass ``bits + 1`` for
    the bound on copying at least half of them (their Corollary 2.8)."""
    bits = check_int("bits", bits, minimum=1)
    alphabet = check_int("alphabet", alphabet, minimum=2)
    return bits / math.log2(alphabet)


MODEL_NAMES = ("transformer", "hard-ALiBi", "LSTM", "linear recurrence", "gated recurrence")
#: The models the chapter trains live (the LSTM and the linear recurrence come from the
#: archived sweep: they copy a few percent or nothing).
LIVE_MODELS = ("transformer", "hard-ALiBi", "gated recurrence")


@dataclass(frozen=True)
class CopySetup:
    """Sizes of the copying chapter (see :data:`SETUP`)."""

    min_len: int = 5  # shortest training string
    max_len: int = 10  # longest training string
    test_len: int = 20  # length-generalisation test (twice the training length)
    d_model: int = 64  # width of every model
    batch_size: int = 32  # strings per step (per seed)
    steps: int = 600  # optimisation steps for each model
    lr: float = 3e-3  # peak AdamW learning rate (warm-up, then cosine decay)
    # per-model peak rates that override lr: the best of 1e-3, 3e-3, 1e-2, 3e-2 for each
    # model on three tuning seeds (scripts/copying_sweeps.py, data/copying_sweeps.json)
    lrs: tuple = (
        ("transformer", 1e-3),
        ("hard-ALiBi", 3e-3),
        ("LSTM", 1e-2),
        ("linear recurrence", 1e-2),
        ("gated recurrence", 1e-2),
    )
    warmup: int = 100  # warm-up steps
    eval_every: int = 200  # evaluate every this many steps
    eval_size: int = 300  # strings per evaluation and length
    seeds: tuple = (0, 1, 2)  # every model is trained once per seed (offsets from the
    #                               base seed)
    names: tuple = LIVE_MODELS  # the models that run() trains (any of MODEL_NAMES)

    def __post_init__(self) -> None:
        check_int("min_len", self.min_len, minimum=1)
        check_int("max_len", self.max_len, minimum=self.min_len)
        check_int("test_len", self.test_len, minimum=1)
        check_int("d_model", self.d_model, minimum=4)
        if self.d_model % 4:
            raise ValueError(f"d_model must be a multiple of 4 (four heads), got {self.d_model}")
        for name in ("batch_size", "steps", "eval_every", "eval_size"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        if not isinstance(self.seeds, tuple):
            raise TypeError(f"seeds must be a tuple of ints, got {self.seeds!r}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and non-empty, got {self.seeds}")
        for seed in self.seeds:
            check_int("seed", seed, minimum=0)
        if not isinstance(self.lrs, tuple):
            raise TypeError(f"lrs must be a tuple of (name, lr) pairs, got {self.lrs!r}")
        for pair in self.lrs:
            if (
                not isinstance(pair, tuple)
                or len(pair) != 2
                or pair[0] not in MODEL_NAMES
                or not isinstance(pair[1], (int, float))
                or not pair[1] > 0
            ):
                raise ValueError(
                    f"lrs must hold (model name, lr > 0) pairs with names in "
                    f"{MODEL_NAMES}, got {pair!r}"
                )
        if not isinstance(self.names, tuple):
            raise TypeError(f"names must be a tuple of model names, got {self.names!r}")
        bad = [n for n in self.names if n not in MODEL_NAMES]
        if not self.names or bad or len(set(self.names)) != len(self.names):
            raise ValueError(f"names must be distinct names from {MODEL_NAMES}, got {self.names!r}")

    def lr_for(self, name: str) -> float:
        """Peak learning rate of model ``name``: its entry in ``lrs``, else ``lr``."""
        if name not in MODEL_NAMES:
            raise ValueError(f"name must be one of {MODEL_NAMES}, got {name!r}")
        return float(dict(self.lrs).get(name, self.lr))

    @property
    def context(self) -> int:
        """Longest sequence the models accept: a copy of ``2 * test_len`` letters."""
        return 2 * max(self.max_len, 2 * self.test_len) + 2


#: CPU-sized default and the ``FULL=1`` size of the copying chapter, for a GPU: strings of
#: 5-22 letters (just above the authors' code's default 5-20; the chapter's length grid
#: 4, 7, 10, ... must contain max_len), tests at 44, all five models live, 5 seeds,
#: 10,000 steps.  The models keep the chapter's size (two layers, width 64, the tuned
#: rates), not the paper's ~160M parameters.
SETUP = Sizes(
    cpu=CopySetup(),
    full=CopySetup(
        max_len=22,
        test_len=44,
        steps=10_000,
        eval_every=500,
        eval_size=2000,
        seeds=(0, 1, 2, 3, 4),
        names=MODEL_NAMES,
    ),
)


def copy_model(
    name: str, setup: CopySetup, *, seed: int | None = None, base: int | None = None
) -> nn.Module:
    """One freshly initialised model of the chapter, on the CPU. With ``seed`` its weights
    are drawn inside :func:`~seqtheory.core.seeds.seeded` ``(seed, base=base)`` (the same weights
    every
    time, torch's global RNG left as it was); without it, from the global RNG.

    ``transformer``: two layers, four heads, learned absolute positions. ``hard-ALiBi``:
    the same, but the first layer's heads see only the last 1, 2, 3 and 4 tokens (each
    window includes the position itself) and the second layer's heads see everything with
    no position information, as in the paper's theoretical construction (the authors' code
    instead gives every layer some windowed heads and some NoPE heads). ``LSTM``,
    ``linear recurrence`` (:class:`DiagonalRecurrence`) and ``gated recurrence``
    (:class:`GatedRecurrence`) keep a fixed-size state.
    """
    if not isinstance(setup, CopySetup):
        raise TypeError(f"setup must be a CopySetup, got {type(setup).__name__}")
    if name not in MODEL_NAMES:
        raise ValueError(f"name must be one of {MODEL_NAMES}, got {name!r}")
    if seed is not None:
        with seeded(check_int("seed", seed, minimum=0), base=base):
            return copy_model(name, setup)
    d = setup.d_model
    common = dict(vocab_size=VOCAB_SIZE, max_len=setup.context, n_layers=2, n_heads=4, d_model=d)
    if name == "transformer":
        return Transformer(TransformerConfig(**common))
    if name == "hard-ALiBi":
        return Transformer(
            TransformerConfig(
                **common, pos_encoding="hard_alibi", windows=((1, 2, 3, 4), (0, 0, 0, 0))
            )
        )
    if name == "LSTM":
        return CopyLSTM(VOCAB_SIZE, d_embed=d, hidden=2 * d)
    if name == "gated recurrence":
        return GatedRecurrence(VOCAB_SIZE, d_model=d, d_state=2 * d)
    return DiagonalRecurrence(VOCAB_SIZE, d_model=d, d_state=2 * d)


def copy_models(
    setup: CopySetup, *, seed: int | None = None, base: int | None = None
) -> dict[str, nn.Module]:
    """The models of the chapter, each of about 100k parameters (see :func:`copy_model`;
    with ``seed`` every one is built under ``seeded(seed, base=base)``)."""
    return {name: copy_model(name, setup, seed=seed, base=base) for name in MODEL_NAMES}


def _copy_tests(setup: CopySetup, seed: int, device: torch.device) -> dict:
    """Fixed test sets: ``eval_size`` strings at ``max_len`` and at ``test_len`` (stream
    ``tests`` of the length under the base ``seed``)."""
    return {
        name: copy_batch(
            setup.eval_size,
            length,
            generator=make_generator(STREAMS.seed("tests", length), device, base=seed),
        )
        for name, length in [("acc_train_len", setup.max_len), ("acc_test_len", setup.test_len)]
    }


def _copy_eval(tests: dict, last_step: int):
    """eval_fn for train(): accuracy at max_len, and at the last step also at test_len (a
    smoke run's last step is its step cap, ``settings.max_steps``)."""
    last_step = min(last_step, settings.max_steps or last_step)

    def evaluate(model, step):
        names = list(tests) if step == last_step else ["acc_train_len"]
        return {name: string_accuracy(model, *tests[name]) for name in names}

    return evaluate


def _train_kw(setup: CopySetup, steps: int, lr: float, progress: bool) -> dict:
    return dict(
        steps=steps,
        lr=lr,
        warmup=min(setup.warmup, steps),
        schedule="cosine",
        eval_every=setup.eval_every,
        progress=progress,
    )


def train_copier(
    model: nn.Module,
    setup: CopySetup,
    *,
    steps: int | None = None,
    lr: float | None = None,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    progress: bool = True,
    desc: str = "copying",
) -> History:
    """Train one ``model`` to copy strings of ``min_len..max_len`` letters with the book's
    loop, where its parameters are.

    Every ``eval_every`` steps it records the string accuracy at the longest training
    length (``acc_train_len``); at the end also at ``test_len`` (``acc_test_len``), both on
    fixed test sets drawn from the base ``seed`` (default
    :func:`~seqtheory.core.seeds.base_seed`; see :func:`~seqtheory.core.seeds.experiment_seed`) as
    in
    :func:`run`. ``generator`` draws the training strings (default: stream ``data`` 0,
    seed 0's stream in :func:`run`) and must be on the model's device; ``lr`` defaults to
    ``setup.lr`` (see :meth:`CopySetup.lr_for` for a model's own rate).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(setup, CopySetup):
        raise TypeError(f"setup must be a CopySetup, got {type(setup).__name__}")
    steps = setup.steps if steps is None else check_int("steps", steps, minimum=1)
    seed, dev = experiment_seed(seed), _device_of(model)
    g = (
        generator
        if generator is not None
        else make_generator(STREAMS.seed("data", 0), dev, base=seed)
    )
    return train(
        model,
        lambda step: copy_batch(setup.batch_size, setup.min_len, setup.max_len, generator=g),
        eval_fn=_copy_eval(_copy_tests(setup, seed, dev), steps),
        desc=desc,
        **_train_kw(setup, steps, setup.lr if lr is None else lr, progress),
    )


@dataclass
class CopyRun:
    """One model architecture trained once per seed (one entry of :class:`CopyResult`)."""

    name: str
    seeds: tuple  # the setup's seeds (logical seeds under the base seed)
    steps: np.ndarray  # (E,) evaluation steps
    acc_train_len: np.ndarray  # (E, M) string accuracy at max_len, per seed
    acc_test_len: np.ndarray  # (M,) string accuracy at test_len after training, per seed
    models: list  # the M trained models (standalone modules, CPU, eval mode)
    seconds: float  # training time of all seeds together
    histories: list  # training History: one for the batched program (every
    #                           seed), or one per seed (the LSTM on the CPU)

    def final(self) -> np.ndarray:
        """(M,) accuracy at the longest training length after training."""
        return self.acc_train_len[-1]


@dataclass
class CopyResult(RunInfo):
    """What :func:`run` trained: one :class:`CopyRun` per model name (``seconds``: the
    wall-clock time of the whole run)."""

    runs: dict  # model name -> CopyRun

    def models(self, member: int = 0) -> dict:
        """``{name: trained model}`` of one seed (index into ``setup.seeds``), for figures."""
        member = check_int("member", member, minimum=0)
        if member >= len(self.setup.seeds):
            raise ValueError(f"member must be < {len(self.setup.seeds)}, got {member}")
        return {name: r.models[member] for name, r in self.runs.items()}


def _stacks_lstm(device: torch.device) -> bool:
    """Whether :func:`run` trains the LSTM's seeds as one :class:`StackedLSTM` on
    ``device``: off the CPU (on the CPU its block-diagonal products cost M times the
    arithmetic of the seeds one by one: 4x the time per step at the FULL sizes)."""
    return device.type != "cpu"


def _train_seed_by_seed(
    name: str, setup: CopySetup, ctx: Experiment, evaluate, kw: dict
) -> CopyRun:
    """Train model ``name`` once per seed, one seed after the other."""
    hists, models = [], []
    for s in setup.seeds:
        model = copy_model(name, setup, seed=ctx.logical("weights", s), base=ctx.seed)
        model = model.to(ctx.device)
        g = ctx.generator("data", s)
        hists.append(
            train(
                model,
                lambda step, g=g: copy_batch(
                    setup.batch_size, setup.min_len, setup.max_len, generator=g
                ),
                eval_fn=evaluate,
                desc=f"{name}, seed {s}",
                **kw,
            )
        )
        models.append(model.cpu().eval())
    steps, _ = hists[0].metric("acc_train_len")
    acc = np.stack([h.metric("acc_train_len")[1] for h in hists], axis=1)
    test = np.array([h.final("acc_test_len") for h in hists])
    return CopyRun(
        name=name,
        seeds=tuple(setup.seeds),
        steps=steps,
        acc_train_len=acc,
        acc_test_len=np.asarray(test),
        models=models,
        seconds=sum(h.seconds for h in hists),
        histories=hists,
    )


def _train_together(name: str, setup: CopySetup, ctx: Experiment, evaluate, kw: dict) -> CopyRun:
    """Train model ``name``'s seeds as one batched program (an :class:`Ensemble`, or a
    :class:`StackedLSTM` for the LSTM)."""
    stacked = StackedLSTM if name == "LSTM" else Ensemble
    ens = stacked(
        lambda: copy_model(name, setup),
        [ctx.logical("weights", s) for s in setup.seeds],
        base=ctx.seed,
    )
    ens = ens.to(ctx.device)
    gens = [ctx.generator("data", s) for s in setup.seeds]

    def batch(step):
        xs, ys = zip(
            *(
                copy_batch(setup.batch_size, setup.min_len, setup.max_len, generator=g)
                for g in gens
            ),
            strict=True,
        )
        return torch.stack(xs), torch.stack(ys)  # (M, B, T)

    h = train(
        ens, batch, eval_fn=member_eval(evaluate), desc=f"{name}, {len(setup.seeds)} seeds", **kw
    )
    steps, acc = h.metric("acc_train_len")
    return CopyRun(
        name=name,
        seeds=tuple(setup.seeds),
        steps=steps,
        acc_train_len=acc,
        acc_test_len=np.asarray(h.final("acc_test_len")),
        models=[m.cpu().eval() for m in ens.members()],
        seconds=h.seconds,
        histories=[h],
    )


@experiment(CopySetup, STREAMS)
def run(setup: CopySetup, ctx: Experiment) -> CopyResult:
    """Train each model of ``setup.names`` once per seed of ``setup.seeds``.

    Seed ``s`` fixes a model's initialisation (stream ``weights`` s, drawn inside
    :func:`~seqtheory.core.seeds.seeded`) and its stream of training strings (``data`` s, the
    same for every architecture); the test sets come from stream ``tests`` (the string
    length), all under the base seed ``ctx.seed``. Each model trains at its own
    learning rate (:meth:`CopySetup.lr_for`). Transformers and the recurrences train all
    their seeds as one batched program (:class:`~seqtheory.core.ensemble.Ensemble`). The LSTM
    (whose fused kernel cannot be mapped over stacked weights) does so off the CPU, as a
    :class:`StackedLSTM` (one wide block-diagonal LSTM: M times the arithmetic in one
    kernel call, where a GPU is bound by the number of calls); on the CPU, where the
    arithmetic is the cost, it trains seed by seed. Models are
    built on the CPU (the same weights on any device), trained on ``ctx.device`` with
    batches drawn there, and come back on the CPU.
    """
    with ctx.timer() as t:
        evaluate = _copy_eval(_copy_tests(setup, ctx.seed, ctx.device), setup.steps)
        runs = {}
        for name in setup.names:
            kw = _train_kw(setup, setup.steps, setup.lr_for(name), ctx.progress)
            together = name != "LSTM" or _stacks_lstm(ctx.device)
            runs[name] = (_train_together if together else _train_seed_by_seed)(
                name, setup, ctx, evaluate, kw
            )
    return CopyResult(**ctx.header(setup, t.seconds), runs=runs)


def plot_learning_curves(result: CopyResult, ax=None, colors: dict | None = None):
    """String accuracy at ``max_len`` against the training step for every model of
    ``result``: a thin line per seed and the median; returns the axes."""
    if not isinstance(result, CopyResult):
        raise TypeError(f"result must be a CopyResult, got {type(result).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    colors = colors or dict(zip(result.runs, palette(len(result.runs)), strict=True))
    for name, r in result.runs.items():
        ax.plot(r.steps, r.acc_train_len, color=colors[name], lw=0.8, alpha=0.5)
        ax.plot(
            r.steps,
            np.median(r.acc_train_len, axis=1),
            "o-",
            ms=3,
            color=colors[name],
            label=f"{name} (median of {len(r.seeds)} seeds)",
        )
    ax.set(
        xlabel="training step",
        ylabel=f"string accuracy at length {result.setup.max_len}",
        title="learning to copy (thin lines: single seeds)",
        ylim=(-0.02, 1.02),
    )
    ax.legend()
    return ax

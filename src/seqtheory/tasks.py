"""Toy next-token tasks used to introduce the library (richer tasks live in topic modules)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .training import IGNORE_INDEX
from .utils import Sizes, check_int

__all__ = ["previous_token_batch", "PreviousTokenSetup", "PREVIOUS_TOKEN"]


def previous_token_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    offset: int = 1,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniform random tokens; the target at position t is the token at t - ``offset``.

    Returns ``(x, y)`` of shape (batch_size, seq_len); the first ``offset`` targets are
    ``-100`` (nothing to copy yet), so the loss ignores them.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seq_len = check_int("seq_len", seq_len, minimum=2)
    vocab_size = check_int("vocab_size", vocab_size, minimum=2)
    offset = check_int("offset", offset, minimum=1)
    if offset >= seq_len:
        raise ValueError(f"offset must be < seq_len={seq_len}, got {offset}")
    x = torch.randint(vocab_size, (batch_size, seq_len), generator=generator, device=device)
    y = torch.full_like(x, IGNORE_INDEX)                       # (B, T)
    y[:, offset:] = x[:, :-offset]
    return x, y


@dataclass(frozen=True)
class PreviousTokenSetup:
    """Sizes of the "meet the model" experiment (see :data:`PREVIOUS_TOKEN`)."""

    vocab_size: int = 8       # tokens 0..7
    seq_len: int = 24         # positions per sequence
    batch_size: int = 64      # sequences per step
    d_model: int = 32         # residual-stream width of the one-layer model
    steps: int = 300          # optimisation steps
    lr: float = 1e-3          # AdamW learning rate
    eval_every: int = 10      # evaluate (and snapshot) every this many steps


#: CPU-sized default and the ``FULL=1`` size of the "meet the model" experiment.
PREVIOUS_TOKEN = Sizes(
    cpu=PreviousTokenSetup(),
    full=PreviousTokenSetup(vocab_size=64, seq_len=128, d_model=64, steps=2000, eval_every=50),
)

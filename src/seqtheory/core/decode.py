"""Greedy decoding: continue token sequences with a model's most likely next token."""

from __future__ import annotations

import torch
import torch.nn as nn

from .runtime import evaluating
from .validate import check_int

__all__ = ["greedy_decode"]


def greedy_decode(
    model: nn.Module, prompt: torch.Tensor, steps: int, *, stop: int | None = None
) -> torch.Tensor:
    """Greedy continuation of ``prompt`` (..., T) by up to ``steps`` tokens: (..., steps').

    ``model`` maps token ids (..., T) to logits (..., T, vocab) -- a
    :class:`~seqtheory.core.models.Transformer` on (B, T), a
    :class:`~seqtheory.chain_of_thought.NextTokenNet` on (M, B, T).
    Each step appends the argmax at the last position (computed alone by the model's
    ``next_logits(ids)`` where it has one). With ``stop``, decoding ends once
    every row has written that token (so ``steps' <= steps``). Runs in eval mode without
    gradients (the model's mode is restored).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(prompt, torch.Tensor) or prompt.dim() < 1 or prompt.shape[-1] < 1:
        raise TypeError("prompt must be a tensor of token ids (..., T) with T >= 1")
    steps = check_int("steps", steps, minimum=1)
    seqs = prompt.long()
    done = torch.zeros(prompt.shape[:-1], dtype=torch.bool, device=prompt.device)
    last = getattr(model, "next_logits", None) or (lambda ids: model(ids)[..., -1, :])
    with evaluating(model):
        for _ in range(steps):  # generation is sequential by nature
            nxt = last(seqs).argmax(dim=-1, keepdim=True)  # (..., 1)
            seqs = torch.cat([seqs, nxt], dim=-1)
            if stop is not None:
                done |= nxt[..., 0] == stop
                if bool(done.all()):
                    break
    return seqs[..., prompt.shape[-1] :]

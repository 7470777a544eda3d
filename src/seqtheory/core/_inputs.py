"""Checks of what a model is fed: token ids or input vectors (batch, seq_len, ...), and hooks."""

from __future__ import annotations

import torch


def check_token_ids(idx, vocab_size: int, max_len: int) -> None:
    """Raise a clear error unless ``idx`` is an int tensor (B, T) of ids in 0..vocab_size-1."""
    if not isinstance(idx, torch.Tensor):
        raise TypeError(f"idx must be a torch.Tensor of token ids, got {type(idx).__name__}")
    if idx.dim() != 2:
        raise ValueError(f"idx must have shape (batch, seq_len), got {tuple(idx.shape)}")
    if idx.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"idx must hold integer token ids (int64), got {idx.dtype}")
    if idx.shape[0] < 1:
        raise ValueError(f"idx must hold at least one sequence, got shape {tuple(idx.shape)}")
    _check_seq_len(idx.shape[1], max_len)
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"token ids must lie in 0..{vocab_size - 1}, got values in {lo}..{hi}")


def check_embeds(embeds, d_model: int, max_len: int) -> None:
    """Raise a clear error unless ``embeds`` is a float tensor (B, T, d_model)."""
    if not isinstance(embeds, torch.Tensor) or not embeds.is_floating_point():
        raise TypeError("embeds must be a floating-point torch.Tensor of shape (B, T, d_model)")
    if embeds.dim() != 3 or embeds.shape[-1] != d_model:
        shape = tuple(embeds.shape)
        raise ValueError(f"embeds must have shape (batch, seq_len, d_model={d_model}), got {shape}")
    _check_seq_len(embeds.shape[1], max_len)


def check_hooks(hooks: dict | None, points: tuple) -> dict:
    """``hooks`` ({point: function or list of functions}) as {point: tuple of functions}."""
    if hooks is not None and not isinstance(hooks, dict):
        raise TypeError(f"hooks must be a dict {{point: function}}, got {type(hooks).__name__}")
    out = {}
    for name, fns in (hooks or {}).items():
        if name not in points:
            raise ValueError(
                f"hooks: this model has no point {name!r}; its points are {', '.join(points)}"
            )
        fns = tuple(fns) if isinstance(fns, (list, tuple)) else (fns,)
        if not all(callable(fn) for fn in fns):
            raise TypeError(f"hooks[{name!r}] must be a function or a list of functions")
        out[name] = fns
    return out


def _check_seq_len(T: int, max_len: int) -> None:
    """Raise a clear error unless the sequence length ``T`` is in 1..max_len."""
    if not 1 <= T <= max_len:
        raise ValueError(f"sequence length must be in 1..max_len={max_len}, got {T}")

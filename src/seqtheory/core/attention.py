"""Reading and editing attention patterns.

Statistics of a pattern (..., T, T): :func:`attention_to_offset`, :func:`attention_by_offset`;
patterns to put in its place: :func:`uniform_causal_pattern`, :func:`attention_without_offset`;
and hooks for :meth:`seqtheory.core.models.Transformer.forward` that act on heads, for causal tests
of a circuit: :func:`mask_heads` silences heads, :func:`override_pattern` makes a head attend
by another pattern. Hooks are dicts; :func:`~seqtheory.core.models.combine` joins several,
keeping every function on a point:
``model(x, hooks=combine(mask_heads({0: [1]}), override_pattern({1: uniform_causal_pattern(T)})))``.
"""

from __future__ import annotations

from functools import partial

import torch

from .models import checking_inputs
from .validate import check_int

__all__ = [
    "attention_by_offset",
    "attention_to_offset",
    "attention_without_offset",
    "mask_heads",
    "override_pattern",
    "uniform_causal_pattern",
]


def attention_to_offset(pattern: torch.Tensor, offset: int = 1) -> torch.Tensor:
    """Mean attention weight from each query ``t`` to key ``t - offset`` (queries t >= offset).

    ``pattern`` is (..., T, T); the result has the leading shape (...), e.g. (B, heads).
    An ideal previous-token head scores 1 at ``offset=1``.
    """
    if pattern.dim() < 2 or pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(f"pattern must end in (T, T), got shape {tuple(pattern.shape)}")
    T = pattern.shape[-1]
    if not 0 <= offset < T:
        raise ValueError(f"offset must be in 0..{T - 1} for T={T}, got {offset}")
    return pattern.diagonal(offset=-offset, dim1=-2, dim2=-1).mean(dim=-1)


def _check_pattern(pattern) -> int:
    """``T`` of an attention ``pattern`` (..., T, T); a ValueError for anything else."""
    if (
        not isinstance(pattern, torch.Tensor)
        or pattern.dim() < 2
        or pattern.shape[-1] != pattern.shape[-2]
    ):
        shape = tuple(pattern.shape) if isinstance(pattern, torch.Tensor) else type(pattern)
        raise ValueError(f"pattern must be a tensor ending in (T, T), got {shape}")
    return pattern.shape[-1]


def _check_offset(name: str, offset, T: int) -> int:
    """``offset`` as an int in 0..T-1; a ValueError naming ``name`` otherwise."""
    offset = check_int(name, offset, minimum=0)
    if offset >= T:
        raise ValueError(f"{name} must be in 0..{T - 1} for T={T}, got {offset}")
    return offset


def attention_by_offset(pattern: torch.Tensor, max_offset: int) -> torch.Tensor:
    """Attention mass by distance: (..., max_offset + 2), summing to 1 over the last dim.

    Entry ``o`` (0..max_offset) is the mean weight from query ``t`` to key ``t - o``, and
    the last entry the mean weight on keys further back, both averaged over the queries
    ``t >= max_offset`` (for which every offset up to ``max_offset`` exists). ``pattern``
    is (..., T, T) with rows that sum to 1, e.g. (B, heads, T, T).
    """
    T = _check_pattern(pattern)
    max_offset = _check_offset("max_offset", max_offset, T)
    near = torch.stack(
        [
            pattern.diagonal(offset=-o, dim1=-2, dim2=-1)[..., max_offset - o :]
            for o in range(max_offset + 1)
        ],
        dim=-1,
    )  # (..., T - max_o, O)
    rest = 1.0 - near.sum(-1, keepdim=True)  # (..., T - max_o, 1)
    return torch.cat([near, rest], dim=-1).mean(dim=-2)  # (..., O + 1)


def uniform_causal_pattern(T: int) -> torch.Tensor:
    """The (T, T) pattern that spreads each query's weight evenly over keys 0..t."""
    T = check_int("T", T, minimum=1)
    return torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]  # (T, T)


def attention_without_offset(pattern: torch.Tensor, offset: int) -> torch.Tensor:
    """``pattern`` (..., T, T) with the weight on key ``t - offset`` removed and each row
    renormalised (a row whose whole weight was there is left as it was).

    An ablation for :func:`override_pattern`: ``{(0, 0): lambda p: attention_without_offset(p,
    1)}`` takes a head's previous-token attention away and keeps the rest of its pattern.
    """
    T = _check_pattern(pattern)
    offset = _check_offset("offset", offset, T)
    idx = torch.arange(T, device=pattern.device)
    rest = pattern * (idx[:, None] - idx[None, :] != offset)  # (..., T, T)
    total = rest.sum(-1, keepdim=True)  # (..., T, 1)
    return torch.where(total > 0, rest / total.clamp_min(1e-30), pattern)


def mask_heads(heads: dict) -> dict:
    """Hooks that silence heads: ``{layer: head or list of heads}`` zeroes those heads'
    outputs before the output map (hook points ``heads.{layer}``). Layers and heads count
    from 0: ``model(x, hooks=mask_heads({0: [0, 1]}))``."""
    if not isinstance(heads, dict):
        raise TypeError(
            f"heads must be a dict {{layer: head or list of heads}}, got {type(heads).__name__}"
        )
    hooks = {}
    for layer, which in heads.items():
        layer = check_int("mask_heads layer", layer, minimum=0)
        which = which if isinstance(which, (list, tuple, set, range)) else (which,)
        which = tuple(sorted({check_int("mask_heads head", h, minimum=0) for h in which}))
        if which:
            hooks[f"heads.{layer}"] = partial(_zero_heads, layer, which)
    return hooks


def _zero_heads(layer: int, heads: tuple, y: torch.Tensor) -> torch.Tensor:
    """The heads' outputs ``y`` (B, H, T, d_head) with those of ``heads`` set to zero."""
    H = y.shape[1]
    if heads[-1] >= H:
        raise ValueError(
            f"mask_heads head must be in 0..{H - 1} for layer {layer}, got {heads[-1]}"
        )
    keep = torch.ones(H, 1, 1, dtype=y.dtype, device=y.device)
    keep[list(heads)] = 0.0
    return y * keep  # (B, H, T, Dh)


def override_pattern(patterns: dict) -> dict:
    """Hooks that make heads attend by other patterns (hook points ``pattern.{layer}``).

    ``patterns`` maps ``(layer, head)``, or ``layer`` for every head of a layer, to a causal
    (T, T) or (B, T, T) tensor whose rows sum to 1 (e.g. :func:`uniform_causal_pattern` or a
    mean pattern) or to a function of the head's own (B, T, T) pattern. Layers and heads
    count from 0: ``model(x, hooks=override_pattern({(1, 0): uniform_causal_pattern(T)}))``.
    """
    if not isinstance(patterns, dict):
        raise TypeError(
            "patterns must be a dict {(layer, head) or layer: pattern or "
            f"function}}, got {type(patterns).__name__}"
        )
    per_layer = {}
    for key, new in patterns.items():
        if isinstance(key, tuple) and len(key) == 2:
            layer, head = key
        elif isinstance(key, int) and not isinstance(key, bool):
            layer, head = key, None
        else:
            raise TypeError(f"patterns keys must be (layer, head) pairs or a layer, got {key!r}")
        layer = check_int("override_pattern layer", layer, minimum=0)
        head = None if head is None else check_int("override_pattern head", head, minimum=0)
        if not (callable(new) or isinstance(new, torch.Tensor)):
            raise TypeError(
                f"patterns values must be tensors or functions, got {type(new).__name__}"
            )
        per_layer.setdefault(layer, []).append((head, new))
    return {
        f"pattern.{layer}": partial(_override, layer, pairs) for layer, pairs in per_layer.items()
    }


def _override(layer: int, pairs: list, pattern: torch.Tensor) -> torch.Tensor:
    """``pattern`` (B, H, T, T) with the heads of ``pairs`` [(head or None, new)] replaced."""
    B, H, T, _ = pattern.shape
    new_of = {}  # head -> new
    for head, new in pairs:
        if head is not None and head >= H:
            raise ValueError(
                f"override_pattern head must be in 0..{H - 1} for layer {layer}, got {head}"
            )
        new_of.update({h: new for h in (range(H) if head is None else (head,))})
    heads = list(pattern.unbind(1))  # H x (B, T, T)
    for h, new in new_of.items():
        new = new(heads[h]) if callable(new) else new
        heads[h] = _checked(f"override_pattern for layer {layer} head {h}", new, pattern)
    return torch.stack(heads, dim=1)  # (B, H, T, T)


def _checked(where: str, new, pattern: torch.Tensor) -> torch.Tensor:
    """``new`` as a causal (B, T, T) pattern on ``pattern``'s device and dtype (checked)."""
    B, _, T, _ = pattern.shape
    if not isinstance(new, torch.Tensor) or not new.is_floating_point():
        raise TypeError(
            f"{where} must be a floating-point tensor (or a function returning "
            f"one), got {type(new).__name__}"
        )
    if (
        new.dim() not in (2, 3)
        or new.shape[-2:] != (T, T)
        or (new.dim() == 3 and new.shape[0] not in (1, B))
    ):
        raise ValueError(
            f"{where} must have shape ({T}, {T}) or ({B}, {T}, {T}) for this "
            f"input, got {tuple(new.shape)}"
        )
    new = new.to(pattern.device, pattern.dtype).expand(B, T, T)
    if checking_inputs():  # data-dependent: not inside vmap
        if bool((new.detach().triu(diagonal=1) != 0).any()):
            raise ValueError(
                f"{where} puts weight on future keys (it must be causal: zero above the diagonal)"
            )
        if bool((new.detach() < 0).any()) or not torch.allclose(
            new.detach().sum(-1), torch.ones((), dtype=new.dtype, device=new.device), atol=1e-4
        ):
            raise ValueError(f"{where} must have non-negative rows that sum to 1")
    return new

"""A small decoder-only transformer that shows its work.

One readable file, in the spirit of nanoGPT's ``model.py``: a ``@dataclass`` config, pre-LN
blocks, and a forward pass with named hook points (as in TransformerLens), because the
chapters plot and edit what happens inside. Caching, head ablation and pattern replacement
are hooks: :func:`cache_into`, :func:`~seqtheory.core.attention.mask_heads` and
:func:`~seqtheory.core.attention.override_pattern`; :func:`combine` joins several.

Hook points, per layer ``l`` (TransformerLens's name in brackets):

==============  ================  ===========================================================
point           shape             what
==============  ================  ===========================================================
``resid.0``     (B, T, C)         the embeddings, before block 0 (``blocks.0.hook_resid_pre``)
``q.l``         (B, H, T, Dh)     queries (after rotary) (``blocks.l.attn.hook_q``)
``k.l``         (B, H, T, Dh)     keys (after rotary) (``blocks.l.attn.hook_k``)
``v.l``         (B, H, T, Dh)     values (``blocks.l.attn.hook_v``)
``scores.l``    (B, H, T, T)      q·k/√Dh + position bias, causally masked (``hook_attn_scores``)
``pattern.l``   (B, H, T, T)      attention weights, rows sum to 1 (``hook_pattern``)
``heads.l``     (B, H, T, Dh)     each head's output, before the output map (``hook_z``)
``attn_out.l``  (B, T, C)         the attention sublayer's output (``blocks.l.hook_attn_out``)
``resid_mid.l`` (B, T, C)         stream between attention and MLP (``blocks.l.hook_resid_mid``)
``mlp_out.l``   (B, T, C)         the MLP's output (``blocks.l.hook_mlp_out``)
``resid.{l+1}`` (B, T, C)         the stream after block l (``blocks.l.hook_resid_post``)
==============  ================  ===========================================================

An attention-only model has no ``resid_mid`` and ``mlp_out`` points.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._inputs import check_embeds, check_hooks, check_token_ids
from .runtime import evaluating
from .seeds import seeded
from .validate import check_choice, check_float, check_int

__all__ = [
    "POS_ENCODINGS",
    "ForwardCache",
    "Transformer",
    "TransformerConfig",
    "cache_into",
    "checking_inputs",
    "combine",
    "explicit_attention",
    "num_params",
    "unchecked_inputs",
]

POS_ENCODINGS = ("learned", "relative", "rotary", "hard_alibi", "none")
#: longest sequence a Transformer accepts: its attention layers hold (max_len, max_len) masks
MAX_LEN = 4096
#: hook points of each layer, in the order the forward pass meets them (see the table above)
ATTENTION_POINTS = ("q", "k", "v", "scores", "pattern", "heads")
BLOCK_POINTS = ("attn_out", "resid_mid", "mlp_out")

# False where the caller takes the inputs unchecked (unchecked_inputs)
_CHECK_INPUTS = contextvars.ContextVar("seqtheory_check_inputs", default=True)
# False where attention must not use the fused kernel (explicit_attention)
_FUSED = contextvars.ContextVar("seqtheory_fused_attention", default=True)


@contextlib.contextmanager
def unchecked_inputs():
    """Skip the input checks inside this block: the caller has validated the inputs, or takes
    them unchecked (a check that reads values makes the host wait for a GPU: :func:`train`
    checks only a GPU run's first batch)."""
    token = _CHECK_INPUTS.set(False)
    try:
        yield
    finally:
        _CHECK_INPUTS.reset(token)


def checking_inputs() -> bool:
    """False inside :func:`unchecked_inputs`: whether a model should check its inputs."""
    return _CHECK_INPUTS.get()


@contextlib.contextmanager
def explicit_attention():
    """Compute attention as ``softmax(q k^T / sqrt(Dh)) v`` step by step inside this block,
    not with ``F.scaled_dot_product_attention``. An :class:`~seqtheory.core.ensemble.Ensemble`
    uses it around ``vmap``: torch has no batching rule for the fused kernel, which would
    run member by member."""
    token = _FUSED.set(False)
    try:
        yield
    finally:
        _FUSED.reset(token)


@dataclass
class TransformerConfig:
    """Hyper-parameters of :class:`Transformer`; every field has a small CPU-friendly default."""

    vocab_size: int = 16  # number of token ids (inputs and outputs)
    max_len: int = 128  # longest context the model accepts
    n_layers: int = 2  # number of blocks
    n_heads: int | tuple = 1  # heads per layer: one int for all, or one int per layer
    d_model: int = 16  # width of the residual stream
    attn_only: bool = False  # True: blocks have attention but no MLP
    mlp_ratio: int = 4  # MLP hidden width = mlp_ratio * d_model
    layer_norm: bool = True  # pre-LN in every sublayer and before the unembedding
    pos_encoding: str = "learned"  # "learned" | "relative" | "rotary" | "hard_alibi" | "none"
    windows: tuple = ()  # hard_alibi: tokens each head sees (0: all), per layer or all
    tie_weights: bool = False  # unembedding matrix = token embedding matrix
    dropout: float = 0.0  # dropout on attention weights and sublayer outputs
    init_std: float = 0.02  # std of the normal initialisation of weights

    @property
    def heads(self) -> tuple:
        """``n_heads`` as one entry per layer."""
        if isinstance(self.n_heads, (list, tuple)):
            return tuple(self.n_heads)
        return (self.n_heads,) * self.n_layers

    @property
    def layer_windows(self) -> tuple:
        """hard_alibi: one tuple of windows per layer (default: 1..H-1 and one global head)."""
        windows = tuple(self.windows) or tuple(range(1, self.heads[0])) + (0,)
        if all(isinstance(w, (tuple, list)) for w in windows):
            return tuple(map(tuple, windows))
        return (windows,) * self.n_layers

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, minimum=1)
        check_int("max_len", self.max_len, minimum=1)
        if self.max_len > MAX_LEN:
            raise ValueError(
                f"max_len must be at most {MAX_LEN} (size of attention masks), got {self.max_len}"
            )
        for name in ("n_layers", "d_model", "mlp_ratio"):
            check_int(name, getattr(self, name), minimum=1)
        check_choice("pos_encoding", self.pos_encoding, POS_ENCODINGS)
        check_float("dropout", self.dropout, low=0.0, high=1.0, high_open=True)
        check_float("init_std", self.init_std, low=0.0, low_open=True)
        for name in ("attn_only", "layer_norm", "tie_weights"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if len(self.heads) != self.n_layers:
            raise ValueError(
                f"n_heads must be one int or one per layer ({self.n_layers}), got {self.n_heads}"
            )
        for h in self.heads:
            check_int("n_heads", h, minimum=1)
            if self.d_model % h:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({h})")
            if self.pos_encoding == "rotary" and (self.d_model // h) % 2:
                raise ValueError(
                    f"rotary needs an even head size d_model/n_heads, got {self.d_model // h}"
                )
        if self.pos_encoding == "hard_alibi":
            self._check_windows()
        elif self.windows:
            raise ValueError("windows only apply to pos_encoding='hard_alibi'")

    def _check_windows(self) -> None:
        per_layer = self.layer_windows
        if tuple(map(len, per_layer)) != self.heads:
            raise ValueError(
                "hard_alibi needs one window per head (one tuple for all layers or one per "
                f"layer); got heads {self.heads} and windows {per_layer}"
            )
        for w in sum(per_layer, ()):
            check_int("window", w, minimum=0)


class ForwardCache:
    """What :meth:`Transformer.forward` returns with ``return_cache=True`` (besides logits):
    the tensor at every hook point, after the hooks, by name (``cache["q.0"]``)."""

    def __init__(self, points: dict, n_layers: int):
        self.points, self.n_layers = points, n_layers

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self.points:
            raise KeyError(f"no hook point {name!r}; cached: {', '.join(self.points)}")
        return self.points[name]

    def __contains__(self, name: str) -> bool:
        return name in self.points

    @property
    def attn(self) -> list:
        """Per layer: the attention pattern, (B, heads, T, T); rows sum to 1."""
        return [self.points[f"pattern.{i}"] for i in range(self.n_layers)]

    @property
    def resid(self) -> list:
        """The residual stream after the embedding, then after each block, (B, T, C)."""
        return [self.points[f"resid.{i}"] for i in range(self.n_layers + 1)]


def cache_into(store: dict, names) -> dict:
    """Hooks that put the tensor at each point of ``names`` into ``store[name]``."""
    if not isinstance(store, dict):
        raise TypeError(f"store must be a dict, got {type(store).__name__}")
    return {name: partial(store.__setitem__, name) for name in names}


def combine(*hooks: dict) -> dict:
    """One hooks dict from several, keeping every function: a point that two of them use
    gets both functions, in the order given (a dict merge would keep only the last).

    >>> model(x, hooks=combine(mask_heads({0: [1]}), cache_into(store, ["pattern.1"])))
    """
    out: dict = {}
    for i, h in enumerate(hooks):
        if not isinstance(h, dict):
            raise TypeError(f"argument {i} of combine must be a hooks dict, got {type(h).__name__}")
        for name, fns in h.items():
            fns = list(fns) if isinstance(fns, (list, tuple)) else [fns]
            out[name] = out.get(name, []) + fns
    return out


def _hook(hooks: dict, name: str, x: torch.Tensor) -> torch.Tensor:
    """``x`` after the hooks at point ``name``: each returns a replacement, or None to keep."""
    for fn in hooks.get(name, ()):
        new = fn(x)
        if new is not None and not (isinstance(new, torch.Tensor) and new.shape == x.shape):
            raise ValueError(
                f"a hook at {name} must return None or a tensor of shape "
                f"{tuple(x.shape)}, got {getattr(new, 'shape', type(new).__name__)}"
            )
        x = x if new is None else new
    return x


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply rotary position embedding to ``x`` of shape (B, H, T, D) (pairs of halves)."""
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, T, D/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    """Causal multi-head self-attention with hook points ``q``, ``k``, ``v``, ``scores``,
    ``pattern`` and ``heads``."""

    def __init__(self, cfg: TransformerConfig, n_heads: int, layer: int = 0):
        super().__init__()
        self.n_heads, self.d_head, self.pos = n_heads, cfg.d_model // n_heads, cfg.pos_encoding
        self.points = tuple(f"{p}.{layer}" for p in ATTENTION_POINTS)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.drop = nn.Dropout(cfg.dropout)
        T, idx = cfg.max_len, torch.arange(cfg.max_len)
        dist = idx[:, None] - idx[None, :]  # (T, T): i - j
        self.register_buffer("causal", dist >= 0, persistent=False)  # (T, T)
        if self.pos == "relative":
            # one learned scalar per head and distance i - j = 0 .. max_len-1 (T5 / ALiBi style)
            self.rel_bias = nn.Parameter(torch.zeros(n_heads, T))
            self.register_buffer("dist", dist.clamp(min=0), persistent=False)  # (T, T)
        if self.pos == "rotary":
            inv_freq = 1.0 / 10000 ** (torch.arange(0, self.d_head, 2).float() / self.d_head)
            angles = idx.float()[:, None] * inv_freq[None, :]  # (T, D/2)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)
        if self.pos == "hard_alibi":
            # Hard-ALiBi (Jelassi et al., 2024): head h sees keys with i - j < window_h (window
            # 0: the whole prefix, with no position information at all); window_ok (H, T, T)
            win = torch.tensor([w if w > 0 else T for w in cfg.layer_windows[layer]])  # (H,)
            self.register_buffer("window_ok", dist < win[:, None, None], persistent=False)

    def forward(self, x: torch.Tensor, hooks: dict) -> torch.Tensor:
        """Attention output (B, T, C), with ``hooks`` applied at this layer's points. The fused
        kernel computes it unless a hook reads the scores or the pattern (or inside
        :func:`explicit_attention`): the same function, fewer steps."""
        B, T, C = x.shape
        q_at, k_at, v_at, scores_at, pattern_at, heads_at = self.points
        q, k, v = self.qkv(x).split(C, dim=2)  # (B, T, C) each
        q, k, v = (z.view(B, T, self.n_heads, self.d_head).transpose(1, 2) for z in (q, k, v))
        if self.pos == "rotary":  # (B, H, T, Dh)
            q, k = _rotate(q, self.cos[:T], self.sin[:T]), _rotate(k, self.cos[:T], self.sin[:T])
        q, k, v = _hook(hooks, q_at, q), _hook(hooks, k_at, k), _hook(hooks, v_at, v)
        bias = self.rel_bias[:, self.dist[:T, :T]] if self.pos == "relative" else None
        if self.pos == "hard_alibi":  # 0 in the window, else -inf
            bias = torch.where(self.window_ok[:, :T, :T], 0.0, -math.inf)  # (H, T, T)
        if scores_at in hooks or pattern_at in hooks or not _FUSED.get():
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T, T)
            if bias is not None:
                scores = scores + bias
            scores = _hook(hooks, scores_at, scores.masked_fill(~self.causal[:T, :T], -math.inf))
            pattern = _hook(hooks, pattern_at, scores.softmax(dim=-1))  # (B, H, T, T)
            y = self.drop(pattern) @ v  # (B, H, T, Dh)
        else:
            p = self.drop.p if self.training else 0.0
            mask = None if bias is None else bias.masked_fill(~self.causal[:T, :T], -math.inf)
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p, is_causal=bias is None
            )
        y = _hook(hooks, heads_at, y).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.drop(self.out(y))


class MLP(nn.Module):
    """Position-wise feed-forward sublayer: Linear -> GELU -> Linear."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)), then (unless attention-only) x + mlp(ln(x))."""

    def __init__(self, cfg: TransformerConfig, n_heads: int, layer: int = 0):
        super().__init__()
        norm = (lambda: nn.LayerNorm(cfg.d_model)) if cfg.layer_norm else nn.Identity
        self.ln1, self.attn = norm(), Attention(cfg, n_heads, layer)
        self.ln2, self.mlp = (None, None) if cfg.attn_only else (norm(), MLP(cfg))
        self.points = tuple(f"{p}.{layer}" for p in BLOCK_POINTS)

    def forward(self, x: torch.Tensor, hooks: dict) -> torch.Tensor:
        attn_out, resid_mid, mlp_out = self.points
        x = x + _hook(hooks, attn_out, self.attn(self.ln1(x), hooks))  # (B, T, C)
        if self.mlp is None:
            return x
        x = _hook(hooks, resid_mid, x)
        return x + _hook(hooks, mlp_out, self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    """Decoder-only transformer: ``logits = model(idx)`` with ``idx`` of shape (B, T)."""

    def __init__(
        self,
        cfg: TransformerConfig | None = None,
        *,
        seed: int | None = None,
        base: int | None = None,
        **overrides,
    ):
        """Build from ``cfg`` (or keyword overrides of a default config). With ``seed`` the
        weights are drawn inside :func:`~seqtheory.core.seeds.seeded` ``(seed, base=base)``
        (torch's global RNG left as it was), else from the global RNG (``seed_everything``)."""
        super().__init__()
        if cfg is None:
            cfg = TransformerConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a TransformerConfig or keyword overrides, not both")
        if not isinstance(cfg, TransformerConfig):
            raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
        if seed is None and base is not None:
            raise ValueError("base is the base seed of seed=...; pass seed as well")
        self.cfg = cfg
        seed = None if seed is None else check_int("seed", seed, minimum=0)
        with contextlib.nullcontext() if seed is None else seeded(seed, base=base):
            self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)  # (V, C)
            learned = cfg.pos_encoding == "learned"
            self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model) if learned else None  # (L, C)
            self.drop = nn.Dropout(cfg.dropout)
            self.blocks = nn.ModuleList(Block(cfg, h, i) for i, h in enumerate(cfg.heads))
            self.ln_f = nn.LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
            self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
            self.apply(self._init_weights)
        if cfg.tie_weights:
            self.unembed.weight = self.tok_emb.weight  # (V, C) shared

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self) -> int:
        """Number of trainable parameters (tied weights counted once): :func:`num_params`."""
        return num_params(self)

    @property
    def hook_points(self) -> tuple[str, ...]:
        """Names of the points ``hooks`` act on, in the order the forward pass meets them."""
        names = ["resid.0"]
        for i in range(self.cfg.n_layers):
            names += [f"{p}.{i}" for p in ATTENTION_POINTS + BLOCK_POINTS[:1]]
            if not self.cfg.attn_only:
                names += [f"{p}.{i}" for p in BLOCK_POINTS[1:]]
            names.append(f"resid.{i + 1}")
        return tuple(names)

    def validate_input(
        self, idx: torch.Tensor | None = None, *, embeds: torch.Tensor | None = None
    ) -> None:
        """Raise a clear error unless exactly one of token ids / input vectors is valid."""
        if (idx is None) == (embeds is None):
            raise TypeError("give exactly one of idx (token ids) or embeds (input vectors)")
        if embeds is None:
            check_token_ids(idx, self.cfg.vocab_size, self.cfg.max_len)
        else:
            check_embeds(embeds, self.cfg.d_model, self.cfg.max_len)

    def _hooks(self, hooks: dict | None, cache: dict | None) -> dict:
        """``hooks`` checked, as {point: tuple of functions}, with ``cache``'s hooks last."""
        out = check_hooks(hooks, self.hook_points)
        if cache is not None:
            for name, fn in cache_into(cache, self.hook_points).items():
                out[name] = out.get(name, ()) + (fn,)
        return out

    def forward(
        self,
        idx: torch.Tensor | None = None,
        return_cache: bool = False,
        *,
        embeds: torch.Tensor | None = None,
        hooks: dict | None = None,
    ):
        """Next-token logits (B, T, vocab); with ``return_cache`` also a :class:`ForwardCache`
        of every hook point.

        ``embeds`` (B, T, d_model) may replace token ids: continuous inputs (e.g. points of
        R^D cut into tokens). ``hooks`` maps points of :attr:`hook_points` (the module's
        table) to a function (or a list, or :func:`combine` of several dicts) of the tensor
        there that returns a replacement of its shape, or None to keep it; ``{"pattern.0": f}``
        acts on layer 0's attention pattern. The cache holds each point after its hooks."""
        if checking_inputs():
            self.validate_input(idx, embeds=embeds)
        cache = {} if return_cache else None
        hooks = {} if hooks is None and cache is None else self._hooks(hooks, cache)
        x = self.tok_emb(idx) if embeds is None else embeds  # (B, T, C)
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[: x.shape[1]]  # + (T, C)
        x = _hook(hooks, "resid.0", self.drop(x))
        for i, block in enumerate(self.blocks, start=1):
            x = _hook(hooks, f"resid.{i}", block(x, hooks))  # (B, T, C)
        logits = self.unembed(self.ln_f(x))  # (B, T, V)
        if cache is None:
            return logits
        return logits, ForwardCache(cache, self.cfg.n_layers)

    def predict_proba(self, idx: torch.Tensor) -> torch.Tensor:
        """Next-token distributions (B, T, vocab), computed in eval mode without gradients."""
        with evaluating(self):
            return self(idx).softmax(dim=-1)

    def attention_patterns(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's attention pattern, a list of (B, heads, T, T) tensors (eval mode)."""
        with evaluating(self):
            return self(idx, return_cache=True)[1].attn


def num_params(module: nn.Module) -> int:
    """Number of trainable parameters of ``module`` (shared weights counted once)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad)

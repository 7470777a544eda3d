"""A small decoder-only transformer that shows its work.

One readable file, in the spirit of nanoGPT's ``model.py``: a ``@dataclass`` config, pre-LN
blocks, and a forward pass that can hand back every layer's attention pattern and the
residual stream (as TransformerLens does), because the chapters plot them.

Options the chapters need: attention-only or with MLPs, LayerNorm on or off, positional
information ``learned`` (absolute embeddings), ``relative`` (a learned bias per head and
distance), ``rotary`` (RoPE), ``hard_alibi`` (each head sees only a window of the last few
tokens, or everything with no position information) or ``none``, weight tying, and a
different number of heads per layer.

Interventions, for causal tests of a circuit: ``model(idx, head_mask={layer: heads})``
silences heads (their output is zeroed before the output projection), and
``model(idx, attn_override={(layer, head): pattern})`` makes a head use another attention
pattern — a fixed (T, T) or (B, T, T) tensor such as :func:`uniform_causal_pattern` or a
mean pattern, or a function of the head's own pattern. Both are off by default and then
cost nothing; with ``return_cache=True`` the cache holds the patterns actually used.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from .utils import check_choice, check_float, check_int, evaluating, seeded

__all__ = [
    "POS_ENCODINGS", "ForwardCache", "Transformer", "TransformerConfig", "attention_by_offset",
    "attention_to_offset", "attention_without_offset", "greedy_decode",
    "uniform_causal_pattern", "unchecked_inputs",
]

POS_ENCODINGS = ("learned", "relative", "rotary", "hard_alibi", "none")

# Inside a batched program (seqtheory.ensemble) the inputs were validated once outside vmap,
# where data-dependent checks such as ``int(idx.max())`` are allowed.
_CHECK_INPUTS = contextvars.ContextVar("seqtheory_check_inputs", default=True)


@contextlib.contextmanager
def unchecked_inputs():
    """Skip the models' input checks inside this block (the caller has validated them)."""
    token = _CHECK_INPUTS.set(False)
    try:
        yield
    finally:
        _CHECK_INPUTS.reset(token)


#: longest sequence a Transformer accepts: its attention layers hold (max_len, max_len) masks
MAX_LEN = 4096


@dataclass
class TransformerConfig:
    """Hyper-parameters of :class:`Transformer`; every field has a small CPU-friendly default."""

    vocab_size: int = 16          # number of token ids (inputs and outputs)
    max_len: int = 128            # longest context the model accepts
    n_layers: int = 2             # number of blocks
    n_heads: int | tuple = 1      # heads per layer: one int for all, or one int per layer
    d_model: int = 16             # width of the residual stream
    attn_only: bool = False       # True: blocks have attention but no MLP
    mlp_ratio: int = 4            # MLP hidden width = mlp_ratio * d_model
    layer_norm: bool = True       # pre-LN in every sublayer and before the unembedding
    pos_encoding: str = "learned"  # "learned" | "relative" | "rotary" | "hard_alibi" | "none"
    windows: tuple = ()           # hard_alibi: tokens each head sees (0: all), per layer or all
    tie_weights: bool = False     # unembedding matrix = token embedding matrix
    dropout: float = 0.0          # dropout on attention weights and sublayer outputs
    init_std: float = 0.02        # std of the normal initialisation of weights
    heads: tuple = field(init=False, repr=False)  # n_heads as one entry per layer

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, minimum=1)
        check_int("max_len", self.max_len, minimum=1)
        if self.max_len > MAX_LEN:
            raise ValueError(f"max_len must be at most {MAX_LEN} (each attention layer keeps "
                             f"(max_len, max_len) masks), got {self.max_len}")
        check_int("n_layers", self.n_layers, minimum=1)
        check_int("d_model", self.d_model, minimum=1)
        check_int("mlp_ratio", self.mlp_ratio, minimum=1)
        check_choice("pos_encoding", self.pos_encoding, POS_ENCODINGS)
        check_float("dropout", self.dropout, low=0.0, high=1.0, high_open=True)
        check_float("init_std", self.init_std, low=0.0, low_open=True)
        for name in ("attn_only", "layer_norm", "tie_weights"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if isinstance(self.n_heads, (list, tuple)):
            heads = tuple(self.n_heads)
            if len(heads) != self.n_layers:
                raise ValueError(
                    f"n_heads has {len(heads)} entries but n_layers is {self.n_layers}; "
                    "give one int for all layers or one per layer"
                )
        else:
            heads = (self.n_heads,) * self.n_layers
        for h in heads:
            check_int("n_heads", h, minimum=1)
            if self.d_model % h:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({h})")
            if self.pos_encoding == "rotary" and (self.d_model // h) % 2:
                raise ValueError(
                    "rotary positions need an even head size; "
                    f"d_model/n_heads = {self.d_model // h}"
                )
        self.heads = heads
        if self.pos_encoding == "hard_alibi":
            # one tuple for every layer, or one tuple per layer; default: 1..H-1 and one global
            windows = tuple(self.windows) or tuple(range(1, heads[0])) + (0,)
            per_layer = windows if all(isinstance(w, (tuple, list)) for w in windows) \
                else (windows,) * self.n_layers
            if len(per_layer) != self.n_layers or any(
                    len(w) != h for w, h in zip(per_layer, heads, strict=True)):
                raise ValueError(
                    "hard_alibi needs one window per head (one tuple for all layers or one "
                    f"per layer); got heads {heads} and windows {windows}"
                )
            for w in sum(map(tuple, per_layer), ()):
                check_int("window", w, minimum=0)
            self.windows = tuple(map(tuple, per_layer))
        elif self.windows:
            raise ValueError("windows only apply to pos_encoding='hard_alibi'")


@dataclass
class ForwardCache:
    """What :meth:`Transformer.forward` returns with ``return_cache=True`` (besides logits)."""

    attn: list      # per layer: attention pattern, (B, heads, T, T); rows sum to 1
    resid: list     # residual stream: after the embedding, then after each block, (B, T, C)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply rotary position embedding to ``x`` of shape (B, H, T, D) (pairs of halves)."""
    x1, x2 = x.chunk(2, dim=-1)                                   # (B, H, T, D/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    """Causal multi-head self-attention that returns its pattern."""

    def __init__(self, cfg: TransformerConfig, n_heads: int, layer: int = 0):
        super().__init__()
        self.n_heads, self.d_head = n_heads, cfg.d_model // n_heads
        self.pos = cfg.pos_encoding
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.drop = nn.Dropout(cfg.dropout)
        T = cfg.max_len
        idx = torch.arange(T)
        self.register_buffer("causal", idx[:, None] >= idx[None, :], persistent=False)  # (T, T)
        if self.pos == "relative":
            # one learned scalar per head and distance i - j = 0 .. max_len-1 (T5 / ALiBi style)
            self.rel_bias = nn.Parameter(torch.zeros(n_heads, T))
            dist = (idx[:, None] - idx[None, :]).clamp(min=0)
            self.register_buffer("dist", dist, persistent=False)  # (T, T)
        if self.pos == "rotary":
            inv_freq = 1.0 / 10000 ** (torch.arange(0, self.d_head, 2).float() / self.d_head)
            angles = idx.float()[:, None] * inv_freq[None, :]          # (T, D/2)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)
        if self.pos == "hard_alibi":
            # Hard-ALiBi (Jelassi et al., 2024): head h sees keys with i - j < window_h;
            # window 0 means the whole prefix, with no position information at all
            win = torch.tensor([w if w > 0 else T for w in cfg.windows[layer]])       # (H,)
            dist = idx[:, None] - idx[None, :]                                 # (T, T)
            self.register_buffer("window_ok", dist[None] < win[:, None, None],
                                 persistent=False)                             # (H, T, T)

    def forward(self, x: torch.Tensor, need_pattern: bool = True, override: dict | None = None,
                masked: tuple | None = None):
        """Attention output (B, T, C) and the pattern (B, H, T, T), or None if not needed.

        Without ``need_pattern`` the fused ``scaled_dot_product_attention`` kernel is used
        (about twice as fast on a CPU); both paths compute the same function. ``override``
        maps head -> replacement pattern (tensor or function of the head's pattern) and
        ``masked`` lists heads whose output is zeroed (see :meth:`Transformer.forward`).
        """
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)                          # (B, T, C) each
        q, k, v = (z.view(B, T, self.n_heads, self.d_head).transpose(1, 2) for z in (q, k, v))
        if self.pos == "rotary":                                       # (B, H, T, Dh)
            q, k = _rotate(q, self.cos[:T], self.sin[:T]), _rotate(k, self.cos[:T], self.sin[:T])
        bias = None                                                    # (H, T, T) or None
        if self.pos == "relative":
            bias = self.rel_bias[:, self.dist[:T, :T]]
        elif self.pos == "hard_alibi":
            bias = torch.zeros(self.window_ok.shape[0], T, T, device=x.device).masked_fill(
                ~self.window_ok[:, :T, :T], float("-inf"))
        if need_pattern or override or not _CHECK_INPUTS.get():  # (explicit under vmap too)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T, T)
            if bias is not None:
                scores = scores + bias
            scores = scores.masked_fill(~self.causal[:T, :T], float("-inf"))
            pattern = scores.softmax(dim=-1)                           # (B, H, T, T)
            if override:
                pattern = self._override(pattern, override)            # (B, H, T, T)
            y = self.drop(pattern) @ v                                 # (B, H, T, Dh)
        else:
            pattern = None
            p = self.drop.p if self.training else 0.0
            if bias is None:
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            else:
                mask = bias.masked_fill(~self.causal[:T, :T], float("-inf"))
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        if masked:
            keep = torch.ones(self.n_heads, 1, 1, dtype=y.dtype, device=y.device)
            keep[list(masked)] = 0.0
            y = y * keep                                               # (B, H, T, Dh)
        y = y.transpose(1, 2).reshape(B, T, C)                         # (B, T, C)
        return self.drop(self.out(y)), pattern

    def _override(self, pattern: torch.Tensor, override: dict) -> torch.Tensor:
        """``pattern`` (B, H, T, T) with the heads in ``override`` replaced (checked)."""
        B, H, T, _ = pattern.shape
        heads = list(pattern.unbind(1))                                # H x (B, T, T)
        for h, new in override.items():
            new = new(heads[h]) if callable(new) else new
            where = f"attn_override for head {h}"
            if not isinstance(new, torch.Tensor) or not new.is_floating_point():
                raise TypeError(f"{where} must be a floating-point tensor (or a function "
                                f"returning one), got {type(new).__name__}")
            if new.dim() not in (2, 3) or new.shape[-2:] != (T, T) or \
                    (new.dim() == 3 and new.shape[0] not in (1, B)):
                raise ValueError(f"{where} must have shape ({T}, {T}) or ({B}, {T}, {T}) for "
                                 f"this input, got {tuple(new.shape)}")
            new = new.to(pattern.device, pattern.dtype).expand(B, T, T)
            if _CHECK_INPUTS.get():
                if bool((new.detach().triu(diagonal=1) != 0).any()):
                    raise ValueError(f"{where} puts weight on future keys (it must be causal: "
                                     "zero above the diagonal)")
                if bool((new.detach() < 0).any()) or not torch.allclose(
                        new.detach().sum(-1), torch.ones((), dtype=new.dtype, device=new.device),
                        atol=1e-4):
                    raise ValueError(f"{where} must have non-negative rows that sum to 1")
            heads[h] = new
        return torch.stack(heads, dim=1)                               # (B, H, T, T)


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

    def forward(self, x: torch.Tensor, need_pattern: bool = True, override: dict | None = None,
                masked: tuple | None = None):
        a, pattern = self.attn(self.ln1(x), need_pattern, override, masked)
        x = x + a                                                      # (B, T, C)
        if self.mlp is not None:
            x = x + self.mlp(self.ln2(x))
        return x, pattern


class Transformer(nn.Module):
    """Decoder-only transformer: ``logits = model(idx)`` with ``idx`` of shape (B, T)."""

    def __init__(self, cfg: TransformerConfig | None = None, *, seed: int | None = None,
                 base: int | None = None, **overrides):
        """Build from ``cfg`` (or keyword overrides of a default config).  With ``seed`` the
        weights are drawn inside :func:`~seqtheory.utils.seeded` ``(seed, base=base)``: the
        same seed gives the same weights in any cell, and torch's global RNG is left as it
        was.  Without it they come from the global RNG (``seed_everything``)."""
        if seed is not None:
            with seeded(check_int("seed", seed, minimum=0), base=base):
                self.__init__(cfg, **overrides)
            return
        if base is not None:
            raise ValueError("base is the base seed of seed=...; pass seed as well")
        super().__init__()
        if cfg is None:
            cfg = TransformerConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a TransformerConfig or keyword overrides, not both")
        if not isinstance(cfg, TransformerConfig):
            raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model) if cfg.pos_encoding == "learned" \
            else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, h, i) for i, h in enumerate(cfg.heads))
        self.ln_f = nn.LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)
        if cfg.tie_weights:
            self.unembed.weight = self.tok_emb.weight                  # (V, C) shared

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self) -> int:
        """Number of trainable parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_input(self, idx: torch.Tensor) -> None:
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx must be a torch.Tensor of token ids, got {type(idx).__name__}")
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, seq_len), got {tuple(idx.shape)}")
        if idx.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"idx must hold integer token ids (int64), got {idx.dtype}")
        B, T = idx.shape
        if B < 1:
            raise ValueError(f"idx must hold at least one sequence, got shape {tuple(idx.shape)}")
        if not 1 <= T <= self.cfg.max_len:
            raise ValueError(f"sequence length must be in 1..max_len={self.cfg.max_len}, got {T}")
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self.cfg.vocab_size:
            raise ValueError(
                f"token ids must lie in 0..{self.cfg.vocab_size - 1}, got values in {lo}..{hi}"
            )

    def _check_embeds(self, embeds: torch.Tensor) -> None:
        if not isinstance(embeds, torch.Tensor) or not embeds.is_floating_point():
            raise TypeError("embeds must be a floating-point torch.Tensor of shape (B, T, d_model)")
        if embeds.dim() != 3 or embeds.shape[-1] != self.cfg.d_model:
            raise ValueError(
                f"embeds must have shape (batch, seq_len, d_model={self.cfg.d_model}), "
                f"got {tuple(embeds.shape)}"
            )
        if not 1 <= embeds.shape[1] <= self.cfg.max_len:
            raise ValueError(
                f"sequence length must be in 1..max_len={self.cfg.max_len}, got {embeds.shape[1]}"
            )

    def validate_input(self, idx: torch.Tensor | None = None, *,
                       embeds: torch.Tensor | None = None) -> None:
        """Raise a clear error unless exactly one of token ids / input vectors is valid."""
        if (idx is None) == (embeds is None):
            raise TypeError("give exactly one of idx (token ids) or embeds (input vectors)")
        if embeds is None:
            self._check_input(idx)
        else:
            self._check_embeds(embeds)

    def _interventions(self, head_mask, attn_override) -> tuple[list, list]:
        """Per-layer (override dict, masked heads) from the forward's arguments, checked."""
        n = self.cfg.n_layers
        overrides, masks = [{} for _ in range(n)], [set() for _ in range(n)]

        def layer_head(name, layer, head):
            layer = check_int(f"{name} layer", layer, minimum=0)
            if layer >= n:
                raise ValueError(f"{name} layer must be in 0..{n - 1}, got {layer}")
            head = check_int(f"{name} head", head, minimum=0)
            if head >= self.cfg.heads[layer]:
                raise ValueError(f"{name} head must be in 0..{self.cfg.heads[layer] - 1} for "
                                 f"layer {layer}, got {head}")
            return layer, head

        if head_mask is not None:
            if not isinstance(head_mask, dict):
                raise TypeError("head_mask must be a dict {layer: head or list of heads}, "
                                f"got {type(head_mask).__name__}")
            for layer, heads in head_mask.items():
                for head in heads if isinstance(heads, (list, tuple, set, range)) else (heads,):
                    lay, h = layer_head("head_mask", layer, head)
                    masks[lay].add(h)
        if attn_override is not None:
            if not isinstance(attn_override, dict):
                raise TypeError("attn_override must be a dict {(layer, head): pattern or "
                                f"function}}, got {type(attn_override).__name__}")
            for key, new in attn_override.items():
                if isinstance(key, tuple) and len(key) == 2:
                    keys = [layer_head("attn_override", *key)]
                elif isinstance(key, (int,)) and not isinstance(key, bool):
                    lay, _ = layer_head("attn_override", key, 0)
                    keys = [(lay, h) for h in range(self.cfg.heads[lay])]
                else:
                    raise TypeError("attn_override keys must be (layer, head) pairs or a "
                                    f"layer index, got {key!r}")
                if not (callable(new) or isinstance(new, torch.Tensor)):
                    raise TypeError("attn_override values must be tensors or functions, got "
                                    f"{type(new).__name__}")
                for lay, h in keys:
                    overrides[lay][h] = new
        return overrides, [tuple(sorted(m)) for m in masks]

    def forward(self, idx: torch.Tensor | None = None, return_cache: bool = False, *,
                embeds: torch.Tensor | None = None, head_mask: dict | None = None,
                attn_override: dict | None = None):
        """Next-token logits (B, T, vocab); with ``return_cache`` also a :class:`ForwardCache`.

        Instead of token ids, ``embeds`` (B, T, d_model) may be given: continuous inputs
        (e.g. points of R^D cut into tokens) that replace the token embedding.

        Interventions (both off by default): ``head_mask={layer: head or list of heads}``
        zeroes those heads' outputs; ``attn_override={(layer, head): pattern}`` (or
        ``{layer: pattern}`` for every head of a layer) replaces a head's attention pattern
        by a causal (T, T) or (B, T, T) tensor whose rows sum to 1, or by ``f(pattern)``
        for a function ``f`` of the head's own (B, T, T) pattern. Layers and heads count
        from 0; the cache then holds the patterns actually used.
        """
        if _CHECK_INPUTS.get():
            self.validate_input(idx, embeds=embeds)
        if head_mask is None and attn_override is None:
            overrides, masks = [None] * self.cfg.n_layers, [None] * self.cfg.n_layers
        else:
            overrides, masks = self._interventions(head_mask, attn_override)
        x = self.tok_emb(idx) if embeds is None else embeds            # (B, T, C)
        T = x.shape[1]
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[:T]                            # + (T, C)
        x = self.drop(x)
        attn, resid = [], [x]
        for block, override, mask in zip(self.blocks, overrides, masks, strict=True):
            x, pattern = block(x, return_cache, override, mask)
            attn.append(pattern)                                       # (B, H, T, T)
            resid.append(x)                                            # (B, T, C)
        logits = self.unembed(self.ln_f(x))                            # (B, T, V)
        if return_cache:
            return logits, ForwardCache(attn=attn, resid=resid)
        return logits

    @torch.no_grad()
    def predict_proba(self, idx: torch.Tensor) -> torch.Tensor:
        """Next-token distributions (B, T, vocab), computed in eval mode without gradients."""
        was_training = self.training
        self.eval()
        try:
            return self(idx).softmax(dim=-1)
        finally:
            self.train(was_training)

    @torch.no_grad()
    def attention_patterns(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's attention pattern, a list of (B, heads, T, T) tensors (eval mode)."""
        was_training = self.training
        self.eval()
        try:
            return self(idx, return_cache=True)[1].attn
        finally:
            self.train(was_training)


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
    if not isinstance(pattern, torch.Tensor) or pattern.dim() < 2 \
            or pattern.shape[-1] != pattern.shape[-2]:
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
    near = torch.stack([pattern.diagonal(offset=-o, dim1=-2, dim2=-1)[..., max_offset - o:]
                        for o in range(max_offset + 1)], dim=-1)       # (..., T - max_o, O)
    rest = 1.0 - near.sum(-1, keepdim=True)                            # (..., T - max_o, 1)
    return torch.cat([near, rest], dim=-1).mean(dim=-2)                 # (..., O + 1)


def uniform_causal_pattern(T: int) -> torch.Tensor:
    """The (T, T) pattern that spreads each query's weight evenly over keys 0..t."""
    T = check_int("T", T, minimum=1)
    return torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]    # (T, T)


def attention_without_offset(pattern: torch.Tensor, offset: int) -> torch.Tensor:
    """``pattern`` (..., T, T) with the weight on key ``t - offset`` removed and each row
    renormalised (a row whose whole weight was there is left as it was).

    An ablation for ``attn_override``: ``{(0, 0): lambda p: attention_without_offset(p, 1)}``
    takes a head's previous-token attention away and keeps the rest of its pattern.
    """
    T = _check_pattern(pattern)
    offset = _check_offset("offset", offset, T)
    idx = torch.arange(T, device=pattern.device)
    rest = pattern * (idx[:, None] - idx[None, :] != offset)            # (..., T, T)
    total = rest.sum(-1, keepdim=True)                                  # (..., T, 1)
    return torch.where(total > 0, rest / total.clamp_min(1e-30), pattern)


def greedy_decode(model: nn.Module, prompt: torch.Tensor, steps: int, *,
                  stop: int | None = None) -> torch.Tensor:
    """Greedy continuation of ``prompt`` (..., T) by up to ``steps`` tokens: (..., steps').

    ``model`` maps token ids (..., T) to logits (..., T, vocab) -- a :class:`Transformer`
    on (B, T), a :class:`~seqtheory.chain_of_thought.NextTokenNet` on (M, B, T).
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
        for _ in range(steps):                       # generation is sequential by nature
            nxt = last(seqs).argmax(dim=-1, keepdim=True)                   # (..., 1)
            seqs = torch.cat([seqs, nxt], dim=-1)
            if stop is not None:
                done |= nxt[..., 0] == stop
                if bool(done.all()):
                    break
    return seqs[..., prompt.shape[-1]:]

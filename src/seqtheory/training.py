"""One training loop for next-token models, fed by a batch-sampling function.

Data is generated on the fly: ``batch_fn(step)`` returns ``(inputs, targets)`` for that step
(targets equal to ``ignore_index`` are left out of the loss).  The loop runs AdamW with an
optional warm-up/cosine schedule, evaluates every ``eval_every`` steps, keeps copies of the
weights at chosen steps (for animations), and records everything in a :class:`History`.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .ensemble import Ensemble, ensemble_loss
from .models import _CHECK_INPUTS, unchecked_inputs
from .utils import (
    check_choice,
    check_float,
    check_int,
    dataclass_replace,
    progress_bar,
    smoke_steps,
)

__all__ = [
    "History", "TrainConfig", "copy_state", "load_snapshot", "lr_at", "next_token_loss", "train",
]

IGNORE_INDEX = -100
SCHEDULES = ("constant", "cosine", "linear")


@dataclass
class TrainConfig:
    """Optimiser and loop settings for :func:`train`."""

    steps: int = 1000             # number of optimisation steps
    lr: float = 1e-3              # peak learning rate of AdamW
    weight_decay: float = 0.0     # AdamW's decoupled weight decay
    betas: tuple = (0.9, 0.999)   # AdamW's moment coefficients
    warmup: int = 0               # steps of linear warm-up from 0 to lr
    schedule: str = "constant"    # after warm-up: "constant" | "cosine" | "linear" decay to 0
    grad_clip: float | None = 1.0  # clip the global gradient norm (None: no clipping)
    eval_every: int = 100         # call eval_fn every this many steps (and at the end)
    snapshot_steps: tuple = ()    # steps at which to keep a copy of the weights (0 = init)
    optimizer: str = "adamw"      # "adamw" | "sgd" (plain SGD, for closed-form models)
    decay: str = "all"            # weight decay on "all" parameters, or only on the weights
    #                               of nn.Linear layers ("linear", minGPT's rule)
    precision: str = "fp32"       # "fp32", or "bf16": forward pass and loss under
    #                               torch.autocast(bfloat16) (weights, gradients and AdamW
    #                               stay fp32); for GPU runs, off by default

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_float("weight_decay", self.weight_decay, low=0.0)
        check_int("warmup", self.warmup, minimum=0)
        if self.warmup > self.steps:
            raise ValueError(f"warmup ({self.warmup}) must not exceed steps ({self.steps}): the "
                             "learning rate would never reach lr")
        if not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {self.betas!r}")
        for i, b in enumerate(self.betas):
            check_float(f"betas[{i}]", b, low=0.0, high=1.0, high_open=True)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("optimizer", self.optimizer, ("adamw", "sgd"))
        check_choice("decay", self.decay, ("all", "linear"))
        check_choice("precision", self.precision, ("fp32", "bf16"))
        check_int("eval_every", self.eval_every, minimum=1)
        if self.grad_clip is not None:
            check_float("grad_clip", self.grad_clip, low=0.0, low_open=True)
        for s in self.snapshot_steps:
            check_int("snapshot step", s, minimum=0)
            if s > self.steps:
                raise ValueError(f"snapshot step {s} is beyond steps={self.steps}")


@dataclass
class History:
    """What happened during training: per-step loss, evaluations and weight snapshots."""

    steps: list = field(default_factory=list)       # 1..N, one entry per optimisation step
    loss: list = field(default_factory=list)        # training loss at each step (nats);
    #                                                 for an Ensemble the mean over members
    member_loss: list = field(default_factory=list)  # Ensemble only: (M,) losses per step
    lr: list = field(default_factory=list)          # learning rate used at each step
    evals: list = field(default_factory=list)       # dicts {"step": s, metric: value, ...}
    snapshots: dict = field(default_factory=dict)   # step -> state_dict (CPU copies)
    seconds: float = 0.0                            # wall-clock time of the loop

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of an evaluated metric, as NumPy arrays.

        For an :class:`~seqtheory.ensemble.Ensemble` ``values`` has shape (evals, M).
        """
        rows = [e for e in self.evals if name in e]
        if not rows:
            known = sorted({k for e in self.evals for k in e} - {"step"})
            raise KeyError(f"no metric {name!r} was recorded; recorded metrics: {known}")
        return np.array([e["step"] for e in rows]), np.array([e[name] for e in rows], float)

    @property
    def metric_names(self) -> list[str]:
        """Names of the evaluated metrics, in first-seen order."""
        names: list[str] = []
        for e in self.evals:
            names += [k for k in e if k != "step" and k not in names]
        return names

    def final(self, name: str):
        """Last recorded value of an evaluated metric (an (M,) array for an Ensemble)."""
        last = self.metric(name)[1][-1]
        return float(last) if np.ndim(last) == 0 else last

    def losses(self) -> np.ndarray:
        """Training losses as an array: (steps,) or, for an Ensemble, (steps, M)."""
        return np.array(self.member_loss if self.member_loss else self.loss, dtype=float)


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) over all positions whose target is not ``-100``.

    ``logits`` (..., T, V) and ``targets`` (..., T) of token ids in 0..V-1 (or -100)."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"targets must have the shape of logits without its last dimension "
                         f"{tuple(logits.shape[:-1])}, got {tuple(targets.shape)}")
    V = logits.shape[-1]
    if _CHECK_INPUTS.get() and targets.numel():     # off after the first step on a GPU
        bad = (targets != IGNORE_INDEX) & ((targets < 0) | (targets >= V))
        if bool(bad.any()):
            raise ValueError(f"targets must be token ids in 0..{V - 1} (or {IGNORE_INDEX}: "
                             f"no target), got {int(targets[bad][0])}")
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX
    )


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate used at optimisation ``step`` (1-based) under ``cfg``'s schedule."""
    if cfg.warmup and step <= cfg.warmup:
        return cfg.lr * step / cfg.warmup
    if cfg.schedule == "constant":
        return cfg.lr
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    if cfg.schedule == "cosine":
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * frac))
    return cfg.lr * (1 - frac)


def copy_state(model: nn.Module) -> dict:
    """A detached CPU copy of ``model.state_dict()`` (what a snapshot stores)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def train(
    model: nn.Module,
    batch_fn: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    cfg: TrainConfig | None = None,
    *,
    eval_fn: Callable[[nn.Module, int], dict] | None = None,
    callbacks: Iterable[Callable[[int, nn.Module, float], bool | None]] = (),
    stop_when: Callable[[dict], bool] | None = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = next_token_loss,
    progress: bool = True,
    desc: str = "training",
    **overrides,
) -> History:
    """Train ``model`` on batches from ``batch_fn(step)`` and return its :class:`History`.

    ``eval_fn(model, step) -> {name: value}`` runs in eval mode without gradients every
    ``cfg.eval_every`` steps, at step 0 and at the end.

    ``model`` may be an :class:`~seqtheory.ensemble.Ensemble` (several seeds as one batched
    program): ``batch_fn`` then returns inputs (M, B, ...) and targets (M, B, ...) (or
    shared (B, ...) targets), each member's loss is its own mean, gradients are clipped
    per member, ``eval_fn`` returns M values per metric (see ``member_eval``), and a
    callback's ``loss`` is the (M,) array of member losses.  Each callback is called after every
    step as ``callback(step, model, loss)``; returning ``True`` stops training early.
    ``stop_when(row)`` is called with each evaluation's row ``{"step": s, metric: value}``
    after step 0; returning ``True`` stops training there (e.g. once every network is solved).

    Other batched models (several networks in one module, not an ``Ensemble``): ``loss_fn``
    may return an (M,) vector of per-network losses.  The loop then steps on their sum (each
    network gets its own gradient), records them in ``History.member_loss`` like an
    Ensemble's, and needs ``grad_clip=None`` (one global clip would couple the networks).
    Metrics may be arrays of any fixed shape (e.g. one accuracy per network); they are
    stored as NumPy arrays, scalars as floats.

    Devices: training runs where ``model``'s parameters are (move the model first); batches
    from the CPU are moved there.  Off the CPU the loop does not wait for the GPU at every
    step: step losses are copied to the host at evaluations (a non-finite loss raises there),
    and a callback's ``loss`` is the detached 0-d (or (M,)) tensor on the device (``float()``
    it if you need the number, which waits for the GPU).
    Keyword ``overrides`` change fields of ``cfg`` (or of a default :class:`TrainConfig`).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(batch_fn):
        raise TypeError("batch_fn must be callable as batch_fn(step) -> (inputs, targets)")
    cfg = TrainConfig(**overrides) if cfg is None else dataclass_replace(cfg, **overrides)
    is_ensemble = isinstance(model, Ensemble)
    callbacks = list(callbacks)
    params = [p for p in model.parameters() if p.requires_grad]
    groups = _decay_groups(model, params, cfg, is_ensemble)
    device = params[0].device if params else torch.device("cpu")
    on_cpu = device.type == "cpu"
    if cfg.optimizer == "adamw":
        # the fused kernel on a GPU: one launch per step instead of one per tensor
        opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas,
                                **({} if on_cpu else {"fused": True}))
    else:
        opt = torch.optim.SGD(groups, lr=cfg.lr)
    hist = History()
    snap_at = set(cfg.snapshot_steps)
    bf16 = cfg.precision == "bf16"
    smoke = smoke_steps()

    if stop_when is not None and not callable(stop_when):
        raise TypeError("stop_when must be callable as stop_when(row) -> bool")

    def evaluate(step: int) -> dict | None:
        if eval_fn is None:
            return None
        was_training = model.training
        model.eval()
        with torch.no_grad():
            metrics = eval_fn(model, step)
        model.train(was_training)
        if not isinstance(metrics, dict):
            raise TypeError(f"eval_fn must return a dict of metrics, got {type(metrics).__name__}")
        if is_ensemble:
            row = {k: np.asarray(v, dtype=float).reshape(-1) for k, v in metrics.items()}
            bad = [k for k, v in row.items() if v.shape != (model.num_members,)]
            if bad:
                raise ValueError(f"eval_fn of an Ensemble must return {model.num_members} "
                                 f"values per metric (see member_eval); wrong: {bad}")
        else:
            row = {k: _metric_value(v) for k, v in metrics.items()}
        hist.evals.append({"step": step, **row})
        return row

    pending: list[torch.Tensor] = []     # off the CPU: step losses not yet copied to the host

    def flush() -> None:
        """Copy the pending step losses to the host (one synchronisation) and check them."""
        if not pending:
            return
        # a copy: rows must not keep the torch tensor alive (~4.7 kB a step otherwise)
        values = torch.stack(pending).cpu().numpy().copy()
        pending.clear()
        for row in values:
            if np.ndim(row):
                hist.member_loss.append(row.copy())
            value = float(np.mean(row))
            if not math.isfinite(value):
                step = hist.steps[len(hist.loss)]
                raise FloatingPointError(f"training loss became {value} at step {step}; lower lr")
            hist.loss.append(value)

    if 0 in snap_at:
        hist.snapshots[0] = copy_state(model)
    evaluate(0)
    model.train()
    start = time.perf_counter()
    bar = progress_bar(range(1, cfg.steps + 1), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        lr = lr_at(step, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        inputs, targets = batch_fn(step)
        if not on_cpu:                       # batches may come from the CPU: move them over
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
        # Off the CPU a model's token-range check (``int(idx.max())``) would make the host
        # wait for the device at every step: the first batch is checked, later batches of
        # the same batch_fn are not (on the CPU the check costs nothing and stays on).
        with (unchecked_inputs() if step > 1 and not on_cpu else contextlib.nullcontext()), \
                torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            outputs = model(inputs)
            if is_ensemble:
                member_losses = ensemble_loss(loss_fn, outputs, targets)        # (M,)
            else:
                member_losses = loss_fn(outputs, targets)       # () or (M,) per network
        member_losses = member_losses.float()          # fp32 under bf16 too (a no-op in fp32)
        if not is_ensemble:
            if member_losses.ndim > 1:
                raise ValueError("loss_fn must return a scalar or an (M,) vector of "
                                 f"per-network losses, got shape {tuple(member_losses.shape)}")
            if member_losses.ndim == 1 and cfg.grad_clip is not None:
                raise ValueError("loss_fn returned per-network losses: set grad_clip=None "
                                 "(one global clip would couple the networks) or use an "
                                 "Ensemble, which clips each member")
        per_member = is_ensemble or member_losses.ndim == 1
        loss = member_losses.sum() if per_member else member_losses
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip is not None:
            if is_ensemble:
                model.clip_grad_norm_(cfg.grad_clip)
            else:
                nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        hist.steps.append(step)
        hist.lr.append(lr)
        shown_loss = (member_losses if per_member else loss).detach()
        pending.append(shown_loss)
        if on_cpu:                 # off the CPU the host waits for the losses only at evaluations
            flush()
            shown_loss = hist.member_loss[-1] if per_member else hist.loss[-1]
        if step in snap_at:
            hist.snapshots[step] = copy_state(model)
        stop = any([cb(step, model, shown_loss) for cb in callbacks])  # call every callback
        if stop:
            bar.stop_note = "a callback stopped the run"
        elif smoke is not None and step >= smoke and step < cfg.steps:
            stop = True
            bar.stop_note = f"a smoke run (SEQTHEORY_SMOKE={smoke}) stops here"
            for later in snap_at - set(hist.snapshots):     # what readers of them expect
                hist.snapshots[later] = copy_state(model)
        if step % cfg.eval_every == 0 or step == cfg.steps or stop:
            flush()
            value = hist.loss[-1]
            row = evaluate(step)
            if stop_when is not None and row is not None and stop_when({"step": step, **row}):
                stop = True
                bar.stop_note = "its stop rule (stop_when) was met"
            if hist.evals:
                shown = {k: f"{np.median(v):.3f}" for k, v in list(hist.evals[-1].items())[1:4]}
                bar.set_postfix({"train loss": f"{value:.3f}", **shown}, refresh=False)
        if stop:
            bar.stopped_at = step  # the static bar's final line names the step the run ended
            break
    flush()
    bar.close()
    hist.seconds = time.perf_counter() - start
    return hist


def _metric_value(value):
    """A metric as stored in a History row: a float if it is a scalar, else a NumPy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _decay_groups(model: nn.Module, params: list, cfg: TrainConfig, is_ensemble: bool) -> list:
    """Optimiser parameter groups: weight decay on every parameter, or (``decay="linear"``)
    only on the weight matrices of ``nn.Linear`` layers, none on embeddings, norms, biases."""
    if cfg.decay == "all" or cfg.weight_decay == 0.0:
        return [{"params": params, "weight_decay": cfg.weight_decay}]
    if is_ensemble:                  # AdamW's decay is element-wise: per member as alone
        linear = {id(p) for p in model.stacked_linear_weights()}
    else:
        linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    decayed = [p for p in params if id(p) in linear]
    rest = [p for p in params if id(p) not in linear]
    return [{"params": decayed, "weight_decay": cfg.weight_decay},
            {"params": rest, "weight_decay": 0.0}]


def load_snapshot(model: nn.Module, hist: History, step: int) -> nn.Module:
    """Load the weights stored at ``step`` into ``model`` (in place) and return it."""
    if step not in hist.snapshots:
        raise KeyError(f"no snapshot at step {step}; available: {sorted(hist.snapshots)}")
    model.load_state_dict(hist.snapshots[step])
    return model


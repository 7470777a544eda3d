"""One training loop for next-token models, fed by a batch-sampling function.

Data is generated on the fly: ``batch_fn(step)`` returns ``(inputs, targets)`` for that step
(targets equal to ``ignore_index`` are left out of the loss).  :func:`train` runs AdamW (or
plain SGD) with an optional warm-up/cosine schedule, evaluates every ``eval_every`` steps,
keeps copies of the weights at chosen steps (for animations), and records everything in a
:class:`History`. It reads top to bottom, as nanoGPT's loop does: batch, forward, loss,
backward, clip, step, evaluate, stop.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .ensemble import Ensemble, ensemble_loss
from .models import checking_inputs, unchecked_inputs
from .runtime import evaluating, progress_bar
from .settings import settings
from .validate import check_choice, check_float, check_int, dataclass_replace

__all__ = [
    "History",
    "TrainConfig",
    "copy_state",
    "load_snapshot",
    "lr_at",
    "next_token_loss",
    "train",
]

IGNORE_INDEX = -100
SCHEDULES = ("constant", "cosine", "linear")


@dataclass
class TrainConfig:
    """Optimiser and loop settings for :func:`train`."""

    steps: int = 1000  # number of optimisation steps
    lr: float = 1e-3  # peak learning rate of AdamW
    weight_decay: float = 0.0  # AdamW's decoupled weight decay
    betas: tuple = (0.9, 0.999)  # AdamW's moment coefficients
    warmup: int = 0  # steps of linear warm-up from 0 to lr
    schedule: str = "constant"  # after warm-up: "constant" | "cosine" | "linear" decay to 0
    grad_clip: float | None = 1.0  # clip the global gradient norm (None: no clipping)
    eval_every: int = 100  # call eval_fn every this many steps (and at the end)
    snapshot_steps: tuple = ()  # steps at which to keep a copy of the weights (0 = init)
    optimizer: str = "adamw"  # "adamw" | "sgd" (plain SGD, for closed-form models)
    decay: str = "all"  # weight decay on "all" parameters, or only on the weights
    #                               of nn.Linear layers ("linear", minGPT's rule)
    precision: str = "fp32"  # "fp32", or "bf16": forward pass and loss under
    #                               torch.autocast(bfloat16) (weights, gradients and AdamW
    #                               stay fp32); for GPU runs, off by default

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_float("weight_decay", self.weight_decay, low=0.0)
        check_int("warmup", self.warmup, minimum=0)
        if self.warmup > self.steps:
            raise ValueError(
                f"warmup ({self.warmup}) must not exceed steps ({self.steps}): the "
                "learning rate would never reach lr"
            )
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

    steps: list = field(default_factory=list)  # 1..N, one entry per optimisation step
    loss: list = field(default_factory=list)  # training loss at each step (nats);
    #                                                 for M networks the mean over them
    member_loss: list = field(default_factory=list)  # M networks only: (M,) losses per step
    lr: list = field(default_factory=list)  # learning rate used at each step
    evals: list = field(default_factory=list)  # dicts {"step": s, metric: value, ...}
    snapshots: dict = field(default_factory=dict)  # step -> state_dict (CPU copies)
    seconds: float = 0.0  # wall-clock time of the loop

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of an evaluated metric, as NumPy arrays.

        For an :class:`~seqtheory.core.ensemble.Ensemble` ``values`` has shape (evals, M).
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

    def record_eval(self, step: int, metrics: dict, *, members: int | None = None) -> dict:
        """Append the evaluation row ``{"step": step, **metrics}``; return its metrics as stored.

        ``metrics`` is what an ``eval_fn`` returned: scalars are stored as floats, arrays
        (tensors on any device) as NumPy arrays.  With ``members`` (an Ensemble's M) every
        metric must hold M values and is stored as an (M,) array.
        """
        check_int("step", step, minimum=0)
        if not isinstance(metrics, dict):
            raise TypeError(f"eval_fn must return a dict of metrics, got {type(metrics).__name__}")
        if members is None:
            row = {k: _metric_value(v) for k, v in metrics.items()}
        else:
            check_int("members", members, minimum=1)
            row = {k: np.asarray(v, dtype=float).reshape(-1) for k, v in metrics.items()}
            bad = [k for k, v in row.items() if v.shape != (members,)]
            if bad:
                raise ValueError(
                    f"eval_fn of an Ensemble must return {members} values per "
                    f"metric (see member_eval); wrong: {bad}"
                )
        self.evals.append({"step": step, **row})
        return row

    def record_losses(self, losses: list) -> None:
        """Append the detached step losses ``losses`` (() or (M,) tensors, the steps after
        those already in ``loss``) to ``loss`` (and ``member_loss``): one copy to the host
        for all of them. A loss that is not finite raises ``FloatingPointError``."""
        if not losses:
            return
        # a copy: rows must not keep the torch tensor alive (~4.7 kB a step otherwise)
        values = torch.stack(losses).cpu().numpy().copy()
        for row in values:
            if np.ndim(row):
                self.member_loss.append(row.copy())
            value = float(np.mean(row))
            if not math.isfinite(value):
                step = self.steps[len(self.loss)] if len(self.steps) > len(self.loss) else "?"
                raise FloatingPointError(f"training loss became {value} at step {step}; lower lr")
            self.loss.append(value)
        losses.clear()


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) over all positions whose target is not ``-100``.

    ``logits`` (..., T, V) and ``targets`` (..., T) of token ids in 0..V-1 (or -100)."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"targets must have the shape of logits without its last dimension "
            f"{tuple(logits.shape[:-1])}, got {tuple(targets.shape)}"
        )
    V = logits.shape[-1]
    if checking_inputs() and targets.numel():  # off after the first step on a GPU
        bad = (targets != IGNORE_INDEX) & ((targets < 0) | (targets >= V))
        if bool(bad.any()):
            raise ValueError(
                f"targets must be token ids in 0..{V - 1} (or {IGNORE_INDEX}: "
                f"no target), got {int(targets[bad][0])}"
            )
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
    stop_when: Callable[[dict], bool] | None = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = next_token_loss,
    progress: bool = True,
    desc: str = "training",
    **overrides,
) -> History:
    """Train ``model`` on batches ``batch_fn(step)`` and return its :class:`History`.

    ``eval_fn(model, step) -> {name: value}`` runs in eval mode without gradients at step 0,
    every ``cfg.eval_every`` steps and at the last step (:meth:`History.record_eval`). After
    each evaluation but step 0's, ``stop_when(row)`` may end training by returning True;
    ``row`` is ``{"step": s, **metrics}`` with host values (floats, or (M,) arrays).
    ``overrides`` change fields of ``cfg``.

    Several networks train at once in two ways: an :class:`~seqtheory.core.ensemble.Ensemble`
    (each member's own loss; gradients clipped per member), or a module whose ``loss_fn``
    returns (M,) per-network losses (summed, so each network gets its own gradient;
    ``grad_clip`` must be None, since one global clip would couple the networks).

    On a GPU the step losses stay on the device until the next evaluation (one
    synchronisation), and only the first batch's token ids are range-checked (a check reads
    the values: a synchronisation per step). ``settings.max_steps`` (the book's smoke runs)
    caps the steps; the last weights then stand in for snapshots the loop did not reach
    (a run that ``stop_when`` ends keeps only the snapshots it reached).
    """
    cfg = _checked(model, batch_fn, loss_fn, stop_when, cfg, overrides)
    ensemble = isinstance(model, Ensemble)
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device if params else torch.device("cpu")
    on_gpu = device.type != "cpu"
    opt = _optimizer(model, params, cfg, device)
    # an Ensemble clips each member's gradient to its own norm; a module, all at once
    clip = model.clip_grad_norm_ if ensemble else partial(nn.utils.clip_grad_norm_, params)
    last = cfg.steps if settings.max_steps is None else min(cfg.steps, settings.max_steps)
    hist, pending = History(), []  # pending: step losses not yet copied to the host
    snapshot_at = set(cfg.snapshot_steps)
    if 0 in snapshot_at:
        hist.snapshots[0] = copy_state(model)
    _evaluate(model, eval_fn, 0, hist)
    model.train()
    start = time.perf_counter()
    bar = progress_bar(total=cfg.steps, desc=desc, disable=not progress, mininterval=0.5)
    bf16 = cfg.precision == "bf16"  # forward pass and loss under autocast to bfloat16
    for step in range(1, last + 1):
        lr = lr_at(step, cfg)  # warm-up, then the schedule
        for group in opt.param_groups:
            group["lr"] = lr
        # batch, forward pass, loss; on a GPU only the first batch's ids are range-checked
        inputs, targets = (t.to(device, non_blocking=True) for t in batch_fn(step))
        skip_checks = unchecked_inputs() if on_gpu and step > 1 else contextlib.nullcontext()
        autocast = torch.autocast(device.type, torch.bfloat16) if bf16 else contextlib.nullcontext()
        with skip_checks, autocast:
            losses = _network_losses(loss_fn, model(inputs), targets, ensemble, cfg.grad_clip)
        # backward pass, clipping, update: a sum of per-network losses gives each its gradient
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # (a scalar's sum is itself)
        if cfg.grad_clip is not None:
            clip(cfg.grad_clip)
        opt.step()
        hist.steps.append(step)
        hist.lr.append(lr)
        pending.append(losses.detach())
        if step in snapshot_at:
            hist.snapshots[step] = copy_state(model)
        bar.update()
        eval_now = step % cfg.eval_every == 0 or step == last
        if not on_gpu or eval_now:  # on a GPU: one synchronisation per evaluation
            hist.record_losses(pending)
        if not eval_now:
            continue
        row = _evaluate(model, eval_fn, step, hist)
        # the progress display: training loss, medians of the first three metrics
        shown = {k: f"{np.median(v):.3f}" for k, v in list((row or {}).items())[:3]}
        shown = {"train loss": f"{hist.loss[-1]:.3f}", **shown}
        bar.set_postfix(shown, refresh=False)
        if stop_when is not None and row is not None and stop_when({"step": step, **row}):
            bar.set_postfix({**shown, "stopped": "stop_when"}, refresh=False)
            break
    if last < cfg.steps:  # capped by settings.max_steps: later snapshots get these weights
        for s in cfg.snapshot_steps:
            hist.snapshots.setdefault(s, copy_state(model))
    bar.close()
    hist.seconds = time.perf_counter() - start
    return hist


def _checked(model, batch_fn, loss_fn, stop_when, cfg, overrides: dict) -> TrainConfig:
    """:func:`train`'s configuration, once its arguments are checked."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for name, fn in (("batch_fn", batch_fn), ("loss_fn", loss_fn), ("stop_when", stop_when)):
        if not callable(fn) and (fn is not None or name != "stop_when"):
            raise TypeError(f"{name} must be callable (see train's docstring), got {fn!r}")
    return dataclass_replace(TrainConfig() if cfg is None else cfg, **overrides)


def _network_losses(loss_fn, outputs, targets, ensemble: bool, grad_clip) -> torch.Tensor:
    """The step's loss in fp32: () for one network, (M,) for M networks (an Ensemble's
    members through :func:`~seqtheory.core.ensemble.ensemble_loss`, or a ``loss_fn`` that
    returns one loss per network)."""
    losses = ensemble_loss(loss_fn, outputs, targets) if ensemble else loss_fn(outputs, targets)
    losses = losses.float()  # fp32 under bf16 too (a no-op in fp32)
    if losses.ndim > 1 or (losses.ndim == 1 and not ensemble and grad_clip is not None):
        raise ValueError(
            "loss_fn must return a scalar or an (M,) vector of per-network losses, and "
            "per-network losses need grad_clip=None (one global clip would couple the "
            f"networks) or an Ensemble; got shape {tuple(losses.shape)} with "
            f"grad_clip={grad_clip}"
        )
    return losses


def _optimizer(
    model: nn.Module, params: list, cfg: TrainConfig, device: torch.device
) -> torch.optim.Optimizer:
    """``cfg``'s optimiser. Weight decay on every parameter, or (``decay="linear"``, minGPT's
    rule) only on the weight matrices of ``nn.Linear`` layers. AdamW on a CUDA GPU is the
    fused kernel (one launch per step instead of one per tensor)."""
    groups = [{"params": params, "weight_decay": cfg.weight_decay}]
    if cfg.decay == "linear" and cfg.weight_decay != 0.0:
        if isinstance(model, Ensemble):  # AdamW's decay is element-wise: per member as alone
            linear = {id(p) for p in model.stacked_linear_weights()}
        else:
            linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
        groups = [
            {"params": [p for p in params if id(p) in linear], "weight_decay": cfg.weight_decay},
            {"params": [p for p in params if id(p) not in linear], "weight_decay": 0.0},
        ]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr)
    fused = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, **fused)


def _evaluate(model: nn.Module, eval_fn, step: int, hist: History) -> dict | None:
    """Run ``eval_fn`` in eval mode without gradients and record its row in ``hist``; the row
    (None without an ``eval_fn``)."""
    if eval_fn is None:
        return None
    with evaluating(model):
        metrics = eval_fn(model, step)
    members = model.num_members if isinstance(model, Ensemble) else None
    return hist.record_eval(step, metrics, members=members)


def _metric_value(value):
    """A metric as stored in a History row: a float if it is a scalar, else a NumPy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def load_snapshot(model: nn.Module, hist: History, step: int) -> nn.Module:
    """Load the weights stored at ``step`` into ``model`` (in place) and return it."""
    if step not in hist.snapshots:
        raise KeyError(f"no snapshot at step {step}; available: {sorted(hist.snapshots)}")
    model.load_state_dict(hist.snapshots[step])
    return model

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
from .runtime import evaluating, progress_bar, smoke_steps
from .validate import check_choice, check_float, check_int, dataclass_replace

__all__ = [
    "History",
    "HostLossBuffer",
    "LossReduction",
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
    #                                                 for an Ensemble the mean over members
    member_loss: list = field(default_factory=list)  # Ensemble only: (M,) losses per step
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


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) over all positions whose target is not ``-100``.

    ``logits`` (..., T, V) and ``targets`` (..., T) of token ids in 0..V-1 (or -100)."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"targets must have the shape of logits without its last dimension "
            f"{tuple(logits.shape[:-1])}, got {tuple(targets.shape)}"
        )
    V = logits.shape[-1]
    if _CHECK_INPUTS.get() and targets.numel():  # off after the first step on a GPU
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
    callbacks: Iterable[Callable[[int, nn.Module, float], bool | None]] = (),
    stop_when: Callable[[dict], bool] | None = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = next_token_loss,
    progress: bool = True,
    desc: str = "training",
    **overrides,
) -> History:
    """Train ``model`` on batches from ``batch_fn(step)`` and return its :class:`History`.

    ``eval_fn(model, step) -> {name: value}`` runs without gradients at step 0, every
    ``cfg.eval_every`` steps and at the end (:meth:`History.record_eval`).
    ``callback(step, model, loss)`` after every step (off the CPU ``loss`` is a device tensor)
    and ``stop_when(row)`` after each evaluation but step 0's stop training by returning True.
    Several networks train at once as an Ensemble or through (M,) losses
    (:class:`LossReduction`); off the CPU the losses reach the host at evaluations
    (:class:`HostLossBuffer`).  ``overrides`` change fields of ``cfg``."""
    cfg = _checked_config(model, batch_fn, stop_when, cfg, overrides)
    callbacks = list(callbacks)
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device if params else torch.device("cpu")
    opt = _optimizer(model, params, cfg, device)
    reduction = LossReduction(model, params, loss_fn, cfg.grad_clip)
    hist = History()
    losses = HostLossBuffer(hist, eager=device.type == "cpu")
    snap_at, smoke = set(cfg.snapshot_steps), smoke_steps()
    if 0 in snap_at:
        hist.snapshots[0] = copy_state(model)
    _evaluate(model, eval_fn, 0, hist)
    model.train()
    start = time.perf_counter()
    bar = progress_bar(range(1, cfg.steps + 1), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        lr = _set_lr(opt, step, cfg)
        recorded = _train_step(model, opt, reduction, batch_fn(step), step, cfg, device)
        hist.steps.append(step)
        hist.lr.append(lr)
        shown = losses.push(recorded, step)
        if step in snap_at:
            hist.snapshots[step] = copy_state(model)
        note = _callback_stop(callbacks, step, model, shown) or _smoke_stop(
            smoke, step, cfg.steps, hist, model, snap_at
        )
        if note or step % cfg.eval_every == 0 or step == cfg.steps:
            losses.flush()
            row = _evaluate(model, eval_fn, step, hist)
            note = _rule_stop(stop_when, step, row) or note
            _show_progress(bar, hist)
        if note:
            bar.stop_note, bar.stopped_at = note, step  # the static bar's final line says both
            break
    losses.flush()
    bar.close()
    hist.seconds = time.perf_counter() - start
    return hist


class LossReduction:
    """How :func:`train` turns a step's loss into the loss it steps on, clips the gradients
    and records the loss, for a given model and ``loss_fn``:

    * an :class:`~seqtheory.core.ensemble.Ensemble`: ``loss_fn`` per member
      (:func:`~seqtheory.core.ensemble.ensemble_loss`), the (M,) member losses summed (each member
      gets its own gradient), gradients clipped per member;
    * another module whose ``loss_fn`` returns (M,) per-network losses: summed likewise, and
      ``grad_clip`` must be None (one global clip would couple the networks);
    * a scalar loss: stepped on as it is, the global gradient norm clipped.

    The recorded loss is the detached () or (M,) loss in fp32.
    """

    def __init__(self, model: nn.Module, params: list, loss_fn: Callable, grad_clip: float | None):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(loss_fn):
            raise TypeError("loss_fn must be callable as loss_fn(outputs, targets) -> loss")
        if grad_clip is not None:
            check_float("grad_clip", grad_clip, low=0.0, low_open=True)
        self.model, self.params, self.loss_fn = model, list(params), loss_fn
        self.grad_clip = grad_clip
        self.ensemble = isinstance(model, Ensemble)

    def losses(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The step's loss from ``loss_fn``: () or (M,), one per network or member."""
        if self.ensemble:
            return ensemble_loss(self.loss_fn, outputs, targets)
        return self.loss_fn(outputs, targets)

    def reduce(self, losses: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss to step on, detached loss to record)`` from :meth:`losses`' result."""
        losses = losses.float()  # fp32 under bf16 too (a no-op in fp32)
        if not self.ensemble:
            if losses.ndim > 1:
                raise ValueError(
                    "loss_fn must return a scalar or an (M,) vector of "
                    f"per-network losses, got shape {tuple(losses.shape)}"
                )
            if losses.ndim == 1 and self.grad_clip is not None:
                raise ValueError(
                    "loss_fn returned per-network losses: set grad_clip=None "
                    "(one global clip would couple the networks) or use an "
                    "Ensemble, which clips each member"
                )
        per_member = self.ensemble or losses.ndim == 1
        return (losses.sum() if per_member else losses), losses.detach()

    def clip(self) -> None:
        """Clip the gradients in place (nothing with ``grad_clip=None``)."""
        if self.grad_clip is None:
            return
        if self.ensemble:
            self.model.clip_grad_norm_(self.grad_clip)
        else:
            nn.utils.clip_grad_norm_(self.params, self.grad_clip)


class HostLossBuffer:
    """Step losses on their way to a :class:`History` (``loss`` and ``member_loss``).

    With ``eager`` (training on the CPU) each loss is copied to the host as it is pushed.
    Otherwise the losses stay on the device until :meth:`flush` copies them all in one
    synchronisation (:func:`train` flushes at evaluations and at the end), so the host does
    not wait for the GPU at every step.  A non-finite loss raises ``FloatingPointError`` when
    it reaches the host.
    """

    def __init__(self, hist: History, *, eager: bool):
        if not isinstance(hist, History):
            raise TypeError(f"hist must be a History, got {type(hist).__name__}")
        self.hist, self.eager = hist, bool(eager)
        self.pending: list[torch.Tensor] = []  # losses not yet copied to the host
        self._steps: list[int] = []  # their steps

    def push(self, loss: torch.Tensor, step: int):
        """Add the detached loss (() or (M,)) of ``step``; return it as a callback sees it:
        the host value (a float, or the (M,) array) when eager, else the tensor itself."""
        self.pending.append(loss)
        self._steps.append(step)
        if not self.eager:
            return loss
        self.flush()
        return self.hist.member_loss[-1] if loss.ndim else self.hist.loss[-1]

    def flush(self) -> None:
        """Copy the pending losses to the host (one synchronisation), check and record them."""
        if not self.pending:
            return
        # a copy: rows must not keep the torch tensor alive (~4.7 kB a step otherwise)
        values = torch.stack(self.pending).cpu().numpy().copy()
        steps = list(self._steps)
        self.pending.clear()
        self._steps.clear()
        for row, step in zip(values, steps, strict=True):
            if np.ndim(row):
                self.hist.member_loss.append(row.copy())
            value = float(np.mean(row))
            if not math.isfinite(value):
                raise FloatingPointError(f"training loss became {value} at step {step}; lower lr")
            self.hist.loss.append(value)


def _checked_config(model, batch_fn, stop_when, cfg, overrides: dict) -> TrainConfig:
    """:func:`train`'s configuration, once its arguments are checked."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(batch_fn):
        raise TypeError("batch_fn must be callable as batch_fn(step) -> (inputs, targets)")
    cfg = TrainConfig(**overrides) if cfg is None else dataclass_replace(cfg, **overrides)
    if stop_when is not None and not callable(stop_when):
        raise TypeError("stop_when must be callable as stop_when(row) -> bool")
    return cfg


def _optimizer(
    model: nn.Module, params: list, cfg: TrainConfig, device: torch.device
) -> torch.optim.Optimizer:
    """``cfg``'s optimiser over :func:`_decay_groups`; AdamW off the CPU is the fused kernel
    (one launch per step instead of one per tensor)."""
    groups = _decay_groups(model, params, cfg, isinstance(model, Ensemble))
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr)
    return torch.optim.AdamW(
        groups, lr=cfg.lr, betas=cfg.betas, **({} if device.type == "cpu" else {"fused": True})
    )


def _set_lr(opt: torch.optim.Optimizer, step: int, cfg: TrainConfig) -> float:
    """Set the learning rate of ``step`` (:func:`lr_at`) in every group of ``opt``; return it."""
    lr = lr_at(step, cfg)
    for group in opt.param_groups:
        group["lr"] = lr
    return lr


def _train_step(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    reduction: LossReduction,
    batch: tuple,
    step: int,
    cfg: TrainConfig,
    device: torch.device,
) -> torch.Tensor:
    """One optimisation step on ``batch``: forward pass, loss, backward pass, clipping, update;
    the detached loss to record (:meth:`LossReduction.reduce`)."""
    inputs, targets = _to_device(batch, device)
    with _forward_context(step, device, bf16=cfg.precision == "bf16"):
        step_losses = reduction.losses(model(inputs), targets)
    loss, recorded = reduction.reduce(step_losses)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    reduction.clip()
    opt.step()
    return recorded


def _to_device(batch: tuple, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch ``(inputs, targets)`` on ``device`` (batches may come from the CPU)."""
    inputs, targets = batch
    if device.type == "cpu":
        return inputs, targets
    return inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)


@contextlib.contextmanager
def _forward_context(step: int, device: torch.device, bf16: bool):
    """The forward pass and loss of ``step``: under autocast to bfloat16 with ``bf16``.

    Off the CPU a model's token-range check (``int(idx.max())``) would make the host wait for
    the device at every step: the first batch is checked, later batches of the same batch_fn
    are not (on the CPU the check costs nothing and stays on).
    """
    checks = unchecked_inputs() if step > 1 and device.type != "cpu" else contextlib.nullcontext()
    with checks, torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        yield


def _evaluate(model: nn.Module, eval_fn, step: int, hist: History) -> dict | None:
    """Run ``eval_fn`` in eval mode without gradients and record its row in ``hist``; the row
    (None without an ``eval_fn``)."""
    if eval_fn is None:
        return None
    with evaluating(model):
        metrics = eval_fn(model, step)
    members = model.num_members if isinstance(model, Ensemble) else None
    return hist.record_eval(step, metrics, members=members)


def _callback_stop(callbacks: list, step: int, model: nn.Module, loss) -> str | None:
    """Why the run stops after ``step`` if a callback returns True (every callback is called)."""
    if any([cb(step, model, loss) for cb in callbacks]):
        return "a callback stopped the run"
    return None


def _smoke_stop(
    smoke: int | None, step: int, steps: int, hist: History, model: nn.Module, snap_at: set
) -> str | None:
    """Why a smoke run (:func:`~seqtheory.core.runtime.smoke_steps`) stops after ``step``; its
    weights then stand in for every snapshot still to come (what readers of them expect)."""
    if smoke is None or step < smoke or step >= steps:
        return None
    for later in snap_at - set(hist.snapshots):
        hist.snapshots[later] = copy_state(model)
    return f"a smoke run (SEQTHEORY_SMOKE={smoke}) stops here"


def _rule_stop(stop_when, step: int, row: dict | None) -> str | None:
    """Why the run stops at the evaluation ``row`` of ``step`` if ``stop_when`` says so."""
    if stop_when is not None and row is not None and stop_when({"step": step, **row}):
        return "its stop rule (stop_when) was met"
    return None


def _show_progress(bar, hist: History) -> None:
    """The bar's postfix: the last training loss and the medians of the first three metrics."""
    if hist.evals:
        shown = {k: f"{np.median(v):.3f}" for k, v in list(hist.evals[-1].items())[1:4]}
        bar.set_postfix({"train loss": f"{hist.loss[-1]:.3f}", **shown}, refresh=False)


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
    if is_ensemble:  # AdamW's decay is element-wise: per member as alone
        linear = {id(p) for p in model.stacked_linear_weights()}
    else:
        linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    decayed = [p for p in params if id(p) in linear]
    rest = [p for p in params if id(p) not in linear]
    return [
        {"params": decayed, "weight_decay": cfg.weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]


def load_snapshot(model: nn.Module, hist: History, step: int) -> nn.Module:
    """Load the weights stored at ``step`` into ``model`` (in place) and return it."""
    if step not in hist.snapshots:
        raise KeyError(f"no snapshot at step {step}; available: {sorted(hist.snapshots)}")
    model.load_state_dict(hist.snapshots[step])
    return model

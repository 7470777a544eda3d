"""How alike two learned representations are: CKA and model stitching.

* :func:`linear_cka` and :func:`debiased_cka` — centred kernel alignment with linear
  kernels (Kornblith et al., 2019), the debiased version using the unbiased HSIC
  estimator.
* :func:`stitch` — affine model stitching (Lenc & Vedaldi, 2015; Bansal et al., 2021):
  frozen embeddings of model A, a trainable affine map, the frozen decoder of model B
  (:class:`~seqtheory.kinship.KinshipModels`); ``kind="mlp"`` adds a small
  non-linear residual, :func:`stitch_restarts` retries from random starts,
  :func:`stitch_controls` runs the controls (B alone, another seed, random embeddings,
  a model of another graph), :func:`affine_r2` scores how affine a learned map is.
* :func:`pca_2d` — coordinates on two principal axes, for plotting embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .core.runtime import check_device, evaluating, to_numpy
from .core.seeds import make_generator
from .core.training import TrainConfig, train
from .core.validate import check_choice, check_int
from .kinship import KinshipModels, accuracy, per_model_loss
from .sources.knowledge_graphs import KinshipData

__all__ = [
    "STITCH_KINDS",
    "StitchResult",
    "affine_r2",
    "cka_across_seeds",
    "compare_models",
    "debiased_cka",
    "linear_cka",
    "pca_2d",
    "stitch",
    "stitch_controls",
    "stitch_restarts",
]


def _check_pair(X, Y) -> tuple[np.ndarray, np.ndarray]:
    """X and Y (tensors on any device, or arrays) as float64 arrays describing the same
    examples; a ValueError naming what is wrong otherwise."""
    X, Y = to_numpy(X).astype(np.float64), to_numpy(Y).astype(np.float64)
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"X and Y must be 2-D (examples, features), got {X.shape}, {Y.shape}")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"X and Y must describe the same examples: {X.shape[0]} rows vs {Y.shape[0]}"
        )
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ValueError("X and Y must be finite")
    return X, Y


def _check_not_constant(Xc: np.ndarray, Yc: np.ndarray) -> None:
    """CKA divides by the norms of the centred representations: refuse a constant one."""
    for name, M in (("X", Xc), ("Y", Yc)):
        if not np.any(M):
            raise ValueError(
                f"{name} is the same for every example (constant): CKA is undefined for it"
            )


def linear_cka(X, Y) -> float:
    """Linear CKA between representations X (n, p) and Y (n, q) of the same n examples.

    ``||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)`` with column-centred Xc, Yc.
    Invariant to orthogonal transforms and isotropic scaling, not to general linear maps.
    """
    X, Y = _check_pair(X, Y)
    X, Y = X - X.mean(0), Y - Y.mean(0)
    _check_not_constant(X, Y)
    cross = np.linalg.norm(Y.T @ X) ** 2
    return float(cross / (np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)))


def _unbiased_hsic(X: np.ndarray, Y: np.ndarray) -> float:
    """Unbiased HSIC estimator (Song et al., 2012) of the linear kernels K = XX^T and
    L = YY^T, up to a constant, computed from the features in O(n p q) without forming
    the n x n Gram matrices.  With zero-diagonal K~, L~:
    ``[tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2 1'K~L~1 / (n-2)] / (n(n-3))``."""
    n = X.shape[0]
    dk, dl = (X * X).sum(1), (Y * Y).sum(1)  # diagonals of K and L
    trace = np.linalg.norm(X.T @ Y) ** 2 - dk @ dl  # tr(K~ L~)
    k_rows = X @ X.sum(0) - dk  # K~ 1
    l_rows = Y @ Y.sum(0) - dl  # L~ 1
    term = (
        trace + k_rows.sum() * l_rows.sum() / ((n - 1) * (n - 2)) - 2 * (k_rows @ l_rows) / (n - 2)
    )
    return float(term / (n * (n - 3)))


def debiased_cka(X, Y) -> float:
    """Linear CKA with the unbiased HSIC estimator (less biased for few examples)."""
    X, Y = _check_pair(X, Y)
    if X.shape[0] < 4:
        raise ValueError(f"debiased CKA needs at least 4 examples, got {X.shape[0]}")
    _check_not_constant(X - X.mean(0), Y - Y.mean(0))
    return _unbiased_hsic(X, Y) / np.sqrt(_unbiased_hsic(X, X) * _unbiased_hsic(Y, Y))


def affine_r2(X, Y) -> float:
    """Fraction of the variance of Y (n, q) explained by the best affine function of X
    (n, p): 1 for an exactly affine relation, 0 when no affine map does better than the
    mean.  Applied to a stitch's input and output, it scores how *almost affine* the
    learned map is."""
    X, Y = _check_pair(X, Y)
    total = ((Y - Y.mean(0)) ** 2).sum()
    if total == 0:
        raise ValueError("Y must not be constant")
    A = np.hstack([X, np.ones((len(X), 1))])  # (n, p + 1)
    coef, *_ = np.linalg.lstsq(A, Y, rcond=None)  # best affine map
    return float(1 - ((Y - A @ coef) ** 2).sum() / total)


def pca_2d(X, basis_of=None) -> np.ndarray:
    """Coordinates of X (n, p) on the top two principal axes of ``basis_of`` (default X)."""
    X = to_numpy(X).astype(np.float64)
    B = X if basis_of is None else to_numpy(basis_of).astype(np.float64)
    if X.ndim != 2 or B.ndim != 2 or X.shape[1] != B.shape[1]:
        raise ValueError(f"X and basis_of must be 2-D with equal widths, got {X.shape}, {B.shape}")
    mean = B.mean(0)
    _, _, Vt = np.linalg.svd(B - mean, full_matrices=False)
    V = Vt[:2].T
    if V.shape[1] < 2:  # 1-D embeddings
        V = np.hstack([V, np.zeros((V.shape[0], 1))])
    return (X - mean) @ V


# --------------------------------------------------------------------------- stitching
@dataclass
class StitchResult:
    """Affine stitching of source embeddings into frozen target decoders, M at a time."""

    weight: torch.Tensor  # (M, d_source, d_target) the learned linear map
    bias: torch.Tensor  # (M, 1, d_target) its offset
    mapped: torch.Tensor  # (M, n, d_target) source embeddings after the map
    train_acc: np.ndarray  # (M,) stitched accuracy on the training pairs
    test_acc: np.ndarray  # (M,) stitched accuracy on the held-out facts
    loss: np.ndarray  # (M,) final training cross-entropy (nats)


def _as_embeddings(source) -> torch.Tensor:
    """(M, n, D) float tensor from one (n, d) array, an (M, n, d) array, or a list of
    (n, d_m) arrays of different widths (zero-padded to the widest)."""

    def as_t(x):
        return torch.as_tensor(to_numpy(x), dtype=torch.float32)

    if isinstance(source, (list, tuple)):
        parts = [as_t(x) for x in source]
        if not parts or any(p.ndim != 2 for p in parts):
            raise ValueError("a list of sources must hold 2-D (n, d) embeddings")
        if len({p.shape[0] for p in parts}) != 1:
            raise ValueError(
                f"sources embed different numbers of people: {[p.shape[0] for p in parts]}"
            )
        D = max(p.shape[1] for p in parts)
        return torch.stack([F.pad(p, (0, D - p.shape[1])) for p in parts])
    src = as_t(source)
    if src.ndim == 2:
        src = src[None]
    if src.ndim != 3:
        raise ValueError(
            f"source must be (n, d), (M, n, d) or a list of (n, d_m); got shape {tuple(src.shape)}"
        )
    return src


_LSTSQ_RCOND = 1e-10  # singular values below this fraction of the largest count as 0


def _lstsq_start(source: torch.Tensor, goal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Minimum-norm least-squares affine map ``source[m] W + c ~ goal[m]`` per model:
    weight (M, d_in, d_out) and bias (M, 1, d_out), float32.

    Solved in float64, one model at a time, on the source's non-zero columns only (the
    zero padding of narrower sources gets weight 0), with the SVD driver ``gelsd`` and an
    explicit ``rcond``.  Not the default ``gelsy``: PyTorch's CPU ``gelsy`` leaves its
    column-pivot array uninitialised, so on rank-deficient inputs (every zero-padded
    source) its answer depends on stale memory and changes from call to call
    (pytorch/pytorch#71222, #187411)."""
    M, n, d_in = source.shape
    d_out = goal.shape[2]
    weight = torch.zeros(M, d_in, d_out, dtype=torch.float64)
    bias = torch.zeros(M, 1, d_out, dtype=torch.float64)
    ones = torch.ones(n, 1, dtype=torch.float64)
    for m in range(M):
        X = source[m].double()
        cols = (X != 0).any(0).nonzero().flatten()  # the real columns
        A = torch.cat([X[:, cols], ones], 1)  # (n, d_m + 1)
        coef = torch.linalg.lstsq(
            A, goal[m].double(), rcond=_LSTSQ_RCOND, driver="gelsd"
        ).solution  # (d_m + 1, d_out)
        weight[m, cols] = coef[:-1]
        bias[m] = coef[-1:]
    return weight.float(), bias.float()


class _AffineStitch(nn.Module):
    """``e -> e W + c`` (affine) or ``e -> e W + c + relu(e W_1 + b_1) W_2`` ("mlp": an
    affine map plus a one-hidden-layer residual, whose output layer starts at zero).
    The start is computed on the CPU (the same on every device); move the module after."""

    def __init__(
        self,
        source: torch.Tensor,
        target: KinshipModels,
        init: str,
        kind: str = "affine",
        hidden: int = 32,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.target, self.kind = target, kind
        self.register_buffer("source", source)  # (M, n, d_source)
        M, n, d_in = source.shape
        goal = target.embed.detach().cpu()  # (M, n, d_target)
        d_out = goal.shape[2]
        g = make_generator(seed)
        if init == "lstsq":  # least-squares affine match of the two embeddings
            weight, bias = _lstsq_start(source, goal)
        elif init == "random":  # a random map, scaled to the target's spread
            scale = (
                goal.std(1, keepdim=True) / source.std(1).norm(dim=1).clamp_min(1e-8)[:, None, None]
            )  # (M, 1, d_target)
            weight = torch.randn(M, d_in, d_out, generator=g) * scale
            bias = goal.mean(1, keepdim=True)
        else:  # zero map: everybody starts at the mean person
            weight, bias = torch.zeros(M, d_in, d_out), goal.mean(1, keepdim=True)
        self.weight = nn.Parameter(weight.clone())
        self.bias = nn.Parameter(bias.clone())
        if kind == "mlp":
            self.w_1 = nn.Parameter(
                torch.randn(M, d_in, hidden, generator=g) / np.sqrt(max(d_in, 1))
            )
            self.b_1 = nn.Parameter(torch.zeros(M, 1, hidden))
            self.w_2 = nn.Parameter(torch.zeros(M, hidden, d_out))

    def mapped(self) -> torch.Tensor:
        out = torch.baddbmm(self.bias, self.source, self.weight)  # (M, n, d_target)
        if self.kind == "mlp":
            out = out + torch.relu(torch.baddbmm(self.b_1, self.source, self.w_1)) @ self.w_2
        return out

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.target(pairs, self.mapped())


def _stitch_pair(source, target, data) -> tuple[torch.Tensor, KinshipModels]:
    """:func:`stitch`'s sources (M, n, d) and target models checked against each other and
    ``data``; a single target model is repeated for M > 1 sources."""
    if not isinstance(target, KinshipModels):
        raise TypeError(f"target must be KinshipModels, got {type(target).__name__}")
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    src = _as_embeddings(source)
    if not bool(torch.isfinite(src).all()):
        raise ValueError("source embeddings must be finite (got NaN or inf)")
    if src.shape[1] != data.n_people:
        raise ValueError(f"source embeds {src.shape[1]} people, the data has {data.n_people}")
    if target.n_models == 1 and src.shape[0] > 1:
        target = target.select([0] * src.shape[0])
    if target.n_models != src.shape[0]:
        raise ValueError(f"{src.shape[0]} sources but {target.n_models} target models")
    return src, target


def _stitch_result(model: _AffineStitch, data: KinshipData) -> StitchResult:
    """The trained maps of ``model`` and their scores on ``data`` (on the model's device),
    as a :class:`StitchResult` on the CPU."""
    pairs, labels = data.select("train")  # (P, 2), (P,)
    with evaluating(model):
        mapped = model.mapped()  # (M, n, d_target)
        logits = model.target(pairs, mapped)  # (M, P, K) train pairs
        loss = to_numpy(per_model_loss(logits, labels))
        train_acc = to_numpy((logits.argmax(-1) == labels).double().mean(1))
    test_acc = accuracy(model.target, data, "test_facts", mapped)
    return StitchResult(
        model.weight.detach().cpu(),
        model.bias.detach().cpu(),
        mapped.cpu(),
        train_acc,
        test_acc,
        loss,
    )


STITCH_KINDS = ("affine", "mlp")


def stitch(
    source,
    target: KinshipModels,
    data: KinshipData,
    *,
    steps: int = 300,
    lr: float = 1e-2,
    init: str = "lstsq",
    kind: str = "affine",
    hidden: int = 32,
    seed: int = 0,
    device=None,
    progress: bool = False,
) -> StitchResult:
    """Stitch embeddings ``source`` (n, d) or (M, n, d) into ``target``'s frozen decoders
    through a trainable map each, trained on the training pairs of ``data``.

    ``kind="affine"`` trains ``e -> e W + c``; ``kind="mlp"`` adds a residual
    ``relu(e W_1 + b_1) W_2`` of width ``hidden`` (starting at zero, so at the affine start).
    ``init="lstsq"`` starts the affine part at the least-squares affine match of the source
    to the target's own embeddings (the same start for real models and for controls);
    ``init="random"`` at a random map drawn from ``seed`` (for restarts); ``init="zero"``
    with every person at the target's mean embedding.  ``target`` holds M models (or one,
    reused for every source).  The maps train through :func:`~seqtheory.core.training.train`
    (one loss per map) on ``device`` (None: where ``target`` is); the result is on the
    CPU."""
    check_choice("init", init, ("lstsq", "random", "zero"))
    check_choice("kind", kind, STITCH_KINDS)
    hidden = check_int("hidden", hidden, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    src, target = _stitch_pair(source, target, data)
    device = target.mask.device if device is None else check_device("device", device)
    target = target.select(list(range(target.n_models)))  # frozen copy
    model = _AffineStitch(src, target, init, kind, hidden, seed).to(device)
    data = data.to(device)  # moved once
    pairs, labels = data.select("train")  # (P, 2), (P,)
    train(
        model,
        lambda step: (pairs, labels),
        TrainConfig(steps=steps, lr=lr, grad_clip=None, eval_every=steps),
        loss_fn=per_model_loss,
        progress=progress,
        desc="stitching",
    )
    return _stitch_result(model, data)


def stitch_restarts(
    source,
    target: KinshipModels,
    data: KinshipData,
    *,
    restarts: int = 4,
    steps: int = 300,
    seed: int = 0,
    **kw,
) -> StitchResult:
    """Affine stitching from ``restarts`` random starts (and the least-squares start) per
    source; keeps, per source, the run with the lowest final *training* loss, so the
    held-out pairs play no part in the choice.  Arguments as for :func:`stitch`."""
    restarts = check_int("restarts", restarts, minimum=1)
    src = _as_embeddings(source)
    M = src.shape[0]
    if not isinstance(target, KinshipModels):
        raise TypeError(f"target must be KinshipModels, got {type(target).__name__}")
    if target.n_models == 1 and M > 1:
        target = target.select([0] * M)
    runs = [stitch(src, target, data, steps=steps, init="lstsq", **kw)]
    big = stitch(
        src.repeat(restarts, 1, 1),
        target.select(list(range(target.n_models)) * restarts),
        data,
        steps=steps,
        init="random",
        seed=seed,
        **kw,
    )
    for r in range(restarts):
        sl = slice(r * M, (r + 1) * M)
        runs.append(
            StitchResult(
                big.weight[sl],
                big.bias[sl],
                big.mapped[sl],
                big.train_acc[sl],
                big.test_acc[sl],
                big.loss[sl],
            )
        )
    best = np.stack([r.loss for r in runs]).argmin(0)  # (M,) run per source
    idx = torch.from_numpy(best)
    rows = torch.arange(M)

    def pick(name):  # field of the best runs
        stacked = [torch.as_tensor(getattr(r, name)) for r in runs]
        return torch.stack(stacked)[idx, rows]

    return StitchResult(
        pick("weight"),
        pick("bias"),
        pick("mapped"),
        pick("train_acc").numpy(),
        pick("test_acc").numpy(),
        pick("loss").numpy(),
    )


# --------------------------------------------------------------------------- analyses
def stitch_controls(
    models: KinshipModels,
    data: KinshipData,
    other_graph: KinshipModels | None = None,
    *,
    seed: int = 0,
    base: int | None = None,
    steps: int = 300,
    device=None,
) -> dict:
    """Held-out accuracy of every model in ``models`` (as the target B) when its decoder
    reads embeddings from: itself (the unstitched baseline, "own"); another seed of the
    same size ("across seeds", the next seed in ``models``); random Gaussian embeddings
    of the same size ("random"); and, if given, the model of the same size trained on a
    *different graph* ("other graph").  The random embeddings come from
    ``make_generator(seed, base=base)``; the maps train on ``device`` (None: where
    ``models`` are).
    Returns ``{name: (M,) array}``."""
    idx = {}
    for m, d in enumerate(models.dims):
        idx.setdefault(d, []).append(m)
    partner = [0] * models.n_models
    for group in idx.values():
        for k, m in enumerate(group):
            partner[m] = group[(k + 1) % len(group)]
    g = make_generator(seed, base=base)
    out = {
        "own": accuracy(models, data),
        "across seeds": stitch(
            [models.embedding(p) for p in partner], models, data, steps=steps, device=device
        ).test_acc,
        "random": stitch(
            [torch.randn(data.n_people, d, generator=g) / np.sqrt(d) for d in models.dims],
            models,
            data,
            steps=steps,
            device=device,
        ).test_acc,
    }
    if other_graph is not None:
        src = [other_graph.embedding(other_graph.dims.index(d)) for d in models.dims]
        out["other graph"] = stitch(src, models, data, steps=steps, device=device).test_acc
    return out


def cka_across_seeds(models: KinshipModels, debiased: bool = True) -> dict:
    """CKA between the embeddings of every pair of seeds of each size:
    ``{d: (pairs,) array}``, pairs (a, b) with a before b in ``models``' order."""
    if not isinstance(models, KinshipModels):
        raise TypeError(f"models must be KinshipModels, got {type(models).__name__}")
    cka = debiased_cka if debiased else linear_cka
    out = {}
    for d in dict.fromkeys(models.dims):
        ms = [m for m, dm in enumerate(models.dims) if dm == d]
        out[d] = np.array(
            [
                cka(models.embedding(a), models.embedding(b))
                for i, a in enumerate(ms)
                for b in ms[i + 1 :]
            ]
        )
    return out


def compare_models(
    source: KinshipModels,
    i: int,
    target: KinshipModels,
    j: int,
    data: KinshipData,
    steps: int = 300,
    device=None,
) -> dict:
    """Everything the chapter's explorer shows for "model i of ``source`` -> model j of
    ``target``": linear and debiased CKA of the two embeddings, B's own held-out
    accuracy, the stitched held-out and training accuracy, and A's embedding after the
    learned map (n, d_B)."""
    Ea, Eb = source.embedding(i), target.embedding(j)
    res = stitch(Ea, target.select(j), data, steps=steps, device=device)
    return {
        "cka": linear_cka(Ea, Eb),
        "debiased cka": debiased_cka(Ea, Eb),
        "own": float(accuracy(target.select(j), data)[0]),
        "stitched": float(res.test_acc[0]),
        "stitched train": float(res.train_acc[0]),
        "mapped": to_numpy(res.mapped[0, :, : target.dims[j]]),
    }

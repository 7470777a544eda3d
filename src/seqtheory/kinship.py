"""The kinship models: small networks that learn a family forest's kinship terms.

:class:`KinshipModels` holds ``M`` independent models in one tensor program, each a learned
embedding per person and a decoder (an MLP, or a bilinear form per term, :data:`DECODERS`)
that reads two embeddings and names the relation; :func:`train_kinship` trains them on a
:class:`~seqtheory.sources.knowledge_graphs.KinshipData` (through
:func:`seqtheory.core.training.train`, one loss per model, :func:`per_model_loss`),
:func:`accuracy` scores them, and :func:`plot_forest` and :func:`plot_embedding` draw the
genealogy and 2-D views of embeddings.  The data (forests, kinship terms, splits) are in
:mod:`seqtheory.sources.knowledge_graphs`; how two models' embeddings compare (CKA,
stitching) in :mod:`seqtheory.similarity`; the universality chapter's experiment in
:mod:`seqtheory.representations`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .core.runtime import check_device, evaluating, to_numpy
from .core.seeds import make_generator
from .core.training import History, TrainConfig, train
from .core.validate import check_choice, check_float, check_int
from .sources.knowledge_graphs import KINSHIP, FamilyForest, KinshipData

__all__ = [
    "DECODERS",
    "KinshipModels",
    "accuracy",
    "per_model_loss",
    "plot_embedding",
    "plot_forest",
    "train_kinship",
]

# Decoder families of :class:`KinshipModels`: a one-hidden-layer MLP on [e_a, e_b], or a
# bilinear form per kinship term (RESCAL-style) plus linear terms.
DECODERS = ("mlp", "bilinear")


def _check_models(seeds, embed_dims) -> tuple[tuple, tuple]:
    """``(seeds, dims)`` of :class:`KinshipModels` checked: one embedding size per seed (an
    int size is used for every seed)."""
    seeds = tuple(check_int("seed", s, minimum=0) for s in seeds)
    if not seeds:
        raise ValueError("seeds must name at least one model")
    if isinstance(embed_dims, (int, np.integer)):
        embed_dims = (embed_dims,) * len(seeds)
    dims = tuple(check_int("embed_dim", d, minimum=1) for d in embed_dims)
    if len(dims) != len(seeds):
        raise ValueError(
            f"give one embedding size per seed: {len(dims)} sizes for {len(seeds)} seeds"
        )
    return seeds, dims


def _initial_weights(g, n, d, D, h, k, decoder, init_scale) -> dict[str, torch.Tensor]:
    """One model's initial weights, drawn from the CPU generator ``g`` in a fixed order and
    zero-padded from its embedding size ``d`` to ``D`` (see :class:`KinshipModels`)."""

    def rows(width, std):  # (D, width): d random rows over ``std``, then zero rows
        return torch.cat([torch.randn(d, width, generator=g) / std, torch.zeros(D - d, width)])

    scale = init_scale if init_scale is not None else 1 / np.sqrt(d)
    out = {"embed": torch.cat([torch.randn(n, d, generator=g) * scale, torch.zeros(n, D - d)], 1)}
    if decoder == "bilinear":  # one d x d form per kinship term, plus linear terms
        out["rel"] = torch.zeros(k, D, D)
        out["rel"][:, :d, :d] = torch.randn(k, d, d, generator=g) / np.sqrt(d)
        out["u_a"], out["u_b"] = rows(k, np.sqrt(d)), rows(k, np.sqrt(d))
    else:
        out["w_a"], out["w_b"] = rows(h, np.sqrt(2 * d)), rows(h, np.sqrt(2 * d))
        out["b_1"] = torch.zeros(1, h)
        out["w_out"] = torch.randn(h, k, generator=g) / np.sqrt(h)
    out["b_out"] = torch.zeros(1, k)
    return out


# --------------------------------------------------------------------------- models
class KinshipModels(nn.Module):
    """``M`` independent models trained as one tensor program.

    Model m has an embedding ``E_m`` (n_people, d_m) and a one-hidden-layer MLP decoder:
    ``logits(a, b) = W_out relu(W_a e_a + W_b e_b + b_1) + b_out`` (the first layer acts on
    the concatenation ``[e_a, e_b]``); ``decoder="bilinear"`` replaces it by a different
    family, ``logits_k(a, b) = e_a^T R_k e_b + u_k . e_a + v_k . e_b + c_k`` (one d x d form
    R_k per kinship term).  Models of different sizes share one tensor: their
    embeddings are zero-padded to the largest d and masked.  Model m is initialised from
    its own generator, ``make_generator(seeds[m], base=base)`` (embeddings ~
    N(0, init_scale^2), default ``1/sqrt(d_m)``), so it is the same model whether it is
    trained alone or with others; ``seeds`` stay the models' names (:meth:`index`).
    The weights are drawn on the CPU and then placed on ``device``, so a model starts from
    the same weights on every device.
    """

    def __init__(
        self,
        n_people: int,
        embed_dims: int | Sequence[int],
        seeds: Sequence[int] = (0,),
        hidden: int = 32,
        n_classes: int = len(KINSHIP),
        init_scale: float | None = None,
        decoder: str = "mlp",
        *,
        base: int | None = None,
        device=None,
    ) -> None:
        super().__init__()
        device = check_device("device", device)
        self.decoder = check_choice("decoder", decoder, DECODERS)
        n = check_int("n_people", n_people, minimum=2)
        h = check_int("hidden", hidden, minimum=1)
        k = check_int("n_classes", n_classes, minimum=2)
        seeds, dims = _check_models(seeds, embed_dims)
        if init_scale is not None:
            init_scale = check_float("init_scale", init_scale, low=0.0, low_open=True)
        self.seeds, self.dims = seeds, dims
        D = max(dims)
        parts = [
            _initial_weights(make_generator(s, base=base), n, d, D, h, k, decoder, init_scale)
            for s, d in zip(seeds, dims, strict=True)
        ]
        for name in parts[0]:
            setattr(self, name, nn.Parameter(torch.stack([part[name] for part in parts])))
        mask = torch.zeros(len(dims), 1, D)
        for m, d in enumerate(dims):
            mask[m, :, :d] = 1.0
        self.register_buffer("mask", mask)  # (M, 1, D)
        self.to(device)

    @property
    def n_models(self) -> int:
        """Number of models M."""
        return self.embed.shape[0]

    def embedding(self, m: int) -> torch.Tensor:
        """Model m's learned embedding, (n_people, d_m)."""
        m = check_int("m", m, minimum=0)
        if m >= self.n_models:
            raise ValueError(f"model index must be < {self.n_models}, got {m}")
        return self.embed.detach()[m, :, : self.dims[m]]

    def index(self, dim: int, seed: int) -> int:
        """Position of the model with embedding size ``dim`` and ``seed``."""
        for m, key in enumerate(zip(self.dims, self.seeds, strict=True)):
            if key == (dim, seed):
                return m
        raise ValueError(
            f"no model with dim={dim}, seed={seed}; have "
            f"{sorted(set(zip(self.dims, self.seeds, strict=True)))}"
        )

    def forward(self, pairs: torch.Tensor, embed: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (M, P, K) for ordered pairs (P, 2); ``embed`` (M, n, D) replaces the
        models' own embeddings (used for stitching)."""
        E = self.embed if embed is None else embed  # (M, n, D)
        if E.shape[0] != self.n_models or E.shape[2] != self.embed.shape[2]:
            raise ValueError(
                f"embed must have shape ({self.n_models}, n, "
                f"{self.embed.shape[2]}), got {tuple(E.shape)}"
            )
        E = E * self.mask
        if self.decoder == "bilinear":  # logits_k = e_a^T R_k e_b + u_k.e_a + v_k.e_b + c_k
            ER = torch.einsum("mni,mkij->mnkj", E, self.rel)  # (M, n, K, D)
            e_b = E[:, pairs[:, 1]]  # (M, P, D)
            bil = (ER[:, pairs[:, 0]] * e_b[:, :, None]).sum(-1)  # (M, P, K)
            return bil + (E @ self.u_a)[:, pairs[:, 0]] + e_b @ self.u_b + self.b_out
        u_a, u_b = E @ self.w_a, E @ self.w_b  # (M, n, h) each
        hidden = torch.relu(u_a[:, pairs[:, 0]] + u_b[:, pairs[:, 1]] + self.b_1)  # (M, P, h)
        return torch.baddbmm(self.b_out, hidden, self.w_out)  # (M, P, K)

    def select(self, index: int | Sequence[int]) -> KinshipModels:
        """A frozen copy holding the models at ``index`` (an int or a list of ints)."""
        idx = [index] if isinstance(index, (int, np.integer)) else list(index)
        for i in idx:
            if not 0 <= i < self.n_models:
                raise ValueError(f"model index must be in [0, {self.n_models}), got {i}")
        out = KinshipModels.__new__(KinshipModels)
        nn.Module.__init__(out)
        out.decoder = self.decoder
        out.seeds = tuple(self.seeds[i] for i in idx)
        out.dims = tuple(self.dims[i] for i in idx)
        D = max(out.dims)
        for name, p in self.named_parameters():
            value = p.detach()[idx].clone()
            if name == "embed":
                value = value[:, :, :D]
            elif name in ("w_a", "w_b", "u_a", "u_b"):
                value = value[:, :D]
            elif name == "rel":
                value = value[:, :, :D, :D]
            setattr(out, name, nn.Parameter(value, requires_grad=False))
        out.register_buffer("mask", self.mask[idx][:, :, :D].clone())
        return out


def per_model_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each model's mean cross-entropy (nats): logits (M, P, K), labels (P,) -> (M,).

    :func:`~seqtheory.core.training.train` steps on their sum, so the models train
    independently, and records them per model."""
    M, P, K = logits.shape
    return (
        F.cross_entropy(logits.reshape(M * P, K), labels.repeat(M), reduction="none")
        .reshape(M, P)
        .mean(1)
    )


def accuracy(
    models: KinshipModels,
    data: KinshipData,
    which: str = "test_facts",
    embed: torch.Tensor | None = None,
) -> np.ndarray:
    """Fraction of pairs in ``data.select(which)`` whose term each model names: (M,)."""
    if not isinstance(models, KinshipModels):
        raise TypeError(f"models must be KinshipModels, got {type(models).__name__}")
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    pairs, labels = data.to(models.mask.device).select(which)
    if len(labels) == 0:
        raise ValueError(f"the data has no {which!r} pairs")
    with evaluating(models):
        pred = models(pairs, embed).argmax(-1)  # (M, P)
    return to_numpy((pred == labels).double().mean(1))


def _kinship_evaluation(data: KinshipData):
    """The evaluation of :func:`train_kinship`: every model's accuracy on the training pairs
    and on the held-out facts of ``data``."""

    def evaluate(models, step):
        return {
            "train acc": accuracy(models, data, "train"),
            "held-out acc": accuracy(models, data, "test_facts"),
        }

    return evaluate


def train_kinship(
    data: KinshipData,
    dims: int | Sequence[int] = 4,
    seeds: Sequence[int] = (0,),
    *,
    hidden: int = 32,
    steps: int = 1000,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    init_scale: float | None = None,
    decoder: str = "mlp",
    base: int | None = None,
    device=None,
    progress: bool = True,
    desc: str = "training models",
) -> tuple[KinshipModels, History]:
    """Train one model per (embedding size, seed) on the training pairs, all at once.

    Full-batch AdamW through :func:`~seqtheory.core.training.train`, one loss per model;
    models are ordered size-major (all seeds of ``dims[0]`` first) and initialised from
    logical seed ``seed`` under ``base`` (see :class:`KinshipModels`).  Models and data live on
    ``device`` (None: the CPU) while training.  Returns ``(models, history)``, the models
    frozen; the history records every model's training loss, training accuracy and
    held-out-fact accuracy ((evals, M) arrays)."""
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    device = check_device("device", device)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    seeds = tuple(seeds)
    if not dims or not seeds:
        raise ValueError("dims and seeds must each name at least one value")
    models = KinshipModels(
        data.n_people,
        [d for d in dims for _ in seeds],
        [s for _ in dims for s in seeds],
        hidden,
        init_scale=init_scale,
        decoder=decoder,
        base=base,
        device=device,
    )
    data = data.to(device)  # moved once
    pairs, labels = data.select("train")  # (P, 2), (P,)
    cfg = TrainConfig(
        steps=steps, lr=lr, weight_decay=weight_decay, grad_clip=None, eval_every=max(1, steps // 4)
    )
    hist = train(
        models,
        lambda step: (pairs, labels),
        cfg,
        eval_fn=_kinship_evaluation(data),
        loss_fn=per_model_loss,
        progress=progress,
        desc=desc,
    )
    models.requires_grad_(False)
    return models, hist


# --------------------------------------------------------------------------- figures
def _scatter_people(ax, xy: np.ndarray, forest: FamilyForest, **kw) -> None:
    """People at (n, 2) positions: colour = generation, marker = family."""
    top = int(forest.generation.max())
    cmap = plt.get_cmap("viridis", top + 1)
    for fam, marker in zip(np.unique(forest.family), "osD^v", strict=False):
        sel = forest.family == fam
        ax.scatter(
            xy[sel, 0],
            xy[sel, 1],
            c=forest.generation[sel],
            cmap=cmap,
            marker=marker,
            vmin=-0.5,
            vmax=top + 0.5,
            edgecolor="k",
            label=f"family {fam}",
            **kw,
        )


def _axes(ax, figsize):
    """``ax``, or the axes of a new figure of ``figsize``."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax


def plot_forest(forest: FamilyForest, ax=None, *, labels: bool = False):
    """Draw the genealogy: generations top to bottom, parent-child lines, spouse links;
    colour = generation, marker = family (as in :func:`plot_embedding`).  Returns ``ax``
    (a new figure's axes when None)."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    ax = _axes(ax, (8, 3.4))
    x = np.zeros(forest.n)
    for g in np.unique(forest.generation):  # order people within a row
        row = np.flatnonzero(forest.generation == g)
        if g == 0:
            order = row
        else:  # children under their parents, partners next to spouses

            def key(p):
                par = np.flatnonzero(forest.parent[:, p])
                sp = np.flatnonzero(forest.spouse[p])
                if len(par):
                    return (x[par].mean(), p)
                if len(sp) and forest.parent[:, sp[0]].any():  # next to the partner
                    return (x[np.flatnonzero(forest.parent[:, sp[0]])].mean(), sp[0] + 0.5)
                return (2.0, p)

            order = sorted(row, key=key)
        x[order] = np.linspace(0, 1, len(order) + 2)[1:-1]
    y = -forest.generation.astype(float)
    for a, b in zip(*np.nonzero(forest.parent), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.75", lw=0.8, zorder=1)
    for a, b in zip(*np.nonzero(np.triu(forest.spouse)), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.3", lw=1.6, zorder=1)
    _scatter_people(ax, np.stack([x, y], 1), forest, s=40, zorder=2, linewidth=0.4)
    if labels:
        for p in range(forest.n):
            ax.annotate(
                str(p),
                (x[p], y[p]),
                fontsize=7,
                ha="center",
                va="bottom",
                xytext=(0, 4),
                textcoords="offset points",
            )
    ax.set_yticks(-np.unique(forest.generation))
    ax.set_yticklabels([f"gen {g}" for g in np.unique(forest.generation)])
    ax.set_xticks([])
    ax.grid(False)
    return ax


def plot_embedding(coords, forest: FamilyForest, ax=None, title: str | None = None):
    """Scatter 2-D coordinates (n, 2) of the people (e.g. from
    :func:`~seqtheory.similarity.pca_2d`): colour = generation, marker = family."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    coords = to_numpy(coords)
    if coords.shape != (forest.n, 2):
        raise ValueError(f"coords must have shape ({forest.n}, 2), got {coords.shape}")
    ax = _axes(ax, (5, 4.5))
    _scatter_people(ax, coords, forest, s=30, linewidth=0.3)
    ax.set_xlabel("PC 1 of B's embedding", fontsize=9)
    ax.set_ylabel("PC 2", fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    return ax

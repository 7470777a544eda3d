"""The universality chapter's experiment: do separately trained models of one knowledge
graph learn the same representation?

:func:`run` builds a family forest (:mod:`seqtheory.knowledge_graphs`), trains a *zoo* of
kinship models — every embedding size x seed, once per weight decay — plus one model per
size on a relabelled graph, the same zoo on less data, and bilinear-decoder models; then
compares the zoo's embeddings across seeds by stitching (with its controls) and by
debiased CKA (:mod:`seqtheory.similarity`).  It returns a :class:`RepresentationResult`
that the chapter's figures and further analyses use.

>>> result = run(SETUP.pick(), device="cpu")
>>> result.held_out[0.0].shape                   # (sizes, seeds)
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .knowledge_graphs import (
    FamilyForest,
    KinshipData,
    KinshipModels,
    accuracy,
    kinship_data,
    train_kinship,
)
from .similarity import affine_r2, cka_across_seeds, debiased_cka, stitch_controls
from .training import History
from .utils import (
    Sizes,
    check_device,
    check_float,
    check_int,
    experiment_seed,
    make_generator,
)

__all__ = [
    "SETUP", "KinshipTask", "RepresentationResult", "RepresentationSetup", "affine_fits",
    "kinship_task", "plot_stitching", "plot_zone", "run",
]

# Logical seeds inside one run, under the run's base seed (see :func:`run`).
_SPLIT_SEED = 0          # the train/held-out split of the pairs
_SHUFFLE_SEED = 1        # the relabelling that makes the "other graph"
_OTHER_GRAPH_SEED = 100  # the models of the other graph
_CONTROL_SEED = 0        # the random embeddings of the stitching control
_CKA_RANDOM_SEED = 7     # the random embeddings that CKA compares trained ones with
_R2_RANDOM_SEED = 9      # the random embeddings of the affine-fit control


@dataclass(frozen=True)
class RepresentationSetup:
    """Sizes of the universality chapter's experiments (CPU default; FULL=1 is larger)."""

    n_families: int = 2                     # founding couples
    generations: int = 4                    # generations, founders included
    children: tuple = (2, 2)                # children per couple (min, max)
    forest_seed: int = 0                    # seed of the family forest
    train_fraction: float = 0.8             # fraction of ordered pairs used for training
    fractions: tuple = (0.5,)               # further training fractions (data starvation)
    dims: tuple = (1, 2, 3, 4, 6, 8, 16, 32)   # embedding sizes d
    seeds: tuple = (0, 1, 2, 3)             # initialisation seeds per size
    hidden: int = 32                        # decoder width
    steps: int = 1000                       # full-batch AdamW steps per model
    lr: float = 1e-2                        # AdamW learning rate of the models
    weight_decays: tuple = (0.0, 0.1)       # no pressure / resource pressure
    stitch_steps: int = 300                 # AdamW steps for each affine map
    bilinear_dims: tuple = (8,)             # sizes of the bilinear-decoder models, trained
    #                                         with the largest weight decay

    def __post_init__(self) -> None:
        check_int("n_families", self.n_families, minimum=1)
        check_int("generations", self.generations, minimum=2)
        if not isinstance(self.children, tuple) or len(self.children) != 2:
            raise TypeError(f"children must be a pair (min, max), got {self.children!r}")
        lo, hi = (check_int("children", c, minimum=1) for c in self.children)
        if hi < lo:
            raise ValueError(f"children must be (min, max) with min <= max, got "
                             f"{self.children}")
        check_int("forest_seed", self.forest_seed, minimum=0)
        check_float("train_fraction", self.train_fraction, low=0.0, high=1.0,
                    low_open=True, high_open=True)
        for name, values in (("fractions", self.fractions), ("dims", self.dims),
                             ("seeds", self.seeds), ("weight_decays", self.weight_decays),
                             ("bilinear_dims", self.bilinear_dims)):
            if not isinstance(values, tuple):
                raise TypeError(f"{name} must be a tuple, got {type(values).__name__}")
            if name != "fractions" and not values:
                raise ValueError(f"{name} must name at least one value")
            if len(set(values)) != len(values):
                raise ValueError(f"{name} must not repeat a value, got {values}")
        for f in self.fractions:
            check_float("fractions", f, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.train_fraction in self.fractions:
            raise ValueError(f"fractions must not repeat train_fraction "
                             f"({self.train_fraction}), got {self.fractions}")
        for d in self.dims + self.bilinear_dims:
            check_int("dims", d, minimum=1)
        for s in self.seeds:
            check_int("seeds", s, minimum=0)
        for wd in self.weight_decays:
            check_float("weight_decays", wd, low=0.0)
        check_int("hidden", self.hidden, minimum=1)
        check_int("steps", self.steps, minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_int("stitch_steps", self.stitch_steps, minimum=1)


SETUP = Sizes(
    cpu=RepresentationSetup(),
    full=RepresentationSetup(children=(2, 3), dims=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
                             seeds=tuple(range(8)), hidden=64, steps=3000,
                             stitch_steps=600),
)


@dataclass
class KinshipTask:
    """The knowledge graph of a run and its splits (what :func:`kinship_task` draws)."""

    forest: FamilyForest            # the knowledge graph
    data: KinshipData               # its ordered pairs, split at setup.train_fraction
    other_forest: FamilyForest      # the same family shapes, people relabelled
    other_data: KinshipData         # the same pairs and split, labelled by other_forest
    fraction_data: dict             # training fraction -> KinshipData (setup.fractions)


def kinship_task(setup: RepresentationSetup, *, seed: int | None = None) -> KinshipTask:
    """The family forest of ``setup`` and its splits, drawn exactly as :func:`run` draws
    them for the same base ``seed`` (None: the book's base seed): the forest from logical
    seed ``setup.forest_seed``, every split from 0, the relabelling from 1.  Cheap: no
    training."""
    if not isinstance(setup, RepresentationSetup):
        raise TypeError(f"setup must be a RepresentationSetup, got {type(setup).__name__}")
    seed = experiment_seed(seed)
    forest = FamilyForest.generate(setup.n_families, setup.generations, setup.children,
                                   seed=setup.forest_seed, base=seed)
    data = kinship_data(forest, setup.train_fraction, seed=_SPLIT_SEED, base=seed)
    other_forest = forest.shuffled(seed=_SHUFFLE_SEED, base=seed)
    return KinshipTask(forest, data, other_forest, data.relabelled(other_forest),
                       {frac: kinship_data(forest, frac, seed=_SPLIT_SEED, base=seed)
                        for frac in setup.fractions})


@dataclass
class RepresentationResult:
    """What :func:`run` trained and measured.  Arrays of shape (sizes, seeds) follow
    ``setup.dims`` x ``setup.seeds``; models are frozen and on the CPU, ordered
    size-major (use ``models.index(d, seed)``)."""

    setup: RepresentationSetup
    seed: int                       # the run's base seed (of every logical seed)
    device: str                     # where the models were trained
    seconds: float                  # wall-clock time of the run
    task: KinshipTask               # the forest and its splits (see kinship_task)
    zoo: dict                       # weight decay -> KinshipModels (dims x seeds)
    other_zoo: dict                 # weight decay -> KinshipModels, one per size, other graph
    bilinear: KinshipModels         # bilinear decoders (bilinear_dims x seeds), largest wd
    histories: dict                 # name -> History of each training run
    held_out: dict                  # weight decay -> (sizes, seeds) held-out fact accuracy
    train_acc: dict                 # weight decay -> (sizes, seeds) training accuracy
    starved: dict                   # training fraction -> (sizes, seeds) held-out accuracy
    #                                 without weight decay (train_fraction included)
    stitched: dict                  # weight decay -> {"own", "across seeds", "random",
    #                                 "other graph": (sizes, seeds) held-out accuracy of B}
    cka: dict                       # weight decay -> (sizes, pairs of seeds) debiased CKA
    cka_random: dict                # weight decay -> (sizes, seeds) debiased CKA between a
    #                                 trained embedding and a random one of the same size
    affine_fit: dict                # weight decay -> {"across seeds", "random": (sizes,
    #                                 seeds)} R² of B's embedding from the best affine
    #                                 function of A's (the next seed's, or random points)

    @property
    def forest(self) -> FamilyForest:
        """The knowledge graph (``task.forest``)."""
        return self.task.forest

    @property
    def data(self) -> KinshipData:
        """Its pairs and the training split (``task.data``)."""
        return self.task.data

    def by_size(self, values) -> np.ndarray:
        """(models,) values of a size-major zoo -> a (sizes, seeds) array."""
        return np.asarray(values).reshape(len(self.setup.dims), len(self.setup.seeds))


def run(setup: RepresentationSetup, *, seed: int | None = None, device=None,
        progress: bool = True) -> RepresentationResult:
    """Train the chapter's models and compare their embeddings (Experiments 1 and 2).

    ``seed`` is the run's base seed (None: the book's base seed ``SEQTHEORY_SEED``; see
    :func:`~seqtheory.utils.experiment_seed`); every random draw has a logical seed under
    it: the forest ``setup.forest_seed``, the split 0, the relabelling 1, model ``s`` of
    every size ``s`` (its own generator, so a model is the same whichever others train with
    it), the other graph's models 100, the stitching control's random embeddings 0,
    CKA's random embeddings 7 and the affine-fit control's 9.  The same seed gives the
    same bits; base seed 0 draws what the chapter's text was measured on.  Models train
    on ``device`` (None: the CPU) as one batched program per sweep; everything returned is
    on the CPU.
    """
    if not isinstance(setup, RepresentationSetup):
        raise TypeError(f"setup must be a RepresentationSetup, got {type(setup).__name__}")
    seed, device = experiment_seed(seed), check_device("device", device)
    start = time.perf_counter()
    task = kinship_task(setup, seed=seed)
    forest, data = task.forest, task.data
    train_kw = dict(hidden=setup.hidden, steps=setup.steps, lr=setup.lr, base=seed,
                    device=device, progress=progress)

    histories: dict[str, History] = {}
    zoo, other_zoo = {}, {}
    for wd in setup.weight_decays:
        zoo[wd], histories[f"zoo, wd {wd}"] = train_kinship(
            data, setup.dims, setup.seeds, weight_decay=wd,
            desc=f"zoo, weight decay {wd}", **train_kw)
        other_zoo[wd], histories[f"other graph, wd {wd}"] = train_kinship(
            task.other_data, setup.dims, (_OTHER_GRAPH_SEED,), weight_decay=wd,
            desc=f"other graph, weight decay {wd}", **train_kw)
    starved = {}
    for frac, frac_data in task.fraction_data.items():
        models, histories[f"fraction {frac}"] = train_kinship(
            frac_data, setup.dims, setup.seeds, weight_decay=0.0,
            desc=f"training fraction {frac}", **train_kw)
        starved[frac] = accuracy(models, frac_data)
    wd_max = max(setup.weight_decays)
    bilinear, histories["bilinear"] = train_kinship(
        data, setup.bilinear_dims, setup.seeds, weight_decay=wd_max, decoder="bilinear",
        desc="bilinear decoders", **train_kw)

    result = RepresentationResult(
        setup=setup, seed=seed, device=str(device), seconds=0.0, task=task, zoo=zoo,
        other_zoo=other_zoo, bilinear=bilinear, histories=histories,
        held_out={}, train_acc={}, starved={}, stitched={}, cka={}, cka_random={},
        affine_fit={})
    by_size = result.by_size
    for wd, Z in zoo.items():
        result.held_out[wd] = by_size(accuracy(Z, data))
        result.train_acc[wd] = by_size(accuracy(Z, data, "train"))
    result.starved = {frac: by_size(acc) for frac, acc in starved.items()}
    if 0.0 in zoo:
        result.starved[setup.train_fraction] = result.held_out[0.0]

    gen = make_generator(_CKA_RANDOM_SEED, base=seed)
    for wd, Z in zoo.items():
        controls = stitch_controls(Z, data, other_zoo[wd], seed=_CONTROL_SEED, base=seed,
                                   steps=setup.stitch_steps)
        result.stitched[wd] = {name: by_size(v) for name, v in controls.items()}
        result.cka[wd] = np.stack(list(cka_across_seeds(Z).values()))   # (sizes, pairs)
        result.cka_random[wd] = np.array(  # (sizes, seeds): trained vs random
            [[debiased_cka(Z.embedding(Z.index(d, s)),
                           torch.randn(forest.n, d, generator=gen))
              for s in setup.seeds] for d in setup.dims])
    for models in (*zoo.values(), *other_zoo.values(), bilinear):
        models.to("cpu")
    gen = make_generator(_R2_RANDOM_SEED, base=seed)
    for wd, Z in zoo.items():
        result.affine_fit[wd] = affine_fits(Z, setup.dims, setup.seeds, gen)
    result.seconds = time.perf_counter() - start
    return result


def affine_fits(models: KinshipModels, dims, seeds, generator: torch.Generator) -> dict:
    """How close each model B's embedding is to an affine image of another's: R² of the
    best affine fit of B's embedding from the next seed's of the same size ("across
    seeds") and from a random Gaussian embedding of that size drawn from ``generator``
    ("random").  Returns ``{name: (sizes, seeds) array}``."""
    if not isinstance(models, KinshipModels):
        raise TypeError(f"models must be KinshipModels, got {type(models).__name__}")
    if len(seeds) < 2:
        raise ValueError(f"seeds must name at least two seeds, got {tuple(seeds)}")
    out = {"across seeds": np.zeros((len(dims), len(seeds))),
           "random": np.zeros((len(dims), len(seeds)))}
    for i, d in enumerate(dims):
        E = [models.embedding(models.index(d, s)) for s in seeds]
        for k in range(len(seeds)):
            noise = torch.randn(E[k].shape, generator=generator)
            out["across seeds"][i, k] = affine_r2(E[(k + 1) % len(seeds)], E[k])
            out["random"][i, k] = affine_r2(noise, E[k])
    return out


# --------------------------------------------------------------------------- figures
def _median_band(ax, x, values, color, label, fmt="o-") -> None:
    """Median over seeds (line) and the range over seeds (band); values (sizes, seeds)."""
    ax.plot(x, np.median(values, 1), fmt, color=color, label=label)
    ax.fill_between(x, values.min(1), values.max(1), color=color, alpha=0.15, lw=0)


def _check_result(result) -> None:
    if not isinstance(result, RepresentationResult):
        raise TypeError(f"result must be a RepresentationResult, got "
                        f"{type(result).__name__}")


def plot_zone(result: RepresentationResult, axes=None):
    """Experiment 1: held-out (and training) accuracy against embedding size, per weight
    decay (left), and held-out accuracy per training fraction (right); median over seeds
    and their range.  Returns the two axes."""
    import matplotlib.pyplot as plt

    from .plotting import log_ticks, palette

    _check_result(result)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8, 3.8), constrained_layout=True)
    a, b = axes
    dims = np.array(result.setup.dims)
    for (wd, acc), c in zip(result.held_out.items(), palette(6), strict=False):
        _median_band(a, dims, acc, c, f"held-out facts, weight decay {wd}")
        a.plot(dims, np.median(result.train_acc[wd], 1), ":", color=c,
               label=f"training pairs, weight decay {wd}")
    a.set(ylim=(0, 1.03), xlabel="embedding size d", ylabel="accuracy",
          title=f"(a) Too small underfits, too large memorizes\n(median, band: "
                f"{len(result.setup.seeds)} seeds)")
    # the largest fraction in (a)'s colour for no weight decay (the same runs' split), then
    # colours (a) does not use
    starved_colors = [palette(6)[i] for i in (0, 2, 3, 4, 5)]
    for (frac, acc), c in zip(sorted(result.starved.items(), reverse=True), starved_colors,
                              strict=False):
        _median_band(b, dims, acc, c, f"held-out facts, train on {frac:.0%} of pairs")
    b.set(ylim=(0, 1.03), xlabel="embedding size d", ylabel="accuracy",
          title="(b) Starved of data\n(no weight decay)")
    for ax in (a, b):
        log_ticks(ax, dims)
        ax.legend(loc="lower right", fontsize=8)
    return a, b


STITCH_STYLES = {  # control name -> (legend label, line format) in plot_stitching
    "own": ("B alone (unstitched)", "o-"),
    "across seeds": ("A = another seed, stitched", "s-"),
    "other graph": ("A = model of another graph", "^--"),
    "random": ("A = random embedding", "v--"),
}


def plot_stitching(result: RepresentationResult, axes=None):
    """Experiment 2: held-out accuracy of B stitched from each source, one panel per
    weight decay, and debiased CKA across seeds and against random embeddings (last
    panel); median over seeds and their range.  Returns the axes."""
    import matplotlib.pyplot as plt

    from .plotting import log_ticks, palette

    _check_result(result)
    wds = list(result.stitched)
    fig, spare = None, None
    if axes is None:             # two columns (7.5 in wide), the legend in a spare panel
        rows = (len(wds) + 2 + 1) // 2
        fig, grid = plt.subplots(rows, 2, figsize=(7.5, 3.1 * rows), constrained_layout=True)
        grid = grid.ravel()
        axes, spare = grid[:len(wds) + 1], grid[len(wds) + 1:]
        for ax in spare:
            ax.axis("off")
    dims, colors = np.array(result.setup.dims), palette(6)
    for ax, wd in zip(axes, wds, strict=False):
        for (name, (label, fmt)), c in zip(STITCH_STYLES.items(), colors, strict=False):
            if name in result.stitched[wd]:
                _median_band(ax, dims, result.stitched[wd][name], c, label, fmt)
        ax.set(ylim=(0, 1.03), xlabel="embedding size d", ylabel="held-out fact accuracy",
               title=f"Stitching into B, weight decay {wd}\n"
                     f"({len(result.setup.seeds)} seeds of B)")
        log_ticks(ax, dims)
    handles, names = axes[0].get_legend_handles_labels()
    if spare is not None and len(spare):
        spare[0].legend(handles, names, loc="center", fontsize=9)
    else:
        (fig or axes[0].figure).legend(handles, names, loc="outside lower center", ncol=4,
                                       fontsize=9)
    ax = axes[len(wds)]
    for (wd, c), marker in zip(zip(wds, colors, strict=False), "osD^v", strict=False):
        _median_band(ax, dims, result.cka[wd], c, f"across seeds, wd {wd}", marker + "-")
        _median_band(ax, dims, result.cka_random[wd], c, f"trained vs random, wd {wd}",
                     marker + ":")
    ax.set(ylim=(-0.1, 1), xlabel="embedding size d", ylabel="debiased CKA",
           title="CKA between embeddings")
    log_ticks(ax, dims)
    ax.legend(fontsize=8)
    return axes

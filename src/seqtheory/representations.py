"""The universality chapter's experiment: do separately trained models of one knowledge
graph learn the same representation?

:func:`run` builds a family forest (:mod:`seqtheory.sources.knowledge_graphs`), trains a
*zoo* of kinship models (:mod:`seqtheory.kinship`) — every embedding size x seed, once per
weight decay — plus one model per size on a relabelled graph, the same zoo on less data,
and bilinear-decoder models; then compares the zoo's embeddings across seeds by stitching
(with its controls) and by debiased CKA (:mod:`seqtheory.similarity`).  It returns a
:class:`RepresentationResult` that the chapter's figures and further analyses use.

>>> result = run(SETUP.pick(), device="cpu")
>>> result.held_out[0.0].shape                   # (sizes, seeds)
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch

from .book.plotting import log_ticks, palette
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.runtime import Sizes
from .core.seeds import experiment_seed
from .core.training import History
from .core.validate import check_float, check_int
from .kinship import KinshipModels, accuracy, train_kinship
from .similarity import affine_r2, cka_across_seeds, debiased_cka, stitch_controls
from .sources.knowledge_graphs import FamilyForest, KinshipData, kinship_data

__all__ = [
    "SETUP",
    "STREAMS",
    "KinshipTask",
    "RepresentationResult",
    "RepresentationSetup",
    "affine_fits",
    "kinship_task",
    "plot_stitching",
    "plot_zone",
    "run",
]

#: The random streams of one run (logical seeds under its base seed): ``forest`` f the
#: family forest of ``setup.forest_seed`` f, ``split`` the train/held-out split of the
#: pairs, ``relabel`` the relabelling that makes the "other graph", ``weights`` s the
#: models of seed s (which keep s as their name), ``other_graph`` the models of the other
#: graph, ``stitch_random`` the random embeddings of the stitching control, ``cka_random``
#: the random embeddings that CKA compares trained ones with, ``affine_random`` those of
#: the affine-fit control.
STREAMS = Streams(
    forest=0,
    split=0,
    relabel=1,
    weights=0,
    other_graph=100,
    stitch_random=0,
    cka_random=7,
    affine_random=9,
)


@dataclass(frozen=True)
class RepresentationSetup:
    """Sizes of the universality chapter's experiments (CPU default; FULL=1 is larger)."""

    n_families: int = 2  # founding couples
    generations: int = 4  # generations, founders included
    children: tuple = (2, 2)  # children per couple (min, max)
    forest_seed: int = 0  # seed of the family forest
    train_fraction: float = 0.8  # fraction of ordered pairs used for training
    fractions: tuple = (0.5,)  # further training fractions (data starvation)
    dims: tuple = (1, 2, 3, 4, 6, 8, 16, 32)  # embedding sizes d
    seeds: tuple = (0, 1, 2, 3)  # initialisation seeds per size
    hidden: int = 32  # decoder width
    steps: int = 1000  # full-batch AdamW steps per model
    lr: float = 1e-2  # AdamW learning rate of the models
    weight_decays: tuple = (0.0, 0.1)  # no pressure / resource pressure
    stitch_steps: int = 300  # AdamW steps for each affine map
    bilinear_dims: tuple = (8,)  # sizes of the bilinear-decoder models, trained
    #                                         with the largest weight decay

    def __post_init__(self) -> None:
        check_int("n_families", self.n_families, minimum=1)
        check_int("generations", self.generations, minimum=2)
        if not isinstance(self.children, tuple) or len(self.children) != 2:
            raise TypeError(f"children must be a pair (min, max), got {self.children!r}")
        lo, hi = (check_int("children", c, minimum=1) for c in self.children)
        if hi < lo:
            raise ValueError(f"children must be (min, max) with min <= max, got {self.children}")
        check_int("forest_seed", self.forest_seed, minimum=0)
        check_float(
            "train_fraction", self.train_fraction, low=0.0, high=1.0, low_open=True, high_open=True
        )
        for name, values in (
            ("fractions", self.fractions),
            ("dims", self.dims),
            ("seeds", self.seeds),
            ("weight_decays", self.weight_decays),
            ("bilinear_dims", self.bilinear_dims),
        ):
            if not isinstance(values, tuple):
                raise TypeError(f"{name} must be a tuple, got {type(values).__name__}")
            if name != "fractions" and not values:
                raise ValueError(f"{name} must name at least one value")
            if len(set(values)) != len(values):
                raise ValueError(f"{name} must not repeat a value, got {values}")
        for f in self.fractions:
            check_float("fractions", f, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.train_fraction in self.fractions:
            raise ValueError(
                f"fractions must not repeat train_fraction "
                f"({self.train_fraction}), got {self.fractions}"
            )
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
    full=RepresentationSetup(
        children=(2, 3),
        dims=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
        seeds=tuple(range(8)),
        hidden=64,
        steps=3000,
        stitch_steps=600,
    ),
)


@dataclass
class KinshipTask:
    """The knowledge graph of a run and its splits (what :func:`kinship_task` draws)."""

    forest: FamilyForest  # the knowledge graph
    data: KinshipData  # its ordered pairs, split at setup.train_fraction
    other_forest: FamilyForest  # the same family shapes, people relabelled
    other_data: KinshipData  # the same pairs and split, labelled by other_forest
    fraction_data: dict  # training fraction -> KinshipData (setup.fractions)


def kinship_task(setup: RepresentationSetup, *, seed: int | None = None) -> KinshipTask:
    """The family forest of ``setup`` and its splits, drawn exactly as :func:`run` draws
    them for the same base ``seed`` (None: the book's base seed): the forest from stream
    ``forest`` ``setup.forest_seed``, every split from ``split``, the relabelling from
    ``relabel`` (:data:`STREAMS`).  Cheap: no training."""
    if not isinstance(setup, RepresentationSetup):
        raise TypeError(f"setup must be a RepresentationSetup, got {type(setup).__name__}")
    seed = experiment_seed(seed)
    forest = FamilyForest.generate(
        setup.n_families,
        setup.generations,
        setup.children,
        seed=STREAMS.seed("forest", setup.forest_seed),
        base=seed,
    )
    split = STREAMS.seed("split")
    data = kinship_data(forest, setup.train_fraction, seed=split, base=seed)
    other_forest = forest.shuffled(seed=STREAMS.seed("relabel"), base=seed)
    return KinshipTask(
        forest,
        data,
        other_forest,
        data.relabelled(other_forest),
        {frac: kinship_data(forest, frac, seed=split, base=seed) for frac in setup.fractions},
    )


@dataclass
class RepresentationResult(RunInfo):
    """What :func:`run` trained and measured (``seconds``: the wall-clock time of the run,
    ``device``: where the models trained).  Arrays of shape (sizes, seeds) follow
    ``setup.dims`` x ``setup.seeds``; models are frozen and on the CPU, ordered
    size-major (use ``models.index(d, seed)``)."""

    task: KinshipTask  # the forest and its splits (see kinship_task)
    zoo: dict  # weight decay -> KinshipModels (dims x seeds)
    other_zoo: dict  # weight decay -> KinshipModels, one per size, other graph
    bilinear: KinshipModels  # bilinear decoders (bilinear_dims x seeds), largest wd
    histories: dict  # name -> History of each training run
    held_out: dict  # weight decay -> (sizes, seeds) held-out fact accuracy
    train_acc: dict  # weight decay -> (sizes, seeds) training accuracy
    starved: dict  # training fraction -> (sizes, seeds) held-out accuracy
    #                                 without weight decay (train_fraction included)
    stitched: dict  # weight decay -> {"own", "across seeds", "random",
    #                                 "other graph": (sizes, seeds) held-out accuracy of B}
    cka: dict  # weight decay -> (sizes, pairs of seeds) debiased CKA
    cka_random: dict  # weight decay -> (sizes, seeds) debiased CKA between a
    #                                 trained embedding and a random one of the same size
    affine_fit: dict  # weight decay -> {"across seeds", "random": (sizes,
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
        return _by_size(self.setup, values)


def _by_size(setup: RepresentationSetup, values) -> np.ndarray:
    return np.asarray(values).reshape(len(setup.dims), len(setup.seeds))


def _train_zoos(
    setup: RepresentationSetup, ctx: Experiment, task: KinshipTask, histories: dict
) -> tuple[dict, dict, dict, KinshipModels]:
    """Every training sweep of :func:`run`, each History added to ``histories``: ``(zoo,
    other_zoo, starved, bilinear)``, ``starved`` the held-out accuracy (models,) of each
    training fraction's zoo."""
    kw = dict(
        hidden=setup.hidden,
        steps=setup.steps,
        lr=setup.lr,
        base=ctx.seed,
        device=ctx.device,
        progress=ctx.progress,
    )
    seeds = tuple(ctx.logical("weights", s) for s in setup.seeds)
    zoo, other_zoo, starved = {}, {}, {}
    for wd in setup.weight_decays:
        zoo[wd], histories[f"zoo, wd {wd}"] = train_kinship(
            task.data, setup.dims, seeds, weight_decay=wd, desc=f"zoo, weight decay {wd}", **kw
        )
        other_zoo[wd], histories[f"other graph, wd {wd}"] = train_kinship(
            task.other_data,
            setup.dims,
            (ctx.logical("other_graph"),),
            weight_decay=wd,
            desc=f"other graph, weight decay {wd}",
            **kw,
        )
    for frac, frac_data in task.fraction_data.items():
        models, histories[f"fraction {frac}"] = train_kinship(
            frac_data, setup.dims, seeds, weight_decay=0.0, desc=f"training fraction {frac}", **kw
        )
        starved[frac] = accuracy(models, frac_data)
    bilinear, histories["bilinear"] = train_kinship(
        task.data,
        setup.bilinear_dims,
        seeds,
        weight_decay=max(setup.weight_decays),
        decoder="bilinear",
        desc="bilinear decoders",
        **kw,
    )
    return zoo, other_zoo, starved, bilinear


def _compare(
    setup: RepresentationSetup,
    ctx: Experiment,
    data: KinshipData,
    zoo: dict,
    other_zoo: dict,
    starved: dict,
) -> dict:
    """Accuracies, stitching controls, CKA and affine fits of the zoos: the measured
    fields of :class:`RepresentationResult`.  Moves the zoos to the CPU."""
    held_out, train_acc = {}, {}
    for wd, Z in zoo.items():
        held_out[wd] = _by_size(setup, accuracy(Z, data))
        train_acc[wd] = _by_size(setup, accuracy(Z, data, "train"))
    starved = {frac: _by_size(setup, acc) for frac, acc in starved.items()}
    if 0.0 in zoo:
        starved[setup.train_fraction] = held_out[0.0]
    stitched, cka, cka_random = {}, {}, {}
    gen = ctx.generator("cka_random", device="cpu")
    for wd, Z in zoo.items():
        controls = stitch_controls(
            Z,
            data,
            other_zoo[wd],
            seed=ctx.logical("stitch_random"),
            base=ctx.seed,
            steps=setup.stitch_steps,
        )
        stitched[wd] = {name: _by_size(setup, v) for name, v in controls.items()}
        cka[wd] = np.stack(list(cka_across_seeds(Z).values()))  # (sizes, pairs)
        cka_random[wd] = np.array(  # (sizes, seeds): trained vs random
            [
                [
                    debiased_cka(
                        Z.embedding(Z.index(d, ctx.logical("weights", s))),
                        torch.randn(data.n_people, d, generator=gen),
                    )
                    for s in setup.seeds
                ]
                for d in setup.dims
            ]
        )
    for models in (*zoo.values(), *other_zoo.values()):
        models.to("cpu")
    gen = ctx.generator("affine_random", device="cpu")
    seeds = tuple(ctx.logical("weights", s) for s in setup.seeds)
    affine_fit = {wd: affine_fits(Z, setup.dims, seeds, gen) for wd, Z in zoo.items()}
    return dict(
        held_out=held_out,
        train_acc=train_acc,
        starved=starved,
        stitched=stitched,
        cka=cka,
        cka_random=cka_random,
        affine_fit=affine_fit,
    )


@experiment(RepresentationSetup, STREAMS)
def run(setup: RepresentationSetup, ctx: Experiment) -> RepresentationResult:
    """Train the chapter's models and compare their embeddings (Experiments 1 and 2).

    Every random draw comes from a stream of :data:`STREAMS` under the base seed
    ``ctx.seed`` (the book's base seed ``SEQTHEORY_SEED`` in the friendly call without
    ``seed``): the forest ``forest``, the split ``split``, the relabelling ``relabel``,
    model ``s`` of every size ``weights`` s (its own generator, so a model is the same
    whichever others train with it), the other graph's models ``other_graph``, the
    stitching control's random embeddings ``stitch_random``, CKA's random embeddings
    ``cka_random`` and the affine-fit control's ``affine_random``.  The same seed gives the
    same bits; base seed 0 draws what the chapter's text was measured on.  Models train
    on ``ctx.device`` as one batched program per sweep; everything returned is on the CPU.
    """
    with ctx.timer() as t:
        task = kinship_task(setup, seed=ctx.seed)
        histories: dict[str, History] = {}
        zoo, other_zoo, starved, bilinear = _train_zoos(setup, ctx, task, histories)
        measured = _compare(setup, ctx, task.data, zoo, other_zoo, starved)
        bilinear.to("cpu")
    return RepresentationResult(
        **ctx.header(setup, t.seconds),
        task=task,
        zoo=zoo,
        other_zoo=other_zoo,
        bilinear=bilinear,
        histories=histories,
        **measured,
    )


def affine_fits(models: KinshipModels, dims, seeds, generator: torch.Generator) -> dict:
    """How close each model B's embedding is to an affine image of another's: R² of the
    best affine fit of B's embedding from the next seed's of the same size ("across
    seeds") and from a random Gaussian embedding of that size drawn from ``generator``
    ("random").  Returns ``{name: (sizes, seeds) array}``."""
    if not isinstance(models, KinshipModels):
        raise TypeError(f"models must be KinshipModels, got {type(models).__name__}")
    if len(seeds) < 2:
        raise ValueError(f"seeds must name at least two seeds, got {tuple(seeds)}")
    out = {
        "across seeds": np.zeros((len(dims), len(seeds))),
        "random": np.zeros((len(dims), len(seeds))),
    }
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
        raise TypeError(f"result must be a RepresentationResult, got {type(result).__name__}")


def plot_zone(result: RepresentationResult, axes=None):
    """Experiment 1: held-out (and training) accuracy against embedding size, per weight
    decay (left), and held-out accuracy per training fraction (right); median over seeds
    and their range.  Returns the two axes."""
    _check_result(result)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8, 3.8), constrained_layout=True)
    a, b = axes
    dims = np.array(result.setup.dims)
    for (wd, acc), c in zip(result.held_out.items(), palette(6), strict=False):
        _median_band(a, dims, acc, c, f"held-out facts, weight decay {wd}")
        a.plot(
            dims,
            np.median(result.train_acc[wd], 1),
            ":",
            color=c,
            label=f"training pairs, weight decay {wd}",
        )
    a.set(
        ylim=(0, 1.03),
        xlabel="embedding size d",
        ylabel="accuracy",
        title=f"(a) Too small underfits, too large memorizes\n(median, band: "
        f"{len(result.setup.seeds)} seeds)",
    )
    # the largest fraction in (a)'s colour for no weight decay (the same runs' split), then
    # colours (a) does not use
    starved_colors = [palette(6)[i] for i in (0, 2, 3, 4, 5)]
    for (frac, acc), c in zip(
        sorted(result.starved.items(), reverse=True), starved_colors, strict=False
    ):
        _median_band(b, dims, acc, c, f"held-out facts, train on {frac:.0%} of pairs")
    b.set(
        ylim=(0, 1.03),
        xlabel="embedding size d",
        ylabel="accuracy",
        title="(b) Starved of data\n(no weight decay)",
    )
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
    _check_result(result)
    wds = list(result.stitched)
    fig, spare = None, None
    if axes is None:  # two columns (7.5 in wide), the legend in a spare panel
        rows = (len(wds) + 2 + 1) // 2
        fig, grid = plt.subplots(rows, 2, figsize=(7.5, 3.1 * rows), constrained_layout=True)
        grid = grid.ravel()
        axes, spare = grid[: len(wds) + 1], grid[len(wds) + 1 :]
        for ax in spare:
            ax.axis("off")
    dims, colors = np.array(result.setup.dims), palette(6)
    for ax, wd in zip(axes, wds, strict=False):
        for (name, (label, fmt)), c in zip(STITCH_STYLES.items(), colors, strict=False):
            if name in result.stitched[wd]:
                _median_band(ax, dims, result.stitched[wd][name], c, label, fmt)
        ax.set(
            ylim=(0, 1.03),
            xlabel="embedding size d",
            ylabel="held-out fact accuracy",
            title=f"Stitching into B, weight decay {wd}\n({len(result.setup.seeds)} seeds of B)",
        )
        log_ticks(ax, dims)
    handles, names = axes[0].get_legend_handles_labels()
    if spare is not None and len(spare):
        spare[0].legend(handles, names, loc="center", fontsize=9)
    else:
        (fig or axes[0].figure).legend(
            handles, names, loc="outside lower center", ncol=4, fontsize=9
        )
    ax = axes[len(wds)]
    for (wd, c), marker in zip(zip(wds, colors, strict=False), "osD^v", strict=False):
        _median_band(ax, dims, result.cka[wd], c, f"across seeds, wd {wd}", marker + "-")
        _median_band(
            ax, dims, result.cka_random[wd], c, f"trained vs random, wd {wd}", marker + ":"
        )
    ax.set(
        ylim=(-0.1, 1),
        xlabel="embedding size d",
        ylabel="debiased CKA",
        title="CKA between embeddings",
    )
    log_ticks(ax, dims)
    ax.legend(fontsize=8)
    return axes

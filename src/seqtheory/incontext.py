"""In-context learning of Markov chains (ICL-MC): experiment set-ups, evaluation, mechanism.

* :class:`ICLSetup` holds one experiment's task, model and optimiser settings; :data:`SETUP`
  is the chapter's main run at CPU and ``FULL=1`` sizes (``FULL=1`` is :data:`PAPER`, the
  configuration of the authors' code, a single set-up), :data:`TRIGRAM_SETUP` its
  second-order task at both sizes.
* :func:`run` trains the transformer of a set-up (the one entry point) and returns an
  :class:`ICLRun`: the set-up, seed, device, the trained model, its History and evaluator.
* :class:`ICLEvaluator` measures a model on a fixed held-out batch: its loss, its KL
  divergence to every reference strategy and to the true transition row (averaged over
  positions and at the last position), and two attention statistics of the induction-head
  mechanism (:func:`induction_attention`).
* :class:`MinimalICL` is a two-layer model small enough to analyse: a learned
  relative-position softmax in layer 1 and a bilinear attention on one-hot tokens in
  layer 2.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

from .book.plotting import palette
from .core.attention import (
    attention_to_offset,
    attention_without_offset,
    override_pattern,
    uniform_causal_pattern,
)
from .core.ensemble import Ensemble, member_eval
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import Transformer, TransformerConfig
from .core.runtime import Sizes, evaluating
from .core.seeds import make_generator
from .core.training import History, TrainConfig, train
from .core.validate import check_choice, check_float, check_int
from .sources.markov import (
    PRIORS,
    graded_batch,
    icl_mc_batch,
    kl_divergence,
    ngram_name,
    sequence_loss,
    strategies,
)

__all__ = [
    "ICLSetup",
    "SETUP",
    "PAPER",
    "TRIGRAM_SETUP",
    "ICLEvaluator",
    "ICLRun",
    "ICLSeedsRun",
    "run",
    "run_seeds",
    "induction_attention",
    "switch_step",
    "phases",
    "rise_step",
    "plateau_index",
    "bigram_gap",
    "first_visits",
    "switch_width",
    "layer1_profile",
    "contrast_share",
    "first_step",
    "escape_steps",
    "layer2_steps",
    "unigram_plateau",
    "plot_phases",
    "history_from_record",
    "MinimalICL",
    "predict_next",
    "ABLATIONS",
    "circuit_ablations",
    "STREAMS",
]

#: the random streams of :func:`run` and :func:`run_seeds` (logical seeds under the base seed):
#: ``training`` draws :func:`run`'s weights, then its batches and dropout masks; ``weights``
#: and ``data`` member ``s``'s initial weights and batches in :func:`run_seeds`, ``dropout``
#: its dropout masks; ``heldout`` the evaluator's sequences (both runs)
STREAMS = Streams(training=0, weights=0, heldout=1234, data=10_000, dropout=20_000)


@dataclass(frozen=True)
class ICLSetup:
    """Task, model and optimiser sizes of one ICL-MC training run."""

    k: int = 3  # states of the chain (vocabulary size)
    T: int = 100  # tokens per sequence
    alpha: float = 1.0  # Dirichlet concentration of each row of P
    order: int = 1  # Markov order (1: bigram statistics are Bayes-optimal)
    prior: str = "dirichlet"  # or "doubly_stochastic" (order 1): no unigram signal, or
    #                             "graded": doubly stochastic with probability ds_fraction,
    #                             else i.i.d. tokens (markov.sample_graded_matrices)
    ds_fraction: float = 1.0  # "graded" prior only: share of doubly stochastic chains
    n_layers: int = 2  # transformer depth
    n_heads: int | tuple = 1  # heads per layer (int, or one per layer)
    d_model: int = 16  # residual width
    attn_only: bool = True  # no MLPs
    layer_norm: bool = True  # pre-LN in every sublayer and before the unembedding
    pos_encoding: str = "learned"
    dropout: float = 0.0  # dropout on embeddings, attention weights and sublayer outputs
    batch_size: int = 64  # sequences per step
    lr: float = 1e-3  # AdamW learning rate (constant)
    betas: tuple = (0.9, 0.999)  # AdamW moment coefficients
    weight_decay: float = 0.0  # AdamW decoupled weight decay ...
    decay: str = "all"  # ... on "all" parameters or on "linear" weights only
    grad_clip: float | None = 1.0  # global gradient-norm clipping (None: off)
    steps: int = 2000  # optimisation steps
    eval_every: int = 50  # evaluate every this many steps

    def __post_init__(self) -> None:
        check_int("k", self.k, minimum=2)
        check_int("T", self.T, minimum=2)
        check_float("alpha", self.alpha, low=0.0, low_open=True)
        check_int("order", self.order, minimum=1)
        check_choice("prior", self.prior, (*PRIORS, "graded"))
        check_float("ds_fraction", self.ds_fraction, low=0.0, high=1.0)
        check_int("batch_size", self.batch_size, minimum=1)
        if self.prior != "dirichlet" and self.order != 1:
            raise ValueError(f"prior={self.prior!r} needs order=1, got order={self.order}")
        self.model_config()  # the transformer's own checks (sizes, heads, positions)
        self.train_config()  # and the optimiser's (lr, steps, betas, ...)

    def model_config(self) -> TransformerConfig:
        """The transformer for this set-up (inputs are the first T - 1 tokens)."""
        return TransformerConfig(
            vocab_size=self.k,
            max_len=self.T,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_model=self.d_model,
            attn_only=self.attn_only,
            layer_norm=self.layer_norm,
            pos_encoding=self.pos_encoding,
            dropout=self.dropout,
        )

    def train_config(self, **changes) -> TrainConfig:
        """The optimiser settings of this set-up as a :class:`TrainConfig` (``changes``, e.g.
        ``snapshot_steps``, override its fields)."""
        return TrainConfig(
            **{
                "steps": self.steps,
                "lr": self.lr,
                "eval_every": self.eval_every,
                "betas": tuple(self.betas),
                "weight_decay": self.weight_decay,
                "decay": self.decay,
                "grad_clip": self.grad_clip,
                **changes,
            }
        )

    @property
    def input_len(self) -> int:
        """Tokens the model reads per training sequence (T - 1): later positions are untrained."""
        return self.T - 1

    def sample(self, n: int, generator: torch.Generator | None = None):
        """``n`` sequences (n, T) of this task and their transition matrices."""
        if self.prior == "graded":
            if self.order != 1:
                raise ValueError(f"the graded prior needs order=1, got order={self.order}")
            return graded_batch(n, self.k, self.T, self.ds_fraction, generator=generator)
        return icl_mc_batch(
            n, self.k, self.T, self.alpha, order=self.order, prior=self.prior, generator=generator
        )

    def model(self, seed: int | None = None, *, base: int | None = None) -> Transformer:
        """A freshly initialised transformer: weights from ``seeded(seed, base=base)``
        (torch's global generator is left as it was), or from the global generator when
        ``seed`` is None."""
        return Transformer(self.model_config(), seed=seed, base=base)

    def batch(self, step: int = 0, generator: torch.Generator | None = None):
        """A fresh training batch ``(inputs, targets)``: tokens ``x[:, :-1]`` and ``x[:, 1:]``."""
        x, _ = self.sample(self.batch_size, generator)
        return x[:, :-1], x[:, 1:]

    def replace(self, **changes) -> ICLSetup:
        """A copy with some fields changed."""
        return replace(self, **changes)


#: the configuration of the authors' code for the ICL-MC paper (Edelman et al., 2024; their
#: ``training_pipeline.py``, ``mingpt/trainer.py``, ``mingpt/model_rpe.py``): relative
#: positions, dropout 0.1, AdamW lr 5e-4, betas (0.9, 0.95), weight decay 0.1 on the weights of
#: linear layers only, no gradient clipping, batch 64, constant rate.  Differences that remain:
#: their relative position is a learned vector per distance dotted with the query (ours a
#: learned scalar per distance and head), their output projections start at std 0.01 (ours
#: 0.02), and their sequences have 101 tokens (ours T = 100).
PAPER = ICLSetup(
    pos_encoding="relative",
    dropout=0.1,
    lr=5e-4,
    betas=(0.9, 0.95),
    weight_decay=0.1,
    decay="linear",
    grad_clip=None,
    steps=4000,
    eval_every=50,
)

#: the chapter's main run: k = 3, T = 100, alpha = 1, 2-layer attention-only, d_model = 16
#: (CPU); ``FULL=1`` selects :data:`PAPER`
SETUP = Sizes(cpu=ICLSetup(), full=PAPER)

#: binary second-order chains (Bayes rule: the in-context trigram), two heads in layer 1 (one
#: per offset), d_model = 32; trained by scripts/icl_trigram.py (the chapter's archived run)
TRIGRAM_SETUP = Sizes(
    cpu=ICLSetup(k=2, order=2, n_heads=(2, 1), d_model=32, lr=3e-3, steps=4000),
    full=ICLSetup(k=2, order=2, n_heads=(2, 1), d_model=32, lr=3e-3, steps=10000, eval_every=100),
)


def induction_attention(pattern: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Attention mass on "matching" keys: from query t to keys s with x[s - 1] == x[t].

    A statistical induction head puts its attention on exactly those positions: their
    tokens are the ones that followed earlier occurrences of the current token, so their
    average is the in-context bigram estimate.  ``pattern`` is (B, H, T, T) and ``x`` is
    (B, T); returns (B, H), averaged over queries that have at least one matching key.
    """
    if pattern.dim() != 4 or pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(f"pattern must have shape (B, H, T, T), got {tuple(pattern.shape)}")
    B, H, T, _ = pattern.shape
    if tuple(x.shape) != (B, T):
        raise ValueError(f"x must have shape ({B}, {T}), got {tuple(x.shape)}")
    return _matching_mass(pattern, _matching_keys(x, pattern.dtype))


def _matching_keys(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T, T) indicator of the keys s <= t with x[s - 1] == x[t] (causal)."""
    T = x.shape[1]
    prev = torch.full_like(x, -1)
    prev[:, 1:] = x[:, :-1]  # token before key s
    match = (prev[:, None, :] == x[:, :, None]) & torch.ones(T, T, dtype=torch.bool).tril()
    return match.to(dtype)


def _matching_mass(pattern: torch.Tensor, match: torch.Tensor) -> torch.Tensor:
    """Mean attention mass (B, H) on the keys of ``match`` over queries with a match."""
    mass = torch.einsum("bhts,bts->bht", pattern, match)  # (B, H, T)
    has = (match.sum(-1) > 0).to(pattern.dtype)[:, None, :]  # (B, 1, T)
    return (mass * has).sum(-1) / has.sum(-1).clamp_min(1.0)


class ICLEvaluator:
    """Held-out measurements of a model on the ICL-MC task of ``setup``.

    Call it as ``eval_fn(model, step)`` inside :func:`seqtheory.train`.  Metrics (nats):
    ``loss`` (mean over the T positions, first token scored as ln k, like the reference
    table), ``KL(<strategy>||model)`` for uniform, unigram, ..., the Bayes n-gram, and
    ``KL(P||model)`` to the true next-token row, each averaged over positions and, with
    the suffix `` @last``, at the last position.  For transformers also the attention on
    the previous position in layer 1 and on matching positions in layer 2.
    """

    def __init__(self, setup: ICLSetup, n: int = 512, seed: int = 1234, *, base: int | None = None):
        n = check_int("n", n, minimum=1)
        gen = make_generator(seed, base=base)  # logical seed ``seed`` under ``base``
        self.setup = setup
        self.x, self.P = setup.sample(n, gen)
        refs = strategies(self.x, self.P, setup.alpha)
        self.oracle = refs.pop("oracle")
        self.strategies = refs  # name -> (B, T, k)
        self.bayes = ngram_name(setup.order + 1)
        self.reference_loss = {
            name: sequence_loss(p, self.x).mean().item()
            for name, p in {**refs, "oracle": self.oracle}.items()
        }
        self._match = None  # matching-key mask, built on first use

    def model_probs(self, model: nn.Module) -> tuple[torch.Tensor, object]:
        """The model's next-token distributions on the held-out batch: (B, T, k), on the CPU
        (the model runs on the device of its parameters)."""
        param = next(model.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
        x = self.x.to(device)
        if isinstance(model, Transformer):
            logits, cache = model(x, return_cache=True)
            if device.type != "cpu":
                cache.attn = [a.cpu() for a in cache.attn]
            return logits.cpu().double().softmax(-1), cache
        return model(x).cpu().double().exp(), None  # models returning log-probs

    def __call__(self, model: nn.Module, step: int = 0) -> dict[str, float]:
        probs, cache = self.model_probs(model)
        out = {"loss": sequence_loss(probs, self.x).mean().item()}
        for name, q in {**self.strategies, "P": self.oracle}.items():
            kl = kl_divergence(q[:, :-1], probs[:, :-1])  # (B, T-1): positions with a target
            out[f"KL({name}||model)"] = kl.mean().item()
            out[f"KL({name}||model) @last"] = kl[:, -1].mean().item()
        if cache is not None:
            out["layer-1 previous-token attention"] = (
                attention_to_offset(cache.attn[0], 1).max(-1).values.mean().item()
            )
            pattern = cache.attn[-1]  # (B, H, T, T)
            if self._match is None or self._match.dtype != pattern.dtype:
                self._match = _matching_keys(self.x, pattern.dtype)  # fixed held-out batch
            out["layer-2 induction attention"] = (
                _matching_mass(pattern, self._match).max(-1).values.mean().item()
            )
        return out


@dataclass
class ICLRun(RunInfo):
    """The result of :func:`run`: a trained model with its set-up, seed, history, evaluator
    (``seconds``: the training loop's)."""

    model: nn.Module  # the trained transformer (on ``device``; ``.cpu()`` to analyse)
    history: History  # per-step losses, evaluations, snapshots
    evaluator: ICLEvaluator  # the held-out batch and reference strategies it was measured on


def _switch_watch(evaluator: ICLEvaluator, stop_after_switch: int | None, eval_every: int):
    """``(eval_fn, stop_when)`` for :func:`~seqtheory.core.training.train`: ``eval_fn`` runs
    ``evaluator`` and notes whether the model is nearer the bigram than the unigram rule;
    ``stop_when`` is true once it has been at every evaluation of the last
    ``stop_after_switch + eval_every`` steps (None: no stop rule)."""
    closer = []  # per evaluation: (step, nearer bigram than unigram?)

    def eval_fn(model, step):
        out = evaluator(model, step)
        closer.append((step, out["KL(bigram||model)"] < out["KL(unigram||model)"]))
        return out

    def stop_when(row):
        if stop_after_switch is None or not closer[-1][1]:
            return False
        since = [s for s, c in closer if not c]  # the last evaluation not nearer the bigram
        return closer[-1][0] - (since[-1] if since else 0) >= stop_after_switch + eval_every

    return eval_fn, (None if stop_after_switch is None else stop_when)


@experiment(ICLSetup, STREAMS)
def run(
    setup: ICLSetup,
    ctx: Experiment,
    *,
    eval_n: int = 256,
    snapshot_every: int | None = None,
    desc: str | None = None,
    eval_setup: ICLSetup | None = None,
    stop_after_switch: int | None = None,
) -> ICLRun:
    """Build the transformer of ``setup``, train it on fresh ICL-MC batches, evaluate every
    ``setup.eval_every`` steps on ``eval_n`` held-out sequences (of the task of
    ``eval_setup``, default ``setup``) and keep snapshots every ``snapshot_every`` steps.
    With ``stop_after_switch = n``, training ends at the first evaluation at which every
    evaluation of the last ``n + setup.eval_every`` steps was closer to the bigram than to
    the unigram rule.

    Randomness (:data:`STREAMS` under the base seed ``ctx.seed``): the weights, then the
    batches and dropout masks, are drawn from torch's global generators inside
    ``ctx.seeded("training")`` (one stream, the bits of the book's runs), which restores
    their state afterwards; the held-out sequences come from stream ``heldout``.
    Batches are drawn on the CPU and moved to ``ctx.device`` (default the CPU) once per
    step, so without dropout a GPU run sees exactly the batches of the same seed on the CPU.
    """
    if eval_setup is not None and not isinstance(eval_setup, ICLSetup):
        raise TypeError(f"eval_setup must be an ICLSetup, got {type(eval_setup).__name__}")
    if stop_after_switch is not None:
        check_int("stop_after_switch", stop_after_switch, minimum=1)
    device = ctx.device
    snaps = (
        ()
        if snapshot_every is None
        else tuple(
            range(0, setup.steps + 1, check_int("snapshot_every", snapshot_every, minimum=1))
        )
    )
    evaluator = ICLEvaluator(
        eval_setup or setup, n=eval_n, seed=ctx.logical("heldout"), base=ctx.seed
    )
    eval_fn, stop_when = _switch_watch(evaluator, stop_after_switch, setup.eval_every)
    if device.type == "cuda":
        torch.cuda.init()  # so that seeded() restores its generator too
    with ctx.seeded("training"):  # weights, then batches and dropout masks
        model = setup.model().to(device)
        history = train(
            model,
            setup.batch,
            setup.train_config(snapshot_steps=snaps),
            eval_fn=eval_fn,
            stop_when=stop_when,
            desc=desc or "ICL-MC",
            progress=ctx.progress,
        )
    return ICLRun(
        **ctx.header(setup, history.seconds), model=model, history=history, evaluator=evaluator
    )


@dataclass
class ICLSeedsRun(RunInfo):
    """The result of :func:`run_seeds`: one model per seed, trained as one batched program
    (``seconds``: the training loop's)."""

    seeds: tuple  # the members' indices in streams weights and data
    ensemble: Ensemble  # the trained members (``.member(m)`` is a Transformer)
    history: History  # per-step (M,) losses; evaluations (evals, M) per metric
    evaluator: ICLEvaluator  # the held-out batch all members were measured on

    def switch_steps(self, lower: str = "bigram", upper: str = "unigram") -> list:
        """Per member, :func:`switch_step` of its own curves (None: it never switched)."""
        steps, near_low = self.history.metric(f"KL({lower}||model)")  # (evals, M)
        _, near_up = self.history.metric(f"KL({upper}||model)")
        return [
            _first_lasting(steps, near_low[:, m] < near_up[:, m]) for m in range(len(self.seeds))
        ]


@experiment(ICLSetup, STREAMS)
def run_seeds(
    setup: ICLSetup, ctx: Experiment, *, seeds=(0, 1, 2), eval_n: int = 256, desc: str | None = None
) -> ICLSeedsRun:
    """Train the transformer of ``setup`` once per index in ``seeds`` as one batched
    program (:class:`~seqtheory.core.ensemble.Ensemble`), each member on its own fresh ICL-MC
    batches, all evaluated every ``setup.eval_every`` steps on the same ``eval_n`` held-out
    sequences (stream ``heldout``).

    Randomness (:data:`STREAMS` under the base seed ``ctx.seed``): member ``s`` starts from
    the weights built inside ``ctx.seeded("weights", s)`` (member 0 starts where :func:`run`
    starts) and draws its batches from its own generator ``ctx.generator("data", s)`` on
    ``ctx.device``, so a member trains the same whichever others train with it.
    Dropout masks come from torch's global generator inside ``ctx.seeded("dropout")``.
    Unlike :func:`run` (batches drawn on the CPU from one stream, the same on every device)
    the batches are drawn on the device: a GPU run draws other batches than a CPU run."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of ints, got {seeds!r}")
    seeds = tuple(check_int("seeds", s, minimum=0) for s in seeds)
    device = ctx.device
    evaluator = ICLEvaluator(setup, n=eval_n, seed=ctx.logical("heldout"), base=ctx.seed)
    ens = Ensemble(
        setup.model,
        [ctx.logical("weights", s) for s in seeds],  # checks them
        base=ctx.seed,
    ).to(device)
    gens = [ctx.generator("data", s) for s in seeds]

    def batch(step):
        xs = [setup.sample(setup.batch_size, g)[0] for g in gens]
        x = torch.stack(xs)  # (M, B, T)
        return x[..., :-1], x[..., 1:]

    if device.type == "cuda":
        torch.cuda.init()  # so that seeded() restores its generator
    with ctx.seeded("dropout"):  # dropout masks
        history = train(
            ens,
            batch,
            setup.train_config(),
            eval_fn=member_eval(evaluator),
            desc=desc or f"ICL-MC, {len(seeds)} seeds",
            progress=ctx.progress,
        )
    return ICLSeedsRun(
        **ctx.header(setup, history.seconds),
        seeds=seeds,
        ensemble=ens,
        history=history,
        evaluator=evaluator,
    )


def predict_next(model: nn.Module, setup: ICLSetup, x: torch.Tensor) -> torch.Tensor:
    """The model's distribution (B, k) over the token after ``x`` (B, L), float64.

    ``L`` may be at most ``setup.input_len`` = T - 1, the input length of training: with
    learned positions the embedding of position T - 1 never receives a gradient.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError("x must be a (B, L) tensor of token ids")
    if not 1 <= x.shape[1] <= setup.input_len:
        raise ValueError(
            f"x must have 1..{setup.input_len} tokens (the training input "
            f"length T - 1), got {x.shape[1]}"
        )
    with evaluating(model):
        logits = model(x)
    return logits[:, -1].double().softmax(-1)


def plot_phases(
    history: History,
    ax=None,
    strategies=("uniform", "unigram", "bigram"),
    colors: dict | None = None,
):
    """KL(strategy || model) against training step (log scale), the background shaded by
    the strategy the model is closest to.  Returns the axes."""
    strategies = list(strategies)
    if ax is None:
        _, ax = plt.subplots()
    if colors is None:
        colors = dict(zip(strategies, palette(len(strategies) + 1)[1:], strict=True))
    curves = []
    for name in strategies:
        steps, kl = history.metric(f"KL({name}||model)")
        curves.append(kl)
        ax.plot(steps, kl, lw=2, color=colors[name], label=name)
    closest = np.argmin(np.stack(curves), axis=0)
    edges = np.r_[steps[0], (steps[1:] + steps[:-1]) / 2, steps[-1]]
    for i, c in enumerate(closest):
        ax.axvspan(edges[i], edges[i + 1], color=colors[strategies[c]], alpha=0.12, lw=0)
    ax.set(
        yscale="log", ylim=(1e-3, 1), xlabel="training step", ylabel="KL(strategy ‖ model) (nats)"
    )
    ax.legend(title="distance to", loc="lower left", ncol=len(strategies), fontsize="small")
    return ax


def history_from_record(record: dict, names=("uniform", "unigram", "bigram")) -> History:
    """A :class:`History` holding the evaluations of an archived run (a dict with ``steps``,
    ``loss`` and ``KL(<name>||model)`` lists, as the ``scripts/icl_*.py`` files store them),
    so that :func:`plot_phases`, :func:`switch_step` and friends work on it."""
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict, got {type(record).__name__}")
    keys = ["steps", "loss", *(f"KL({n}||model)" for n in names)]
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValueError(f"record lacks {missing}; it has {sorted(record)}")
    n = len(record["steps"])
    bad = [k for k in keys if len(record[k]) != n]
    if bad:
        raise ValueError(f"{bad} must have one value per step ({n})")
    evals = [
        {
            "step": int(record["steps"][i]),
            "loss": float(record["loss"][i]),
            **{f"KL({m}||model)": float(record[f"KL({m}||model)"][i]) for m in names},
        }
        for i in range(n)
    ]
    return History(evals=evals)


def switch_step(history: History, lower: str = "bigram", upper: str = "unigram") -> int | None:
    """First evaluated step (after the model left the uniform guess) at which the model is
    closer to ``lower`` than to ``upper`` and stays so; None if it never switches."""
    steps, near_low = history.metric(f"KL({lower}||model)")
    _, near_up = history.metric(f"KL({upper}||model)")
    return _first_lasting(steps, near_low < near_up)


def _first_lasting(steps, closer) -> int | None:
    """The first evaluated step after step 0 from which ``closer`` holds to the end."""
    for i in range(1, len(steps)):
        if closer[i:].all():
            return int(steps[i])
    return None


def phases(steps, curves: dict) -> list[tuple[str, int, int]]:
    """The strategies the model was closest to, in the order it visited them.

    ``steps`` are the evaluated steps and ``curves`` maps each strategy name to its
    KL(strategy || model) at those steps (a :class:`History` gives both through
    ``history.metric``).  Returns ``(name, first step, last step)`` for every maximal run of
    evaluations with the same closest strategy, e.g. ``[("uniform", 0, 50), ("unigram",
    100, 900), ("bigram", 950, 2000)]``.
    """
    names = list(curves)
    if not names:
        raise ValueError("curves must name at least one strategy")
    steps = np.asarray(steps)
    kl = np.stack([np.asarray(curves[n], dtype=float) for n in names])
    if kl.shape[1] != steps.shape[0]:
        raise ValueError(f"curves have {kl.shape[1]} values for {steps.shape[0]} steps")
    closest = kl.argmin(0)
    out = []
    for i, c in enumerate(closest):
        if out and out[-1][0] == names[c]:
            out[-1] = (names[c], out[-1][1], int(steps[i]))
        else:
            out.append((names[c], int(steps[i]), int(steps[i])))
    return out


def rise_step(steps, values, start: int, frac: float = 0.5) -> int | None:
    """First evaluated step after index ``start`` at which ``values`` has covered ``frac`` of
    its rise from ``values[start]`` to its final value (None if it does not rise)."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    lo, hi = values[start], values[-1]
    if not hi > lo:
        return None
    reached = np.nonzero(values[start:] >= lo + frac * (hi - lo))[0]
    return int(steps[start + reached[0]])


def plateau_index(history) -> int:
    """The index of the evaluation at which the model is closest to the unigram rule (the
    step that stands for its unigram plateau)."""
    return int(np.argmin(history.metric("KL(unigram||model)")[1]))


def bigram_gap(history, evaluator) -> float:
    """The final held-out loss above the bigram (Bayes) rule's loss on the same sequences."""
    return float(history.final("loss") - evaluator.reference_loss["bigram"])


def first_visits(ph) -> dict:
    """The earliest step at which each strategy of :func:`~seqtheory.incontext.phases` was
    the closest."""
    out: dict = {}
    for name, first, _ in ph:
        out.setdefault(name, first)
    return out


def switch_width(steps, kl_bigram, ph, level: float = 0.05) -> int | None:
    """Steps from the last evaluation closest to the unigram rule to the first with
    KL(bigram || model) below ``level`` (None without a unigram phase)."""
    left = [last for name, _, last in ph if name == "unigram"]
    if not left:
        return None
    near_bigram = int(np.asarray(steps)[np.argmax(np.asarray(kl_bigram) < level)])
    return near_bigram - max(left)


def layer1_profile(prev_at) -> dict:
    """Layer 1's weight on the previous token by query position t = 1, 2, ...: its mean over
    the first ten queries, the last query with more than half, and its mean ratio to
    uniform attention's 1/(t+1) beyond t = 60."""
    prev_at = np.asarray(prev_at)
    t_query = np.arange(1, len(prev_at) + 1)
    sharp = t_query[prev_at > 0.5]
    return {
        "prev_early": float(prev_at[:10].mean()),
        "prev_late_ratio": float((prev_at[60:] * (t_query[60:] + 1)).mean()),
        "prev_reach": float(sharp.max()) if sharp.size else None,
    }


def contrast_share(grad_W) -> float:
    """The cosine between a step ``-grad_W`` on the minimal model's (k, k) layer-2 matrix and
    the bigram direction ``I - 11^T / k`` (1: a pure diagonal contrast, 0: orthogonal)."""

    if (
        not isinstance(grad_W, torch.Tensor)
        or grad_W.ndim != 2
        or grad_W.shape[0] != grad_W.shape[1]
        or grad_W.shape[0] < 2
    ):
        raise ValueError(
            f"grad_W must be a square (k, k) tensor with k >= 2, got "
            f"{getattr(grad_W, 'shape', type(grad_W).__name__)}"
        )
    k = grad_W.shape[0]
    direction = torch.eye(k) - torch.full((k, k), 1.0 / k)
    norm = grad_W.norm() * direction.norm()
    if norm == 0:
        return 0.0
    return float(-(grad_W.detach().cpu() * direction).sum() / norm)


def first_step(hist, name: str, level: float) -> int | None:
    """The first evaluated step at which metric ``name`` reaches ``level`` (None if never)."""
    steps, values = hist.metric(name)
    if not (values >= level).any():
        return None
    return int(steps[np.argmax(values >= level)])


def escape_steps(runs: dict) -> dict:
    """Per minimal-model run (label -> History): the first step at which layer 1 puts half
    its weight on distance 1 (None: not within the run)."""
    return {label: first_step(h, "layer-1 weight on distance 1", 0.5) for label, h in runs.items()}


def layer2_steps(runs: dict) -> dict:
    """Per minimal-model run (label -> History): the first step at which the contrast
    between W's diagonal and off-diagonal entries reaches 0.25 (layer 2 has moved)."""
    return {label: first_step(h, "W diagonal contrast", 0.25) for label, h in runs.items()}


def unigram_plateau(history) -> dict:
    """The unigram phase before the switch: its length in steps (every evaluation at which
    the unigram rule was the closest, before :func:`~seqtheory.incontext.switch_step`),
    the smallest KL from the unigram rule before the switch, and the switch step."""
    steps, near_uni = history.metric("KL(unigram||model)")
    switch = switch_step(history)
    before = steps < (np.inf if switch is None else switch)
    curves = {n: history.metric(f"KL({n}||model)")[1] for n in ("uniform", "unigram", "bigram")}
    every = int(steps[1] - steps[0])
    length = sum(
        last - first + every
        for name, first, last in phases(steps, curves)
        if name == "unigram" and (switch is None or first < switch)
    )
    return {
        "length": float(length),
        "kl_min": float(near_uni[before].min()),
        "switch": None if switch is None else float(switch),
    }


class MinimalICL(nn.Module):
    """A two-layer model of the statistical induction head that can be written on a napkin.

    Layer 1 mixes one-hot tokens with a softmax over *relative positions* only:
    ``h_s = sum_{r <= s} softmax_r(w[s - r]) e(x_r)``; ideally ``w`` selects distance 1, so
    ``h_s = e(x_{s-1})``.  Layer 2 attends from query t to keys s <= t with the bilinear
    score ``e(x_t)^T W h_s`` and averages the one-hot tokens ``e(x_s)``; with
    ``W = c I`` and large c it averages the tokens that followed earlier copies of
    ``x_t``, the in-context bigram estimate.  With ``w = 0, W = 0`` (the initialisation)
    both layers average uniformly and the output is the in-context unigram frequency.
    Returns log-probabilities (B, T, k), smoothed by ``eps``.
    """

    def __init__(self, k: int, T: int, eps: float = 0.02):
        super().__init__()
        self.k = check_int("k", k, minimum=2)
        self.T = check_int("T", T, minimum=2)
        self.eps = eps
        self.w = nn.Parameter(torch.zeros(T))  # layer-1 logit per distance 0..T-1
        self.W = nn.Parameter(torch.zeros(k, k))  # layer-2 bilinear form
        idx = torch.arange(T)
        self.register_buffer("dist", (idx[:, None] - idx[None, :]).clamp(min=0), persistent=False)
        self.register_buffer("causal", idx[:, None] >= idx[None, :], persistent=False)

    def layer1(self, T: int) -> torch.Tensor:
        """Layer-1 attention (T, T): a softmax over relative positions, causal."""
        scores = self.w[self.dist[:T, :T]].masked_fill(~self.causal[:T, :T], float("-inf"))
        return scores.softmax(-1)

    def forward(self, x: torch.Tensor, return_attn: bool = False):
        B, T = x.shape
        if T > self.T:
            raise ValueError(f"sequence length {T} exceeds T={self.T}")
        e = nn.functional.one_hot(x, self.k).float()  # (B, T, k)
        A1 = self.layer1(T)  # (T, T)
        h = A1 @ e  # (B, T, k)
        scores = (e @ self.W) @ h.transpose(1, 2)  # (B, T, T)
        A2 = scores.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(-1)
        p = A2 @ e  # (B, T, k)
        logp = ((1 - self.eps) * p + self.eps / self.k).log()
        return (logp, (A1, A2)) if return_attn else logp

    def diagnostics(self) -> dict[str, float]:
        """How far each layer is from the induction solution: layer-1 weight on distance 1,
        and the diagonal minus the off-diagonal mean of W (0 at initialisation)."""
        a1 = self.layer1(self.T)
        W = self.W.detach()
        off = (W.sum() - W.diagonal().sum()) / (self.k * (self.k - 1))
        return {
            "layer-1 weight on distance 1": attention_to_offset(a1, 1).item(),
            "W diagonal contrast": (W.diagonal().mean() - off).item(),
        }


#: the ablations of :func:`circuit_ablations`: label -> (layer, what replaces its pattern)
ABLATIONS = {
    "layer 1: no previous-token weight": (0, "without offset 1"),
    "layer 1: no weight on itself (control)": (0, "without offset 0"),
    "layer 1: mean pattern": (0, "mean"),
    "layer 1: uniform": (0, "uniform"),
    "layer 2: mean pattern": (-1, "mean"),
    "layer 2: uniform": (-1, "uniform"),
}


def circuit_ablations(model: Transformer, evaluator: ICLEvaluator) -> dict[str, float]:
    """Held-out loss (nats) of ``model`` with one piece of the induction circuit knocked out.

    Each entry of :data:`ABLATIONS` replaces the attention pattern of every head of one
    layer (layer 1 or the last layer) during the forward pass, through a transformer hook
    (:func:`~seqtheory.core.attention.override_pattern`): ``without offset o`` removes the weight
    on key ``t - o`` and renormalises the rest, ``mean`` uses the head's mean pattern over the
    held-out batch (positions kept, content dependence removed), ``uniform`` spreads the
    weight evenly over the prefix. ``"none"`` is the intact model.  The model runs on the
    device of its parameters.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a seqtheory Transformer, got {type(model).__name__}")
    if not isinstance(evaluator, ICLEvaluator):
        raise TypeError(f"evaluator must be an ICLEvaluator, got {type(evaluator).__name__}")
    with evaluating(model):
        param = next(model.parameters())
        x = evaluator.x.to(param.device)  # (B, T)
        _, cache = model(x, return_cache=True)
        n_layers = len(cache.attn)

        def loss(**intervention) -> float:
            probs = model(x, **intervention).cpu().double().softmax(-1)  # (B, T, k)
            return sequence_loss(probs, evaluator.x).mean().item()

        out = {"none": loss()}
        for label, (layer, how) in ABLATIONS.items():
            layer %= n_layers
            if how.startswith("without offset"):
                o = int(how.split()[-1])
                new = lambda p, o=o: attention_without_offset(p, o)  # noqa: E731
                override = {layer: new}
            elif how == "mean":
                means = cache.attn[layer].mean(0)  # (H, T, T)
                override = {(layer, h): means[h] for h in range(means.shape[0])}
            else:
                override = {layer: uniform_causal_pattern(x.shape[1]).to(param.device)}
            out[label] = loss(hooks=override_pattern(override))
        return out

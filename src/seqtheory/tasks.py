"""The "meet the model" experiment: a one-layer transformer learns to copy the previous token.

:class:`PreviousTokenSetup` holds its sizes (:data:`SETUP`: CPU and ``FULL=1``), :func:`run`
trains the main model (with snapshots) and a few more seeds as one batched Ensemble and
returns a :class:`PreviousTokenResult`; :func:`previous_token_batch` makes the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .core.attention import attention_to_offset
from .core.ensemble import Ensemble, member_eval
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import Transformer, TransformerConfig
from .core.runtime import Sizes, check_device
from .core.seeds import check_generator_device
from .core.training import IGNORE_INDEX, History, TrainConfig, train
from .core.validate import check_float, check_int

__all__ = [
    "previous_token_batch",
    "PreviousTokenSetup",
    "SETUP",
    "PreviousTokenResult",
    "evaluate",
    "run",
    "STREAMS",
]

#: the random streams of :func:`run` (logical seeds under the base seed): ``weights`` of the
#: main model (index 0) and of the Ensemble's members (index ``s`` of ``setup.seeds``),
#: ``heldout`` the held-out set, ``data`` the main run's batches, ``member_data`` the
#: Ensemble's batches
STREAMS = Streams(weights=0, heldout=50, data=200, member_data=100)


def previous_token_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    offset: int = 1,
    generator: torch.Generator | None = None,
    device: str | torch.device | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniform random tokens; the target at position t is the token at t - ``offset``.

    Returns ``(x, y)`` of shape (batch_size, seq_len); the first ``offset`` targets are
    ``-100`` (nothing to copy yet), so the loss ignores them.  The batch is drawn on
    ``device`` (None: where ``generator`` lives, else the CPU), which must be the
    generator's device.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seq_len = check_int("seq_len", seq_len, minimum=2)
    vocab_size = check_int("vocab_size", vocab_size, minimum=2)
    offset = check_int("offset", offset, minimum=1)
    if offset >= seq_len:
        raise ValueError(f"offset must be < seq_len={seq_len}, got {offset}")
    gen_device = generator.device if generator is not None else torch.device("cpu")
    device = gen_device if device is None else check_device("device", device)
    check_generator_device(generator, device)
    x = torch.randint(vocab_size, (batch_size, seq_len), generator=generator, device=device)
    y = torch.full_like(x, IGNORE_INDEX)  # (B, T)
    y[:, offset:] = x[:, :-offset]
    return x, y


@dataclass(frozen=True)
class PreviousTokenSetup:
    """Sizes of the "meet the model" experiment (see :data:`SETUP`)."""

    vocab_size: int = 8  # tokens 0..7
    seq_len: int = 24  # positions per sequence
    offset: int = 1  # the target at t is the token at t - offset
    batch_size: int = 64  # sequences per step
    d_model: int = 32  # residual-stream width of the one-layer, one-head model
    pos_encoding: str = "learned"  # how the model knows positions (models.POS_ENCODINGS)
    steps: int = 300  # optimisation steps
    lr: float = 1e-3  # AdamW learning rate
    eval_every: int = 10  # evaluate (and snapshot) the main run every this many steps
    eval_n: int = 512  # held-out sequences
    seeds: tuple = (1, 2, 3)  # the extra seeds trained together as one Ensemble
    seeds_eval_every: int = 30  # evaluate the Ensemble every this many steps

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, minimum=2)
        check_int("seq_len", self.seq_len, minimum=2)
        check_int("offset", self.offset, minimum=1)
        if self.offset >= self.seq_len:
            raise ValueError(f"offset must be < seq_len={self.seq_len}, got {self.offset}")
        check_int("batch_size", self.batch_size, minimum=1)
        check_int("steps", self.steps, minimum=1)
        check_float("lr", self.lr, low=0.0, low_open=True)
        check_int("eval_every", self.eval_every, minimum=1)
        check_int("eval_n", self.eval_n, minimum=1)
        check_int("seeds_eval_every", self.seeds_eval_every, minimum=1)
        if not isinstance(self.seeds, tuple) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in self.seeds
        ):
            raise TypeError(f"seeds must be a tuple of ints >= 0, got {self.seeds!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct, got {self.seeds}")
        self.model_config()  # the transformer's own checks

    def model_config(self) -> TransformerConfig:
        """The one-layer, one-head, attention-only transformer of the experiment."""
        return TransformerConfig(
            vocab_size=self.vocab_size,
            max_len=self.seq_len,
            n_layers=1,
            n_heads=1,
            d_model=self.d_model,
            attn_only=True,
            pos_encoding=self.pos_encoding,
        )

    def batch(
        self,
        n: int,
        generator: torch.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` sequences of the task and their targets (see :func:`previous_token_batch`)."""
        return previous_token_batch(
            n, self.seq_len, self.vocab_size, offset=self.offset, generator=generator, device=device
        )


#: CPU-sized default and the ``FULL=1`` size of the "meet the model" experiment.
SETUP = Sizes(
    cpu=PreviousTokenSetup(),
    full=PreviousTokenSetup(
        vocab_size=64, seq_len=128, d_model=64, steps=2000, eval_every=50, seeds_eval_every=150
    ),
)


@dataclass
class PreviousTokenResult(RunInfo):
    """The result of :func:`run`: the main run (with snapshots) and the extra seeds
    (``seconds``: both training loops together)."""

    model: Transformer  # the main run's trained model (on ``device``)
    history: History  # its losses, evaluations and snapshots (every eval_every)
    ensemble: Ensemble  # the models of ``setup.seeds``, trained as one program
    ensemble_history: History  # their evaluations: (evals, len(seeds)) per metric
    eval_x: torch.Tensor  # the held-out inputs (eval_n, seq_len), on the CPU
    eval_y: torch.Tensor  # their targets (-100: no target)


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Held-out loss, accuracy of the most likely token, and attention on the previous
    position (layer 1, head 1) of a one-layer ``model`` on inputs ``x`` with targets ``y``.
    Positions without a target (``y == -100``) are left out."""
    logits, cache = model(x, return_cache=True)
    keep = y != IGNORE_INDEX  # (B, T)
    return {
        "held-out loss": F.cross_entropy(logits[keep], y[keep]),
        "accuracy": (logits.argmax(-1)[keep] == y[keep]).float().mean(),
        "previous-token attention": attention_to_offset(cache.attn[0], 1).mean(),
    }


@experiment(PreviousTokenSetup, STREAMS)
def run(setup: PreviousTokenSetup, ctx: Experiment) -> PreviousTokenResult:
    """Train the one-layer transformer of ``setup`` on the previous-token task, and the
    same model for each of ``setup.seeds`` as one batched :class:`~seqtheory.Ensemble`.

    Randomness (:data:`STREAMS` under the base seed ``ctx.seed``).  Main run: weights
    ``("weights", 0)``, held-out set ``heldout``, batches ``data``, evaluated and
    snapshotted every ``eval_every`` steps.  Ensemble: member weights ``("weights", s)``
    for ``s`` in ``setup.seeds``, batches ``member_data``, evaluated on the same held-out
    set every ``seeds_eval_every`` steps.  Generators live on ``ctx.device``, so batches
    are drawn where the models train.
    """
    device, progress = ctx.device, ctx.progress
    cfg = setup.model_config()
    eval_x, eval_y = setup.batch(setup.eval_n, ctx.generator("heldout"), device)
    model = Transformer(cfg, seed=ctx.logical("weights", 0), base=ctx.seed).to(device)
    data = ctx.generator("data")
    every = setup.eval_every
    history = train(
        model,
        lambda step: setup.batch(setup.batch_size, data, device),
        TrainConfig(
            steps=setup.steps,
            lr=setup.lr,
            eval_every=every,
            snapshot_steps=tuple(range(0, setup.steps + 1, every)),
        ),
        eval_fn=lambda m, step: evaluate(m, eval_x, eval_y),
        progress=progress,
        desc="previous-token head",
    )
    seeds = tuple(setup.seeds)
    ens = Ensemble(
        lambda: Transformer(cfg), [ctx.logical("weights", s) for s in seeds], base=ctx.seed
    ).to(device)
    g = ctx.generator("member_data")
    shape = (len(seeds), setup.batch_size, setup.seq_len)

    def ensemble_batch(step):
        x, y = setup.batch(len(seeds) * setup.batch_size, g, device)
        return x.view(shape), y.view(shape)

    ens_history = train(
        ens,
        ensemble_batch,
        TrainConfig(steps=setup.steps, lr=setup.lr, eval_every=setup.seeds_eval_every),
        eval_fn=member_eval(lambda m, step: evaluate(m, eval_x, eval_y)),
        progress=progress,
        desc=f"{len(seeds)} seeds",
    )
    return PreviousTokenResult(
        **ctx.header(setup, history.seconds + ens_history.seconds),
        model=model,
        history=history,
        ensemble=ens,
        ensemble_history=ens_history,
        eval_x=eval_x.cpu(),
        eval_y=eval_y.cpu(),
    )

"""Meet the model (``book/meet_the_model.md``): a previous-token head in one attention layer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..book.notebook import spread
from ..core.models import Transformer
from ..core.seeds import experiment_seed, make_generator
from ..core.training import History, TrainConfig, train
from ..core.validate import check_int
from ..tasks import STREAMS, PreviousTokenSetup, evaluate

TABLE = ClaimTable(
    "meet_the_model",
    [
        Claim(
            "training.uniform_start",
            "Before training the model predicts nearly uniformly: its loss is ln k.",
            "max(abs(v - ln_k) for v in start_loss) < 0.05",
            "a large initialisation (logits far from zero) or a loss that is not the mean "
            "cross-entropy",
        ),
        Claim(
            "training.spread_attention",
            "At step 0 query t spreads its attention over its t keys: the mean weight on the "
            "previous position is within 0.02 of 0.12, what an even spread gives.",
            "max(abs(v - 0.12) for v in start_attn) < 0.02",
            "an untrained head that already favours (or avoids) the previous position",
        ),
        Claim(
            "training.loss_to_zero",
            "Its loss falls from the uniform guess ln k to nearly zero, on every seed.",
            "max(final_loss) < 0.15 * ln_k",
            "a seed that does not learn to copy keeps a loss near ln k",
        ),
        Claim(
            "training.accuracy",
            "Every seed ends with near-perfect accuracy.",
            "min(final_accuracy) > 0.97",
            "a seed stuck below 97 % accuracy",
        ),
        Claim(
            "training.previous_token_head",
            "Every seed puts almost all of its attention on the previous position: a "
            "previous-token head.",
            "min(final_attn) > 0.8",
            "a seed that copies through a diffuse pattern, or forms no head",
        ),
        Claim(
            "training.together",
            "The loss falls while the attention on the previous position rises, in every run: "
            "over the evaluations the two curves' Pearson correlation is below -0.95.",
            "max(loss_attn_corr) < -0.95",
            "attention that does not rise as the loss falls, or lags it: a lag of 30 steps "
            "(about half the rise) gives about -0.88",
        ),
    ],
)
claims = TABLE.claims_for


@TABLE.computes("training")
def _training(result) -> dict:
    """The main run and the extra seeds, each as one entry of a list (main run last)."""
    history, ens = result.history, result.ensemble_history
    _, held_out = history.metric("held-out loss")
    _, prev_attn = history.metric("previous-token attention")
    _, ens_loss = ens.metric("held-out loss")  # (evals, seeds)
    _, ens_attn = ens.metric("previous-token attention")
    corr = [np.corrcoef(ens_loss[:, m], ens_attn[:, m])[0, 1] for m in range(ens_loss.shape[1])]
    corr.append(np.corrcoef(held_out, prev_attn)[0, 1])
    return {
        "meet_acc": spread(ens.final("accuracy"), 3),
        "meet_attn": spread(ens.final("previous-token attention"), 2),
        "ln_k": float(np.log(result.setup.vocab_size)),
        "start_loss": [*ens_loss[0], held_out[0]],
        "start_attn": [*ens_attn[0], prev_attn[0]],
        "final_loss": [*ens_loss[-1], held_out[-1]],
        "final_accuracy": [*ens.final("accuracy"), history.final("accuracy")],
        "final_attn": [*ens_attn[-1], prev_attn[-1]],
        "loss_attn_corr": corr,
    }


# ------------------------------------------------------------------ the exercises' quick run
@dataclass
class QuickRun:
    """What :func:`quick_run` returns: the trained model, its history and held-out set."""

    setup: PreviousTokenSetup
    model: Transformer  # the trained one-layer model (on the CPU)
    history: History  # held-out loss, accuracy, previous-token attention per evaluation
    eval_x: torch.Tensor  # the held-out inputs (eval_n, seq_len)
    eval_y: torch.Tensor  # their targets (-100: no target)

    @property
    def metrics(self) -> dict[str, float]:
        """The last evaluation: held-out loss, accuracy and previous-token attention."""
        return {
            name: float(self.history.final(name))
            for name in ("held-out loss", "accuracy", "previous-token attention")
        }


def quick_run(setup: PreviousTokenSetup, *, seed: int | None = None) -> QuickRun:
    """Train only the main model of :func:`~seqtheory.tasks.run` on the CPU: the same
    weights, batches and held-out set for the same ``seed`` (streams ``weights``, ``data``,
    ``heldout`` of ``tasks.STREAMS``),
    without snapshots or extra seeds -- the exercises' one-second run.  It evaluates every
    ``eval_every`` steps, or about 30 times in all for a longer run."""
    if not isinstance(setup, PreviousTokenSetup):
        raise TypeError(f"setup must be a PreviousTokenSetup, got {type(setup).__name__}")
    seed = experiment_seed(seed)
    eval_x, eval_y = setup.batch(setup.eval_n, make_generator(STREAMS.seed("heldout"), base=seed))
    model = Transformer(setup.model_config(), seed=STREAMS.seed("weights"), base=seed)
    data = make_generator(STREAMS.seed("data"), base=seed)
    history = train(
        model,
        lambda step: setup.batch(setup.batch_size, data),
        TrainConfig(
            steps=setup.steps, lr=setup.lr, eval_every=max(setup.eval_every, setup.steps // 30)
        ),
        eval_fn=lambda m, step: evaluate(m, eval_x, eval_y),
        progress=False,
    )
    return QuickRun(setup, model, history, eval_x, eval_y)


def blind_bound(vocab_size: int, seq_len: int) -> float:
    """The lowest expected loss of any model that sees the query's token and the multiset
    of tokens so far, but not their order: the best guess of x_{t-1} is the frequency of
    each token among x_1..x_{t-1}, whose count of the target is 1 + Binomial(t - 2, 1/k);
    averaged over the targets t = 2..seq_len (nats)."""
    check_int("vocab_size", vocab_size, minimum=2)
    check_int("seq_len", seq_len, minimum=2)
    p, total = 1.0 / vocab_size, 0.0
    for t in range(2, seq_len + 1):
        n = t - 2
        mean_log = sum(
            math.comb(n, c) * p**c * (1 - p) ** (n - c) * math.log(1 + c) for c in range(n + 1)
        )
        total += math.log(t - 1) - mean_log
    return total / (seq_len - 1)


# ------------------------------------------------------------------ coding labs
LABS = LabTable(
    "meet_the_model",
    [
        Lab(
            "ex-meet-the-model-1",
            expects="the held-out loss (nats) of an untrained model with 32 tokens",
            quantity="the untrained loss with k = 32",
            low=3.3,
            high=3.65,
            because="small initial weights give logits near zero, hence a near-uniform "
            "prediction whose cross-entropy is ln 32 = 3.47 nats",
            hint="build the model from replace(small, vocab_size=32), draw the held-out batch "
            "with 32 tokens too, and report the loss, not the accuracy.",
        ),
        Lab(
            "ex-meet-the-model-2",
            expects="the final held-out loss (nats) of the model trained without positions",
            quantity="the held-out loss without positions",
            low=1.5,
            high=1.95,
            because="a head without positions sees its context as a multiset of tokens, so it "
            "can at best spread probability over the tokens seen (no position-blind "
            "model beats 1.54 nats), yet it learns that much (below ln 8 = 2.08)",
            hint="train with pos_encoding='none' (every other setting as in the chapter) and "
            "report the loss after training, not at step 0.",
        ),
        Lab(
            "ex-meet-the-model-3",
            expects="the mean attention of the offset-5 model on the key five positions back",
            quantity="the attention on offset 5",
            low=0.7,
            high=1.0,
            because="learned positional embeddings let the QK circuit match query t with key "
            "t - 5 as easily as with key t - 1, so one head still suffices",
            hint="train with replace(small, offset=5) and measure attention_to_offset(pattern, 5) "
            "on that model's layer-1 pattern.",
        ),
        Lab(
            "ex-meet-the-model-4",
            expects="a dict with the final 'loss' and 'attention' (on the previous position) of "
            "the model with relative positions trained for 1,000 steps",
            quantity="the previous-token attention of a model whose loss is below 0.1 nats "
            "(0 when it is not)",
            measure=lambda a: a["attention"] if a["loss"] < 0.1 else 0.0,
            low=0.25,
            high=0.5,
            because="one scalar per distance sets the head's pattern and AdamW moves it by about "
            "the learning rate per step, so the head stays soft (under half of its weight on "
            "t - 1); the OV circuit's scale turns its modest margin into a confident copy",
            hint="train replace(small, pos_encoding='relative', steps=1000) -- 300 steps are "
            "not enough for its loss to fall -- and report the final loss and attention.",
        ),
    ],
)
feedback = LABS.feedback

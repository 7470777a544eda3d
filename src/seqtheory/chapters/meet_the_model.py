"""Meet the model (``book/meet_the_model.md``): a previous-token head in one attention layer."""
from __future__ import annotations

import numpy as np

from ..claims import Claim, ClaimTable
from ..utils import spread

TABLE = ClaimTable("meet_the_model", [
    Claim("training.uniform_start",
          "Before training the model predicts nearly uniformly: its loss is ln k.",
          "max(abs(v - ln_k) for v in start_loss) < 0.05",
          "a large initialisation (logits far from zero) or a loss that is not the mean "
          "cross-entropy"),
    Claim("training.spread_attention",
          "At step 0 query t spreads its attention over its t keys (about 0.12 on the "
          "previous position).",
          "max(start_attn) < 0.3",
          "an untrained head that already attends to the previous position"),
    Claim("training.loss_to_zero",
          "Its loss falls from the uniform guess ln k to nearly zero, on every seed.",
          "max(final_loss) < 0.15 * ln_k",
          "a seed that does not learn to copy keeps a loss near ln k"),
    Claim("training.accuracy",
          "Every seed ends with near-perfect accuracy.",
          "min(final_accuracy) > 0.97",
          "a seed stuck below 97 % accuracy"),
    Claim("training.previous_token_head",
          "Every seed puts almost all of its attention on the previous position: a "
          "previous-token head.",
          "min(final_attn) > 0.8",
          "a seed that copies through a diffuse pattern, or forms no head"),
    Claim("training.together",
          "The loss falls while the attention on the previous position rises, in every run.",
          "max(loss_attn_corr) < -0.8",
          "attention that sharpens after the loss has already fallen, or not at all"),
])
claims = TABLE.claims_for


@TABLE.computes("training")
def _training(result) -> dict:
    """The main run and the extra seeds, each as one entry of a list (main run last)."""
    history, ens = result.history, result.ensemble_history
    _, held_out = history.metric("held-out loss")
    _, prev_attn = history.metric("previous-token attention")
    _, ens_loss = ens.metric("held-out loss")            # (evals, seeds)
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

"""Reference solutions of the meet the model chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``meet_the_model.labs.json`` next to this file.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from seqtheory.chapters.meet_the_model import (
    LABS,
    quick_run,
)
from seqtheory.core.attention import attention_to_offset
from seqtheory.core.models import Transformer
from seqtheory.core.seeds import make_generator
from seqtheory.tasks import (
    SETUP,
    evaluate,
)


@LABS.solves(
    "ex-meet-the-model-1",
    mistakes=(
        ("the 8-token model's loss (vocab_size left at 8)", 2.0855),
        ("the accuracy instead of the loss", 0.0296),
    ),
)
def _predict_before_you_run(seed: int) -> float:
    wide = replace(SETUP.cpu, vocab_size=32)
    untrained = Transformer(wide.model_config(), seed=0, base=seed)
    x32, y32 = wide.batch(512, make_generator(1, base=seed))
    with torch.no_grad():
        return evaluate(untrained, x32, y32)["held-out loss"].item()


@LABS.solves(
    "ex-meet-the-model-2",
    mistakes=(
        ("positions left on (pos_encoding='learned')", 0.0076),
        ("the loss at step 0", 2.0844),
    ),
)
def _positions_away(seed: int) -> float:
    return quick_run(replace(SETUP.cpu, pos_encoding="none"), seed=seed).metrics["held-out loss"]


@LABS.solves(
    "ex-meet-the-model-3",
    mistakes=(
        ("the attention on offset 1 of the offset-5 model", 0.0165),
        ("offset 5 measured on a model trained with offset 1", 0.0116),
    ),
)
def _further_back(seed: int) -> float:
    far = quick_run(replace(SETUP.cpu, offset=5), seed=seed)
    pattern = far.model.attention_patterns(far.eval_x)[0]  # (B, 1, T, T)
    return attention_to_offset(pattern, 5).mean().item()


@LABS.solves(
    "ex-meet-the-model-4",
    mistakes=(
        (
            "learned positions instead of relative ones",
            {"loss": 0.0076, "attention": 0.9497},
        ),
        (
            "relative positions, but only the chapter's 300 steps",
            {"loss": 1.0066, "attention": 0.2116},
        ),
    ),
)
def _relative(seed: int) -> dict:
    rel = quick_run(replace(SETUP.cpu, pos_encoding="relative", steps=1000), seed=seed)
    return {
        "loss": rel.metrics["held-out loss"],
        "attention": rel.metrics["previous-token attention"],
    }

"""seqtheory.chapters.meet_the_model: the numbers the page quotes, from a made-up run."""

from types import SimpleNamespace

import numpy as np
import pytest

from seqtheory.chapters import meet_the_model as chapter
from seqtheory.core.training import History


def _history(loss, attn, acc):
    rows = zip(loss, attn, acc, strict=True)
    return History(
        evals=[
            {"step": 10 * i, "held-out loss": x, "previous-token attention": a, "accuracy": c}
            for i, (x, a, c) in enumerate(rows)
        ]
    )


def _result(learns=True):
    loss = [np.log(8), 1.0, 0.05]
    attn = [0.12, 0.6, 0.95]
    ens = _history(
        [np.array([v, v + 0.01]) for v in loss],
        [np.array([a, a]) for a in (attn if learns else [0.12, 0.13, 0.12])],
        [np.array([c, c]) for c in (0.1, 0.6, 0.99)],
    )
    return SimpleNamespace(
        setup=SimpleNamespace(vocab_size=8),
        history=_history(loss, attn, [0.1, 0.6, 0.99]),
        ensemble_history=ens,
    )


def test_training_values_put_the_main_run_last():
    values = chapter.claims("training", _result())
    assert values["start_loss"] == pytest.approx([np.log(8), np.log(8) + 0.01, np.log(8)])
    assert values["final_attn"] == pytest.approx([0.95, 0.95, 0.95])
    assert values["meet_acc"] == "0.990 [0.990, 0.990]"
    assert all(c.holds(values) for c in chapter.TABLE.claims)


def test_a_seed_without_a_head_fails_its_claims():
    values = chapter.claims("training", _result(learns=False))
    failed = {c.id for c in chapter.TABLE.claims if not c.holds(values)}
    assert "training.previous_token_head" in failed

"""Reference solutions of the copying chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``copying.labs.json`` next to this file.
"""

from __future__ import annotations

import torch

from seqtheory.chapters.copying import LABS
from seqtheory.copying import (
    NUM_LETTERS,
    SETUP,
    CopyLSTM,
    repeat_probability,
    train_copier,
)
from seqtheory.core.seeds import (
    make_generator,
    seeded,
)

HASH_NS = (2, 3, 4, 5)


def lookup_copy_accuracy(strings: torch.Tensor, n: int) -> float:
    """Fraction of ``strings`` (B, L) of letter ids that an ideal n-gram lookup copies exactly.

    The lookup writes letter ``i >= n`` of the copy as the letter that follows the first
    occurrence of the n-gram ``s[i-n:i]`` in the string (the first n letters are given). It
    errs exactly when some n-gram occurs twice followed by different letters.
    """
    L = strings.shape[1]
    grams = strings.long().unfold(1, n, 1)[:, : L - n]  # (B, L - n, n)
    code = grams @ (NUM_LETTERS ** torch.arange(n))  # (B, L - n)
    follow = strings[:, n:]  # (B, L - n)
    clash = (code[:, :, None] == code[:, None, :]) & (
        follow[:, :, None] != follow[:, None, :]
    )  # (B, L - n, L - n)
    return float(1 - clash.flatten(1).any(dim=1).float().mean())


@LABS.solves(
    "ex-copying-2",
    mistakes=(
        (
            "Lemma 2.4's bound L^2 26^-n instead of a simulation",
            [1.0, 10_000 / 26**3, 10_000 / 26**4, 10_000 / 26**5],
        ),
        (
            "the union bound C(98, 2) / 26^3 instead of a simulation",
            [1.0, 4753 / 26**3, 4851 / 26**4, 4656 / 26**5],
        ),
        ("the list starts at n = 1 (letters)", [1.0, 0.999, 0.237, 0.0104]),
    ),
)
def _hashing_fails(seed: int) -> list[float]:
    return [repeat_probability(100, n, size=5000, seed=seed) for n in HASH_NS]


@LABS.solves(
    "ex-copying-3",
    mistakes=(
        ("the 128-unit LSTM (hidden left at its default)", 0.03),
        ("trained at the transformer's rate 1e-3", 0.002),
    ),
)
def _more_state(seed: int) -> float:
    setup = SETUP.cpu
    with seeded(0, base=seed):
        lstm = CopyLSTM(hidden=256)
    history = train_copier(lstm, setup, lr=setup.lr_for("LSTM"), progress=False, seed=seed)
    return history.final("acc_train_len")


@LABS.solves(
    "ex-copying-4",
    mistakes=(
        ("a lookup on the last letter alone (n = 1)", 0.0),
        ("a trigram lookup (n = 3) instead of a bigram one", 0.99),
    ),
)
def _ideal_lookup(seed: int) -> float:
    strings = torch.randint(
        NUM_LETTERS, (2000, SETUP.cpu.test_len), generator=make_generator(5, base=seed)
    )
    return lookup_copy_accuracy(strings, 2)

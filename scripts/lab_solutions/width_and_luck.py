"""Reference solutions of the width and luck chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``width_and_luck.labs.json`` next to this file.
"""

from __future__ import annotations

from seqtheory.book.archive import load_data
from seqtheory.chapters.width_and_luck import (
    LABS,
    TICKET_LAB,
    WD_LAB,
    equal_compute_counts,
    ticket_networks,
)
from seqtheory.core.seeds import make_generator
from seqtheory.parity import (
    ParityMLPs,
    support_coverage,
    train_offline,
)


@LABS.solves(
    "ex-width-and-luck-2",
    mistakes=(
        (
            "every width read after the last step, 20,000",
            [[10, 16, 16, 16], [15, 16, 16, 16]],
        ),
        ("every width read after 6,000 steps", [[10, 13, 16, 16], [12, 16, 16, 16]]),
    ),
)
def _equal_compute(seed: int) -> list[list[int]]:
    arch = load_data("width_frontier.json")
    return [equal_compute_counts(arch, init, 600) for init in ("dense", "sparse")]


@LABS.solves(
    "ex-width-and-luck-3",
    mistakes=(
        ("weight decay left at 0.01 in both runs", [15, 15]),
        ("the two runs in swapped order", [0, 15]),
    ),
)
def _weight_decay(seed: int) -> list[int]:
    c = WD_LAB
    out = []
    for wd in (0.01, 0.0):
        g = make_generator(13, base=seed)
        nets = ParityMLPs(c["n"], [c["width"]] * c["networks"], generator=g)
        run = train_offline(
            nets,
            [0, 1, 2],
            c["m"],
            steps=c["steps"],
            weight_decay=wd,
            eval_every=c["steps"],
            generator=g,
            progress=False,
        )
        out.append(int((run.accuracy[-1] >= 0.9).sum()))
    return out


@LABS.solves(
    "ex-width-and-luck-4",
    mistakes=(
        (
            "neurons that see at least k - 1 support coordinates counted as tickets",
            [0.963, 1.0, 1.0],
        ),
        ("the mean number of full tickets per layer", [0.153, 0.677, 2.547]),
        ("dense initialisation (every neuron sees the support)", [1.0, 1.0, 1.0]),
    ),
)
def _count_tickets(seed: int) -> list[float]:
    g = make_generator(11, base=seed)
    out = []
    for w in (32, 128, 512):
        layers = ParityMLPs(30, [w] * 300, sparsity=6, generator=g)
        J = support_coverage(layers, [0, 1, 2])  # (300, w)
        out.append(float((J == 3).any(dim=1).float().mean()))
    return out


@LABS.solves(
    "ex-width-and-luck-9",
    mistakes=(
        ("the 48 neurons of smallest coverage J instead of the largest", [0, 0]),
        ("random neurons for both halves", [0, 0]),
    ),
)
def _tickets_alone(seed: int) -> list[int]:
    c = TICKET_LAB
    nets, g = ticket_networks(seed)
    run = train_offline(
        nets,
        [0, 1, 2],
        c["m"],
        steps=c["steps"],
        eval_every=c["steps"],
        generator=g,
        progress=False,
    )
    ok = run.accuracy[-1] >= 0.9
    return [int(ok[: c["networks"]].sum()), int(ok[c["networks"] :].sum())]

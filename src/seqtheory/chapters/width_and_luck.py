"""Width and luck (``book/width_and_luck.md``): parities trade data, width, steps and luck."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..core.seeds import make_generator
from ..parity import (
    INITS,
    ParityMLPs,
    coverage_distribution,
    expected_lucky_neurons,
    fisher_two_sided,
    lucky_neuron_probability,
    support_coverage,
)

#: the archive's 0.1% binomial band for 24 live runs of its cells at m = 400-800, 6,000 steps:
#: width 512 (80 of 96) at least 14, width 32 (53 of 96) at most 20 (tested against the archive)
WIDE_BAND = (14, 20)

TABLE = ClaimTable(
    "width_and_luck",
    [
        # ------------------------------------------------------------ the lottery arithmetic
        Claim(
            "lottery.sampled_coverage",
            "The coverage distribution P(J = j) of the formula matches 32,768 sampled sparse "
            "neurons of ParityMLPs (each class within 4 binomial standard errors).",
            "max(coverage_z) < 4",
            "sparse masks that are not uniform s-subsets, e.g. biased towards the low "
            "coordinates where the support is",
        ),
        # ------------------------------------------------------------ the live grid
        Claim(
            "grid.floor_200",
            "(Almost) nothing learns from 200 examples, whatever the width or initialisation.",
            "wl_200 <= 1",
            "two or more runs that learn from 200 examples",
        ),
        Claim(
            "grid.dense_400_rare",
            "At m = 400 dense networks (almost) never succeed within 6,000 steps.",
            "wl_400_dense <= 2",
            "three or more dense runs at m = 400 that succeed",
            scale="cpu",
        ),
        Claim(
            "grid.sparse_400_ahead",
            "At m = 400 sparsely initialised networks succeed in a good share of runs, well "
            "ahead of the dense ones.",
            "wl_400_sparse - wl_400_dense >= 3",
            "sparse networks no better than dense ones at m = 400 (fewer than 3 of 12 runs ahead)",
            scale="cpu",
        ),
        Claim(
            "grid.dense_more_data",
            "With 600-800 examples dense networks mostly succeed too.",
            "wl_dense_more >= wl_more_of / 2",
            "fewer than half of the dense runs at m = 600 and 800 succeed",
        ),
        Claim(
            "grid.width_pays",
            "From 400 examples on, the live widest and narrowest networks each fall within the "
            "archive's 0.1% binomial band for the same cells (width 512: 80 of 96 at 6,000 "
            "steps, at least 14 of 24; width 32: 53 of 96, at most 20 of 24), and the widest "
            "are not behind.",
            f"wl_wide_n >= {WIDE_BAND[0]} and wl_narrow_n <= {WIDE_BAND[1]} "
            "and wl_wide_n >= wl_narrow_n",
            "width that stopped paying in the live runs, e.g. the narrowest networks 21 or more "
            "of 24, the widest 13 or fewer, or the widest behind the narrowest",
            scale="cpu",
        ),
        # ------------------------------------------------------------ the mechanism
        Claim(
            "mechanism.enough_networks",
            "Enough wide sparse networks succeed to measure where their support weight sits.",
            "wl_mech_n >= 10",
            "fewer than 10 successful sparse networks of width 128 and 512",
        ),
        Claim(
            "mechanism.share_rises",
            "In wide successful sparse networks the tickets' share of the support weight rises "
            "well above its initial share.",
            "wide_final_median - wide_init_median >= 0.2",
            "learned support weight that does not concentrate on the tickets (a median rise "
            "below 0.2)",
        ),
        Claim(
            "mechanism.rises_in_most",
            "The share rose in the great majority of wide successful sparse networks.",
            "wide_rise_fraction >= 0.75",
            "a rise in fewer than three in four networks (about half would rise by chance)",
        ),
        Claim(
            "mechanism.tickets_hold_most",
            "After training the tickets hold most of the support weight, far above their "
            "neuron fraction.",
            "wide_final_median >= 0.5",
            "a median final share below one half (the neuron fraction, about 0.09, is the "
            "no-preference baseline once the initial weights decay)",
        ),
        Claim(
            "mechanism.narrow_weaker",
            "In the narrowest networks the share rises less than in the wide ones.",
            "wl_mech_n32 >= 4 and narrow_final_median - narrow_init_median "
            "< wide_final_median - wide_init_median",
            "narrow networks that concentrate as much as the wide ones, or too few successful "
            "ones to tell",
        ),
        Claim(
            "mechanism.narrow_between",
            "In the narrowest networks the tickets still carry more than their number, but a "
            "smaller share than in the wide networks.",
            "narrow_neuron_fraction < narrow_final_median < wide_final_median",
            "narrow tickets holding as much of the support weight as wide ones, or no more "
            "than their neuron fraction",
        ),
        # ------------------------------------------------------------ the archived frontier
        Claim(
            "frontier.same_setup",
            "The archived run trained the chapter's networks: same task, sparsity, optimiser, "
            "weight decay and success criterion.",
            "setup_mismatch == []",
            "a change of the library's set-up (e.g. its weight decay) without regenerating "
            "the archive",
        ),
        Claim(
            "frontier.floor",
            "None of the archived runs with at most 200 examples succeeds, at any width, "
            "initialisation or recorded step.",
            "wf_floor_hits == 0",
            "an archived run that learns from 200 examples or fewer",
        ),
        Claim(
            "frontier.luck_below_tickets",
            "At m = 300 the sparse networks' success rate never falls as the width grows and "
            "stays below the chance that the layer holds a full ticket, at every width "
            "(archived run).",
            "min(luck_rate_steps) >= 0 and luck_rate_minus_ticket < 0",
            "a width that succeeds more often than it draws a full ticket at m = 300, or a "
            "wider layer that succeeds less often",
        ),
        Claim(
            "frontier.partial_tickets_400",
            "At m = 400 the narrowest sparse networks succeed more than twice as often as they "
            "draw a full ticket: partial tickets suffice there (archived run).",
            "partial_ratio > 2",
            "narrow networks at m = 400 that succeed no more often than their full tickets allow",
        ),
        Claim(
            "frontier.restarts_like_width",
            "At m = 300, for every width that succeeds at all, restarts up to as many neurons "
            "as a wider network succeed with a probability within 0.15 of that network's "
            "(archived run).",
            "restart_gap_max <= 0.15",
            "a pair of widths where restarts and width buy clearly different luck",
        ),
        Claim(
            "slice.agrees",
            "The live runs agree with the archive's cells of the same width, sample size and "
            "number of steps (no Fisher test below 1e-3).",
            "min(slice_p) >= 1e-3",
            "code that drifted from the archive, e.g. sparse m = 400 live 0 of 12 against 28 of 48",
        ),
    ],
)
claims = TABLE.claims_for

FRONT_W = 512  # width of the frontier's samples x steps panels
#: (width, steps) pairs of about equal compute, width x steps ~ 640,000 neuron-steps
EQUAL_COMPUTE = ((32, 20000), (128, 5000), (512, 1250), (2048, 500))
#: sample size, initialisation and width pair of the luck table (restarts against width)
LUCK_M, LUCK_INIT, LUCK_PAIR = 300, "sparse", (64, 512)
PARTIAL_M = 400  # a sample size at which partial tickets suffice
#: the set-up fields the archive must share with the chapter's networks
SHARED_FIELDS = ("n", "k", "sparsity", "lr", "weight_decay", "success")


# --------------------------------------------------------------------------- the archive
def arch_count(arch: dict, init: str, width: int, m: int, step=None) -> int:
    """Successful seeds of one archived cell after ``step`` steps (default: the last recorded)."""
    steps = np.asarray(arch["eval_steps"])
    if step is None:
        t = len(steps) - 1
    else:
        hit = np.flatnonzero(steps == step)
        if not hit.size:
            raise ValueError(
                f"step must be a recorded step of the archive (every "
                f"{arch['meta']['eval_every']}), got {step}"
            )
        t = int(hit[0])
    return int(arch["successes"][init][str(width)][str(m)][t])


def pooled_arch(arch: dict, init: str, widths, m: int, step=None) -> tuple[int, int]:
    """Successful archived runs of one (init, m), summed over ``widths``, and the runs in all."""
    return (
        sum(arch_count(arch, init, w, m, step) for w in widths),
        arch["meta"]["seeds"] * len(widths),
    )


def min_samples(arch: dict, init: str, width: int, step: int):
    """Smallest archived m with a success rate of at least 1/2 after ``step`` (None if none)."""
    half = arch["meta"]["seeds"] / 2
    ok = [m for m in arch["meta"]["samples"] if arch_count(arch, init, width, m, step) >= half]
    return min(ok) if ok else None


def steps_to_half(arch: dict, init: str, width: int, m: int) -> int:
    """First recorded step at which one archived cell succeeds in half its seeds (-1: never)."""
    half = arch["meta"]["seeds"] / 2
    return int(
        next(
            (
                t
                for t in np.asarray(arch["eval_steps"])
                if arch_count(arch, init, width, m, t) >= half
            ),
            -1,
        )
    )


def equal_compute_counts(arch: dict, init: str, m: int = 600, pairs=EQUAL_COMPUTE) -> list[int]:
    """Successful seeds at ``m`` for each (width, steps) pair of about equal compute."""
    return [arch_count(arch, init, w, m, t) for w, t in pairs]


def archive_floor(arch: dict, max_m: int = 200) -> tuple[int, int]:
    """Successes of the archived runs with at most ``max_m`` examples, at any recorded step,
    and the number of such runs."""
    meta = arch["meta"]
    small = [m for m in meta["samples"] if m <= max_m]
    hits = sum(
        arch_count(arch, i, w, m, t)
        for i in meta["inits"]
        for w in meta["widths"]
        for m in small
        for t in arch["eval_steps"]
    )
    return hits, meta["seeds"] * len(meta["widths"]) * len(meta["inits"]) * len(small)


def sample_drops(arch: dict, step=None) -> list[tuple[str, int, list[int]]]:
    """The archive's rows (initialisation, width) whose successful seeds fall somewhere as
    the sample size grows, after ``step`` (default: the last recorded), with their counts."""
    meta = arch["meta"]
    out = []
    for init in meta["inits"]:
        for w in meta["widths"]:
            counts = [arch_count(arch, init, w, m, step) for m in meta["samples"]]
            if np.any(np.diff(counts) < 0):
                out.append((init, w, counts))
    return out


def width_comparison(arch: dict) -> dict:
    """Archived successes of narrow (8-32) against wide (1024-2048) networks: sparse at
    m = 300 and dense at m = 400, as ``{init: (narrow, runs, wide, runs)}``."""
    widths = arch["meta"]["widths"]
    narrow, wide = [w for w in widths if w <= 32], [w for w in widths if w >= 1024]
    return {
        init: (*pooled_arch(arch, init, narrow, m), *pooled_arch(arch, init, wide, m))
        for init, m in (("sparse", 300), ("dense", 400))
    }


def num_parameters(width: int, n: int) -> int:
    """Trainable parameters of one two-layer network of ``width`` on ``n`` inputs."""
    if width < 1 or n < 1:
        raise ValueError(f"width and n must be >= 1, got width={width}, n={n}")
    return width * (n + 2) + 1


def sq_margin(arch: dict) -> float:
    """How far the smallest archived cell is above the SQ lower bound's reach: the least
    parameters x steps x samples over the grid (first recorded step > 0), divided by
    ``C(n, k) / 2``."""
    meta = arch["meta"]
    n, k = meta["setup"]["n"], meta["setup"]["k"]
    first = min(t for t in arch["eval_steps"] if t > 0)
    least = num_parameters(min(meta["widths"]), n) * first * min(meta["samples"])
    return least / (math.comb(n, k) / 2)


def restarts_needed(p: float, target: float = 0.9):
    """Independent restarts for at least one success with probability ``target`` when one
    run succeeds with probability ``p`` (None if ``p`` is 0)."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    if not 0 < target < 1:
        raise ValueError(f"target must lie in (0, 1), got {target}")
    if p == 0:
        return None
    return 1 if p == 1 else max(1, math.ceil(math.log(1 - target) / math.log(1 - p)))


def luck_rows(arch: dict, setup, m: int = LUCK_M, init: str = LUCK_INIT) -> list[list]:
    """Per archived width at ``m`` (``init``, last step): width, expected full tickets,
    P(at least one full ticket), successful seeds, success rate, restarts for 90%."""
    meta = arch["meta"]
    p = lucky_neuron_probability(setup.n, setup.k, setup.sparsity)
    rows = []
    for w in meta["widths"]:
        hits = arch_count(arch, init, w, m)
        rate = hits / meta["seeds"]
        r = restarts_needed(rate)
        rows.append(
            [
                w,
                w * p,
                float(expected_lucky_neurons(w, setup.n, setup.k, setup.sparsity)),
                f"{hits} of {meta['seeds']}",
                rate,
                "never" if r is None else r,
            ]
        )
    return rows


def restarts_against_width(
    arch: dict, init: str = LUCK_INIT, m: int = LUCK_M, pair=LUCK_PAIR
) -> tuple[float, float]:
    """Success probability of the best of ``wide / narrow`` restarts of the narrow width
    against one run of the wide width (same number of neurons), from the archive."""
    narrow, wide = pair
    seeds = arch["meta"]["seeds"]
    p_narrow = arch_count(arch, init, narrow, m) / seeds
    return 1 - (1 - p_narrow) ** (wide // narrow), arch_count(arch, init, wide, m) / seeds


def _check_binomial(count: int, trials: int, p: float) -> None:
    if not 0 <= count <= trials:
        raise ValueError(f"count must lie in 0..trials={trials}, got {count}")
    if not 0 <= p <= 1:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")


def binomial_upper_tail(count: int, trials: int, p: float) -> float:
    """``P(X >= count)`` for ``X ~ Binomial(trials, p)``."""
    _check_binomial(count, trials, p)
    return float(
        sum(math.comb(trials, j) * p**j * (1 - p) ** (trials - j) for j in range(count, trials + 1))
    )


def binomial_lower_tail(count: int, trials: int, p: float) -> float:
    """``P(X <= count)`` for ``X ~ Binomial(trials, p)``."""
    _check_binomial(count, trials, p)
    return float(
        sum(math.comb(trials, j) * p**j * (1 - p) ** (trials - j) for j in range(0, count + 1))
    )


def width_gap(result, arch: dict) -> dict:
    """The live widest and narrowest networks (m = 400 to 800, both initialisations) against
    the archive's same cells: successes and runs of each, and Fisher p-values."""
    setup, meta = result.setup, arch["meta"]
    widths = [w for w in setup.widths if w in meta["widths"]]
    wide, narrow = max(widths), min(widths)
    ms = [m for m in setup.samples if m >= 400 and m in meta["samples"]]
    live = {w: result.count(ms, list(INITS), [w]) for w in (wide, narrow)}
    arch_n = {
        w: sum(arch_count(arch, i, w, m, setup.steps) for i in INITS for m in ms)
        for w in (wide, narrow)
    }
    n_live, n_arch = 2 * len(ms) * setup.seeds, 2 * len(ms) * meta["seeds"]
    return {
        "wide": wide,
        "narrow": narrow,
        "live": live,
        "arch": arch_n,
        "n_live": n_live,
        "n_arch": n_arch,
        "p_live": fisher_two_sided(live[wide], n_live, live[narrow], n_live),
        "p_arch": fisher_two_sided(arch_n[wide], n_arch, arch_n[narrow], n_arch),
        "p_agree": [fisher_two_sided(live[w], n_live, arch_n[w], n_arch) for w in (wide, narrow)],
    }


def setup_mismatch(arch: dict, setup) -> list[str]:
    """The shared set-up fields in which the archived run differs from ``setup``."""
    saved = arch["meta"]["setup"]
    return [f for f in SHARED_FIELDS if saved.get(f) != getattr(setup, f)]


def slice_pvalues(result, arch: dict) -> dict:
    """Fisher's test of the live runs against the archive's cells of the same widths, m and
    steps: ``{(init, m): p}``."""
    setup, meta = result.setup, arch["meta"]
    widths = [w for w in setup.widths if w in meta["widths"]]  # FULL=1 goes beyond them
    out = {}
    for init in ("dense", "sparse"):
        for m in [m for m in setup.samples if m in meta["samples"]]:
            live = result.count([m], [init], widths)
            a, na = pooled_arch(arch, init, widths, m, setup.steps)
            out[(init, m)] = fisher_two_sided(live, len(widths) * setup.seeds, a, na)
    return out


# --------------------------------------------------------------------------- sections
@TABLE.computes("lottery")
def _lottery(setup, freq, sampled: int) -> dict:
    """The lottery odds, and the sampled coverage ``freq`` of ``sampled`` sparse neurons."""
    n, k, s = setup.n, setup.k, setup.sparsity
    exact = coverage_distribution(n, k, s)
    se = np.sqrt(exact * (1 - exact) / sampled)
    return {
        "wl_p_power": f"{(s / n) ** k:.4f}",
        "wl_p_full": f"{lucky_neuron_probability(n, k, s):.4f}",
        "wl_p_partial": f"{exact[k - 1]:.3f}",
        "wl_p_one_narrow": f"{expected_lucky_neurons(min(setup.widths), n, k, s):.2f}",
        "wl_ticket_width": f"{1 / lucky_neuron_probability(n, k, s):.0f}",
        "wl_power_width": f"{(n / s) ** k:.0f}",
        "wl_pred_ratio": f"{(n / s) ** (k - 1):.0f}",
        "wl_sq_half": f"{math.comb(n, k) / 2:,.0f}",
        "coverage_z": np.abs(np.asarray(freq) - exact) / se,
    }


@TABLE.computes("grid")
def _grid(result) -> dict:
    """Successful runs of the live grid, pooled over seeds (and widths or sample sizes)."""
    setup = result.setup
    widths, seeds = setup.widths, setup.seeds
    both, larger = ["dense", "sparse"], [400, 600, 800]
    wide, narrow = max(widths), min(widths)
    runs = 2 * len(larger) * seeds
    wide_n, narrow_n = result.count(larger, both, [wide]), result.count(larger, both, [narrow])
    return {
        "wl_200": result.count([200], both),
        "wl_200_of": 2 * len(widths) * seeds,
        "wl_400_dense": result.count([400], ["dense"]),
        "wl_400_sparse": result.count([400], ["sparse"]),
        "wl_400_of": len(widths) * seeds,
        "wl_wide": wide,
        "wl_narrow": narrow,
        "wl_dense_more": result.count([600, 800], ["dense"]),
        "wl_more_of": 2 * len(widths) * seeds,
        "wl_wide_n": wide_n,
        "wl_narrow_n": narrow_n,
        "wl_width_of": runs,
        "wl_width_p": f"{fisher_two_sided(wide_n, runs, narrow_n, runs):.2f}",
    }


def _neuron_fraction(nets: list, k: int) -> float:
    """Mean over ``nets`` (mechanism tuples) of the fraction of neurons whose coverage J
    reaches ``k - 1`` support bits; nan for no network."""
    return float(np.mean([np.mean(t[0] >= k - 1) for t in nets])) if nets else np.nan


@TABLE.computes("mechanism")
def _mechanism(setup, mech: dict) -> dict:
    """Where the support weight of the successful sparse networks sits; ``mech`` maps each
    width to one (coverage J, final |w_S|, share at init, final share) per network."""
    wide = [t for w in setup.widths if w >= 128 for t in mech[w]]
    share_ini = np.array([t[2] for t in wide])
    share_fin = np.array([t[3] for t in wide])
    gain = share_fin - share_ini
    narrow = mech[min(setup.widths)]
    n_ini = np.median([t[2] for t in narrow]) if narrow else np.nan
    n_fin = np.median([t[3] for t in narrow]) if narrow else np.nan
    n_frac = _neuron_fraction(narrow, setup.k)
    decay = (1 - setup.lr * setup.weight_decay) ** setup.steps
    try:  # under how many recorded base seeds the narrow networks' share falls
        falls = [
            f < i
            for i, f in zip(
                TABLE.over_seeds("mechanism", "narrow_init_median"),
                TABLE.over_seeds("mechanism", "narrow_final_median"),
                strict=True,
            )
        ]
        narrow_falls = f"{sum(falls)} of {len(falls)}"
    except KeyError:
        narrow_falls = "not recorded"
    return {
        "wl_narrow_falls_rec": narrow_falls,
        "wl_mech_n": len(wide),
        "wl_mech_init": f"{np.median(share_ini):.2f}",
        "wl_mech_final": f"{np.median(share_fin):.2f}",
        "wl_mech_range": f"{share_fin.min():.2f}–{share_fin.max():.2f}",
        "wl_mech_up": int((gain > 0).sum()),
        "wl_mech_frac": f"{_neuron_fraction(wide, setup.k):.2f}",
        "wl_mech_n32": len(narrow),
        "wl_mech_n32_init": f"{n_ini:.2f}",
        "wl_mech_n32_final": f"{n_fin:.2f}",
        "wl_mech_n32_frac": f"{n_frac:.2f}",
        "wl_decay": f"{decay:.4f} (about e^{round(float(np.log(decay)))})",
        "wide_init_median": float(np.median(share_ini)),
        "wide_final_median": float(np.median(share_fin)),
        "wide_rise_fraction": float((gain > 0).mean()),
        "narrow_init_median": float(n_ini),
        "narrow_final_median": float(n_fin),
        "narrow_neuron_fraction": float(n_frac),
    }


def _frontier_grid(meta: dict) -> dict:
    """The archived grid: samples, widths, seeds, runs, steps, date and device."""
    samples, widths, inits, seeds = meta["samples"], meta["widths"], meta["inits"], meta["seeds"]
    return {
        "wf_samples": "{" + ", ".join(map(str, samples)) + "}",
        "wf_widths": "{" + ", ".join(map(str, widths)) + "}",
        "wf_seeds": seeds,
        "wf_runs": f"{seeds * len(samples) * len(widths) * len(inits):,}",
        "wf_steps": f"{meta['steps']:,}",
        "wf_every": meta["eval_every"],
        "wf_date": meta["date"],
        "wf_device": meta["device"],
    }


def _frontier_width(arch: dict) -> dict:
    """Narrow against wide archived networks (:func:`width_comparison`) and Fisher's p."""
    width = width_comparison(arch)
    sp_narrow, sp_n, sp_wide, sp_w = width["sparse"]
    de_narrow, de_n, de_wide, de_w = width["dense"]
    p_width = max(
        fisher_two_sided(sp_narrow, sp_n, sp_wide, sp_w),
        fisher_two_sided(de_narrow, de_n, de_wide, de_w),
    )
    return {
        "wf_sp_narrow": f"{sp_narrow} of {sp_n}",
        "wf_sp_wide": f"{sp_wide} of {sp_w}",
        "wf_de_narrow": f"{de_narrow} of {de_n}",
        "wf_de_wide": f"{de_wide} of {de_w}",
        "wf_p_width": f"{p_width:.0e}",
    }


def _frontier_budget(arch: dict) -> dict:
    """Samples, steps and compute: the least m per step count, the floor's runs, m = 300,
    equal compute, steps to half and the SQ margin."""
    samples, widths = arch["meta"]["samples"], arch["meta"]["widths"]
    msteps = {
        i: [min_samples(arch, i, FRONT_W, t) for t in (2000, 6000, 20000)]
        for i in ("dense", "sparse")
    }
    sp300, de300 = pooled_arch(arch, "sparse", widths, 300), pooled_arch(arch, "dense", widths, 300)
    eq = {i: equal_compute_counts(arch, i) for i in ("dense", "sparse")}
    budget = EQUAL_COMPUTE[0][0] * EQUAL_COMPUTE[0][1]
    last_w, last_t = EQUAL_COMPUTE[-1]
    return {
        "wf_m_dense": " → ".join(map(str, msteps["dense"])),
        "wf_m_sparse": " → ".join(map(str, msteps["sparse"])),
        "wf_floor_runs": archive_floor(arch)[1],
        "wf_sp300": f"{sp300[0]} of {sp300[1]}",
        "wf_de300": f"{de300[0]} of {de300[1]}",
        "wf_eq_dense": ", ".join(map(str, eq["dense"])),
        "wf_eq_sparse": ", ".join(map(str, eq["sparse"])),
        "wf_half_dense": f"{steps_to_half(arch, 'dense', FRONT_W, max(samples)):,}",
        "wf_half_sparse": f"{steps_to_half(arch, 'sparse', FRONT_W, max(samples)):,}",
        "wf_eq_budget": f"{budget:,}",
        "wf_eq_fair": f"{budget / last_w:.0f}",
        "wf_eq_ratio": f"{last_t / (budget / last_w):.1f}",
        "wf_sq_margin": f"{sq_margin(arch):,.0f}",
        "wf_save_6000": f"{msteps['dense'][1] / msteps['sparse'][1]:.1f}",
        "wf_save_20000": f"{msteps['dense'][2] / msteps['sparse'][2]:.1f}",
    }


def _frontier_luck(arch: dict, setup) -> dict:
    """Luck against tickets at :data:`LUCK_M` and :data:`PARTIAL_M`, restarts against
    width, and the floor's successes."""
    widths = arch["meta"]["widths"]
    restart, wide_p = restarts_against_width(arch)
    luck = {m: luck_rows(arch, setup, m=m) for m in (LUCK_M, PARTIAL_M)}
    rate = {m: [row[4] for row in rows] for m, rows in luck.items()}
    ticket = {m: [row[2] for row in rows] for m, rows in luck.items()}
    # restarts of a width that succeeds at all against one network with as many neurons
    gaps = [
        abs(r - w)
        for n in widths
        for v in widths
        if v > n and v % n == 0 and arch_count(arch, LUCK_INIT, n, LUCK_M) > 0
        for r, w in [restarts_against_width(arch, pair=(n, v))]
    ]
    return {
        "wf_luck_m": LUCK_M,
        "wf_partial_m": PARTIAL_M,
        "luck_rate_minus_ticket": max(
            r - t for r, t in zip(rate[LUCK_M], ticket[LUCK_M], strict=True)
        ),
        "luck_rate_steps": [float(d) for d in np.diff(rate[LUCK_M])],
        "partial_ratio": rate[PARTIAL_M][0] / ticket[PARTIAL_M][0],
        "wf_partial_narrow": f"{rate[PARTIAL_M][0]:.2f}",
        "wf_partial_ticket": f"{ticket[PARTIAL_M][0]:.2f}",
        "wf_partial_w": widths[0],
        "restart_gap_max": max(gaps),
        "wf_restart_gap": f"{max(gaps):.2f}",
        "wf_never_w": max(
            (w for w in widths if arch_count(arch, LUCK_INIT, w, LUCK_M) == 0), default=0
        ),
        "wf_floor_hits": archive_floor(arch)[0],
        "wf_luck_restart": f"{restart:.2f}",
        "wf_luck_wide": f"{wide_p:.2f}",
        "wf_luck_r": LUCK_PAIR[1] // LUCK_PAIR[0],
        "wf_luck_narrow_w": LUCK_PAIR[0],
        "wf_luck_wide_w": LUCK_PAIR[1],
    }


def _frontier_half_steps(arch: dict) -> dict:
    """Per initialisation, the steps to half success at the largest m for every width."""
    samples, widths = arch["meta"]["samples"], arch["meta"]["widths"]
    out = {}
    for i in ("dense", "sparse"):
        half = {w: steps_to_half(arch, i, w, max(samples)) for w in widths}
        beyond = [half[w] for w in widths if w >= 32]
        out[f"wf_steps_w_{i}"] = " / ".join(f"{half[w]:,}" for w in widths)
        out[f"wf_steps_beyond_{i}"] = f"{min(beyond):,}–{max(beyond):,}"
    return out


@TABLE.computes("frontier")
def _frontier(arch: dict, setup) -> dict:
    """The archived frontier: what the text quotes from it, and whether it is this set-up's."""
    return {
        **_frontier_grid(arch["meta"]),
        **_frontier_width(arch),
        **_frontier_budget(arch),
        **_frontier_luck(arch, setup),
        "setup_mismatch": setup_mismatch(arch, setup),
        **_frontier_half_steps(arch),
    }


@TABLE.computes("samples")
def _samples(arch: dict) -> dict:
    """Sample-wise double descent in the archive: rows (initialisation, width) whose success
    falls as the sample size grows, and steps to half success that rise with it."""
    meta = arch["meta"]
    rows = len(meta["inits"]) * len(meta["widths"])
    every = [sample_drops(arch, int(t)) for t in arch["eval_steps"]]
    worst = max((-int(np.diff(c).min()) for drops in every for _, _, c in drops), default=0)
    rise = 0  # the largest rise of the steps to half success from one m to the next
    for init in meta["inits"]:
        for w in meta["widths"]:
            half = [steps_to_half(arch, init, w, m) for m in meta["samples"]]
            pairs = zip(half[:-1], half[1:], strict=True)
            rise = max([rise] + [b - a for a, b in pairs if a >= 0 and b >= 0])
    return {
        "wf_dd_rows": rows,
        "wf_dd_6000": len(sample_drops(arch, 6000)),
        "wf_dd_last": len(sample_drops(arch)),
        "wf_dd_any": f"{sum(map(len, every)):,} of {rows * len(every):,}",
        "wf_dd_worst": worst,
        "wf_dd_rise": f"{rise:,}",
    }


@TABLE.computes("slice")
def _slice(result, arch: dict) -> dict:
    """The live runs against the archive's cells of the same width, m and steps."""
    p = slice_pvalues(result, arch)
    gap = width_gap(result, arch)
    wide, narrow = gap["wide"], gap["narrow"]
    return {
        "wf_slice_p": f"{min(p.values()):.2f}",
        "slice_p": list(p.values()),
        "wf_gap_wide": f"{gap['arch'][wide]} of {gap['n_arch']}",
        "wf_gap_narrow": f"{gap['arch'][narrow]} of {gap['n_arch']}",
        "wf_gap_p": f"{gap['p_arch']:.0e}",
        "wf_live_wide": gap["live"][wide],
        "wf_live_narrow": gap["live"][narrow],
        "width_agree_p": gap["p_agree"],
    }


# --------------------------------------------------------------------------- coding labs
def subnetwork(nets: ParityMLPs, keep, *, generator: torch.Generator) -> ParityMLPs:
    """Networks made of chosen neurons of ``nets``: network ``m`` keeps the neurons
    ``keep[m]`` ((M, w) indices) with their first-layer weights and biases, initial weights
    included, and gets a fresh output layer for its width ``w`` (drawn from ``generator``)."""
    if not isinstance(nets, ParityMLPs):
        raise TypeError(f"nets must be a ParityMLPs, got {type(nets).__name__}")
    keep = torch.as_tensor(keep, dtype=torch.long, device=nets.w1.device)
    M = nets.num_models
    if keep.dim() != 2 or keep.shape[0] != M or keep.shape[1] < 1:
        raise ValueError(
            f"keep must hold (networks={M}, w >= 1) neuron indices, got shape {tuple(keep.shape)}"
        )
    if int(keep.min()) < 0 or int(keep.max()) >= min(nets.widths):
        raise ValueError(
            f"keep must index neurons 0..{min(nets.widths) - 1}, got values "
            f"{int(keep.min())}..{int(keep.max())}"
        )
    w = keep.shape[1]
    new = ParityMLPs(
        nets.n, [w] * M, sparsity=nets.sparsity, generator=generator, device=nets.w1.device
    )
    rows = keep[:, :, None].expand(-1, -1, nets.n)  # (M, w, n)
    with torch.no_grad():
        new.w1.copy_(nets.w1.gather(1, rows))
        new.w1_init.copy_(nets.w1_init.gather(1, rows))
        new.b1.copy_(nets.b1.gather(1, keep))
    return new


#: the smaller parity of the weight-decay lab (learned in a few thousand steps on a CPU)
WD_LAB = dict(n=20, width=128, m=400, networks=16, steps=2500)
#: the tickets-alone lab: sparse width-512 initialisations cut down to 48 neurons
TICKET_LAB = dict(width=512, keep=48, networks=16, m=400, steps=2000)

LABS = LabTable(
    "width_and_luck",
    [
        Lab(
            "ex-width-and-luck-2",
            expects="two lists of four successful seeds (of 16) at m = 600, for widths 32, 128, "
            "512 and 2048 after 20,000, 5,000, 1,250 and 500 steps: dense first, then "
            "sparse",
            quantity="the successes of width 32 minus those of width 2048, summed over both "
            "initialisations",
            measure=lambda a: (a[0][0] - a[0][-1]) + (a[1][0] - a[1][-1]),
            low=8,
            high=32,
            because="at equal compute the narrow networks get the long training that every "
            "search needs, which width does not replace",
            hint="read each width at its own number of steps (width x steps = 640,000), with "
            "chapter.arch_count(arch, init, width, 600, steps), dense first.",
        ),
        Lab(
            "ex-width-and-luck-3",
            expects="two counts of successful networks (of 16): with weight decay 0.01, then "
            "without",
            quantity="the successes with weight decay minus those without",
            measure=lambda a: a[0] - a[1],
            low=6,
            high=16,
            because="without weight decay the hinge loss on the training set reaches zero, and "
            "with it the gradient that would amplify the support",
            hint="train the same 16 dense networks twice from the same generator seed, once "
            "with weight_decay=0.01 and once with weight_decay=0.0, for 2,500 steps.",
        ),
        Lab(
            "ex-width-and-luck-4",
            expects="three fractions: of sampled sparse layers of width 32, 128 and 512 that "
            "hold at least one full ticket",
            quantity="the fraction of width-128 layers with a full ticket",
            measure=lambda a: a[1],
            low=0.37,
            high=0.57,
            because="a layer of 128 neurons holds a full ticket with probability "
            "1 - (1 - p)^128 = 0.47, where p = 0.0049",
            hint="a full ticket is a neuron whose initial inputs include all k = 3 support "
            "coordinates (J == 3); count layers with at least one, not tickets per layer.",
        ),
        Lab(
            "ex-width-and-luck-9",
            expects="two counts of successful networks (of 16): of 48-neuron networks made of "
            "the tickets, then of 48 random neurons",
            quantity="the successes of the ticket networks minus those of the random ones",
            measure=lambda a: a[0] - a[1],
            low=4,
            high=16,
            because="the tickets start with most of the support among their few inputs, so "
            "their gradient signal is strong enough to learn from 400 examples in 2,000 "
            "steps",
            hint="rank each network's neurons by their initial coverage J (largest first) for "
            "networks 0-15, draw 48 random neurons for networks 16-31, and train all 32 "
            "together.",
        ),
    ],
)
feedback = LABS.feedback


def ticket_networks(seed: int):
    """The tickets-alone lab's 32 networks: 0-15 the 48 neurons of largest initial coverage
    of a sparse width-512 network, 16-31 48 random neurons; and the generator, for training."""
    c = TICKET_LAB
    g = make_generator(12, base=seed)
    wide = ParityMLPs(30, [c["width"]] * 2 * c["networks"], sparsity=6, generator=g)
    J = support_coverage(wide, [0, 1, 2])  # (32, 512)
    half = c["networks"]
    tickets = J[:half].argsort(dim=1, descending=True, stable=True)[:, : c["keep"]]
    others = torch.rand(half, c["width"], generator=g).argsort(dim=1)[:, : c["keep"]]
    return subnetwork(wide, torch.cat([tickets, others]), generator=g), g

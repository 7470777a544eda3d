"""Learning partitions (``book/partitions.md``): SAT recovers hidden classes, GD needs more."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..core.seeds import make_rng
from ..partitions import (
    STREAMS,
    adjusted_rand_index,
    class_separation,
    kmeans,
    planted_problem,
    prefix_grid,
    same_partition,
    sample,
    samples_for,
    separation_rates,
    single_token_moves,
    solve_partitions,
    train_embeddings,
)

#: the explorer's default view: N tokens per slot, K classes, S samples, I = 3 slots
EXPLORE = {"N": 24, "K": 3, "S": 600}
EXPLORE_INSTANCES = 10  # instances the explorer's slider offers (0..9)

TABLE = ClaimTable(
    "partitions",
    [
        # ------------------------------------------------------------------ theory: rho
        Claim(
            "rho.derivation",
            "The derived E rho (about 1/2) matches rho averaged over the g of 40 planted "
            "instances.",
            "abs(rho_formula - rho_theory) < 0.04",
            "a wrong derivation, e.g. rho = 1/3 or 2/3 (the sampling noise of 40 instances is "
            "about 0.02)",
        ),
        Claim(
            "rho.count",
            "Counting on samples which appearances rule out a wrong class gives the same rho.",
            "abs(rho_count - rho_formula) < 0.01",
            "separation_rates measuring something else than the chance that a sample rules "
            "out a wrong class (e.g. ignoring the other slots' class frequencies)",
        ),
        # ------------------------------------------------------------------ Experiment 1
        Claim(
            "sat.none_at_2",
            "Almost no instance is recovered at c = 2.",
            "rate2 <= 0.05",
            "recovery as soon as every token has been seen (c of 1 to 2), more than 5% of "
            "the instances at c = 2",
        ),
        Claim(
            "sat.most_at_8",
            "Most instances are recovered by c = 8 (pooled over the four sizes).",
            "late_rate >= 0.75",
            "a threshold beyond c = 8 for a quarter of the instances or more",
        ),
        Claim(
            "sat.grows",
            "The samples per token at the threshold, S50 / N, grow with ln N (a clearly "
            "positive slope, at least 0.75, and higher at N = 128 than at N = 16), as S "
            "proportional to N ln N predicts.",
            "s50_slope >= 0.75 and s50_last > s50_first",
            "S proportional to N: a flat line, slope near 0 (below 0.75), no rise from N = 16 "
            "to 128",
        ),
        Claim(
            "sat.union_bound",
            "The first-moment prediction with every instance's own rho matches the measured "
            "S50 / N within 20% at every N.",
            "max(pred_errs) <= 0.2",
            "recovery limited by something other than single-token errors, which the "
            "first-moment count leaves out; or the average-rho formula, 30-40% below the data",
        ),
        Claim(
            "sat.smallest_rho_slope",
            "The first-moment prediction with every instance's own rho rises faster in ln N "
            "than the average-rho line (slope 1 / E rho, about 2): the smallest rates set the "
            "slope.",
            "pred_slope >= simple_slope + 0.25",
            "a per-instance prediction as flat as the average-rho line (slope within 0.25 of it)",
        ),
        Claim(
            "sat.single_token",
            "Just below its threshold, nearly every instance (at least 80%) at N = 32 has a "
            "single token that can move to a wrong class without contradicting any sample.",
            "single_frac >= 0.8",
            "ambiguity just below the threshold coming from alternatives that move two or "
            "more tokens at once (more than a fifth of the instances without a one-token "
            "alternative)",
        ),
        # ------------------------------------------------------------------ Experiment 2
        Claim(
            "effort.colouring_grows",
            "On colouring instances at mean degree 4.6 the solver's effort grows much faster "
            "than the instances, from the smallest to the largest graphs (3.5 times the "
            "variables): more than 10-fold.",
            "hard_growth > 10",
            "effort growing 10-fold or less, under three times as fast as the number of variables",
        ),
        Claim(
            "effort.degree_peak",
            "For 200 vertices the colouring effort peaks near mean degree 4.6.",
            "4.3 <= deg_peak <= 5.0",
            "a peak at degree 3, 4 or 6: no hard region near the colourability threshold",
        ),
        Claim(
            "effort.planted_peak",
            "Planted instances are hardest near c = 1: the median effort rises from c = 0.5 "
            "and peaks between c = 0.75 and 1.25.",
            "peak_c05 < peak_c1 and 0.75 <= c_peak <= 1.25",
            "an effort that only falls with c (largest at c = 0.5), or a peak at c of 1.5 or more",
        ),
        Claim(
            "effort.peak_falls",
            "By c = 4 the planted effort has fallen far below its peak at c = 1.",
            "peak_ratio >= 4",
            "no peak: about the same effort at c = 1 and c = 4",
        ),
        Claim(
            "effort.recovery_cheap",
            "Exact recovery past the threshold, at c = 6 (finding a partition and proving it "
            "unique), costs at least 3 times fewer conflicts than finding one at c = 1.",
            "3 * recover_c6 <= peak_c1",
            "a uniqueness proof past the threshold about as hard as the search at c = 1 "
            "(within a factor of 3)",
        ),
        Claim(
            "effort.planted_easy",
            "At the largest size, planted instances at c = 4 need far fewer conflicts than "
            "colouring instances with as many variables.",
            "easy_big < hard_big / 3",
            "planted instances within a factor of 3 of the colouring effort",
        ),
        # ------------------------------------------------------------------ Experiment 3
        Claim(
            "gd.learns",
            "Gradient descent recovers at least 7 in 8 instances from some c on, at every "
            "size trained.",
            "all(c is not None for c in gd_full_all)",
            "a size at which gradient descent stays below 7 of 8 at the largest c",
        ),
        Claim(
            "gd.chance_at_lo",
            "At c = 4 gradient descent recovers (almost) no instance and its clusters are "
            "no better than chance.",
            "gd_lo <= 1 / 8 and gd_lo_ari < 0.1",
            "gradient descent picking up the partition at c = 4 (2 or more of 8, or a mean "
            "adjusted Rand index of 0.1 or more)",
        ),
        Claim(
            "gd.behind_sat",
            "At c = 8 and N = 32 gradient descent recovers far fewer instances than the solver.",
            "gd8 <= sat8 - 0.3",
            "gradient descent within 0.3 of the solver at c = 8",
        ),
        Claim(
            "gd.most_fail_at_8",
            "At c = 8 gradient descent fails on half of the instances or more.",
            "gd8 <= 0.5",
            "gradient descent recovering most instances at c = 8",
        ),
        Claim(
            "gd.optimisation",
            "The instances gradient descent fails on at c = 8 stop at a training loss well "
            "above the planted partition's 0.",
            "gd8_failed >= 2 and loss8_fail >= 0.02",
            "failures at near-zero loss (median below 0.02): the samples, not the optimiser, "
            "would be at fault",
        ),
        Claim(
            "gd.stuck",
            "Most failed instances at c = 8 have stopped: over the last 200 steps the median "
            "failed instance's training loss moves by less than 0.005.",
            "stall8 <= 0.005",
            "the typical failed instance still descending (its loss moving by more than "
            "0.005 over the last 200 steps): more steps, not a better optimiser, would be "
            "the fix",
        ),
        Claim(
            "gd.information",
            "On the very samples gradient descent failed on at c = 8, the exact solver (not "
            "told g) recovers the partition uniquely in at least half of them.",
            "sat_same_ok >= gd8_failed / 2",
            "the solver recovering fewer than half of them: the failure could be "
            "information, not optimisation",
        ),
        Claim(
            "gd.no_doubling",
            "The c from which gradient descent recovers 7 in 8 instances grows less than "
            "2-fold from N = 16 to N = 32 (samples growing like N^2 ln^2 N would need 2.5-fold).",
            "gd_full is not None and gd_full_small is not None and gd_full < 2 * gd_full_small",
            "the needed c doubling from N = 16 to N = 32",
        ),
        Claim(
            "gd.classes_collapse",
            "In the instances gradient descent recovers at c = 16, the tokens of a class end "
            "(almost) on one point: within-class distances at most 5% of between-class "
            "ones.",
            "collapse16 <= 0.05",
            "recovered classes that are only loosely separated clouds",
        ),
        Claim(
            "gd.failed_spread",
            "In the failed instances at c = 8 the classes stay spread: their median "
            "within/between distance ratio is at least 0.3.",
            "gd8_failed >= 2 and spread8_fail >= 0.3",
            "failed instances whose classes have collapsed too, misassigned by k-means "
            "rather than unlearnt",
        ),
        # ------------------------------------------------------------------ variations
        Claim(
            "variations.imbalance_costs",
            "Imbalanced classes are recovered much less often than balanced ones at the same "
            "c (pooled over c = 4-10 at N = 32).",
            "mean_bal - mean_imb >= 0.1",
            "imbalance costing less than 0.1 of the recovery rate",
        ),
        Claim(
            "variations.rho_min_orders",
            "The smallest separation rate rho_min of an instance orders the imbalanced "
            "thresholds well.",
            "corr_rho <= -0.5",
            "a rank correlation above -0.5: rho_min does not explain the spread",
        ),
        Claim(
            "variations.rho_beats_size",
            "rho_min predicts the threshold better than the size of the smallest class does.",
            "corr_rho < corr_small - 0.2",
            "rho_min explaining the thresholds no better than the smallest class (less than "
            "0.2 stronger)",
        ),
        Claim(
            "variations.two_classes_impossible",
            "With g and K unknown, K' = 2 is impossible in every instance at c = 10.",
            "k_two == 1",
            "an instance with a consistent 2-class partition",
        ),
        Claim(
            "variations.three_classes_unique",
            "With g and K unknown, K' = 3 gives the planted partition uniquely in most "
            "instances at c = 10 under most base seeds, and in some of them under every one; "
            "the others stay ambiguous.",
            "k_three >= 3",
            "K' = 3 that rarely gives the planted partition (in fewer than 3 of the 8 instances)",
        ),
        Claim(
            "variations.noise",
            "With 5% of the labels flipped, gradient descent still recovers most instances "
            "at c = 32, at least twice the c from which it succeeds without noise.",
            "noisy_gd > 0.75",
            "label noise costing gradient descent a quarter of the instances or more",
        ),
        # ------------------------------------------------------------------ explorer
        Claim(
            "explore.most_determined",
            "At the explorer's default setting (c = 7.9) the samples determine the partition "
            "(the solver says unique and correct) of at least half of its instances, the one "
            "the default view shows among them.",
            "2 * explore_n_determined >= explore_n_instances and "
            "explore_verdict == 'unique, correct'",
            "the solver ambiguous (or wrong) on more than half of the explorer's instances at "
            "c = 7.9, where Experiment 1 recovers most instances",
        ),
    ],
)
claims = TABLE.claims_for


# ----------------------------------------------------------------------------- helpers
def rank_corr(a, b) -> float:
    """Spearman rank correlation of two sequences (ties get their average rank)."""

    def ranks(v):
        v = np.asarray(v)
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        _, inv, counts = np.unique(v, return_inverse=True, return_counts=True)
        return (np.bincount(inv, r) / counts)[inv]

    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def smallest_class(problems, K: int) -> np.ndarray:
    """Each instance's smallest class over its slots, as a fraction of N."""
    return np.array(
        [min(np.bincount(row, minlength=K).min() for row in p.labels) / p.N for p in problems]
    )


def min_separation(problems) -> np.ndarray:
    """Each instance's smallest separation rate rho over slots and pairs of classes."""
    return np.array([separation_rates(p)[:, ~np.eye(p.K, dtype=bool)].min() for p in problems])


def first_full(rates: dict, need: float = 7 / 8):
    """The smallest c from which the rate is at least ``need`` at every larger c (or None)."""
    cs = sorted(rates)
    ok = [c for c in cs if all(rates[d] >= need for d in cs if d >= c)]
    return min(ok) if ok else None


def moves_below_threshold(sat, N: int) -> np.ndarray:
    """For every instance of size N that Experiment 1 recovers: how many single-token
    errors (:func:`~seqtheory.partitions.single_token_moves`) its samples leave standing
    at the longest prefix below its threshold (the grid point the search found failing)."""
    s_max = samples_for(sat.setup.c_max, N)
    grid = prefix_grid(s_max)
    out = []
    for t, (pb, thr) in enumerate(zip(sat.problems[N], sat.thresholds[N], strict=True)):
        if thr > s_max or thr == grid[0]:
            continue  # never recovered, or no shorter prefix
        x, y = sample(pb, s_max, seed=make_rng(STREAMS.seed("samples", t), base=sat.seed))
        below = grid[np.searchsorted(grid, thr) - 1]
        out.append(int(single_token_moves(pb, x[:below], y[:below]).sum()))
    return np.array(out)


def separation_curves(cell) -> np.ndarray:
    """:func:`~seqtheory.partitions.class_separation` of every instance of a gradient-descent
    cell at every snapshot, averaged over the slots: (snapshots, runs), steps in order."""
    snaps = cell.fit.snapshots
    return np.array(
        [
            [
                np.mean([class_separation(snaps[step][r, i], pb.labels[i]) for i in range(pb.I)])
                for r, pb in enumerate(cell.problems)
            ]
            for step in sorted(snaps)
        ]
    )


def explore_view(
    N: int, K: int, S: int, instance: int = 0, *, train: bool = True, device=None
) -> SimpleNamespace:
    """One explorer view: planted instance ``instance`` (I = 3), its S samples, the SAT
    verdict, and (``train``) embeddings after 300 steps of gradient descent."""
    pb = planted_problem(N, K, 3, seed=instance)
    x, y = sample(pb, S, seed=1 + 100 * instance)
    res = solve_partitions(x, y, N, K, g=pb.g)
    ok = res.status == "unique" and same_partition(res.labels, pb.labels)
    fit = (
        train_embeddings([x], [y], N, 3, m=K, steps=300, lr=0.05, device=device) if train else None
    )
    return SimpleNamespace(
        problem=pb, x=x, y=y, verdict="unique, correct" if ok else res.status, fit=fit
    )


def explore_verdicts(
    N: int = EXPLORE["N"],
    K: int = EXPLORE["K"],
    S: int = EXPLORE["S"],
    tries: int = EXPLORE_INSTANCES,
) -> list[str]:
    """The solver's verdict on each of the explorer's first ``tries`` instances:
    ``"unique, correct"`` where the samples determine the planted partition."""
    return [explore_view(N, K, S, instance, train=False).verdict for instance in range(tries)]


def first_determined(
    N: int = EXPLORE["N"],
    K: int = EXPLORE["K"],
    S: int = EXPLORE["S"],
    tries: int = EXPLORE_INSTANCES,
) -> int:
    """The first of the explorer's instances whose samples determine its partition (the
    solver's answer is unique and the planted one); 0 if none of ``tries`` is."""
    for instance in range(tries):
        if explore_view(N, K, S, instance, train=False).verdict == "unique, correct":
            return instance
    return 0


def _recorded_range(section: str, name: str) -> tuple[float, float]:
    """The smallest and largest recorded value of ``name`` over the recorded base seeds."""
    vals = TABLE.over_seeds(section, name)
    return float(min(vals)), float(max(vals))


def draw_setup(problem, x, y):
    """The figure of the data-generating process for one sample ``x`` (2 tokens), label ``y``
    of a two-slot instance with K = 2: tokens coloured by class, their classes, the cell of
    g they pick, the label."""
    import matplotlib.pyplot as plt

    from ..book.plotting import palette

    col = palette(2)
    fig, ax = plt.subplots(figsize=(8, 3.4), constrained_layout=True)
    ax.set_axis_off()
    ax.set(xlim=(-0.5, 13.8), ylim=(-0.4, 2.9))
    arrow = dict(arrowstyle="->", color="0.3")
    for i, token in enumerate(x):
        _draw_slot(ax, problem, i, token, col, arrow)
    _draw_table(ax, problem, x)
    ax.text(10.0, 2.35, "table g", ha="center", va="bottom", fontsize=9, fontweight="bold")
    ax.text(8.5, 2.35, "rows: slot 1", ha="center", va="bottom", fontsize=9)
    ax.text(10.0, 0.05, "columns: slot 2", ha="center", va="top", fontsize=9)
    ax.annotate("", (7.95, 1.8), (6.6, 1.65), arrowprops=arrow)
    ax.annotate("", (8.95, -0.05), (6.6, -0.05), arrowprops=arrow)
    ax.annotate("", (12.0, 1.4), (11.1, 1.4), arrowprops=arrow)
    ax.text(12.1, 1.4, f"label y = {y}", va="center", fontsize="large")
    return fig


def _draw_slot(ax, problem, i: int, token, col, arrow: dict) -> None:
    """Slot ``i`` of :func:`draw_setup`: its tokens coloured by class, the sample's
    ``token`` circled, an arrow to its class."""
    row = 2.2 - 1.7 * i
    ax.text(-0.4, row + 0.4, f"slot {i + 1}: tokens", fontsize="small", va="bottom")
    for n in range(problem.N):
        ax.scatter(n * 0.6, row, s=260, color=col[problem.labels[i, n]], zorder=2)
        ax.text(
            n * 0.6,
            row,
            str(n),
            ha="center",
            va="center",
            fontsize=9,
            color="w",
            fontweight="bold",
            zorder=3,
        )
    ax.scatter(token * 0.6, row, s=600, facecolors="none", edgecolors="k", lw=1.5)
    cls = problem.labels[i, token]
    # below the row, so the arrow crosses no other token
    ax.annotate(
        "",
        (5.2, row - 0.55),
        (token * 0.6, row - 0.25),
        arrowprops=dict(arrow, connectionstyle="angle,angleA=-90,angleB=0"),
    )
    ax.text(5.3, row - 0.55, f"class {cls}", va="center", color=col[cls], fontweight="bold")


def _draw_table(ax, problem, x) -> None:
    """The 2 x 2 table g of :func:`draw_setup`, the cell that the sample ``x`` picks
    filled, with the classes of both slots along its sides."""
    import matplotlib.pyplot as plt

    for a in range(2):
        for b in range(2):
            pick = (a, b) == (problem.labels[0, x[0]], problem.labels[1, x[1]])
            ax.add_patch(
                plt.Rectangle(
                    (9.0 + b, 1.4 - a * 0.8), 1.0, 0.8, fill=pick, color="0.85", ec="k", lw=1
                )
            )
            ax.text(
                9.5 + b,
                1.8 - a * 0.8,
                str(problem.g[a, b]),
                ha="center",
                va="center",
                fontweight="bold" if pick else "normal",
            )
        ax.text(8.9, 1.8 - a * 0.8, f"class {a}", ha="right", va="center", fontsize=9)
        ax.text(9.5 + a, 0.5, f"class {a}", ha="center", va="top", fontsize=9)


# ----------------------------------------------------------------------------- sections
@TABLE.computes("rho")
def _rho(rho_formula, rho_count, rho_theory, rho_min) -> dict:
    """rho three ways: derived, averaged from g, counted on samples; and the median of the
    instances' smallest rates ``rho_min``."""
    med = float(np.median(rho_min))
    rec = _recorded_range("rho", "rho_min_med")  # the record over base seeds
    return {
        "rho_formula": float(rho_formula),
        "rho_count": float(rho_count),
        "rho_theory": float(rho_theory),
        "rho_min_med": med,
        "inv_rho_min_med": 1 / med,
        "rho_min_rec_lo": rec[0],
        "rho_min_rec_hi": rec[1],
    }


@TABLE.computes("symmetries")
def _symmetries(n_sym) -> dict:
    """How many random g (of 200) have a relabelling symmetry."""
    return {"n_sym": int(n_sym)}


@TABLE.computes("sat")
def _sat(sat, pred_s50, simple_s50, moves) -> dict:
    """Experiment 1: recovery rates, the growth of S50 / N, the union-bound predictions and
    the single-token errors just below the thresholds (``moves``, from
    :func:`moves_below_threshold`)."""
    setup = sat.setup
    log_n = np.log(setup.sizes)
    s50 = sat.s50()
    slope, intercept = np.polyfit(log_n, s50, 1)
    pred_errs = np.abs(np.asarray(pred_s50) / s50 - 1)
    moves = np.asarray(moves)
    err_rec = _recorded_range("sat", "pred_err")
    c50 = s50 / log_n
    slope_rec = _recorded_range("sat", "s50_slope")  # the record over base seeds
    return {
        "sat_trials": int(setup.trials),
        "late_rate": float(np.mean([sat.rate_at(N, 8) for N in setup.sizes])),
        "rate2": float(np.mean([sat.rate_at(N, 2) for N in setup.sizes])),
        "s50_slope": float(slope),
        "s50_icpt": float(intercept),
        "pred_err": float(pred_errs.max()),
        "pred_errs": pred_errs,
        "c50_first": float(c50[0]),
        "c50_last": float(c50[-1]),
        "s50_first": float(s50[0]),
        "s50_last": float(s50[-1]),
        "pred_slope": float(np.polyfit(log_n, pred_s50, 1)[0]),
        "simple_slope": float(np.polyfit(log_n, simple_s50, 1)[0]),
        "pred_err_rec_lo": err_rec[0],
        "pred_err_rec_hi": err_rec[1],
        "single_frac": float(np.mean(moves >= 1)),
        "single_n": int(moves.size),
        "single_some": int((moves >= 1).sum()),
        "single_one": int((moves == 1).sum()),
        "rec_seeds": TABLE.seeds_text(),
        "s50_slope_rec_lo": slope_rec[0],
        "s50_slope_rec_hi": slope_rec[1],
    }


@TABLE.computes("effort")
def _effort(hardness) -> dict:
    """Experiment 2: how the solver's effort grows and where it peaks."""
    setup = hardness.setup
    hard = np.asarray(hardness.by_size["colouring, degree 4.6"])
    easy = np.asarray(hardness.by_size["planted, c = 4"])
    small_n, large_n = hard[:, 0].min(), hard[:, 0].max()
    growth = hard[hard[:, 0] == large_n, 1].mean() / hard[hard[:, 0] == small_n, 1].mean()
    N_e = max(setup.effort_sizes)
    med_c = {c: np.median(hardness.by_c[N_e, c]) for c in setup.effort_cs}
    # find + uniqueness, past the threshold (c = 6) and just below it (c = 4)
    both = {c: hardness.by_c[N_e, c] + hardness.by_c_unique[N_e, c] for c in (4.0, 6.0)}
    by_degree = hardness.by_degree
    growth_rec = _recorded_range("effort", "hard_growth")  # the record over base seeds
    return {
        "hard_growth": float(growth),
        "hard_growth_rec_lo": growth_rec[0],
        "hard_growth_rec_hi": growth_rec[1],
        "hard_big": float(np.median(hard[hard[:, 0] == large_n, 1])),
        "easy_big": float(np.median(easy[easy[:, 0] == easy[:, 0].max(), 1])),
        "vars_big": int(large_n),
        "vars_e": int(setup.I * N_e * setup.K),
        "c_peak": float(max(med_c, key=med_c.get)),
        "peak_ratio": float(med_c[1.0] / med_c[4.0]),
        "peak_c1": float(med_c[1.0]),
        "peak_c4": float(med_c[4.0]),
        "peak_c05": float(med_c[0.5]),
        "unique_c4": float(np.median(hardness.by_c_unique[N_e, 4.0])),
        "recover_c4": float(np.median(both[4.0])),
        "recover_c6": float(np.median(both[6.0])),
        "deg_peak": float(max(by_degree, key=lambda d: np.median(by_degree[d]))),
        "N_e": int(N_e),
    }


@TABLE.computes("gd")
def _gd(gd, sat) -> dict:
    """Experiment 3: gradient descent against the solver, and why it fails at c = 8."""
    setup = gd.setup
    N, n_small, c_lo = setup.gd_N, min(setup.gd_sizes), min(setup.gd_cs)
    full_by_n = {n: first_full({c: gd[n, c].recovery for c in setup.gd_cs}) for n in setup.gd_sizes}
    cell8 = gd[N, 8]
    failed8 = cell8.final_loss[~cell8.recovered]
    losses8 = cell8.fit.losses  # (steps, runs)
    stall = np.abs(losses8[-1] - losses8[-201])[~cell8.recovered]
    spread8 = separation_curves(cell8)[-1][~cell8.recovered]
    cell16 = gd[N, 16]
    collapse16 = separation_curves(cell16)[-1][cell16.recovered]
    # the exact solver on the very samples gradient descent failed on, g unknown
    sat_same_ok = 0
    for r in np.flatnonzero(~cell8.recovered):
        res = solve_partitions(*cell8.samples[r], N, cell8.problems[r].K)
        sat_same_ok += res.status == "unique" and same_partition(
            res.labels, cell8.problems[r].labels
        )
    gd_full = full_by_n[N]
    return {
        "gd_runs": int(setup.gd_runs),
        "gd_steps": int(setup.gd_steps),
        "gd_lo": float(gd[N, c_lo].recovery),
        "gd_lo_ari": float(gd[N, c_lo].ari),
        "gd_lo_loss": float(np.median(gd[N, c_lo].final_loss)),
        "sat_lo": float(sat.rate_at(N, c_lo)),
        "sat8": float(sat.rate_at(N, 8)),
        "gd8": float(cell8.recovery),
        "gd8_failed": int(failed8.size),
        "loss8_fail": float(np.median(failed8)) if failed8.size else 0.0,
        "sat_same_ok": int(sat_same_ok),
        "stall8": float(np.median(stall)) if stall.size else 0.0,
        "stall8_max": float(stall.max()) if stall.size else 0.0,
        "spread8_fail": float(np.median(spread8)) if spread8.size else 0.0,
        "collapse16": float(collapse16.max()) if collapse16.size else 1.0,
        "gd_full": gd_full,
        "gd_full_small": full_by_n[n_small],
        "gd_full_all": [full_by_n[n] for n in setup.gd_sizes],
        "gd_full_S": samples_for(gd_full, N) if gd_full is not None else None,
        "anim_recovered": int(gd[N, 16].recovered.sum()) if (N, 16) in gd.cells else 0,
    }


@TABLE.computes("variations")
def _variations(sat, imb, unknown_k, noisy_gd) -> dict:
    """Imbalanced classes, unknown g and K, and label noise, at N = 32."""
    cs_var = (4, 6, 8, 10)
    K = imb.setup.K
    thr_c = imb.thresholds[32] / (32 * math.log(32))
    problems = imb.problems[32]
    k_trials = len(unknown_k)
    return {
        "mean_bal": float(np.mean([sat.rate_at(32, c) for c in cs_var])),
        "mean_imb": float(np.mean([imb.rate_at(32, c) for c in cs_var])),
        "imb_unrec": int((imb.thresholds[32] > samples_for(16, 32)).sum()),
        "n_imb": len(imb.thresholds[32]),
        "corr_small": rank_corr(thr_c, smallest_class(problems, K)),
        "corr_rho": rank_corr(thr_c, min_separation(problems)),
        "k_two": float(np.mean([s == "unsatisfiable" for s, _ in unknown_k])),
        "k_three": int(sum(bool(ok) for _, ok in unknown_k)),
        "k_trials": int(k_trials),
        "k_three_rec_lo": int(_recorded_range("variations", "k_three")[0]),
        "k_three_rec_hi": int(_recorded_range("variations", "k_three")[1]),
        "noisy_gd": float(noisy_gd.recovery),
    }


@TABLE.computes("explore")
def _explore(
    instance: int,
    *,
    N: int = EXPLORE["N"],
    K: int = EXPLORE["K"],
    S: int = EXPLORE["S"],
    tries: int = EXPLORE_INSTANCES,
    device=None,
) -> dict:
    """The explorer's default view (instance ``instance``): SAT verdict and k-means on slot
    1's embeddings; and how many of its ``tries`` instances the samples determine."""
    view = explore_view(N, K, S, instance, device=device)
    labels = kmeans(view.fit.embeddings[0, 0], K)
    verdicts = explore_verdicts(N, K, S, tries)
    det_rec = _recorded_range("explore", "explore_n_determined")  # over base seeds
    return {
        "explore_c": S / (N * math.log(N)),
        "explore_instance": int(instance),
        "explore_verdict": view.verdict,
        "explore_n_determined": sum(v == "unique, correct" for v in verdicts),
        "explore_n_instances": int(tries),
        "explore_det_rec_lo": int(det_rec[0]),
        "explore_det_rec_hi": int(det_rec[1]),
        "explore_ari": float(adjusted_rand_index(labels, view.problem.labels[0])),
    }


@TABLE.computes("exercise")
def _exercise(ex4: dict) -> dict:
    """The exercise "Cheaper gradient descent?": recovery and median final loss at c = 16
    for each embedding size m."""
    out = {}
    for m, (rec, loss) in sorted(ex4.items()):
        out[f"ex4_rec_{m}"] = float(rec)
        out[f"ex4_loss_{m}"] = float(loss)
    out["ex4_rec_6_lo"], out["ex4_rec_6_hi"] = _recorded_range("exercise", "ex4_rec_6")
    return out


# ----------------------------------------------------------------------- coding labs
def _survivor_ratio(answer) -> float:
    """Counted single-token survivors over their predicted number, pooled over instances
    (``answer``: [counts per instance, predictions per instance])."""
    counted, predicted = answer
    return float(np.sum(counted)) / float(np.sum(predicted))


def _threshold_ratio(answer) -> float:
    """Median ternary threshold over median binary threshold (``answer``: [binary
    thresholds, ternary thresholds])."""
    binary, ternary = answer
    return float(np.median(ternary)) / float(np.median(binary))


LABS = LabTable(
    "partitions",
    [
        Lab(
            "ex-partitions-4",
            expects="one number: the median over the eight instances of the final training loss "
            "with m = 2",
            quantity="the median final training loss at m = 2",
            low=0.12,
            high=0.6,
            because="with m = 2 < K = 3 the classes cannot get a direction each, so the "
            "multilinear model cannot represent a general 3 x 3 x 3 table g and the loss "
            "stays well above the zero that m = K reaches",
            hint="train the eight N = 32 instances of Experiment 3 at c = 16 with m = 2, the "
            "chapter's steps and learning rate, and take the median of fit.final_loss.",
        ),
        Lab(
            "ex-partitions-5",
            expects="a pair [counts, predictions]: per instance, the number of single-token "
            "errors no sample rules out, and survival_prediction at the same S",
            quantity="the counted survivors over the predicted number (pooled over instances)",
            measure=_survivor_ratio,
            low=0.8,
            high=1.2,
            because="each sample rules out the error (i, n, b) independently with probability "
            "rho_iab / N, so the expected number of survivors is exactly mu(S); only "
            "exp(-mu) as the chance of none is an approximation",
            hint="count only wrong classes (single_token_moves already leaves out the true "
            "class), and evaluate survival_prediction at the number of samples S, not at c.",
        ),
        Lab(
            "ex-partitions-6",
            expects="a pair [binary thresholds, ternary thresholds] of recovery_threshold over "
            "the same 16 instance seeds",
            quantity="the median ternary threshold over the median binary threshold",
            measure=_threshold_ratio,
            low=0.38,
            high=0.92,
            because="two classes differ in a cell of a ternary g with probability 2/3 instead "
            "of 1/2, and the rarest separation, which sets the threshold, improves even "
            "more (typically 4/9 instead of 2/9)",
            hint="draw binary and ternary instances with the same seeds and the same s_max, and "
            "divide the ternary median by the binary one.",
        ),
    ],
)
feedback = LABS.feedback

"""Hidden progress (``book/hidden_progress.md``): SGD nears a sparse parity under flat accuracy."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
import torch

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..book.notebook import spread
from ..core.seeds import make_rng
from ..parity import SETUP

TABLE = ClaimTable(
    "hidden_progress",
    [
        # ------------------------------------------------------------ the population gradient
        Claim(
            "gradient.formula",
            "The gradient from automatic differentiation equals -a_j g_j(S xor {i}) to rounding.",
            "max(grad_err) < 1e-6",
            "a mistake in the derivation (a sign, a missing gate or output weight) or a "
            "population gradient that is not the average over all 2^n inputs",
        ),
        Claim(
            "gradient.hinge_linear",
            "At initialisation the hinge is linear on (almost) all inputs, so the formula is "
            "the whole story.",
            "min(active_frac) > 0.99",
            "an initialisation large enough that y f(x) >= 1 on many inputs",
        ),
        Claim(
            "gradient.off_support_nonzero",
            "Off the support the coefficients are mostly non-zero: the off-support gradient "
            "does not vanish.",
            "min(off_nonzero) > 0.5",
            "off-support gradients that vanish, as a naive reading of orthogonality suggests",
        ),
        Claim(
            "gradient.fourier_gap",
            "On average the off-support coefficients are several times smaller than the "
            "support's: a Fourier gap.",
            "min(gap_ratio) > 1.5",
            "no gap: degree k+1 coefficients as large as degree k-1 ones (ratio near 1)",
        ),
        Claim(
            "gradient.gap_widens",
            "The ratio of support to off-support coefficients grows with n.",
            "min(gap_growth) > 0",
            "a ratio that stays flat or shrinks as n grows",
        ),
        # ------------------------------------------------------------ experiment 1
        Claim(
            "plateau.chance_early",
            "Accuracy sits at chance for hundreds of steps (at most 60% up to step 500).",
            "max(early_acc_max) < 0.6",
            "a network that leaves chance before step 500",
        ),
        Claim(
            "plateau.all_learn",
            "Every network reaches 99% accuracy within the run, after a plateau of at least "
            "700 steps.",
            "all(700 <= s <= steps for s in success)",
            "a seed that misses 99% by the end of the run, or jumps before step 700",
        ),
        Claim(
            "plateau.abrupt",
            "The jump is abrupt: from 60% to 99% takes well under the plateau's length.",
            "max(jump_frac) < 0.6",
            "a gradual rise, as long as 60% of the plateau",
        ),
        Claim(
            "plateau.chance_at_80",
            "At this size, accuracy at 80% of each plateau is still near chance (below 57%).",
            "max(acc_there) < 0.57",
            "accuracy that has already started to climb there (a point keyed to the 60% "
            "crossing can land on a gradual rise; larger runs, with more networks, can)",
            scale="cpu",
        ),
        Claim(
            "plateau.beats_placebo",
            "At 80% of each plateau the support ratio is above every off-support triple's in "
            "at least three of the four networks of a run.",
            "sum(v > 0 for v in placebo_margin) >= 0.75 * len(placebo_margin)",
            "supports no further ahead than triples without signal in two networks of four",
        ),
        Claim(
            "plateau.near_placebo_top",
            "A network whose support is not above every placebo triple sits at the top of its "
            "placebo range.",
            "min(placebo_margin) > -0.005",
            "a support ratio well inside the placebo range (0.005 or more below its largest "
            "placebo ratio; the margins above it are 0.005 to 0.02)",
        ),
        Claim(
            "plateau.ahead_early",
            "Every network's support stays above every placebo triple for good from a step "
            "before its accuracy moves.",
            "all(math.isfinite(v) for v in lead) and max(lead_frac) < 0.95",
            "a support that separates from the noise only when accuracy moves, or not for good",
        ),
        Claim(
            "plateau.rho_on_support",
            "The largest weight change lies on a support input, for good, from a step before "
            "accuracy moves, in every network.",
            "all(math.isfinite(v) for v in rho_lead_frac) and max(rho_lead_frac) < 1",
            "a largest change that stays on one of the irrelevant inputs until accuracy moves, "
            "as gradient noise alone would leave it",
        ),
        Claim(
            "plateau.all_shrink",
            "During the plateau the mean absolute weight shrinks, on the support and off it.",
            "max(on_rel) < 1 and max(off_rel) < 1",
            "support weights that grow in absolute terms",
        ),
        Claim(
            "plateau.support_shrinks_less",
            "The support weights shrink less than the others.",
            "min(shrink_margin) > 0",
            "support weights that shrink as much as the rest",
        ),
        # ------------------------------------------------------------ experiment 2
        Claim(
            "k_sweep.all_learn",
            "Every network of every k learns within the step budget.",
            "k_unsolved == 0",
            "a network that never reaches 99%",
        ),
        Claim(
            "k_sweep.sizes",
            "k = 2 takes a few hundred steps, k = 3 around a thousand, k = 5 several thousand.",
            "med_k2 <= 400 and 600 <= med_k3 <= 2500 and med_k5 >= 3000",
            "a different ordering, or waiting times of another size than the text quotes",
        ),
        Claim(
            "k_sweep.steep",
            "The waiting time grows steeply with k: k = 5 takes more than three times as "
            "long as k = 3.",
            "med_k2 < med_k3 < med_k5 and med_k5 > 3 * med_k3",
            "a mild growth with k (k = 5 within 3x of k = 3)",
        ),
        Claim(
            "k_sweep.slower_than_count",
            "From k = 3 to k = 5 the waiting time grows far less than the number of candidate "
            "supports (under half its ratio).",
            "med_k5 / med_k3 < 0.5 * count_ratio_53",
            "a waiting time that grows with k as fast as the number of supports, C(n, k)",
        ),
        Claim(
            "k_sweep.k4_close",
            "k = 4 is only a little slower than k = 3, well under twice as slow.",
            "med_k4 < 1.8 * med_k3",
            "a clean exponent proportional to k: k = 4 half-way between k = 3 and k = 5 on a "
            "log scale, over twice as slow as k = 3",
        ),
        # ------------------------------------------------------------ experiment 3
        Claim(
            "n_sweep.all_learn",
            "Every network of every n learns within the step budget.",
            "n_unsolved == 0",
            "a network that never reaches 99%",
        ),
        Claim(
            "n_sweep.small_power",
            "At fixed k = 3 the waiting time grows like a small power of n (about n^1.2), far "
            "below C(n, 3).",
            "0.9 < slope_n < 1.7",
            "growth linear or slower (slope < 0.9), or much steeper (slope > 1.7)",
        ),
        Claim(
            "n_sweep.seeds_agree",
            "The seeds of one n agree closely (standard deviation well under the mean).",
            "max(cv_n) < 0.4",
            "waiting times that scatter like a one-at-a-time blind search's (sd / mean near 1, "
            "here above 0.4)",
        ),
        Claim(
            "n_sweep.between_searches",
            "For n = 30 and 50 the median waiting time lies between a parallel blind search by "
            "every neuron and a one-at-a-time search.",
            "len(median_3050) == 2 and np.all(np.less(parallel_3050, median_3050)) "
            "and np.all(np.less(median_3050, blind_3050))",
            "SGD slower than enumerating the candidate triples one per step, or faster than "
            "1,000 candidates per step",
        ),
    ],
)
claims = TABLE.claims_for


# --------------------------------------------------------------------------- analysis
@dataclass
class PlateauProgress:
    """Per seed of experiment 1: where its plateau ends and how far its support is ahead."""

    first_move: np.ndarray  # first evaluation step above `leave` accuracy
    plateau: np.ndarray  # index of the evaluation at `at` of the way to first_move
    acc_there: np.ndarray  # test accuracy there
    ratio_there: np.ndarray  # support ratio (1 at initialisation) there
    placebo_there: np.ndarray  # largest placebo ratio there
    lead: np.ndarray  # first step from which the support stays above every placebo
    on_rel: np.ndarray  # mean |w_i| on the support there, over its initial value
    off_rel: np.ndarray  # the same off the support
    rho_lead: np.ndarray  # first step from which the largest weight change |W_t - W_0|
    #                              lies on a support input for good (nan: not recorded / never)


def first_step_ahead(ahead, steps) -> float:
    """First step from which ``ahead`` (a bool per evaluation) stays true; nan if not at the end."""
    ahead = np.asarray(ahead, dtype=bool)
    behind = np.flatnonzero(~ahead)
    if behind.size and behind[-1] == len(ahead) - 1:
        return np.nan  # not ahead at the end
    return steps[behind[-1] + 1] if behind.size else steps[0]


def plateau_progress(record, placebo, *, leave: float = 0.6, at: float = 0.8) -> PlateauProgress:
    """Accuracy, support ratio and largest placebo ratio at ``at`` of each seed's plateau."""
    steps, acc = record.steps, record.accuracy
    seeds = range(acc.shape[1])
    ratio = record.support_ratio / record.support_ratio[0]  # 1 at initialisation
    first_move = np.array([steps[np.argmax(acc[:, m] > leave)] for m in seeds])
    plateau = np.array([np.searchsorted(steps, at * f) for f in first_move])
    acc_there = np.array([acc[plateau[m], m] for m in seeds])
    ratio_there = np.array([ratio[plateau[m], m] for m in seeds])
    placebo_there = np.array([placebo[:, plateau[m], m].max() for m in seeds])
    ahead = ratio > placebo.max(axis=0)  # (steps, seeds)
    lead = np.array([first_step_ahead(ahead[:, m], steps) for m in seeds], dtype=float)
    support = list(record.support)
    on_w = record.weight[..., support].mean(-1)  # (steps, seeds): mean |w_i| on the support
    off_w = np.delete(record.weight, support, axis=-1).mean(-1)
    on_rel = np.array([on_w[plateau[m], m] / on_w[0, m] for m in seeds])
    off_rel = np.array([off_w[plateau[m], m] / off_w[0, m] for m in seeds])
    rho_lead = np.full(len(seeds), np.nan)
    if record.column_distance is not None:
        on_d, off_d = split_distance(record)
        rho_lead = np.array(
            [first_step_ahead(on_d[:, m] > off_d[:, m], steps) for m in seeds], dtype=float
        )
    return PlateauProgress(
        first_move, plateau, acc_there, ratio_there, placebo_there, lead, on_rel, off_rel, rho_lead
    )


def split_distance(record) -> tuple[np.ndarray, np.ndarray]:
    """(E, M) each: the largest change |W_t - W_0| of a weight on a support input, and of
    one on any other input (``record.column_distance`` split by the support)."""
    support = list(record.support)
    cd = record.column_distance  # (E, M, n)
    return cd[..., support].max(-1), np.delete(cd, support, axis=-1).max(-1)


def rank_correlation(a, b) -> float:
    """Spearman's rank correlation of two equal-length sequences (ties get mean ranks)."""

    def ranks(v):
        v = np.asarray(v, dtype=float)
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=float)
        for value in np.unique(v):  # mean rank for ties
            tie = v == value
            r[tie] = r[tie].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if len(ra) != len(rb) or len(ra) < 3:
        raise ValueError(f"need two sequences of the same length >= 3, got {len(ra)}, {len(rb)}")
    return float(np.corrcoef(ra, rb)[0, 1])


#: The step at which the chapter reads the progress measure ||W_t - W_0||_inf of each network
#: to ask whether it predicts the step of 99% accuracy (before every recorded first move).
RHO_STEP = 600


def recorded_rho_correlation() -> tuple[str, str]:
    """Rank correlation between ||W_t - W_0||_inf at :data:`RHO_STEP` and the step of 99%
    accuracy, pooled over the networks of the recorded base seeds: (value, networks) as text,
    ``("not recorded", "0")`` before a recording has them."""
    rho_all, tc_all = [], []
    for run in TABLE.recorded()["runs"].values():
        plateau = run.get("plateau", {})
        if "rho_at" in plateau and len(plateau["rho_at"]) == len(plateau["success"]):
            rho_all += plateau["rho_at"]
            tc_all += plateau["success"]
    if len(rho_all) < 3:
        return "not recorded", "0"
    return f"{rank_correlation(rho_all, tc_all):.2f}", str(len(rho_all))


def parallel_search_mean(n: int, k: int, searchers: int) -> float:
    """Mean steps of a blind search that draws ``searchers`` random k-subsets of n bits per
    step until one is the support: ``1 / (1 - (1 - 1/C(n, k))**searchers)``."""
    p = 1 / comb(n, k)
    return float(-1 / np.expm1(searchers * np.log1p(-p)))


def local_slopes(values, medians) -> np.ndarray:
    """Slopes of log(median) against log(value) between successive values."""
    return np.diff(np.log(np.asarray(medians, float))) / np.diff(np.log(np.asarray(values, float)))


def relative_spread(steps_to_success: dict) -> np.ndarray:
    """Standard deviation over mean of the steps to success, per value of the swept variable."""
    return np.array([v.std() / v.mean() for v in steps_to_success.values()])


# --------------------------------------------------------------------------- sections
@TABLE.computes("gradient")
def _gradient(rows, active_frac, grad_err) -> dict:
    """The exact population gradient; ``rows`` as in the chapter's table, one per n."""
    gap_ratio = [r[5] for r in rows]
    return {
        "hp_active": f"{100 * min(active_frac):.1f}%" if min(active_frac) < 1 else "all",
        "hp_off_max": f"{max(r[3] for r in rows):.3f}",
        "hp_gap_ratio": " / ".join(f"{r:.1f}" for r in gap_ratio),
        "hp_gap_ns": ", ".join(str(r[0]) for r in rows),
        "active_frac": list(active_frac),
        "off_nonzero": [r[4] for r in rows],
        "gap_ratio": gap_ratio,
        "gap_growth": np.diff(gap_ratio),
        "grad_err": list(grad_err),
    }


@TABLE.computes("plateau")
def _plateau(result, progress: PlateauProgress) -> dict:
    """Experiment 1: the plateau, the jump and the hidden progress under it, per seed."""
    rec, success, p = result.record, result.success, progress
    jump = success - p.first_move
    lead_frac = p.lead / p.first_move
    rho_lead_frac = p.rho_lead / p.first_move
    at = int(np.searchsorted(rec.steps, RHO_STEP))
    rho_at = rec.distance[min(at, len(rec.steps) - 1)]
    rho_corr, rho_n = recorded_rho_correlation()
    return {
        "hp_first_move": spread(p.first_move, 0),
        "hp_jump": spread(jump, 0),
        "hp_acc_there": spread(p.acc_there, 3),
        "hp_ratio_there": spread(p.ratio_there, 3),
        "hp_placebo_there": spread(p.placebo_there, 3),
        "hp_lead": spread(p.lead, 0),
        "hp_lead_frac": spread(lead_frac, 2),
        "hp_on_rel": spread(p.on_rel, 3),
        "hp_off_rel": spread(p.off_rel, 3),
        "hp_rho_lead": spread(p.rho_lead, 0),
        "hp_rho_lead_frac": spread(rho_lead_frac, 2),
        "hp_rho_step": RHO_STEP,
        "hp_rho_corr_rec": rho_corr,
        "hp_rho_n_rec": rho_n,
        "early_acc_max": rec.accuracy[rec.steps <= 500].max(axis=0),
        "steps": result.setup.steps,
        "success": success,
        "first_move": p.first_move,
        "jump": jump,
        "jump_frac": jump / p.first_move,
        "acc_there": p.acc_there,
        "ratio_there": p.ratio_there,
        "placebo_there": p.placebo_there,
        "placebo_margin": p.ratio_there - p.placebo_there,
        "lead": p.lead,
        "lead_frac": lead_frac,
        "on_rel": p.on_rel,
        "off_rel": p.off_rel,
        "shrink_margin": p.on_rel - p.off_rel,
        "rho_lead": p.rho_lead,
        "rho_lead_frac": rho_lead_frac,
        "rho_at": rho_at,
    }


def count_unsolved(steps_to_success: dict) -> int:
    """Networks that never reached 99%: the NaN entries of ``{size: steps per seed}``."""
    return int(sum(np.isnan(v).sum() for v in steps_to_success.values()))


@TABLE.computes("k_sweep")
def _k_sweep(sweep) -> dict:
    """Experiment 2: steps to 99% per support size k."""
    steps = sweep.steps_to_success
    out = {f"hp_k{k}": spread(v, 0) for k, v in steps.items()}
    out.update({f"med_k{k}": float(np.median(v)) for k, v in steps.items()})
    out["k_unsolved"] = count_unsolved(steps)
    n = sweep.setup.n
    if all(k in steps for k in (2, 3, 5)):
        out["count_ratio_53"] = comb(n, 5) / comb(n, 3)
        out["hp_k_ratios"] = (
            f"{np.median(steps[3]) / np.median(steps[2]):.1f} from k = 2 to 3 (candidates: "
            f"{comb(n, 3) / comb(n, 2):.1f}) and {np.median(steps[5]) / np.median(steps[3]):.1f}"
            f" from k = 3 to 5 (candidates: {comb(n, 5) / comb(n, 3):.1f})"
        )
    return out


def _recorded_local(i: int) -> str:
    """The i-th local slope of the n sweep over the recorded base seeds: "median [min, max]"
    (``"not recorded"`` before a recording has it)."""
    try:
        vals = [v[i] for v in TABLE.over_seeds("n_sweep", "local_slopes")]
    except KeyError:
        return "not recorded"
    return spread(np.array(vals), 2)


@TABLE.computes("n_sweep")
def _n_sweep(sweep) -> dict:
    """Experiment 3: steps to 99% per number of input bits n, and its power law."""
    steps, setup = sweep.steps_to_success, sweep.setup
    slope, icpt = sweep.power_law()
    cv = relative_spread(steps)
    # where the fitted power law would fall below C(n, k) / batch, the statistical-query
    # count at the tolerance of one batch (the exercise "One step, how many queries?")
    grid = np.arange(min(setup.ns), 5001)
    below = (
        np.array([comb(int(n), setup.k) / setup.batch_size for n in grid])
        > np.exp(icpt) * grid.astype(float) ** slope
    )
    local = local_slopes(sweep.values, sweep.medians)
    shown = [n for n in (15, 30, 50) if n in steps]  # the sizes the prose quotes
    parallel = {n: parallel_search_mean(n, setup.k, setup.width) for n in setup.ns}
    return {
        "hp_ns": ", ".join(str(n) for n in setup.ns),
        "hp_n_eval": setup.n_eval_every,
        "hp_slope_n": f"{slope:.2f}",
        "hp_cv_max": f"{cv.max():.2f}",
        "hp_cv_med": f"{np.median(cv):.2f}",
        "hp_blind": " and ".join(f"{comb(n, 3):,} (n = {n})" for n in (30, 50)),
        "hp_measured_3050": " and ".join(
            f"{np.median(steps[n]):.0f} (n = {n})" for n in (30, 50) if n in steps
        ),
        "hp_local_slopes": ", ".join(
            f"{s:.2f} ({a}→{b})" for s, a, b in zip(local, setup.ns[:-1], setup.ns[1:], strict=True)
        ),
        "hp_width": f"{setup.width:,}",
        "hp_parallel": ", ".join(f"{parallel[n]:.1f} (n = {n})" for n in shown),
        "hp_parallel_3050": " and ".join(
            f"{parallel[n]:.1f} (n = {n})" for n in (30, 50) if n in steps
        ),
        "hp_c15": f"{comb(min(setup.ns), setup.k):,}",
        "hp_sq_cross": f"{int(grid[np.argmax(below)])}" if below.any() else "beyond 5,000",
        "hp_grid_frac": f"{100 * setup.n_eval_every / np.median(steps[min(setup.ns)]):.0f}%",
        "slope_n": slope,
        "local_slopes": local,
        "parallel_3050": [parallel[n] for n in (30, 50) if n in steps],
        "median_3050": [float(np.median(steps[n])) for n in (30, 50) if n in steps],
        "blind_3050": [comb(n, setup.k) for n in (30, 50) if n in steps],
        "hp_rec_seeds": TABLE.seeds_text(),
        "hp_local_first_rec": _recorded_local(0),
        "hp_local_last_rec": _recorded_local(-1),
        "cv_n": cv,
        "n_unsolved": count_unsolved(steps),
    }


# --------------------------------------------------------------------------- coding labs
#: Support sizes of the lab "The gap against k".
GAP_KS = (2, 3, 4, 5)


def lab_settings(setup=None) -> tuple:
    """The (batch size, learning rate) pairs of the lab "Batch size and learning rate": the
    chapter's, the batch doubled, the learning rate halved."""
    setup = SETUP.cpu if setup is None else setup
    return (
        (setup.batch_size, setup.lr),
        (2 * setup.batch_size, setup.lr),
        (setup.batch_size, setup.lr / 2),
    )


def fourier_gap(gate: torch.Tensor, x_all: torch.Tensor, k: int) -> float:
    """Mean |g_j(S - {i})| over neurons j and support inputs i over the mean |g_j(S + {i})|
    off the support, for S = {0..k-1}; ``gate`` (2^n, W) on every input ``x_all`` (2^n, n)."""
    y = x_all[:, :k].prod(-1)  # (2^n,)
    coef = (gate * y[:, None]).T @ x_all / len(x_all)  # (W, n)
    return float(coef[:, :k].abs().mean() / coef[:, k:].abs().mean())


def parity_trials(trials: int, *, m: int, n: int, k: int, seed: int) -> tuple:
    """``trials`` small training sets of a k-sparse parity: supports (trials, k), inputs x
    (trials, m, n) of +-1 and labels y (trials, m) of +-1 (NumPy, ``make_rng(7, base=seed)``)."""
    rng = make_rng(7, base=seed)
    supports = np.stack([rng.choice(n, k, replace=False) for _ in range(trials)])
    x = rng.choice([-1, 1], size=(trials, m, n))
    y = np.take_along_axis(x, supports[:, None, :], axis=2).prod(-1)
    return supports, x, y


LABS = LabTable(
    "hidden_progress",
    [
        Lab(
            "ex-hidden-progress-4",
            expects="a list of three arrays of steps to 99% accuracy (one per network), for the "
            "chapter's batch and rate, the batch doubled, and the rate halved, in that "
            "order",
            quantity="the median steps with the rate halved over the median at the chapter's rate",
            measure=lambda a: float(np.median(a[2]) / np.median(a[0])),
            low=1.35,
            high=2.3,
            because="the drift towards the support per step is proportional to the learning "
            "rate, so halving it stretches the plateau, here by less than twice: part "
            "of the wait does not scale with the rate",
            hint="run run_k_sweep on replace(small, batch_size=..., lr=...) for each setting, "
            "with the same base seed, and list the results as (chapter's, batch doubled, "
            "rate halved).",
        ),
        Lab(
            "ex-hidden-progress-5",
            expects="a list of four gap ratios (support over off-support mean absolute "
            "coefficient), for k = 2, 3, 4, 5 in that order",
            quantity="the Fourier gap at k = 4",
            measure=lambda gaps: gaps[2],
            low=2.3,
            high=3.6,
            because="at k = 4 the support's degree-3 coefficients are about as large as the "
            "degree-2 ones at k = 3, against degree-5 ones off the support, so the gap "
            "is about the same as at k = 3",
            hint="multiply the gates by the label y = x_0 x_1 ... x_(k-1) before correlating "
            "with x_i, divide the support's mean by the off-support one (not the reverse), "
            "and list k = 2, 3, 4, 5 in order.",
        ),
        Lab(
            "ex-hidden-progress-6",
            expects="the fraction of the 200 trials in which Gaussian elimination mod 2 recovers "
            "the support exactly",
            quantity="the fraction of supports recovered from 35 examples",
            low=0.93,
            high=1.0,
            because="35 random examples of 30 bits have full rank mod 2 with probability about "
            "1 - 2^-5, and then the parity's support is the unique solution",
            hint="map each sign to a bit (1 where x_i = -1, and likewise for y), so that the "
            "label bit is the sum mod 2 of the support's bits; eliminate mod 2 (XOR rows), "
            "not over the reals.",
        ),
    ],
)
feedback = LABS.feedback

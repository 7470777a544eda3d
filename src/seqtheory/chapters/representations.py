"""Universality of representations (``book/representations.md``): at mid sizes one kinship
model's decoder reads another seed's embedding through an affine map, though the embeddings
are not affine images of each other; at the smallest sizes it does not."""

from __future__ import annotations

import numpy as np
import torch

from ..book.archive import load_data
from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..book.notebook import spread
from ..core.runtime import to_numpy
from ..kinship import accuracy, train_kinship
from ..representations import SETUP, kinship_task
from ..sources.knowledge_graphs import KINSHIP, automorphism_count, seen_closure

__all__ = [
    "TABLE",
    "claims",
    "implied_fraction",
    "closure_errors",
    "max_terms_per_pair",
    "automorphism_text",
    "decoder_archive",
    "top_directions",
    "LABS",
    "feedback",
    "SMALL_DIMS",
    "MID_DIMS",
]

SMALL_DIMS = (2, 3, 4)  # the smallest sizes that generalize (Experiment 2; the page's cell)
MID_DIMS = (8, 16)  # the sizes where another seed stitches (Experiment 2)

TABLE = ClaimTable(
    "representations",
    [
        # ------------------------------------------------------------------ the split
        Claim(
            "split.implied",
            "Every held-out fact is implied by the seen ones.",
            "implied == 1.0",
            "a closure rule missing or broken, or a split that hides a parent link in both "
            "directions together with every sibling and spouse route to it",
        ),
        Claim(
            "split.closure_sound",
            "The closure of the seen facts recovers only true links, so a term it derives is "
            "the true term.",
            "closure_errors == 0",
            "a wrong closure rule, e.g. 'an uncle's sibling is a parent'",
        ),
        Claim(
            "split.one_term",
            "In a forest without intermarriage the derived relations are mutually exclusive: "
            "each ordered pair has one kinship term.",
            "max_terms <= 1",
            "a generator that lets relatives marry, or a derived relation that overlaps another",
        ),
        # ------------------------------------------------------------------ Experiment 1
        Claim(
            "zone.interior_max",
            "Without weight decay the median held-out accuracy peaks at an interior "
            "embedding size.",
            "0 < best_index < n_dims - 1",
            "a curve that peaks at d = 1 or at d = 32 (no Goldilocks zone)",
        ),
        Claim(
            "zone.peak_height",
            "The peak lies well above both ends of the curve (d = 1 and d = 32).",
            "best_acc - max(first_acc, last_acc) > 0.08",
            "a flat curve, where the best size is best only by noise",
        ),
        Claim(
            "zone.d1_underfits",
            "With d = 1 the models cannot fit their training pairs, on any seed, with or "
            "without weight decay.",
            "train_d1_max < 0.97",
            "a d = 1 model that fits (nearly) every training pair",
        ),
        Claim(
            "zone.fit_from_d3",
            "From d = 3 on every seed fits every training pair (no weight decay).",
            "train_min_d3 > 0.99",
            "a mid-sized or large model that leaves training pairs unfitted (too few steps, "
            "a bad learning rate)",
        ),
        Claim(
            "zone.weight_decay_lifts",
            "Weight decay lifts the large models (d >= 16) back up.",
            "wd_lift_big > 0.05",
            "weight decay that leaves the memorizing large models where they are",
        ),
        Claim(
            "zone.starved_lower",
            "Starving the models of data lowers the median curve, on average over sizes.",
            "starve_drop > 0.15",
            "half the pairs doing about as well as the full training set",
        ),
        Claim(
            "zone.starved_from_d2",
            "Starving the models of data lowers the median curve at every size from d = 2 "
            "on (at d = 1 the models underfit even with all the pairs, and the drop can be "
            "small).",
            "min(np.array(median_wd0[1:]) - median_starved[1:]) > 0.05",
            "a size d >= 2 at which half the pairs do as well as the full training set",
        ),
        # ------------------------------------------------------------------ Experiment 1, decoder
        Claim(
            "decoder.narrow_underfits",
            "A decoder of width 4 cannot fit the training pairs (median training accuracy "
            "below 0.95) and generalizes far worse than the chapter's width 32 (median "
            "held-out accuracy lower by more than 0.2), at d = 8 and 32 (archived run).",
            "narrow_train_hi < 0.95 and narrow_drop_lo > 0.2",
            "a narrow decoder that fits its training pairs, or generalizes about as well as "
            "width 32",
        ),
        Claim(
            "decoder.wide_fits",
            "Decoders of width 128 and 512 fit every training pair (median training "
            "accuracy above 0.99, archived run).",
            "wide_train_lo > 0.99",
            "wide decoders that fail to fit their training pairs in 1,000 steps",
        ),
        Claim(
            "decoder.wide_no_better",
            "Widening the decoder beyond 32 does not improve held-out accuracy: the medians "
            "at widths 128 and 512 stay less than 0.03 above width 32's, at d = 8 and 32 "
            "(archived run).",
            "wide_gain_hi < 0.03",
            "wide decoders that generalize better than width 32 (no 'too smart' side)",
        ),
        # ------------------------------------------------------------------ Experiment 2
        Claim(
            "stitching.mid_sizes",
            "At d = 8 and 16 another seed's embedding, mapped affinely, drives B's decoder "
            "to most of B's own accuracy: the median shortfall varies from run to run (often "
            "under 0.1) but stays below 0.35 (both weight decays).",
            "max(mid_shortfall) < 0.35",
            "another seed that no longer stitches at d = 8 or 16",
        ),
        Claim(
            "stitching.mid_vs_small",
            "Another seed falls less short of B's own accuracy at d = 8 and 16 than at any "
            "of d = 2-4 (medians, both weight decays).",
            "max(mid_shortfall) < min(small_shortfall)",
            "mid-sized models that stitch no better than the small ones",
        ),
        Claim(
            "stitching.above_controls",
            "At d = 8 another seed stitches far above both controls (random embeddings, the "
            "model of the relabelled genealogy).",
            "min(gap8) > 0.35",
            "a control that stitches about as well as another seed",
        ),
        Claim(
            "stitching.controls_low",
            "At d = 8 both controls score near zero through the same map.",
            "ctrl8 < 0.1",
            "an affine map that can place random points where B's decoder wants them at d = 8",
        ),
        Claim(
            "stitching.small_fail",
            "At d = 2-4 another seed's embedding, even after training the map, falls well "
            "short of B's own accuracy (both weight decays).",
            "min(small_shortfall) > 0.15",
            "small models that stitch as well as they perform alone",
        ),
        Claim(
            "stitching.small_ratio",
            "At d = 2-4 another seed reaches only a fraction of B's own accuracy.",
            "ratio_hi < 0.8",
            "a small size at which stitching reaches nearly B's own accuracy",
        ),
        Claim(
            "stitching.small_generalize",
            "With weight decay the best of the sizes d = 2-4 is among the best at held-out facts.",
            "best_own_wd1 - small_own_wd1 < 0.15",
            "small models that generalize clearly worse than the best size",
        ),
        Claim(
            "stitching.random_control_32",
            "At d = 32 stitching from random embeddings scores far above zero: the control fails.",
            "rand32 > 0.2",
            "a random control near zero at d = 32 (the map too small to place 44 people)",
        ),
        Claim(
            "stitching.not_affine_images",
            "At d = 8, where another seed stitches, B's embedding is far from an affine "
            "image of that seed's: the best affine fit explains well under all of its "
            "variance (median R² below 0.75, both weight decays).",
            "r2_8_hi < 0.75",
            "seeds whose embeddings are affine images of each other (R² near 1)",
        ),
        Claim(
            "stitching.r2_above_random",
            "At d = 8 that affine fit still explains more of B's embedding than the same fit "
            "from random points (medians more than 0.15 apart, both weight decays).",
            "r2_gap8_lo > 0.15",
            "an affine fit from another seed no better than one from noise",
        ),
        Claim(
            "stitching.cka_below_one",
            "Where another seed stitches well (d = 8, 16), debiased CKA between seeds stays "
            "well below 1.",
            "cka_mid_hi < 0.9",
            "seeds at d = 8, 16 that agree up to a rotation (CKA near 1)",
        ),
        Claim(
            "stitching.cka_random_small",
            "Debiased CKA of a trained embedding against a random one stays small at every "
            "size: each median over seeds within 0.2 of 0 (unrelated embeddings of 44 people "
            "scatter around 0 by a few hundredths).",
            "cka_random_abs < 0.2",
            "a trained embedding that correlates with random points (a biased estimator, "
            "or plain CKA at large d)",
        ),
        # ------------------------------------------------------------------ Experiment 2, small
        Claim(
            "small.restarts",
            "Restarts recover only a small part of the gap between the affine stitch of the "
            "small models and B's own accuracy: less than a third of it at every size "
            "(medians).",
            "max((np.array(med_affine_best) - med_affine_start) "
            "/ (np.array(med_own) - med_affine_start)) < 1 / 3",
            "random starts that rescue the affine stitch (an optimisation failure, or a "
            "symmetry that misled the least-squares start)",
        ),
        Claim(
            "small.affine_short",
            "Even the best of the restarted affine stitches falls well short of B's own "
            "accuracy at every small size.",
            "affine_shortfall > 0.15",
            "a restarted affine stitch that reaches B's own accuracy",
        ),
        Claim(
            "small.nonlinear_gain",
            "A small non-linear stitch beats the best affine one at every small size.",
            "nl_gain_lo > 0.12",
            "a non-linear stitch that gains little over the affine one",
        ),
        Claim(
            "small.nonlinear_ratio",
            "The non-linear stitch reaches more than half of B's own accuracy at d = 3 and 4.",
            "nl_ratio_lo > 0.5",
            "a non-linear stitch at or below half of B's own accuracy at d = 3 or 4",
        ),
        Claim(
            "small.nonlinear_control",
            "The non-linear stitch stays well above the same stitch fed with random points.",
            "nl_gap_lo > 0.15",
            "a non-linear stitch less than 0.15 above the same stitch fed with random points",
        ),
        Claim(
            "small.nonlinear_d2",
            "At d = 2 even the non-linear stitch stays below B's own accuracy.",
            "nl_short_d2 > 0.03",
            "a non-linear stitch that matches B's own accuracy at d = 2",
        ),
        # ------------------------------------------------------------------ Experiment 3
        Claim(
            "invariance.squash_lowers_cka",
            "An invertible linear squash of B's own embedding lowers its linear CKA with B "
            "well below the rotated copy's 1, for every model B.",
            "squash_cka_max < 0.85",
            "B's embedding so close to one-dimensional, or so isotropic, that the squash "
            "barely changes its CKA",
        ),
        Claim(
            "invariance.squash_stitches",
            "The squashed copy still drives B's decoder as well as B's own embedding does "
            "(medians over models B within 0.06).",
            "squash_gap < 0.06",
            "a stitch that drifts away from the least-squares start that undoes the squash",
        ),
        # ------------------------------------------------------------------ Experiment 4
        Claim(
            "families.bilinear_generalizes",
            "The bilinear models generalize (median held-out accuracy above 0.8).",
            "bil_med > 0.8",
            "bilinear decoders that do not learn the genealogy",
        ),
        Claim(
            "families.bilinear_like_mlp",
            "The bilinear models generalize about as well as the MLP ones at d = 8.",
            "bil_med > mlp8_med - 0.1",
            "bilinear models clearly worse than the MLP ones",
        ),
        Claim(
            "families.stitch_ratio",
            "Stitching across sizes and decoder families reaches most of B's own accuracy "
            "(median per case).",
            "ratio_min > 0.55",
            "stitching across sizes or families that falls towards the random control",
        ),
        Claim(
            "families.above_random",
            "Stitching across sizes and families stays far above the random control.",
            "x4_gap_lo > 0.45",
            "a case in which random embeddings stitch about as well as another model",
        ),
        Claim(
            "families.almost_affine",
            "A flexible stitch learns maps that are more nearly affine for trained sources "
            "than for random ones.",
            "score_gap_min > 0.15",
            "maps as far from affine for trained models as for random points",
        ),
    ],
)
claims = TABLE.claims_for


# --------------------------------------------------------------------------- the split
def implied_fraction(split) -> tuple[float, int]:
    """Fraction of the held-out facts of ``split`` that its training pairs imply, and their
    number."""
    closure = seen_closure(split)
    pairs, terms = (to_numpy(t) for t in split.select("test_facts"))
    return float(np.mean(closure[pairs[:, 0], pairs[:, 1]] == terms)), len(terms)


def closure_errors(forest, split) -> int:
    """Number of ordered pairs to which the closure of ``split``'s training pairs gives a
    term other than the true one (0 for sound closure rules)."""
    truth, closure = forest.kinship(), seen_closure(split)
    implied = closure > 0
    return int((truth[implied] != closure[implied]).sum())


def max_terms_per_pair(forest) -> int:
    """Largest number of derived relations (parent to cousin) that hold for one ordered
    pair; great-ancestor is defined as 'ancestor and none of the others', so it is left
    out."""
    overlap = sum(forest.matrix(t).astype(int) for t in KINSHIP[1:10])
    return int(np.max(overlap))


@TABLE.computes("split")
def _split(task) -> dict:
    """The held-out facts of the main split and of the starved one, and the closure."""
    implied, n_held = implied_fraction(task.data)
    implied_half, n_held_half = implied_fraction(task.fraction_data[min(task.fraction_data)])
    return {
        "n_held": n_held,
        "n_people": int(task.forest.n),
        "implied": implied,
        "implied_half": implied_half,
        "n_held_half": n_held_half,
        "closure_errors": closure_errors(task.forest, task.data),
        "max_terms": max_terms_per_pair(task.forest),
    }


# --------------------------------------------------------------------------- Experiment 1
@TABLE.computes("zone")
def _zone(result) -> dict:
    """Median held-out accuracy over seeds per size; training fit; weight decay; less data."""
    setup, held_out, train_acc = result.setup, result.held_out, result.train_acc
    dims = np.array(setup.dims)
    med0, med1 = (np.median(held_out[wd], 1) for wd in (0.0, 0.1))
    best = int(med0.argmax())
    med_starved = np.median(result.starved[min(setup.fractions)], 1)
    big = dims >= 16
    return {
        "n_seeds": len(setup.seeds),
        "n_dims": len(dims),
        "best_index": best,
        "best_d": int(dims[best]),
        "best_acc": float(med0[best]),
        "best_spread": spread(held_out[0.0][best]),
        "first_acc": float(med0[0]),
        "last_acc": float(med0[-1]),
        "last_acc_wd": float(med1[-1]),
        "median_wd0": med0,
        "median_wd1": med1,
        "median_starved": med_starved,
        "train_d1_max": float(max(train_acc[wd][0].max() for wd in train_acc)),
        "train_min_d3": float(train_acc[0.0][dims >= 3].min()),
        "wd_lift_big": float((med1[big] - med0[big]).min()),
        "starve_drop": float(np.mean(med0 - med_starved)),
        "starve_drop_min": float((med0 - med_starved).min()),
    }


# --------------------------------------------------------------------------- the decoder
def decoder_archive(archive: dict | None = None) -> dict:
    """The archived decoder-width sweep (``scripts/representations_decoder.py``) as
    ``{"meta", "held_out", "train"}``, the last two mapping (d, width) to the values of
    every model (base seeds x seeds)."""
    archive = load_data("representations_decoder.json") if archive is None else archive
    if not isinstance(archive, dict) or not {"meta", "runs"} <= set(archive):
        raise ValueError("archive must be a dict with 'meta' and 'runs'")
    out = {"meta": archive["meta"], "held_out": {}, "train": {}}
    for r in archive["runs"]:
        key = (int(r["d"]), int(r["width"]))
        out["held_out"].setdefault(key, []).append(float(r["held_out"]))
        out["train"].setdefault(key, []).append(float(r["train"]))
    return out


@TABLE.computes("decoder")
def _decoder(sweep: dict) -> dict:
    """Medians over every archived model (base seeds x seeds) per (d, decoder width)."""
    meta = sweep["meta"]
    dims, widths = list(meta["dims"]), list(meta["widths"])
    held = {k: float(np.median(v)) for k, v in sweep["held_out"].items()}
    train = {k: float(np.median(v)) for k, v in sweep["train"].items()}
    wide = [w for w in widths if w > 32]
    return {
        "dec_models": len(sweep["held_out"][dims[0], widths[0]]),
        "dec_base_seeds": len(meta["base_seeds"]),
        "dec_held_8": [held[8, w] for w in widths],
        "dec_held_32": [held[32, w] for w in widths],
        "dec_train_8": [train[8, w] for w in widths],
        "dec_best_8": held[8, 32],
        "dec_narrow_8": held[8, min(widths)],
        "dec_wide_8": held[8, max(widths)],
        "narrow_train_hi": max(train[d, min(widths)] for d in dims),
        "narrow_drop_lo": min(held[d, 32] - held[d, min(widths)] for d in dims),
        "wide_train_lo": min(train[d, w] for d in dims for w in wide),
        "wide_gain_hi": max(held[d, w] - held[d, 32] for d in dims for w in wide),
        "wide_drop_hi": max(held[d, 32] - held[d, w] for d in dims for w in wide),
    }


# --------------------------------------------------------------------------- Experiment 2
@TABLE.computes("stitching")
def _stitching(result) -> dict:
    """Medians over the seeds of B of each stitching source, per weight decay (lists follow
    ``setup.weight_decays``), and the debiased CKA across seeds and against random points."""
    setup = result.setup
    wds = list(setup.weight_decays)
    i8, i32 = (setup.dims.index(d) for d in (8, 32))
    mid = [setup.dims.index(d) for d in MID_DIMS]
    small = [setup.dims.index(d) for d in SMALL_DIMS]
    med = {wd: {k: np.median(v, 1) for k, v in result.stitched[wd].items()} for wd in wds}
    cka_med = {wd: np.median(result.cka[wd], 1) for wd in wds}
    cka_random_med = np.array([np.median(result.cka_random[wd], 1) for wd in wds])
    ratio_small = np.array([med[wd]["across seeds"][small] / med[wd]["own"][small] for wd in wds])
    ctrl8 = [max(med[wd]["random"][i8], med[wd]["other graph"][i8]) for wd in wds]
    cka_mid = np.array([cka_med[wd][mid] for wd in wds])
    mid_shortfall = [
        float((med[wd]["own"][mid] - med[wd]["across seeds"][mid]).max()) for wd in wds
    ]
    r2 = {wd: {k: np.median(v, 1) for k, v in result.affine_fit[wd].items()} for wd in wds}
    r2_8 = np.array([r2[wd]["across seeds"][i8] for wd in wds])
    # the record over base seeds: each run's largest mid-size shortfall (either weight decay)
    rec_shortfall = [max(v) for v in TABLE.over_seeds("stitching", "mid_shortfall")]
    return {
        "wd_table": max(wds),
        "x8_wd0": float(med[0.0]["across seeds"][i8]),
        "own8_wd0": float(med[0.0]["own"][i8]),
        "x8_wd1": float(med[0.1]["across seeds"][i8]),
        "own8_wd1": float(med[0.1]["own"][i8]),
        "ctrl8": float(max(ctrl8)),
        "ratio_lo": float(ratio_small.min()),
        "ratio_hi": float(ratio_small.max()),
        "small_own_wd1": float(med[0.1]["own"][small].max()),
        "best_own_wd1": float(med[0.1]["own"].max()),
        "rand32": float(min(med[wd]["random"][i32] for wd in wds)),
        "cka_mid_lo": float(cka_mid.min()),
        "cka_mid_hi": float(cka_mid.max()),
        "mid_shortfall": mid_shortfall,
        "rec_seeds": TABLE.seeds_text(),
        "mid_shortfall_rec_lo": float(min(rec_shortfall)),
        "mid_shortfall_rec_hi": float(max(rec_shortfall)),
        "gap8": [float(med[wd]["across seeds"][i8] - c) for wd, c in zip(wds, ctrl8, strict=True)],
        "small_shortfall": [
            float((med[wd]["own"][small] - med[wd]["across seeds"][small]).min()) for wd in wds
        ],
        "r2_8_lo": float(r2_8.min()),
        "r2_8_hi": float(r2_8.max()),
        "r2_rand8_hi": float(max(r2[wd]["random"][i8] for wd in wds)),
        "r2_gap8_lo": float(min(r2[wd]["across seeds"][i8] - r2[wd]["random"][i8] for wd in wds)),
        "cka_random_med": cka_random_med.reshape(-1),
        "cka_random_abs": float(np.abs(cka_random_med).max()),
    }


@TABLE.computes("small")
def _small(rows: dict, forest, n_restarts: int, stitch_steps: int) -> dict:
    """Restarted and non-linear stitches of the small models: ``rows`` maps each row of the
    chapter's table to a (sizes, seeds of B) array, sizes ``SMALL_DIMS``."""
    med = {k: np.median(v, 1) for k, v in rows.items()}  # (sizes,) medians over B
    if any(len(m) != len(SMALL_DIMS) for m in med.values()):
        raise ValueError(f"every row must hold one entry per size of SMALL_DIMS {SMALL_DIMS}")
    at = {d: i for i, d in enumerate(SMALL_DIMS)}  # size -> row
    i2, i34 = at[2], [at[3], at[4]]
    own = med["B alone"]
    best_affine = med["affine, best of 4 starts"]
    nl, nl_random = med["non-linear stitch"], med["non-linear, random A"]
    r2 = med["affine R² of the non-linear map"]
    n_aut = automorphism_count(forest)
    return {
        "n_aut": n_aut,
        "n_aut_text": automorphism_text(n_aut),
        "n_restarts": n_restarts,
        "n_starts": n_restarts + 1,
        "stitch_steps": stitch_steps,
        "restart_change": float(np.abs(best_affine - med["affine, least-squares start"]).max()),
        "affine_shortfall": float((own - best_affine).min()),
        "nl_ratio_lo": float((nl / own)[i34].min()),
        "nl_gain_lo": float((nl - best_affine).min()),
        "nl_gap_lo": float((nl - nl_random).min()),
        "nl_rand_hi": float(nl_random.max()),
        "nl_short_d2": float(own[i2] - nl[i2]),
        "r2_small_lo": float(r2.min()),
        "r2_small_hi": float(r2.max()),
        "med_own": own,
        "med_affine_start": med["affine, least-squares start"],
        "med_affine_best": best_affine,
        "med_nonlinear": nl,
        "med_nonlinear_random": nl_random,
    }


def automorphism_text(n_aut: int) -> str:
    """The count with thousands separators, plus '(2 to the power k)' when it is one."""
    k = n_aut.bit_length() - 1
    return f"{n_aut:,}" + (f" (2 to the power {k})" if n_aut == 1 << k else "")


# --------------------------------------------------------------------------- Experiment 3
@TABLE.computes("invariance")
def _invariance(table: dict, names: list, own) -> dict:
    """The demonstration's table (``table``: measure -> (models B, sources ``names``)) and
    B's own held-out accuracy ``own``, per model B."""
    acc, deb = np.asarray(table["stitched held-out acc"]), np.asarray(table["debiased CKA"])
    col = {name: j for j, name in enumerate(names)}
    seed_acc, seed_cka = acc[:, col["another seed"]], deb[:, col["another seed"]]
    controls = [col["model of the other graph"], col["random embedding"]]
    ctrl_acc = acc[:, controls].max(1)  # the better control, per model B
    ctrl_cka = deb[:, controls]
    squashed = col["B squashed (invertible linear map)"]
    squash_cka = np.asarray(table["linear CKA"])[:, squashed]
    return {
        "own8": spread(own),
        "squash_cka": spread(squash_cka),
        "squash_cka_max": float(squash_cka.max()),
        "squash_gap": float(abs(np.median(acc[:, squashed]) - np.median(own))),
        "squash_acc": spread(acc[:, squashed]),
        "seed_cka": spread(seed_cka),
        "seed_acc": spread(seed_acc),
        "ctrl_acc_max": float(ctrl_acc.max()),
        "ctrl_cka_max": float(np.abs(ctrl_cka).max()),
    }


# --------------------------------------------------------------------------- Experiment 4
@TABLE.computes("families")
def _families(table: dict, result) -> dict:
    """Stitching across sizes and decoder families: ``table`` maps each case (family of A,
    d_A, family of B, d_B) to its rows (each one value per model B)."""
    cases = list(table)
    med = {c: {k: float(np.median(v)) for k, v in table[c].items()} for c in cases}
    ratio = {c: med[c]["A = another model"] / med[c]["B alone"] for c in cases}
    gap = {c: med[c]["A = another model"] - med[c]["A = random"] for c in cases}
    sizes = [c for c in cases if c[0] == c[2]]
    families = [c for c in cases if c[0] != c[2]]
    bil_acc = accuracy(result.bilinear, result.data)
    mlp8_acc = result.stitched[0.1]["own"][result.setup.dims.index(8)]
    return {
        "bil_own": spread(bil_acc),
        "mlp8_own": spread(mlp8_acc),
        "bil_med": float(np.median(bil_acc)),
        "mlp8_med": float(np.median(mlp8_acc)),
        "size_ratio_lo": min(ratio[c] for c in sizes),
        "fam_ratio_lo": min(ratio[c] for c in families),
        "ratio_min": min(ratio.values()),
        "x4_gap_lo": min(gap.values()),
        "x4_rand_hi": max(med[c]["A = random"] for c in cases),
        "score_lo": min(med[c]["almost-affine score"] for c in cases),
        "score_rand_hi": max(med[c]["score, A = random"] for c in cases),
        "score_gap_min": min(
            med[c]["almost-affine score"] - med[c]["score, A = random"] for c in cases
        ),
        "ratio_per_case": [ratio[c] for c in cases],
        "gap_per_case": [gap[c] for c in cases],
    }


# --------------------------------------------------------------------------- coding labs
LABS = LabTable(
    "representations",
    [
        Lab(
            "ex-representations-2",
            expects="a list of three plain linear CKA values between two independent random "
            "embeddings of the people, for d = 2, 8 and 32 in that order",
            quantity="the plain linear CKA of independent embeddings at d = 32",
            measure=lambda cka: cka[-1],
            low=0.3,
            high=0.56,
            because="for independent Gaussian embeddings of n points plain CKA is about "
            "d / (n - 1 + d), 0.43 for 44 people at d = 32, although nothing is shared",
            hint="draw two independent embeddings U and V of shape (forest.n, d) for each d, "
            "use linear_cka (not debiased_cka), and list d = 32 last.",
        ),
        Lab(
            "ex-representations-3",
            expects="the training accuracies (one per seed) of the models of size d = 2 trained "
            "with weight decay 1.0",
            quantity="the median training accuracy at d = 2 with weight decay 1.0",
            measure=lambda acc: float(np.median(acc)),
            low=0.72,
            high=0.965,
            because="with a decay of 1.0 the weights cannot grow as large as fitting every "
            "training pair in two dimensions requires: the confusion side of the zone, "
            "where the models no longer fit what they are shown",
            hint="train size 2 only, with weight_decay=1.0 and the zoo's other settings "
            "(setup.hidden, setup.steps, setup.lr), and score the training pairs: "
            'accuracy(models, data, "train").',
        ),
        Lab(
            "ex-representations-4",
            expects="the held-out accuracies (one per seed) on the facts about person p of models "
            "of size 8 trained without any pair that involves p",
            quantity="the median held-out accuracy on p's facts",
            measure=lambda acc: float(np.median(acc)),
            low=0.0,
            high=0.35,
            because="p's embedding never appears in a training pair, so it never receives a "
            "gradient and the decoder's answers about p carry no information about p",
            hint="hold out every pair with p on either side: train = (pairs[:, 0] != p) & "
            "(pairs[:, 1] != p); then score the held-out facts of that split.",
        ),
        Lab(
            "ex-representations-5",
            expects="a list of two median held-out accuracies of the size-32 models B: stitched "
            "from another seed's embedding reduced to its top 8 principal directions, and "
            "from random 8-dimensional embeddings, in that order",
            quantity="the gap between another seed and the random control",
            measure=lambda acc: acc[0] - acc[1],
            low=0.45,
            high=1.0,
            because="an affine map from 8 dimensions puts the 44 people in an 8-dimensional "
            "affine subspace of B's 32 and can place only 9 of them freely, which random "
            "points cannot exploit, while a trained embedding keeps most of what B reads "
            "in its top directions",
            hint="project the centred embedding of the next seed on its top 8 right singular "
            "vectors, draw random (forest.n, 8) embeddings for the control, stitch both "
            "into the same models B and put the trained source first.",
        ),
    ],
)
feedback = LABS.feedback


def top_directions(E, k: int) -> torch.Tensor:
    """The centred embedding ``E`` (n, d) in coordinates of its top ``k`` principal
    directions: (n, k)."""
    E = torch.as_tensor(E, dtype=torch.float32)
    centred = E - E.mean(0)
    return centred @ torch.linalg.svd(centred, full_matrices=False).Vh[:k].T


def _lab_models(seed: int, dims, weight_decay: float, data=None):
    """Models of the zoo's settings trained on ``data`` (default: the run's split)."""
    setup = SETUP.cpu
    data = kinship_task(setup, seed=seed).data if data is None else data
    models, _ = train_kinship(
        data,
        dims,
        setup.seeds,
        hidden=setup.hidden,
        steps=setup.steps,
        lr=setup.lr,
        weight_decay=weight_decay,
        base=seed,
        progress=False,
    )
    return models

"""seqtheory.chapters.representations: the numbers the page quotes, from made-up runs."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from seqtheory.chapters import representations as chapter
from seqtheory.kinship import KinshipModels, accuracy, train_kinship
from seqtheory.representations import SETUP, kinship_task
from seqtheory.sources.knowledge_graphs import KINSHIP, FamilyForest, KinshipData

DIMS = (1, 2, 3, 4, 6, 8, 16, 32)
SEEDS = (0, 1, 2, 3)
WDS = (0.0, 0.1)


@pytest.fixture(scope="module")
def task():
    return kinship_task(SETUP.cpu, seed=0)


def _failed(section_values):
    return {
        c.id
        for c in chapter.TABLE.claims
        if c.section == section_values.section and not c.holds(section_values)
    }


def _per_size(values, jitter=0.02):
    """(sizes, seeds) array: each size's value, the seeds spread around it."""
    return np.asarray(values, float)[:, None] + jitter * np.linspace(-1, 1, len(SEEDS))


# --------------------------------------------------------------------------- the split
def test_implied_fraction_counts_the_held_out_facts(task):
    _, n = chapter.implied_fraction(task.data)
    assert n == int(task.data.select("test_facts")[1].numel())


def test_implied_fraction_on_two_hand_made_families():
    # family 1: parents 0, 1 and children 2, 3; family 2: the couple 4, 5.  Seen: 0 is 2's
    # parent, 1 is 3's parent, 2 and 3 are siblings.  Held out: 0 is 3's parent and 1 is
    # 2's (a parent of one sibling is a parent of the other: implied), 4 and 5 are spouses
    # (nothing seen about them: not implied), and the unrelated pair (0, 4), which is not
    # a fact and does not count.
    term = {t: KINSHIP.index(t) for t in ("none", "parent", "spouse", "sibling")}
    rows = [
        (0, 2, "parent", True),
        (1, 3, "parent", True),
        (2, 3, "sibling", True),
        (0, 3, "parent", False),
        (1, 2, "parent", False),
        (4, 5, "spouse", False),
        (0, 4, "none", False),
    ]
    data = KinshipData(
        torch.tensor([[a, b] for a, b, _, _ in rows]),
        torch.tensor([term[t] for _, _, t, _ in rows]),
        torch.tensor([seen for *_, seen in rows]),
        n_people=6,
    )
    assert chapter.implied_fraction(data) == (pytest.approx(2 / 3), 3)


def test_split_values_hold_on_the_chapter_forest(task):
    values = chapter.claims("split", task)
    assert values["n_people"] == task.forest.n == 44
    assert isinstance(values["n_held"], int) and isinstance(values["implied_half"], float)
    assert values["closure_errors"] == 0 and values["max_terms"] == 1
    assert not _failed(values)


def test_max_terms_per_pair_sees_an_overlap():
    # two people who are each other's parent and spouse: two relations on one pair
    parent = np.zeros((3, 3), bool)
    parent[0, 1] = True
    spouse = parent | parent.T
    forest = FamilyForest(parent, spouse, np.zeros(3, np.int64), np.zeros(3, np.int64))
    assert chapter.max_terms_per_pair(forest) >= 2


def test_closure_errors_are_zero_for_the_true_closure(task):
    assert chapter.closure_errors(task.forest, task.data) == 0


# --------------------------------------------------------------------------- Experiment 1
def _zone_result(med0, med1=None, starved=None, train_d1=0.88):
    med1 = med0 if med1 is None else med1
    starved = np.asarray(med0) - 0.3 if starved is None else starved
    train = np.ones((len(DIMS), len(SEEDS)))
    train[0] = train_d1
    return SimpleNamespace(
        setup=SimpleNamespace(dims=DIMS, seeds=SEEDS, fractions=(0.5,), weight_decays=WDS),
        held_out={0.0: _per_size(med0), 0.1: _per_size(med1)},
        train_acc={0.0: train, 0.1: train.copy()},
        starved={0.5: _per_size(starved)},
    )


GOLDILOCKS = [0.64, 0.8, 0.85, 0.86, 0.87, 0.88, 0.75, 0.7]


def test_zone_values_and_claims():
    lifted = GOLDILOCKS[:6] + [0.85, 0.83]
    values = chapter.claims("zone", _zone_result(GOLDILOCKS, lifted))
    assert values["best_d"] == 8 and values["best_index"] == 5
    assert values["best_acc"] == pytest.approx(0.88)
    assert values["best_spread"] == "0.88 [0.86, 0.90]"
    assert values["last_acc_wd"] == pytest.approx(0.83)
    assert values["wd_lift_big"] == pytest.approx(0.10)
    assert values["starve_drop"] == pytest.approx(0.3)
    assert values["n_seeds"] == 4 and isinstance(values["best_d"], int)
    assert not _failed(values)


def test_a_curve_without_an_interior_maximum_fails():
    rising = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    failed = _failed(chapter.claims("zone", _zone_result(rising, train_d1=0.99)))
    assert {"zone.interior_max", "zone.d1_underfits", "zone.weight_decay_lifts"} <= failed


def test_less_data_that_costs_nothing_above_d1_fails():
    starved = [GOLDILOCKS[0] - 0.3] + [v - 0.01 for v in GOLDILOCKS[1:]]
    assert "zone.starved_from_d2" in _failed(
        chapter.claims("zone", _zone_result(GOLDILOCKS, starved=starved))
    )
    # a d = 1 model that loses nothing is allowed: it underfits with all the pairs
    starved = [GOLDILOCKS[0]] + [v - 0.3 for v in GOLDILOCKS[1:]]
    assert "zone.starved_from_d2" not in _failed(
        chapter.claims("zone", _zone_result(GOLDILOCKS, starved=starved))
    )


# --------------------------------------------------------------------------- Experiment 2
def _stitch_result(across_small=0.4, random32=0.4, cka_random=0.0, r2_seed=0.55):
    own = [0.6, 0.9, 0.9, 0.9, 0.92, 0.95, 0.9, 0.85]
    across = [0.2, across_small, across_small, across_small, 0.8, 0.93, 0.88, 0.8]
    random = [0.0, 0.0, 0.0, 0.0, 0.0, 0.03, 0.1, random32]
    other = [0.0, 0.0, 0.0, 0.0, 0.0, 0.02, 0.05, 0.2]
    stitched = {
        wd: {
            "own": _per_size(own),
            "across seeds": _per_size(across),
            "random": _per_size(random, 0.01),
            "other graph": _per_size(other, 0.01),
        }
        for wd in WDS
    }
    return SimpleNamespace(
        setup=SimpleNamespace(dims=DIMS, seeds=SEEDS, weight_decays=WDS),
        stitched=stitched,
        cka={wd: np.full((len(DIMS), 6), 0.4) for wd in WDS},
        cka_random={wd: np.full((len(DIMS), len(SEEDS)), cka_random) for wd in WDS},
        affine_fit={
            wd: {
                "across seeds": _per_size([r2_seed] * len(DIMS)),
                "random": _per_size(np.array(DIMS) / 43),
            }
            for wd in WDS
        },
    )


def test_stitching_values_and_claims():
    values = chapter.claims("stitching", _stitch_result())
    assert values["wd_table"] == 0.1
    assert values["x8_wd0"] == pytest.approx(0.93) and values["own8_wd1"] == pytest.approx(0.95)
    assert values["ctrl8"] == pytest.approx(0.03)
    assert values["ratio_hi"] == pytest.approx(0.4 / 0.9)
    assert values["rand32"] == pytest.approx(0.4)
    assert values["cka_mid_lo"] == values["cka_mid_hi"] == pytest.approx(0.4)
    assert len(values["cka_random_med"]) == len(WDS) * len(DIMS)
    assert values["mid_shortfall"] == pytest.approx([0.02, 0.02])  # d = 8 and 16
    assert values["r2_8_lo"] == values["r2_8_hi"] == pytest.approx(0.55)
    assert values["r2_gap8_lo"] == pytest.approx(0.55 - 8 / 43)
    # the record over base seeds: each run's largest mid-size shortfall, lowest and highest
    per_run = [max(v) for v in chapter.TABLE.over_seeds("stitching", "mid_shortfall")]
    assert values["rec_seeds"] == chapter.TABLE.seeds_text()
    assert (values["mid_shortfall_rec_lo"], values["mid_shortfall_rec_hi"]) == (
        min(per_run),
        max(per_run),
    )
    assert not _failed(values)


def test_small_models_that_stitch_and_a_dead_control_fail():
    failed = _failed(
        chapter.claims(
            "stitching", _stitch_result(across_small=0.88, random32=0.05, cka_random=0.5)
        )
    )
    assert {
        "stitching.small_fail",
        "stitching.small_ratio",
        "stitching.mid_vs_small",
        "stitching.random_control_32",
        "stitching.cka_random_small",
    } <= failed


def test_seeds_that_are_affine_images_of_each_other_fail():
    failed = _failed(chapter.claims("stitching", _stitch_result(r2_seed=0.97)))
    assert "stitching.not_affine_images" in failed
    failed = _failed(chapter.claims("stitching", _stitch_result(r2_seed=0.25)))
    assert "stitching.r2_above_random" in failed


def _small_rows(nonlinear=(0.75, 0.85, 0.85), best=(0.5, 0.5, 0.5)):
    def rows(v):
        return _per_size(v)

    return {
        "B alone": rows([0.85, 0.92, 0.9]),
        "affine, least-squares start": rows([0.5, 0.48, 0.5]),
        "affine, best of 4 starts": rows(best),
        "non-linear stitch": rows(nonlinear),
        "non-linear, random A": rows([0.1, 0.15, 0.1]),
        "affine R² of the non-linear map": rows([0.7, 0.75, 0.8]),
    }


def test_small_values_and_claims(task):
    values = chapter.claims("small", _small_rows(), task.forest, 3, 300)
    assert values["n_starts"] == 4 and values["stitch_steps"] == 300
    assert values["restart_change"] == pytest.approx(0.02)
    assert values["nl_gain_lo"] == pytest.approx(0.25)
    assert values["nl_short_d2"] == pytest.approx(0.1)  # d = 2 only
    assert values["nl_ratio_lo"] == pytest.approx(0.85 / 0.92)  # d = 3, 4, not d = 2
    assert values["r2_small_lo"] == pytest.approx(0.7)
    assert values["n_aut"] == 131072
    assert values["n_aut_text"] == "131,072 (2 to the power 17)"
    assert not _failed(values)


def test_small_rows_must_follow_the_small_dims(task):
    assert chapter.SMALL_DIMS == (2, 3, 4)
    rows = {k: v[1:] for k, v in _small_rows().items()}  # d = 3, 4 only
    with pytest.raises(ValueError, match="SMALL_DIMS"):
        chapter.claims("small", rows, task.forest, 3, 300)


def test_restarts_that_rescue_the_affine_stitch_fail(task):
    values = chapter.claims("small", _small_rows(best=(0.84, 0.9, 0.9)), task.forest, 3, 300)
    assert {"small.restarts", "small.affine_short", "small.nonlinear_gain"} <= _failed(values)


def test_automorphism_text():
    assert chapter.automorphism_text(8) == "8 (2 to the power 3)"
    assert chapter.automorphism_text(1536) == "1,536"


# --------------------------------------------------------------------------- Experiment 3
NAMES = [
    "B itself",
    "B rotated (orthogonal map)",
    "B squashed (invertible linear map)",
    "another seed",
    "model of the other graph",
    "random embedding",
]


def _exp3(
    seed_acc=0.95, ctrl_acc=0.05, seed_cka=0.4, ctrl_cka=0.03, squash_cka=0.6, squash_acc=0.96
):
    ones = np.ones(4)
    return {
        "linear CKA": np.stack(
            [ones, ones, squash_cka * ones, seed_cka * ones, 0.1 * ones, 0.1 * ones], 1
        ),
        "debiased CKA": np.stack(
            [ones, ones, 0.5 * ones, seed_cka * ones, ctrl_cka * ones, -ctrl_cka * ones], 1
        ),
        "stitched held-out acc": np.stack(
            [
                0.95 * ones,
                0.95 * ones,
                squash_acc * ones,
                seed_acc * ones,
                ctrl_acc * ones,
                0.5 * ctrl_acc * ones,
            ],
            1,
        ),
    }


def test_invariance_values_and_claims():
    values = chapter.claims("invariance", _exp3(), NAMES, [0.93, 0.95, 0.96, 0.99])
    assert values["own8"] == "0.95 [0.93, 0.99]"
    assert values["squash_cka"] == "0.60 [0.60, 0.60]"
    assert values["ctrl_acc_max"] == pytest.approx(0.05)
    assert values["ctrl_cka_max"] == pytest.approx(0.03)
    assert values["squash_cka_max"] == pytest.approx(0.6)
    assert values["squash_gap"] == pytest.approx(0.005)  # medians 0.96 and 0.955
    assert not _failed(values)


def test_a_squash_that_keeps_cka_or_loses_the_stitch_fails():
    values = chapter.claims("invariance", _exp3(squash_cka=0.95, squash_acc=0.8), NAMES, [0.95] * 4)
    assert {"invariance.squash_lowers_cka", "invariance.squash_stitches"} <= _failed(values)


# --------------------------------------------------------------------------- the decoder
def _archive(held, train):
    """A made-up archive: ``held``/``train`` map width -> value, the same at d = 8 and 32."""
    widths = sorted(held)
    runs = [
        {
            "base": b,
            "d": d,
            "width": w,
            "seed": s,
            "held_out": held[w] + 0.01 * s,
            "train": train[w],
        }
        for b in (0, 1)
        for d in (8, 32)
        for w in widths
        for s in range(4)
    ]
    meta = {"dims": [8, 32], "widths": widths, "base_seeds": [0, 1], "seeds": [0, 1, 2, 3]}
    return chapter.decoder_archive({"meta": meta, "runs": runs})


ZONE_WIDTHS = {4: 0.45, 16: 0.8, 32: 0.88, 128: 0.8, 512: 0.79}
FITS = {4: 0.8, 16: 1.0, 32: 1.0, 128: 1.0, 512: 1.0}


def test_decoder_values_and_claims():
    values = chapter.claims("decoder", _archive(ZONE_WIDTHS, FITS))
    assert values["dec_models"] == 8 and values["dec_base_seeds"] == 2
    assert values["dec_held_8"] == pytest.approx([v + 0.015 for v in ZONE_WIDTHS.values()])
    assert values["narrow_drop_lo"] == pytest.approx(0.43)
    assert values["wide_gain_hi"] == pytest.approx(-0.08)
    assert not _failed(values)


def test_a_decoder_that_helps_when_wide_or_fits_when_narrow_fails():
    held = {**ZONE_WIDTHS, 4: 0.85, 512: 0.95}
    values = chapter.claims("decoder", _archive(held, {**FITS, 4: 1.0}))
    assert {"decoder.narrow_underfits", "decoder.wide_no_better"} <= _failed(values)


def test_the_archive_matches_a_live_run_of_its_narrowest_cell():
    sweep = chapter.decoder_archive()
    meta = sweep["meta"]
    assert meta["script"] == "scripts/representations_decoder.py"
    assert meta["setup"]["steps"] == SETUP.cpu.steps and meta["setup"]["lr"] == SETUP.cpu.lr
    width, base = min(meta["widths"]), meta["base_seeds"][0]
    models, _ = train_kinship(
        kinship_task(SETUP.cpu, seed=base).data,
        tuple(meta["dims"]),
        SETUP.cpu.seeds,
        hidden=width,
        steps=SETUP.cpu.steps,
        lr=SETUP.cpu.lr,
        weight_decay=meta["weight_decay"],
        base=base,
        progress=False,
    )
    live = accuracy(models, kinship_task(SETUP.cpu, seed=base).data)
    archived = [
        r["held_out"]
        for r in chapter.load_data("representations_decoder.json")["runs"]
        if r["base"] == base and r["width"] == width
    ]
    assert live == pytest.approx(archived, abs=0.03)


def test_decoder_archive_refuses_a_bad_archive():
    with pytest.raises(ValueError, match="archive"):
        chapter.decoder_archive({"runs": []})


# --------------------------------------------------------------------------- Experiment 4
def _exp4(another=0.9, random=0.2):
    four = np.ones(4)
    cases = [("MLP", 6, "MLP", 8), ("MLP", 16, "MLP", 8), ("bilinear", 8, "MLP", 8)]
    return {
        c: {
            "B alone": 0.95 * four,
            "A = another model": another * four,
            "A = random": random * four,
            "almost-affine score": 0.9 * four,
            "score, A = random": 0.65 * four,
        }
        for c in cases
    }


def _families_result(task):
    own = np.full((len(DIMS), len(SEEDS)), 0.9)
    return SimpleNamespace(
        setup=SimpleNamespace(dims=DIMS),
        data=task.data,
        bilinear=KinshipModels(
            task.forest.n, 8, seeds=SEEDS, n_classes=len(KINSHIP), decoder="bilinear"
        ),
        stitched={0.1: {"own": own}},
    )


def test_families_values_and_claims(task, monkeypatch):
    monkeypatch.setattr(chapter, "accuracy", lambda models, data: np.array([0.9, 0.92, 0.95, 0.97]))
    values = chapter.claims("families", _exp4(), _families_result(task))
    assert values["bil_own"] == "0.94 [0.90, 0.97]" and values["mlp8_own"] == "0.90 [0.90, 0.90]"
    assert values["size_ratio_lo"] == values["fam_ratio_lo"] == pytest.approx(0.9 / 0.95)
    assert values["x4_gap_lo"] == pytest.approx(0.7)
    assert values["score_gap_min"] == pytest.approx(0.25)
    assert not _failed(values)


def test_untrained_bilinear_models_and_random_level_stitching_fail(task):
    values = chapter.claims("families", _exp4(another=0.3, random=0.25), _families_result(task))
    assert {
        "families.bilinear_generalizes",
        "families.stitch_ratio",
        "families.above_random",
    } <= _failed(values)

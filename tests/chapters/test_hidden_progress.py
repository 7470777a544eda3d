"""seqtheory.chapters.hidden_progress: plateau analysis and the quoted numbers, on made-up runs."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from seqtheory.chapters import hidden_progress as chapter
from seqtheory.parity import (
    HiddenProgressSetup,
    ParityRun,
    WaitingTimeResult,
    placebo_ratios,
    steps_to_success,
)

STEPS = np.arange(0, 1050, 50)


def _record(support_shrink=0.5e-4, off_shrink=1e-4, jump_at=850, rho_cross=300):
    """Two networks on n = 6 bits: chance until ``jump_at``, 99% one evaluation later;
    every weight shrinks linearly, the support's at ``support_shrink`` per step; the
    largest weight change on a support input overtakes the other inputs' at ``rho_cross``."""
    acc = np.where(STEPS < jump_at, 0.5, np.where(STEPS == jump_at, 0.7, 1.0))
    acc = np.stack([acc, acc], axis=1).astype(np.float32)
    weight = np.ones((len(STEPS), 2, 6), np.float32)
    weight[..., :3] *= (1 - support_shrink * STEPS)[:, None, None]
    weight[..., 3:] *= (1 - off_shrink * STEPS)[:, None, None]
    weight[..., 3:] *= np.array([1.0, 1.01, 0.99], np.float32)  # three distinct off bits
    zeros = np.zeros(acc.shape)
    column = np.zeros((len(STEPS), 2, 6), np.float32)
    column[..., 3:] = (1e-3 * STEPS)[:, None, None]  # off the support: linear
    column[..., :3] = (2e-3 * np.maximum(STEPS - rho_cross / 2, 0))[:, None, None]
    return ParityRun(STEPS, acc, zeros, weight, zeros, support=(0, 1, 2), column_distance=column)


def _result(rec):
    return SimpleNamespace(
        record=rec, success=steps_to_success(rec, 0.99), setup=HiddenProgressSetup(steps=1000)
    )


def _plateau(rec):
    progress = chapter.plateau_progress(rec, placebo_ratios(rec))
    return progress, chapter.claims("plateau", _result(rec), progress)


def _failed(values):
    section = values.section
    return {c.id for c in chapter.TABLE.section(section) if not c.holds(values)}


def test_first_step_ahead_is_the_start_of_the_last_run_of_trues():
    steps = np.array([0, 10, 20, 30, 40])
    assert chapter.first_step_ahead([False, True, False, True, True], steps) == 30
    assert chapter.first_step_ahead([True] * 5, steps) == 0
    assert np.isnan(chapter.first_step_ahead([True, True, True, True, False], steps))


def test_plateau_progress_reads_each_seed_at_80_percent_of_its_plateau():
    rec = _record()
    p = chapter.plateau_progress(rec, placebo_ratios(rec))
    assert p.first_move.tolist() == [850, 850]
    assert p.plateau.tolist() == [14, 14]  # step 700 >= 0.8 * 850
    assert p.acc_there.tolist() == [0.5, 0.5]
    assert p.lead.tolist() == [50.0, 50.0]  # ahead from the second evaluation on (at step 0
    #                                        every ratio, support and placebo, is 1)
    assert p.rho_lead.tolist() == [350.0, 350.0]  # 2e-3 (t - 150) > 1e-3 t from t > 300
    assert p.on_rel == pytest.approx([1 - 0.5e-4 * 700] * 2, rel=1e-6)
    assert p.off_rel == pytest.approx([1 - 1e-4 * 700] * 2, rel=1e-6)
    assert np.all(p.ratio_there > p.placebo_there)


def test_plateau_values_hold_every_claim_of_a_plateau_then_a_jump():
    _, values = _plateau(_record())
    assert values["hp_first_move"] == "850 [850, 850]"
    assert values["hp_jump"] == "50 [50, 50]"
    assert values["hp_lead_frac"] == "0.06 [0.06, 0.06]"
    assert values["success"] == [900.0, 900.0]
    assert not _failed(values)


def test_a_support_that_shrinks_like_the_rest_fails_the_progress_claims():
    _, values = _plateau(_record(support_shrink=1e-4))
    assert {
        "plateau.beats_placebo",
        "plateau.support_shrinks_less",
        "plateau.ahead_early",
    } <= _failed(values)


def test_a_largest_change_off_the_support_until_the_jump_fails_the_rho_claim():
    _, values = _plateau(_record(rho_cross=1000))
    assert _failed(values) == {"plateau.rho_on_support"}
    bare = replace(_record(), column_distance=None)  # not recorded: nan
    assert np.isnan(chapter.plateau_progress(bare, placebo_ratios(bare)).rho_lead).all()


def test_split_distance_and_rank_correlation():
    rec = _record()
    on, off = chapter.split_distance(rec)
    assert on.shape == off.shape == (len(STEPS), 2)
    assert on[-1, 0] == pytest.approx(2e-3 * 850) and off[-1, 0] == pytest.approx(1.0)
    assert chapter.rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert chapter.rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert chapter.rank_correlation([1, 1, 2], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)
    with pytest.raises(ValueError, match="same length"):
        chapter.rank_correlation([1, 2], [1, 2])


def test_an_early_jump_fails_the_plateau_claims():
    _, values = _plateau(_record(jump_at=400))
    assert {"plateau.chance_early", "plateau.all_learn"} <= _failed(values)


def test_gradient_values_quote_the_table_rows():
    rows = [[10, 0.004, 0.002, 0.1, 0.9, 2.1], [12, 0.004, 0.0015, 0.16, 0.95, 2.8]]
    values = chapter.claims("gradient", rows, [1.0, 1.0], [1e-8, 2e-8])
    assert values["hp_active"] == "all" and values["hp_off_max"] == "0.160"
    assert values["hp_gap_ratio"] == "2.1 / 2.8" and values["hp_gap_ns"] == "10, 12"
    assert not _failed(values)
    flat = [[10, 0.004, 0.004, 0.1, 0.9, 1.0], [12, 0.004, 0.004, 0.1, 0.9, 1.0]]
    values = chapter.claims("gradient", flat, [0.995, 0.98], [1e-3, 0.0])
    assert values["hp_active"] == "98.0%"
    assert _failed(values) == {
        "gradient.formula",
        "gradient.hinge_linear",
        "gradient.fourier_gap",
        "gradient.gap_widens",
    }


def _sweep(variable, steps):
    return WaitingTimeResult(
        setup=HiddenProgressSetup(),
        seed=0,
        device="cpu",
        seconds=0.0,
        variable=variable,
        steps_to_success={v: np.asarray(s, dtype=float) for v, s in steps.items()},
    )


def test_k_sweep_values_and_a_network_that_never_learns():
    steps = {
        2: [150, 200, 150],
        3: [1200, 1250, 1300],
        4: [1400, 1450, 1500],
        5: [6000, 6150, 7000],
    }
    values = chapter.claims("k_sweep", _sweep("k", steps))
    assert values["hp_k3"] == "1250 [1200, 1300]" and values["med_k5"] == 6150.0
    assert not _failed(values)
    steps[4] = [1400, np.nan, 3000]
    assert _failed(chapter.claims("k_sweep", _sweep("k", steps))) == {
        "k_sweep.all_learn",
        "k_sweep.k4_close",
    }


def test_n_sweep_fits_the_power_law_and_spots_a_blind_search():
    ns = (15, 20, 30, 40, 50)
    steps = {n: [10 * n**1.2 * f for f in (0.95, 1.0, 1.05, 1.0)] for n in ns}
    values = chapter.claims("n_sweep", _sweep("n", steps))
    assert values["slope_n"] == pytest.approx(1.2)
    assert values["hp_slope_n"] == "1.20" and values["hp_n_eval"] == 25
    assert values["hp_blind"] == "4,060 (n = 30) and 19,600 (n = 50)"
    assert not _failed(values)
    steps[30] = [100, 3000, 500, 8000]  # geometric-like scatter
    assert "n_sweep.seeds_agree" in _failed(chapter.claims("n_sweep", _sweep("n", steps)))


def test_relative_spread_is_sd_over_mean():
    cv = chapter.relative_spread({1: np.array([1.0, 3.0]), 2: np.array([2.0, 2.0])})
    assert cv.tolist() == [0.5, 0.0]


def test_one_network_of_four_at_the_top_of_its_placebos_is_tolerated_not_two():
    claim = next(c for c in chapter.TABLE.claims if c.id == "plateau.beats_placebo")
    assert claim.holds({"placebo_margin": [0.013, 0.0005, -0.001, 0.008]})
    assert not claim.holds({"placebo_margin": [0.013, -0.0005, -0.001, 0.008]})


def test_parallel_search_mean_and_local_slopes():
    assert chapter.parallel_search_mean(30, 3, 1) == pytest.approx(4060)
    assert chapter.parallel_search_mean(30, 3, 1000) == pytest.approx(4.58, abs=0.01)
    assert chapter.parallel_search_mean(50, 3, 1000) == pytest.approx(20.1, abs=0.05)
    assert chapter.local_slopes([10, 20, 40], [100, 200, 800]) == pytest.approx([1.0, 2.0])


def test_n_sweep_slower_than_one_at_a_time_search_fails_between_searches():
    ns = (15, 20, 30, 40, 50)
    steps = {n: [10 * n**1.2 * f for f in (0.95, 1.0, 1.05, 1.0)] for n in ns}
    values = chapter.claims("n_sweep", _sweep("n", steps))
    assert values["hp_parallel"] == "1.1 (n = 15), 4.6 (n = 30), 20.1 (n = 50)"
    assert values["hp_local_slopes"].startswith("1.20 (15→20), 1.20 (20→30)")
    steps = {n: [2 * n**3 * f for f in (0.95, 1.0, 1.05, 1.0)] for n in ns}  # 2 C(n, 3) +
    assert "n_sweep.between_searches" in _failed(chapter.claims("n_sweep", _sweep("n", steps)))


def test_k_sweep_growing_like_the_count_of_supports_fails():
    steps = {
        2: [150, 200, 150],
        3: [1200, 1250, 1300],
        4: [1400, 1450, 1500],
        5: [30000, 31000, 32000],
    }
    values = chapter.claims("k_sweep", _sweep("k", steps))
    assert values["hp_k_ratios"].startswith("8.3 from k = 2 to 3 (candidates: 9.3)")
    assert _failed(values) == {"k_sweep.slower_than_count"}


def test_recorded_progress_measure_predicts_convergence():
    """The record: ||W_t - W_0||_inf at RHO_STEP, pooled over the recorded networks, is
    rank-correlated with the step of 99% accuracy (further moved, sooner converged)."""
    corr, networks = chapter.recorded_rho_correlation()
    assert int(networks) >= 8 * 4
    assert float(corr) < -0.4

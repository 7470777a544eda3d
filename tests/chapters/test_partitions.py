"""seqtheory.chapters.partitions: the helpers and the numbers the page quotes, on made-up runs."""

import math
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from seqtheory.chapters import partitions as chapter
from seqtheory.partitions import PartitionProblem, PartitionSetup, planted_problem


def _claims(section):
    return chapter.TABLE.section(section)


def _failed(section, values):
    return {c.id for c in _claims(section) if not c.holds(values)}


# ----------------------------------------------------------------------------- helpers
def test_rank_corr_is_spearman_with_average_ties():
    assert chapter.rank_corr([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert chapter.rank_corr([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # monotone but not linear: still a perfect rank correlation
    assert chapter.rank_corr([1, 2, 3, 4], [1, 8, 27, 1000]) == pytest.approx(1.0)
    # ties share their average rank: ranks (0.5, 0.5, 2, 3) against (0, 1, 2, 3)
    expected = np.corrcoef([0.5, 0.5, 2, 3], [0, 1, 2, 3])[0, 1]
    assert chapter.rank_corr([5, 5, 6, 7], [1, 2, 3, 4]) == pytest.approx(expected)


def test_smallest_class_and_min_separation():
    g = np.array([[0, 1], [1, 1]])  # K = 2, I = 2
    labels = np.array([[0, 0, 0, 1], [0, 1, 1, 1]])  # smallest class: 1 of 4 tokens
    pb = PartitionProblem(labels=labels, g=g, K=2, kind="binary")
    assert chapter.smallest_class([pb], 2) == pytest.approx([0.25])
    # slot 1, classes 0 vs 1 differ only where slot 2 is in class 0 (frequency 1/4);
    # slot 2, classes 0 vs 1 differ only where slot 1 is in class 0 (frequency 3/4)
    assert chapter.min_separation([pb]) == pytest.approx([0.25])


def test_first_full_needs_every_larger_c():
    assert chapter.first_full({4: 0.0, 8: 0.9, 12: 0.5, 16: 1.0, 32: 1.0}) == 16
    assert chapter.first_full({4: 1.0, 8: 1.0}) == 4
    assert chapter.first_full({4: 0.0, 8: 0.5}) is None


def test_explore_view_and_first_determined():
    view = chapter.explore_view(8, 2, 200, 0, train=False)
    assert view.fit is None and view.x.shape == (200, 3)
    assert view.verdict == "unique, correct"  # 200 samples pin down 8 tokens per slot
    assert chapter.explore_verdicts(8, 2, 200, tries=3) == ["unique, correct"] * 3
    assert chapter.first_determined(8, 2, 200, tries=3) == 0
    # one sample determines nothing: no instance qualifies, the default falls back to 0
    assert chapter.explore_view(8, 2, 1, 0, train=False).verdict == "ambiguous"
    assert chapter.first_determined(8, 2, 1, tries=2) == 0


def test_draw_setup_marks_the_sample_and_its_label():
    small = planted_problem(8, K=2, I=2, seed=1)
    fig = chapter.draw_setup(small, np.array([3, 5]), 1)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "label y = 1" in texts
    assert f"class {small.labels[0, 3]}" in texts and f"class {small.labels[1, 5]}" in texts
    plt.close(fig)


# ----------------------------------------------------------------------------- sections
def _sat_result(thresholds, sizes=(16, 32)):
    """A made-up ThresholdResult: thresholds[N] in samples."""
    setup = PartitionSetup(sizes=sizes, trials=len(thresholds[sizes[0]]))

    def rate_at(N, c):
        return float(np.mean(np.asarray(thresholds[N]) <= max(1, round(c * N * math.log(N)))))

    def s50():
        return np.array([np.median(thresholds[N]) / N for N in sizes])

    return SimpleNamespace(
        setup=setup,
        thresholds={N: np.asarray(v) for N, v in thresholds.items()},
        rate_at=rate_at,
        s50=s50,
    )


def _growing():
    # thresholds at c of about 5 for N = 16 and 4.5 for N = 32: S50 / N = 13.9 and 15.6
    return _sat_result({16: [222] * 10, 32: [499] * 10})


ONE_MOVE = np.array([1] * 9 + [2])  # one-token alternatives below 10 thresholds


def test_sat_values_and_claims():
    sat = _growing()
    s50 = sat.s50()
    flat = s50[0] - 5 + 0.5 * (np.log([16, 32]) - math.log(16))  # slope 0.5 in ln N
    values = chapter.claims("sat", sat, s50 * 1.1, flat, ONE_MOVE)
    assert values["sat_trials"] == 10 and isinstance(values["sat_trials"], int)
    assert values["s50_first"] == pytest.approx(222 / 16)
    assert values["pred_err"] == pytest.approx(0.1)
    assert values["rate2"] == 0.0 and values["late_rate"] == 1.0
    assert values["s50_slope"] > 1
    assert values["simple_slope"] == pytest.approx(0.5)
    assert values["single_frac"] == 1.0 and values["single_one"] == 9
    assert not _failed("sat", values)


def test_a_flat_prediction_or_multi_token_ambiguity_fails():
    sat = _growing()
    s50 = sat.s50()
    # the per-instance prediction no steeper than the average-rho line
    values = chapter.claims("sat", sat, s50 * 1.1, s50 * 1.1 - 5, ONE_MOVE)
    assert _failed("sat", values) == {"sat.smallest_rho_slope"}
    flat = s50[0] - 5 + 0.5 * (np.log([16, 32]) - math.log(16))  # slope 0.5 in ln N
    # a prediction 25% off
    values = chapter.claims("sat", sat, s50 * 1.25, flat, ONE_MOVE)
    assert _failed("sat", values) == {"sat.union_bound"}
    # a third of the instances without a one-token alternative below their threshold
    values = chapter.claims("sat", sat, s50, flat, np.array([0] * 4 + [1] * 6))
    assert _failed("sat", values) == {"sat.single_token"}


def test_a_flat_threshold_fails_the_growth_claim():
    # S proportional to N: S50 / N the same at both sizes
    sat = _sat_result({16: [200] * 10, 32: [400] * 10})
    s50 = sat.s50()
    steep = s50 + 2 * (np.log([16, 32]) - math.log(16))  # a steeper prediction
    values = chapter.claims("sat", sat, steep, s50 - 5, ONE_MOVE)
    assert _failed("sat", values) == {"sat.grows"}
    # S50 / N rising with a slope below 0.75 per unit of ln N (0.59) is too flat
    sat = _sat_result({16: [200] * 10, 32: [413] * 10})
    s50 = sat.s50()
    values = chapter.claims("sat", sat, s50, s50 - 5 - (np.log([16, 32]) - math.log(16)), ONE_MOVE)
    assert values["s50_last"] > values["s50_first"] and values["s50_slope"] < 0.75
    assert _failed("sat", values) == {"sat.grows"}


def test_rho_claims():
    rho_min = [0.2, 0.25, 0.3]
    values = chapter.claims("rho", 0.50, 0.505, 0.501, rho_min)
    assert values["rho_min_med"] == 0.25 and values["inv_rho_min_med"] == 4.0
    assert not _failed("rho", values)
    assert _failed("rho", chapter.claims("rho", 1 / 3, 1 / 3, 0.501, rho_min)) == {"rho.derivation"}
    assert _failed("rho", chapter.claims("rho", 0.5, 0.53, 0.501, rho_min)) == {"rho.count"}


def _effort(peak_at=1.0, unique_at_4=100.0, unique_at_6=200.0):
    setup = PartitionSetup(effort_sizes=(64,), effort_cs=(0.5, 1.0, 4.0, 6.0))
    hard = np.array([[300, 10, 0.1], [300, 12, 0.1], [1050, 5000, 1.0], [1050, 7000, 1.0]])
    easy = np.array([[288, 5, 0.0], [1053, 100, 0.0], [1053, 300, 0.0]])
    by_c = {(64, c): np.array([1000.0 if c == peak_at else 50.0] * 3) for c in setup.effort_cs}
    unique = {4.0: unique_at_4, 6.0: unique_at_6}
    by_c_unique = {(64, c): np.array([unique.get(c, 0.0)] * 3) for c in setup.effort_cs}
    by_degree = {4.0: np.array([10, 20]), 4.6: np.array([900, 1100]), 6.0: np.array([5])}
    return SimpleNamespace(
        setup=setup,
        by_size={"colouring, degree 4.6": hard, "planted, c = 4": easy},
        by_degree=by_degree,
        by_c=by_c,
        by_c_unique=by_c_unique,
    )


def test_effort_values_and_claims():
    values = chapter.claims("effort", _effort())
    assert values["hard_growth"] == pytest.approx(6000 / 11)
    assert values["hard_big"] == 6000.0 and values["easy_big"] == 200.0
    assert values["vars_big"] == 1050 and isinstance(values["vars_big"], int)
    assert values["vars_e"] == 3 * 64 * 3 and values["N_e"] == 64
    assert values["c_peak"] == 1.0 and values["deg_peak"] == 4.6
    assert values["peak_ratio"] == pytest.approx(20.0)
    assert values["peak_c05"] == 50.0 and values["recover_c4"] == 150.0
    assert values["unique_c4"] == 100.0 and values["recover_c6"] == 250.0
    assert not _failed("effort", values)


def test_effort_peaking_at_the_threshold_or_falling_from_the_start_fails():
    values = chapter.claims("effort", _effort(peak_at=4.0))
    assert {"effort.planted_peak", "effort.peak_falls"} <= _failed("effort", values)
    falling = _effort()
    falling.by_c = {**falling.by_c, (64, 0.5): np.array([2000.0] * 3)}
    values = chapter.claims("effort", falling)  # the grid's first point the largest
    assert "effort.planted_peak" in _failed("effort", values)


def test_an_expensive_uniqueness_proof_fails():
    values = chapter.claims("effort", _effort(unique_at_6=600.0))
    assert _failed("effort", values) == {"effort.recovery_cheap"}


def test_effort_growing_ten_fold_or_less_fails():
    hardness = _effort()
    hard = hardness.by_size["colouring, degree 4.6"].copy()
    hard[2:, 1] = [90, 130]  # 110 / 11: a 10-fold growth
    hardness.by_size = {**hardness.by_size, "colouring, degree 4.6": hard}
    values = chapter.claims("effort", hardness)
    assert values["hard_growth"] == pytest.approx(10.0)
    assert "effort.colouring_grows" in _failed("effort", values)


class _GD:
    """A made-up GDResult at N = 16 and 32: ``rates[c]`` of 8 instances recovered; failed
    ones end at ``loss_fail``, still falling by ``drift`` over the last 200 steps, with
    embeddings collapsed by class (``collapse_failed``) or random."""

    def __init__(self, rates, loss_fail=0.3, drift=0.0, collapse_failed=False):
        self.setup = PartitionSetup(gd_sizes=(16, 32), gd_cs=tuple(sorted(rates)), gd_runs=8)
        self.cells = {}
        rng = np.random.default_rng(0)
        for N in self.setup.gd_sizes:
            problems = [planted_problem(N, 3, 3, seed=r) for r in range(8)]
            for c, rate in rates.items():
                rec = np.arange(8) < round(rate * 8)
                final = np.where(rec, 1e-6, loss_fail)
                losses = np.tile(final, (1500, 1))
                losses[:-1] += np.where(rec, 0.0, drift)  # (steps, runs)
                collapsed = np.stack([np.eye(3)[pb.labels] for pb in problems])  # (8, 3, N, 3)
                mixed = rng.normal(size=collapsed.shape)
                keep = (rec | collapse_failed)[:, None, None, None]
                emb = np.where(keep, collapsed, mixed)
                self.cells[N, c] = SimpleNamespace(
                    recovered=rec,
                    recovery=float(rec.mean()),
                    ari=0.0 if c == 4 else 0.5,
                    final_loss=final,
                    problems=problems,
                    fit=SimpleNamespace(losses=losses, snapshots={0: mixed, 50: emb}),
                    samples=[(np.zeros((1, 3), dtype=int), np.zeros(1, dtype=int))] * 8,
                )

    def __getitem__(self, key):
        return self.cells[key]


def test_gd_values_and_claims(monkeypatch):
    # the exact solver recovers every failed instance (its samples are placeholders here)
    monkeypatch.setattr(
        chapter,
        "solve_partitions",
        lambda x, y, N, K: SimpleNamespace(status="unique", labels=None),
    )
    monkeypatch.setattr(chapter, "same_partition", lambda a, b: True)
    sat = _growing()
    sat.rate_at = lambda N, c: 0.9 if c >= 8 else 0.3
    gd = _GD({4: 0.0, 8: 0.25, 12: 0.75, 16: 1.0, 32: 1.0})
    values = chapter.claims("gd", gd, sat)
    assert values["gd_full"] == 16 and values["gd_full_small"] == 16
    assert values["gd8_failed"] == 6 and values["sat_same_ok"] == 6
    assert values["loss8_fail"] == pytest.approx(0.3)
    assert values["gd_full_S"] == round(16 * 32 * math.log(32))
    assert values["anim_recovered"] == 8
    assert values["stall8"] == 0.0 and values["collapse16"] == 0.0
    assert 0.8 < values["spread8_fail"] < 1.2
    assert values["sat8"] == 0.9 and values["sat_lo"] == 0.3
    assert not _failed("gd", values)


def test_gd_failures_still_descending_or_collapsed_fail(monkeypatch):
    monkeypatch.setattr(
        chapter,
        "solve_partitions",
        lambda x, y, N, K: SimpleNamespace(status="unique", labels=None),
    )
    monkeypatch.setattr(chapter, "same_partition", lambda a, b: True)
    sat = _growing()
    sat.rate_at = lambda N, c: 0.9 if c >= 8 else 0.3
    rates = {4: 0.0, 8: 0.25, 12: 0.75, 16: 1.0, 32: 1.0}
    values = chapter.claims("gd", _GD(rates, drift=0.02), sat)
    assert values["stall8"] == pytest.approx(0.02)
    assert _failed("gd", values) == {"gd.stuck"}
    values = chapter.claims("gd", _GD(rates, collapse_failed=True), sat)
    assert _failed("gd", values) == {"gd.failed_spread"}


def test_gd_that_keeps_up_with_the_solver_fails(monkeypatch):
    monkeypatch.setattr(
        chapter,
        "solve_partitions",
        lambda x, y, N, K: SimpleNamespace(status="ambiguous", labels=None),
    )
    sat = _growing()
    sat.rate_at = lambda N, c: 0.9 if c >= 8 else 0.3
    gd = _GD({4: 0.5, 8: 0.75, 12: 0.75, 16: 0.75, 32: 0.75}, loss_fail=0.001)
    failed = _failed("gd", chapter.claims("gd", gd, sat))
    assert {
        "gd.learns",
        "gd.chance_at_lo",
        "gd.behind_sat",
        "gd.most_fail_at_8",
        "gd.optimisation",
        "gd.information",
        "gd.no_doubling",
    } <= failed


def test_variations_values_and_claims():
    sat = _sat_result({32: [400] * 10}, sizes=(32,))
    rng = np.random.default_rng(0)
    problems = [planted_problem(32, 3, 3, balanced=False, seed=rng) for _ in range(6)]
    rho_min = chapter.min_separation(problems)
    thr = 32 * math.log(32) * (4 / rho_min)  # slower when rho_min is small
    imb = _sat_result({32: thr}, sizes=(32,))
    imb.problems = {32: problems}
    imb.setup = PartitionSetup(sizes=(32,), balanced=False)
    unknown_k = [("unsatisfiable", True)] * 8
    values = chapter.claims("variations", sat, imb, unknown_k, SimpleNamespace(recovery=1.0))
    assert values["corr_rho"] == pytest.approx(-1.0)
    assert values["k_two"] == 1.0 and values["k_three"] == 8 and values["k_trials"] == 8
    assert values["n_imb"] == 6 and isinstance(values["imb_unrec"], int)
    assert not _failed("variations", values)
    worse = chapter.claims(
        "variations", sat, imb, [("satisfiable", False)] * 8, SimpleNamespace(recovery=0.5)
    )
    assert {
        "variations.two_classes_impossible",
        "variations.three_classes_unique",
        "variations.noise",
    } <= _failed("variations", worse)


def test_explore_counts_the_instances_the_samples_determine():
    # 200 samples determine each of the first three instances with N = 8, K = 2
    values = chapter.claims("explore", 0, N=8, K=2, S=200, tries=3)
    assert values["explore_verdict"] == "unique, correct"
    assert (values["explore_n_determined"], values["explore_n_instances"]) == (3, 3)
    assert values["explore_c"] == pytest.approx(200 / (8 * math.log(8)))
    assert not _failed("explore", values)


def test_explore_with_few_determined_instances_fails():
    # 30 samples: only instance 1 of the first four is determined; a default view on it is
    # correct, but one of four is fewer than half
    assert chapter.explore_verdicts(8, 2, 30, tries=4) == [
        "ambiguous",
        "unique, correct",
        "ambiguous",
        "ambiguous",
    ]
    values = chapter.claims("explore", 1, N=8, K=2, S=30, tries=4)
    assert values["explore_verdict"] == "unique, correct"
    assert values["explore_n_determined"] == 1
    assert _failed("explore", values) == {"explore.most_determined"}
    # one sample determines nothing, the default view included
    none = chapter.claims("explore", 0, N=8, K=2, S=1, tries=2)
    assert none["explore_n_determined"] == 0 and none["explore_verdict"] == "ambiguous"
    assert _failed("explore", none) == {"explore.most_determined"}


def test_exercise_values_are_floats():
    values = chapter.claims("exercise", {3: (1.0, 1e-8), 2: (np.float64(0.625), 0.31)})
    lo, hi = values.pop("ex4_rec_6_lo"), values.pop("ex4_rec_6_hi")  # from the record
    assert 0 <= lo <= hi <= 1
    assert values == {"ex4_rec_2": 0.625, "ex4_loss_2": 0.31, "ex4_rec_3": 1.0, "ex4_loss_3": 1e-8}
    assert all(isinstance(v, float) for v in values.values())

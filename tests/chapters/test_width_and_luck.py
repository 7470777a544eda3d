"""seqtheory.chapters.width_and_luck: the archive's frontier, the quoted numbers and the claims,
on made-up runs and on the shipped archive."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from seqtheory import make_generator
from seqtheory.book.archive import load_data
from seqtheory.chapters import width_and_luck as chapter
from seqtheory.parity import (
    WIDTH_LUCK_SETUP,
    ParityMLPs,
    WidthLuckSetup,
    coverage_distribution,
    expected_lucky_neurons,
    fisher_two_sided,
    lucky_neuron_probability,
    population_gradient,
    support_coverage,
)

SETUP = WidthLuckSetup()


@pytest.fixture(scope="module")
def arch():
    return load_data("width_frontier.json")


def _tiny_archive():
    """Two widths, three sample sizes, 4 seeds, evaluations at steps 0, 250, 500."""
    counts = {  # init -> width -> m -> successes at steps 0, 250, 500
        "dense": {
            "8": {"100": [0, 0, 0], "200": [0, 1, 2], "300": [0, 2, 4]},
            "32": {"100": [0, 0, 1], "200": [0, 2, 3], "300": [0, 3, 4]},
        },
        "sparse": {
            "8": {"100": [0, 0, 0], "200": [0, 0, 1], "300": [0, 0, 1]},
            "32": {"100": [0, 0, 0], "200": [0, 1, 1], "300": [0, 4, 4]},
        },
    }
    meta = {
        "samples": [100, 200, 300],
        "widths": [8, 32],
        "inits": ["dense", "sparse"],
        "seeds": 4,
        "steps": 500,
        "eval_every": 250,
        "setup": {f: getattr(SETUP, f) for f in chapter.SHARED_FIELDS},
    }
    return {"meta": meta, "eval_steps": [0, 250, 500], "successes": counts}


def _failed(values):
    return {c.id for c in chapter.TABLE.section(values.section) if not c.holds(values)}


# --------------------------------------------------------------------------- archive helpers
def test_arch_count_reads_a_cell_at_a_recorded_step():
    a = _tiny_archive()
    assert chapter.arch_count(a, "dense", 8, 300) == 4  # the last step
    assert chapter.arch_count(a, "dense", 8, 300, 250) == 2
    with pytest.raises(ValueError, match="recorded step"):
        chapter.arch_count(a, "dense", 8, 300, 300)


def test_pooled_counts_thresholds_and_floor_on_a_tiny_archive():
    a = _tiny_archive()
    assert chapter.pooled_arch(a, "dense", [8, 32], 200) == (5, 8)
    assert chapter.min_samples(a, "dense", 8, 500) == 200  # 2 of 4 is half
    assert chapter.min_samples(a, "sparse", 8, 500) is None
    assert chapter.steps_to_half(a, "dense", 32, 200) == 250
    assert chapter.steps_to_half(a, "sparse", 8, 300) == -1
    assert chapter.equal_compute_counts(a, "dense", 300, ((8, 500), (32, 250))) == [4, 3]
    assert chapter.archive_floor(a, max_m=100) == (1, 16)
    assert chapter.setup_mismatch(a, SETUP) == []
    assert chapter.setup_mismatch(a, replace(SETUP, weight_decay=0.0)) == ["weight_decay"]


def test_a_setup_the_archive_did_not_train_fails_its_claim(arch):
    assert not _failed(chapter.claims("frontier", arch, SETUP))
    values = chapter.claims("frontier", arch, replace(SETUP, sparsity=10))
    assert values["setup_mismatch"] == ["sparsity"]
    assert "frontier.same_setup" in _failed(values)


def test_archive_luck_claims_fail_when_narrow_networks_beat_their_tickets(arch):
    import copy

    lucky = copy.deepcopy(arch)
    cell = lucky["successes"]["sparse"]["8"]
    cell["300"] = [16] * len(cell["300"])  # width 8 always succeeds at m = 300
    failed = _failed(chapter.claims("frontier", lucky, SETUP))
    assert {"frontier.luck_below_tickets", "frontier.restarts_like_width"} <= failed
    floor = copy.deepcopy(arch)
    floor["successes"]["dense"]["2048"]["200"] = [1] * len(cell["300"])
    assert "frontier.floor" in _failed(chapter.claims("frontier", floor, SETUP))


def test_frontier_values_are_what_the_text_quotes(arch):
    values = chapter.claims("frontier", arch, SETUP)
    assert values["wf_seeds"] == 16 and values["wf_every"] == 250
    assert values["wf_floor_runs"] == 864
    assert values["wf_eq_budget"] == "640,000" and values["wf_eq_fair"] == "312"
    assert values["wf_steps_w_sparse"].count(" / ") == len(arch["meta"]["widths"]) - 1


# --------------------------------------------------------------------------- the archive
# The archive changes only when scripts/width_frontier.py is rerun: these are its claims.
def test_archive_holds_the_chapter_cells_and_set_up(arch):
    meta, cpu = arch["meta"], WIDTH_LUCK_SETUP.pick("cpu")
    assert set(cpu.samples) <= set(meta["samples"]) and set(cpu.widths) <= set(meta["widths"])
    assert cpu.steps in arch["eval_steps"]
    assert chapter.setup_mismatch(arch, cpu) == []


def test_archive_width_lowers_the_sample_need(arch):
    # sparse at m = 300 and dense at m = 400: widths 1024-2048 against widths 8-32
    for narrow, n1, wide, n2 in chapter.width_comparison(arch).values():
        assert wide > narrow and fisher_two_sided(narrow, n1, wide, n2) < 1e-4


def test_archive_steps_lower_the_sample_need(arch):
    # width 512: the smallest m with a 50% success rate after 2,000 / 6,000 / 20,000 steps
    for init in ("dense", "sparse"):
        seq = [chapter.min_samples(arch, init, chapter.FRONT_W, t) for t in (2000, 6000, 20000)]
        assert None not in seq and seq[0] > seq[1] > seq[2], (init, seq)


def test_archive_sparse_initialisation_moves_the_frontier(arch):
    widths = arch["meta"]["widths"]
    sp, n1 = chapter.pooled_arch(arch, "sparse", widths, 300)
    de, n2 = chapter.pooled_arch(arch, "dense", widths, 300)
    assert sp > de and fisher_two_sided(sp, n1, de, n2) < 1e-4


def test_archive_floor_nothing_learns_from_200_examples(arch):
    assert chapter.archive_floor(arch)[0] == 0


def test_archive_equal_compute_favours_narrow_long_runs(arch):
    for init in ("dense", "sparse"):
        c = chapter.equal_compute_counts(arch, init)
        assert c[-1] < c[0] - 4, (init, c)


def test_archive_width_beyond_32_buys_few_steps(arch):
    widths, m = arch["meta"]["widths"], max(arch["meta"]["samples"])
    for init in ("dense", "sparse"):
        half = {w: chapter.steps_to_half(arch, init, w, m) for w in widths}
        beyond = [half[w] for w in widths if w >= 32]
        assert min(beyond) > 0 and max(beyond) <= 1.5 * min(beyond), (init, half)
        assert half[min(widths)] > half[32], (init, half)


# --------------------------------------------------------------------------- live sections
def test_full_ticket_probability_is_below_the_power_bound():
    for n, k in ((30, 3), (20, 2), (12, 5)):
        for s in range(k, n + 1):
            assert lucky_neuron_probability(n, k, s) <= (s / n) ** k + 1e-15


def test_lottery_values_and_a_biased_sample():
    exact = coverage_distribution(30, 3, 6)
    values = chapter.claims("lottery", SETUP, exact, 32768)
    assert values["wl_p_full"] == "0.0049" and values["wl_p_power"] == "0.0080"
    assert values["wl_p_partial"] == "0.089" and values["wl_p_one_narrow"] == "0.15"
    assert values["coverage_z"] == [0.0] * 4 and not _failed(values)
    biased = exact + np.array([-0.02, 0.0, 0.01, 0.01])  # too many neurons see S
    assert _failed(chapter.claims("lottery", SETUP, biased, 32768)) == {"lottery.sampled_coverage"}


class _Grid:
    """A live grid whose cells succeed in ``table[(m, init)]`` of 4 seeds at every width,
    plus ``extra`` more at the widest for m > 200."""

    def __init__(self, table, extra=0, setup=SETUP):
        self.setup, self.table, self.extra = setup, table, extra

    def count(self, samples, inits, widths=None):
        widths = self.setup.widths if widths is None else widths
        return sum(
            self.table[(m, i)] + (self.extra if w == max(self.setup.widths) and m > 200 else 0)
            for w in widths
            for m in samples
            for i in inits
        )


GOOD = {
    (200, "dense"): 0,
    (200, "sparse"): 0,
    (400, "dense"): 0,
    (400, "sparse"): 2,
    (600, "dense"): 3,
    (600, "sparse"): 3,
    (800, "dense"): 4,
    (800, "sparse"): 4,
}


def test_grid_values_pool_the_runs():
    values = chapter.claims("grid", _Grid(GOOD, extra=1))
    assert values["wl_400_sparse"] == 6 + 1 and values["wl_400_of"] == 12
    assert values["wl_dense_more"] == 21 + 2 and values["wl_more_of"] == 24
    assert values["wl_wide_n"] - values["wl_narrow_n"] == 6
    assert values["wl_wide"] == 512 and values["wl_narrow"] == 32
    assert not _failed(values)


def test_a_grid_where_dense_learns_from_400_and_width_does_not_help_fails():
    table = {**GOOD, (400, "dense"): 2, (400, "sparse"): 2}
    assert _failed(chapter.claims("grid", _Grid(table, extra=-1))) == {
        "grid.dense_400_rare",
        "grid.sparse_400_ahead",
        "grid.width_pays",
    }


def _mech(final_wide, final_narrow):
    """Per width, successful networks as (J per neuron, |w_S|, initial share, final share)."""
    cov = np.array([0] * 9 + [2])  # a tenth are tickets
    net = lambda share0, share: (cov, np.ones(10), share0, share)  # noqa: E731
    return {
        32: [net(0.3, final_narrow)] * 5,
        128: [net(0.3, final_wide)] * 6,
        512: [net(0.3, final_wide)] * 6,
    }


def test_mechanism_values_and_tickets_that_do_not_concentrate():
    values = chapter.claims("mechanism", SETUP, _mech(0.7, 0.25))
    assert values["wl_mech_n"] == 12 and values["wl_mech_up"] == 12
    assert values["wl_mech_init"] == "0.30" and values["wl_mech_final"] == "0.70"
    assert values["wl_mech_frac"] == "0.10" and values["wl_mech_n32_frac"] == "0.10"
    assert values["wl_decay"] == "0.0025 (about e^-6)"
    assert not _failed(values)
    assert _failed(chapter.claims("mechanism", SETUP, _mech(0.35, 0.6))) == {
        "mechanism.share_rises",
        "mechanism.tickets_hold_most",
        "mechanism.narrow_weaker",
        "mechanism.narrow_between",
    }


def test_live_slice_against_the_archive(arch):
    # the archive's own rates at 6,000 steps, scaled to 4 seeds a cell, agree with it
    rates = {
        (m, i): round(chapter.pooled_arch(arch, i, SETUP.widths, m, SETUP.steps)[0] / 12)
        for m in SETUP.samples
        for i in ("dense", "sparse")
    }
    values = chapter.claims("slice", _Grid(rates), arch)
    assert len(values["slice_p"]) == 8 and not _failed(values)
    drifted = {**rates, (400, "sparse"): 0}
    assert _failed(chapter.claims("slice", _Grid(drifted), arch)) == {"slice.agrees"}


def test_slice_pvalues_key_the_tests_by_init_and_m(arch):
    p = chapter.slice_pvalues(_Grid(GOOD), arch)
    assert sorted(p) == sorted((i, m) for i in ("dense", "sparse") for m in SETUP.samples)
    result = SimpleNamespace(setup=SETUP, count=_Grid(GOOD).count)
    assert chapter.slice_pvalues(result, arch) == p


class _WidthGrid(_Grid):
    """A live grid whose cells at width ``w`` succeed in ``tables[w][(m, init)]`` of 4 seeds."""

    def __init__(self, tables, setup=SETUP):
        super().__init__(None, setup=setup)
        self.tables = tables

    def count(self, samples, inits, widths=None):
        widths = self.setup.widths if widths is None else widths
        return sum(self.tables[w][(m, i)] for w in widths for m in samples for i in inits)


def _archive_rates(arch, width):
    """The archive's success counts of one width at 6,000 steps, scaled to 4 seeds a cell."""
    return {
        (m, i): round(chapter.arch_count(arch, i, width, m, SETUP.steps) / 4)
        for m in SETUP.samples
        for i in ("dense", "sparse")
    }


def test_live_width_gap_against_the_archive(arch):
    tables = {w: _archive_rates(arch, w) for w in SETUP.widths}
    values = chapter.claims("slice", _WidthGrid(tables), arch)
    assert values["wf_gap_wide"] == "80 of 96" and values["wf_gap_narrow"] == "53 of 96"
    assert min(values["width_agree_p"]) > 0.5
    flat = {**tables, 32: {c: 4 for c in tables[32]}}  # width stops paying
    assert chapter.claims("slice", _WidthGrid(flat), arch)["width_agree_p"][1] < 1e-3


def test_width_band_is_the_archive_binomial_band(arch):
    # grid.width_pays: 24 live runs at the archive's rates for width 512 and width 32
    result = SimpleNamespace(
        setup=SETUP, count=_WidthGrid({w: _archive_rates(arch, w) for w in SETUP.widths}).count
    )
    gap = chapter.width_gap(result, arch)
    n, lo, hi = gap["n_live"], *chapter.WIDE_BAND
    p_wide, p_narrow = gap["arch"][512] / gap["n_arch"], gap["arch"][32] / gap["n_arch"]
    assert (
        chapter.binomial_lower_tail(lo - 1, n, p_wide)
        < 1e-3
        <= chapter.binomial_lower_tail(lo, n, p_wide)
    )
    assert (
        chapter.binomial_upper_tail(hi + 1, n, p_narrow)
        < 1e-3
        <= chapter.binomial_upper_tail(hi, n, p_narrow)
    )


def test_a_grid_where_width_stops_paying_fails(arch):
    tables = {w: _archive_rates(arch, w) for w in SETUP.widths}
    values = chapter.claims("grid", _WidthGrid(tables))
    assert (values["wl_wide_n"], values["wl_narrow_n"]) == (20, 13)
    assert "grid.width_pays" not in _failed(values)
    flat = {**tables, 32: {c: 4 for c in tables[32]}}  # narrowest 24 of 24
    assert "grid.width_pays" in _failed(chapter.claims("grid", _WidthGrid(flat)))


def test_archive_width_gap_at_the_live_cells(arch):
    result = SimpleNamespace(
        setup=SETUP, count=_WidthGrid({w: _archive_rates(arch, w) for w in SETUP.widths}).count
    )
    gap = chapter.width_gap(result, arch)
    assert gap["arch"][512] > gap["arch"][32] and gap["p_arch"] < 1e-3


# --------------------------------------------------------------------------- theory and luck
def test_the_sq_bound_is_far_below_every_archived_cell(arch):
    # the smallest cell: width 8 (257 parameters), 250 steps, 100 examples; C(30, 3)/2 = 2030
    assert chapter.num_parameters(8, 30) == 257
    assert chapter.sq_margin(arch) == pytest.approx(257 * 250 * 100 / 2030)
    assert chapter.sq_margin(arch) > 1000


def test_a_sparse_neuron_gets_a_gradient_only_as_a_ticket():
    # population gradient at initialisation: zero for J <= k - 2; a partial ticket (J = k - 1)
    # is pulled only towards its missing support coordinate
    n, support = 12, [0, 1, 2]
    nets = ParityMLPs(n, [256], sparsity=4, generator=make_generator(3))
    grad, J = population_gradient(nets, support)[0], support_coverage(nets, support)[0]
    seen = nets.w1_init[0] != 0  # (W, n)
    assert grad[J <= 1].abs().max() < 1e-7
    partial = torch.nonzero(J == 2).flatten()
    assert len(partial) > 5
    for j in partial:
        missing = [i for i in support if not seen[j, i]]
        others = [i for i in range(n) if i not in missing]
        assert grad[j, others].abs().max() < 1e-7
    assert (grad[partial][:, :3].abs().sum(1) > 1e-5).float().mean() > 0.5
    full = J == 3
    assert grad[full][:, :3].abs().sum() > 0


def test_restarts_needed():
    assert chapter.restarts_needed(0.0) is None and chapter.restarts_needed(1.0) == 1
    assert chapter.restarts_needed(0.5) == 4  # 1 - 0.5^4 >= 0.9
    assert chapter.restarts_needed(0.75) == 2
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="p must"):
            chapter.restarts_needed(bad)
    with pytest.raises(ValueError, match="target"):
        chapter.restarts_needed(0.5, target=1.0)


def test_luck_rows_on_a_tiny_archive():
    rows = chapter.luck_rows(_tiny_archive(), SETUP, m=300, init="sparse")
    assert [r[0] for r in rows] == [8, 32] and [r[3] for r in rows] == ["1 of 4", "4 of 4"]
    assert rows[0][5] == 9 and rows[1][5] == 1  # 1 - 0.75^9 >= 0.9
    assert rows[1][2] == pytest.approx(float(expected_lucky_neurons(32, 30, 3, 6)))


def test_archive_success_tracks_the_chance_of_a_full_ticket(arch):
    # sparse, m = 300, 20,000 steps: the success rate rises with width and never exceeds
    # the chance that the layer holds a full ticket
    rows = chapter.luck_rows(arch, SETUP)
    rates, tickets = [r[4] for r in rows], [r[2] for r in rows]
    assert all(r <= t for r, t in zip(rates, tickets, strict=True)), (rates, tickets)
    assert all(b >= a for a, b in zip(rates[:-1], rates[1:], strict=True)), rates
    assert rates[-1] >= 0.75 and rates[0] == 0


def test_archive_restarts_buy_what_width_buys(arch):
    # 8 restarts of width 64 against one network of width 512 (12 of 16): within binomial noise
    restart, wide = chapter.restarts_against_width(arch)
    seeds = arch["meta"]["seeds"]
    hits = round(wide * seeds)
    assert chapter.binomial_lower_tail(hits, seeds, restart) > 0.01
    assert chapter.binomial_upper_tail(hits, seeds, restart) > 0.01
    assert abs(restart - wide) < 0.2


def test_binomial_tails_and_parameter_count():
    assert chapter.binomial_upper_tail(0, 16, 0.3) == pytest.approx(1.0)
    assert chapter.binomial_lower_tail(0, 2, 0.5) == pytest.approx(0.25)
    assert chapter.binomial_upper_tail(2, 2, 0.5) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="count"):
        chapter.binomial_upper_tail(17, 16, 0.3)
    with pytest.raises(ValueError, match="p must"):
        chapter.binomial_lower_tail(1, 16, 1.3)
    with pytest.raises(ValueError, match="width"):
        chapter.num_parameters(0, 30)

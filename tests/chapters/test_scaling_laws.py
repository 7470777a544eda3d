"""seqtheory.chapters.scaling_laws: the numbers the page quotes, from made-up runs, and the
archived text sweeps the page plots."""

from types import SimpleNamespace

import numpy as np
import pytest

from seqtheory.chapters import scaling_laws as chapter
from seqtheory.scaling import (
    BetaSweepResult,
    DataSweepResult,
    ModelSweepResult,
    ScalingSetup,
    fit_power_law_floor,
    load_text_sweep,
    load_text_width_sweep,
)

SETUP = ScalingSetup()


def _live(loss):
    """A live character-model run of logical seed 0 on the CPU."""
    return SimpleNamespace(test_loss=loss, seed=0, device="cpu")


def _failed(section, values):
    return {
        c.id for c in chapter.TABLE.section(section) if c.applies("cpu") and not c.holds(values)
    }


def _power(n, exponents, coef=1.0, seeds=3):
    """(len(exponents), len(n), seeds): coef * n^-alpha, seeds a little apart."""
    n = np.asarray(n, float)
    jitter = np.array([1.0, 1.02, 0.98][:seeds])
    return np.array([[coef * (1 + k) * x**-a * jitter for x in n] for k, a in enumerate(exponents)])


def _data(knn=(0.85, 0.72, 0.36), mlp=(0.2, 0.18, 0.15)):
    sizes = np.array(SETUP.sizes)
    return DataSweepResult(
        setup=SETUP,
        seed=0,
        device="cpu",
        seconds=0.0,
        dims=(1, 2, 4),
        sizes={"kNN": sizes, "MLP": sizes},
        errors={"kNN": _power(sizes, knn), "MLP": _power(sizes, mlp)},
    )


def test_dimension_values_and_an_unbiased_estimate_fails():
    est = {2: 1.98, 4: 3.9, 8: 7.2, 16: 12.5, 32: 20.0}
    cube = {2: 1.97, 4: 3.75}
    values = chapter.claims("dimension", est, cube)
    assert values["sphere_est"] == [1.98, 3.9, 7.2, 12.5, 20.0] and values["cube_4"] == 3.75
    assert values["est_32"] == 20.0 and not _failed("dimension", values)
    assert _failed("dimension", chapter.claims("dimension", {**est, 32: 31.0}, cube)) == {
        "dimension.biased_low"
    }
    # a cube read as well as a sphere: the boundary bias the text names is not there
    assert _failed("dimension", chapter.claims("dimension", est, {2: 2.0, 4: 3.98})) == {
        "dimension.cube_low"
    }


def test_data_values_and_exponents_that_do_not_fall_with_d_fail():
    values = chapter.claims("data", _data(), {1: 1.0, 2: 2.0, 4: 3.9})
    assert values["knn_e4"] == pytest.approx(0.36)
    assert values["ceil1"] == pytest.approx(0.8) and values["ceil2"] == pytest.approx(2 / 3)
    e1 = np.array(chapter.TABLE.over_seeds("data", "knn_e1"))
    assert values["knn_e1_over_lo"] == pytest.approx(e1.min() - 0.8)
    assert values["pred4"] == pytest.approx(1 / 3) and isinstance(values["mlp_e1"], str)
    assert values["err_ratio"][0] > 1 and values["tf_exp"] is None
    assert not _failed("data", values)
    flat = chapter.claims("data", _data(knn=(0.5, 0.5, 0.5)), {1: 1.0, 2: 2.0, 4: 3.9})
    assert "data.knn_falls_with_d" in _failed("data", flat)


def test_full_only_claims_are_false_not_raising_without_a_transformer():
    full = [c for c in chapter.TABLE.claims if c.scale == "full"]
    assert {c.id for c in full} == {
        "data.transformer_falls_with_d",
        "model.transformer_bigger_better",
    }
    for sections in chapter.TABLE.recorded()["runs"].values():  # the CPU record: None
        assert not any(c.holds(sections[c.section]) for c in full)
    values = chapter.claims("data", _data(), {1: 1.0, 2: 2.0, 4: 3.9})
    assert values["tf_exp"] is None and not full[0].holds(values)


def test_record_ranges_for_the_text():
    values = chapter.claims("data", _data(), {1: 1.0, 2: 2.0, 4: 3.9})
    assert values["record_seeds"] == chapter.TABLE.seeds_text()
    knn_e1 = chapter.TABLE.over_seeds("data", "knn_e1")
    assert (values["knn_e1_rec_lo"], values["knn_e1_rec_hi"]) == (min(knn_e1), max(knn_e1))
    assert values["mlp_e1_rec_lo"] <= values["mlp_e1_rec_hi"]


def test_beta_values_and_a_control_that_shows_beta_fails():
    pred = np.array([1 / 3, 1 / 2, 0.6, 2 / 3])
    exps = np.repeat((pred + np.array([0.16, 0.1, 0.1, 0.06]))[:, None], 3, 1)
    run = BetaSweepResult(
        setup=SETUP,
        seed=0,
        device="cpu",
        seconds=0.0,
        betas=np.array(SETUP.betas),
        exponents=exps,
        control_betas=np.array([0.5, 2.0]),
        control_exponents=np.full((2, 3), 0.72),
        predicted=pred,
        modes=2112,
        top_dim=4,
        top_cutoff=4,
        top_exponents=np.array([[0.28, 0.27, 0.29], [0.49, 0.45, 0.43]]),
    )
    values = chapter.claims("beta", run)
    assert values["beta_cutoff"] == 32 and values["beta_modes"] == "2,112"
    assert values["top_cutoff"] == 4 and values["top_hi"] == "0.45 [0.43, 0.49]"
    assert values["beta_gap_hi"] == pytest.approx(0.16)
    assert not _failed("beta", values)  # a median 0.49 at beta = 0.5 is still above
    flat_top = np.repeat(np.array([[0.43], [0.54], [0.627], [0.627]]), 3, 1)
    run.exponents = flat_top  # beta = 2 a little below its 0.67
    assert not _failed("beta", chapter.claims("beta", run))
    run.exponents = np.repeat(np.array([[0.43], [0.48], [0.5], [0.5]]), 3, 1)
    assert "beta.ceiling" in _failed("beta", chapter.claims("beta", run))  # 2/(2+d) at 2
    run.exponents = exps
    run.control_exponents = np.array([[0.5] * 3, [0.72] * 3])
    assert "beta.control_flat" in _failed("beta", chapter.claims("beta", run))
    run.control_exponents = np.full((2, 3), 0.72)
    run.top_exponents = np.array([[0.36] * 3, [0.40] * 3])  # beta hidden on the 4-torus too
    assert _failed("beta", chapter.claims("beta", run)) == {"beta.top_shows_beta"}


def test_model_values_and_a_flat_seed_fails():
    N = np.array([100, 300, 1000, 3000])
    run = ModelSweepResult(
        setup=SETUP,
        seed=0,
        device="cpu",
        seconds=0.0,
        dims=(2, 4),
        params={"mlp": N},
        errors={"mlp": _power(N, (0.45, 0.2))},
    )
    values = chapter.claims("model", run)
    assert values["mlp_n2"] == "0.45 [0.45, 0.45]" and not _failed("model", values)
    assert values["mlp_prod2"] == pytest.approx(0.9) and values["mlp_prod4"] == pytest.approx(0.8)
    assert values["mlp_prod_rec_lo"] <= values["mlp_prod_rec_hi"]
    run.errors = {"mlp": _power(N, (0.45, 0.02))}
    assert "model.bigger_better" in _failed("model", chapter.claims("model", run))


def test_text_live_run_compares_with_the_archive(monkeypatch):
    sweep = load_text_sweep()
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    same = chapter.claims("text", sweep, _live(2.53), 4.1, 2.0)
    assert same["text_archived_same"] == pytest.approx(sweep["test_loss"][0, 3])
    assert same["text_archive"].startswith("run on ") and not _failed("text", same)
    off = chapter.claims("text", sweep, _live(2.62), 4.1, 2.0)
    assert _failed("text", off) == {"text.live_reproduces_archive"}
    monkeypatch.setenv("SEQTHEORY_SEED", "7")  # one more seed, on other held-out windows
    new = chapter.claims("text", sweep, _live(2.82), 4.1, 2.0)
    assert new["text_archived_same"] is None and not _failed("text", new)
    broken = chapter.claims("text", sweep, _live(3.3), 4.1, 2.0)
    assert _failed("text", broken) == {"text.live_near_archive"}
    beyond = chapter.claims("text", sweep, _live(max(new["text_archived_loss"]) + 0.35), 4.1, 2.0)
    assert _failed("text", beyond) == {"text.live_near_archive"}
    assert new["text_pred_cos"] == pytest.approx(0.5)
    norms = chapter.claims("text", sweep, _live(2.82), 4.1, 3.3)  # normalising moved it
    assert _failed("text", norms) == {"text.cosine_halves"}


def test_width_live_check_compares_with_the_archive(monkeypatch):
    wsweep = load_text_width_sweep()
    monkeypatch.setenv("SEQTHEORY_SEED", "0")
    values = chapter.claims("width", wsweep, _live(2.62))
    assert values["width_list"] == "8, 16, 32, 64, 128" and not _failed("width", values)
    assert values["width_id_lo"] == pytest.approx(np.median(wsweep["id"][:, 0]))
    broken = chapter.claims("width", wsweep, _live(3.3))
    assert _failed("width", broken) == {"width.live_reproduces_archive", "width.live_near_archive"}


def test_ablation_blocks_that_add_nothing_fail():
    sweep = load_text_sweep()
    values = chapter.claims("ablation", sweep, [1.3, 3.4, 4.1], [2.0, 3.0, 3.5, 3.6, 3.5, 3.6])
    assert values["late_pos_id"] == [3.5, 3.6, 3.5, 3.6] and not _failed("ablation", values)
    flat = chapter.claims("ablation", sweep, [3.0, 3.4, 3.6], [2.0, 3.0, 3.5, 3.6, 3.5, 3.6])
    assert _failed("ablation", flat) == {"ablation.blocks_add_dimensions"}
    assert values["narrow_at_last"] == values["narrow_n"] == 3


def test_ablation_widths_that_converge_or_lose_dimensions_fail():
    sweep = load_text_sweep()
    pos = [2.0, 3.0, 3.5, 3.6, 3.5, 3.6]
    falling = {
        **sweep,
        "width_id": sweep["width_id"][:, ::-1],
        "width_best_step": sweep["width_best_step"] * 0 + 500,
    }
    assert _failed("ablation", chapter.claims("ablation", falling, [1.3, 3.4, 4.1], pos)) == {
        "ablation.width_rises_little",
        "ablation.narrow_still_improving",
    }


def test_floor_helpers_find_a_known_floor():
    n = np.array([1e3, 2e3, 4e3, 8e3, 16e3, 32e3])
    loss = 1.5 + 20 * n**-0.4
    exps, rss = chapter.floor_scan(n, loss, [0.0, 0.75, 1.5])
    assert exps[2] == pytest.approx(0.4) and rss[2] == pytest.approx(0, abs=1e-12)
    assert exps[0] < exps[1] < exps[2] and rss[0] > rss[2]
    seeds = [loss, loss * 1.01, loss * 0.99]
    floors = chapter.leave_one_seed_out_floors(n, seeds, [np.ones(6, bool)] * 3)
    assert len(floors) == 3 and all(1.3 < f < 1.6 for f in floors)
    pooled_n, pooled_l = chapter.pooled_points(n, seeds, [n > 2e3] * 3)
    assert pooled_n.shape == pooled_l.shape == (12,)
    drop = chapter.drop_one_exponents([n, n], [loss, loss])
    assert drop.shape == (2, 6) and np.allclose(drop, 0.4, atol=0.02)


# --------------------------------------------------------------------------- archives
@pytest.fixture(scope="module")
def text():
    sweep = load_text_sweep()
    return sweep, chapter.text_data_fits(sweep)


@pytest.fixture(scope="module")
def width():
    wsweep = load_text_width_sweep()
    return wsweep, chapter.width_fits(wsweep)


def test_archive_text_sweep_every_seed_can_be_fitted_and_learns(text):
    sweep, fits = text
    assert fits["limited"].sum(1).min() >= 3, sweep["best_step"]
    for loss, m in zip(sweep["test_loss"], fits["limited"], strict=True):
        assert np.all(np.diff(loss[m]) < 0), loss  # more data helps, every time
    assert (fits["text_alpha"] > 0.05).all()


def test_archive_text_sweep_is_low_dimensional_and_below_the_band(text):
    _, fits = text
    assert fits["seed_id"].max() < 8
    assert (fits["alpha_pred"] > fits["text_alpha"]).all()
    assert (fits["alpha_band"] > fits["text_alpha"]).all()


def test_archive_text_sweep_prefers_a_floor_just_above_the_band(text):
    sweep, fits = text
    n_pool, l_pool = chapter.pooled_points(sweep["sizes"], sweep["test_loss"], fits["limited"])
    fit = fit_power_law_floor(n_pool, l_pool)
    _, rss = chapter.floor_scan(n_pool, l_pool, np.linspace(0, 0.97 * l_pool.min(), 40))
    assert 1.0 < fit.floor < l_pool.min()
    assert rss.min() < 0.8 * rss[0]
    assert fit.exponent > 2 * fits["text_alpha"].max()
    assert 0 < fit.exponent - fits["alpha_pred"].max() < 0.1


def test_archive_width_sweep_bigger_is_better_and_floor_exponent_in_band(width):
    wsweep, fits = width
    wloss = wsweep["test_loss"]
    assert (np.diff(wloss, axis=1) < 0).all()
    assert (fits["model_alpha"] < fits["model_band"][0]).all()
    band = fits["model_band"]
    assert ((fits["floor_alpha"] > band[0]) & (fits["floor_alpha"] < band[1])).all()
    assert all(1.0 < f.floor < lo.min() for f, lo in zip(fits["seed_floor"], wloss, strict=True))


def test_archive_width_sweep_leave_one_width_out_spread(width):
    wsweep, fits = width
    drop = chapter.drop_one_exponents(wsweep["params"], wsweep["test_loss"])
    assert 0.1 < np.ptp(drop) < 0.4
    assert drop.min() < fits["floor_alpha"].min() - 0.05
    assert drop.max() > fits["floor_alpha"].max() + 0.05


def test_archive_ablations_blocks_positions_and_widths(text):
    sweep, _ = text
    assert (sweep["layer_id"][:, -1] > sweep["layer_id"][:, 0] + 1).all()
    for row in sweep["position_id"]:
        late = np.asarray(row[2:])
        assert late.max() - late.min() < 0.25 * late.mean(), row
    wid = sweep["width_id"]
    assert wid.max() < 8 and (np.ptp(wid, 1) < 1.0).all() and (np.diff(wid, axis=1) > 0).all()


def test_archive_the_width_16_models_of_the_ablation_are_still_improving():
    from seqtheory.book.archive import load_data

    data = load_data("scaling_text.json")
    steps = data["meta"]["train_char_model"]["steps"]
    n_ab = data["meta"]["ablation_n"]
    best = {r["d_model"]: [] for r in data["runs"] if r["n"] == n_ab}
    for r in data["runs"]:
        if r["n"] == n_ab:
            best[r["d_model"]].append(r["best_step"])
    assert best[16] == [steps] * 3  # best checkpoint at the last step
    assert max(best[64]) < steps  # the widest stopped improving earlier


def test_archive_model_size_dimension_grows_from_about_3_to_about_4(width):
    wsweep, _ = width
    ids = wsweep["id"]
    assert (ids[:, -1] > ids[:, 0] + 0.5).all()
    assert 2.5 < np.median(ids[:, 0]) < 3.2 and 3.6 < np.median(ids[:, -1]) < 4.2

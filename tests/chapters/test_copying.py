"""seqtheory.chapters.copying: the numbers the page quotes, from made-up runs and the archive."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from seqtheory.book.archive import load_data
from seqtheory.chapters import copying as chapter
from seqtheory.copying import MODEL_NAMES, SETUP, CopySetup, max_copy_length


def _claims(section):
    return chapter.TABLE.section(section)


def _failed(values, section):
    return {c.id for c in _claims(section) if not c.holds(values)}


# ----------------------------------------------------------------- helpers
def test_longest_copyable_reads_the_first_length_below_threshold():
    assert chapter.longest_copyable([0.9, 0.6, 0.4, 0.8]) == 2
    assert chapter.longest_copyable([0.9, 0.6, 0.5]) == 3
    assert chapter.longest_copyable([0.2, 0.9]) == 0
    assert chapter.longest_copyable([0.9, 0.8], threshold=0.85) == 1


def test_longest_by_state_sorts_sizes_and_keeps_seeds():
    def row(model, n, accs):
        return {"model": model, "state_floats": n, "acc": accs}

    state = [
        row("LSTM", 16, [[0.9, 0.9, 0.1], [0.9, 0.1, 0.1]]),
        row("LSTM", 8, [[0.1, 0.0, 0.0], [0.6, 0.0, 0.0]]),
        row("gated recurrence", 16, [[0.9, 0.9, 0.9], [0.9, 0.9, 0.2]]),
        row("gated recurrence", 8, [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ]
    sizes, longest = chapter.longest_by_state(state)
    assert sizes == [8, 16]
    assert longest["LSTM"].tolist() == [[0, 1], [2, 1]]
    assert longest["gated recurrence"].tolist() == [[0, 0], [3, 2]]


def test_diagonal_scores_find_a_perfect_lookup_head():
    length, T = 3, 2 * 3 + 2  # <BOS> abc <SEP> abc
    patterns = torch.full((2, T, T), 1.0 / T)
    for q in range(length + 1, T):
        patterns[1, q] = 0.0
        patterns[1, q, q - length] = 1.0
    scores = chapter.diagonal_scores(patterns, length)
    assert scores.tolist() == pytest.approx([1.0 / T, 1.0])
    assert chapter.copy_prompt("abc").shape == (1, T)


def test_diagonal_score_takes_the_best_second_layer_head():
    class Model:
        def attention_patterns(self, idx):
            T = idx.shape[1]
            eye = torch.eye(T)
            shifted = torch.zeros(T, T)
            for q in range(4, T):
                shifted[q, q - 3] = 1.0
            return [None, torch.stack([eye, shifted])[None]]

    assert chapter.diagonal_score(Model(), "abc") == pytest.approx(1.0)


# ----------------------------------------------------------------- live sections
def _runs(
    tf=(1.0, 1.0, 0.99),
    ha=(0.95, 0.94, 0.97),
    gated=(0.15, 0.1, 0.13),
    tf_test=(0.0, 0.0, 0.0),
    ha_test=(0.78, 0.74, 0.8),
):
    def run(final, test):
        return SimpleNamespace(final=lambda: np.array(final), acc_test_len=np.array(test))

    return {
        "transformer": run(tf, tf_test),
        "hard-ALiBi": run(ha, ha_test),
        "gated recurrence": run(gated, (0.0, 0.0, 0.0)),
    }


def test_training_values_and_claims():
    values = chapter.claims("training", _runs())
    assert values["tf_acc"] == pytest.approx(1.0)
    assert values["tf_worst"] == pytest.approx(0.99) and values["ha_worst"] == pytest.approx(0.94)
    assert values["fixed_best"] == pytest.approx(0.15)
    assert values["gated_acc"] == pytest.approx(0.13)
    assert values["ha_test"] == pytest.approx(0.78)
    assert values["ha_test_worst"] == pytest.approx(0.74)
    assert isinstance(values["tf_test_best"], float)
    assert not _failed(values, "training")


def test_a_gated_recurrence_as_good_as_a_transformer_fails_its_claim():
    values = chapter.claims("training", _runs(gated=(0.9, 0.95, 0.85)))
    assert _failed(values, "training") == {"training.gated_far_behind"}


def test_absolute_positions_that_extrapolate_fail_their_claim():
    values = chapter.claims("training", _runs(tf_test=(0.0, 0.3, 0.0)))
    assert _failed(values, "training") == {"training.absolute_none_twice_length"}


class _HeadModel:
    """A stand-in hard-ALiBi model whose second layer attends along the copy diagonal
    with weight ``w``."""

    def __init__(self, w):
        self.w = w

    def attention_patterns(self, idx):
        T, L = idx.shape[1], (idx.shape[1] - 2) // 2
        pat = torch.full((1, 4, T, T), (1 - self.w) / T)
        for q in range(L + 1, T):
            pat[0, :, q, q - L] += self.w
        return [None, pat]


def test_lengths_values_and_claims():
    setup = CopySetup()
    lengths = list(range(4, 3 * setup.test_len // 2 + 1, 3))  # 4, 7, ..., 28
    grid = np.array(lengths)
    tf = np.where(grid <= setup.max_len, 0.99, 0.0)[None].repeat(3, axis=0)
    ha = np.clip(1.0 - 0.02 * grid, 0, 1)[None].repeat(3, axis=0)
    gated = np.clip(1.2 - 0.1 * grid, 0, 1)[None].repeat(3, axis=0)
    by_length = {"transformer": tf, "hard-ALiBi": ha, "gated recurrence": gated}
    values = chapter.claims(
        "lengths", by_length, lengths, setup, [_HeadModel(0.9), _HeadModel(0.8)], "abcdefg"
    )
    assert (
        values["len_first"],
        values["len_in"],
        values["len_beyond"],
        values["len_mid"],
        values["len_last"],
    ) == (4, 7, 13, 19, 28)
    assert isinstance(values["len_mid"], int)
    assert values["ha_len_mid"] == pytest.approx(1 - 0.02 * 19)
    assert values["gated_len_in"] == pytest.approx(0.5)
    assert values["gated_len_10"] == pytest.approx(0.2)
    assert values["tf_beyond_best"] == 0.0
    assert len(values["ha_median_upto"]) == 6
    assert min(values["diag"]) > 0.5
    assert not _failed(values, "lengths")
    # without a lookup head, and with a cliff for hard-ALiBi, the claims fail
    cliff = {**by_length, "hard-ALiBi": tf}
    values = chapter.claims("lengths", cliff, lengths, setup, [_HeadModel(0.1)], "abcdefg")
    assert {
        "lengths.hard_alibi_no_cliff",
        "lengths.hard_alibi_gradual",
        "lengths.lookup_head",
    } <= _failed(values, "lengths")


def _rep(
    planted=((0.95, 0.94, 0.4, 0.0), (0.96, 0.95, 0.32, 0.002), (0.95, 0.97, 0.47, 0.0)),
    without=((0.98, 0.84, 0.6),) * 3,
):
    return {
        "lengths": (10, 20, 30),
        "planted": np.array(planted),
        "without": np.array(without),
        "with": np.array(((0.5, 0.4, 0.25),) * 3),
        "frac_with": np.array([0.05, 0.24, 0.43]),
    }


def test_repeats_values_and_claims():
    values = chapter.claims("repeats", _rep(), CopySetup())
    assert values["rep_random"] == pytest.approx(0.95)
    assert values["rep_bigram"] == pytest.approx(0.4)
    assert values["rep_trigram_hi"] == pytest.approx(0.002)
    assert values["uniq_first"] == pytest.approx(0.98) and values["uniq_last"] == 0.6
    assert values["rep_lengths"] == "10 and 20 and 30" and values["rep_last_len"] == 30
    assert 0.005 < values["frac_trigram_last"] < 0.04  # C(28, 2) / 26^3 = 0.022
    assert not _failed(values, "repeats")
    assert chapter.repeat_lengths(CopySetup()) == (10, 20, 30)


def test_a_lookup_on_three_letters_or_one_fails_the_repeat_claims():
    three = [(0.95, 0.95, 0.9, 0.0)] * 3  # a repeated bigram is harmless
    assert _failed(chapter.claims("repeats", _rep(planted=three), CopySetup()), "repeats") == {
        "repeats.bigram_hurts"
    }
    one = [(0.95, 0.45, 0.0, 0.0)] * 3  # keyed on the last letter only
    assert _failed(chapter.claims("repeats", _rep(planted=one), CopySetup()), "repeats") == {
        "repeats.letter_harmless",
        "repeats.bigram_hurts",
    }
    by_position = [(0.95, 0.95, 0.9, 0.9)] * 3
    assert "repeats.trigram_breaks" in _failed(
        chapter.claims("repeats", _rep(planted=by_position), CopySetup()), "repeats"
    )


def test_length_failure_only_on_repeats_fails_its_claim():
    flat = [(0.98, 0.97, 0.96)] * 3  # errors only where bigrams repeat
    assert _failed(chapter.claims("repeats", _rep(without=flat), CopySetup()), "repeats") == {
        "repeats.unique_still_falls"
    }


def test_setup_values_and_one_state_size():
    def m(n=None):
        return SimpleNamespace() if n is None else SimpleNamespace(state_floats=n)

    setup = CopySetup()
    values = chapter.claims("setup", setup, {"a": m(), "b": m(256), "c": m(256)})
    assert values["state_floats"] == 256 and values["n_seeds"] == 3
    assert values["string_bits"] == pytest.approx(10 * np.log2(26))
    assert not _failed(values, "setup")
    values = chapter.claims("setup", setup, {"b": m(256), "c": m(128)})
    assert _failed(values, "setup") == {"setup.one_state_size"}


# ----------------------------------------------------------------- the archived sweeps
@pytest.fixture(scope="module")
def sweeps():
    return load_data("copying_sweeps.json")


def _tuned_acc(sweeps, name):
    return np.array(
        [
            r["acc"]
            for r in sweeps["lr"]
            if r["model"] == name and r["lr"] == sweeps["tuned_lr"][name]
        ][0]
    )


def _acc(sweeps, name, lr):
    return np.array([r["acc"] for r in sweeps["lr"] if r["model"] == name and r["lr"] == lr][0])


def test_sweep_section_holds_for_the_library_setups(sweeps):
    for setup in (SETUP.cpu, SETUP.full):
        values = chapter.claims("sweep", sweeps, setup)
        assert not _failed(values, "sweep")
    other = CopySetup(lrs=(("transformer", 3e-3),))
    assert _failed(chapter.claims("sweep", sweeps, other), "sweep") == {"sweep.tuned_rates"}


def test_archive_linear_recurrence_copies_nothing_at_its_tuned_rate(sweeps):
    assert _tuned_acc(sweeps, "linear recurrence").max() == 0


def test_archive_lstm_copies_a_few_percent_at_its_tuned_rate(sweeps):
    assert 0.01 <= np.median(_tuned_acc(sweeps, "LSTM")) <= 0.10


def test_archive_no_rate_brings_a_fixed_state_model_near_the_transformer(sweeps):
    values = chapter.claims("sweep", sweeps, SETUP.cpu)
    best_tf = max(np.median(r["acc"]) for r in sweeps["lr"] if r["model"] == "transformer")
    assert best_tf >= 0.95 and values["fixed_sweep_best"] <= best_tf / 2
    assert values["lin_sweep_best"] <= 0.02


def test_archive_tuning_matters_for_the_transformer(sweeps):
    tf3, tf1 = _acc(sweeps, "transformer", 3e-3), _acc(sweeps, "transformer", 1e-3)
    assert tf3.min() < tf1.min() - 0.2


@pytest.mark.parametrize("name", ["LSTM", "gated recurrence"])
def test_archive_tuning_helps_the_recurrences_a_little(sweeps, name):
    gain = np.median(_tuned_acc(sweeps, name)) - np.median(_acc(sweeps, name, 3e-3))
    assert 0.02 <= gain <= 0.2


@pytest.mark.parametrize("name", ["LSTM", "linear recurrence"])
def test_archive_gated_recurrence_is_the_best_fixed_state_model(sweeps, name):
    assert _tuned_acc(sweeps, "gated recurrence").min() > _tuned_acc(sweeps, name).max()


def test_archive_tuned_rates_cover_every_model(sweeps):
    assert set(sweeps["tuned_lr"]) == set(MODEL_NAMES)


def test_archive_state_sweep_stays_below_the_one_bit_bound_and_grows(sweeps):
    sizes, longest = chapter.longest_by_state(sweeps["state"])
    bound = np.array([max_copy_length(x + 1) for x in sizes])[:, None]
    for L in longest.values():
        assert (L < bound).all()
        med = np.median(L, axis=1)
        assert med[-1] - med[0] >= 3


def test_archive_largest_gated_state_falls_with_length(sweeps):
    big = max(
        (r for r in sweeps["state"] if r["model"] == "gated recurrence"),
        key=lambda r: r["state_floats"],
    )
    assert np.median(big["acc"], axis=0)[0] >= 0.9 and np.max(big["acc"], axis=0)[-1] <= 0.05


def test_archive_the_two_smallest_states_copy_not_even_one_letter(sweeps):
    values = chapter.claims("state", sweeps)
    sizes, _ = chapter.longest_by_state(sweeps["state"])
    assert values["zero_sizes"] == "8 and 16" and sizes[:2] == [8, 16]


def test_state_claims_hold_on_the_archive_and_fail_when_the_state_stops_helping(sweeps):
    import copy

    assert not _failed(chapter.claims("state", sweeps), "state")
    flat = copy.deepcopy(sweeps)
    for r in flat["state"]:
        r["acc"] = [[0.0] * len(a) for a in r["acc"]]  # no state copies a letter
    assert {"state.longest_grows"} <= _failed(chapter.claims("state", flat), "state")
    assert "sweep.gated_best_fixed" not in _failed(
        chapter.claims("sweep", sweeps, SETUP.cpu), "sweep"
    )


def _lookup_archive(
    gated_prefix=(0.5, 0.45, 0.55), gated_prefix_40=(0.2, 0.15, 0.25), ha_prefix=(0.1, 0.12, 0.1)
):
    def run(model, key, a10, a40):
        return {
            "model": model,
            "key": key,
            "seeds": [0, 1, 2],
            "acc": {"10": list(a10), "20": list(a10), "40": list(a40)},
        }

    return {
        "meta": {
            "steps": 3000,
            "date": "2026-11-26",
            "device": "CPU",
            "lengths": [10, 20, 40],
            "train_lengths": [5, 10],
            "keys": ["suffix", "prefix"],
            "models": ["gated recurrence", "hard-ALiBi"],
        },
        "runs": [
            run("gated recurrence", "suffix", (0.19, 0.21, 0.19), (0.07, 0.08, 0.04)),
            run("hard-ALiBi", "suffix", (0.98, 0.99, 0.98), (0.89, 0.94, 0.93)),
            run("gated recurrence", "prefix", gated_prefix, gated_prefix_40),
            run("hard-ALiBi", "prefix", ha_prefix, (0.05, 0.05, 0.05)),
        ],
    }


def test_lookup_values_claims_and_table():
    values = chapter.claims("lookup", _lookup_archive())
    assert values["gated_prefix_10_max"] == pytest.approx(0.55) and values["lk_train"] == "5–10"
    assert values["gated_prefix_learned"] == 3 and values["gated_prefix_40_max"] == 0.25
    assert not _failed(values, "lookup")
    assert "after the string" in str(chapter.lookup_table(_lookup_archive()).data)
    # a recurrence no better with the query first, and a hard-ALiBi that solves it, fail
    bad = chapter.claims(
        "lookup",
        _lookup_archive(
            gated_prefix=(0.2, 0.22, 0.2),
            gated_prefix_40=(0.2, 0.2, 0.2),
            ha_prefix=(0.9, 0.9, 0.9),
        ),
    )
    assert _failed(bad, "lookup") == {
        "lookup.recurrence_prefix_one_seed",
        "lookup.hard_alibi_no_prefix",
        "lookup.recurrence_prefix_falls",
    }
    archived = chapter.claims("lookup", load_data("copying_lookup.json"))
    assert not _failed(archived, "lookup") and archived["gated_prefix_learned"] == 1

"""seqtheory.chapters.chain_of_thought: the numbers the page quotes, from made-up runs."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from seqtheory.chain_of_thought import (
    FORMATS,
    SUPPORT_FORMATS,
    CoTSetup,
    MultSetup,
    all_bit_strings,
    parity_chain,
)
from seqtheory.chapters import chain_of_thought as chapter


def _holds(section, values):
    return {c.id: c.holds(values) for c in chapter.TABLE.section(section)}


def _parity_result(
    running_linear=0.5, none_linear=0.5, shared_binary=0.5, support_binary=1.0, support_none=0.5
):
    """Accuracies (3 models per row) shaped like the chapter's run."""
    test, train = {}, {}
    for fmt in FORMATS:
        for kind in ("linear", "MLP"):
            acc = 0.5 if fmt == "none" else 1.0
            if (fmt, kind) == ("none", "linear"):
                acc = none_linear
            if (fmt, kind) == ("running", "linear"):
                acc = running_linear
            if (fmt, kind) in (("binary", "linear"), ("unary", "linear")):
                acc = 0.96
            test[(fmt, kind)] = np.array([acc, acc - 0.01, acc + 0.01], dtype=np.float32)
            fit = 0.95 if kind == "MLP" else 0.56
            train[(fmt, kind)] = np.full(
                3, fit if fmt in ("none", "running") else 1.0, dtype=np.float32
            )
    shared = {
        ("threshold", "linear"): np.array([0.5, 0.49, 0.5]),
        ("threshold", "MLP"): np.array([0.98, 0.99, 0.97]),
    }
    shared.update({(f, "linear"): np.array([0.5, 0.5, 0.49]) for f in FORMATS if f != "threshold"})
    shared[("binary", "linear")] = np.array([0.5, shared_binary, 0.5])
    support = {
        "none": np.full(3, support_none),
        "binary": np.array([support_binary, 1.0, 1.0]),
        "threshold": np.ones(3),
    }
    return SimpleNamespace(
        test_acc=test,
        train_acc=train,
        models=dict.fromkeys(test),
        binary_long_test=np.array([0.995, 0.996, 0.997]),
        shared_test=shared,
        setup=CoTSetup(),
        support=np.array([0, 2, 3, 7, 9, 10]),
        support_test=support,
    )


def test_parity_values_are_the_rows_extremes():
    values = chapter.claims("parity", _parity_result())
    assert values["none_test_lo"] == pytest.approx(0.49)
    assert values["none_test_hi"] == pytest.approx(0.51)
    assert values["linear_train_best"] == pytest.approx(0.56)
    assert values["mlp_chain_worst"] == pytest.approx(0.99)
    assert isinstance(values["none_mlp_train"], float)
    assert len(values["test_acc"]) == 2 * len(FORMATS)
    assert all(_holds("parity", values).values())


def test_a_linear_model_that_learns_xor_fails_its_claim():
    values = chapter.claims("parity", _parity_result(running_linear=0.9))
    failed = {k for k, ok in _holds("parity", values).items() if not ok}
    assert failed == {"parity.running_linear_chance"}


def test_a_linear_model_that_predicts_parity_without_a_chain_fails_its_claim():
    values = chapter.claims("parity", _parity_result(none_linear=0.7))
    failed = {k for k, ok in _holds("parity", values).items() if not ok}
    assert failed == {"parity.no_chain_chance", "parity.no_chain_linear_chance"}


def test_the_no_chain_mlp_claims_are_about_the_cpu_budget_only():
    # at FULL=1 (16 bits, 4,096 strings, 4,000 steps) a no-chain MLP can beat chance
    scales = {c.id: c.scale for c in chapter.TABLE.section("parity")}
    assert scales["parity.no_chain_chance"] == scales["parity.mlp_memorises"] == "cpu"
    assert scales["parity.no_chain_linear_chance"] == "any"


def test_a_tied_linear_model_that_learns_some_chain_fails_its_claim():
    values = chapter.claims("followups", _parity_result())
    assert values["shared_chains"] == len(FORMATS)
    assert values["shared_mlp_worst"] == pytest.approx(0.97)
    assert set(values["shared_test"]) >= {"threshold MLP", "binary linear"}
    values = chapter.claims("followups", _parity_result(shared_binary=0.9))
    assert values["shared_linear_hi"] == pytest.approx(0.9)
    failed = {k for k, ok in _holds("followups", values).items() if not ok}
    assert failed == {"followups.shared_linear_chance"}


def test_support_values_and_claims():
    values = chapter.claims("support", _parity_result())
    assert values["support_bits"] == "1, 3, 4, 8, 10, 11"  # 1-based
    assert values["support_size"] == 6 and values["support_n"] == 12
    assert values["support_len_binary"] == 3 and values["support_len_threshold"] == 12
    assert set(values["support_test"]) == set(SUPPORT_FORMATS)
    assert all(_holds("support", values).values())
    # a short chain that does not help once the subset must be found
    values = chapter.claims("support", _parity_result(support_binary=0.6))
    failed = {k for k, ok in _holds("support", values).items() if not ok}
    assert failed == {"support.binary_learns"}
    values = chapter.claims("support", _parity_result(support_none=0.7))
    failed = {k for k, ok in _holds("support", values).items() if not ok}
    assert failed == {"support.none_chance"}


def test_followups_need_longer_training_to_help():
    result = _parity_result()
    values = chapter.claims("followups", result)
    assert all(_holds("followups", values).values())
    result.binary_long_test = np.array([0.95, 0.99, 0.99])  # worse than at 800 steps
    values = chapter.claims("followups", result)
    assert not _holds("followups", values)["followups.longer_training"]


def _step_acc(chain, answer):
    return np.array([[*chain, *answer]] * 3, dtype=np.float32)


def _mult_result(products_answer=(0.97, 0.72, 0.80, 1.0)):
    setup = MultSetup()
    return SimpleNamespace(
        setup=setup,
        a_train=torch.zeros(6075),
        train_acc={"none": np.array([0.18, 0.2, 0.22])},
        test_acc={
            "none": np.array([0.08, 0.09, 0.1]),
            "products": np.array([0.56, 0.58, 0.59]),
            "sums": np.array([0.91, 0.92, 0.92]),
        },
        step_acc={
            "none": _step_acc([], [0.93, 0.45, 0.2, 1.0]),
            "products": _step_acc([1.0] * 8, products_answer),
            "sums": _step_acc([0.95] * 15, [0.93, 0.95, 0.97, 1.0]),
        },
    )


def test_multiplication_values():
    values = chapter.claims("multiplication", _mult_result())
    assert values["mult_pairs"] == "8,100"
    assert values["mult_train_pct"] == "75%"
    assert values["mult_train_pairs"] == "6,075"
    assert values["mult_len_sums"] == 19 and values["mult_answer_digits"] == 4
    assert values["mult_products_range"] == "0.56–0.59"
    assert values["mult_answer_step_worst"] == pytest.approx(0.72)
    assert values["mult_answer_ends_worst"] == pytest.approx(0.97)
    assert values["none_middle_best"] == pytest.approx(0.45)
    assert all(_holds("multiplication", values).values())


def test_errors_in_the_first_answer_digit_fail_the_claim():
    values = chapter.claims("multiplication", _mult_result((0.5, 0.72, 0.8, 1.0)))
    failed = {k for k, ok in _holds("multiplication", values).items() if not ok}
    assert {"multiplication.middle_digits_errors", "multiplication.answer_ends"} <= failed


def test_answer_digit_accuracy_and_range():
    acc = np.array([[1.0, 0.5, 0.7], [1.0, 0.7, 0.9]])
    assert chapter.answer_digit_accuracy(acc, 1) == pytest.approx([0.6, 0.8])
    with pytest.raises(ValueError):
        chapter.answer_digit_accuracy(acc, 2)
    assert chapter.accuracy_range([0.914, 0.5, 0.7]) == "0.50–0.91"


def test_masked_weights_counts_the_causal_pairs():
    assert chapter.masked_weights(3, 2) == (4 * 6, 36)
    assert chapter.masked_weights(307, 128) == (774_602_752, 1_544_175_616)


def test_paper_numbers():
    values = chapter.claims("paper")
    assert values["paper_steps"] == "48,829" and values["paper_answer_digits"] == 8


@pytest.mark.parametrize("n", [2, 5, 12])
def test_binary_count_by_thresholds_is_the_library_chain(n):
    x = all_bit_strings(n)
    assert torch.equal(chapter.binary_count_by_thresholds(x), parity_chain(x, "binary")[:, n:])


def test_binary_count_section():
    values = chapter.claims("binary_count", 5)
    assert values["binary_check"] == "True and True (all 32 strings)"
    assert chapter.TABLE.section("binary_count")[0].holds(values)
    assert not chapter.TABLE.section("binary_count")[0].holds({**values, "thresholds_match": False})

"""seqtheory.core.validate: argument checks name the argument and what it allows."""

import pytest

from seqtheory.core.validate import check_choice, check_float, check_int


def test_checkers():
    assert check_int("n", 3, minimum=1) == 3
    with pytest.raises(TypeError, match="n must be an int"):
        check_int("n", True)
    with pytest.raises(ValueError, match="p must be <= 1"):
        check_float("p", 1.5, low=0, high=1)
    with pytest.raises(ValueError, match="finite"):
        check_float("p", float("nan"))
    with pytest.raises(ValueError, match="'a', 'b'"):
        check_choice("mode", "c", ("a", "b"))


def test_check_float_closed_upper_bound_accepts_the_bound():
    # U1 (check_float: `value > high` -> `value >= high`): a closed bound is allowed.
    assert check_float("p", 1.0, low=0.0, high=1.0) == 1.0
    assert check_float("p", 0.0, low=0.0, high=1.0) == 0.0
    with pytest.raises(ValueError, match="must be < 1.0"):
        check_float("p", 1.0, high=1.0, high_open=True)
    from seqtheory.sources.markov import binary_entropy

    assert binary_entropy(1.0) == 0.0

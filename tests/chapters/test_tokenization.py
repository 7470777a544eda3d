"""seqtheory.chapters.tokenization: its analysis helpers and sections on made-up results,
and the contents of the archived race."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from seqtheory.book.archive import load_data
from seqtheory.chapters import tokenization as chapter
from seqtheory.core.training import History
from seqtheory.sources.markov import switching_entropy_rate, switching_unigram_entropy
from seqtheory.tokenization import BPE, LZW, TRAP_CONDITIONS, block_unigram_entropy


def _failed(values):
    return {c.id for c in chapter.TABLE.section(values.section) if not c.holds(values)}


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize(
    "value, expected",
    [
        (switching_entropy_rate(0.8, 0.8), 0.7219),
        (switching_unigram_entropy(0.8, 0.8), 1.0),
        (switching_entropy_rate(0.2, 0.3), 0.7857),
        (switching_unigram_entropy(0.2, 0.3), 0.9710),
        (switching_entropy_rate(0.8, 0.8, base=math.e), 0.5004),
    ],
)
def test_closed_forms_match_the_values_computed_by_hand(value, expected):
    # the table at the top of the chapter and exercise 1 (h(0.8) = 0.7219 bits)
    assert abs(value - expected) < 1e-4


# ------------------------------------------------------------------ experiment 1
def test_escape_steps_and_plateau_distance():
    steps = np.array([0, 100, 200, 300, 400, 500, 600])
    loss = np.array(
        [
            [1.0, 1.0],
            [0.7, 0.7],
            [0.67, 0.671],
            [0.666, 0.666],
            [0.665, 0.666],
            [0.66, 0.666],
            [0.6, 0.666],
        ]
    )
    assert chapter.escape_steps(steps, loss, 0.666) == [600, None]
    dev = chapter.plateau_distance(steps, loss, 0.666)
    assert dev == pytest.approx([0.006, 0.005])


def _trap(escapes=True, plateau=True, pq_below=-0.005):
    p, q = TRAP_CONDITIONS["p+q>1, tied"][:2]
    U = switching_unigram_entropy(p, q, base=math.e)
    H = switching_entropy_rate(p, q, base=math.e)
    steps = np.arange(0, 2501, 50)
    on = np.where(steps < 150, U + 0.2, U + (0.001 if plateau else 0.05))
    tied = np.stack([np.where(steps >= 1500, H, on), on, on], 1)
    if not escapes:
        tied = np.stack([on, on, on], 1)
    Hc = switching_entropy_rate(0.2, 0.3, base=math.e)
    losses = {
        "p+q>1, tied": (steps, tied),
        "p+q<1, tied": (steps[:7], np.full((7, 3), Hc + pq_below)),
        "p+q>1, untied": (steps[:7], np.full((7, 3), H)),
    }
    return SimpleNamespace(
        setup=SimpleNamespace(trap_steps=2500, control_steps=300), losses=losses.__getitem__
    )


def test_trap_values_and_claims():
    values = chapter.claims("trap", _trap())
    assert values["escape_steps"] == [1500, None, None]
    assert values["trap_n_escaped"] == 1 and values["trap_n_seeds"] == 3
    assert values["trap_dev"] == "0.001 [0.001, 0.001]"
    assert not _failed(values)


def test_a_trap_that_never_ends_or_a_control_that_plateaus_fails():
    assert _failed(chapter.claims("trap", _trap(escapes=False))) == {"trap.escapes"}
    assert _failed(chapter.claims("trap", _trap(plateau=False))) == {"trap.plateau"}
    assert _failed(chapter.claims("trap", _trap(pq_below=0.04))) == {"trap.controls"}


# ------------------------------------------------------------------ experiment 2
def _runs(curves, seconds=1.0):
    return [
        History(
            steps=list(range(1, 101)),
            seconds=seconds,
            evals=[{"step": s, "bits/char": b} for s, b in zip(range(0, 101, 25), c, strict=True)],
        )
        for c in curves
    ]


def _archive():
    def run(bits):
        steps = list(range(0, 201, 25))
        return {"steps": steps, "bits_per_char": bits, "chars_seen": [s * 1000 for s in steps]}

    chars = [1.0, 0.99, 0.99, 0.99, 0.988, 0.97, 0.9, 0.8, 0.72]
    return {
        "meta": {"steps": 200, "date": "2000-01-01", "device": "a CPU"},
        "runs": {
            "characters": [run(chars), run([*chars[:5], 0.98, 0.96, 0.94, 0.72])],
            "tokens": [run([1.0, 0.9, 0.8, 0.78, 0.76, 0.75, 0.74, 0.74, 0.73])] * 2,
        },
    }


def _race(token_end=0.75):
    chars = [1.0, 0.99, 0.99, 0.99, 0.988]
    tokens = [1.0, 0.9, 0.8, 0.78, token_end]
    return SimpleNamespace(
        setup=SimpleNamespace(lm_steps=100, batch_size=2),
        seeds=(0, 1),
        unigram_bits=0.82,
        histories={
            "characters": _runs([chars, chars], 3.0),
            "tokens": _runs([tokens, tokens], 1.0),
        },
        chars_seen={"tokens": [np.cumsum([0] + [1320] * 100)]},
    )


def test_at_step_and_race_stats():
    result = _race()
    assert chapter.at_step(result.histories["tokens"], 75) == pytest.approx([0.78, 0.78])
    stats = chapter.race_stats(result)
    assert stats["characters"]["ms"] == pytest.approx([30.0, 30.0])
    assert stats["tokens"]["end"] == pytest.approx([0.75, 0.75])


def test_archive_summary():
    summary = chapter.archive_summary(_archive())
    assert summary["escape"] == [150, 175]
    assert summary["seen_at_escape"] == [150_000, 175_000]
    assert summary["tok_at_same"] == pytest.approx([0.74, 0.74])
    assert chapter.escape_step({"steps": [0, 25], "bits_per_char": [1.0, 0.99]}) is None


def test_race_values_and_claims():
    values = chapter.claims("race", _race(), _archive())
    assert values["race_chars_per_row"] == 660
    assert values["arch_escape"] == "162 [150, 175]"
    assert values["arch_seen"] == "0.2"
    assert values["live_chars"] == pytest.approx([0.988, 0.988])
    assert not _failed(values)


def test_a_token_model_that_does_not_pull_ahead_fails():
    failed = _failed(chapter.claims("race", _race(token_end=0.95), _archive()))
    assert failed == {"race.tokens_ahead", "race.uses_context"}


@pytest.mark.parametrize("name", ["characters", "tokens"])
def test_archive_runs_are_five_seeds_of_600_steps(name):
    archive = load_data("tokenization_race.json")
    assert archive["meta"]["steps"] == 600 and archive["meta"]["seeds"] == [0, 1, 2, 3, 4]
    assert [r["steps"][-1] for r in archive["runs"][name]] == [600] * 5


def test_archive_every_character_run_leaves_the_plateau():
    summary = chapter.archive_summary(load_data("tokenization_race.json"))
    assert all(e is not None for e in summary["escape"]), summary["escape"]


def test_archive_characters_end_below_the_tokens():
    end = chapter.archive_summary(load_data("tokenization_race.json"))["end"]
    assert end["characters"].max() < end["tokens"].min(), end


# ------------------------------------------------------------------ experiment 3
P = Q = 0.8
SIZES = (4, 16, 64, 256, 1024)


def _rows(order, bpe, lzw):
    rows = [
        {
            "tokenizer": "blocks",
            "d": d,
            "bits_per_symbol": block_unigram_entropy(P, Q, order, round(math.log2(d))),
        }
        for d in SIZES
    ]
    rows += [
        {"tokenizer": "BPE", "d": d, "bits_per_symbol": b} for d, b in zip(SIZES, bpe, strict=True)
    ]
    rows += [
        {"tokenizer": "LZW", "d": d, "bits_per_symbol": b} for d, b in zip(SIZES, lzw, strict=True)
    ]
    return rows


def _sweep(bpe4_at_4=1.2, m1_off=0.001, lzw16_at_4=1.06):
    H = switching_entropy_rate(P, Q)
    exact1 = block_unigram_entropy(P, Q, 1, 10)
    return {
        1: _rows(
            1, [0.9, 0.8, 0.76, exact1 + 0.004, exact1 + m1_off], [0.95, 0.85, 0.80, 0.77, 0.76]
        ),
        2: _rows(2, [0.95, 0.85, 0.8, 0.78, 0.778], [0.97, 0.9, 0.85, 0.82, 0.80]),
        4: _rows(
            4,
            [bpe4_at_4, 0.99, H + 0.75 / 6, H + 0.75 / 8, H + 0.75 / 10],
            [1.0, lzw16_at_4, H + 0.25, 0.88, 0.852],
        ),
    }


def _streams(sweep):
    table = chapter.loss_table(sweep)
    return {
        (name, d): [table[4, name, d] + e for e in (-0.004, 0.0, 0.004)]
        if name == "BPE"
        else [table[4, name, d] + e for e in (-0.001, 0.0, 0.001)]
        for name in ("BPE", "LZW")
        for d in (4, 64, 1024)
    }


def test_loss_table_slopes_epsilon_and_rise():
    sweep = _sweep()
    table = chapter.loss_table(sweep)
    H = switching_entropy_rate(P, Q)
    assert table[4, "blocks", 64] == pytest.approx(block_unigram_entropy(P, Q, 4, 6))
    slopes = chapter.gap_slopes(table, H)
    assert slopes["BPE"] == pytest.approx([0.75, 0.75, 0.75])
    assert slopes["blocks"] == pytest.approx([4 * (1 - H)] * 3)
    assert chapter.epsilon(table, H)["LZW"] == pytest.approx(1 - H / 0.852)
    rise = chapter.dictionary_rise(table)
    assert rise["LZW", 2] == pytest.approx(-0.02)


def test_sweep_and_gap_values_and_claims():
    sweep = _sweep()
    values = chapter.claims("sweep", sweep, _streams(sweep), P, Q)
    assert values["meas_46"] == values["exact_46"]
    assert values["m1_vs_exact"] == pytest.approx(0.001)
    assert values["noise"] == pytest.approx([0.0, 0.0, 0.0])
    assert not _failed(values)
    gap = chapter.claims("gap", sweep, P, Q)
    assert gap["bpe_slope"] == "0.75 [0.75, 0.75]"
    # an exact 1/log2 d gap looks like d^-0.18 through d = 64 and 1024
    assert gap["bpe_power"] == pytest.approx(math.log(10 / 6) / math.log(16))
    assert gap["thm_eps"] == pytest.approx(math.log(5) / (0.99 * math.log(1024)))
    assert gap["lzw1024_max"] == pytest.approx(0.852)
    assert not _failed(gap)


def test_small_bpe_near_one_bit_fails():
    sweep = _sweep(bpe4_at_4=1.02)
    failed = _failed(chapter.claims("sweep", sweep, _streams(sweep), P, Q))
    assert failed == {"sweep.small_bpe_worse"}


def test_small_lzw_near_one_bit_fails():
    sweep = _sweep(lzw16_at_4=1.004)
    failed = _failed(chapter.claims("sweep", sweep, _streams(sweep), P, Q))
    assert failed == {"sweep.small_lzw_worse"}


def test_lzw_above_theorem_45_bound_fails():
    sweep = _sweep()
    for r in sweep[4]:
        if r["tokenizer"] == "LZW" and r["d"] == 1024:
            r["bits_per_symbol"] = 0.95  # above H / (1 - 0.235) = 0.943
        if r["tokenizer"] == "LZW" and r["d"] == 64:
            r["bits_per_symbol"] = 1.25  # still shrinking faster than the blocks
    assert _failed(chapter.claims("gap", sweep, P, Q)) == {"gap.lzw_within_bound"}


def test_lzw_shrinking_like_the_blocks_fails():
    sweep = _sweep()
    H = switching_entropy_rate(P, Q)
    for r in sweep[4]:
        if r["tokenizer"] == "LZW" and r["d"] == 64:
            r["bits_per_symbol"] = H + 0.13 * 10 / 6  # the blocks' ratio 10/6 exactly
    assert _failed(chapter.claims("gap", sweep, P, Q)) == {"gap.lzw_above_blocks_shrinks_faster"}


def test_long_stream_moving_at_m2_fails():
    sweep = _sweep()
    for r in sweep[2]:
        if r["tokenizer"] == "BPE" and r["d"] == 1024:
            r["bits_per_symbol"] = 0.77  # 0.01 bits below d = 256
    values = chapter.claims("overfit", sweep, _short(sweep), READ)
    assert "overfit.long_m4_falls" in _failed(values)


def test_bpe4_values_and_claims():
    bpe4 = BPE.train(np.array([0, 0, 1, 1] * 50), 4)
    ids = np.array([0, 1, 2, 3] * 25)
    values = chapter.claims("bpe4", bpe4, ids)
    assert values["bits_per_token"] == pytest.approx(2.0)
    assert values["bits_per_char"] == pytest.approx(2.0 / values["chars_per_token"])
    assert not _failed(values)
    skewed = chapter.claims("bpe4", bpe4, np.array([2] * 97 + [0, 1, 3]))
    assert _failed(skewed) == {"bpe4.tokens_near_two_bits", "bpe4.worse_than_characters"}


def test_theorem_45_bound_and_its_inputs():
    eps, bound = chapter.theorem_45_bound(0.7219, 0.2, 1024)
    assert eps == pytest.approx(0.2345, abs=1e-4) and bound == pytest.approx(0.9431, abs=1e-4)
    with pytest.raises(ValueError, match="delta"):
        chapter.theorem_45_bound(0.7, 0.0, 1024)
    with pytest.raises(ValueError, match="d must"):
        chapter.theorem_45_bound(0.7, 0.2, 1)
    with pytest.raises(ValueError, match="below 1"):
        chapter.theorem_45_bound(0.7, 0.2, 4)


def test_lzw_characters_read_is_the_length_of_the_parsed_prefix():
    # from 0 and 1, "0100111" parses as 01 | 00 | ...: the dictionary is full after 4 symbols
    lzw = LZW.train(np.array([0, 1, 0, 0, 1, 1, 1]), 4)
    assert [lzw.token_string(i) for i in range(4)] == ["0", "1", "01", "00"]
    assert chapter.lzw_characters_read(lzw) == 4
    with pytest.raises(TypeError, match="tokenizer"):
        chapter.lzw_characters_read("0100")


def test_bpe_at_m1_away_from_blocks_of_10_bits_fails():
    # 0.009 bits above the exact (and here measured) loss of 10-bit blocks
    sweep = _sweep(m1_off=0.009)
    failed = _failed(chapter.claims("sweep", sweep, _streams(sweep), P, Q))
    assert failed == {"sweep.m1_like_blocks", "sweep.m1_like_measured_blocks"}


def _short(sweep, worse=0.03, worse4=0.02):
    """The short-stream sweep: BPE-1024 ``worse`` bits worse at m = 1, 2, ``worse4`` at 4."""
    short = {o: [dict(r) for r in rows if r["tokenizer"] != "blocks"] for o, rows in sweep.items()}
    for order, rows in short.items():
        for r in rows:
            if r["tokenizer"] == "BPE" and r["d"] == 1024:
                r["bits_per_symbol"] += worse4 if order == 4 else worse
    return short


READ = {1: 10_900, 2: 10_600, 4: 9_900}


def test_overfit_values_and_claims():
    sweep = _sweep()
    values = chapter.claims("overfit", sweep, _short(sweep), READ)
    assert values["lzw_read_range"] == "9,900–10,900"
    assert values["bpe_rise"] == "0.027 and 0.028"
    assert values["long_fall4"] == pytest.approx(0.75 / 8 - 0.75 / 10)
    assert values["bpe_rise4"] == pytest.approx(0.02 - 0.75 / 8 + 0.75 / 10)
    assert values["lzw_fall_min"] == pytest.approx(0.01)
    assert not _failed(values)
    assert _failed(chapter.claims("overfit", sweep, sweep, READ)) == {"overfit.bpe_rises"}
    # at m = 4 a change within the estimation noise passes, a fall beyond it does not
    flat4 = _short(sweep, worse4=-0.0015 + 0.75 / 8 - 0.75 / 10)
    assert chapter.claims("overfit", sweep, flat4, READ)["bpe_rise4"] == pytest.approx(-0.0015)
    assert not _failed(chapter.claims("overfit", sweep, flat4, READ))
    falls4 = _short(sweep, worse4=-0.003 + 0.75 / 8 - 0.75 / 10)
    assert _failed(chapter.claims("overfit", sweep, falls4, READ)) == {"overfit.bpe_rises"}
    # and a rise of 0.01 bits or more at m = 4 is not small
    rises4 = _short(sweep, worse4=0.012 + 0.75 / 8 - 0.75 / 10)
    assert _failed(chapter.claims("overfit", sweep, rises4, READ)) == {"overfit.bpe_rises"}
    # an LZW parse that reads the whole short stream would make the two dictionaries differ
    long_parse = {**READ, 4: 25_000}
    assert _failed(chapter.claims("overfit", sweep, _short(sweep), long_parse)) == {
        "overfit.lzw_reads_prefix"
    }


def _exercise_rows(bpe, lzw):
    return [
        {"tokenizer": "BPE", "d": d, "bits_per_symbol": b}
        for d, b in zip((16, 64, 256), bpe, strict=True)
    ] + [
        {"tokenizer": "LZW", "d": d, "bits_per_symbol": b}
        for d, b in zip((16, 64, 256, 1024), lzw, strict=True)
    ]


def test_exercise_best_size():
    ok = chapter.claims(
        "exercise", _exercise_rows([0.765, 0.767, 0.779], [0.86, 0.82, 0.786, 0.790])
    )
    assert (ok["best_bpe"], ok["best_lzw"]) == (16, 256) and not _failed(ok)
    lzw_1024 = chapter.claims(
        "exercise", _exercise_rows([0.765, 0.767, 0.779], [0.86, 0.82, 0.786, 0.780])
    )
    assert _failed(lzw_1024) == {"exercise.best_moves_down"}
    bpe_256 = chapter.claims(
        "exercise", _exercise_rows([0.78, 0.77, 0.76], [0.86, 0.82, 0.786, 0.790])
    )
    assert _failed(bpe_256) == {"exercise.best_moves_down"}


# ------------------------------------------------------------------ the tokens
def test_complement_pairs():
    assert chapter.is_complement_pair("00111100")
    assert not chapter.is_complement_pair("00110011")
    assert not chapter.is_complement_pair("010")


def test_vocab_values_and_claims():
    # tokens: 0 1 | 2 = 00, 3 = 11, 4 = 0011, 5 = 1100, 6 = 00111100, 7 = 00110011,
    # 8 = 11001100, 9 = 0000, 10 = 00000000
    bpe = BPE(2, [(0, 0), (1, 1), (2, 3), (3, 2), (4, 5), (4, 4), (5, 5), (2, 2), (9, 9)])
    values = chapter.claims("vocab", bpe, [6, 2, 3])
    assert (values["n_eight"], values["n_compl"]) == (1, 1)
    assert not _failed(values)
    half = chapter.claims("vocab", bpe, [6, 7, 2])  # 1 of 2: exactly half
    assert (half["n_eight"], half["n_compl"]) == (2, 1) and not _failed(half)
    third = chapter.claims("vocab", bpe, [6, 7, 8])  # 1 of 3: a third is too few
    assert (third["n_eight"], third["n_compl"]) == (3, 1)
    assert _failed(third) == {"vocab.complements"}
    assert _failed(chapter.claims("vocab", bpe, [6, 7, 8, 10])) == {"vocab.complements"}
    assert _failed(chapter.claims("vocab", bpe, [7, 8, 2])) == {"vocab.complements"}
    assert _failed(chapter.claims("vocab", bpe, [2, 3])) == {"vocab.complements"}


def test_lzw_overfitting_or_flat_on_the_long_stream_fails():
    sweep = _sweep()
    for r in sweep[1]:
        if r["tokenizer"] == "LZW" and r["d"] == 1024:
            r["bits_per_symbol"] = 0.775  # 0.005 bits above d = 256
    values = chapter.claims("overfit", sweep, _short(sweep), READ)
    assert {"overfit.long_no_rise", "overfit.long_lzw_gains"} <= _failed(values)

"""Copying (``book/copying.md``): transformers learn to copy, fixed-state models barely."""

from __future__ import annotations

import numpy as np
import torch

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..copying import (
    MODEL_NAMES,
    NUM_LETTERS,
    accuracy_by_repeats,
    encode,
    max_copy_length,
    repeat_accuracy,
    repeat_probability,
    state_bits,
)

TABLE = ClaimTable(
    "copying",
    [
        Claim(
            "setup.one_state_size",
            "Each of our fixed-state models holds the same number of state numbers (the text "
            "quotes one state size).",
            "len(state_sizes) == 1",
            "a fixed-state model built with a different state (e.g. an LSTM of another hidden "
            "size)",
        ),
        Claim(
            "sweep.tuned_rates",
            "The chapter's CopySetup carries the learning rates the archived sweep picked.",
            "setup_rates == tuned_rates",
            "a learning rate in CopySetup.lrs changed without re-running the sweep",
        ),
        Claim(
            "sweep.gated_best_fixed",
            "At the tuned rates every tuning seed of the gated recurrence copies more strings "
            "than every seed of the LSTM and of the linear recurrence (archived run).",
            "gated_tuned_min > other_fixed_tuned_max",
            "an LSTM or linear-recurrence seed that matches the gated recurrence's worst",
        ),
        Claim(
            "training.transformer_copies",
            "The transformer with absolute positions learns to copy within the budget: the "
            "median over seeds copies nearly all strings of the longest training length, "
            "and every seed copies most of them.",
            "np.median(final_transformer) >= 0.9 and min(final_transformer) >= 0.5",
            "a seed that has not learned the lookup within the step budget (copying fewer "
            "than half the strings), or a median seed well short of nearly all",
        ),
        Claim(
            "training.hard_alibi_copies",
            "The hard-ALiBi transformer learns to copy nearly all strings of the longest "
            "training length within the budget, on every seed.",
            "np.median(final_hard_alibi) >= 0.9 and min(final_hard_alibi) >= 0.85",
            "a seed that has not learned the lookup within the step budget (below 0.85)",
        ),
        Claim(
            "training.gated_far_behind",
            "The gated recurrence copies only a small fraction of the strings: the "
            "transformers copy several times more.",
            "max(final_gated) <= 0.4 and np.median(final_gated) <= 0.3",
            "a gated recurrence that copies nearly as many strings as the transformers",
        ),
        Claim(
            "training.gated_learns_something",
            "The input-dependent gate helps: the gated recurrence copies some strings.",
            "np.median(final_gated) >= 0.03",
            "a gated recurrence that learns nothing, like the S4D-like one",
        ),
        Claim(
            "training.hard_alibi_twice_length",
            "On strings twice the longest training length the hard-ALiBi transformer still "
            "copies most of them.",
            "np.median(test_hard_alibi) >= 0.5 and min(test_hard_alibi) >= 0.4",
            "hard-ALiBi collapsing past the training lengths like absolute positions",
        ),
        Claim(
            "training.absolute_none_twice_length",
            "The transformer with absolute positions copies (almost) no string twice the "
            "longest training length.",
            "max(test_transformer) <= 0.01",
            "a model that extrapolates its learned positions to unseen lengths",
        ),
        Claim(
            "lengths.absolute_cliff",
            "With absolute positions no seed copies strings just past the training range.",
            "tf_beyond_best <= 0.05",
            "a model that extrapolates its learned positions to unseen lengths",
        ),
        Claim(
            "lengths.hard_alibi_no_cliff",
            "The hard-ALiBi model (median over seeds) copies most strings at every length up "
            "to twice the training length.",
            "min(ha_median_upto) >= 0.5",
            "a cliff past the training lengths, as with absolute positions",
        ),
        Claim(
            "lengths.hard_alibi_gradual",
            "The hard-ALiBi accuracy has no cliff but still falls with length: it copies "
            "some strings at the longest length of the grid.",
            "ha_len_last >= 0.1 and ha_len_last < ha_len_mid - 0.1",
            "hard-ALiBi accuracy dropping to about 0 at the longest length, or not falling "
            "past twice the training length",
        ),
        Claim(
            "lengths.gated_falls_with_length",
            "The gated recurrence's accuracy falls with length inside the trained range: it "
            "copies many of the shortest trained strings and far fewer of the longest.",
            "gated_len_in >= 0.3 and gated_len_in - gated_len_10 >= 0.2",
            "accuracy flat inside the trained range, or even short strings rarely copied",
        ),
        Claim(
            "lengths.lookup_head",
            "Every seed's hard-ALiBi model has a second-layer head that attends along the copy "
            "diagonal.",
            "min(diag) > 0.5",
            "a seed that copies without a clean lookup head (attention spread out)",
        ),
        Claim(
            "repeats.letter_harmless",
            "A repeated letter barely matters to the hard-ALiBi lookup: the median seed copies "
            "about as many strings with one planted as plain random strings.",
            "abs(rep_letter - rep_random) <= 0.05",
            "a lookup keyed on the last letter alone, which a repeated letter makes ambiguous "
            "(accuracy near half or below)",
        ),
        Claim(
            "repeats.bigram_hurts",
            "One planted repeated bigram costs every seed at least 0.3 of its accuracy, "
            "but every seed still copies some of them: the learned lookup keys mostly on the "
            "last two letters and only sometimes on a third.",
            "max(planted_bigram) <= rep_random - 0.3 and min(planted_bigram) >= 0.1",
            "a repeated bigram that does not hurt (a lookup on three letters), or one that "
            "breaks every copy (a lookup on two letters only)",
            scale="cpu",
        ),
        Claim(
            "repeats.trigram_breaks",
            "One planted repeated trigram (followed by different letters) breaks the copy on "
            "every seed.",
            "max(planted_trigram) <= 0.05",
            "a model that tells the two occurrences apart by more than the three letters its "
            "windows can see (e.g. by position)",
        ),
        Claim(
            "state.longest_grows",
            "The longest string the gated recurrence learns to copy (median over seeds) grows "
            "with its state: never shorter at a larger state, and longer at the largest than "
            "at the smallest (archived run).",
            "min(gated_longest_steps) >= 0 and gated_longest_max > gated_longest_min",
            "a longest copyable length that falls as the state grows",
        ),
        Claim(
            "state.below_one_bit",
            "The longest strings the trained recurrences copy need less than one bit per "
            "number of state: every seed's longest copy, at every state size, stays below "
            "the bound for a state of single bits (archived run).",
            "bits_used < 1",
            "a recurrence that stores more than one bit per state number",
        ),
        Claim(
            "state.small_states_nothing",
            "The smallest states learn to copy not even one letter on any seed, though they "
            "could hold several (archived run).",
            "n_zero_sizes >= 1 and zero_capacity_min >= 5",
            "every state size learning to copy at least one letter",
        ),
        Claim(
            "repeats.unique_still_falls",
            "Strings with no repeated bigram are copied almost always at the longest training "
            "length and far less often at the longest test length: the length failure is not "
            "only the repeats that n-gram hashing predicts.",
            "uniq_first >= 0.9 and uniq_last <= uniq_first - 0.15",
            "accuracy without repeats that stays flat with length, as for the paper's "
            "construction (errors only where an n-gram repeats)",
            scale="cpu",
        ),
        # ------------------------------------------------------------------ Experiment 4
        Claim(
            "lookup.recurrence_suffix_fails",
            "With the query after the string the gated recurrence answers at most a third of "
            "the queries at length 10, on every seed (archived run).",
            "gated_suffix_10_max < 0.34",
            "a recurrence that keeps a string of 10 letters well enough to look it up",
        ),
        Claim(
            "lookup.recurrence_prefix_one_seed",
            "With the query before the string at least one seed of the gated recurrence "
            "answers more than twice as many queries at length 10 as the best seed with the "
            "query after it (archived run).",
            "gated_prefix_10_max > 2 * gated_suffix_10_max",
            "a recurrence that does no better on any seed with the query first",
        ),
        Claim(
            "lookup.recurrence_prefix_falls",
            "The best query-first seed of the gated recurrence answers far fewer queries at "
            "length 40 than at length 10 (by more than 0.2), within a budget in which it had "
            "not finished learning (archived run).",
            "gated_prefix_10_max - gated_prefix_40_max > 0.2",
            "a recurrence that generalizes the query-first lookup in length, as the paper's "
            "GSSMs do",
        ),
        Claim(
            "lookup.hard_alibi_suffix",
            "With the query after the string hard-ALiBi answers nearly all queries at length "
            "10 and most at length 40, four times the longest training string (medians, "
            "archived run).",
            "ha_suffix_10 > 0.9 and ha_suffix_40 > 0.7",
            "a hard-ALiBi lookup that fails or does not generalize in length",
        ),
        Claim(
            "lookup.hard_alibi_no_prefix",
            "With the query before the string our two-layer hard-ALiBi answers few queries "
            "(median below 0.3 at length 10) (archived run).",
            "ha_prefix_10 < 0.3",
            "a two-layer hard-ALiBi that solves the query-first lookup",
        ),
    ],
)
claims = TABLE.claims_for

#: Planted repeats of :func:`repeat_tests`: n = 0 (random strings), a letter, a bigram, a trigram.
REPEAT_NS = (0, 1, 2, 3)

_FIXED = ("LSTM", "linear recurrence", "gated recurrence")


def longest_copyable(acc, threshold: float = 0.5) -> int:
    """Largest L with accuracy >= threshold at every length 1..L (0 if none)."""
    ok = np.append(np.asarray(acc) >= threshold, False)
    return int(np.argmin(ok))


def longest_by_state(state: list) -> tuple[list, dict]:
    """The archived state sweep as (state sizes, ``{model: (sizes, seeds) longest lengths}``)."""
    sizes = sorted({r["state_floats"] for r in state})
    longest = {
        name: np.array(
            [
                [longest_copyable(a) for a in r["acc"]]
                for r in sorted(
                    (r for r in state if r["model"] == name), key=lambda r: r["state_floats"]
                )
            ]
        )
        for name in ("LSTM", "gated recurrence")
    }
    return sizes, longest


def copy_prompt(text: str) -> torch.Tensor:
    """``<BOS> text <SEP> text`` (without ``<EOS>``) as a (1, T) batch of token ids."""
    return torch.cat([encode(text), encode(text)[:, 1:-1]], dim=1)


def diagonal_scores(patterns: torch.Tensor, length: int) -> torch.Tensor:
    """Per head, the mean attention of the copy's queries on the letter each must write next
    (query ``q`` on key ``q - length``) in (heads, T, T) patterns."""
    q = torch.arange(length + 1, patterns.shape[-1])
    return patterns[:, q, q - length].mean(dim=1)


def diagonal_score(model, text: str) -> float:
    """The best second-layer head's mean attention along the copy diagonal while copying."""
    patterns = model.attention_patterns(copy_prompt(text))[1][0]  # (heads, T, T)
    return float(diagonal_scores(patterns, len(text)).max())


@TABLE.computes("setup")
def _setup(setup, models) -> dict:
    """The sizes the text quotes; ``models`` are the chapter's (untrained) models."""
    states = sorted({m.state_floats for m in models.values() if hasattr(m, "state_floats")})
    values = {
        key: getattr(setup, key)
        for key in ("min_len", "max_len", "test_len", "steps", "batch_size", "eval_size")
    }
    string_bits = float(setup.max_len * np.log2(NUM_LETTERS))
    return {
        **values,
        "n_seeds": len(setup.seeds),
        "state_floats": states[0],
        "string_bits": string_bits,
        "state_sizes": states,
        # the capacity bound (copy half the strings) at 32 and at 1 bit per number, and
        # the bits per state number that strings of max_len letters need
        "cap_32": float(max_copy_length(state_bits(states[0]) + 1)),
        "cap_1": float(max_copy_length(state_bits(states[0], 1) + 1)),
        "bits_per_number": string_bits / states[0],
    }


@TABLE.computes("sweep")
def _sweep(sweeps: dict, setup) -> dict:
    """The archived learning-rate sweep (``copying_sweeps.json``) and the setup's rates."""
    meta, tuned = sweeps["meta"], sweeps["tuned_lr"]
    by = {(r["model"], r["lr"]): r for r in sweeps["lr"]}
    fixed_cells = [r for r in sweeps["lr"] if r["model"] in _FIXED and not r["diverged"]]
    values = {
        "sweep_script": meta["script"],
        "sweep_date": meta["date"],
        "sweep_device": meta["device"],
        "tf_lr3_worst": float(min(by["transformer", 3e-3]["acc"])),
        "tf_lr1_worst": float(min(by["transformer", 1e-3]["acc"])),
        "fixed_sweep_best": float(max(np.median(r["acc"]) for r in fixed_cells)),
        "lin_sweep_best": float(
            max(max(r["acc"]) for r in fixed_cells if r["model"] == "linear recurrence")
        ),
        "tuned_rates": [tuned[n] for n in MODEL_NAMES],
        "setup_rates": [setup.lr_for(n) for n in MODEL_NAMES],
    }
    tuned_acc = {n: np.array(by[n, tuned[n]]["acc"]) for n in _FIXED}
    values["gated_tuned_min"] = float(tuned_acc["gated recurrence"].min())
    values["other_fixed_tuned_max"] = float(
        max(tuned_acc["LSTM"].max(), tuned_acc["linear recurrence"].max())
    )
    for short, name in (("lstm", "LSTM"), ("gated", "gated recurrence")):
        values[f"{short}_lr3"] = float(np.median(np.array(by[name, 3e-3]["acc"])))
        values[f"{short}_tuned"] = float(np.median(np.array(by[name, tuned[name]]["acc"])))
    return values


@TABLE.computes("training")
def _training(runs: dict) -> dict:
    """Experiment 1: accuracy per seed at the longest training length and at twice it."""
    final = {name: r.final() for name, r in runs.items()}
    test = {name: r.acc_test_len for name, r in runs.items()}
    tf, ha, gated = final["transformer"], final["hard-ALiBi"], final["gated recurrence"]
    return {
        "tf_acc": float(np.median(tf)),
        "ha_acc": float(np.median(ha)),
        "tf_worst": float(tf.min()),
        "ha_worst": float(ha.min()),
        "fixed_best": float(gated.max()),
        "gated_acc": float(np.median(gated)),
        "ha_test": float(np.median(test["hard-ALiBi"])),
        "ha_test_worst": float(test["hard-ALiBi"].min()),
        "tf_test_best": float(test["transformer"].max()),
        "final_transformer": tf,
        "final_hard_alibi": ha,
        "final_gated": gated,
        "test_hard_alibi": test["hard-ALiBi"],
        "test_transformer": test["transformer"],
    }


@TABLE.computes("lengths")
def _lengths(by_length: dict, lengths: list, setup, ha_models: list, text: str) -> dict:
    """Experiment 2: accuracy against length (``by_length[name]``: (seeds, lengths)) and the
    hard-ALiBi models' lookup heads while copying ``text``."""
    ha, tf = by_length["hard-ALiBi"], by_length["transformer"]
    gated = by_length["gated recurrence"]
    grid = np.array(lengths)
    beyond, upto = grid > setup.max_len, grid <= setup.test_len
    mid = int(np.flatnonzero(upto)[-1])  # the longest length up to twice the training length
    i10 = lengths.index(setup.max_len)
    i_in = int(np.flatnonzero(grid >= setup.min_len)[0])  # the shortest trained length
    return {
        "len_first": lengths[0],
        "len_in": lengths[i_in],
        "len_mid": lengths[mid],
        "len_last": lengths[-1],
        "len_beyond": lengths[int(np.flatnonzero(beyond)[0])],
        "ha_len_mid": float(np.median(ha[:, mid])),
        "ha_len_last": float(np.median(ha[:, -1])),
        "tf_beyond_best": float(tf[:, beyond].max()),
        "gated_len_in": float(np.median(gated[:, i_in])),
        "gated_len_10": float(np.median(gated[:, i10])),
        "ha_median_upto": np.median(ha, axis=0)[upto],
        "diag": [diagonal_score(m, text) for m in ha_models],
    }


def repeat_lengths(setup) -> tuple:
    """The lengths at which :func:`repeat_tests` splits strings by repeats: the longest
    training length, the test length and 1.5 times it."""
    return (setup.max_len, setup.test_len, 3 * setup.test_len // 2)


def repeat_tests(models: list, setup, seed: int | None = None) -> dict:
    """Trained copiers against repeated n-grams: ``planted`` (seeds, len(REPEAT_NS)), the
    string accuracy at ``setup.max_len`` with a planted repeat of each n; ``without``,
    ``with`` (seeds, lengths), the accuracy on random strings of each
    :func:`repeat_lengths` without and with a repeated bigram; ``frac_with`` (lengths,)."""
    lengths = repeat_lengths(setup)
    planted = np.array([repeat_accuracy(m, setup.max_len, REPEAT_NS, seed=seed) for m in models])
    split = [accuracy_by_repeats(m, lengths, n=2, seed=seed) for m in models]
    return {
        "lengths": lengths,
        "planted": planted,
        "without": np.array([d["without"] for d in split]),
        "with": np.array([d["with"] for d in split]),
        "frac_with": split[0]["frac_with"],
    }


def repeat_table(rep: dict):
    """:func:`repeat_tests` as one Markdown table: string accuracy, median [range] over seeds,
    on planted repeats and on random strings split by a repeated bigram."""
    from ..book.notebook import spread
    from ..book.plotting import markdown_table

    L0 = rep["lengths"][0]
    names = ("random", "one repeated letter", "one repeated bigram", "one repeated trigram")
    rows = [
        [f"{name} (planted)" if j else name, L0, "", spread(rep["planted"][:, j])]
        for j, name in enumerate(names)
    ]
    for i, L in enumerate(rep["lengths"]):
        share = rep["frac_with"][i]
        rows += [
            ["random, no repeated bigram", L, f"{1 - share:.2f}", spread(rep["without"][:, i])],
            ["random, some bigram repeated", L, f"{share:.2f}", spread(rep["with"][:, i])],
        ]
    return markdown_table(["strings", "L", "share of random strings", "string accuracy"], rows)


@TABLE.computes("repeats")
def _repeats(rep: dict, setup) -> dict:
    """Experiment 2's repeats: :func:`repeat_tests` of the hard-ALiBi models."""
    med = np.median(rep["planted"], axis=0)  # (len(REPEAT_NS),)
    uniq = np.median(rep["without"], axis=0)  # (lengths,)
    last = rep["lengths"][-1]
    return {
        "rep_len": setup.max_len,
        "rep_lengths": " and ".join(map(str, rep["lengths"])),
        "rep_last_len": last,
        "rep_random": float(med[0]),
        "rep_letter": float(med[1]),
        "rep_bigram": float(med[2]),
        "rep_trigram": float(med[3]),
        "planted_bigram": rep["planted"][:, 2],
        "planted_trigram": rep["planted"][:, 3],
        "rep_bigram_hi": float(rep["planted"][:, 2].max()),
        "rep_trigram_hi": float(rep["planted"][:, 3].max()),
        "uniq_first": float(uniq[0]),
        "uniq_last": float(uniq[-1]),
        "with_last": float(np.median(rep["with"][:, -1])),
        "frac_bigram_last": float(rep["frac_with"][-1]),
        "frac_bigram_first": float(rep["frac_with"][0]),
        "frac_trigram_last": repeat_probability(last, 3, size=20_000),
    }


@TABLE.computes("state")
def _state(sweeps: dict) -> dict:
    """Experiment 3 (archived): the longest copyable length against the state size."""
    meta = sweeps["meta"]
    sizes, longest = longest_by_state(sweeps["state"])
    med = {name: np.median(L, axis=1) for name, L in longest.items()}  # (sizes,)
    used = max(  # bits per state number that the best seed's copies carry, any size
        float(np.max(L, axis=1)[i] * np.log2(NUM_LETTERS) / x)
        for L in longest.values()
        for i, x in enumerate(sizes)
    )
    zero = [x for i, x in enumerate(sizes) if all(L[i].max() == 0 for L in longest.values())]
    return {
        "state_max_len": meta["max_len"],
        "state_steps": meta["state_steps"],
        "gated_longest_max": float(med["gated recurrence"][-1]),
        "lstm_longest_max": float(med["LSTM"][-1]),
        "state_max": sizes[-1],
        "bound_max": float(max_copy_length(32 * sizes[-1] + 1)),
        "bits_used": used,
        "zero_sizes": " and ".join(map(str, zero)),
        "n_zero_sizes": len(zero),
        "zero_capacity_min": float(max_copy_length(32 * min(zero) + 1)) if zero else 0.0,
        "gated_longest_min": float(med["gated recurrence"][0]),
        "gated_longest_steps": [float(v) for v in np.diff(med["gated recurrence"])],
    }


def lookup_accuracy(archive: dict) -> dict:
    """The archived lookup runs (``copying_lookup.json``) as ``{(model, key): {length:
    per-seed accuracies}}``."""
    return {
        (r["model"], r["key"]): {int(L): np.asarray(v) for L, v in r["acc"].items()}
        for r in archive["runs"]
    }


def lookup_table(archive: dict):
    """The archived lookup runs as one Markdown table: fraction of queries answered, median
    [range] over seeds, per model, key position and string length."""
    from ..book.notebook import spread
    from ..book.plotting import markdown_table

    acc = lookup_accuracy(archive)
    lengths = archive["meta"]["lengths"]
    where = {"suffix": "after the string", "prefix": "before the string"}
    rows = [
        [model, where[key]] + [spread(acc[model, key][L]) for L in lengths]
        for key in archive["meta"]["keys"]
        for model in archive["meta"]["models"]
    ]
    return markdown_table(["model", "query"] + [f"L = {L}" for L in lengths], rows)


@TABLE.computes("lookup")
def _lookup(archive: dict) -> dict:
    """Experiment 4 (archived): the n-gram lookup with the query before or after the
    string."""
    from ..book.notebook import spread

    meta = archive["meta"]
    acc = lookup_accuracy(archive)
    g_pre, g_suf = acc["gated recurrence", "prefix"], acc["gated recurrence", "suffix"]
    h_pre, h_suf = acc["hard-ALiBi", "prefix"], acc["hard-ALiBi", "suffix"]
    unlearned = g_pre[10] <= 2 * g_suf[10].max()
    return {
        "lk_steps": f"{meta['steps']:,}",
        "lk_seeds": len(archive["runs"][0]["seeds"]),
        "lk_date": meta["date"],
        "lk_device": meta["device"],
        "lk_train": f"{meta['train_lengths'][0]}–{meta['train_lengths'][1]}",
        "gated_suffix_10_max": float(g_suf[10].max()),
        "gated_suffix_10_min": float(g_suf[10].min()),
        "gated_prefix_10_max": float(g_pre[10].max()),
        "gated_prefix_40_max": float(g_pre[40][np.argmax(g_pre[10])]),
        "gated_prefix_learned": int((g_pre[10] > 2 * g_suf[10].max()).sum()),
        "gated_prefix_rest": spread(np.sort(g_pre[10])[:-1]),
        # the runs that did not learn: every query-last run, and query-first runs at most
        # twice the best query-last seed at length 10; their median per length
        "lk_floor": ", ".join(
            f"{np.median(np.concatenate([g_suf[L], g_pre[L][unlearned]])):.2f}"
            for L in meta["lengths"]
        ),
        "lk_lengths": ", ".join(map(str, meta["lengths"])),
        "ha_suffix_10": float(np.median(h_suf[10])),
        "ha_suffix_40": float(np.median(h_suf[40])),
        "ha_prefix_10": float(np.median(h_pre[10])),
    }


# ------------------------------------------------------------------ coding labs
#: Lengths of the n-grams whose repeats the lab "When hashing fails" simulates.


LABS = LabTable(
    "copying",
    [
        Lab(
            "ex-copying-2",
            expects="a list of four simulated chances that a string of 100 letters repeats some "
            "n-gram, for n = 2, 3, 4, 5 in that order",
            quantity="the simulated chance of a repeated trigram in 100 letters",
            measure=lambda p: p[1],
            low=0.205,
            high=0.265,
            because="about C(98, 2) = 4,753 pairs of trigram positions each match with chance "
            "26^-3, so 1 - exp(-4753 / 17576) = 0.24 of the strings repeat one",
            hint="call repeat_probability(100, n, size=5000, seed=base_seed()) for n = 2, 3, 4, 5 "
            "(a simulation, not the bound L^2 26^-n), and list them in that order.",
        ),
        Lab(
            "ex-copying-3",
            expects="the string accuracy at the longest training length after training an LSTM "
            "with 256 hidden units (History.final('acc_train_len'))",
            quantity="the string accuracy of the 256-unit LSTM at length 10",
            low=0.09,
            high=0.5,
            because="twice the state lets the LSTM learn to copy a few times more strings than "
            "the 128-unit one's few percent, though it must still learn to compress "
            "the string, which the transformer never has to",
            hint="build CopyLSTM(hidden=256) inside the seeded block, and train it with "
            "train_copier at the LSTM's own tuned rate, setup.lr_for('LSTM') (1e-2).",
        ),
        Lab(
            "ex-copying-4",
            expects="the fraction of 2,000 random strings of 20 letters that an ideal bigram "
            "lookup copies exactly",
            quantity="the fraction copied exactly by the ideal bigram lookup",
            low=0.76,
            high=0.86,
            because="the lookup errs only where a bigram occurs twice followed by different "
            "letters, which about 1 - exp(-C(18, 2) 25 / 26^3), a fifth, of the strings "
            "do",
            hint="compare the bigram before each letter with every other bigram of the same "
            "string; count a string as wrong only if a repeated bigram is followed by "
            "different letters (not if it merely repeats, and not the last bigram, which "
            "no letter follows).",
        ),
    ],
)
feedback = LABS.feedback

"""Property-based bad input: hypothesis corrupts one argument of a valid call to a public
function, drawn from a battery of values that are wrong for that argument (below its
minimum, the wrong type, NaN, infinite, a string, None, a boolean for a count), and the call
must raise the library's own ValueError/TypeError whose message names that argument --
never a silent result, never an exception from deep inside torch or NumPy.

Each entry: function, the valid keyword arguments, and for each argument its kind.  Kinds
map to the values that are wrong for every argument of that kind (see ``BAD``)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqtheory import copying, parity, partitions, tokenization
from seqtheory.core import models, seeds, training
from seqtheory.incontext import ICLSetup
from seqtheory.sources import dimension, markov


def _ints_below(m: int) -> list:
    return [m - 1, m - 7, -1]


NON_INTS = [2.5, float("nan"), "3", None, True, [3]]  # True: a bool is not a count
NON_FLOATS = ["0.5", None, [0.5], float("nan")]

BAD = {
    "int>=1|None": [b for b in NON_INTS if b is not None] + _ints_below(1),  # None: default
    "int>=1": NON_INTS + _ints_below(1),
    "int>=2": NON_INTS + _ints_below(2),
    "int>=0": NON_INTS + [-1, -3],
    "float>0": NON_FLOATS + [0.0, -1.0, -math.inf],
    "float>=0": NON_FLOATS + [-1e-3, -math.inf],
    "prob[0,1)": NON_FLOATS + [-0.1, 1.0, 1.5, math.inf],
    "prob[0,1]": NON_FLOATS + [-0.1, 1.5, math.inf],
    "prob(0,1]": NON_FLOATS + [0.0, -0.1, 1.5, math.inf],
    "str": [3, None, "no-such-option"],
}

ON_SPHERE = dimension.sample_sphere(300, 2, D=5, seed=0)
X8, Y8 = np.random.default_rng(0).standard_normal((2, 30, 8))
CHAIN = torch.full((2, 3, 3), 1 / 3)
BITS = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1] * 20)

# name: (function, valid kwargs, {argument: kind})
SPECS = {
    "sample_transition_matrices": (
        markov.sample_transition_matrices,
        dict(batch=2, k=3, alpha=1.0, order=1),
        {"batch": "int>=1", "k": "int>=2", "alpha": "float>0", "order": "int>=1"},
    ),
    "sample_chains": (markov.sample_chains, dict(P=CHAIN, T=5), {"T": "int>=1"}),
    "sample_switching": (
        markov.sample_switching,
        dict(batch=2, T=10, p=0.8, q=0.7, order=2),
        {"batch": "int>=1", "T": "int>=1", "p": "prob[0,1]", "q": "prob[0,1]", "order": "int>=1"},
    ),
    "ngram_predictor": (
        markov.ngram_predictor,
        dict(x=torch.zeros(2, 6, dtype=torch.long), k=3, n=2),
        {"k": "int>=2", "n": "int>=1", "alpha": "float>0"},
    ),
    "BPE.train": (
        tokenization.BPE.train,
        dict(data=BITS.numpy(), d=8, alphabet=2),
        {"d": "int>=2", "alphabet": "int>=2"},
    ),
    "LZW.train": (
        tokenization.LZW.train,
        dict(data=BITS.numpy(), d=6, alphabet=2),
        {"d": "int>=2", "alphabet": "int>=2"},
    ),
    "FixedBlocks": (
        tokenization.FixedBlocks,
        dict(r=3, alphabet=2),
        {"r": "int>=1", "alphabet": "int>=2"},
    ),
    "mle_dimension": (
        dimension.mle_dimension,
        dict(X=ON_SPHERE, K=10),
        {"K": "int>=2", "batch_size": "int>=1|None"},
    ),
    "twonn_dimension": (
        dimension.twonn_dimension,
        dict(X=ON_SPHERE, discard=0.1),
        {"discard": "prob[0,1)"},
    ),
    "knn_distances": (
        dimension.knn_distances,
        dict(X=ON_SPHERE, K=5, chunk=64),
        {"K": "int>=1", "chunk": "int>=1"},
    ),
    "sample_sphere": (
        dimension.sample_sphere,
        dict(n=10, d=2, D=5, embedding="linear"),
        {"n": "int>=1", "d": "int>=1", "D": "int>=1|None", "embedding": "str"},
    ),
    "TransformerConfig": (
        models.TransformerConfig,
        dict(vocab_size=3, max_len=10, n_layers=1, d_model=8, dropout=0.1, pos_encoding="learned"),
        {
            "vocab_size": "int>=1",
            "max_len": "int>=1",
            "n_layers": "int>=1",
            "d_model": "int>=1",
            "dropout": "prob[0,1)",
            "pos_encoding": "str",
        },
    ),
    "TrainConfig": (
        training.TrainConfig,
        dict(steps=10, lr=1e-3, warmup=2, eval_every=5, schedule="cosine"),
        {
            "steps": "int>=1",
            "lr": "float>0",
            "warmup": "int>=0",
            "eval_every": "int>=1",
            "weight_decay": "float>=0",
            "schedule": "str",
        },
    ),
    "ICLSetup": (
        ICLSetup,
        dict(k=3, T=20, alpha=1.0, batch_size=4, steps=4, eval_every=2),
        {
            "k": "int>=2",
            "T": "int>=2",
            "alpha": "float>0",
            "batch_size": "int>=1",
            "steps": "int>=1",
            "eval_every": "int>=1",
            "dropout": "prob[0,1)",
        },
    ),
    "copy_batch": (
        copying.copy_batch,
        dict(batch_size=2, min_len=3, max_len=5),
        {"batch_size": "int>=1", "min_len": "int>=1"},
    ),
    "random_graph": (
        partitions.random_graph,
        dict(n=10, degree=2.0),
        {"n": "int>=2", "degree": "float>=0"},
    ),
    "seed_everything": (seeds.seed_everything, dict(seed=0), {"seed": "int>=0"}),
    "make_generator": (seeds.make_generator, dict(seed=0), {"seed": "int>=0"}),
    "sparse_parity": (
        parity.sparse_parity,
        dict(num=4, n=6, support=(0, 1), generator=torch.Generator().manual_seed(0)),
        {"num": "int>=1", "n": "int>=1"},
    ),
}

CASES = [(name, arg) for name, (_, _, kinds) in SPECS.items() for arg in kinds]
FIXED = [(name, arg, bad) for name, arg in CASES for bad in BAD[SPECS[name][2][arg]]]


def _not_a(kind: str):
    """Hypothesis values that are wrong for every argument of ``kind``."""
    junk = st.one_of(st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2))
    nan = st.just(float("nan"))
    if kind.startswith("int>="):
        m = int(kind[5:6])
        if kind.endswith("|None"):  # None means the default
            junk = st.one_of(st.text(max_size=3), st.lists(st.integers(), max_size=2))
        return st.one_of(
            st.integers(-(10**9), m - 1), st.floats(allow_nan=True), st.booleans(), junk
        )
    if kind == "float>0":
        return st.one_of(st.floats(max_value=0.0), nan, junk)
    if kind == "float>=0":
        return st.one_of(st.floats(max_value=-1e-12), nan, junk)
    if kind == "prob[0,1)":
        return st.one_of(st.floats(max_value=-1e-12), st.floats(min_value=1.0), nan, junk)
    if kind == "prob[0,1]":
        return st.one_of(st.floats(max_value=-1e-12), st.floats(min_value=1.0 + 1e-9), nan, junk)
    if kind == "prob(0,1]":
        return st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0 + 1e-9), nan, junk)
    assert kind == "str", kind
    return st.one_of(
        st.text(max_size=8).filter(lambda t: t not in VALID_CHOICES), st.integers(), st.none()
    )


VALID_CHOICES = {
    "linear",
    "nonlinear",
    "learned",
    "relative",
    "rotary",
    "hard_alibi",
    "none",
    "constant",
    "cosine",
}


def _check_refused(name: str, arg: str, bad) -> None:
    fn, kwargs, _ = SPECS[name]
    with pytest.raises((ValueError, TypeError)) as info:
        fn(**{**kwargs, arg: bad})
    # the library's own error (raised by seqtheory code: the innermost frame), and its
    # message names the argument as a word and says what is allowed
    assert "seqtheory" in str(info.traceback[-1].path), (name, arg, bad, info.traceback[-1])
    assert re.search(rf"\b{arg}\b.*\b(must|one of)\b", str(info.value)), (
        name,
        arg,
        bad,
        str(info.value),
    )


@pytest.mark.parametrize("name", list(SPECS))
def test_the_valid_call_works(name):
    """Each corruption starts from a call that is itself valid."""
    fn, kwargs, _ = SPECS[name]
    fn(**kwargs)


@pytest.mark.parametrize("name, arg, bad", FIXED, ids=[f"{n}-{a}-{b!r}" for n, a, b in FIXED])
def test_each_listed_bad_value_is_refused(name, arg, bad):
    _check_refused(name, arg, bad)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(case=st.sampled_from(CASES), data=st.data())
def test_any_bad_value_is_refused(case, data):
    name, arg = case
    bad = data.draw(_not_a(SPECS[name][2][arg]), label=f"{name}({arg}=...)")
    _check_refused(name, arg, bad)

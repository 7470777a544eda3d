"""Reference solutions of the tokenization chapter's coding labs, with the
typical mistakes each lab's feedback must read as wrong.

Lecturer's material: this folder is not part of the installed library, so a student's
``pip install`` holds no reference solution.  ``python -m booktools.record_labs`` runs
these under several base seeds into ``tokenization.labs.json`` next to this file.
"""

from __future__ import annotations

import numpy as np

from seqtheory.chapters.tokenization import (
    LABS,
    _streams,
)
from seqtheory.sources.markov import (
    switching_entropy_rate,
    switching_matrix,
)
from seqtheory.tokenization import (
    BPE,
    LZW,
    SETUP,
    token_lengths,
    unigram_sweep,
)


@LABS.solves(
    "ex-tokenization-3",
    mistakes=(
        ("bits per token, not divided by the characters per token", 1.9933),
        ("natural logarithms (nats per character)", 0.8925),
    ),
)
def _bpe4_lab(seed: int) -> float:
    train, test = _streams(4, seed, SETUP.cpu.n_symbols, 0.8, 0.8, 4)
    bpe4 = BPE.train(train, 4)
    ids = bpe4.encode(test)
    freq = np.bincount(ids, minlength=4) / ids.size
    freq = freq[freq > 0]
    return float(-(freq * np.log2(freq)).sum() / token_lengths(bpe4)[ids].mean())


@LABS.solves(
    "ex-tokenization-4",
    mistakes=(
        (
            "the whole 10^6-character training stream (BPE rows)",
            [
                {"tokenizer": "BPE", "d": d, "bits_per_symbol": v}
                for d, v in ((16, 0.766), (64, 0.7674), (256, 0.7567), (1024, 0.7528))
            ],
        ),
    ),
)
def _little_data_lab(seed: int) -> list:
    train, test = _streams(1, seed, SETUP.cpu.n_symbols, 0.8, 0.8, 1)
    return unigram_sweep(train[:30_000], test, (16, 64, 256, 1024), tokenizers=("BPE", "LZW"))


def token_log2_probs(tokenizer, p: float, q: float) -> np.ndarray:
    """log2 P(t) of every token string t under the first-order switching chain started
    stationary: log2 pi(t_1) plus the log2 transition probabilities along t."""
    P = switching_matrix(p, q).numpy()
    pi = np.array([q, p]) / (p + q)
    return np.array([np.log2(pi[t[0]]) + np.log2(P[t[:-1], t[1:]]).sum() for t in tokenizer.tokens])


@LABS.solves(
    "ex-tokenization-8",
    mistakes=(
        ("natural logarithms", 5.808),
        ("the first character's probability pi(t_1) left out", 7.379),
    ),
)
def _lzw_tokens_lab(seed: int) -> float:
    train, test = _streams(8, seed, 200_000, 0.8, 0.8, 1)
    lzw = LZW.train(train, 1024)
    ids = lzw.encode(test)
    q_mle = np.bincount(ids, minlength=lzw.vocab_size) / ids.size
    return float(-(q_mle * token_log2_probs(lzw, 0.8, 0.8)).sum())


@LABS.solves(
    "ex-tokenization-9",
    mistakes=(
        ("the absolute gap loss - H instead of 1 - H / loss", [0.0499, 0.0455]),
        ("fixed blocks of 10 bits instead of LZW (exact values)", [0.0371, 0.1017]),
    ),
)
def _delta_lab(seed: int) -> list:
    eps = []
    for k, delta in enumerate((0.2, 0.1)):
        train, test = _streams(90 + k, seed, 200_000, 1 - delta, 1 - delta, 1)
        loss = unigram_sweep(train, test, (1024,), tokenizers=("LZW",))[0]["bits_per_symbol"]
        eps.append(1 - switching_entropy_rate(1 - delta, 1 - delta) / loss)
    return eps

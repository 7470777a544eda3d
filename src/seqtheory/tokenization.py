"""Tokenizers for symbol sequences, and the unigram-over-tokens model the theory studies.

Sequences are 1-D integer arrays of symbols ``0 .. alphabet - 1`` (bits, for the
chapter's sources).  Three tokenizers, each with ``encode`` / ``decode`` that round-trip:

* :class:`BPE` — byte-pair encoding: repeatedly merge the most frequent adjacent pair
  (ties: the smallest pair of ids), pair counts kept up to date merge by merge (only the
  pairs around a merge's occurrences change); encoding applies the merges in the order
  they were learned.  Chunked corpora (a list of sequences) never
  merge across chunk boundaries, as in HuggingFace ``tokenizers``.
* :class:`LZW` — a dictionary grown LZ78-style (each new phrase = longest known phrase +
  the next symbol) up to ``d`` entries; encoding is greedy longest-prefix matching,
  vectorised (match lengths for all positions at once, then the parse by pointer doubling).
* :class:`FixedBlocks` — blocks of ``r`` symbols.

:func:`unigram_cross_entropy` fits a unigram model over the tokens of a training stream and
returns its cross-entropy on a test stream **per symbol** (bits/character).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .core.ensemble import Ensemble
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import Transformer, TransformerConfig, unchecked_inputs
from .core.runtime import Sizes
from .core.training import TrainConfig, train
from .core.validate import check_choice, check_float, check_int
from .sources.markov import (
    sample_switching,
    stationary_distribution,
    switching_entropy_rate,
    switching_matrix,
    switching_unigram_entropy,
)

__all__ = [
    "BPE",
    "LZW",
    "FixedBlocks",
    "unigram_cross_entropy",
    "token_lengths",
    "encode_rows",
    "token_batch",
    "unigram_sweep",
    "switching_sampler",
    "block_unigram_entropy",
    "RaceResult",
    "race",
    "TRAP_CONDITIONS",
    "TRAP_EVAL_SCORES",
    "TrapResult",
    "run_trap",
    "trap_eval_loss",
    "TokenizationSetup",
    "SETUP",
    "STREAMS",
]

#: The random streams of the two experiments (logical seeds under the base seed):
#: ``weights`` s the initial weights of seed s's model (in :func:`race` and
#: :func:`run_trap`); in :func:`race`, ``race_heldout`` the BPE training stream and the
#: held-out sets, ``race_data`` s seed s's training batches; in :func:`run_trap`,
#: ``trap_heldout`` the held-out sequences, ``trap_data`` s seed s's training batches.
STREAMS = Streams(weights=0, race_heldout=0, race_data=100, trap_heldout=9, trap_data=10)


def _as_symbols(seq, alphabet: int, name: str = "sequence") -> np.ndarray:
    arr = np.asarray(seq.cpu() if hasattr(seq, "cpu") else seq)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer symbols, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= alphabet):
        raise ValueError(
            f"{name} holds symbols outside 0..{alphabet - 1}: {arr.min()}..{arr.max()}"
        )
    return arr


def _chunks(data, alphabet: int) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate a sequence or a list of sequences; ``ok[i]`` = pair (i, i+1) in one chunk."""
    if isinstance(data, (list, tuple)):
        parts = [_as_symbols(c, alphabet, "chunk") for c in data]
    else:
        parts = [_as_symbols(data, alphabet)]
    seq = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    ok = np.ones(max(seq.size - 1, 0), dtype=bool)
    ends = np.cumsum([p.size for p in parts], dtype=np.int64)[:-1]
    ok[ends[(ends > 0) & (ends < seq.size)] - 1] = False
    return seq, ok


class _Vocab:
    """Token id -> symbol string, with a vectorised decoder."""

    def __init__(self, tokens: list[np.ndarray], alphabet: int):
        self.alphabet = alphabet
        self.tokens = tokens

    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
        return len(self.tokens)

    def token_string(self, i: int) -> str:
        """Token ``i`` written as its symbols, e.g. ``'0110'``."""
        return "".join(map(str, self.tokens[i].tolist()))

    def decode(self, ids) -> np.ndarray:
        """The symbol sequence of a token sequence (inverse of ``encode``)."""
        ids = np.asarray(ids)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"ids must be integer token ids, got dtype {ids.dtype}")
        ids = ids.astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.tokens)):
            raise ValueError(f"token ids must lie in 0..{len(self.tokens) - 1}")
        lengths = np.array([t.size for t in self.tokens])
        flat = np.concatenate(self.tokens)
        starts = np.r_[0, np.cumsum(lengths)[:-1]]
        n = lengths[ids]
        offsets = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        return flat[np.repeat(starts[ids], n) + offsets]


# --------------------------------------------------------------------------------------- BPE
_BLOCK = 256  # counts per block of the block-maximum table
BPE_MAX_VOCAB = 4096  # BPE.train keeps a d x d table of pair counts (64 MB)


class _LinkedText:
    """A token sequence as a doubly linked list over its original positions, for BPE.

    ``nxt``/``prv`` link the live positions (-1 at the ends of chunks), so a merge only
    touches the positions of its pair and their neighbours.  ``where[t]`` holds the
    positions where token ``t`` was created (stale entries are dropped when read), so the
    occurrences of a pair come from the shorter of its two tokens' lists, not from a scan
    of the whole sequence."""

    def __init__(self, seq: np.ndarray, ok: np.ndarray, alphabet: int):
        n = seq.size
        pos = np.arange(n)
        self.tok = seq.copy()  # -1: merged away
        self.nxt = np.where(np.r_[ok, False], pos + 1, -1)  # (n,)
        self.prv = np.where(np.r_[False, ok], pos - 1, -1)  # (n,)
        self.where = [np.flatnonzero(seq == s) for s in range(alphabet)]

    def pairs(self, D: int) -> np.ndarray:
        """Codes a * D + b of every adjacent pair."""
        left = np.flatnonzero(self.nxt >= 0)
        return self.tok[left] * D + self.tok[self.nxt[left]]

    def _live(self, t: int) -> np.ndarray:
        cand = self.where[t]
        cand = cand[self.tok[cand] == t]
        self.where[t] = cand
        return cand

    def merge(self, a: int, b: int, new: int, D: int = 0):
        """Merge every non-overlapping (a, b), left to right, into token ``new``.

        With ``D``, returns the codes (a * D + b) of the pairs that disappear and of those
        that appear, for incremental counting."""
        tok, nxt, prv = self.tok, self.nxt, self.prv
        if a == b or self.where[a].size <= self.where[b].size:
            cand = self._live(a)
            r = nxt[cand]
            hits = cand[(r >= 0) & (tok[np.maximum(r, 0)] == b)]  # left positions, in order
        else:
            cand = self._live(b)
            lft = prv[cand]
            hits = lft[(lft >= 0) & (tok[np.maximum(lft, 0)] == a)]
        if a == b and hits.size > 1:  # runs a a a: merge at even offsets within each run
            run_start = np.ones(hits.size, dtype=bool)
            run_start[1:] = prv[hits[1:]] != hits[:-1]
            first = np.flatnonzero(run_start)[np.cumsum(run_start) - 1]
            hits = hits[(np.arange(hits.size) - first) % 2 == 0]
        self.where.append(hits)
        right = nxt[hits]
        after = nxt[right]
        if D:
            before_left = prv[hits]
            # hit i right after hit i - 1: its left neighbour is the right half of hit i - 1
            # before the merge, and hit i - 1 itself after it (counted once, as a hit)
            adj = np.zeros(hits.size, dtype=bool)
            adj[1:] = before_left[1:] == right[:-1]
            lefts = before_left[(before_left >= 0) & ~adj]
            old = np.concatenate([lefts, hits, right])  # pairs starting here change
            old = old[nxt[old] >= 0]
            minus = tok[old] * D + tok[nxt[old]]
        tok[hits] = new
        tok[right] = -1
        nxt[hits] = after
        prv[after[after >= 0]] = hits[after >= 0]
        if D:
            fresh = np.concatenate([lefts, hits])
            fresh = fresh[nxt[fresh] >= 0]
            return minus, tok[fresh] * D + tok[nxt[fresh]]
        return None

    def text(self) -> np.ndarray:
        """The current token sequence."""
        return self.tok[self.tok >= 0]


def _train_merges(seq: np.ndarray, ok: np.ndarray, alphabet: int, d: int, wanted: set):
    """The merges of BPE training, with pair counts updated incrementally.

    Counts live in a flat (d * d) table; each merge subtracts the pairs around its
    occurrences and adds the new ones (:class:`_LinkedText`).  The most frequent pair
    comes from a table of block maxima (blocks of ``_BLOCK`` counts, refreshed where counts
    changed); ties go to the smallest (a, b), as in the textbook loop (tested against it).
    Returns ``(merges, {size: sequence})`` for the sizes in ``wanted``."""
    text = _LinkedText(seq, ok, alphabet)
    D = d  # pair (a, b) -> a * D + b
    counts = np.zeros(-(-D * D // _BLOCK) * _BLOCK, dtype=np.int32)  # counts < 2**31
    counts[: D * D] = np.bincount(text.pairs(D), minlength=D * D)
    blocks = counts.reshape(-1, _BLOCK)  # (D * D / _BLOCK, _BLOCK)
    block_max = blocks.max(1)
    merges, seen = [], {}
    while alphabet + len(merges) < d:
        blk = int(np.argmax(block_max))
        best = blk * _BLOCK + int(np.argmax(blocks[blk]))  # first maximum: smallest (a, b)
        if counts[best] < 2:
            break
        a, b = divmod(best, D)
        new = alphabet + len(merges)
        minus, plus = text.merge(a, b, new, D)
        if minus.size + plus.size > D * D // 8:  # many changes: one dense count
            counts[: D * D] += (
                np.bincount(plus, minlength=D * D) - np.bincount(minus, minlength=D * D)
            ).astype(np.int32)
            block_max[:] = blocks.max(1)
        else:  # few: aggregate them by sorting
            codes = np.concatenate([minus, plus])
            order = np.argsort(codes, kind="stable")
            codes = codes[order]
            first = np.ones(codes.size, dtype=bool)
            first[1:] = codes[1:] != codes[:-1]
            starts = np.flatnonzero(first)
            sign = np.ones(codes.size, np.int32)
            sign[: minus.size] = -1
            changed = codes[starts]
            counts[changed] += np.add.reduceat(sign[order], starts)
            touched = changed // _BLOCK  # sorted
            touched = touched[np.flatnonzero(np.diff(touched, prepend=-1))]
            block_max[touched] = blocks[touched].max(1)
        merges.append((a, b))
        if new + 1 in wanted:
            seen[new + 1] = text.text()
    return merges, seen


class BPE(_Vocab):
    """Byte-pair encoding over an alphabet of ``alphabet`` symbols (train with :meth:`train`)."""

    def __init__(self, alphabet: int, merges: Sequence[tuple[int, int]] = ()):
        self.merges = [tuple(map(int, m)) for m in merges]
        tokens = [np.array([s]) for s in range(alphabet)]
        for a, b in self.merges:
            tokens.append(np.concatenate([tokens[a], tokens[b]]))
        super().__init__(tokens, alphabet)

    @classmethod
    def train(cls, data, d: int, alphabet: int = 2, *, snapshots: Sequence[int] = ()):
        """Learn merges until the vocabulary has ``d`` tokens (or no pair repeats).

        ``data`` is a symbol sequence or a list of chunks.  With ``snapshots`` (vocabulary
        sizes), also returns ``{size: encoded training data}`` as it was at each size.
        """
        alphabet = check_int("alphabet", alphabet, minimum=2)
        d = check_int("d", d, minimum=alphabet)
        if d > BPE_MAX_VOCAB:
            raise ValueError(
                f"d must be <= {BPE_MAX_VOCAB} (BPE.train keeps a d x d table of "
                f"pair counts), got {d}"
            )
        if len(snapshots) and not all(isinstance(s, (int, np.integer)) for s in snapshots):
            raise TypeError(f"snapshots must be vocabulary sizes (ints), got {list(snapshots)}")
        seq, ok = _chunks(data, alphabet)
        wanted = set(snapshots)
        merges, seen = [], {}
        if seq.size > 1:
            merges, seen = _train_merges(seq, ok, alphabet, d, wanted)
        if alphabet in wanted:
            seen[alphabet] = seq
        bpe = cls(alphabet, merges)
        return (bpe, seen) if snapshots else bpe

    def truncate(self, d: int) -> BPE:
        """The tokenizer with only the first ``d - alphabet`` merges (a smaller dictionary)."""
        d = check_int("d", d, minimum=self.alphabet)
        return BPE(self.alphabet, self.merges[: d - self.alphabet])

    def encode(self, data, *, snapshots: Sequence[int] = ()):
        """Token ids of a sequence (or of a list of chunks, concatenated).

        With ``snapshots`` (vocabulary sizes), returns ``{size: ids}`` for each size instead,
        in one pass over the merges.
        """
        seq, ok = _chunks(data, self.alphabet)
        wanted, out = set(snapshots), {}
        if self.alphabet in wanted:
            out[self.alphabet] = seq
        if seq.size > 1 and self.merges:
            text = _LinkedText(seq, ok, self.alphabet)
            for i, (a, b) in enumerate(self.merges):
                text.merge(a, b, self.alphabet + i)
                if self.alphabet + i + 1 in wanted:
                    out[self.alphabet + i + 1] = text.text()
            seq = text.text()
        else:
            for i in range(len(self.merges)):
                if self.alphabet + i + 1 in wanted:
                    out[self.alphabet + i + 1] = seq
        if snapshots:
            missing = wanted - set(out)
            if missing:
                raise ValueError(
                    f"no merges for sizes {sorted(missing)}; this BPE has {self.vocab_size} tokens"
                )
            return out
        return seq


# --------------------------------------------------------------------------------------- LZW
class LZW(_Vocab):
    """A phrase dictionary grown LZ78-style; greedy longest-prefix encoding."""

    @classmethod
    def train(cls, data, d: int, alphabet: int = 2, *, partial: bool = False) -> LZW:
        """Parse ``data`` LZ78-style, adding one phrase per step, until ``d`` entries.

        If the parse reaches the end of ``data`` first, the dictionary cannot have ``d``
        entries: a ValueError says how many the data fill, unless ``partial=True``, which
        returns the smaller dictionary (its ``vocab_size`` tells how large)."""
        alphabet = check_int("alphabet", alphabet, minimum=2)
        d = check_int("d", d, minimum=alphabet)
        seq = _as_symbols(data, alphabet).tolist()
        phrases: dict[tuple, int] = {(s,): s for s in range(alphabet)}
        i, n = 0, len(seq)
        # The parse only runs until the dictionary is full: about d phrases, so this loop
        # touches roughly d * (mean phrase length) symbols, not the whole stream.
        while len(phrases) < d and i < n:
            j = i + 1
            while j < n and tuple(seq[i : j + 1]) in phrases:
                j += 1
            if j >= n:
                break
            phrases[tuple(seq[i : j + 1])] = len(phrases)
            i = j + 1
        if len(phrases) < d and not partial:
            raise ValueError(
                f"d={d} is more than the data can fill: the LZ78 parse of these "
                f"{n:,} symbols ends with {len(phrases)} entries; use a smaller "
                "d, more data, or partial=True"
            )
        tokens = [None] * len(phrases)
        for phrase, idx in phrases.items():
            tokens[idx] = np.array(phrase)
        return cls(tokens, alphabet)

    def truncate(self, d: int) -> LZW:
        """The dictionary as it was when it had ``d`` entries (still prefix-closed)."""
        d = check_int("d", d, minimum=self.alphabet)
        return LZW(self.tokens[:d], self.alphabet)

    def encode(self, data) -> np.ndarray:
        """Greedy longest-prefix parse, vectorised over positions."""
        seq = _as_symbols(data, self.alphabet)
        n, A = seq.size, self.alphabet
        if n == 0:
            return np.zeros(0, np.int64)
        # the dictionary as a trie over token ids (it is prefix-closed): child[t, s] is the
        # token that extends token t by symbol s, or -1
        index = {tuple(t.tolist()): idx for idx, t in enumerate(self.tokens)}
        child = np.full((len(self.tokens), A), -1, dtype=np.int64)
        for phrase, idx in index.items():
            parent = index.get(phrase[:-1]) if len(phrase) > 1 else None
            if parent is not None:
                child[parent, phrase[-1]] = idx
        single = np.array([index.get((s,), -1) for s in range(A)], dtype=np.int64)
        if (single < 0).any():
            raise ValueError("the dictionary must hold every single symbol as a token")
        # longest match at every position: extend all still-matching windows by one symbol
        match_len = np.ones(n, dtype=np.int64)
        token = single[seq]  # id of the longest match found so far
        active = np.arange(n)
        length = 1
        longest = max(t.size for t in self.tokens)
        while length < longest:
            length += 1
            active = active[active + length <= n]
            extended = child[token[active], seq[active + length - 1]]
            keep = extended >= 0
            active = active[keep]
            if active.size == 0:
                break
            token[active] = extended[keep]
            match_len[active] = length
        # the greedy parse 0, nxt(0), nxt(nxt(0)), ... by doubling: after round k, `path`
        # holds the first 2^k positions of the chain in order and `jump` jumps 2^k tokens
        jump = np.r_[np.minimum(np.arange(n) + match_len, n), n]  # n: absorbing end
        path = np.array([0])
        while True:
            more = jump[path]
            more = more[more < n]
            if more.size == 0:
                break
            path = np.r_[path, more]
            jump = jump[jump]
        return token[path]


# ------------------------------------------------------------------------------ fixed blocks
class FixedBlocks(_Vocab):
    """Blocks of ``r`` symbols (the last block may be shorter, with tokens of its own)."""

    def __init__(self, r: int, alphabet: int = 2):
        self.r = check_int("r", r, minimum=1)
        alphabet = check_int("alphabet", alphabet, minimum=2)
        if alphabet**r > 2**16:
            raise ValueError(
                f"FixedBlocks(r={r}, alphabet={alphabet}) would have "
                f"{alphabet**r:,} tokens; at most 2**16 = 65,536 are allowed"
            )
        tokens = []
        for length in range(r, 0, -1):  # full blocks get ids 0 .. A^r - 1
            for code in range(alphabet**length):
                digits = [(code // alphabet ** (length - 1 - j)) % alphabet for j in range(length)]
                tokens.append(np.array(digits))
        super().__init__(tokens, alphabet)

    @property
    def dictionary_size(self) -> int:
        """A^r: the number of full-block tokens (what the chapter calls d)."""
        return self.alphabet**self.r

    def encode(self, data) -> np.ndarray:
        seq = _as_symbols(data, self.alphabet)
        A, r = self.alphabet, self.r
        m = seq.size // r
        weights = A ** np.arange(r - 1, -1, -1)
        ids = (seq[: m * r].reshape(m, r) * weights).sum(1)
        tail = seq[m * r :]
        if tail.size:
            offset = sum(A**length for length in range(r, tail.size, -1))
            tail_code = int((tail * A ** np.arange(tail.size - 1, -1, -1)).sum())
            ids = np.r_[ids, offset + tail_code]
        return ids.astype(np.int64)


# ------------------------------------------------------------------------------- evaluation
def token_lengths(tokenizer: _Vocab) -> np.ndarray:
    """Length (in symbols) of every token of a tokenizer's vocabulary."""
    return np.array([t.size for t in tokenizer.tokens])


def encode_rows(tokenizer: _Vocab, rows) -> list[np.ndarray]:
    """Token ids of each row of a (B, S) symbol array; BPE encodes all rows in one pass."""
    rows = np.asarray(rows.cpu() if hasattr(rows, "cpu") else rows)
    if rows.ndim != 2:
        raise ValueError(f"rows must have shape (batch, symbols), got {rows.shape}")
    if not isinstance(tokenizer, BPE):
        return [tokenizer.encode(r) for r in rows]
    ids = tokenizer.encode(list(rows))
    ends = np.cumsum(token_lengths(tokenizer)[ids])  # symbol end of each token
    cuts = np.searchsorted(ends, np.arange(1, rows.shape[0]) * rows.shape[1], side="right")
    return np.split(ids, cuts)


def token_batch(tokenizer: _Vocab, rows, n_tokens: int, ignore_index: int = -100):
    """Next-token training batch over tokens from (B, S) symbol rows.

    Returns ``(inputs, targets, symbols)``: token ids (B, n_tokens), the next tokens
    (B, n_tokens; ``ignore_index`` where a row ran out of tokens) and the number of
    symbols each target token stands for (0 where ignored) — to report loss per symbol.
    """
    n_tokens = check_int("n_tokens", n_tokens, minimum=1)
    encoded = encode_rows(tokenizer, rows)
    lengths = token_lengths(tokenizer)
    B = len(encoded)
    ids = np.full((B, n_tokens + 1), ignore_index, dtype=np.int64)
    for b, row in enumerate(encoded):  # B rows, not a loop over tokens
        row = row[: n_tokens + 1]
        ids[b, : row.size] = row
    inputs = np.where(ids[:, :-1] == ignore_index, 0, ids[:, :-1])
    targets = ids[:, 1:]
    symbols = np.where(targets == ignore_index, 0, lengths[np.maximum(targets, 0)])
    return (torch.from_numpy(inputs), torch.from_numpy(targets), torch.from_numpy(symbols))


def unigram_cross_entropy(
    train_ids, test_ids, vocab_size: int, n_test_symbols: int, smoothing: float = 0.5
) -> float:
    """Bits per **symbol** of a unigram model over tokens, fitted on ``train_ids``.

    Token probabilities are add-``smoothing`` estimates over the whole vocabulary; the
    total code length of ``test_ids`` is divided by the number of symbols they encode.
    """
    vocab_size = check_int("vocab_size", vocab_size, minimum=1)
    n_test_symbols = check_int("n_test_symbols", n_test_symbols, minimum=1)
    smoothing = check_float("smoothing", smoothing, low=0.0)
    train_ids, test_ids = np.asarray(train_ids), np.asarray(test_ids)
    for name, ids in (("train_ids", train_ids), ("test_ids", test_ids)):
        if ids.size and (
            not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= vocab_size
        ):
            raise ValueError(f"{name} must be integer token ids in 0..{vocab_size - 1}")
    counts = np.bincount(train_ids.ravel(), minlength=vocab_size).astype(float) + smoothing
    logp = np.log2(counts / counts.sum())
    return float(-logp[test_ids].sum() / n_test_symbols)


def block_unigram_entropy(p: float, q: float, order: int, r, base: float = 2.0):
    """Exact cross-entropy per symbol of the best unigram model over blocks of ``r`` bits.

    For the stationary m-th order switching source (m = ``order``) a block of r bits holds
    ``n_j = ceil((r - j) / m)`` bits of interleaved chain j (j < min(r, m)); each chain's
    first bit costs h(pi_1), each later one the entropy rate H, so the block entropy is
    ``min(r, m) h(pi_1) + max(r - m, 0) H`` and, per symbol,
    ``H + min(r, m) (h(pi_1) - H) / r`` (= h(pi_1) for r <= m, H + m (h(pi_1) - H) / r for
    r >= m).  ``r`` may be an int or an array of ints (vectorised).
    """
    k = check_int("order", order, minimum=1)
    r_arr = np.asarray(r)
    if r_arr.size == 0 or not np.issubdtype(r_arr.dtype, np.integer):
        raise TypeError(f"r must be an int or an array of ints, got {r!r}")
    if r_arr.min() < 1:
        raise ValueError(f"r must be >= 1, got {r_arr.min()}")
    H = switching_entropy_rate(p, q, base)
    U = switching_unigram_entropy(p, q, base)
    out = H + np.minimum(r_arr, k) * (U - H) / r_arr
    return float(out) if out.ndim == 0 else out


TOKENIZERS = ("BPE", "LZW", "blocks")


def unigram_sweep(
    train,
    test,
    dictionary_sizes: Sequence[int],
    tokenizers: Sequence[str] = TOKENIZERS,
    alphabet: int = 2,
) -> list[dict]:
    """Bits per symbol of a unigram model over tokens, for each tokenizer and size d.

    BPE is trained once at the largest d (smaller dictionaries are prefixes of its merges,
    read off in one encoding pass); LZW likewise (its dictionary at size d is the first d
    phrases); fixed blocks use r = log_A(d) for the sizes that are powers of the alphabet.
    Returns rows ``{"tokenizer", "d", "bits_per_symbol", "mean_token_length"}``.
    """
    train = _as_symbols(train, alphabet, "train")
    test = _as_symbols(test, alphabet, "test")
    sizes = sorted(check_int("dictionary size", d, minimum=alphabet) for d in dictionary_sizes)
    for name in tokenizers:
        check_choice("tokenizer", name, TOKENIZERS)
    rows = []

    def add(name, d, train_ids, test_ids, vocab_size):
        rows.append(
            {
                "tokenizer": name,
                "d": d,
                "bits_per_symbol": unigram_cross_entropy(
                    train_ids, test_ids, vocab_size, test.size
                ),
                "mean_token_length": test.size / max(test_ids.size, 1),
            }
        )

    if "BPE" in tokenizers:
        bpe, seen = BPE.train(train, sizes[-1], alphabet, snapshots=sizes)
        enc = bpe.encode(test, snapshots=[d for d in sizes if d in seen])
        for d in sizes:
            if d in seen:
                add("BPE", d, seen[d], enc[d], d)
    if "LZW" in tokenizers:
        lzw = LZW.train(train, sizes[-1], alphabet, partial=True)  # rows for sizes it fills
        for d in sizes:
            if d <= lzw.vocab_size:
                z = lzw.truncate(d)
                add("LZW", d, z.encode(train), z.encode(test), d)
    if "blocks" in tokenizers:
        for d in sizes:
            r = round(np.log(d) / np.log(alphabet))
            if alphabet**r == d:
                blocks = FixedBlocks(r, alphabet)
                add("blocks", d, blocks.encode(train), blocks.encode(test), blocks.vocab_size)
    return rows


def switching_sampler(batch: int, T: int, p: float, q: float, *, order: int = 1):
    """``sample(generator)``: the same draws as ``markov.sample_switching(batch, T, p, q,
    order=order, generator=generator)``, with the transition matrices, their stationary
    distribution and cumulative rows computed and checked once (a training loop samples
    thousands of small batches; a draw skips ``sample_chains``' checks, which read values
    back from the generator's device and so make the host wait for a GPU at every draw);
    the batch is drawn on the generator's device."""
    batch = check_int("batch", batch, minimum=1)
    T = check_int("T", T, minimum=1)
    k = check_int("order", order, minimum=1)
    P = switching_matrix(p, q).to(torch.float32).expand(batch * k, 2, 2).contiguous()
    pi = stationary_distribution(P)
    n = -(-T // k)  # ceil(T / k) per chain
    cdf = P.to(torch.float64).cumsum(-1)  # (batch * k, 2, 2)
    cdf[..., -1] = 1.0 + 1e-9  # as markov.sample_chains: guard rounding

    on_device = {}  # device -> (pi, cdf) there: draw where g lives

    def sample(generator=None):
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        dev = generator.device if generator is not None else P.device
        if dev not in on_device:
            on_device[dev] = (pi.to(dev), cdf.to(dev))
        pi_d, cdf_d = on_device[dev]
        start = torch.multinomial(pi_d, 1, generator=generator)[:, 0]  # (batch * k,)
        chains = _chains_from(cdf_d, start, n, generator)  # (batch * k, n)
        return chains.view(batch, k, n).transpose(1, 2).reshape(batch, n * k)[:, :T].contiguous()

    return sample


def _chains_from(cdf, start, T: int, generator):
    """``markov.sample_chains(P, T, start=start, generator=generator)`` for checked inputs,
    from the cumulative rows ``cdf`` of ``P`` (float64, last column ``1 + 1e-9``): the same
    uniforms and the same doubling, so the same draws, without the checks that read values
    back from the device."""
    B, k, _ = cdf.shape
    if T == 1:
        return start[:, None].clone()
    u = torch.rand(
        B, T - 1, 1, 1, generator=generator, dtype=torch.float64, device=cdf.device
    )  # one per step
    maps = (cdf[:, None] <= u).sum(-1).clamp_max(k - 1)  # (B, T-1, k)
    shift = 1
    while shift < T - 1:  # prefix compositions by doubling
        earlier = maps[:, :-shift]
        later = maps[:, shift:]
        maps = torch.cat([maps[:, :shift], later.gather(2, earlier)], dim=1)
        shift *= 2
    rest = maps.gather(2, start[:, None, None].expand(B, T - 1, 1))[..., 0]  # (B, T-1)
    return torch.cat([start[:, None], rest], dim=1)


@dataclass(frozen=True)
class TokenizationSetup:
    """Sizes of the tokenization chapter's experiments."""

    n_symbols: int = 1_000_000  # training stream = test stream length (unigram sweep)
    n_short: int = 100_000  # the short training stream (large dictionaries overfit)
    dictionary_sizes: tuple = (4, 16, 64, 256, 1024)
    trap_steps: int = 2500  # 1-layer tied model: long enough to see it escape
    trap_seeds: tuple = (0, 1, 2)  # seeds of every condition of the trap experiment
    control_steps: int = 300  # the runs that are not trapped (near H by then)
    trap_length: int = 64  # sequence length of the trap experiment
    lm_steps: int = 100  # characters vs tokens (the early race, 3 seeds each)
    race_seeds: tuple = (0, 1, 2)
    char_length: int = 256  # characters per training sequence
    token_length: int = 96  # BPE tokens per training sequence
    batch_size: int = 32  # sequences per training step (trap and race)

    def __post_init__(self) -> None:
        for name in (
            "n_symbols",
            "n_short",
            "trap_steps",
            "control_steps",
            "lm_steps",
            "char_length",
            "token_length",
            "batch_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_int("trap_length", self.trap_length, minimum=2)
        for name in ("dictionary_sizes", "trap_seeds", "race_seeds"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value:
                raise TypeError(f"{name} must be a non-empty tuple, got {value!r}")
        for d in self.dictionary_sizes:
            check_int("dictionary size", d, minimum=2)
        for name in ("trap_seeds", "race_seeds"):
            for s in getattr(self, name):
                check_int(f"{name} entry", s, minimum=0)


#: CPU default and the FULL=1 (GPU) sizes of the tokenization chapter.  The trap uses
#: sequences of N = 1024 symbols, the length of Makkuva et al. (Sec. 3.1); the race's
#: sizes are not the paper's (Rajaraman et al. state none we could check): five seeds as
#: in the archived race, 5,000 steps.
SETUP = Sizes(
    cpu=TokenizationSetup(),
    full=TokenizationSetup(
        n_symbols=10_000_000,
        trap_steps=10_000,
        trap_seeds=(0, 1, 2, 3),
        trap_length=1024,
        lm_steps=5000,
        race_seeds=(0, 1, 2, 3, 4),
    ),
)


@dataclass
class RaceResult(RunInfo):
    """Characters versus tokens: one History per seed and kind, plus what the chapter plots
    (``seconds``: the time of all the training loops, ``device``: where the transformers
    trained)."""

    bpe: BPE  # the race's BPE tokenizer (trained on one 10^6-bit stream)
    histories: dict  # kind -> [History per seed]; metrics "bits/char", "seconds"
    chars_seen: dict  # kind -> [(steps + 1,) cumulative target characters per seed]
    unigram_bits: float  # unigram model over the BPE tokens on the held-out targets
    seeds: tuple  # the race's seeds (``setup.race_seeds`` unless overridden)


RACE_KINDS = ("characters", "tokens")


def _race_held_out(setup: TokenizationSetup, ctx: Experiment, sample: dict, d: int):
    """The race's tokenizer, its unigram baseline and one held-out evaluation per kind, all
    drawn from stream ``race_heldout`` (on the CPU): ``(bpe, unigram_bits, {kind: eval})``
    where ``eval(model)`` is the held-out loss in bits per character."""
    gen = ctx.generator("race_heldout", device="cpu")
    train_x = sample_switching(1, setup.n_symbols, **sample, generator=gen)[0]
    bpe, seen_train = BPE.train(train_x, d, snapshots=[d])
    held_chars = sample_switching(64, setup.char_length + 1, **sample, generator=gen)
    # rows of 700 characters give at least token_length + 1 BPE-64 tokens
    held_in, held_tgt, held_sym = token_batch(
        bpe, sample_switching(128, 700, **sample, generator=gen), setup.token_length
    )
    counts = np.bincount(seen_train[d], minlength=bpe.vocab_size) + 0.5
    logq = np.log2(counts / counts.sum())
    tgt = held_tgt.numpy()
    unigram_bits = float(-logq[tgt[tgt >= 0]].sum() / held_sym.sum().item())
    n_held_symbols = held_sym.sum().item()
    held_chars, held_in, held_tgt = (t.to(ctx.device) for t in (held_chars, held_in, held_tgt))

    def char_eval(m):
        ce = torch.nn.functional.cross_entropy(
            m(held_chars[:, :-1]).flatten(0, 1), held_chars[:, 1:].flatten()
        )
        return ce.item() / math.log(2)

    def token_eval(m):
        ce = torch.nn.functional.cross_entropy(
            m(held_in).flatten(0, 1), held_tgt.flatten(), ignore_index=-100, reduction="sum"
        )
        return ce.item() / n_held_symbols / math.log(2)

    return bpe, unigram_bits, {"characters": char_eval, "tokens": token_eval}


def _race_one(
    kind: str,
    s: int,
    setup: TokenizationSetup,
    ctx: Experiment,
    rows,
    bpe: BPE,
    d: int,
    evaluate,
    steps: int,
    eval_every: int,
):
    """Train seed ``s`` of ``kind`` (weights ``weights`` s, batches ``race_data`` s drawn by
    ``rows`` on the CPU; a vocabulary of ``d`` ids for tokens): ``(History, (steps + 1,)
    cumulative target characters)``."""
    vocab, T = (2, setup.char_length) if kind == "characters" else (d, setup.token_length)
    with ctx.seeded("weights", s):
        model = Transformer(
            TransformerConfig(vocab_size=vocab, max_len=T, n_layers=2, n_heads=2, d_model=32)
        )
    model = model.to(ctx.device)
    data, seen = ctx.generator("race_data", s, device="cpu"), [0]

    def batch(step):
        if kind == "characters":
            x = rows(data)
            seen.append(x.shape[0] * (x.shape[1] - 1))
            return x[:, :-1], x[:, 1:]
        inputs, targets, symbols = token_batch(bpe, rows(data), setup.token_length)
        seen.append(int(symbols.sum()))
        return inputs, targets

    with ctx.timer() as t:
        history = train(
            model,
            batch,
            TrainConfig(steps=steps, eval_every=eval_every),
            eval_fn=lambda m, step: {"bits/char": evaluate(m), "seconds": t.seconds},
            desc=f"{kind}, seed {s}",
            progress=ctx.progress,
        )
    return history, np.cumsum(seen)


@experiment(TokenizationSetup, STREAMS)
def race(
    setup: TokenizationSetup,
    ctx: Experiment,
    *,
    steps: int | None = None,
    seeds=None,
    kinds: Sequence[str] = RACE_KINDS,
    order: int = 4,
    p: float = 0.8,
    q: float = 0.8,
    d: int = 64,
    eval_every: int = 25,
) -> RaceResult:
    """Train the same 2-layer transformer on characters and on BPE-``d`` tokens.

    One run per race seed ``s`` (``setup.race_seeds``, or ``seeds``): weights from stream
    ``weights`` s, training batches from ``race_data`` s; held-out loss per character every
    ``eval_every`` steps.  The tokenizer and the held-out sets come from ``race_heldout``;
    every stream is under the base seed ``ctx.seed``.  With
    the constant learning rate the first N steps of a longer run are the N-step run.
    ``ctx.device`` is where the models train: the held-out sets are moved
    there once, and the training batches, drawn on the CPU (BPE encodes with NumPy), are
    moved over at each step.
    """
    steps = check_int("steps", setup.lm_steps if steps is None else steps, minimum=1)
    seeds = tuple(setup.race_seeds if seeds is None else seeds)
    for s in seeds:
        check_int("race seed", s, minimum=0)
    for kind in kinds:
        check_choice("kind", kind, RACE_KINDS)
    sample = dict(p=p, q=q, order=order)
    bpe, unigram_bits, evals = _race_held_out(setup, ctx, sample, d)
    rows = {
        "characters": switching_sampler(setup.batch_size, setup.char_length + 1, **sample),
        "tokens": switching_sampler(setup.batch_size, 700, **sample),
    }
    histories, chars_seen, seconds = {}, {}, 0.0
    for kind in kinds:
        histories[kind], chars_seen[kind] = [], []
        for s in seeds:
            history, seen = _race_one(
                kind, s, setup, ctx, rows[kind], bpe, d, evals[kind], steps, eval_every
            )
            seconds += history.seconds
            histories[kind].append(history)
            chars_seen[kind].append(seen)
    return RaceResult(
        **ctx.header(setup, seconds),
        bpe=bpe,
        histories=histories,
        chars_seen=chars_seen,
        unigram_bits=unigram_bits,
        seeds=seeds,
    )


#: the unigram-trap conditions of :func:`run_trap`: label -> (p, q, tied embeddings, which
#: step budget of the setup: "trap_steps" for the trapped run, "control_steps" otherwise)
TRAP_CONDITIONS = {
    "p+q>1, tied": (0.5, 0.8, True, "trap_steps"),
    "p+q<1, tied": (0.2, 0.3, True, "control_steps"),
    "p+q>1, untied": (0.5, 0.8, False, "control_steps"),
}


#: most attention scores (members x sequences x T x T) one chunk of :func:`trap_eval_loss`
#: holds: 2**28 floats (1 GiB in fp32), 64 sequences of 1024 symbols for 4 members
TRAP_EVAL_SCORES = 2**28


def trap_eval_loss(ensemble, held_out, chunk: int | None = None) -> list:
    """Each member's mean next-symbol cross-entropy (nats) on ``held_out`` (B, T + 1): one
    float per member of ``ensemble`` (an :class:`~seqtheory.core.ensemble.Ensemble`).

    The sequences go through the models ``chunk`` at a time (default: as many as keep a
    batched program's attention scores, members x chunk x T x T, within
    :data:`TRAP_EVAL_SCORES`; all of them at the CPU sizes); the logits are put back
    together before the one loss per member, so any chunk size gives the loss of the whole
    batch at once (the same bits wherever the model gives each sequence the same logits in
    any batch, as on a CPU), and the losses come to the host in one copy.
    """
    if not isinstance(ensemble, Ensemble):
        raise TypeError(f"ensemble must be an Ensemble, got {type(ensemble).__name__}")
    if not isinstance(held_out, torch.Tensor):
        raise TypeError(f"held_out must be a torch.Tensor, got {type(held_out).__name__}")
    if held_out.dim() != 2 or held_out.shape[1] < 2:
        raise ValueError(
            "held_out must be a (B, T + 1) tensor of symbols with T >= 1, got "
            f"shape {tuple(held_out.shape)}"
        )
    T = held_out.shape[1] - 1
    chunk = (
        max(1, TRAP_EVAL_SCORES // (ensemble.num_members * T * T))
        if chunk is None
        else check_int("chunk", chunk, minimum=1)
    )
    with torch.no_grad():
        logits = torch.cat(
            [
                ensemble(part[:, :-1], shared=True)  # (M, b, T, V)
                for part in held_out.split(chunk)
            ],
            dim=1,
        )  # (M, B, T, V)
        target = held_out[:, 1:].flatten()
        losses = torch.stack(
            [torch.nn.functional.cross_entropy(member.flatten(0, 1), target) for member in logits]
        )  # (M,)
    return losses.tolist()


@dataclass
class TrapResult(RunInfo):
    """The unigram trap: one History per condition of :data:`TRAP_CONDITIONS`
    (``seconds``: the time of the training loops)."""

    histories: dict  # label -> History of the Ensemble of ``setup.trap_seeds``

    def losses(self, label: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, losses)`` of one condition: held-out loss (nats), (evals, seeds)."""
        check_choice("label", label, tuple(self.histories))
        return self.histories[label].metric("loss")


def _trap_condition(
    setup: TokenizationSetup, ctx: Experiment, p: float, q: float, tie: bool, budget: str
):
    """Train the seeds of ``setup.trap_seeds`` as one Ensemble on one condition of
    :data:`TRAP_CONDITIONS`; returns its History."""
    T = setup.trap_length
    model_cfg = TransformerConfig(
        vocab_size=2,
        max_len=T,
        n_layers=1,
        n_heads=1,
        d_model=8,
        attn_only=True,
        layer_norm=False,
        tie_weights=tie,
    )
    held_out = sample_switching(256, T + 1, p, q, generator=ctx.generator("trap_heldout"))

    def evaluate(ens, step):
        # the held-out set comes from the sampler: checked at the first evaluation only
        with unchecked_inputs() if step else contextlib.nullcontext():
            return {"loss": trap_eval_loss(ens, held_out)}

    sample = switching_sampler(setup.batch_size, T + 1, p, q)  # = sample_switching
    data = [ctx.generator("trap_data", s) for s in setup.trap_seeds]

    def batch(step):
        x = torch.stack([sample(g) for g in data])  # (seeds, B, T + 1)
        return x[..., :-1], x[..., 1:]

    ensemble = Ensemble(
        lambda: Transformer(model_cfg),
        seeds=tuple(ctx.logical("weights", s) for s in setup.trap_seeds),
        base=ctx.seed,
    ).to(ctx.device)
    return train(
        ensemble,
        batch,
        TrainConfig(steps=getattr(setup, budget), lr=1e-3, eval_every=50),
        eval_fn=evaluate,
        progress=ctx.progress,
        desc=f"p={p}, q={q}, tied={tie}, seeds {list(setup.trap_seeds)}",
    )


@experiment(TokenizationSetup, STREAMS)
def run_trap(setup: TokenizationSetup, ctx: Experiment) -> TrapResult:
    """Train a 1-layer attention-only transformer (d_model 8, no LayerNorm) on first-order
    switching chains under each condition of :data:`TRAP_CONDITIONS`.

    The seeds ``setup.trap_seeds`` train side by side as one batched program (an
    :class:`~seqtheory.core.ensemble.Ensemble`): under the base seed ``ctx.seed``, member ``s``
    has the weights of stream ``weights`` s and its own data stream ``trap_data`` s; the
    256 held-out sequences come from ``trap_heldout``.  Held-out loss every 50 steps
    (:func:`trap_eval_loss`, in chunks of sequences at the long lengths); models
    train on ``ctx.device``, where the held-out set and the batches are drawn
    (a GPU run draws other bits than a CPU run).
    """
    histories, seconds = {}, 0.0
    for label, (p, q, tie, budget) in TRAP_CONDITIONS.items():
        histories[label] = _trap_condition(setup, ctx, p, q, tie, budget)
        seconds += histories[label].seconds
    return TrapResult(**ctx.header(setup, seconds), histories=histories)

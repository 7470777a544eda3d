"""Tokenizer throughput: the book's BPE and LZW against HuggingFace ``tokenizers``.

Run:  python benchmarks/bench_tokenization.py [--n 1000000] [--chunk 1000]

Corpus: the 4th-order switching source (p = q = 0.8), n training and n test symbols.
Both BPE implementations see the same corpus cut into chunks of `chunk` symbols (one long
string makes `tokenizers` crawl), so they learn the same merges; the table reports
seconds for training and for encoding the test stream, at d = 64, 256, 1024, the ratio
(HF / ours, in the same run), and whether the two vocabularies are identical.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from seqtheory.sources.markov import sample_switching
from seqtheory.tokenization import BPE, LZW


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(0)
    train = sample_switching(1, args.n, 0.8, 0.8, order=4, generator=gen)[0].numpy()
    test = sample_switching(1, args.n, 0.8, 0.8, order=4, generator=gen)[0].numpy()
    cut = lambda x: [x[i : i + args.chunk] for i in range(0, x.size, args.chunk)]  # noqa: E731
    train_chunks, test_chunks = cut(train), cut(test)
    text = lambda chunks: ["".join(map(str, c.tolist())) for c in chunks]  # noqa: E731
    train_text, test_text = text(train_chunks), text(test_chunks)
    import tokenizers

    print(
        f"n = {args.n:,} symbols, chunks of {args.chunk}; seconds are medians of "
        f"{args.repeats} interleaved runs"
    )
    print(
        f"{'d':>5s} {'ours train':>11s} {'HF train':>9s} {'ratio':>6s} {'ours enc':>9s} "
        f"{'HF enc':>7s} {'ratio':>6s} {'same vocab':>10s} {'LZW train':>10s} {'LZW enc':>8s}"
    )
    for d in (64, 256, 1024):
        t = {k: [] for k in ("ours", "hf", "ours_enc", "hf_enc", "lzw", "lzw_enc")}
        for _ in range(args.repeats):
            bpe, s = timed(lambda d=d: BPE.train(train_chunks, d))
            t["ours"].append(s)
            ids, s = timed(lambda b=bpe: b.encode(test_chunks))
            t["ours_enc"].append(s)
            assert np.array_equal(bpe.decode(ids), test)
            hf = tokenizers.Tokenizer(tokenizers.models.BPE())
            trainer = tokenizers.trainers.BpeTrainer(
                vocab_size=d, initial_alphabet=["0", "1"], show_progress=False, special_tokens=[]
            )
            _, s = timed(lambda h=hf, tr=trainer: h.train_from_iterator(train_text, tr))
            t["hf"].append(s)
            _, s = timed(lambda h=hf: h.encode_batch(test_text))
            t["hf_enc"].append(s)
            lzw, s = timed(lambda d=d: LZW.train(train, d))
            t["lzw"].append(s)
            _, s = timed(lambda z=lzw: z.encode(test))
            t["lzw_enc"].append(s)
        same = {bpe.token_string(i) for i in range(bpe.vocab_size)} == set(hf.get_vocab())
        m = {k: float(np.median(v)) for k, v in t.items()}
        print(
            f"{d:5d} {m['ours']:10.3f}s {m['hf']:8.3f}s {m['hf'] / m['ours']:5.2f}x "
            f"{m['ours_enc']:8.3f}s {m['hf_enc']:6.3f}s {m['hf_enc'] / m['ours_enc']:5.2f}x "
            f"{'yes' if same else 'NO':>10s} {m['lzw']:9.3f}s {m['lzw_enc']:7.3f}s"
        )
    print("ratio = HF seconds / ours (> 1: ours faster); same vocab: identical token sets")


if __name__ == "__main__":
    main()

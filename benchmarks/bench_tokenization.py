"""Tokenizer throughput: the book's BPE and LZW against HuggingFace ``tokenizers``.

Run:  python benchmarks/bench_tokenization.py [--n 1000000] [--chunk 1000]

Corpus: the 4th-order switching source (p = q = 0.8), n training and n test symbols.
Both BPE implementations see the same corpus cut into chunks of `chunk` symbols (one long
string makes `tokenizers` crawl), so they learn the same merges; the table reports
symbols per second for training and for encoding the test stream, at d = 64, 256, 1024.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from seqtheory.markov import sample_switching
from seqtheory.tokenization import BPE, LZW


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(0)
    train = sample_switching(1, args.n, 0.8, 0.8, order=4, generator=gen)[0].numpy()
    test = sample_switching(1, args.n, 0.8, 0.8, order=4, generator=gen)[0].numpy()
    cut = lambda x: [x[i:i + args.chunk] for i in range(0, x.size, args.chunk)]  # noqa: E731
    train_chunks, test_chunks = cut(train), cut(test)
    text = lambda chunks: ["".join(map(str, c.tolist())) for c in chunks]  # noqa: E731
    train_text, test_text = text(train_chunks), text(test_chunks)
    try:
        import tokenizers
    except ImportError:
        tokenizers = None
    print(f"n = {args.n:,} symbols, chunks of {args.chunk}")
    print(f"{'tokenizer':28s} {'d':>5s} {'train symbols/s':>16s} {'encode symbols/s':>17s}")
    for d in (64, 256, 1024):
        bpe, t_train = timed(lambda d=d: BPE.train(train_chunks, d))
        ids, t_enc = timed(lambda b=bpe: b.encode(test_chunks))
        assert np.array_equal(bpe.decode(ids), test)
        print(f"{'seqtheory BPE':28s} {d:5d} {args.n / t_train:16,.0f} {args.n / t_enc:17,.0f}")
        if tokenizers is not None:
            hf = tokenizers.Tokenizer(tokenizers.models.BPE())
            trainer = tokenizers.trainers.BpeTrainer(
                vocab_size=d, initial_alphabet=["0", "1"], show_progress=False,
                special_tokens=[])
            _, t_train = timed(lambda h=hf, tr=trainer: h.train_from_iterator(train_text, tr))
            _, t_enc = timed(lambda h=hf: h.encode_batch(test_text))
            print(f"{'HuggingFace tokenizers BPE':28s} {d:5d} {args.n / t_train:16,.0f} "
                  f"{args.n / t_enc:17,.0f}")
        lzw, t_train = timed(lambda d=d: LZW.train(train, d))
        ids, t_enc = timed(lambda z=lzw: z.encode(test))
        print(f"{'seqtheory LZW':28s} {d:5d} {args.n / t_train:16,.0f} {args.n / t_enc:17,.0f}")


if __name__ == "__main__":
    main()

"""Unit tests for seqtheory.text: the shipped corpus, splits, training and activation ID."""
import hashlib
import json
from importlib import resources

import numpy as np
import pytest
import torch

from seqtheory.models import Transformer, TransformerConfig
from seqtheory.text import (
    CharCorpus,
    activation_dimension,
    hidden_states,
    load_shakespeare,
    train_char_model,
)


@pytest.fixture(scope="module")
def corpus():
    return CharCorpus(load_shakespeare())


def test_shipped_corpus_matches_its_record():
    text = load_shakespeare()
    meta = json.loads((resources.files("seqtheory") / "data" / "shakespeare.json").read_text())
    assert len(text) == meta["characters"] > 900_000
    assert hashlib.sha256(text.encode("ascii")).hexdigest() == meta["sha256"]
    assert "public domain" in meta["license"]


def test_corpus_round_trips_and_splits(corpus):
    assert corpus.decode(corpus.data[:500]) == corpus.text[:500]
    parts = [corpus.split(s) for s in ("train", "val", "test")]
    assert sum(len(p) for p in parts) == len(corpus.text)
    assert torch.equal(torch.cat(parts), corpus.data)
    assert len(parts[0]) == pytest.approx(0.9 * len(corpus.text), abs=2)


def test_windows_stay_inside_the_requested_prefix(corpus):
    w = corpus.windows("train", 200, 33, seed=1, limit=5000)
    assert w.shape == (200, 33)
    text = corpus.decode(corpus.split("train")[:5000])
    assert all(corpus.decode(row) in text for row in w[:20])
    assert torch.equal(w, corpus.windows("train", 200, 33, seed=1, limit=5000))


def test_corpus_rejects_bad_input(corpus):
    with pytest.raises(ValueError, match="at least 1,000"):
        CharCorpus("too short")
    with pytest.raises(ValueError):
        corpus.split("dev")
    with pytest.raises(ValueError, match="shorter"):
        corpus.windows("train", 2, 50, limit=20)


def test_training_beats_uniform_and_picks_best_checkpoint(corpus):
    model, res = train_char_model(corpus, 20_000, d_model=16, n_heads=2, context=16,
                                  steps=150, eval_every=50, progress=False)
    assert res["test_loss"] < np.log(corpus.vocab_size) - 0.5
    assert res["best_step"] in (0, 50, 100, 150)
    assert 0 < res["params"] < model.num_params()
    with pytest.raises(ValueError, match="exceeds"):
        train_char_model(corpus, 10**7, progress=False)


def test_hidden_states_and_activation_dimension(corpus):
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=corpus.vocab_size, max_len=32,
                                          d_model=16, n_heads=2))
    docs = corpus.windows("test", 10, 32)
    assert hidden_states(model, docs).shape == (320, 16)
    assert hidden_states(model, docs, layer=0, position=3).shape == (10, 16)
    with pytest.raises(ValueError, match="layer"):
        hidden_states(model, docs, layer=5)
    d = activation_dimension(model, corpus, n_docs=150, batch_size=1000)
    assert 1 < d < 16
    with pytest.raises(ValueError, match="doc_length"):
        activation_dimension(model, corpus, doc_length=64)

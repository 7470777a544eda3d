"""Unit tests for seqtheory.text: the shipped corpus, splits, training and activation ID."""

import hashlib
import json
from importlib import resources

import numpy as np
import pytest
import torch

from seqtheory.core.models import Transformer, TransformerConfig
from seqtheory.text import (
    STREAMS,
    CharCorpus,
    CharModelResult,
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
    res = train_char_model(
        corpus,
        20_000,
        d_model=16,
        n_heads=2,
        context=16,
        steps=150,
        eval_every=50,
        progress=False,
        device="cpu",
    )
    assert isinstance(res, CharModelResult) and res.device == "cpu" and res.seed == 0
    assert res.test_loss < np.log(corpus.vocab_size) - 0.5
    steps, val = res.history.metric("val loss")  # the checkpoint kept is the
    assert res.best_step == steps[int(np.argmin(val))]  # best validation step
    assert res.val_loss == pytest.approx(float(np.min(val)))
    assert 0 < res.params < res.model.num_params()
    assert not res.model.training
    with pytest.raises(ValueError, match="exceeds"):
        train_char_model(corpus, 10**7, progress=False)


def test_training_is_deterministic_and_leaves_the_global_rng_alone(corpus):
    state = torch.random.get_rng_state()
    kw = dict(
        d_model=8,
        n_heads=2,
        context=16,
        steps=20,
        eval_every=10,
        progress=False,
        seed=3,
        device="cpu",
    )
    a, b = train_char_model(corpus, 5000, **kw), train_char_model(corpus, 5000, **kw)
    assert torch.equal(state, torch.random.get_rng_state())
    assert a.test_loss == b.test_loss and a.best_step == b.best_step
    for (k, v), w in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(v, w), k


def test_streams_name_the_logical_seeds_of_a_char_model(corpus):
    # the initialisation is index seed, the training windows index seed * 100_003 + step
    assert [
        STREAMS.seed(name) for name in ("weights", "val_windows", "test_windows", "train_windows")
    ] == [0, 1, 2, 0]
    with pytest.raises(ValueError, match="seed"):
        train_char_model(corpus, 5000, seed=-1, progress=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_device_is_a_clear_error(corpus):
    with pytest.raises(ValueError, match="device"):
        train_char_model(corpus, 5000, context=16, steps=1, progress=False, device="cuda")


def test_hidden_states_and_activation_dimension(corpus):
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(vocab_size=corpus.vocab_size, max_len=32, d_model=16, n_heads=2)
    )
    docs = corpus.windows("test", 10, 32)
    assert hidden_states(model, docs).shape == (320, 16)
    assert hidden_states(model, docs, layer=0, position=3).shape == (10, 16)
    with pytest.raises(ValueError, match="layer"):
        hidden_states(model, docs, layer=5)
    d = activation_dimension(model, corpus, n_docs=150, batch_size=1000)
    assert 1 < d < 16
    with pytest.raises(ValueError, match="doc_length"):
        activation_dimension(model, corpus, doc_length=64)
    cos = activation_dimension(model, corpus, n_docs=150, batch_size=1000, metric="cosine")
    assert 0.5 < cos < d
    with pytest.raises(ValueError, match="metric"):
        activation_dimension(model, corpus, metric="angular")


def test_windows_are_cut_where_the_device_says(corpus):
    # an explicit device="cpu" gives the windows of the default call (the archived sweeps'
    # windows), a new device is refused by name
    a = corpus.windows("train", 5, 12, seed=3)
    b = corpus.windows("train", 5, 12, seed=3, device="cpu")
    assert torch.equal(a, b) and b.device.type == "cpu"
    with pytest.raises(ValueError, match="device"):
        corpus.windows("train", 5, 12, seed=3, device="tpu-ish")

"""Character-level language modelling on a small public-domain corpus.

* :func:`load_shakespeare` — seven tragedies (~1 MB of ASCII) shipped with the library;
  ``scripts/make_shakespeare_corpus.py`` rebuilds the file from its public source.
* :class:`CharCorpus` — a character vocabulary and a train / validation / test split
  (by position in the text, so held-out text is unseen), with random-window batches.
* :func:`train_char_model` — the shared transformer trained on the first ``n_train``
  characters, with the checkpoint chosen by validation loss (early stopping); returns a
  :class:`CharModelResult`.
* :func:`hidden_states`, :func:`activation_dimension` — a layer's activations on held-out
  "documents" (windows of at most 32 characters) and their intrinsic dimension: MLE with
  K = 20, averaged over batches of 3,600 points, as in Havrilla & Liao's released
  ``embeddings.py``; unlike it, every position of a short window (it takes 32 random
  positions of contexts of up to 1,024 tokens) and Euclidean distances by default (its
  ``--metric`` defaults to cosine).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import torch

from .core.experiment import Streams
from .core.models import Transformer, TransformerConfig
from .core.runtime import check_device, evaluating, to_numpy
from .core.seeds import make_generator, seeded
from .core.training import History, TrainConfig, copy_state, next_token_loss, train
from .core.validate import check_choice, check_float, check_int
from .sources.dimension import mle_dimension

__all__ = [
    "CharCorpus",
    "CharModelResult",
    "activation_dimension",
    "hidden_states",
    "load_shakespeare",
    "train_char_model",
    "STREAMS",
]

# The logical seeds of train_char_model (each under a base seed, see
# seqtheory.core.seeds.derive_seed): index ``seed`` of weights, index ``seed * 100_003 + step``
# of train_windows.
STREAMS = Streams(weights=0, val_windows=1, test_windows=2, train_windows=0)


def load_shakespeare() -> str:
    """The shipped corpus: seven Shakespeare tragedies, public domain (Project Gutenberg)."""
    return (resources.files("seqtheory") / "data" / "shakespeare.txt").read_text("ascii")


@dataclass
class CharCorpus:
    """Characters as tokens; the last ``held_out`` fraction of the text is split in half
    into validation (early stopping) and test (reported losses)."""

    text: str
    held_out: float = 0.1  # fraction of the text kept out of training
    vocab: list = field(init=False)  # sorted distinct characters
    data: torch.Tensor = field(init=False, repr=False)  # (len(text),) token ids

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or len(self.text) < 1000:
            raise ValueError("text must be a string of at least 1,000 characters")
        check_float("held_out", self.held_out, low=0.0, high=0.5, low_open=True)
        self.vocab = sorted(set(self.text))
        lookup = np.zeros(max(map(ord, self.vocab)) + 1, dtype=np.int64)
        lookup[[ord(c) for c in self.vocab]] = np.arange(len(self.vocab))
        codes = np.frombuffer(self.text.encode("utf-32-le"), dtype=np.uint32)
        self.data = torch.from_numpy(lookup[codes])
        cut = int(len(self.text) * (1 - self.held_out))
        mid = cut + (len(self.text) - cut) // 2
        self._splits = {
            "train": self.data[:cut],
            "val": self.data[cut:mid],
            "test": self.data[mid:],
        }

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def split(self, name: str) -> torch.Tensor:
        """Token ids of ``"train"``, ``"val"`` or ``"test"``."""
        return self._splits[check_choice("split", name, ("train", "val", "test"))]

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def windows(
        self,
        split: str,
        n: int,
        length: int,
        seed: int = 0,
        limit: int | None = None,
        device=None,
        *,
        base: int | None = None,
    ) -> torch.Tensor:
        """``n`` random windows (n, length) of the split (of its first ``limit`` tokens),
        cut on ``device`` (None: the CPU) with a generator there: ``seed`` is a logical seed
        under ``base`` (a GPU's generator draws other windows than the CPU's)."""
        device = check_device("device", device)
        ids = self._on(split, device)
        if limit is not None:
            ids = ids[: check_int("limit", limit, minimum=1)]
        length = check_int("length", length, minimum=1)
        if len(ids) <= length:
            raise ValueError(
                f"the {split} text ({len(ids)} characters) is shorter than a window of {length + 1}"
            )
        gen = make_generator(seed, device, base=base)  # logical seed under ``base``
        start = torch.randint(
            len(ids) - length + 1, (check_int("n", n, minimum=1),), generator=gen, device=device
        )
        return ids[start[:, None] + torch.arange(length, device=device)]  # (n, length)

    def _on(self, split: str, device: torch.device) -> torch.Tensor:
        """The split's token ids on ``device`` (copied there once)."""
        ids = self.split(split)
        if device.type == "cpu":
            return ids
        cache = self.__dict__.setdefault("_device_splits", {})
        if (split, device) not in cache:
            cache[(split, device)] = ids.to(device)
        return cache[(split, device)]


@dataclass
class CharModelResult:
    """A character model trained by :func:`train_char_model`, at its best checkpoint."""

    seed: int  # the (logical) seed: initialisation and batch order
    device: str
    seconds: float  # wall-clock time of the training loop
    model: Transformer  # weights of the best validation checkpoint, in eval mode
    test_loss: float  # nats per character on the test windows, at that checkpoint
    val_loss: float  # the best validation loss
    best_step: int  # the step of that checkpoint (0 = untrained)
    params: int  # non-embedding parameters
    history: History  # the training loop's record


def train_char_model(
    corpus: CharCorpus,
    n_train: int,
    *,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    context: int = 64,
    steps: int = 800,
    batch: int = 32,
    lr: float = 3e-3,
    eval_every: int = 100,
    n_eval: int = 64,
    seed: int = 0,
    device=None,
    progress: bool = True,
    base: int | None = None,
) -> CharModelResult:
    """Train the shared transformer on the first ``n_train`` training characters.

    AdamW with a short warm-up and cosine decay (:func:`seqtheory.core.training.train`); the
    checkpoint with the lowest loss on ``n_eval`` validation windows is kept.  Under
    ``base`` (None: the book's base seed; through :func:`~seqtheory.core.seeds.derive_seed`)
    ``seed`` is the index of the initialisation (stream ``weights``, built under
    :func:`~seqtheory.core.seeds.seeded` so torch's global random state is left as it was) and
    of the training windows (stream ``train_windows``, one index per seed and step); the
    validation and test windows are streams ``val_windows`` and ``test_windows``.  The
    model trains on ``device`` (None: the CPU); training windows are cut on ``device`` too
    (on a GPU its generator draws other windows than the CPU's).
    """
    n_train = check_int("n_train", n_train, minimum=context + 2)
    seed = check_int("seed", seed, minimum=0)
    device = check_device("device", device)
    if n_train > len(corpus.split("train")):
        raise ValueError(
            f"n_train={n_train} exceeds the {len(corpus.split('train'))} training characters"
        )
    config = TransformerConfig(
        vocab_size=corpus.vocab_size,
        max_len=context,
        n_layers=n_layers,
        n_heads=n_heads,
        d_model=d_model,
    )
    with seeded(STREAMS.seed("weights", seed), base=base):
        model = Transformer(config)
    model.to(device)
    eval_fn, best = _best_checkpoint(*_held_out_windows(corpus, n_eval, context + 1, device, base))
    batches = _train_windows(corpus, n_train, batch, context + 1, seed, device, base)
    schedule = TrainConfig(
        steps=steps, lr=lr, warmup=min(50, steps // 10), schedule="cosine", eval_every=eval_every
    )
    hist = train(
        model, batches, schedule, eval_fn=eval_fn, progress=progress, desc=f"n={n_train:,}"
    )
    return _char_result(model, best, hist, seed, device)


def _held_out_windows(
    corpus: CharCorpus, n: int, length: int, device: torch.device, base: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(val, test)``: ``n`` windows of ``length`` of each held-out split (streams
    ``val_windows`` and ``test_windows`` under ``base``), on ``device``."""
    val = corpus.windows("val", n, length, seed=STREAMS.seed("val_windows"), base=base)
    test = corpus.windows("test", n, length, seed=STREAMS.seed("test_windows"), base=base)
    return val.to(device), test.to(device)


def _train_windows(
    corpus: CharCorpus,
    n_train: int,
    batch: int,
    length: int,
    seed: int,
    device: torch.device,
    base: int | None,
):
    """``batch_fn(step)`` of :func:`train_char_model`: inputs and next-character targets of
    ``batch`` windows of ``length`` cut on ``device`` from the first ``n_train`` training
    characters (stream ``train_windows``, index ``seed * 100_003 + step``, under ``base``)."""

    def batch_fn(step: int):
        w = corpus.windows(
            "train",
            batch,
            length,
            seed=STREAMS.seed("train_windows", seed * 100_003 + step),
            limit=n_train,
            device=device,
            base=base,
        )  # (batch, T+1)
        return w[:, :-1], w[:, 1:]

    return batch_fn


def _char_result(
    model: Transformer, best: dict, hist: History, seed: int, device: torch.device
) -> CharModelResult:
    """The :class:`CharModelResult` of ``model`` restored to the ``best`` checkpoint."""
    model.load_state_dict(best["state"])
    model.eval()
    return CharModelResult(
        seed=seed,
        device=str(device),
        seconds=hist.seconds,
        model=model,
        test_loss=best["test_loss"],
        val_loss=best["val_loss"],
        best_step=best["best_step"],
        params=_non_embedding_params(model),
        history=hist,
    )


def _best_checkpoint(val: torch.Tensor, test: torch.Tensor) -> tuple:
    """``(eval_fn, best)``: each evaluation with a lower loss on the ``val`` windows than
    every earlier one records that loss, the test windows' loss, the step and a copy of the
    weights in ``best``."""
    best = {"val_loss": float("inf")}

    def eval_fn(m, step: int) -> dict:
        v = float(next_token_loss(m(val[:, :-1]), val[:, 1:]))
        if v < best["val_loss"]:
            t = float(next_token_loss(m(test[:, :-1]), test[:, 1:]))
            best.update(val_loss=v, test_loss=t, best_step=step, state=copy_state(m))
        return {"val loss": v}

    return eval_fn, best


def _non_embedding_params(model: Transformer) -> int:
    """Parameters of ``model`` less its token, unembedding and position weights."""
    emb = sum(p.numel() for p in (model.tok_emb.weight, model.unembed.weight))
    pos = model.pos_emb.weight.numel() if model.pos_emb is not None else 0
    return model.num_params() - emb - pos


def hidden_states(
    model: Transformer, windows: torch.Tensor, layer: int = -1, position: int | None = None
) -> np.ndarray:
    """Residual-stream activations after block ``layer`` (0 = embeddings, -1 = last block)
    on ``windows`` (n, T): all positions (n*T, C), or one ``position`` (n, C)."""
    device = next(model.parameters()).device
    with evaluating(model):
        _, cache = model(windows.to(device), return_cache=True)
    n_layers = len(cache.resid)
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"layer must be in {-n_layers}..{n_layers - 1}, got {layer}")
    h = cache.resid[layer]  # (n, T, C)
    if position is not None:
        if not 0 <= position < h.shape[1]:
            raise ValueError(f"position must be in 0..{h.shape[1] - 1}, got {position}")
        return to_numpy(h[:, position]).astype(np.float64)  # (n, C)
    return to_numpy(h.reshape(-1, h.shape[-1])).astype(np.float64)  # (n*T, C)


def activation_dimension(
    model: Transformer,
    corpus: CharCorpus,
    *,
    layer: int = -1,
    n_docs: int = 450,
    doc_length: int = 32,
    positions: Sequence[int] | None = None,
    K: int = 20,
    batch_size: int = 3600,
    seed: int = 0,
    metric: str = "euclidean",
) -> float:
    """Intrinsic dimension of a layer's activations on held-out text.

    ``n_docs`` test-set windows of ``doc_length`` (<= 32) characters are the documents;
    the activations of their tokens (only those at ``positions`` if given) are the
    points; the MLE estimate with ``K`` neighbours and distance ``metric``
    (``"euclidean"`` or ``"cosine"``, see :func:`~seqtheory.sources.dimension.mle_dimension`) is
    averaged over batches of ``batch_size`` points (one batch of all points if there are
    fewer).
    """
    doc_length = check_int("doc_length", doc_length, minimum=1)
    if doc_length > min(32, model.cfg.max_len):
        raise ValueError(f"doc_length must be <= {min(32, model.cfg.max_len)}, got {doc_length}")
    check_choice("metric", metric, ("euclidean", "cosine"))
    docs = corpus.windows("test", n_docs, doc_length, seed=seed)
    if positions is None:
        X = hidden_states(model, docs, layer)
    else:
        X = np.concatenate([hidden_states(model, docs, layer, p) for p in positions])
    bs = batch_size if len(X) >= 2 * batch_size else None
    return mle_dimension(X, K, batch_size=bs, seed=seed, metric=metric)

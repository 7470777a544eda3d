"""seqtheory: the library behind the executable book on how transformers learn structure."""

from .book import session
from .book.claims import verify
from .book.notebook import glue
from .core.attention import attention_to_offset
from .core.ensemble import Ensemble, ensemble_loss
from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.models import ForwardCache, Transformer, TransformerConfig
from .core.runtime import (
    Sizes,
    get_device,
    is_full,
    progress_bar,
    run_device,
    run_mode,
    setup_threads,
)
from .core.seeds import base_seed, derive_seed, make_generator, make_rng, seed_everything, seeded
from .core.training import History, TrainConfig, train

__version__ = "0.1.0"

session.configure()  # the book's progress line and smoke runs, from its environment

__all__ = [
    "Ensemble",
    "Experiment",
    "RunInfo",
    "Streams",
    "experiment",
    "ForwardCache",
    "History",
    "Sizes",
    "TrainConfig",
    "Transformer",
    "TransformerConfig",
    "attention_to_offset",
    "base_seed",
    "derive_seed",
    "ensemble_loss",
    "make_generator",
    "make_rng",
    "seeded",
    "get_device",
    "glue",
    "is_full",
    "progress_bar",
    "run_device",
    "run_mode",
    "seed_everything",
    "setup_threads",
    "train",
    "verify",
]

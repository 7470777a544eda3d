"""seqtheory: the library behind the executable book on how transformers learn structure."""
from .attention import attention_to_offset
from .claims import verify
from .ensemble import Ensemble, ensemble_loss
from .models import ForwardCache, Transformer, TransformerConfig
from .training import History, TrainConfig, train
from .utils import (
    Sizes,
    base_seed,
    derive_seed,
    get_device,
    glue,
    is_full,
    make_generator,
    make_rng,
    progress_bar,
    run_device,
    run_mode,
    seed_everything,
    seeded,
    setup_threads,
)

__version__ = "0.1.0"

__all__ = [
    "Ensemble",
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

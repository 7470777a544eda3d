"""seqtheory: the library behind the executable book on how transformers learn structure."""
from .models import ForwardCache, Transformer, TransformerConfig, attention_to_offset
from .training import History, TrainConfig, train
from .utils import (
    Sizes,
    get_device,
    is_full,
    progress_bar,
    run_mode,
    seed_everything,
    setup_threads,
)

__version__ = "0.1.0"

__all__ = [
    "ForwardCache",
    "History",
    "Sizes",
    "TrainConfig",
    "Transformer",
    "TransformerConfig",
    "attention_to_offset",
    "get_device",
    "is_full",
    "progress_bar",
    "run_mode",
    "seed_everything",
    "setup_threads",
    "train",
]

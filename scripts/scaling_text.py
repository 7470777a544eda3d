"""Character-level Shakespeare over seeds: the data behind "Experiment 4" of
book/scaling_laws.md.

For each seed, trains the chapter's character model (``ScalingSetup.text_kwargs()``: the
shared transformer, 2 layers, d_model = 32, context 32, AdamW, cosine schedule, the
checkpoint with the best validation loss kept) on the first n training characters for
every n in ``ScalingSetup.text_sizes``, and records the test loss, the step of the best
checkpoint and the intrinsic dimension of the final layer's activations. At
n = ``text_ablation_n`` it also records the dimension of every layer, at several positions
in the document, and of models of the other widths (``text_widths``).

    SEQTHEORY_NUM_THREADS=1 python scripts/scaling_text.py     # about 25 minutes on one core

writes src/seqtheory/data/scaling_text.json (shipped with the library:
seqtheory.book.archive.load_data("scaling_text.json")) after every seed. Seeds go through
seqtheory's base-seed helper; the chapter trains one of these runs live (seed 0 at
n = text_ablation_n) and checks it against this file.
"""

from __future__ import annotations

import datetime
import json
import platform
import time
from pathlib import Path

import torch

import seqtheory
from booktools.machine import cpu_name
from seqtheory import derive_seed, setup_threads
from seqtheory.scaling import SETUP
from seqtheory.text import CharCorpus, activation_dimension, load_shakespeare, train_char_model

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "scaling_text.json"
POSITIONS = (1, 2, 4, 8, 16, 31)


def main() -> None:
    threads = setup_threads()
    setup = SETUP.pick("cpu")
    corpus = CharCorpus(load_shakespeare())
    kw = setup.text_kwargs()
    meta = {
        "script": "scripts/scaling_text.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}), {threads} thread(s)",
        "train_char_model": {k: v for k, v in kw.items() if k != "progress"},
        "sizes": list(setup.text_sizes),
        "widths": list(setup.text_widths),
        "ablation_n": setup.text_ablation_n,
        "n_docs": setup.text_docs,
        "positions": list(POSITIONS),
        "seeds": [],
        "derived_seeds": [],
    }
    runs = []
    for seed in setup.text_seeds:
        jobs = [(n, kw["d_model"]) for n in setup.text_sizes]
        jobs += [(setup.text_ablation_n, w) for w in setup.text_widths if w != kw["d_model"]]
        for n, width in jobs:
            start = time.perf_counter()
            res = train_char_model(corpus, n, **{**kw, "d_model": width}, seed=seed)
            model = res.model
            rec = {
                "seed": seed,
                "n": n,
                "d_model": width,
                "test_loss": res.test_loss,
                "val_loss": res.val_loss,
                "best_step": res.best_step,
                "params": res.params,
                "id": activation_dimension(model, corpus, n_docs=setup.text_docs),
            }
            if n == setup.text_ablation_n and width == kw["d_model"]:
                rec["layer_id"] = [
                    activation_dimension(model, corpus, layer=i, n_docs=setup.text_docs)
                    for i in range(3)
                ]
                rec["position_id"] = [
                    activation_dimension(model, corpus, positions=[p], n_docs=3600)
                    for p in POSITIONS
                ]
            rec["seconds"] = round(time.perf_counter() - start, 1)
            runs.append(rec)
            print(
                f"seed {seed} | n={n:6d} | d_model={width:3d} | test {rec['test_loss']:.3f}"
                f" | best step {rec['best_step']} | ID {rec['id']:.2f} | "
                f"{rec['seconds']} s",
                flush=True,
            )
        meta["sweep_seconds"] = round(sum(r["seconds"] for r in runs), 1)
        meta["seeds"].append(seed)
        meta["derived_seeds"].append(derive_seed(seed))
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
        print(f"wrote {OUT} (seeds {meta['seeds']})", flush=True)


if __name__ == "__main__":
    main()

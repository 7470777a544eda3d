"""Depth and Markov order: the data behind "k-th order chains" in book/induction_heads.md.

Trains transformers on binary order-m Markov chains (m = 1, 2, 3; rows ~ Dirichlet(1),
T = 100) and records, every `eval_every` steps, the held-out loss and the KL divergence
from the Bayes in-context (m+1)-gram rule and from the m-gram rule to the model.

    python scripts/icl_depth.py            # CPU size: about 15 minutes on 2 cores
    FULL=1 python scripts/icl_depth.py     # longer runs, 3 seeds (for a GPU machine)

writes src/seqtheory/data/icl_depth.json (shipped with the library, so the chapter can load
it in Colab too: seqtheory.utils.load_data("icl_depth.json")). Each run is seeded, so the file
is reproducible on the same machine and library version.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import torch

import seqtheory
from seqtheory import Sizes, setup_threads
from seqtheory.incontext import MAIN, train_icl
from seqtheory.markov import ngram_name

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_depth.json"

ARCHITECTURES = {
    # label: changes to the main ICL set-up (all with d_model = 32, one head per layer)
    "3 layers, MLP": dict(n_layers=3, attn_only=False),
    "2 layers, attention-only": dict(n_layers=2, attn_only=True),
    "4 layers, attention-only": dict(n_layers=4, attn_only=True),
}
RUN = Sizes(cpu=dict(steps=2000, seeds=(0,)), full=dict(steps=8000, seeds=(0, 1, 2)))


def main() -> None:
    size = RUN.pick()
    setup_threads()
    base = MAIN.pick("cpu").replace(k=2, d_model=32, steps=size["steps"], eval_every=100)
    runs = []
    for order in (1, 2, 3):
        for arch, changes in ARCHITECTURES.items():
            for seed in size["seeds"]:
                setup = base.replace(order=order, **changes)
                start = time.perf_counter()
                run = train_icl(setup, seed=seed, desc=f"order {order}, {arch}")
                bayes, lower = ngram_name(order + 1), ngram_name(order)
                steps, kl_bayes = run.history.metric(f"KL({bayes}||model)")
                runs.append({
                    "order": order, "architecture": arch, "seed": seed,
                    "parameters": run.model.num_params(),
                    "seconds": round(time.perf_counter() - start, 1),
                    "steps": steps.tolist(),
                    "loss": run.history.metric("loss")[1].tolist(),
                    "kl_bayes": kl_bayes.tolist(),
                    "kl_lower": run.history.metric(f"KL({lower}||model)")[1].tolist(),
                    "reference_loss": run.evaluator.reference_loss,
                    "bayes": bayes, "lower": lower,
                })
                print(f"order {order} | {arch:26s} | seed {seed} | final KL to {bayes}: "
                      f"{kl_bayes[-1]:.3f} | {runs[-1]['seconds']} s", flush=True)
    meta = {"script": "scripts/icl_depth.py", "seqtheory": seqtheory.__version__,
            "torch": torch.__version__, "python": platform.python_version(),
            "setup": {k: v for k, v in base.__dict__.items()}, "size": size}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, default=str))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

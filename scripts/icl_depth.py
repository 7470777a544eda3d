"""Depth and Markov order: the data behind "k-th order chains" in book/induction_heads.md.

Trains transformers on binary order-m Markov chains (m = 1, 2, 3; rows ~ Dirichlet(1),
T = 100) and records, every `eval_every` steps, the held-out loss and the KL divergence
from the Bayes in-context (m+1)-gram rule and from the m-gram rule to the model.

    SEQTHEORY_NUM_THREADS=1 python scripts/icl_depth.py   # CPU size, 3 seeds: ~1 h, one core
    FULL=1 python scripts/icl_depth.py     # longer runs, 3 seeds (for a GPU machine)

The seeds can be split over processes and merged afterwards:

    python scripts/icl_depth.py --seeds 1 --out /tmp/depth1.json &
    python scripts/icl_depth.py --seeds 2 --out /tmp/depth2.json &
    wait; python scripts/icl_depth.py --merge /tmp/depth0.json /tmp/depth1.json /tmp/depth2.json

and so can the architectures (indices into ARCHITECTURES), e.g. to add the models without
LayerNorm to an existing file:

    python scripts/icl_depth.py --architectures 3 --orders 1 --out /tmp/noln_o1.json  # etc.
    python scripts/icl_depth.py --merge src/seqtheory/data/icl_depth.json /tmp/noln_o1.json \
        /tmp/noln_o2.json /tmp/noln_o3.json

That is how the two-layer model without LayerNorm (index 3) was added to the shipped file,
one process per order; index 4 (four layers without LayerNorm) was added the same way on a
GPU (--device cuda, one process per order and seed).

writes src/seqtheory/data/icl_depth.json (shipped with the library, so the chapter can load
it in Colab too: seqtheory.book.archive.load_data("icl_depth.json")). Each run is seeded, so the
file
is reproducible on the same machine and library version.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch

import seqtheory
from booktools.machine import cpu_name
from seqtheory import Sizes, setup_threads
from seqtheory.core.runtime import check_device
from seqtheory.incontext import SETUP
from seqtheory.incontext import run as run_icl
from seqtheory.sources.markov import ngram_name

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_depth.json"

ARCHITECTURES = {
    # label: changes to the main ICL set-up (all with d_model = 32, one head per layer,
    # pre-LN LayerNorm unless the label says otherwise)
    "3 layers, MLP": dict(n_layers=3, attn_only=False),
    "2 layers, attention-only": dict(n_layers=2, attn_only=True),
    "4 layers, attention-only": dict(n_layers=4, attn_only=True),
    # the same attention-only models without any LayerNorm: separates depth from the
    # normalisation that the constant-depth construction relies on
    "2 layers, attention-only, no LayerNorm": dict(n_layers=2, attn_only=True, layer_norm=False),
    "4 layers, attention-only, no LayerNorm": dict(n_layers=4, attn_only=True, layer_norm=False),
}
RUN = Sizes(cpu=dict(steps=2000, seeds=(0, 1, 2)), full=dict(steps=8000, seeds=(0, 1, 2)))


def _parts(data: dict) -> list[dict]:
    """The parts (seeds, architectures, date, device) that one output file holds."""
    meta = data["meta"]
    archs = meta.get("architectures") or sorted(
        {r["architecture"] for r in data["runs"]}, key=list(ARCHITECTURES).index
    )
    orders = sorted({r["order"] for r in data["runs"]})
    if "parts" in meta:  # an already merged file: keep its own record
        return [{"architectures": archs, "orders": orders, **p} for p in meta["parts"]]
    return [
        {
            "seeds": meta["size"]["seeds"],
            "architectures": archs,
            "orders": orders,
            "date": meta.get("date", "not recorded"),
            "device": meta.get("device", "not recorded"),
        }
    ]


def merge(paths: list[Path]) -> None:
    """Combine the runs of several output files (seeds or architectures) into OUT."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    meta = dict(parts[0]["meta"])
    meta["size"] = {
        **meta["size"],
        "seeds": sorted({s for p in parts for s in p["meta"]["size"]["seeds"]}),
    }
    meta["seconds"] = round(sum(p["meta"].get("seconds", 0) for p in parts), 1)
    meta["parts"] = [q for p in parts for q in _parts(p)]
    meta.pop("architectures", None)
    meta.pop("orders", None)
    runs = [r for p in parts for r in p["runs"]]
    runs.sort(key=lambda r: (r["order"], list(ARCHITECTURES).index(r["architecture"]), r["seed"]))
    OUT.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, default=str))
    print(f"wrote {OUT} (seeds {meta['size']['seeds']}, {len(runs)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", help="comma-separated seeds (default: the run size's)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--architectures", help="comma-separated indices into ARCHITECTURES (default: all)"
    )
    parser.add_argument("--orders", default="1,2,3", help="comma-separated Markov orders")
    parser.add_argument("--merge", nargs="+", type=Path, help="merge these outputs into OUT")
    parser.add_argument("--device", default="cpu", help="where to train: cpu, cuda, ...")
    args = parser.parse_args()
    if args.merge:
        return merge(args.merge)
    size = dict(RUN.pick())
    if args.seeds:
        size["seeds"] = tuple(int(s) for s in args.seeds.split(","))
    archs = list(ARCHITECTURES)
    if args.architectures:
        archs = [archs[int(i)] for i in args.architectures.split(",")]
    threads = setup_threads()
    device = check_device("--device", args.device)
    t0 = time.perf_counter()
    base = SETUP.pick("cpu").replace(k=2, d_model=32, steps=size["steps"], eval_every=100)
    runs = []
    for order in (int(m) for m in args.orders.split(",")):
        for arch in archs:
            changes = ARCHITECTURES[arch]
            for seed in size["seeds"]:
                setup = base.replace(order=order, **changes)
                start = time.perf_counter()
                run = run_icl(
                    setup, seed=seed, desc=f"order {order}, {arch}", progress=False, device=device
                )
                bayes, lower = ngram_name(order + 1), ngram_name(order)
                steps, kl_bayes = run.history.metric(f"KL({bayes}||model)")
                runs.append(
                    {
                        "order": order,
                        "architecture": arch,
                        "seed": seed,
                        "parameters": run.model.num_params(),
                        "seconds": round(time.perf_counter() - start, 1),
                        "steps": steps.tolist(),
                        "loss": run.history.metric("loss")[1].tolist(),
                        "kl_bayes": kl_bayes.tolist(),
                        "kl_lower": run.history.metric(f"KL({lower}||model)")[1].tolist(),
                        "reference_loss": run.evaluator.reference_loss,
                        "bayes": bayes,
                        "lower": lower,
                    }
                )
                print(
                    f"order {order} | {arch:26s} | seed {seed} | final KL to {bayes}: "
                    f"{kl_bayes[-1]:.3f} | {runs[-1]['seconds']} s",
                    flush=True,
                )
    meta = {
        "script": "scripts/icl_depth.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}), {threads} thread(s)"
        if device.type == "cpu"
        else f"{torch.cuda.get_device_name(device)} GPU"
        if device.type == "cuda"
        else str(device),
        "seconds": round(time.perf_counter() - t0, 1),
        "setup": {k: v for k, v in base.__dict__.items()},
        "size": size,
        "architectures": archs,
        "orders": args.orders,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Switch step against the share of doubly stochastic chains (k = 2): the data behind
"Take the unigram signal away" in book/induction_heads.md.

The training prior is the graded mixture of seqtheory.sources.markov.sample_graded_matrices: with
probability p a chain is doubly stochastic (unigram statistics useless), otherwise its
tokens are i.i.d. (the unigram rule is Bayes-optimal).  As in the authors' code, every model
is evaluated on the standard Dirichlet task (k = 2, alpha = 1), where the switch step is
read off (seqtheory.incontext.switch_step).  Model and optimiser: the chapter's CPU set-up.

    SEQTHEORY_NUM_THREADS=1 python scripts/icl_graded.py [--seeds 0,1,2]

writes src/seqtheory/data/icl_graded.json after every run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch
from _archive import add_run_arguments, device_label, merge_parts

import seqtheory
from seqtheory import derive_seed, setup_threads
from seqtheory.incontext import SETUP, switch_step
from seqtheory.incontext import run as run_icl

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_graded.json"
FRACTIONS = (1.0, 0.75, 0.5, 0.25)
STEPS = 3000
NAMES = ("uniform", "unigram", "bigram")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--fractions",
        default=",".join(map(str, FRACTIONS)),
        help="shares p of doubly stochastic chains to train on",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="JSON to write")
    add_run_arguments(parser)
    args = parser.parse_args()
    if args.merge:
        merged = merge_parts(args.merge, args.out, key=lambda r: (r["seed"], -r["ds_fraction"]))
        merged["meta"]["fractions"] = sorted(
            {r["ds_fraction"] for r in merged["runs"]}, reverse=True
        )
        args.out.write_text(json.dumps(merged, default=str))
        return
    threads = setup_threads()
    base = SETUP.pick("cpu").replace(k=2, steps=STEPS)
    meta = {
        "script": "scripts/icl_graded.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": device_label(torch.device("cpu"), threads),
        "setup": {k: v for k, v in base.__dict__.items()},
        "fractions": list(FRACTIONS),
        "eval": "dirichlet, k=2, alpha=1",
        "seeds": [],
    }
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for p in (float(f) for f in args.fractions.split(",")):
            setup = base.replace(prior="graded", ds_fraction=p)
            start, cpu = time.perf_counter(), time.process_time()
            run = run_icl(
                setup,
                seed=seed,
                eval_n=256,
                progress=False,
                eval_setup=base,
                stop_after_switch=args.patience or None,
            )
            h = run.history
            rec = {
                "ds_fraction": p,
                "seed": seed,
                "derived_seed": derive_seed(seed),
                "seconds": round(time.perf_counter() - start, 1),
                "cpu_seconds": round(time.process_time() - cpu, 1),
                "switch": switch_step(h),
                "steps": h.metric("loss")[0].tolist(),
                "loss": h.metric("loss")[1].tolist(),
                "reference_loss": run.evaluator.reference_loss,
                **{f"KL({n}||model)": h.metric(f"KL({n}||model)")[1].tolist() for n in NAMES},
            }
            runs.append(rec)
            print(
                f"seed {seed} p {p}: switch {rec['switch']}, {rec['cpu_seconds']} CPU s", flush=True
            )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"meta": meta, "runs": runs}, default=str))
        meta["seeds"].append(seed)
        args.out.write_text(json.dumps({"meta": meta, "runs": runs}, default=str))


if __name__ == "__main__":
    main()
